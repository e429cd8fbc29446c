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
from typing import Any, cast

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

__all__ = [
    "Report",
    "check_trajectory",
    "check_log",
    "estimate_trajectory",
    "validate_tolerances",
    "TOLERANCE_PRESETS",
    "DEFAULT_FORCE_TOLERANCE",
    "DEFAULT_MOMENT_TOLERANCE",
    "DEFAULT_CONE_TOLERANCE",
]

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
    "simulation": {
        "force_tolerance": 0.01,
        "moment_tolerance": 0.01,
        "cone_tolerance": 1e-4,
        "cone_tolerance_relative": 0.0,
    },
    "measured": {
        "force_tolerance": 0.05,
        "moment_tolerance": 0.03,
        "cone_tolerance": 2e-3,
        "cone_tolerance_relative": 0.05,
    },
}


def validate_tolerances(**tolerances: float) -> None:
    """Raise :class:`InvalidArgumentError` unless every tolerance is a finite number >= 0."""
    for name, value in tolerances.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise InvalidArgumentError(
                f"{name} must be a number, got {type(value).__name__} {value!r}"
            )
        if not (math.isfinite(value) and value >= 0):
            raise InvalidArgumentError(f"{name} must be a finite number >= 0, got {value!r}")


def _contacts_for_log(traj: Any, contacts: Sequence[Contact]) -> list[Contact]:
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


_CHECK_DOC = """
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
        Run :func:`wholebody.conventions.check_conventions` before dynamics (default), on
        each chunk of ``chunk_size`` samples: a check fails when it fails on some chunk (a log
        of at most ``chunk_size`` samples is one chunk). A failed check makes the log
        inconsistent and heads the diagnosis.
    savgol : (window, order), optional
        Smoothing of estimated accelerations (only when the log has none).
    diagnose_causes : bool
        Run :func:`wholebody.diagnosis.diagnose` when some samples are inconsistent.
    workers : int
        Processes for the per-sample work (one Pinocchio pass each); results are identical
        to ``workers=1``. A chunk that fails flags its samples with the error.
    chunk_size : int
        Samples per chunk: the work memory grows with it, not with the log. The convention
        checks and the noise of ``v`` (for the expected error of differentiated
        accelerations) are estimated per chunk.
    progress : bool
        A progress bar (tqdm) over the samples (``workers=1``).

    Returns
    -------
    Report
        Per-sample residuals, cones, flags, the verdict (see :mod:`wholebody.report`) and
        the diagnosis.
"""


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

    The log is worked through in chunks of ``chunk_size`` samples (the Pinocchio pass,
    cones, accelerations differentiated from ``v`` with the neighbours across chunk
    boundaries): beyond the log itself, memory holds the chunk's work arrays and the
    report's per-sample results (about 20 floats per sample and contact).
    :func:`check_log` does the same reading the log file chunk by chunk.

    Parameters
    ----------
    robot : Robot
        Floating-base robot; the log's joints are mapped to it by name.
    traj : Trajectory
    contacts : sequence of Contact
        One per contact of the log, matched by name (friction and geometry).
    """
    opts = _options(
        preset,
        force_tolerance,
        moment_tolerance,
        cone_tolerance,
        cone_tolerance_relative,
        workers,
        chunk_size,
    )
    contacts = _contacts_for_log(traj, contacts)
    source = _TrajectorySource(traj, t_start, t_stop)
    return _check_source(
        robot,
        source,
        contacts,
        opts,
        ground=ground,
        conventions=conventions,
        savgol=savgol,
        diagnose_causes=diagnose_causes,
        progress=progress,
    )


def check_log(
    robot: Robot,
    path: Any,
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
    """Check a log file, read chunk by chunk: :func:`check_trajectory` without loading it.

    The log's ``q``, ``v``, ``a`` and wrenches are never all in memory: samples are read
    through :meth:`wholebody.io.LogReader.chunks`-sized ranges (with the few neighbours that
    central differences need across chunk boundaries), checked, and dropped. Parquet (by
    row groups) and HDF5 (by slices) read only those ranges, so the peak memory does not
    grow with the log's length; ``.npz`` and ``.csv`` load their fields whole. What grows
    with the length is the report's per-sample results (time, residual, cone margins,
    utilisation, normal forces, CoP, flags: about 20 floats per sample and contact).

    The result equals ``check_trajectory(robot, Trajectory.load(path), contacts, ...)``
    with the same options (tested to 1e-12; bit for bit here). The log is read once more
    when times must be known first (``t_start``/``t_stop``, or accelerations to estimate:
    the whole log's time steps choose the difference formula), for the expected error of
    differentiated accelerations on the chunks over tolerance, and for the samples the
    diagnosis keeps (at most :data:`wholebody.diagnosis.MAX_SAMPLES`, with the wrench rows
    its lag search reads).

    Parameters
    ----------
    robot : Robot
        Floating-base robot; the log's joints are mapped to it by name.
    path : str or Path
        A ``.parquet``, ``.h5``/``.hdf5``, ``.npz`` or ``.csv`` log (``docs/log-format.md``).
    contacts : sequence of Contact
        One per contact of the log, matched by name (friction and geometry).

    Raises
    ------
    LogFileError, LogFormatError
        As :func:`wholebody.io.open_log` and :meth:`wholebody.io.LogReader.read`.
    """
    from .io import open_log

    opts = _options(
        preset,
        force_tolerance,
        moment_tolerance,
        cone_tolerance,
        cone_tolerance_relative,
        workers,
        chunk_size,
    )
    with open_log(path) as log:
        contacts = _contacts_for_log(log, contacts)
        source = _LogSource(log, t_start, t_stop, chunk_size, need_time=not log.has_accelerations)
        return _check_source(
            robot,
            source,
            contacts,
            opts,
            ground=ground,
            conventions=conventions,
            savgol=savgol,
            diagnose_causes=diagnose_causes,
            progress=progress,
        )


check_trajectory.__doc__ = (check_trajectory.__doc__ or "") + _CHECK_DOC
check_log.__doc__ = (check_log.__doc__ or "").replace(
    "\n    Raises\n", _CHECK_DOC.rstrip() + "\n\n    Raises\n", 1
)


@dataclass(frozen=True)
class _Options:
    preset: str
    tol: dict[str, float]
    workers: int
    chunk_size: int


def _options(
    preset: str,
    force_tolerance: float | None,
    moment_tolerance: float | None,
    cone_tolerance: float | None,
    cone_tolerance_relative: float | None,
    workers: Any,
    chunk_size: Any,
) -> _Options:
    if preset not in TOLERANCE_PRESETS:
        raise InvalidArgumentError(
            f"preset must be one of {sorted(TOLERANCE_PRESETS)}, got {preset!r}"
        )
    given = {
        "force_tolerance": force_tolerance,
        "moment_tolerance": moment_tolerance,
        "cone_tolerance": cone_tolerance,
        "cone_tolerance_relative": cone_tolerance_relative,
    }
    tol = {
        name: TOLERANCE_PRESETS[preset][name] if value is None else value
        for name, value in given.items()
    }
    validate_tolerances(**tol)
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise InvalidArgumentError(f"workers must be an integer >= 1, got {workers!r}")
    if (
        isinstance(chunk_size, bool)
        or not isinstance(chunk_size, (int, np.integer))
        or chunk_size < 1
    ):
        raise InvalidArgumentError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    return _Options(preset, {k: float(v) for k, v in tol.items()}, int(workers), int(chunk_size))


# --- where the samples come from ---------------------------------------------------------------


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


class _TrajectorySource:
    """The samples ``[i0, i1)`` of an in-memory log, read as views."""

    in_memory = True

    def __init__(self, traj: Trajectory, t_start: float | None, t_stop: float | None):
        self.source = traj.source
        self.contact_names = traj.contact_names
        self.external_frames = traj.external_frames
        self.has_accelerations = traj.a is not None
        self.accelerations_estimated = bool(traj.accelerations_estimated)
        if t_start is not None or t_stop is not None:
            i0, i1 = _window_bounds(traj.time, t_start, t_stop, traj.source)
            inside = (traj.time[i0:i1] >= (-np.inf if t_start is None else t_start)) & (
                traj.time[i0:i1] <= (np.inf if t_stop is None else t_stop)
            )
            if not inside.all():  # non-finite times inside the window: drop them (a copy)
                traj = _cut(traj, np.r_[np.zeros(i0, bool), inside, np.zeros(len(traj) - i1, bool)])
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

        def cut(x: Any) -> Any:
            return None if x is None else x[a:b]

        return replace(
            t,
            time=t.time[a:b],
            q=t.q[a:b],
            v=t.v[a:b],
            a=cut(t.a),
            tau=cut(t.tau),
            contact_wrenches=t.contact_wrenches[a:b],
            external_wrenches=cut(t.external_wrenches),
        )


def _cut(traj: Trajectory, keep: NDArray[np.bool_]) -> Trajectory:
    def cut(x: Any) -> Any:
        return None if x is None else x[keep]

    return replace(
        traj,
        time=traj.time[keep],
        q=traj.q[keep],
        v=traj.v[keep],
        a=cut(traj.a),
        tau=cut(traj.tau),
        contact_wrenches=traj.contact_wrenches[keep],
        external_wrenches=cut(traj.external_wrenches),
    )


class _LogSource:
    """The samples ``[i0, i1)`` of a log file, read by range (:func:`wholebody.io.open_log`).

    The times are read first (one more pass over the file) only when a time window is asked
    for or accelerations must be estimated; a window spans from its first to its last sample.
    """

    in_memory = False

    def __init__(
        self,
        log: Any,
        t_start: float | None,
        t_stop: float | None,
        chunk_size: int,
        need_time: bool,
    ):
        self._log = log
        self.source = log.source
        self.contact_names = log.contact_names
        self.external_frames = log.external_frames
        self.has_accelerations = log.has_accelerations
        self.accelerations_estimated = bool(log.accelerations_estimated)
        self._time: Array | None = None
        i0, i1 = 0, log.n_samples
        if need_time or t_start is not None or t_stop is not None:
            time = np.empty(log.n_samples)
            for start, stop, part in log.chunks(chunk_size):
                time[start:stop] = part.time
            i0, i1 = _window_bounds(time, t_start, t_stop, self.source)
            self._time = time[i0:i1]
        self._i0, self.n = i0, i1 - i0

    def time(self) -> Array:
        assert self._time is not None  # read at opening when needed
        return self._time

    def read(self, lo: int, hi: int) -> Trajectory:
        return self._log.read(self._i0 + lo, self._i0 + hi)


_Source = _TrajectorySource | _LogSource


# --- accelerations from v, chunk by chunk --------------------------------------------------------


@dataclass(frozen=True)
class _Differentiation:
    """Accelerations from ``v`` as :func:`wholebody.trajectory.estimate_accelerations` on the
    whole log gives them, computed on a part that holds ``overlap`` neighbours each side.

    The whole log's steps choose the formula (``np.gradient`` uses its uniform one only when
    every step is equal; Savitzky-Golay uses the median step), so a chunk gives the same bits.
    """

    savgol: tuple[int, int] | None
    uniform_dx: float | None
    median_dt: float

    @classmethod
    def from_time(cls, t: Array, savgol: tuple[int, int] | None) -> _Differentiation:
        if len(t) < 3:
            raise LogFormatError(
                f"estimating accelerations needs at least 3 samples, the log has {len(t)}"
            )
        dx = np.diff(t)
        uniform = float(dx[0]) if bool((dx == dx[0]).all()) else None
        return cls(savgol, uniform, float(np.median(dx)) if savgol is not None else 0.0)

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
        return _central_differences(t, v, self.uniform_dx)


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


def _read_part(
    source: _Source, start: int, stop: int, diff: _Differentiation | None, margin: int = 0
) -> tuple[Trajectory, int]:
    """Samples ``[start - m, stop + m)`` (clipped to the log; ``m`` covers the differences'
    neighbours and ``margin``) with accelerations, and the offset of ``start`` in them."""
    m = max(margin, diff.overlap if diff is not None else 0)
    lo, hi = max(start - m, 0), min(stop + m, source.n)
    part = source.read(lo, hi)
    if diff is not None:
        part = replace(part, a=diff.accelerations(part.time, part.v), accelerations_estimated=True)
    return part, start - lo


def _sample_checks(
    robot: Robot, part: Trajectory
) -> tuple[dict[str, Array], NDArray[np.bool_], dict[int, str]]:
    """Checked ``q``, ``v``, ``a`` in the robot's joint order, the samples that cannot be
    checked and why (indices in ``part``): states, times, wrenches beyond physical magnitudes."""
    q, v, a, _ = part.for_robot(robot)
    assert a is not None  # read with accelerations (_read_part)
    arrays, bad, reasons = robot.check_batch(q=q, v=v, a=a)
    N = len(part)
    W, E = part.contact_wrenches, part.external_wrenches
    # Sample-level problems are flagged before any algebra: non-finite values, and wrenches
    # beyond physical magnitudes (a diverged simulation; they would also overflow).
    checks: list[tuple[str, Any]] = [("time has non-finite values", ~np.isfinite(part.time))]
    for label, arr in [("contact wrenches", W)] + ([] if E is None else [("external wrenches", E)]):
        checks.append(
            (f"{label} have non-finite values", ~np.isfinite(arr).reshape(N, -1).all(axis=1))
        )
        checks.append(
            (
                f"{label} are beyond physical magnitudes (> {MAX_WRENCH_RELATIVE:g} m g, "
                "a diverged simulation or wrong units)",
                beyond_physical_magnitude(arr, robot.weight),
            )
        )
    for why, rows in checks:
        for i in np.flatnonzero(rows & ~bad):
            reasons[int(i)] = why
        bad = bad | rows
    return arrays, bad, reasons


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
    # Several chunks go to the workers at once: all of an in-memory log (its chunks are
    # views), ``workers`` of a file.
    group = len(bounds) if (workers > 1 and source.in_memory) else workers
    for g in range(0, len(bounds), group):
        jobs, shared = [], {}
        for c, (start, stop) in enumerate(bounds[g : g + group]):
            part, off = _read_part(source, start, stop, diff)
            if run_conventions:
                convention_parts.append(
                    (
                        start,
                        stop,
                        _chunk_conventions(robot, source, part, off, start, stop, contacts, ground),
                    )
                )
            here = slice(off, off + stop - start)
            piece = part if (off == 0 and len(part) == stop - start) else _slice(part, here)
            arrays, bad, why = _sample_checks(robot, piece)
            out.time[start:stop] = piece.time
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


def _slice(part: Trajectory, here: slice) -> Trajectory:
    def cut(x: Any) -> Any:
        return None if x is None else x[here]

    return replace(
        part,
        time=part.time[here],
        q=part.q[here],
        v=part.v[here],
        a=cut(part.a),
        tau=cut(part.tau),
        contact_wrenches=part.contact_wrenches[here],
        external_wrenches=cut(part.external_wrenches),
    )


# --- convention checks per chunk ---------------------------------------------------------------

#: The convention checks need this many samples; a shorter last chunk takes its predecessors.
_MIN_CONVENTION_SAMPLES = 5


def _chunk_conventions(
    robot: Robot,
    source: _Source,
    part: Trajectory,
    off: int,
    start: int,
    stop: int,
    contacts: list[Contact],
    ground: Any,
) -> Any:
    from .conventions import check_conventions

    lo = min(start, max(stop - _MIN_CONVENTION_SAMPLES, 0))
    base = start - off  # the sample index of part[0]
    if lo < base:
        piece = source.read(lo, stop)
    elif lo == base and stop - base == len(part):
        piece = part
    else:
        piece = _slice(part, slice(lo - base, stop - base))
    return check_conventions(robot, piece, contacts, ground=ground)


def _merge_conventions(parts: list[tuple[int, int, Any]]) -> Any:
    """One :class:`~wholebody.conventions.ConventionReport` from the chunks' reports: a check
    fails when it fails on some chunk (the first failing chunk's message and evidence, with
    the chunks that failed); one chunk's report is returned as it is."""
    from .conventions import ConventionCheck, ConventionReport

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


def _covered_by_differentiation(
    robot: Robot,
    source: _Source,
    bounds: list[tuple[int, int]],
    contacts: Sequence[Contact],
    report: Report,
    over: NDArray[np.bool_],
) -> NDArray[np.bool_]:
    """Samples over tolerance whose residual the expected error of differentiating ``v``
    covers (:func:`wholebody.conventions.expected_residual_error`), chunk by chunk with the
    neighbours the differences use."""
    from .conventions import expected_residual_error

    w = report.weight
    covered = np.zeros(report.n_samples, dtype=bool)
    for start, stop in bounds:
        idx = np.flatnonzero(over[start:stop]) + start
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
        fe, me = expected.force_error[idx - lo], expected.moment_error[idx - lo]
        with np.errstate(invalid="ignore"):
            covered[idx] = (report.force_norm[idx] <= report.force_tolerance * w + fe) & (
                report.moment_norm[idx] <= report.moment_tolerance * w + me
            )
    return covered


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
    from .diagnosis.causes import MAX_LAG_SAMPLES

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


def _check_chunk(
    robot: Robot,
    contacts: list[Contact],
    Q: Array,
    V: Array,
    A: Array,
    W: Array,
    E: Array | None,
    skip: Array,
    frames: list[str],
    e: int,
    cone_slack: tuple[float, float],
    progress: bool,
) -> _ChunkOutput:
    """The residual and the cones of one chunk of samples (one Pinocchio pass each)."""
    k = len(contacts)
    kin = kinematics_batch(robot, Q, V, A, frames, skip, rotations=True, progress=progress)
    assert kin.rotations is not None  # asked for
    R = kin.rotations[:, :k]
    # Contacts and known external wrenches, each about its own frame origin, in one layout.
    wrenches = W if E is None else np.concatenate([W, E], axis=1)
    r_f, r_m = newton_euler_residual_arrays(
        wrenches,
        kin.positions[:, : k + e],
        kin.com,
        kin.momentum_rate,
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
    return _ChunkOutput(r_f, r_m, margin, cones.utilisation, normal, cones.cop, violated)


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
    assert a is not None  # estimated above when the log has none
    batch = estimate_contact_wrenches_batch(
        robot, q, v, a, contacts, tau=tau if use_torques else None, solver=solver, progress=progress
    )
    N = len(traj)
    est = np.zeros((N, len(contacts), 6))
    for j, c in enumerate(contacts):
        est[:, j, : c.size] = batch.wrench(c.name)
    status_counts = batch.status_counts()
    return replace(
        traj,
        contact_names=traj.contact_names + tuple(f"{c.name}:estimated" for c in contacts),
        contact_wrenches=np.concatenate([traj.contact_wrenches, est], axis=1),
        metadata={
            **traj.metadata,
            "estimation_mode": batch.mode,
            "estimation_status": status_counts,
        },
    )
