"""wholebody: humanoid whole-body dynamics on Pinocchio.

Equations of motion, Newton-Euler wrench balance, friction cones and contact-force
estimation, with the conventions of the README's table (Pinocchio's q/v layout, force-first
wrenches that carry their point, world-aligned contact Jacobians, SI units).

The names below are the public API; the packages hold the rest, one idea each: ``robot``,
``balance``, ``friction``, ``estimation``, ``conventions``, ``diagnosis``, ``schedule``,
``identify``, ``check``, ``io``, ``sim``, ``cli``, ``models``, beside ``trajectory``,
``spatial``, ``contacts`` and ``errors`` (``docs/architecture.md``). The module paths of
earlier releases (``wholebody.check.analysis``, ``wholebody.sim.mujoco``, ...) still import, as
compatibility paths (:mod:`wholebody._aliases`). The heavier names are imported on first use,
so ``import wholebody`` stays quick.
"""

from importlib import import_module
from typing import Any

from . import _aliases

_aliases.install()

from . import errors, models  # noqa: E402
from .errors import (  # noqa: E402
    FrameNotFoundError,
    JointNotFoundError,
    MissingDependencyError,
    ModelError,
    StateError,
    WholebodyError,
)
from .models.loading import available_robots, load  # noqa: E402
from .robot import Robot, TorqueTerms  # noqa: E402

__version__ = "0.1.0"

# name -> module, imported on first access (PEP 562).
_LAZY = {
    "Wrench": "spatial",
    "PointContact": "contacts",
    "SurfaceContact": "contacts",
    "gravito_inertial_wrench": "balance",
    "contact_wrench": "balance",
    "newton_euler_residual": "balance",
    "newton_euler_residuals": "balance",
    "Residual": "balance",
    "joint_reaction_wrenches": "balance",
    "newton_euler_residual_arrays": "balance.newton_euler",
    "centre_of_pressure": "balance.cop",
    "zmp": "balance.cop",
    "ContactSet": "friction",
    "check_friction_cone": "friction",
    "contact_wrench_cone": "friction",
    "ContactDynamics": "robot",
    "ContactDynamicsPass": "robot",
    "open_log": "io",
    "read_rosbag": "io.recordings",
    "read_lerobot": "io.recordings",
    "check_conventions": "conventions",
    "expected_residual_error": "conventions",
    "diagnose": "diagnosis",
    "mujoco_spec_for_robot": "sim.mujoco",
    "MujocoRecorder": "sim.mujoco_recorder",
    "fit_inertial_parameters": "identify",
    "Calibration": "identify.calibrate",
    "InverseDynamicsQP": "control",
    "infer_contact_schedule": "schedule",
    "ContactSchedule": "schedule",
    "build_estimation_problem": "estimation",
    "estimate_contact_wrenches": "estimation",
    "estimate_contact_wrenches_batch": "estimation",
    "static_equilibrium_polygon": "friction.support",
    "Trajectory": "trajectory",
    "check_trajectory": "check.analysis",
    "CheckOptions": "check.analysis",
    "estimate_trajectory": "check.analysis",
    "Report": "check.analysis",
    "check_many": "check.many",
    "load_profile": "io.profile",
}

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
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    if _aliases.resolve(f"{__name__}.{name}") is not None:
        # An old module path (``wholebody.check.analysis``) read as an attribute.
        return import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'wholebody' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
