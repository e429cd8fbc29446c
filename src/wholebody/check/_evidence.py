"""Evidence a check gathers beside the residual: convention checks per chunk, the expected
error of differentiated accelerations, the samples the diagnosis keeps. Private to
:mod:`wholebody.check.analysis`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

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


class _Recent:
    """The last :data:`_MIN_CONVENTION_SAMPLES` rows of per-sample arrays over the chunks
    seen so far, in order: what a chunk shorter than the convention checks need reads before
    it (states and placements that the chunks before checked and placed)."""

    def __init__(self) -> None:
        self.rows: tuple[Any, ...] | None = None

    def before(self, count: int, *arrays: Any) -> tuple[Any, ...]:
        """``arrays`` (a chunk's rows) after the last ``count`` rows seen; then the chunk's
        rows are seen."""
        seen = self.rows if self.rows is not None else tuple(x[:0] for x in arrays)
        out = tuple(
            np.concatenate([old[len(old) - count :], x]) if count else x
            for old, x in zip(seen, arrays, strict=True)
        )
        keep = _MIN_CONVENTION_SAMPLES
        self.rows = tuple(
            np.concatenate([old, x[-keep:]])[-keep:] for old, x in zip(seen, arrays, strict=True)
        )
        return out


def _chunk_conventions(
    robot: Robot,
    piece: Trajectory,
    contacts: list[Contact],
    ground: Any,
    placements: tuple[Array, Array],
    states: tuple[Array, Array, NDArray[np.bool_]],
) -> Any:
    """The convention checks of one chunk's piece (:func:`_convention_piece`), reusing the
    checked states (``q``, ``v``, flagged: :class:`~wholebody.check._sources._Checked`) and
    the CoM and contact origins of the chunks' pass, row for row with the piece."""
    from ..conventions import run_conventions

    return run_conventions(
        robot, piece, contacts, ground=ground, placements=placements, states=states
    )


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


@dataclass
class _Placed:
    """The kinematics of the check's own pass, per sample of the log (NaN where it made
    none), kept for the diagnosis when it keeps every sample: CoM (N, 3), momentum rate at
    the CoM (N, 6), origins of the contact frames, the external wrenches' frames and the
    contacts' parent joints (N, k + e + k, 3), contact frame rotations (N, k, 3, 3); world
    axes, SI units."""

    com: Array
    rate: Array
    positions: Array
    rotations: Array

    @classmethod
    def empty(cls, n: int, k: int, e: int) -> _Placed:
        nan = np.nan
        return cls(
            np.full((n, 3), nan),
            np.full((n, 6), nan),
            np.full((n, 2 * k + e, 3), nan),
            np.full((n, k, 3, 3), nan),
        )


def _kept_samples(
    robot: Robot,
    source: _Source,
    bounds: list[tuple[int, int]],
    contacts: list[Contact],
    parents: list[str],
    rows: NDArray[np.intp],
    bad: NDArray[np.bool_],
    diff: _Differentiation | None,
    placed: _Placed | None = None,
) -> _Kept:
    """The kinematics of the samples the diagnosis keeps and the wrench rows within the lag
    search's reach (flagged samples' rows zeroed), read chunk by chunk. The kinematics are
    the check's own pass's (``placed``) when it kept them; else one more Pinocchio pass per
    kept sample, with the contacts' parent joints."""
    from ..diagnosis.core import MAX_LAG_SAMPLES

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
        # Accelerations only for a pass of its own (the wrenches do not depend on them).
        part, off = _read_part(source, start, stop, diff if placed is None else None, reach)
        lo = start - off
        local = rows[sel] - lo
        if placed is None:
            kin = _kept_pass(robot, part, local, frames)
        else:
            at = rows[sel]
            kin = _Placed(
                placed.com[at], placed.rate[at], placed.positions[at], placed.rotations[at]
            )
        kept.positions[sel] = kin.positions[:, :k]
        kept.rotations[sel] = kin.rotations[:, :k]
        kept.joints[sel] = kin.positions[:, k + e :]
        kept.com[sel] = kin.com
        kept.rate[sel] = kin.rate
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


def _kept_pass(
    robot: Robot, part: Trajectory, local: NDArray[np.intp], frames: list[str]
) -> _Placed:
    """One Pinocchio pass per sample ``local`` of ``part`` (samples the check passed; checked
    again for the renormalised ``q``): the kinematics of :class:`_Placed`."""
    from ..balance import kinematics_batch

    q, v, a, _ = part.for_robot(robot)
    assert a is not None  # read with accelerations
    arrays, _, _ = robot.check_batch(q=q[local], v=v[local], a=a[local])
    kin = kinematics_batch(
        robot,
        arrays["q"],
        arrays["v"],
        arrays["a"],
        frames,
        np.zeros(len(local), bool),
        rotations=True,
    )
    assert kin.rotations is not None
    return _Placed(kin.com, kin.momentum_rate, kin.positions, kin.rotations)
