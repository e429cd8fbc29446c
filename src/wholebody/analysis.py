"""Batch checks of logs: are the contact wrenches consistent with the motion and friction?

:func:`check_trajectory` runs one Pinocchio pass per sample and everything else in numpy:
the Newton-Euler residual about the CoM, each contact's friction-cone margin (with the name of
the violated inequality), utilisation and centre of pressure, flags per sample, a summary and,
when residuals are large, a diagnosis (:mod:`wholebody.diagnosis`). The result is a
:class:`Report`, which writes JSON, CSV, a pandas DataFrame and figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .balance import kinematics_batch
from .contacts import Contact, SurfaceContact, ground_aligned_rotations
from .diagnosis import MAX_SAMPLES, DiagnosisData, Finding, diagnose
from .errors import InvalidArgumentError, LogFormatError
from .friction import VIOLATION_NAMES, ContactSet, normal_rotation
from .newton_euler import (
    MAX_WRENCH_RELATIVE,
    beyond_physical_magnitude,
    newton_euler_residual_arrays,
    wrench_sum,
)
from .parallel import ChunkFailure, Shared, chunk_bounds, run_chunks
from .report import CONTACT_THRESHOLD, Report
from .robot import Robot
from .trajectory import Trajectory

__all__ = ["Report", "check_trajectory", "estimate_trajectory", "validate_tolerances", "TOLERANCE_PRESETS",
           "DEFAULT_FORCE_TOLERANCE", "DEFAULT_MOMENT_TOLERANCE", "DEFAULT_CONE_TOLERANCE"]

Array = NDArray[np.float64]
#: A sample is consistent when its residual force is below this share of the weight...
DEFAULT_FORCE_TOLERANCE = 0.01
#: ...and its residual moment over the weight below this length [m] (1 cm of CoP error).
DEFAULT_MOMENT_TOLERANCE = 0.01
#: Cone margins below -this share of the weight count as violations. Simulators place contact
#: points a fraction of a millimetre outside a tilted sole (penetration): 1e-4 m g is 0.06 N.
DEFAULT_CONE_TOLERANCE = 1e-4
#: Tolerance presets: simulation logs balance to numerical precision; measured data carries
#: sensor noise, calibration and model errors of a few per cent.
TOLERANCE_PRESETS: dict[str, dict[str, float]] = {
    "simulation": {"force_tolerance": 0.01, "moment_tolerance": 0.01, "cone_tolerance": 1e-4,
                   "cone_tolerance_relative": 0.0},
    "measured": {"force_tolerance": 0.05, "moment_tolerance": 0.03, "cone_tolerance": 2e-3,
                 "cone_tolerance_relative": 0.05},
}


def validate_tolerances(**tolerances: float) -> None:
    """Raise :class:`InvalidArgumentError` unless every tolerance is a finite number >= 0."""
    for name, value in tolerances.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise InvalidArgumentError(f"{name} must be a number, got {type(value).__name__} {value!r}")
        if not (math.isfinite(value) and value >= 0):
            raise InvalidArgumentError(f"{name} must be a finite number >= 0, got {value!r}")


def _contacts_for_log(traj: Trajectory, contacts: Sequence[Contact]) -> list[Contact]:
    names = [c.name for c in contacts]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InvalidArgumentError(f"contact names must be unique; declared twice: {duplicated}")
    by_name = {c.name: c for c in contacts}
    undeclared = [n for n in traj.contact_names if n not in by_name]
    if undeclared:
        raise LogFormatError(
            f"{traj.source}: the log has contacts {undeclared} that are not declared; declare each "
            f"(frame, type, friction); declared: {sorted(by_name)}"
        )
    absent = [n for n in by_name if n not in traj.contact_names]
    if absent:
        raise LogFormatError(f"{traj.source}: declared contacts {absent} have no wrenches in the log; "
                             f"logged: {list(traj.contact_names)}")
    return [by_name[n] for n in traj.contact_names]


def check_trajectory(
    robot: Robot,
    traj: Trajectory,
    contacts: Sequence[Contact],
    *,
    preset: str = "simulation",
    force_tolerance: float | None = None,
    moment_tolerance: float | None = None,
    cone_tolerance: float | None = None,
    cone_tolerance_relative: float | None = None,
    t_start: float | None = None,
    t_stop: float | None = None,
    ground: Any = None,
    conventions: bool = True,
    savgol: tuple[int, int] | None = None,
    diagnose_causes: bool = True,
    workers: int = 1,
    chunk_size: int = 50_000,
    progress: bool = False,
) -> Report:
    """Check a log's contact wrenches against its motion and the friction cones.

    Parameters
    ----------
    robot : Robot
        Floating-base robot; the log's joints are mapped to it by name.
    traj : Trajectory
    contacts : sequence of Contact
        One per contact of the log, matched by name (friction and geometry).
    preset : {"simulation", "measured"}
        Default tolerances (:data:`TOLERANCE_PRESETS`); the arguments below override them.
    force_tolerance : float, optional
        Residual force tolerance, relative to the weight (simulation: 0.01).
    moment_tolerance : float, optional
        Residual moment tolerance over the weight [m] (simulation: 0.01, 1 cm of CoP).
    cone_tolerance : float, optional
        Cone margin below which a contact counts as violating, relative to the weight.
    cone_tolerance_relative : float, optional
        Further cone slack relative to each contact's own normal force.
    t_start, t_stop : float, optional
        Check only the samples with ``t_start <= time <= t_stop`` [s].
    ground : Ground or float, optional
        The ground for the convention checks (a height [m] or a
        :class:`wholebody.conventions.Ground`); by default loaded contacts must agree.
    conventions : bool
        Run :func:`wholebody.conventions.check_conventions` before dynamics (default). A
        failed check makes the log inconsistent and heads the diagnosis.
    savgol : (window, order), optional
        Smoothing of estimated accelerations (only when the log has none).
    diagnose_causes : bool
        Run :func:`wholebody.diagnosis.diagnose` when some samples are inconsistent.
    workers : int
        Processes for the per-sample work (one Pinocchio pass each); results are identical
        to ``workers=1``. A chunk that fails flags its samples with the error.
    chunk_size : int
        Samples per chunk: memory beyond the loaded log grows with it, not with the log.
    progress : bool
        A progress bar (tqdm) over the samples (``workers=1``).

    Returns
    -------
    Report
        Per-sample residuals, cones, flags, the verdict (see :mod:`wholebody.report`) and
        the diagnosis.
    """
    if preset not in TOLERANCE_PRESETS:
        raise InvalidArgumentError(f"preset must be one of {sorted(TOLERANCE_PRESETS)}, got {preset!r}")
    given = {"force_tolerance": force_tolerance, "moment_tolerance": moment_tolerance,
             "cone_tolerance": cone_tolerance, "cone_tolerance_relative": cone_tolerance_relative}
    tol = {name: TOLERANCE_PRESETS[preset][name] if value is None else value for name, value in given.items()}
    validate_tolerances(**tol)
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise InvalidArgumentError(f"workers must be an integer >= 1, got {workers!r}")
    contacts = _contacts_for_log(traj, contacts)
    traj = _time_window(traj, t_start, t_stop)
    if traj.a is None:
        traj = traj.with_accelerations(robot, savgol=savgol)
    convention_report = None
    if conventions and len(traj) >= 3:
        from .conventions import check_conventions

        convention_report = check_conventions(robot, traj, contacts, ground=ground)
    q, v, a, _ = traj.for_robot(robot)
    arrays, bad, reasons = robot.check_batch(q=q, v=v, a=a)
    N = len(traj)
    W = traj.contact_wrenches
    E = traj.external_wrenches
    # Sample-level problems are flagged before any algebra: non-finite values, and wrenches
    # beyond physical magnitudes (a diverged simulation; they would also overflow).
    checks = [("time has non-finite values", ~np.isfinite(traj.time))]
    for label, arr in [("contact wrenches", W)] + ([] if E is None else [("external wrenches", E)]):
        checks.append((f"{label} have non-finite values", ~np.isfinite(arr).reshape(N, -1).all(axis=1)))
        checks.append((f"{label} are beyond physical magnitudes (> {MAX_WRENCH_RELATIVE:g} m g, a diverged "
                       "simulation or wrong units)", beyond_physical_magnitude(arr, robot.weight)))
    for why, rows in checks:
        for i in np.flatnonzero(rows & ~bad):
            reasons[int(i)] = why
        bad = bad | rows

    k, e = len(contacts), len(traj.external_frames)
    parents = [robot.model.names[robot.model.frames[robot.frame_id(c.frame)].parentJoint] for c in contacts]
    frames = [c.frame for c in contacts] + list(traj.external_frames) + parents
    # Valid samples whose kinematics the diagnosis keeps (at most MAX_SAMPLES, evenly spread).
    valid = np.flatnonzero(~bad)
    keep = valid if len(valid) <= MAX_SAMPLES else valid[np.linspace(0, len(valid) - 1, MAX_SAMPLES).astype(int)]

    # One chunk at a time (bounded memory), on one or several processes.
    chunks = []
    cone_slack = (tol["cone_tolerance"] * robot.weight, tol["cone_tolerance_relative"])
    shared = {"q": arrays["q"], "v": arrays["v"], "a": arrays["a"], "W": W, "E": E, "bad": bad}
    for start, stop in chunk_bounds(N, chunk_size):
        kept = keep[(keep >= start) & (keep < stop)] - start
        part = {name: Shared(name, start, stop) for name in shared}
        chunks.append(((start, stop), (contacts, part["q"], part["v"], part["a"], part["W"],
                                       None if E is None else part["E"], part["bad"], frames, e, kept,
                                       cone_slack, progress and workers == 1)))
    results = run_chunks(robot, _check_chunk, chunks, workers, shared=shared)
    out = _ChunkOutput.empty(N, k, len(keep))
    offset = 0
    for ((start, stop), args), res in zip(chunks, results):
        n_keep = len(args[9])
        if isinstance(res, ChunkFailure):
            for i in range(start, stop):
                if not bad[i]:
                    reasons[i] = f"chunk {start}..{stop - 1} failed: {res.error}"
            bad[start:stop] = True
        else:
            out.write(res, start, stop, offset)
        offset += n_keep
    # A residual that is not finite on a checked sample (a model with NaN inertia, values
    # that overflow) is not evidence: flag it, never count it as balanced.
    not_finite = ~bad & ~(np.isfinite(out.r_f).all(axis=1) & np.isfinite(out.r_m).all(axis=1))
    for i in np.flatnonzero(not_finite):
        reasons[int(i)] = "the residual is not finite (NaN in the model, or values that overflow)"
    bad = bad | not_finite
    reasons = dict(sorted(reasons.items()))
    for field_ in ("r_f", "r_m", "margin", "util", "normal", "cop"):
        getattr(out, field_)[bad] = np.nan

    events = _contact_events(traj.time, out.normal, [c.name for c in contacts], robot.weight, bad)
    report = Report(
        robot=robot.name, source=traj.source, time=traj.time, residual_force=out.r_f, residual_moment=out.r_m,
        flagged=bad, reasons=reasons, weight=robot.weight, force_tolerance=tol["force_tolerance"],
        moment_tolerance=tol["moment_tolerance"], contact_names=[c.name for c in contacts],
        cone_margin=out.margin, violated_row=np.array(("",) + VIOLATION_NAMES, dtype=object)[out.violated + 1],
        utilisation=out.util, normal_force=out.normal, cop=out.cop,
        accelerations_estimated=traj.accelerations_estimated, cone_tolerance=tol["cone_tolerance"],
        events=events,
        sole_half_sizes={c.name: (c.half_length, c.half_width) for c in contacts if isinstance(c, SurfaceContact)},
        conventions=convention_report, preset=preset, cone_tolerance_relative=tol["cone_tolerance_relative"],
    )
    over = report.over_tolerance
    if traj.accelerations_estimated and over.any() and N >= 3:
        report.unreliable = _covered_by_differentiation(robot, traj, contacts, report, np.flatnonzero(over))
    findings: list[Finding] = []
    if convention_report is not None:
        findings += [Finding(f"convention:{c.name}", 1.0, c.message + (f"; fix: {c.fix}" if c.fix else ""),
                             {"hypotheses": list(c.hypotheses), "evidence": c.evidence})
                     for c in convention_report.findings]
    inconsistent = report.inconsistent_samples
    if diagnose_causes and inconsistent.any():
        ok = ~bad[keep]
        rows = keep[ok]
        log_wrenches = np.where(bad[:, None, None], 0.0, W)
        findings += diagnose(DiagnosisData(
            weight=robot.weight, mass=robot.mass, gravity=robot.gravity_vector, time=traj.time[rows],
            wrenches=log_wrenches[rows], positions=out.keep_positions[ok], rotations=out.keep_rotations[ok],
            joint_centres=out.keep_joints[ok], com=out.keep_com[ok], momentum_rate=out.keep_rate[ok],
            external=out.keep_ext[ok], names=[c.name for c in contacts], over=inconsistent[rows],
            log_wrenches=log_wrenches, rows=rows, log_time=traj.time,
            tolerance=(tol["force_tolerance"] * robot.weight, tol["moment_tolerance"] * robot.weight),
        ))
    report.diagnosis = findings
    return report


def _time_window(traj: Trajectory, t_start: float | None, t_stop: float | None) -> Trajectory:
    """The samples with ``t_start <= time <= t_stop``."""
    if t_start is None and t_stop is None:
        return traj
    for name, value in (("t_start", t_start), ("t_stop", t_stop)):
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value)):
            raise InvalidArgumentError(f"{name} must be a finite time in seconds, got {value!r}")
    lo = -np.inf if t_start is None else float(t_start)
    hi = np.inf if t_stop is None else float(t_stop)
    keep = (traj.time >= lo) & (traj.time <= hi)
    if not keep.any():
        raise InvalidArgumentError(
            f"no sample of {traj.source} lies in [{lo}, {hi}] s (the log spans {traj.time[0]:.6g} .. "
            f"{traj.time[-1]:.6g} s)")
    def cut(x: Any) -> Any:
        return None if x is None else x[keep]
    return replace(traj, time=traj.time[keep], q=traj.q[keep], v=traj.v[keep], a=cut(traj.a), tau=cut(traj.tau),
                   contact_wrenches=traj.contact_wrenches[keep], external_wrenches=cut(traj.external_wrenches))


def _covered_by_differentiation(robot: Robot, traj: Trajectory, contacts: Sequence[Contact], report: Report,
                                over: NDArray[np.intp]) -> NDArray[np.bool_]:
    """Samples over tolerance whose residual the expected error of differentiating ``v``
    covers (:func:`wholebody.conventions.expected_residual_error`)."""
    from .conventions import expected_residual_error

    expected = expected_residual_error(robot, traj, contacts, force_tolerance=report.force_tolerance,
                                       moment_tolerance=report.moment_tolerance, samples=over)
    w = report.weight
    covered = np.zeros(report.n_samples, dtype=bool)
    with np.errstate(invalid="ignore"):
        covered[over] = ((report.force_norm[over] <= report.force_tolerance * w + expected.force_error[over])
                         & (report.moment_norm[over] <= report.moment_tolerance * w + expected.moment_error[over]))
    return covered


@dataclass
class _ChunkOutput:
    """Per-sample results of a log (or of one chunk), and the kinematics kept for diagnosis."""

    r_f: Array
    r_m: Array
    ext: Array
    margin: Array
    util: Array
    normal: Array
    cop: Array
    violated: Array
    keep_positions: Array
    keep_rotations: Array
    keep_joints: Array
    keep_com: Array
    keep_rate: Array
    keep_ext: Array

    @classmethod
    def empty(cls, n: int, k: int, n_keep: int) -> _ChunkOutput:
        nan = np.nan
        return cls(np.full((n, 3), nan), np.full((n, 3), nan), np.full((n, 6), nan), np.full((n, k), nan),
                   np.full((n, k), nan), np.full((n, k), nan), np.full((n, k, 2), nan),
                   np.full((n, k), -1, dtype=np.int16), np.full((n_keep, k, 3), nan),
                   np.full((n_keep, k, 3, 3), nan), np.full((n_keep, k, 3), nan),
                   np.full((n_keep, 3), nan), np.full((n_keep, 6), nan), np.full((n_keep, 6), nan))

    def write(self, part: _ChunkOutput, start: int, stop: int, offset: int) -> None:
        for name in ("r_f", "r_m", "ext", "margin", "util", "normal", "cop", "violated"):
            getattr(self, name)[start:stop] = getattr(part, name)
        m = len(part.keep_com)
        for name in ("keep_positions", "keep_rotations", "keep_joints", "keep_com", "keep_rate", "keep_ext"):
            getattr(self, name)[offset : offset + m] = getattr(part, name)


def _check_chunk(
    robot: Robot, contacts: list[Contact], Q: Array, V: Array, A: Array, W: Array, E: Array | None, skip: Array,
    frames: list[str], e: int, keep: Array, cone_slack: tuple[float, float], progress: bool,
) -> _ChunkOutput:
    """Everything :func:`check_trajectory` computes for one chunk of samples."""
    N, k = len(Q), len(contacts)
    kin = kinematics_batch(robot, Q, V, A, frames, skip, rotations=True, progress=progress)
    P = kin.positions[:, :k]
    R = kin.rotations[:, :k]
    com = kin.com
    # Contacts and known external wrenches, each about its own frame origin, in one layout.
    wrenches = W if E is None else np.concatenate([W, E], axis=1)
    points = kin.positions[:, : k + e]
    r_f, r_m = newton_euler_residual_arrays(wrenches, points, com, kin.momentum_rate, mass=robot.mass,
                                           gravity=robot.gravity_vector)
    if E is None:
        ext = np.zeros((N, 6))
    else:  # about the CoM, for the diagnosis
        ext = np.concatenate(wrench_sum(E, kin.positions[:, k : k + e], com), axis=1)

    # Friction, per contact, in its own frame: the one cone home.
    R_cone = R
    if any(c.ground_normal is not None for c in contacts):
        R_cone = R.copy()
        for j, c in enumerate(contacts):
            if c.ground_normal is None:
                continue
            turned = ground_aligned_rotations(R[:, j], c.ground_normal)
            # A point contact's normal is given in its frame: map it onto the ground normal.
            R_cone[:, j] = turned if isinstance(c, SurfaceContact) else turned @ normal_rotation(c.normal).T
    cones = ContactSet(contacts).check(W, R_cone, tol=0.0)
    margin, util, normal, cop = cones.margin, cones.utilisation, cones.normal_force, cones.cop
    with np.errstate(invalid="ignore"):
        outside = margin < -(cone_slack[0] + cone_slack[1] * np.abs(normal))
    violated = np.where(outside, cones.worst, -1).astype(np.int16)
    parents = kin.positions[:, k + e :]
    return _ChunkOutput(r_f, r_m, ext, margin, util, normal, cop, violated, P[keep], R[keep], parents[keep],
                        com[keep], kin.momentum_rate[keep], ext[keep])


MAX_EVENTS = 10_000  # per contact: a noisy log can chatter at every sample


def _contact_events(time: Array, normal: Array, names: list[str], weight: float, bad: Array) -> list:
    """(time, contact, "make" | "break") where the normal force crosses 2 % of the weight
    (the first :data:`MAX_EVENTS` of each contact)."""
    events = []
    threshold = CONTACT_THRESHOLD * weight
    for j, name in enumerate(names):
        closed = np.where(bad, np.nan, normal[:, j]) > threshold
        change = np.flatnonzero(closed[1:] != closed[:-1])[:MAX_EVENTS]
        for i in change:
            events.append((float(time[i + 1]), name, "make" if closed[i + 1] else "break"))
    return sorted(events)


def estimate_trajectory(
    robot: Robot,
    traj: Trajectory,
    contacts: Sequence[Contact],
    *,
    use_torques: bool = True,
    solver: str | None = None,
    progress: bool = False,
) -> Trajectory:
    """Estimate the contact wrenches of a log by QP; returns a copy with them beside the log's.

    The estimates are stored as contacts named ``"<name>:estimated"`` (so a check or a plot
    can compare them with the logged ones). Full-dynamics mode when the log has joint torques
    and ``use_torques``, else Newton-Euler mode. Statuses go to ``metadata["estimation_status"]``.
    """
    from .estimation import estimate_contact_wrenches_batch

    contacts = list(contacts)
    if traj.a is None:
        traj = traj.with_accelerations(robot)
    q, v, a, tau = traj.for_robot(robot)
    batch = estimate_contact_wrenches_batch(robot, q, v, a, contacts, tau=tau if use_torques else None,
                                            solver=solver, progress=progress)
    N = len(traj)
    est = np.zeros((N, len(contacts), 6))
    for j, c in enumerate(contacts):
        est[:, j, : c.size] = batch.wrench(c.name)
    status_counts = batch.status_counts()
    return replace(
        traj,
        contact_names=traj.contact_names + tuple(f"{c.name}:estimated" for c in contacts),
        contact_wrenches=np.concatenate([traj.contact_wrenches, est], axis=1),
        metadata={**traj.metadata, "estimation_mode": batch.mode, "estimation_status": status_counts},
    )


