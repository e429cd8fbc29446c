"""Evidence a check gathers beside the residual: convention checks per chunk, the expected
error of differentiated accelerations, the samples the diagnosis keeps. Private to
:mod:`wholebody.check.analysis`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..balance import kinematics_batch
from ..balance.newton_euler import (
    wrench_sum,
)
from ..contacts import Contact
from ..robot.core import Robot
from ..trajectory import Trajectory
from ._sources import _Differentiation, _read_part, _Source
from .report import Report

Array = NDArray[np.float64]


# --- convention checks per chunk ---------------------------------------------------------------

#: The convention checks need this many samples; a shorter last chunk takes its predecessors.
_MIN_CONVENTION_SAMPLES = 5


def _convention_piece(
    source: _Source, part: Trajectory, off: int, start: int, stop: int
) -> tuple[int, Trajectory]:
    """The samples ``[lo, stop)`` the convention checks of chunk ``[start, stop)`` read
    (``lo < start`` only when the chunk is shorter than the checks need), and ``lo``."""
    lo = min(start, max(stop - _MIN_CONVENTION_SAMPLES, 0))
    base = start - off  # the sample index of part[0]
    if lo < base:
        piece = source.read(lo, stop)
    elif lo == base and stop - base == len(part):
        piece = part
    else:
        piece = part.select(slice(lo - base, stop - base))
    return lo, piece


def _chunk_conventions(
    robot: Robot,
    piece: Trajectory,
    lo: int,
    start: int,
    contacts: list[Contact],
    ground: Any,
    placements: tuple[Array, Array] | None,
) -> Any:
    """The convention checks of one chunk's piece (:func:`_convention_piece`), reusing the
    CoM and contact origins of the chunk's pass (samples ``[start, stop)``) when given."""
    from ..conventions import run_conventions

    if placements is not None and lo < start:  # the samples before the chunk: placed there
        k = placements[1].shape[1]
        placements = (
            np.concatenate([np.full((start - lo, 3), np.nan), placements[0]]),
            np.concatenate([np.full((start - lo, k, 3), np.nan), placements[1]]),
        )
    return run_conventions(robot, piece, contacts, ground=ground, placements=placements)


def _merge_conventions(parts: list[tuple[int, int, Any]]) -> Any:
    """One :class:`~wholebody.conventions.ConventionReport` from the chunks' reports: a check
    fails when it fails on some chunk (the first failing chunk's message and evidence, with
    the chunks that failed); one chunk's report is returned as it is."""
    from ..conventions import ConventionCheck, ConventionReport

    if len(parts) == 1:
        return parts[0][2]
    merged = []
    for j, first in enumerate(parts[0][2].all_checks):
        failing = [(a, b, r.all_checks[j]) for a, b, r in parts if not r.all_checks[j].passed]
        if not failing:
            merged.append(
                ConventionCheck(
                    first.name,
                    True,
                    f"{first.message} (in each of {len(parts)} chunks; first chunk shown)",
                    evidence=first.evidence,
                )
            )
            continue
        a, b, check = failing[0]
        spans = [[a, b - 1] for a, b, _ in failing]
        merged.append(
            ConventionCheck(
                check.name,
                False,
                f"samples {a}..{b - 1}: {check.message} (fails on {len(failing)} of "
                f"{len(parts)} chunks)",
                check.fix,
                check.hypotheses,
                {**check.evidence, "failing_chunks": spans[:50], "n_chunks": len(parts)},
            )
        )
    return ConventionReport(tuple(merged))


def _differentiation_bounds(
    robot: Robot,
    source: _Source,
    bounds: list[tuple[int, int]],
    contacts: Sequence[Contact],
    report: Report,
    need: NDArray[np.bool_],
) -> tuple[Array, Array, Array, Array, Array]:
    """The expected error of differentiated accelerations [N], [N m] at the samples
    ``need`` (``inf`` elsewhere), chunk by chunk with the neighbours the differences use;
    then the same with the slow noise model (for averages over windows), and the total
    external wrench at the CoM (N, 6) (NaN where not computed)."""
    from ..conventions import expected_residual_error

    e_f = np.full(report.n_samples, np.inf)
    e_m = np.full(report.n_samples, np.inf)
    s_f = np.full(report.n_samples, np.inf)
    s_m = np.full(report.n_samples, np.inf)
    total = np.full((report.n_samples, 6), np.nan)
    for start, stop in bounds:
        idx = np.flatnonzero(need[start:stop]) + start
        if not len(idx):
            continue
        part, off = _read_part(source, start, stop, None, margin=2)
        lo = start - off
        expected = expected_residual_error(
            robot,
            part,
            contacts,
            force_tolerance=report.force_tolerance,
            moment_tolerance=report.moment_tolerance,
            samples=idx - lo,
        )
        e_f[idx], e_m[idx] = expected.force_error[idx - lo], expected.moment_error[idx - lo]
        assert expected.slow_force_error is not None and expected.slow_moment_error is not None
        s_f[idx] = expected.slow_force_error[idx - lo]
        s_m[idx] = expected.slow_moment_error[idx - lo]
        assert expected.total_wrench is not None
        # The differences read the neighbours: their wrenches are known too.
        near = np.unique(np.clip(np.concatenate([idx - 1, idx, idx + 1]), start, stop - 1))
        total[near] = expected.total_wrench[near - lo]
    return e_f, e_m, s_f, s_m, total


# --- what the diagnosis keeps ------------------------------------------------------------------


class _RowsOf:
    """Rows of an (N, k, 6) array known at some indices only: the wrench rows the
    diagnosis' lag search reads (``len`` is N; indexing by an array of known rows)."""

    def __init__(self, n: int, index: NDArray[np.intp], values: Array):
        self.n, self.index, self.values = n, index, values
        self.shape = (n,) + values.shape[1:]

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, rows: Any) -> Array:
        rows = np.asarray(rows)
        pos = np.minimum(np.searchsorted(self.index, rows), max(len(self.index) - 1, 0))
        if not len(self.index) or np.any(self.index[pos] != rows):
            raise IndexError("wrench rows beyond those kept for the diagnosis")
        return self.values[pos]


@dataclass
class _Kept:
    wrenches: Array
    positions: Array
    rotations: Array
    joints: Array
    com: Array
    rate: Array
    ext: Array
    log_wrenches: _RowsOf


def _kept_samples(
    robot: Robot,
    source: _Source,
    bounds: list[tuple[int, int]],
    contacts: list[Contact],
    parents: list[str],
    rows: NDArray[np.intp],
    bad: NDArray[np.bool_],
    diff: _Differentiation | None,
) -> _Kept:
    """The kinematics of the samples the diagnosis keeps (one more Pinocchio pass each, with
    the contacts' parent joints) and the wrench rows within the lag search's reach (flagged
    samples' rows zeroed), read chunk by chunk."""
    from ..diagnosis.causes_fitted import MAX_LAG_SAMPLES

    N, k = source.n, len(contacts)
    e = len(source.external_frames)
    reach = min(MAX_LAG_SAMPLES, N // 4) + 1
    frames = [c.frame for c in contacts] + list(source.external_frames) + parents
    S = len(rows)
    kept = _Kept(
        np.empty((S, k, 6)),
        np.empty((S, k, 3)),
        np.empty((S, k, 3, 3)),
        np.empty((S, k, 3)),
        np.empty((S, 3)),
        np.empty((S, 6)),
        np.zeros((S, 6)),
        _RowsOf(N, np.zeros(0, np.intp), np.zeros((0, k, 6))),
    )
    index_parts, value_parts = [], []
    for start, stop in bounds:
        sel = np.flatnonzero((rows >= start) & (rows < stop))
        if not len(sel):
            continue
        part, off = _read_part(source, start, stop, diff, margin=reach)
        lo = start - off
        local = rows[sel] - lo
        q, v, a, _ = part.for_robot(robot)
        arrays, _, _ = robot.check_batch(q=q[local], v=v[local], a=a[local])  # type: ignore[index]
        kin = kinematics_batch(
            robot,
            arrays["q"],
            arrays["v"],
            arrays["a"],
            frames,
            np.zeros(len(sel), bool),
            rotations=True,
        )
        assert kin.rotations is not None
        kept.positions[sel] = kin.positions[:, :k]
        kept.rotations[sel] = kin.rotations[:, :k]
        kept.joints[sel] = kin.positions[:, k + e :]
        kept.com[sel] = kin.com
        kept.rate[sel] = kin.momentum_rate
        kept.wrenches[sel] = part.contact_wrenches[local]
        if part.external_wrenches is not None:
            kept.ext[sel] = np.concatenate(
                wrench_sum(part.external_wrenches[local], kin.positions[:, k : k + e], kin.com),
                axis=1,
            )
        near = np.unique(np.clip(rows[sel][:, None] + np.arange(-reach, reach + 1), 0, N - 1))
        values = part.contact_wrenches[near - lo].copy()
        values[bad[near]] = 0.0
        index_parts.append(near)
        value_parts.append(values)
    if index_parts:
        index = np.concatenate(index_parts)
        index, first = np.unique(index, return_index=True)
        kept.log_wrenches = _RowsOf(N, index, np.concatenate(value_parts)[first])
    return kept
