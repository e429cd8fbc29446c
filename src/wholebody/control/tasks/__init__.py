"""Tasks of the whole-body controller, one class per module.

Each task is built once and refreshed at each tick by
:meth:`~wholebody.control.WholeBodyController.update` from the tick's single Pinocchio pass
(:class:`~wholebody.robot.ControllerPass`). Acceleration tasks add
``weight * || S (J a + dJ/dt v - desired) ||^2`` to the objective, ``desired`` being their PD
law on a reference; :class:`ContactForceTask` acts on a contact's wrench.
"""

from ._base import AccelerationTask
from .com import ComTask
from .contact_force import ContactForceTask
from .frame import FrameTask
from .momentum import AngularMomentumTask, LinearMomentumTask
from .posture import PostureTask
from .relative_frame import RelativeFrameTask

__all__ = [
    "AccelerationTask",
    "AngularMomentumTask",
    "ComTask",
    "ContactForceTask",
    "FrameTask",
    "LinearMomentumTask",
    "PostureTask",
    "RelativeFrameTask",
]
