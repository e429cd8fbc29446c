"""What ``wholebody estimate`` prints, and which contacts may carry force in the estimate.

:func:`schedule_for_estimate` picks the contact schedule of an estimate when the log has
none: with logged wrenches that carry the robot, the force-and-kinematics schedule
(:func:`wholebody.schedule.infer_schedule_force`: a Schmitt trigger on each contact's normal
force, gated by its height and speed), so that a foot in the air (declared, but carrying
nothing) gets no force from the estimate; otherwise every declared contact may carry force.

:func:`format_estimate_report` turns an estimate (the trajectory
:func:`wholebody.check.analysis.estimate_trajectory` returns) into lines: per contact the range of
its estimated normal force, the status counts (found, underdetermined, infeasible, ...), the
largest uncertainty (contacts whose wrench the equations do not determine, and on how many
samples), flagged samples, the schedule used, and what was written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..contacts import Contact
from ..robot import Robot
from ..trajectory import Trajectory

__all__ = ["schedule_for_estimate", "format_estimate_report", "CARRIED_SHARE"]

#: Logged wrenches are used for the schedule when their normal forces carry at least this
#: share of the weight on the median sample (not placeholders or zeros).
CARRIED_SHARE = 0.5


def schedule_for_estimate(
    robot: Robot, traj: Trajectory, contacts: Sequence[Contact]
) -> tuple[NDArray[np.bool_] | None, dict[str, Any]]:
    """The active mask (N, k) for an estimate of ``traj`` (in ``contacts`` order) and what it
    rests on; ``(None, ...)`` where every declared contact may carry force.

    Logged wrenches that carry the robot give the force-and-kinematics schedule; a schedule
    in the log (``contact_active``) is kept where that one agrees (a contact declared active
    whose logged force is nil and whose foot is off the ground carries nothing); without
    usable forces, the log's schedule, else none.
    """
    declared = None if traj.contact_active is None else np.asarray(traj.contact_active, bool)
    names = [c.name for c in contacts]
    W = traj.contact_wrenches
    fallback = "the log's" if declared is not None else "every declared contact"
    if W is None or not len(traj) or not set(names) <= set(traj.contact_names):
        return declared, {"schedule": fallback}
    cols = [traj.contact_names.index(n) for n in names]
    W = np.asarray(W, dtype=float)[:, cols]
    up = -robot.gravity_vector / np.linalg.norm(robot.gravity_vector)
    carried = np.nansum(np.maximum(W[..., :3] @ up, 0.0), axis=1)
    if not np.isfinite(carried).any() or np.nanmedian(carried) < CARRIED_SHARE * robot.weight:
        return declared, {"schedule": f"{fallback} (the logged forces carry too little)"}
    from ..schedule import infer_schedule_force

    q, v, _, _ = traj.for_robot(robot)
    schedule = infer_schedule_force(robot, q, v, contacts, time=traj.time, wrenches=W)
    active = schedule.active
    text = "from the logged normal forces (Schmitt trigger) and the kinematics"
    if declared is not None and declared.shape == active.shape:
        dropped = int((declared & ~active).sum())
        active = declared & active
        text += f", within the log's schedule ({dropped} declared samples carry nothing)"
    return active, {
        "schedule": text,
        "agreement": schedule.parameters["agreement"],
        "inactive_samples": dict(
            zip(names, (~active).sum(axis=0).astype(int).tolist(), strict=True)
        ),
    }


def format_estimate_report(
    est: Trajectory, contacts: Sequence[Contact], output: str | None = None
) -> str:
    """Lines for ``wholebody estimate``: force ranges, statuses, uncertainty, flags, output."""
    meta = est.metadata
    names = [c.name for c in contacts]
    lines = [
        f"estimated {len(names)} contacts over {len(est)} samples "
        f"({meta.get('estimation_mode', '?')} mode)"
    ]
    detailed = meta.get("estimation_detailed_status", {}) or {}
    order = ["found", "underdetermined", "infeasible", "failed", "flagged"]
    counts = ", ".join(
        f"{s} {detailed[s]}" for s in order + sorted(set(detailed) - set(order)) if s in detailed
    )
    lines.append(f"status    {counts or 'none'}")
    W = np.asarray(est.contact_wrenches, dtype=float)
    for name in names:
        key = f"{name}:estimated"
        if key not in est.contact_names:
            continue
        fz = W[:, est.contact_names.index(key), 2]
        finite = fz[np.isfinite(fz)]
        if finite.size:
            lines.append(
                f"contact   {name}: normal force {finite.min():.1f} .. {finite.max():.1f} N "
                f"(median {np.median(finite):.1f} N)"
            )
    split = meta.get("estimation_unidentified", {}) or {}
    if split and max(split.values()) > 0:
        worst = max(split, key=lambda n: split[n])
        lines.append(
            f"uncertain {worst!r}: its wrench is not determined by the equations on "
            f"{split[worst]} samples (the split between contacts comes from the "
            "regularisation; intervals: wholebody.estimation.uncertainty)"
            + (
                "; also " + ", ".join(f"{n!r} {c}" for n, c in split.items() if n != worst and c)
                if sum(1 for c in split.values() if c) > 1
                else ""
            )
        )
    else:
        lines.append("uncertain none: every active contact's wrench is determined by the equations")
    samples = meta.get("estimation_samples", {}) or {}
    flagged = {s: idx for s, idx in samples.items() if s in ("flagged", "failed", "infeasible")}
    for s, idx in flagged.items():
        if idx:
            shown = ", ".join(str(i) for i in idx[:8]) + (", ..." if len(idx) > 8 else "")
            lines.append(f"flagged   {len(idx)} {s} samples: {shown}")
    schedule = meta.get("estimation_schedule", {}) or {}
    if schedule:
        text = f"schedule  {schedule.get('schedule', '?')}"
        if "inactive_samples" in schedule:
            text += "; inactive samples " + ", ".join(
                f"{n} {c}" for n, c in schedule["inactive_samples"].items()
            )
        if "agreement" in schedule:
            text += "; force/kinematics agreement " + ", ".join(
                f"{n} {100 * a:.1f} %" for n, a in schedule["agreement"].items()
            )
        lines.append(text)
    if output:
        added = ", ".join(f"'{n}:estimated'" for n in names)
        lines.append(f"written   {output} (contacts {added} beside the logged ones)")
    return "\n".join(lines)
