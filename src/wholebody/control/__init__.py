"""Whole-body control: task-space inverse dynamics on Pinocchio.

* :class:`WholeBodyController`: tasks (:mod:`wholebody.control.tasks`), constraints
  (:mod:`wholebody.control.constraints`) and contacts added and removed at run time with
  force ramps, each hard or soft (a priority: 0 hard, 1, 2, ... a weighted cost of that
  strict priority level), solved each tick by daqp after one Pinocchio pass
  (:meth:`wholebody.Robot.controller_pass`);
* :mod:`wholebody.control.trajectories`: minimum-jerk and spline references for the tasks, and
  walking references (:class:`FootstepPlan`, :class:`DcmTrajectory`, :class:`SwingFoot`).
"""

from ._contact_state import ContactState
from ._controller import ControlSolution, WholeBodyController
from ._layout import ControlLayout
from .constraints import (
    Constraint,
    FrictionCones,
    JointBounds,
    NormalForceBounds,
    TorqueLimits,
)
from .tasks import (
    AccelerationTask,
    AngularMomentumTask,
    ComTask,
    ContactForceTask,
    CopTask,
    DcmTask,
    FrameTask,
    LinearMomentumTask,
    PostureTask,
    RelativeFrameTask,
    TorqueTask,
    WrenchTask,
    ZmpTask,
)
from .trajectories import (
    DcmTrajectory,
    Footstep,
    FootstepPlan,
    MinimumJerk,
    MinimumJerkSE3,
    SE3Spline,
    SplineTrajectory,
    SwingFoot,
)

__all__ = [
    "AccelerationTask",
    "AngularMomentumTask",
    "ComTask",
    "Constraint",
    "ContactForceTask",
    "ContactState",
    "ControlLayout",
    "ControlSolution",
    "CopTask",
    "DcmTask",
    "DcmTrajectory",
    "Footstep",
    "FootstepPlan",
    "FrameTask",
    "FrictionCones",
    "JointBounds",
    "LinearMomentumTask",
    "MinimumJerk",
    "MinimumJerkSE3",
    "NormalForceBounds",
    "PostureTask",
    "RelativeFrameTask",
    "SE3Spline",
    "SplineTrajectory",
    "SwingFoot",
    "TorqueLimits",
    "TorqueTask",
    "WholeBodyController",
    "WrenchTask",
    "ZmpTask",
]
