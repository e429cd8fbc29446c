"""The robot: a Pinocchio model with names resolved once, its equations of motion and frames.

:class:`Robot` is the one class users hold (in :mod:`wholebody.robot.core`, with its
constructor, loaders and properties); its methods are plain functions of the robot in the
modules of this package, bound to the class (``_model``: names and frames; ``_state``: checks
of q, v, a, tau; ``_dynamics``: M, C, g, inverse and forward dynamics; ``_kinematics``:
frames, CoM, momentum, the one-pass helpers; ``_controller_pass``: the one pass of a control
tick), the batch passes (:mod:`wholebody.robot.batch`), differentiation on the manifold
(:mod:`wholebody.robot.differentiation`) and MJCF loading (:mod:`wholebody.robot.mjcf`);
:func:`wholebody.load` (by name or path) is in :mod:`wholebody.models.loading`, beside the
shipped models.
The conventions are those of :mod:`wholebody.robot.core`.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_names
from . import core
from .core import (
    MAX_STATE_MAGNITUDE,
    QUAT_EXACT_TOL,
    QUAT_RENORMALIZE_TOL,
    Array,
    Robot,
    StateCheck,
)

if TYPE_CHECKING:
    from .core import (
        ContactPass,
        ControllerPass,
        External,
        FramePlacements,
        TorqueTerms,
    )

__all__ = [
    "Robot",
    "TorqueTerms",
    "ContactPass",
    "StateCheck",
    "FramePlacements",
    "ControllerPass",
    "External",
    "Array",
    "MAX_STATE_MAGNITUDE",
    "QUAT_EXACT_TOL",
    "QUAT_RENORMALIZE_TOL",
]


# The classes of the method modules a check does not use, imported on first access.
__getattr__, __dir__ = lazy_names(__name__, globals(), dict.fromkeys(core._LAZY, "core"))
