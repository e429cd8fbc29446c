"""Contact schedules: which contacts are active at each sample, and how to infer them.

A :class:`ContactSchedule` holds, per sample and per contact, whether the contact may carry
a wrench (``active``, shape (N, k)); estimation fixes inactive contacts' wrenches to zero
(``estimate_contact_wrenches(..., active=schedule.active)``).

When a log has no schedule, :func:`infer_contact_schedule` infers one by ``method``
(``docs/schedule.md``): ``"kinematic"`` (:func:`infer_schedule_kinematic`: each contact's
height above the ground and its normal speed, with hysteresis and minimum durations),
``"dynamic"`` (:func:`infer_schedule_dynamic`: the smallest subset of the contacts whose
estimate explains the motion within the cones) or ``"combined"``
(:func:`infer_schedule_combined`: kinematics proposes, dynamics confirms).
:func:`infer_schedule_force` reads the normal force through a Schmitt trigger, gated by the
kinematics. :func:`plot_schedule` draws the timeline beside the vertical force.
"""

from __future__ import annotations

from .core import (
    MAX_SUBSET_CONTACTS,
    METHODS,
    ContactSchedule,
    contact_heights,
    enforce_min_durations,
)
from .force import force_kinematic_agreement, infer_schedule_force, schmitt_trigger
from .inference import (
    infer_contact_schedule,
    infer_schedule_combined,
    infer_schedule_dynamic,
    infer_schedule_kinematic,
)
from .plot import plot_schedule

__all__ = [
    "ContactSchedule",
    "infer_contact_schedule",
    "infer_schedule_kinematic",
    "infer_schedule_dynamic",
    "infer_schedule_combined",
    "infer_schedule_force",
    "schmitt_trigger",
    "force_kinematic_agreement",
    "contact_heights",
    "enforce_min_durations",
    "plot_schedule",
    "METHODS",
    "MAX_SUBSET_CONTACTS",
]
