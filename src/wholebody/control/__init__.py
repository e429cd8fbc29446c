"""Whole-body control: task-space inverse dynamics on Pinocchio.

* :class:`WholeBodyController`: tasks (:mod:`wholebody.control.tasks`), constraints
  (:mod:`wholebody.control.constraints`) and contacts added and removed at run time with
  force ramps, solved each tick by daqp after one Pinocchio pass
  (:class:`TickKinematics`);
* :mod:`wholebody.control.trajectories`: minimum-jerk and spline references for the tasks;
* :class:`InverseDynamicsQP`: the first, fixed-contact QP (tasks as :class:`Task` terms).
"""

from ._contact_state import ContactState
from ._controller import ControlSolution, WholeBodyController
from ._layout import ControlLayout
from ._qp import InverseDynamicsQP, Task
from ._tick import TickKinematics
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
    FrameTask,
    LinearMomentumTask,
    PostureTask,
    RelativeFrameTask,
)
from .trajectories import MinimumJerk, MinimumJerkSE3, SE3Spline, SplineTrajectory

__all__ = [
    "AccelerationTask",
    "AngularMomentumTask",
    "ComTask",
    "Constraint",
    "ContactForceTask",
    "ContactState",
    "ControlLayout",
    "ControlSolution",
    "FrameTask",
    "FrictionCones",
    "InverseDynamicsQP",
    "JointBounds",
    "LinearMomentumTask",
    "MinimumJerk",
    "MinimumJerkSE3",
    "NormalForceBounds",
    "PostureTask",
    "RelativeFrameTask",
    "SE3Spline",
    "SplineTrajectory",
    "Task",
    "TickKinematics",
    "TorqueLimits",
    "WholeBodyController",
]
