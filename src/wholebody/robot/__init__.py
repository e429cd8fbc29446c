"""The robot: a Pinocchio model with names resolved once, its equations of motion and frames.

:class:`Robot` is the one class users hold (in :mod:`wholebody.robot.core`, with its
constructor, loaders and properties); its methods are plain functions of the robot in the
modules of this package, bound in the class body (``_model``: names and frames; ``_state``:
a state checked once (:class:`State`), checks of raw arrays and of N samples; ``_dynamics``:
M, C, g, inverse and forward dynamics; ``_kinematics``: frames, CoM, momentum, the one-pass
helpers; ``_controller_pass``: the one pass of a
control tick), the batch passes (:mod:`wholebody.robot.batch`), differentiation on the
manifold (:mod:`wholebody.robot.differentiation`) and MJCF loading
(:mod:`wholebody.robot.mjcf`); :func:`wholebody.load` (by name or path) is in
:mod:`wholebody.models.loading`, beside the shipped models.
The conventions are those of :mod:`wholebody.robot.core`.
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
