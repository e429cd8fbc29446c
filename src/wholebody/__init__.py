"""wholebody: humanoid whole-body dynamics on Pinocchio.

Equations of motion, Newton-Euler wrench balance, friction cones and contact-force
estimation, with the conventions of the README's table (Pinocchio's q/v layout, force-first
wrenches that carry their point, world-aligned contact Jacobians, SI units).
"""

from . import errors, models
from .errors import (
    FrameNotFoundError,
    JointNotFoundError,
    MissingDependencyError,
    ModelError,
    StateError,
    WholebodyError,
)
from .loading import available_robots, load
from .robot import Robot, TorqueTerms

__version__ = "0.1.0"

__all__ = [
    "Robot",
    "TorqueTerms",
    "load",
    "available_robots",
    "errors",
    "models",
    "WholebodyError",
    "ModelError",
    "StateError",
    "FrameNotFoundError",
    "JointNotFoundError",
    "MissingDependencyError",
]
