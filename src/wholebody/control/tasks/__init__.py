"""Tasks of the whole-body controller, one class per module.

Each task is built once and refreshed at each tick by
:meth:`~wholebody.control.WholeBodyController.update` from the tick's single Pinocchio pass
(:class:`~wholebody.robot.ControllerPass`). A task is a weighted cost
``weight * || S (J x + drift - desired) ||^2`` of one priority level, or a hard equality
(priority 0); ``desired`` is its law on a reference:

* on the accelerations (:class:`AccelerationTask`): CoM, DCM / capture point, frame pose,
  relative pose, momenta, joint posture;
* on the accelerations and the contact wrenches (:class:`WrenchTask`): a contact's wrench,
  a contact's centre of pressure, the whole-body ZMP, the joint torques.
"""

from ._base import AccelerationTask, WrenchTask
from .com import ComTask
from .contact_force import ContactForceTask
from .cop import CopTask, ZmpTask
from .dcm import DcmTask
from .frame import FrameTask
from .momentum import AngularMomentumTask, LinearMomentumTask
from .posture import PostureTask
from .relative_frame import RelativeFrameTask
from .torque import TorqueTask

__all__ = [
    "AccelerationTask",
    "AngularMomentumTask",
    "ComTask",
    "ContactForceTask",
    "CopTask",
    "DcmTask",
    "FrameTask",
    "LinearMomentumTask",
    "PostureTask",
    "RelativeFrameTask",
    "TorqueTask",
    "WrenchTask",
    "ZmpTask",
]
