"""Where a check's samples come from: a Trajectory in memory or a log file read by ranges,
with accelerations differentiated from ``v`` chunk by chunk exactly as for the whole log."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..contacts import Contact
from ..conventions.noise import segments_between_gaps
from ..errors import InvalidArgumentError, LogFormatError
from ..trajectory import Trajectory

__all__: list[str] = []  # parts of the engine (check_trajectory and check_log read them)

Array = NDArray[np.float64]


def contacts_for_log(traj: Any, contacts: Sequence[Contact]) -> list[Contact]:
    """The declared ``contacts`` in the log's order, matched by name (each declared once,
    each logged contact declared, each declared contact logged)."""
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
        raise LogFormatError(
            f"{traj.source}: declared contacts {absent} have no wrenches in the log; "
            f"logged: {list(traj.contact_names)}"
        )
    return [by_name[n] for n in traj.contact_names]


def _window_bounds(
    time: Array, t_start: float | None, t_stop: float | None, source: str
) -> tuple[int, int]:
    """``[i0, i1)``: the samples with ``t_start <= time <= t_stop`` (times increase)."""
    n = len(time)
    if t_start is None and t_stop is None:
        return 0, n
    for name, value in (("t_start", t_start), ("t_stop", t_stop)):
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value)):
            raise InvalidArgumentError(f"{name} must be a finite time in seconds, got {value!r}")
    lo = -np.inf if t_start is None else float(t_start)
    hi = np.inf if t_stop is None else float(t_stop)
    inside = np.flatnonzero((time >= lo) & (time <= hi))
    if not len(inside):
        raise InvalidArgumentError(
            f"no sample of {source} lies in [{lo}, {hi}] s (the log spans {time[0]:.6g} .. "
            f"{time[-1]:.6g} s)"
        )
    return int(inside[0]), int(inside[-1]) + 1


class TrajectorySource:
    """The samples ``[i0, i1)`` of an in-memory log, read as views."""

    in_memory = True

    def __init__(self, traj: Trajectory, t_start: float | None, t_stop: float | None):
        self.source = traj.source
        self.contact_names = traj.contact_names
        self.external_frames = traj.external_frames
        self.has_accelerations = traj.a is not None
        self.has_torques = traj.tau is not None
        self.accelerations_estimated = bool(traj.accelerations_estimated)
        self.metadata = dict(traj.metadata)
        if t_start is not None or t_stop is not None:
            i0, i1 = _window_bounds(traj.time, t_start, t_stop, traj.source)
            inside = (traj.time[i0:i1] >= (-np.inf if t_start is None else t_start)) & (
                traj.time[i0:i1] <= (np.inf if t_stop is None else t_stop)
            )
            if not inside.all():  # non-finite times inside the window: drop them (a copy)
                traj = traj.select(
                    np.r_[np.zeros(i0, bool), inside, np.zeros(len(traj) - i1, bool)]
                )
                i0, i1 = 0, len(traj)
        else:
            i0, i1 = 0, len(traj)
        self._traj, self._i0 = traj, i0
        self.n = i1 - i0

    def time(self) -> Array:
        return self._traj.time[self._i0 : self._i0 + self.n]

    def read(self, lo: int, hi: int) -> Trajectory:
        t, a, b = self._traj, self._i0 + lo, self._i0 + hi
        if a == 0 and b == len(t):
            return t

        return t.select(slice(a, b))


class LogSource:
    """The samples ``[i0, i1)`` of a log file, read by range (:func:`wholebody.io.open_log`).

    The times are read first (one more pass over the file: the stamps are evidence, and a
    time window or differentiation needs them); a window spans from its first to its last
    sample.
    """

    in_memory = False

    def __init__(
        self,
        log: Any,
        t_start: float | None,
        t_stop: float | None,
        chunk_size: int,
    ):
        self._log = log
        self.source = log.source
        self.contact_names = log.contact_names
        self.external_frames = log.external_frames
        self.has_accelerations = log.has_accelerations
        self.has_torques = log.has_torques
        self.accelerations_estimated = bool(log.accelerations_estimated)
        self.metadata = log.metadata
        time = np.empty(log.n_samples)
        for start, stop, part in log.chunks(chunk_size):
            time[start:stop] = part.time
        i0, i1 = _window_bounds(time, t_start, t_stop, self.source)
        self._time = time[i0:i1]
        self._i0, self.n = i0, i1 - i0

    def time(self) -> Array:
        return self._time

    def read(self, lo: int, hi: int) -> Trajectory:
        return self._log.read(self._i0 + lo, self._i0 + hi)


Source = TrajectorySource | LogSource


# --- accelerations from v, chunk by chunk --------------------------------------------------------


@dataclass(frozen=True)
class Differentiation:
    """Accelerations from ``v`` as
    :func:`wholebody.robot.differentiation.estimate_accelerations` on the whole log gives them,
    computed on a part that holds ``overlap`` neighbours each side.

    The whole log's steps choose the formula (``np.gradient`` uses its uniform one only when
    every step is equal; Savitzky-Golay uses the median step), so a chunk gives the same bits.
    Central differences do not reach across a gap of the stamps (a step beyond ``gap``
    seconds, samples dropped) nor a stamp that is not finite: the samples next to it take
    one-sided differences. With ``span`` (stamps that jitter: :attr:`Stamps.jitters
    <wholebody.conventions.noise.Stamps.jitters>`), the inner samples take the two-point
    difference over their neighbours' span, ``(v[i+1] - v[i-1]) / (t[i+1] - t[i-1])``: its
    error from stamps that err by ``d`` is ``a (d[i+1] - d[i-1]) / span`` (what
    :func:`~wholebody.conventions.expected_residual_error` states), while the
    second-order formula for uneven steps amplifies uneven jittered steps (steps of 0.9 and
    3 ms: the acceleration off by 80 %).
    """

    savgol: tuple[int, int] | None
    uniform_dx: float | None
    median_dt: float
    gap: float = math.inf
    span: bool = False

    @classmethod
    def from_time(
        cls,
        t: Array,
        savgol: tuple[int, int] | None,
        gap: float = math.inf,
        span: bool = False,
    ) -> Differentiation:
        if len(t) < 3:
            raise LogFormatError(
                f"estimating accelerations needs at least 3 samples, the log has {len(t)}"
            )
        dx = np.diff(t)
        uniform = float(dx[0]) if bool((dx == dx[0]).all()) else None
        median = float(np.nanmedian(dx)) if savgol is not None else 0.0
        return cls(savgol, uniform, median, gap, span and uniform is None)

    @property
    def overlap(self) -> int:
        return 2 if self.savgol is None else max(2, int(self.savgol[0]))

    def accelerations(self, t: Array, v: Array) -> Array:
        if self.savgol is not None:
            from scipy.signal import savgol_filter

            window, order = self.savgol
            return np.asarray(
                savgol_filter(
                    v, window, order, deriv=1, delta=self.median_dt, axis=0, mode="interp"
                )
            )
        segments = segments_between_gaps(t, self.gap)
        a = np.full(v.shape, np.nan)
        for lo, hi in segments:
            if hi - lo >= 3:
                a[lo:hi] = _central_differences(t[lo:hi], v[lo:hi], self.uniform_dx)
                if self.span:
                    a[lo + 1 : hi - 1] = (v[lo + 2 : hi] - v[lo : hi - 2]) / (
                        t[lo + 2 : hi] - t[lo : hi - 2]
                    ).reshape((-1,) + (1,) * (v.ndim - 1))
        return a


def low_pass(
    x: Array, kernel: Array, rows: NDArray[np.bool_], segments: list[tuple[int, int]]
) -> Array:
    """``x`` (n, ...) filtered along its first axis by ``kernel`` (odd length, centred) over
    the samples ``rows`` of each segment, the weights renormalised where samples are missing
    (the log's ends, flagged samples, a gap); NaN on the samples not in ``rows``."""
    from scipy.ndimage import correlate1d

    out = np.full(x.shape, np.nan)
    shape = (-1,) + (1,) * (x.ndim - 1)
    for lo, hi in segments:
        ok = rows[lo:hi]
        w = ok.astype(float)
        xs = np.where(ok.reshape(shape), np.nan_to_num(x[lo:hi]), 0.0)
        num = correlate1d(xs, kernel, axis=0, mode="constant")
        den = correlate1d(w, kernel, mode="constant")
        with np.errstate(invalid="ignore", divide="ignore"):
            out[lo:hi] = np.where(ok.reshape(shape), num / den.reshape(shape), np.nan)
    return out


def _central_differences(t: Array, f: Array, uniform_dx: float | None) -> Array:
    """``np.gradient(f, t, axis=0, edge_order=2)`` with its uniform formula only when
    ``uniform_dx`` is given (the same expressions, hence the same bits)."""
    out = np.empty_like(f)
    if uniform_dx is not None:
        h = uniform_dx
        out[1:-1] = (f[2:] - f[:-2]) / (2.0 * h)
        out[0] = -1.5 / h * f[0] + 2.0 / h * f[1] + -0.5 / h * f[2]
        out[-1] = 0.5 / h * f[-3] + -2.0 / h * f[-2] + 1.5 / h * f[-1]
        return out
    dx = np.diff(t)
    dx1, dx2 = dx[:-1], dx[1:]
    a = (-dx2 / (dx1 * (dx1 + dx2)))[:, None]
    b = ((dx2 - dx1) / (dx1 * dx2))[:, None]
    c = (dx1 / (dx2 * (dx1 + dx2)))[:, None]
    out[1:-1] = a * f[:-2] + b * f[1:-1] + c * f[2:]
    d1, d2 = dx[0], dx[1]
    out[0] = (
        -(2.0 * d1 + d2) / (d1 * (d1 + d2)) * f[0]
        + (d1 + d2) / (d1 * d2) * f[1]
        + -d1 / (d2 * (d1 + d2)) * f[2]
    )
    d1, d2 = dx[-2], dx[-1]
    out[-1] = (
        d2 / (d1 * (d1 + d2)) * f[-3]
        + -(d2 + d1) / (d1 * d2) * f[-2]
        + (2.0 * d2 + d1) / (d2 * (d1 + d2)) * f[-1]
    )
    return out


def read_part(
    source: Source, start: int, stop: int, diff: Differentiation | None, margin: int = 0
) -> tuple[Trajectory, int]:
    """Samples ``[start - m, stop + m)`` (clipped to the log; ``m`` covers the differences'
    neighbours and ``margin``) with accelerations, and the offset of ``start`` in them."""
    m = max(margin, diff.overlap if diff is not None else 0)
    lo, hi = max(start - m, 0), min(stop + m, source.n)
    part = source.read(lo, hi)
    if diff is not None:
        part = replace(part, a=diff.accelerations(part.time, part.v), accelerations_estimated=True)
    return part, start - lo
