"""The robot: :class:`Robot` (in :mod:`wholebody.robot.core`, which states the conventions and
the modules its methods live in), its batch passes (:mod:`wholebody.robot.batch`),
differentiation on the manifold (:mod:`wholebody.robot.differentiation`) and MJCF models
(:mod:`wholebody.robot.mjcf`, :mod:`wholebody.robot.mjcf_writer`); :func:`wholebody.load` is
in :mod:`wholebody.models.loading`.
"""

from ._checks import (
    MAX_STATE_MAGNITUDE,
    QUAT_EXACT_TOL,
    QUAT_RENORMALIZE_TOL,
    Array,
    real_array,
)
from ._controller_pass import ControllerPass
from ._dynamics import External, TorqueTerms
from ._kinematics import ContactPass, FramePlacements
from ._state import State, StateCheck
from .core import Robot

__all__ = [
    "real_array",
    "Robot",
    "State",
    "StateCheck",
    "TorqueTerms",
    "ContactPass",
    "FramePlacements",
    "ControllerPass",
    "External",
    "Array",
    "MAX_STATE_MAGNITUDE",
    "QUAT_EXACT_TOL",
    "QUAT_RENORMALIZE_TOL",
]
