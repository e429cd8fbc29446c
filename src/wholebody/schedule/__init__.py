"""Contact schedules: which contacts are active at each sample, and how to infer them.

A :class:`ContactSchedule` holds, per sample and per contact, whether the contact may carry
a wrench (``active``, shape (N, k)); estimation fixes inactive contacts' wrenches to zero
(``estimate_contact_wrenches(..., active=schedule.active)``).

When a log has no schedule, three methods infer one (``docs/schedule.md``):

``"kinematic"`` (:func:`infer_schedule_kinematic`)
    Height of each contact above the declared ground plane (the lowest corner of a sole, the
    origin of a point contact) and its velocity along the normal, with hysteresis (enter at
    ``height_on``, leave above ``height_off`` or when rising faster than ``lift_speed``
    above ``height_on``) and minimum durations. Parameters in metres, m/s and seconds.
``"dynamic"`` (:func:`infer_schedule_dynamic`)
    Which subsets of the candidate contacts can explain the measured motion within their
    cones: each subset is estimated in batch with the others inactive (a small QP per
    sample and subset); a subset is consistent where its estimate is found and its raw
    equations are met within ``residual_tolerance``. The smallest consistent subset (least
    residual among equals) is taken, then minimum durations smooth it. Samples no subset
    explains are flagged (a push, a contact that is not declared). With joint torques
    (full dynamics) each foot's wrench is identifiable and the smallest set is the loaded
    one; in Newton-Euler mode the smallest set is only the least the motion needs (a foot
    that carries load may be left out where the other alone could carry it).
``"combined"`` (:func:`infer_schedule_combined`)
    The kinematic schedule proposes; dynamics confirms it where it is consistent (with
    torques, contacts whose removal stays consistent are dropped: touching but unloaded),
    replaces it by the nearest consistent subset where it is not, and flags samples no
    subset explains.

``"force"`` (:func:`infer_schedule_force`)
    The measured (or estimated) normal force through a Schmitt trigger, gated by the
    kinematics (a contact in the air is inactive whatever its force), with minimum dwell
    times; the agreement of force and kinematic evidence per contact is kept.

:func:`infer_contact_schedule` dispatches on ``method``; :func:`plot_schedule` draws the
Gantt-style timeline beside the vertical force.
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
