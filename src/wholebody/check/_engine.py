"""The chunked engine of a log check: per chunk the Pinocchio pass, residuals, cones and
events; then verdict evidence and the diagnosis. Private to :mod:`wholebody.analysis`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from ..balance.newton_euler import (
    newton_euler_residual_arrays,
)
from ..contacts import Contact, SurfaceContact, ground_aligned_rotations
from ..diagnosis import MAX_SAMPLES, DiagnosisData, Finding, diagnose
from ..friction import VIOLATION_NAMES, ContactSet, normal_rotation
from ..parallel import ChunkFailure, Shared, chunk_bounds, run_chunks
from ..robot.batch import centroidal_frames_rows
from ..robot.core import Robot
from ._evidence import (
    _chunk_conventions,
    _convention_piece,
    _covered_by_differentiation,
    _kept_samples,
    _merge_conventions,
)
from ._sources import _Differentiation, _Options, _read_part, _sample_checks, _Source
from .report import CONTACT_THRESHOLD, Report

Array = NDArray[np.float64]


# --- the check ---------------------------------------------------------------------------------


@dataclass
class _Results:
    """The per-sample results of the whole log (small: no states, no wrenches)."""

    time: Array
    r_f: Array
    r_m: Array
    margin: Array
    util: Array
    normal: Array
    cop: Array
    violated: NDArray[np.int16]
    bad: NDArray[np.bool_]

    @classmethod
    def empty(cls, n: int, k: int) -> _Results:
        nan = np.nan
        return cls(
            np.full(n, nan),
            np.full((n, 3), nan),
            np.full((n, 3), nan),
            np.full((n, k), nan),
            np.full((n, k), nan),
            np.full((n, k), nan),
            np.full((n, k, 2), nan),
            np.full((n, k), -1, dtype=np.int16),
            np.zeros(n, dtype=bool),
        )

    def write(self, part: _ChunkOutput, start: int, stop: int) -> None:
        for name in ("r_f", "r_m", "margin", "util", "normal", "cop", "violated"):
            getattr(self, name)[start:stop] = getattr(part, name)


def _check_source(
    robot: Robot,
    source: _Source,
    contacts: list[Contact],
    opts: _Options,
    *,
    ground: Any,
    conventions: bool,
    savgol: tuple[int, int] | None,
    diagnose_causes: bool,
    progress: bool,
) -> Report:
    """:func:`check_trajectory` and :func:`check_log`: the log worked through in chunks."""
    tol, workers = opts.tol, opts.workers
    N, k, e = source.n, len(contacts), len(source.external_frames)
    diff = None if source.has_accelerations else _Differentiation.from_time(source.time(), savgol)
    estimated = True if diff is not None else source.accelerations_estimated
    parents = [
        robot.model.names[robot.model.frames[robot.frame_id(c.frame)].parentJoint] for c in contacts
    ]
    frames = [c.frame for c in contacts] + list(source.external_frames)
    cone_slack = (tol["cone_tolerance"] * robot.weight, tol["cone_tolerance_relative"])
    bounds = chunk_bounds(N, opts.chunk_size)
    out = _Results.empty(N, k)
    reasons: dict[int, str] = {}
    convention_parts: list[tuple[int, int, Any]] = []
    run_conventions = conventions and N >= 3
    pending: dict[int, tuple[int, Any]] = {}  # chunk start -> the convention checks' piece
    # Several chunks go to the workers at once: all of an in-memory log (its chunks are
    # views), ``workers`` of a file.
    group = len(bounds) if (workers > 1 and source.in_memory) else workers
    # Contacts the log's schedule says are not touching (Trajectory.contact_active): no cone
    # to respect there (their wrenches still enter the balance: a stale force shows).
    inactive: NDArray[np.bool_] | None = None
    for g in range(0, len(bounds), group):
        jobs, shared = [], {}
        for c, (start, stop) in enumerate(bounds[g : g + group]):
            part, off = _read_part(source, start, stop, diff)
            if run_conventions:  # checked once the chunk's pass is done (it reuses it)
                pending[start] = _convention_piece(source, part, off, start, stop)
            here = slice(off, off + stop - start)
            piece = part if (off == 0 and len(part) == stop - start) else part.select(here)
            arrays, bad, why = _sample_checks(robot, piece)
            out.time[start:stop] = piece.time
            if piece.contact_active is not None:
                if inactive is None:
                    inactive = np.zeros((N, len(contacts)), dtype=bool)
                inactive[start:stop] = ~piece.contact_active
            out.bad[start:stop] = bad
            reasons.update({start + i: r for i, r in why.items()})
            E = piece.external_wrenches
            named = {
                "q": arrays["q"],
                "v": arrays["v"],
                "a": arrays["a"],
                "W": piece.contact_wrenches,
                "E": E,
                "bad": bad,
            }
            shared.update({f"{c}{name}": x for name, x in named.items()})
            n = stop - start
            ref = {name: Shared(f"{c}{name}", 0, n) for name in named}
            jobs.append(
                (
                    (start, stop),
                    (
                        contacts,
                        ref["q"],
                        ref["v"],
                        ref["a"],
                        ref["W"],
                        None if E is None else ref["E"],
                        ref["bad"],
                        frames,
                        e,
                        cone_slack,
                        progress and workers == 1,
                    ),
                )
            )
            del part, piece, arrays
        results = run_chunks(robot, _check_chunk, jobs, workers, shared=shared)
        del shared
        for ((start, stop), _), res in zip(jobs, results, strict=True):
            if isinstance(res, ChunkFailure):
                out.bad[start:stop] = True  # marked below, once the checks' own flags are kept
                reasons.update(
                    {
                        i: f"chunk {start}..{stop - 1} failed: {res.error}"
                        for i in range(start, stop)
                        if i not in reasons
                    }
                )
            else:
                out.write(res, start, stop)
            if run_conventions:
                lo, conv_piece = pending.pop(start)
                placed = None if isinstance(res, ChunkFailure) else (res.com, res.positions)
                checks = _chunk_conventions(robot, conv_piece, lo, start, contacts, ground, placed)
                convention_parts.append((start, stop, checks))
    # The samples the diagnosis may keep are chosen among those the sample checks passed.
    checked_ok = ~out.bad | _failed_chunk_rows(reasons, N)
    bad = out.bad
    # A residual that is not finite on a checked sample (a model with NaN inertia, values
    # that overflow) is not evidence: flag it, never count it as balanced.
    not_finite = ~bad & ~(np.isfinite(out.r_f).all(axis=1) & np.isfinite(out.r_m).all(axis=1))
    for i in np.flatnonzero(not_finite):
        reasons[int(i)] = "the residual is not finite (NaN in the model, or values that overflow)"
    bad |= not_finite
    reasons = dict(sorted(reasons.items()))
    for field_ in ("r_f", "r_m", "margin", "util", "normal", "cop"):
        getattr(out, field_)[bad] = np.nan
    if inactive is not None:
        out.margin[inactive] = np.nan
        out.util[inactive] = np.nan
        out.violated[inactive] = -1

    names = [c.name for c in contacts]
    events = _contact_events(out.time, out.normal, names, robot.weight, bad)
    convention_report = _merge_conventions(convention_parts) if convention_parts else None
    report = Report(
        robot=robot.name,
        source=source.source,
        time=out.time,
        residual_force=out.r_f,
        residual_moment=out.r_m,
        flagged=bad,
        reasons=reasons,
        weight=robot.weight,
        force_tolerance=tol["force_tolerance"],
        moment_tolerance=tol["moment_tolerance"],
        contact_names=names,
        cone_margin=out.margin,
        violated_row=np.array(("",) + VIOLATION_NAMES, dtype=object)[out.violated + 1],
        utilisation=out.util,
        normal_force=out.normal,
        cop=out.cop,
        accelerations_estimated=estimated,
        cone_tolerance=tol["cone_tolerance"],
        events=events,
        sole_half_sizes={
            c.name: (c.half_length, c.half_width) for c in contacts if isinstance(c, SurfaceContact)
        },
        conventions=convention_report,
        preset=opts.preset,
        cone_tolerance_relative=tol["cone_tolerance_relative"],
        sole_centers={c.name: c.center for c in contacts if isinstance(c, SurfaceContact)},
    )
    over = report.over_tolerance
    if estimated and over.any() and N >= 3:
        report.unreliable = _covered_by_differentiation(
            robot, source, bounds, contacts, report, over
        )
    findings: list[Finding] = []
    if convention_report is not None:
        findings += [
            Finding(
                f"convention:{c.name}",
                1.0,
                c.message + (f"; fix: {c.fix}" if c.fix else ""),
                {"hypotheses": list(c.hypotheses), "evidence": c.evidence},
            )
            for c in convention_report.findings
        ]
    inconsistent = report.inconsistent_samples
    if diagnose_causes and inconsistent.any():
        # Valid samples whose kinematics the diagnosis keeps (at most MAX_SAMPLES, evenly spread).
        valid = np.flatnonzero(checked_ok)
        keep = (
            valid
            if len(valid) <= MAX_SAMPLES
            else valid[np.linspace(0, len(valid) - 1, MAX_SAMPLES).astype(int)]
        )
        rows = keep[~bad[keep]]
        kept = _kept_samples(robot, source, bounds, contacts, parents, rows, bad, diff)
        findings += diagnose(
            DiagnosisData(
                weight=robot.weight,
                mass=robot.mass,
                gravity=robot.gravity_vector,
                time=out.time[rows],
                wrenches=kept.wrenches,
                positions=kept.positions,
                rotations=kept.rotations,
                joint_centres=kept.joints,
                com=kept.com,
                momentum_rate=kept.rate,
                external=kept.ext,
                names=names,
                over=inconsistent[rows],
                log_wrenches=cast(Array, kept.log_wrenches),
                rows=rows,
                log_time=out.time,
                tolerance=(
                    tol["force_tolerance"] * robot.weight,
                    tol["moment_tolerance"] * robot.weight,
                ),
                contacts=contacts,
                cone_tolerance=tol["cone_tolerance"] * robot.weight,
            )
        )
    report.diagnosis = findings
    return report


def _failed_chunk_rows(reasons: dict[int, str], n: int) -> NDArray[np.bool_]:
    """Samples flagged only because their chunk failed (the sample checks passed them)."""
    rows = np.zeros(n, dtype=bool)
    for i, why in reasons.items():
        if why.startswith("chunk ") and " failed: " in why:
            rows[i] = True
    return rows


_PASS_BLOCK = 1000  # samples per step of the progress bar


@dataclass
class _ChunkOutput:
    """Per-sample results of one chunk."""

    r_f: Array
    r_m: Array
    margin: Array
    util: Array
    normal: Array
    cop: Array
    violated: NDArray[np.int16]
    com: Array  # (n, 3) world [m], NaN on skipped samples: the convention checks reuse it
    positions: Array  # (n, k, 3) contact frame origins, world [m], likewise


def _check_chunk(
    robot: Robot,
    contacts: list[Contact],
    Q: Array,
    V: Array,
    A: Array,
    W: Array,
    E: Array | None,
    skip: NDArray[np.bool_],
    frames: list[str],
    e: int,
    cone_slack: tuple[float, float],
    progress: bool,
) -> _ChunkOutput:
    """The residual and the cones of one chunk of samples (one Pinocchio pass each)."""
    k, N = len(contacts), Q.shape[0]
    com = np.full((N, 3), np.nan)
    rate = np.full((N, 6), np.nan)
    positions = np.full((N, len(frames), 3), np.nan)
    R = np.full((N, k, 3, 3), np.nan)
    rows: Any = np.flatnonzero(~skip).tolist()
    ids = [robot.frame_id(f) for f in frames]
    starts: Any = range(0, len(rows), _PASS_BLOCK)
    if progress:
        from .._progress import progress_bar

        starts = progress_bar(starts, desc="checking", unit="samples", unit_scale=_PASS_BLOCK)
    for s in starts:  # one Pinocchio pass per sample, results written through live views
        block = rows[s : s + _PASS_BLOCK]
        centroidal_frames_rows(robot, Q, V, A, block, ids, com, rate, positions, R, n_rotations=k)
    # Contacts and known external wrenches, each about its own frame origin, in one layout.
    wrenches = W if E is None else np.concatenate([W, E], axis=1)
    r_f, r_m = newton_euler_residual_arrays(
        wrenches,
        positions[:, : k + e],
        com,
        rate,
        mass=robot.mass,
        gravity=robot.gravity_vector,
    )
    # Friction, per contact, in its own frame: the one cone home.
    R_cone = R
    if any(c.ground_normal is not None for c in contacts):
        R_cone = R.copy()
        for j, c in enumerate(contacts):
            if c.ground_normal is None:
                continue
            turned = ground_aligned_rotations(R[:, j], c.ground_normal)
            # A point contact's normal is given in its frame: map it onto the ground normal.
            R_cone[:, j] = (
                turned if isinstance(c, SurfaceContact) else turned @ normal_rotation(c.normal).T
            )
    cones = ContactSet(contacts).check(W, R_cone, tol=0.0)
    margin, normal = cones.margin, cones.normal_force
    with np.errstate(invalid="ignore"):
        outside = margin < -(cone_slack[0] + cone_slack[1] * np.abs(normal))
    violated = np.where(outside, cones.worst, -1).astype(np.int16)
    return _ChunkOutput(
        r_f, r_m, margin, cones.utilisation, normal, cones.cop, violated, com, positions[:, :k]
    )


MAX_EVENTS = 10_000  # per contact: a noisy log can chatter at every sample


def _contact_events(
    time: Array, normal: Array, names: list[str], weight: float, bad: NDArray[np.bool_]
) -> list:
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
