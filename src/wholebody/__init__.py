"""wholebody: humanoid whole-body dynamics on Pinocchio.

Equations of motion, Newton-Euler wrench balance, friction cones and contact-force
estimation, with the conventions of the README's table (Pinocchio's q/v layout, force-first
wrenches that carry their point, world-aligned contact Jacobians, SI units).

The names below are the first-hour API (a robot, a log, the check, the estimate, the fit,
contacts and wrenches); the packages hold the rest, one idea each: ``robot``,
``balance``, ``friction``, ``estimation``, ``conventions``, ``diagnosis``, ``schedule``,
``identify``, ``check``, ``io``, ``sim``, ``cli``, ``models``, beside ``trajectory``,
``spatial``, ``contacts`` and ``errors`` (``docs/architecture.md``). The module paths of
earlier releases (``wholebody.check.analysis``, ``wholebody.sim.mujoco``, ...) still import, as
compatibility paths (:mod:`wholebody._aliases`), and the names earlier releases exported here
(``wholebody.zmp``, ``wholebody.diagnose``, ...) still resolve, to the same objects as in their
packages, without being listed. The heavier names are imported on first use,
so ``import wholebody`` stays quick.
"""

import sys
from importlib import import_module
from typing import Any


class _OldPaths:
    """Asked last on :data:`sys.meta_path`, for a ``wholebody`` module that no other finder
    has: the module paths of earlier releases, served by :mod:`wholebody._aliases` (imported
    then; the imports of modules that exist never reach it)."""

    @staticmethod
    def find_spec(fullname: str, path: Any = None, target: Any = None) -> Any:
        if not fullname.startswith(f"{__name__}."):
            return None
        from ._aliases import find_spec

        return find_spec(fullname, path, target)


if not any(isinstance(f, _OldPaths) for f in sys.meta_path):
    sys.meta_path.append(_OldPaths())

from . import errors, models  # noqa: E402
from .errors import WholebodyError  # noqa: E402
from .models.loading import load  # noqa: E402
from .robot import Robot  # noqa: E402

__version__ = "0.1.0"

# The first-hour names: a robot, a log, the check, the estimate, the fit, contacts and wrenches.
# name -> module, imported on first access (PEP 562), so ``import wholebody`` stays quick.
_LAZY = {
    "Trajectory": "trajectory",
    "check_trajectory": "check",
    "check_log": "check",
    "CheckOptions": "check",
    "Report": "check",
    "PointContact": "contacts",
    "SurfaceContact": "contacts",
    "Wrench": "spatial",
    "ContactSet": "friction",
    "newton_euler_residual": "balance",
    "estimate_contact_wrenches": "estimation",
    "fit_inertial_parameters": "identify",
    "WholeBodyController": "control",
}

# Names that earlier releases exported here. They still resolve (same objects as in their
# packages) but are no longer listed: each has one home, named beside it.
_EARLIER = {
    "TorqueTerms": "robot",
    "available_robots": "models.loading",
    "ModelError": "errors",
    "StateError": "errors",
    "FrameNotFoundError": "errors",
    "JointNotFoundError": "errors",
    "MissingDependencyError": "errors",
    "gravito_inertial_wrench": "balance",
    "contact_wrench": "balance",
    "newton_euler_residuals": "balance",
    "Residual": "balance",
    "joint_reaction_wrenches": "balance",
    "newton_euler_residual_arrays": "balance.newton_euler",
    "centre_of_pressure": "balance.cop",
    "zmp": "balance.cop",
    "check_friction_cone": "friction",
    "contact_wrench_cone": "friction",
    "open_log": "io",
    "read_rosbag": "io.recordings",
    "read_lerobot": "io.recordings",
    "check_conventions": "conventions",
    "expected_residual_error": "conventions",
    "diagnose": "diagnosis",
    "mujoco_spec_for_robot": "sim.mujoco",
    "MujocoRecorder": "sim.mujoco_recorder",
    "Calibration": "identify.calibrate",
    "infer_contact_schedule": "schedule",
    "ContactSchedule": "schedule",
    "build_estimation_problem": "estimation",
    "estimate_contact_wrenches_batch": "estimation",
    "static_equilibrium_polygon": "friction.support",
    "estimate_trajectory": "check.analysis",
    "check_many": "check.many",
    "load_profile": "io.profile",
}

# The packages and modules, one idea each (docs/architecture.md).
_PACKAGES = (
    "robot", "balance", "friction", "estimation", "conventions", "diagnosis", "schedule",
    "identify", "check", "io", "sim", "control", "cli", "models", "trajectory", "spatial",
    "contacts", "errors", "limits", "parallel",
)  # fmt: skip

__all__ = [
    "Robot",
    "load",
    "errors",
    "models",
    "WholebodyError",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name) or _EARLIER.get(name)
    if home is not None:
        value = getattr(import_module(f".{home}", __name__), name)
        globals()[name] = value
        return value
    from ._aliases import resolve

    if resolve(f"{__name__}.{name}") is not None:
        # An old module path (``wholebody.check.analysis``) read as an attribute.
        return import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'wholebody' has no attribute {name!r}")


def __dir__() -> list[str]:
    # The listed names and the packages; the earlier releases' names resolve but are not listed.
    return sorted({*__all__, *_PACKAGES, "__version__"})
