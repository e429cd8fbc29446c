"""Convention and sanity checks of a log, run before any dynamics.

A log whose ``v`` does not match the time derivative of its ``q``, or whose loaded feet move
or float, makes every Newton-Euler residual meaningless: the dynamics would then blame a
CoM offset or a missing force for what is a convention mistake. :func:`check_conventions`
runs the kinematic checks below, each reported by name with its numbers and a suggested fix:

- ``velocity_matches_configuration``: ``v`` against the derivative of ``q`` on the manifold,
  column by column. When they disagree, named hypotheses are tested by correcting the log
  and checking again (quaternion w-x-y-z, base velocity in world axes, joint columns
  permuted between ``q`` and ``v``, joints in degrees, time in milliseconds);
- ``loaded_contacts_still``: a contact carrying load does not move;
- ``loaded_contacts_on_ground``: a contact carrying load is on the ground plane (declared,
  or else the same plane for every loaded sample and contact).

Every threshold is stated as a module constant relative to the log's own motion, its
sampling or the robot's size (see ``docs/conventions-checks.md``).

The expected error of differentiated accelerations lives in
:mod:`wholebody.conventions.differentiation`.

The checks (``docs/conventions-checks.md``):

.. include:: ../../../docs/conventions-checks.md
"""

from __future__ import annotations

from collections.abc import Sequence

from ..contacts import Contact
from ..robot.core import Robot
from ..trajectory import Trajectory
from ._core import (
    GROUND_TOLERANCE_FRACTION,
    LOAD_SHARE,
    MAX_DISAGREEING_SHARE,
    MAX_VIOLATION_SHARE,
    MIN_VIOLATION_TIME,
    NOISE_SIGMAS,
    STILL_SPEED_FRACTION,
    VELOCITY_RELATIVE_FLOOR,
    ConventionCheck,
    ConventionReport,
    Ground,
    quiet_empty_slices,
    run_conventions,
)
from .differentiation import ExpectedResidualError, expected_residual_error

__all__ = [
    "Ground",
    "ConventionCheck",
    "ConventionReport",
    "check_conventions",
    "ExpectedResidualError",
    "expected_residual_error",
    "VELOCITY_RELATIVE_FLOOR",
    "NOISE_SIGMAS",
    "MAX_DISAGREEING_SHARE",
    "LOAD_SHARE",
    "STILL_SPEED_FRACTION",
    "GROUND_TOLERANCE_FRACTION",
    "MAX_VIOLATION_SHARE",
    "MIN_VIOLATION_TIME",
]


# --- entry point ----------------------------------------------------------------------------


@quiet_empty_slices
def check_conventions(
    robot: Robot,
    traj: Trajectory,
    contacts: Sequence[Contact],
    *,
    ground: Ground | float | None = None,
) -> ConventionReport:
    """Check a log's kinematic conventions before any dynamics.

    Parameters
    ----------
    robot : Robot
        Floating-base robot; the log's joints are mapped to it by name.
    traj : Trajectory
        The log (``q``, ``v``, ``time``, contact wrenches in world axes [N, N m]).
    contacts : sequence of Contact
        One per contact of the log, matched by name; their frames are the contact frames.
    ground : Ground or float, optional
        The ground plane (a float is its height with a normal opposite to gravity). Without
        it, the loaded contacts must share one plane normal to gravity, at their median
        height.

    Returns
    -------
    ConventionReport
        ``all_checks``: ``velocity_matches_configuration``, ``loaded_contacts_still``,
        ``loaded_contacts_on_ground``; ``findings``: those that failed; ``passed``.
    """
    return run_conventions(robot, traj, contacts, ground=ground)
