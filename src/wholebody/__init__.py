"""wholebody: humanoid whole-body dynamics on Pinocchio.

Equations of motion, Newton-Euler wrench balance, friction cones and contact-force
estimation, with the conventions of the README's table (Pinocchio's q/v layout, force-first
wrenches that carry their point, world-aligned contact Jacobians, SI units).

The names below are the first-hour API (a robot, a log, the check, the estimate, the fit,
contacts and wrenches); the packages hold the rest, one idea each: ``robot``, ``balance``,
``friction``, ``estimation``, ``conventions``, ``diagnosis``, ``schedule``, ``identify``,
``check``, ``control``, ``io``, ``sim``, ``cli``, ``models``, beside ``trajectory``,
``spatial``, ``contacts``, ``limits``, ``parallel`` and ``errors``
(``docs/architecture.md``).
"""

from . import errors, models
from .balance import newton_euler_residual
from .check import CheckOptions, Report, check_log, check_trajectory
from .contacts import PointContact, SurfaceContact
from .control import WholeBodyController
from .errors import WholebodyError
from .estimation import estimate_contact_wrenches
from .friction import ContactSet
from .identify import fit_inertial_parameters
from .models.loading import load
from .robot import Robot
from .spatial import Wrench
from .trajectory import Trajectory

__version__ = "0.1.0"

__all__ = [
    "Robot",
    "load",
    "Trajectory",
    "check_trajectory",
    "check_log",
    "CheckOptions",
    "Report",
    "PointContact",
    "SurfaceContact",
    "Wrench",
    "ContactSet",
    "newton_euler_residual",
    "estimate_contact_wrenches",
    "fit_inertial_parameters",
    "WholeBodyController",
    "errors",
    "models",
    "WholebodyError",
]
