"""Joint positions against the URDF's limits, and joint angles logged in degrees.

A log whose joint angles, velocities and accelerations are all in degrees still has ``v``
equal to ``dq/dt`` (the velocity check passes); the robot it describes is then folded far
beyond its joints' limits, and its contacts seem to move at tens of m/s. This check flags
each sample whose joint is beyond its limits (with the joint), and names the degrees when
reading the angles as degrees puts every joint within them (a failed check). Joints beyond
their limits otherwise pass the check (the balance is not at stake: a simulator may not
enforce a URDF's limits), flagged per sample in its evidence and said as a note beside the
verdict (:func:`wholebody.diagnosis.notes.limit_notes`).

Model: a joint is beyond its limits when its position is outside ``[lower - s, upper + s]``,
``s = LIMIT_SLACK_RAD + LIMIT_SLACK_SHARE * (upper - lower)`` (simulators enforce limits
softly: a few milliradians of penetration are normal). Only one-coordinate joints with finite
limits (``lower < upper``) are checked.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..robot import Robot
from .contacts import ConventionCheck

__all__ = [
    "joint_limit_check",
    "limited_joints",
    "LIMIT_SLACK_RAD",
    "LIMIT_SLACK_SHARE",
    "CHECK_NAME",
]

Array = NDArray[np.float64]

#: Absolute slack beyond a limit [rad or m] (soft limits of simulators).
LIMIT_SLACK_RAD = 0.02
#: ... plus this share of the joint's range.
LIMIT_SLACK_SHARE = 0.01
#: The check's name in :class:`~wholebody.conventions.ConventionReport`.
CHECK_NAME = "joint_positions_within_limits"
_MAX_LISTED = 1000  # per-sample flags kept in the evidence


def limited_joints(robot: Robot) -> list[tuple[str, int, float, float, bool]]:
    """(name, index in q, lower, upper, revolute) of each one-coordinate joint with finite
    limits ``lower < upper``."""
    model = robot.model
    out = []
    for name in robot.joint_names:
        jm = model.joints[model.getJointId(name)]
        if jm.nq != 1:
            continue
        i = jm.idx_q
        lo, hi = float(model.lowerPositionLimit[i]), float(model.upperPositionLimit[i])
        if not (np.isfinite(lo) and np.isfinite(hi)) or not lo < hi or max(abs(lo), abs(hi)) > 1e6:
            continue
        revolute = "Prismatic" not in jm.shortname() and "P" not in jm.shortname()[-2:]
        out.append((name, i, lo, hi, revolute))
    return out


def _beyond(Q: Array, lo: Array, hi: Array) -> NDArray[np.bool_]:
    slack = LIMIT_SLACK_RAD + LIMIT_SLACK_SHARE * (hi - lo)
    with np.errstate(invalid="ignore"):
        return (Q < lo - slack) | (Q > hi + slack)


def joint_limit_check(
    robot: Robot, q: Array, bad: NDArray[np.bool_] | None = None, time: Array | None = None
) -> ConventionCheck:
    """Flag samples whose joints are beyond their URDF limits; name degrees when reading the
    revolute joints' angles as degrees puts every sample within them.

    Parameters
    ----------
    q : ndarray, shape (N, nq)
        Configurations in the robot's layout.
    bad : ndarray of bool, shape (N,), optional
        Samples already flagged (not judged).
    time : ndarray, shape (N,), optional
        [s], for the message.

    Returns
    -------
    ConventionCheck
        ``evidence["flagged"]``: sample -> "joint 'x' at 45 beyond [0, 2.4]" (the first
        1000); ``evidence["joints"]``: per joint, samples beyond and the worst value;
        hypothesis ``"joint_angles_in_degrees"`` when it fits.
    """
    joints = limited_joints(robot)
    N = len(q)
    ok = np.ones(N, dtype=bool) if bad is None else ~np.asarray(bad, dtype=bool)
    stated = {"slack": f"{LIMIT_SLACK_RAD} + {LIMIT_SLACK_SHARE} x range", "checked": len(joints)}
    if not joints or not ok.any():
        return ConventionCheck(CHECK_NAME, True, "no joint limits to check", evidence=stated)
    idx = np.array([j[1] for j in joints])
    lo = np.array([j[2] for j in joints])
    hi = np.array([j[3] for j in joints])
    revolute = np.array([j[4] for j in joints])
    Q = np.where(ok[:, None], q[:, idx], np.nan)
    beyond = _beyond(Q, lo, hi)
    if not beyond.any():
        return ConventionCheck(
            CHECK_NAME,
            True,
            f"every joint within its URDF limits ({len(joints)} joints checked)",
            evidence=stated,
        )
    per_joint: dict[str, Any] = {}
    flagged: dict[int, str] = {}
    for c in np.flatnonzero(beyond.any(axis=0)):
        rows = np.flatnonzero(beyond[:, c])
        worst = int(rows[np.argmax(np.maximum(lo[c] - Q[rows, c], Q[rows, c] - hi[c]))])
        name = joints[c][0]
        per_joint[name] = {
            "samples": int(len(rows)),
            "first": int(rows[0]),
            "worst_sample": worst,
            "worst_value": float(Q[worst, c]),
            "limits": [float(lo[c]), float(hi[c])],
        }
        for r in rows:
            if len(flagged) >= _MAX_LISTED:
                break
            flagged.setdefault(
                int(r), f"joint {name!r} at {Q[r, c]:.4g} beyond [{lo[c]:.4g}, {hi[c]:.4g}]"
            )
    evidence: dict[str, Any] = {**stated, "joints": per_joint, "flagged": flagged}
    rows_beyond = beyond.any(axis=1)
    # Degrees: the revolute joints' angles read as degrees are all within their limits, and
    # the log is far beyond them as it is (a few joints over by a little is not degrees).
    Qd = np.where(revolute, np.radians(Q), Q)
    in_degrees = (
        revolute[beyond.any(axis=0)].all()
        and not _beyond(Qd, lo, hi).any()
        and float(np.nanmax(np.abs(Q[:, revolute]))) > 2 * np.pi
    )
    names = list(per_joint)
    shown = ", ".join(f"{n!r} ({per_joint[n]['samples']} samples)" for n in names[:6])
    more = f" and {len(names) - 6} more" if len(names) > 6 else ""
    first = int(np.flatnonzero(rows_beyond)[0])
    when = f" from {time[first]:.3f} s" if time is not None else f" from sample {first}"
    if in_degrees:
        return ConventionCheck(
            CHECK_NAME,
            False,
            f"joints beyond their URDF limits on {int(rows_beyond.sum())} samples{when}: "
            f"{shown}{more}; every joint is within them with the angles read as degrees",
            "joint angles are in degrees (with v equal to dq/dt, the velocities and "
            "accelerations too); convert q, v and a of the revolute joints to radians",
            ("joint_angles_in_degrees",),
            evidence,
        )
    # Beyond the limits, not degrees: the balance is not at stake (a simulator may not enforce
    # a URDF's limits; a start at the neutral pose may be outside them). The check passes; the
    # samples are flagged in the evidence and said as a note beside the verdict.
    return ConventionCheck(
        CHECK_NAME,
        True,
        f"joints beyond their URDF limits on {int(rows_beyond.sum())} samples{when}: "
        f"{shown}{more} (flagged per sample in the evidence; check the joint order and "
        "offsets against the URDF, or the URDF's limits)",
        "",
        (),
        evidence,
    )
