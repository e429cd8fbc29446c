"""wholebody: humanoid whole-body dynamics on Pinocchio.

Equations of motion, Newton-Euler wrench balance, friction cones and contact-force
estimation, with the conventions of the README's table (Pinocchio's q/v layout, force-first
wrenches that carry their point, world-aligned contact Jacobians, SI units).

The names below are the public API; the modules hold the rest (``wholebody.balance``,
``wholebody.friction``, ``wholebody.estimation``, ``wholebody.support``,
``wholebody.trajectory``, ``wholebody.analysis``, ``wholebody.many``, ...). The heavier ones
are imported on first use, so ``import wholebody`` stays quick.
"""

from importlib import import_module
from typing import Any

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
    "newton_euler_residual_arrays": "newton_euler",
    "centre_of_pressure": "cop",
    "zmp": "cop",
    "ContactSet": "friction",
    "check_friction_cone": "friction",
    "contact_wrench_cone": "friction",
    "ContactDynamics": "robot",
    "ContactDynamicsPass": "robot",
    "open_log": "io",
    "read_rosbag": "recordings",
    "read_lerobot": "recordings",
    "check_conventions": "conventions",
    "expected_residual_error": "conventions",
    "diagnose": "diagnosis",
    "mujoco_spec_for_robot": "mujoco_bridge",
    "MujocoRecorder": "mujoco_recorder",
    "fit_inertial_parameters": "identify",
    "Calibration": "calibrate",
    "InverseDynamicsQP": "control",
    "infer_contact_schedule": "schedule",
    "ContactSchedule": "schedule",
    "build_estimation_problem": "estimation",
    "estimate_contact_wrenches": "estimation",
    "estimate_contact_wrenches_batch": "estimation",
    "static_equilibrium_polygon": "support",
    "Trajectory": "trajectory",
    "check_trajectory": "analysis",
    "estimate_trajectory": "analysis",
    "Report": "analysis",
    "check_many": "many",
    "load_profile": "profile",
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
    raise AttributeError(f"module 'wholebody' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
