"""Constraints of the whole-body controller, one class per module: rows
``lower <= C x <= upper`` over ``x = (a, w)`` refreshed at each tick from its one pass."""

from ._base import UNBOUNDED, Constraint
from .contact_force_bounds import FrictionCones, NormalForceBounds
from .joint_bounds import JointBounds
from .torque_limits import TorqueLimits

__all__ = [
    "UNBOUNDED",
    "Constraint",
    "FrictionCones",
    "JointBounds",
    "NormalForceBounds",
    "TorqueLimits",
]
