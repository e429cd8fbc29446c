"""What ``wholebody estimate`` prints, and which contacts may carry force in the estimate.

:func:`schedule_for_estimate` picks the contact schedule of an estimate when the log has
none: with logged wrenches that carry the robot, the force-and-kinematics schedule
(:func:`wholebody.schedule.infer_schedule_force`: a Schmitt trigger on each contact's normal
force, gated by its height and speed), so that a foot in the air (declared, but carrying
nothing) gets no force from the estimate; without them (a log of motion only, or
placeholder forces), the log's schedule, else the kinematic one
(:func:`wholebody.schedule.infer_schedule_kinematic`: each contact's height above the ground
and its speed).

:func:`format_estimate_report` turns an estimate (the trajectory
:func:`wholebody.check.analysis.estimate_trajectory` returns) into lines: the mode
(full dynamics or Newton-Euler), whether the accelerations were differentiated, per contact
the range of its estimated normal force, the status counts (found, underdetermined,
infeasible, ...), the largest uncertainty (contacts whose wrench the equations do not
determine, and on how many samples), flagged samples with their reasons, the schedule used,
and what was written.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..contacts import Contact
from ..robot import Robot
from ..trajectory import Trajectory

__all__ = [
    "schedule_for_estimate",
    "schedule_conflicts",
    "format_estimate_report",
    "CARRIED_SHARE",
    "ON_GROUND",
    "CONFLICT_SHARE",
    "MODE_TEXT",
]

#: Logged wrenches are used for the schedule when their normal forces carry at least this
#: share of the weight on the median sample (not placeholders or zeros).
CARRIED_SHARE = 0.5


def schedule_for_estimate(
    robot: Robot, traj: Trajectory, contacts: Sequence[Contact], ground: Any = None
) -> tuple[NDArray[np.bool_] | None, dict[str, Any]]:
    """The active mask (N, k) for an estimate of ``traj`` (in ``contacts`` order) and what it
    rests on; ``(None, ...)`` where every declared contact may carry force.

    Logged wrenches that carry the robot give the force-and-kinematics schedule; a schedule
    in the log (``contact_active``) is kept where that one agrees (a contact declared active
    whose logged force is nil and whose foot is off the ground carries nothing). Without
    usable forces: the log's schedule, else the kinematic one
    (:func:`wholebody.schedule.infer_schedule_kinematic`: a contact whose lowest point is
    within its default band of ``ground`` and not rising), else (no contact near the ground
    on any sample: the ground is not where declared) every declared contact.

    Parameters
    ----------
    ground : Ground or float, optional
        The ground plane (a :class:`wholebody.conventions.Ground`, or its height along world
        z [m]); default z = 0, normal +z.

    Time stamps that are not finite are placed between their neighbours' for the minimum
    durations, without a warning: the estimate flags those samples.
    """
    from ..errors import StateWarning

    at, plane_text = _plane(ground)
    declared = None if traj.contact_active is None else np.asarray(traj.contact_active, bool)
    names = [c.name for c in contacts]
    W = traj.contact_wrenches
    why = "no logged wrenches"
    if len(traj) and names and set(names) <= set(traj.contact_names):
        cols = [traj.contact_names.index(n) for n in names]
        W = np.asarray(W, dtype=float)[:, cols]
        up = -robot.gravity_vector / np.linalg.norm(robot.gravity_vector)
        carried = np.nansum(np.maximum(W[..., :3] @ up, 0.0), axis=1)
        if np.isfinite(carried).any() and np.nanmedian(carried) >= CARRIED_SHARE * robot.weight:
            return _force_schedule(robot, traj, contacts, W, declared, at)
        why = "the logged forces carry too little"
    if declared is not None:
        return declared, {"schedule": f"the log's ({why})"}
    from ..schedule import infer_schedule_kinematic

    q, v, _, _ = traj.for_robot(robot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StateWarning)
        kin = infer_schedule_kinematic(robot, q, v, contacts, time=traj.time, **at)
    if not kin.active.any():
        return None, {
            "schedule": f"every declared contact ({why}; no contact is within "
            f"{kin.parameters['height_on']:g} m of {plane_text} on any sample: is the ground "
            "declared where it is?)"
        }
    return kin.active, {
        "schedule": f"from the kinematics (each contact's height above {plane_text} and its "
        f"speed; {why})",
        "inactive_samples": dict(
            zip(names, (~kin.active).sum(axis=0).astype(int).tolist(), strict=True)
        ),
    }


def _plane(ground: Any) -> tuple[dict[str, Any], str]:
    """The keywords of the ground plane ``ground`` (a Ground, a height along world z [m] or
    None: z = 0) for the kinematic schedule, and its text."""
    from ..conventions import Ground

    plane = ground if isinstance(ground, Ground) else Ground(0.0 if ground is None else ground)
    at = {"ground_height": plane.height * float(plane.normal[2]), "ground_normal": plane.normal}
    text = f"the ground at z = {plane.height:g} m" + (
        "" if plane.normal[2] == 1.0 else f", normal {np.round(plane.normal, 3).tolist()}"
    )
    return at, text


#: A contact the schedule leaves without force is on the ground, for
#: :func:`schedule_conflicts`, when its lowest point is within this height of it [m] (where
#: the kinematic schedule makes a contact active).
ON_GROUND = 0.005

#: ... and carries force, when with it active the estimate gives it at least this share of
#: the weight along the vertical.
CONFLICT_SHARE = 0.01


def schedule_conflicts(
    robot: Robot,
    traj: Trajectory,
    contacts: Sequence[Contact],
    mask: NDArray[np.bool_] | None,
    batch: Any,
    estimate: Callable[[NDArray[np.intp], NDArray[np.bool_]], Any],
    ground: Any = None,
) -> list[tuple[list[int], str]]:
    """The samples a schedule without logged forces gets wrong, with the reason, as
    ``[(sample indices, reason)]`` (one entry per set of contacts).

    A sample is wrong when the schedule ``mask`` (N, k) leaves a contact without force whose
    lowest point is within :data:`ON_GROUND` of the ground; the estimate ``batch`` (an
    :class:`~wholebody.estimation.EstimationBatch` with that mask) does not explain the
    motion without it (infeasible, or found with a whole-body Newton-Euler residual above
    the limit: full-dynamics mode fits the equations in the least-squares sense, so a missing
    contact shows there); and ``estimate(rows, active)`` (the same estimate of the samples
    ``rows`` with the mask ``active``) with those contacts active explains it (found, within
    the limit) and gives them at least :data:`CONFLICT_SHARE` of the weight. The limit is the
    verification limit ``DEFAULT_TOLERANCE * m |g|``, or, when larger, ten times the median
    residual of the samples the schedule leaves no grounded contact out of (the log's own
    level: torque noise in full-dynamics mode). A foot in the air is never a conflict, nor
    one on the ground that carries nothing, nor a sample infeasible for another cause.
    """
    from ..errors import StateWarning
    from ..estimation import DEFAULT_TOLERANCE
    from ..schedule import contact_heights

    if mask is None or np.all(mask):
        return []
    q, v, _, _ = traj.for_robot(robot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StateWarning)
        height, _ = contact_heights(robot, q, v, contacts, **_plane(ground)[0])
    grounded = ~np.asarray(mask, bool) & (height <= ON_GROUND)  # NaN height: not
    miss = np.fmax(batch.residual_force_norm, batch.residual_moment_norm)
    found = batch.status == "found"
    level = miss[found & ~grounded.any(axis=1)]
    limit = max(DEFAULT_TOLERANCE * robot.weight, 10 * float(np.median(level)) if len(level) else 0)
    unexplained = (batch.status == "infeasible") | (found & (miss > limit))
    rows = np.flatnonzero(grounded.any(axis=1) & unexplained)
    if not len(rows):
        return []
    alt = estimate(rows, np.asarray(mask, bool)[rows] | grounded[rows])
    up = -robot.gravity_vector / np.linalg.norm(robot.gravity_vector)
    carried = np.stack([alt.wrench(c.name)[:, :3] @ up for c in contacts], axis=1)
    carried = np.where(grounded[rows], carried, 0.0).max(axis=1)
    explained = (alt.status == "found") & (
        np.fmax(alt.residual_force_norm, alt.residual_moment_norm) <= limit
    )
    groups: dict[tuple[int, ...], list[int]] = {}
    for r in np.flatnonzero(explained & (carried >= CONFLICT_SHARE * robot.weight)).tolist():
        groups.setdefault(tuple(np.flatnonzero(grounded[rows[r]]).tolist()), []).append(r)
    out = []
    for cols, rs in groups.items():
        names = ", ".join(repr(contacts[j].name) for j in cols)
        out.append(
            (
                rows[rs].tolist(),
                f"the schedule leaves {names} without force while on the ground (within "
                f"{ON_GROUND:g} m), and the motion needs it: with it the estimate balances the "
                f"whole body and gives it up to {carried[rs].max():.3g} N, without it the "
                f"residual reaches {np.nanmax(miss[rows[rs]], initial=0.0):.3g} N or N m "
                f"(limit {limit:.3g}) or no wrenches inside the cones explain the motion",
            )
        )
    return out


def _force_schedule(
    robot: Robot,
    traj: Trajectory,
    contacts: Sequence[Contact],
    W: NDArray[np.float64],
    declared: NDArray[np.bool_] | None,
    at: dict[str, Any],
) -> tuple[NDArray[np.bool_], dict[str, Any]]:
    """The force-and-kinematics schedule of logged wrenches ``W`` (N, k, 6), within the log's
    schedule ``declared`` when it has one."""
    from ..errors import StateWarning
    from ..schedule import infer_schedule_force

    q, v, _, _ = traj.for_robot(robot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StateWarning)
        schedule = infer_schedule_force(robot, q, v, contacts, time=traj.time, wrenches=W, **at)
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
            zip([c.name for c in contacts], (~active).sum(axis=0).astype(int).tolist(), strict=True)
        ),
    }


#: The mode of an estimate, as the report says it.
MODE_TEXT = {
    "full_dynamics": "full-dynamics mode: the joint torques and every equation of motion",
    "newton_euler": "Newton-Euler mode: no joint torques, the six equations of the whole body",
}


def format_estimate_report(
    est: Trajectory, contacts: Sequence[Contact], output: str | None = None
) -> str:
    """Lines for ``wholebody estimate``: mode, force ranges, statuses, uncertainty, flags
    (with their reasons), schedule, output."""
    meta = est.metadata
    names = [c.name for c in contacts]
    mode = meta.get("estimation_mode", "?")
    lines = [
        f"estimated {len(names)} contacts over {len(est)} samples ({MODE_TEXT.get(mode, mode)})"
    ]
    if est.accelerations_estimated:
        lines.append("motion    accelerations differentiated from v (the log has none)")
    detailed = meta.get("estimation_detailed_status", {}) or {}
    order = ["found", "underdetermined", "infeasible", "failed", "flagged"]
    counts = ", ".join(
        f"{s} {detailed[s]}" for s in order + sorted(set(detailed) - set(order)) if s in detailed
    )
    lines.append(f"status    {counts or 'none'}")
    beside = any(n.endswith(":estimated") for n in est.contact_names)
    W = np.asarray(est.contact_wrenches, dtype=float)
    for name in names:
        key = f"{name}:estimated" if beside else name
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
    flagged = (meta.get("estimation_flagged", {}) or {}).items()
    for reason, idx in sorted(flagged, key=lambda item: item[1][:1]):
        lines.append(f"flagged   {len(idx)} samples ({reason}): {_indices(idx)}")
    samples = meta.get("estimation_samples", {}) or {}
    for s in ("failed", "infeasible"):
        if samples.get(s):
            lines.append(f"flagged   {len(samples[s])} {s} samples: {_indices(samples[s])}")
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
        if beside:
            added = ", ".join(f"'{n}:estimated'" for n in names)
            lines.append(f"written   {output} (contacts {added} beside the logged ones)")
        else:
            lines.append(
                f"written   {output} (the log with the estimates as its contacts "
                f"{', '.join(repr(n) for n in names)} and the schedule used)"
            )
    return "\n".join(lines)


def _indices(idx: Sequence[int]) -> str:
    return ", ".join(str(i) for i in idx[:8]) + (", ..." if len(idx) > 8 else "")
