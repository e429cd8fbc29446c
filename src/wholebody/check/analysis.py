"""Batch checks of logs: are the contact wrenches consistent with the motion and friction?

:func:`check_trajectory` runs one Pinocchio pass per sample and everything else in numpy:
the Newton-Euler residual about the CoM, each contact's friction-cone margin (with the name of
the violated inequality), utilisation and centre of pressure, flags per sample, a summary and,
when residuals are large, a diagnosis (:mod:`wholebody.diagnosis`). The result is a
:class:`Report`, which writes JSON, CSV, a pandas DataFrame and figures.

The check of one log, from its options to its report: the options are validated once
(:class:`CheckOptions`); the samples come from a Trajectory in memory or from a log file read
in ranges, with accelerations differentiated chunk by chunk exactly as for the whole log; each
chunk's states are checked once, then one Pinocchio pass per sample gives the residual, the
cones, the events and the convention checks; the expected error of differentiated
accelerations, the samples the diagnosis keeps, the verdict's evidence and the diagnosis
follow (the run over chunks is below the public functions).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from ..balance.newton_euler import (
    MAX_WRENCH_RELATIVE,
    beyond_physical_magnitude,
    newton_euler_residual_arrays,
    wrench_sum,
)
from ..contacts import Contact, SurfaceContact, ground_aligned_rotations
from ..diagnosis import MAX_SAMPLES, DiagnosisData, Finding, diagnose
from ..errors import InvalidArgumentError, LogFormatError
from ..friction import VIOLATION_NAMES, ContactSet, normal_rotation
from ..io.logfiles.fields import is_float32
from ..parallel import ChunkFailure, Shared, auto_workers, chunk_bounds, run_chunks
from ..robot.batch import centroidal_frames_rows
from ..robot.core import Robot
from ..trajectory import Trajectory
from .report import (
    CONTACT_THRESHOLD,
    MAX_WAIVED_SHARE,
    MIN_CHECKED_SHARE,
    Evidence,
    Report,
    bias_test,
    cone_finding,
    held_note,
    held_rows,
    repeats,
    residual_resolution,
    window_edges,
)

__all__ = [
    "CheckOptions",
    "Report",
    "check_trajectory",
    "check_log",
    "estimate_trajectory",
    "check_file",
    "ROW_KEYS",
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


@dataclass(frozen=True)
class CheckOptions:
    """How a log is checked: the options of :func:`check_trajectory`, :func:`check_log`,
    :func:`~wholebody.check.many.check_many` and ``wholebody check``, documented once.

    Every field has a default; a tolerance left None takes the preset's value. Each function
    also takes every field as a keyword argument (their signature in earlier releases), which
    overrides ``options``: ``check_trajectory(robot, traj, contacts, force_tolerance=0.02)``
    is ``check_trajectory(robot, traj, contacts, CheckOptions(force_tolerance=0.02))``.
    The options are checked when made.

    Parameters
    ----------
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
    workers : int or "auto"
        Processes for the per-sample work (one Pinocchio pass each); results are identical
        to ``workers=1``. A chunk that fails flags its samples with the error. ``"auto"``:
        one process for a log shorter than :data:`wholebody.parallel.AUTO_MIN_SAMPLES` or
        of one chunk (workers would only cost time), else one per chunk up to the CPUs
        (:func:`wholebody.parallel.auto_workers`).
    chunk_size : int
        Samples per chunk: the work memory grows with it, not with the log. The convention
        checks and the noise of ``v`` (for the expected error of differentiated
        accelerations) are estimated per chunk.
    progress : bool
        A progress bar (tqdm) over the samples (``workers=1``).
    min_checked_share : float
        Below this share of the samples checked (not flagged) the verdict is
        ``"inconclusive"`` (default 0.5).
    max_waived_share : float
        Beyond this share of the checked samples waived (over tolerance, within the expected
        error of differentiated accelerations) the verdict is ``"inconclusive"`` (default 0.1).

    Raises
    ------
    InvalidArgumentError
        An unknown preset, a tolerance that is not a finite number >= 0, ``workers`` or
        ``chunk_size`` not an integer >= 1.

    Examples
    --------
    >>> from wholebody.check import CheckOptions
    >>> options = CheckOptions(preset="measured", t_start=0.5, workers=2)
    >>> options.tolerances["force_tolerance"]  # the measured preset's, relative to m g
    0.05
    >>> options.replace(force_tolerance=0.02).tolerances["force_tolerance"]
    0.02
    >>> CheckOptions(workers=0)
    Traceback (most recent call last):
    ...
    wholebody.errors.InvalidArgumentError: workers must be an integer >= 1, got 0 (or 'auto')
    """

    preset: str = "simulation"
    force_tolerance: float | None = None
    moment_tolerance: float | None = None
    cone_tolerance: float | None = None
    cone_tolerance_relative: float | None = None
    t_start: float | None = None
    t_stop: float | None = None
    ground: Any = None
    conventions: bool = True
    savgol: tuple[int, int] | None = None
    diagnose_causes: bool = True
    workers: int | str = 1
    chunk_size: int = 50_000
    progress: bool = False
    min_checked_share: float = MIN_CHECKED_SHARE
    max_waived_share: float = MAX_WAIVED_SHARE

    def __post_init__(self) -> None:
        self._engine_options()  # raises on a bad option
        _evidence_options(self.min_checked_share, self.max_waived_share)

    @property
    def tolerances(self) -> dict[str, float]:
        """The four tolerances, the preset's where a field is None."""
        return dict(self._engine_options().tol)

    def replace(self, **changes: Any) -> CheckOptions:
        """A copy with some fields changed (checked like a new one).

        Raises
        ------
        InvalidArgumentError
            A name that is not a field (the message lists the fields), or a bad value.
        """
        names = [f.name for f in fields(self)]
        unknown = sorted(set(changes) - set(names))
        if unknown:
            raise InvalidArgumentError(f"unknown check options {unknown}; the options: {names}")
        return replace(self, **changes)

    def _engine_options(self) -> _Options:
        return _options(
            self.preset,
            self.force_tolerance,
            self.moment_tolerance,
            self.cone_tolerance,
            self.cone_tolerance_relative,
            self.workers,
            self.chunk_size,
        )


def _check_options(options: CheckOptions | None, keywords: dict[str, Any]) -> CheckOptions:
    """``options`` (default options when None) with the keyword arguments applied."""
    if options is None:
        options = CheckOptions()
    elif not isinstance(options, CheckOptions):
        raise InvalidArgumentError(
            f"options must be a CheckOptions, got {type(options).__name__}; give other "
            "options as keyword arguments"
        )
    return options.replace(**keywords) if keywords else options


def check_trajectory(
    robot: Robot,
    traj: Trajectory,
    contacts: Sequence[Contact],
    options: CheckOptions | None = None,
    **keywords: Any,
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
    options : CheckOptions, optional
        How to check: tolerances, preset, time window, ground, convention checks,
        differentiation, diagnosis, workers, chunking, progress (defaults when omitted).
    **keywords
        Any field of :class:`CheckOptions`, overriding ``options`` (the keyword arguments of
        earlier releases).

    Returns
    -------
    Report
        Per-sample residuals, cones, flags, the verdict (see :mod:`wholebody.check.report`)
        and the diagnosis.

    Examples
    --------
    The shipped squat log is consistent:

    >>> from pathlib import Path
    >>> import wholebody
    >>> from wholebody.check import check_trajectory
    >>> from wholebody.io.profile import load_profile
    >>> root = Path(wholebody.__file__).parents[2]  # the repository
    >>> profile = load_profile(root / "models" / "humanoid.toml")
    >>> traj = wholebody.Trajectory.load(root / "data" / "humanoid_squat.npz")
    >>> report = check_trajectory(profile.robot, traj, profile.contacts, t_stop=1.0)
    >>> report.verdict, report.n_checked
    ('consistent', 501)
    """
    o = _check_options(options, keywords)
    contacts = _contacts_for_log(traj, contacts)
    traj = traj.at_frame_origins(robot, contacts)  # wrenches about stated points, moved
    source = _TrajectorySource(traj, o.t_start, o.t_stop)
    return _check_source(
        robot,
        source,
        contacts,
        o._engine_options(),
        ground=o.ground,
        conventions=o.conventions,
        savgol=o.savgol,
        diagnose_causes=o.diagnose_causes,
        progress=o.progress,
        **_evidence_options(o.min_checked_share, o.max_waived_share),
    )


def check_log(
    robot: Robot,
    path: Any,
    contacts: Sequence[Contact],
    options: CheckOptions | None = None,
    **keywords: Any,
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
    options : CheckOptions, optional
        How to check: tolerances, preset, time window, ground, convention checks,
        differentiation, diagnosis, workers, chunking, progress (defaults when omitted).
    **keywords
        Any field of :class:`CheckOptions`, overriding ``options`` (the keyword arguments of
        earlier releases).

    Returns
    -------
    Report
        Per-sample residuals, cones, flags, the verdict (see :mod:`wholebody.check.report`)
        and the diagnosis.

    Raises
    ------
    LogFileError, LogFormatError
        As :func:`wholebody.io.open_log` and :meth:`wholebody.io.LogReader.read`.
    """
    from ..io.logs import open_log

    o = _check_options(options, keywords)
    opts = o._engine_options()
    with open_log(path) as log:
        contacts = _contacts_for_log(log, contacts)
        log = log.at_frame_origins(robot, contacts)  # each chunk's wrenches at frame origins
        source = _LogSource(
            log, o.t_start, o.t_stop, opts.chunk_size, need_time=not log.has_accelerations
        )
        return _check_source(
            robot,
            source,
            contacts,
            opts,
            ground=o.ground,
            conventions=o.conventions,
            savgol=o.savgol,
            diagnose_causes=o.diagnose_causes,
            progress=o.progress,
            **_evidence_options(o.min_checked_share, o.max_waived_share),
        )


def _evidence_options(min_checked_share: Any, max_waived_share: Any) -> dict[str, float]:
    """The evidence thresholds, validated: shares in [0, 1]."""
    out = {}
    for name, value in (
        ("min_checked_share", min_checked_share),
        ("max_waived_share", max_waived_share),
    ):
        validate_tolerances(**{name: value})
        if value > 1:
            raise InvalidArgumentError(f"{name} must be a share between 0 and 1, got {value!r}")
        out[name] = float(value)
    return out


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
    if workers == "auto":
        workers = 0  # chosen from the log's length (parallel.auto_workers) once it is known
    elif isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise InvalidArgumentError(f"workers must be an integer >= 1, got {workers!r} (or 'auto')")
    if (
        isinstance(chunk_size, bool)
        or not isinstance(chunk_size, (int, np.integer))
        or chunk_size < 1
    ):
        raise InvalidArgumentError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    return _Options(preset, {k: float(v) for k, v in tol.items()}, int(workers), int(chunk_size))


def estimate_trajectory(
    robot: Robot,
    traj: Trajectory,
    contacts: Sequence[Contact],
    *,
    use_torques: bool = True,
    solver: str | None = None,
    progress: bool = False,
    schedule: str = "auto",
) -> Trajectory:
    """Estimate the contact wrenches of a log by QP; returns a copy with them beside the log's.

    ``schedule="auto"``: the log's contact schedule, else one from its logged forces and
    kinematics (:func:`wholebody.check.estimate_report.schedule_for_estimate`: a foot in the air
    carries no force), else every declared contact; ``"declared"``: the log's schedule or
    every declared contact. What was used is ``metadata["estimation_schedule"]``.

    The estimates are stored as contacts named ``"<name>:estimated"`` (so a check or a plot
    can compare them with the logged ones). Full-dynamics mode when the log has joint torques
    and ``use_torques``, else Newton-Euler mode. The log's known external wrenches and its
    contact schedule (``contact_active``) are used. Statuses go to
    ``metadata["estimation_status"]`` (and ``"estimation_detailed_status"``: found,
    underdetermined, infeasible, failed, flagged), and the samples of every status but found to
    ``metadata["estimation_samples"]`` (``{status: [sample indices]}``), so a saved estimate
    keeps them in every format.
    """
    from ..estimation import EstimationBatch, estimate_contact_wrenches

    contacts = _contacts_for_log(traj, contacts)
    traj = traj.at_frame_origins(robot, contacts)  # wrenches about stated points, moved
    if traj.a is None:
        traj = traj.with_accelerations()
    q, v, a, tau = traj.for_robot(robot)
    assert a is not None  # estimated above when the log has none
    # The log's known pushes and its contact schedule, when it has them.
    external = None
    if traj.external_wrenches is not None:
        external = {f: traj.external_wrenches[:, j] for j, f in enumerate(traj.external_frames)}
    from .estimate_report import schedule_for_estimate

    if schedule not in ("auto", "declared"):
        raise InvalidArgumentError(f"schedule must be 'auto' or 'declared', got {schedule!r}")
    if schedule == "auto":
        mask, used = schedule_for_estimate(robot, traj, contacts)
    else:
        mask, used = traj.contact_active, {"schedule": "the log's or every declared contact"}
    batch = cast(
        EstimationBatch,
        estimate_contact_wrenches(
            robot,
            q,
            v,
            a,
            contacts,
            tau=tau if use_torques else None,
            solver=solver,
            progress=progress,
            external_wrenches=external,
            active=mask,
        ),
    )
    N = len(traj)
    est = np.zeros((N, len(contacts), 6))
    for j, c in enumerate(contacts):
        est[:, j, : c.size] = batch.wrench(c.name)
    status_counts = batch.status_counts()
    active = traj.contact_active
    if active is not None:  # the estimated contacts share their logged ones' schedule
        active = np.concatenate([active, active], axis=1)
    return replace(
        traj,
        contact_names=traj.contact_names + tuple(f"{c.name}:estimated" for c in contacts),
        contact_wrenches=np.concatenate([traj.contact_wrenches, est], axis=1),
        contact_active=active,
        metadata={
            **traj.metadata,
            "estimation_mode": batch.mode,
            "estimation_detailed_status": batch.status_counts(detailed=True),
            "estimation_status": status_counts,
            "estimation_schedule": used,
            # Per contact: active samples whose wrench the equations do not determine.
            "estimation_unidentified": {
                c.name: int(
                    np.sum(
                        ~np.asarray(batch.identifiable_by_contact, bool)[:, j]
                        & (True if mask is None else np.asarray(mask, bool)[:, j])
                    )
                )
                for j, c in enumerate(contacts)
            },
            # Which samples: every detailed status but "found", as sample indices.
            "estimation_samples": {
                s: np.flatnonzero(batch.detailed_status == s).tolist()
                for s in batch.status_counts(detailed=True)
                if s != "found"
            },
        },
    )


# --- one log file, its row ---------------------------------------------------------------------

#: The keys of every row of :func:`check_many`, in order, readable log or not.
ROW_KEYS = (
    "path",
    "error",
    "verdict",
    "consistent",
    "samples_in",
    "checked",
    "flagged",
    "max_residual_force_N",
    "max_residual_moment_Nm",
    "fraction_over_tolerance",
    "cone_violations",
    "share_checked",
    "bound_force_N",
    "bound_moment_Nm",
    "diagnosis",
    "text",
)


def error_row(path: str, error: str) -> dict[str, Any]:
    """The row of a log that could not be read or checked: ``error`` says why."""
    row: dict[str, Any] = dict.fromkeys(ROW_KEYS)
    row |= {"path": path, "error": error, "verdict": "error", "text": f"{path}: error: {error}"}
    return row


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


#: Log formats checked chunk by chunk from the file (``wholebody.check.analysis.check_log``).
STREAMED_SUFFIXES = (".parquet", ".h5", ".hdf5")


def check_file(
    robot: Robot,
    path: str,
    contacts: Sequence[Contact],
    options: Any,
    out_dir: str | None,
    plot: bool,
    calibration: Any = None,
    recording: Any = None,
    episode: int = 0,
    html: bool = False,
) -> dict[str, Any]:
    """Check one log file (or recording) and give its row (:data:`ROW_KEYS`, the rows of
    :func:`wholebody.check.many.check_many`), writing its report to ``out_dir`` when given;
    a log that cannot be read or checked (a typed error, a bad path or value) is a row with
    its error. Any other exception propagates (:func:`~wholebody.check.many.check_many` and
    the command line make it the row's error, ``TYPE: message``)."""
    from ..errors import WholebodyError
    from ..io.logs import read_log

    given, keywords = (options, {}) if isinstance(options, CheckOptions) else (None, options)
    try:
        if calibration is None and Path(path).suffix.lower() in STREAMED_SUFFIXES:
            # Read in row groups / slices: memory does not grow with the log's length.
            report = check_log(robot, path, contacts, given, **keywords)
        else:
            traj = read_log(path, mapping=recording, robot=robot, episode=episode)
            if calibration is not None:
                traj = calibration.apply(traj, robot)
            report = check_trajectory(robot, traj, contacts, given, **keywords)
    except (WholebodyError, OSError, ValueError) as exc:
        return error_row(path, str(exc))
    if out_dir is not None:
        out = Path(out_dir)
        stem = Path(path).stem
        try:
            out.mkdir(parents=True, exist_ok=True)
            report.to_json(out / f"{stem}.report.json")
            report.to_csv(out / f"{stem}.report.csv")
            if plot:
                report.plot(out / f"{stem}.report.png")
                import matplotlib.pyplot as plt

                plt.close("all")
        except OSError as exc:
            return error_row(path, f"cannot write the report of {path} to {out}: {exc}")
    s = report.summary()
    unchecked = report.verdict == "unchecked"
    row: dict[str, Any] = {
        "path": str(path),
        "error": None,
        "verdict": report.verdict,
        "consistent": report.consistent,
        "samples_in": s["samples"]["in"],
        "checked": s["samples"]["checked"],
        "flagged": s["samples"]["flagged"],
        "max_residual_force_N": _finite(s["residual_force_N"]["max"]),
        "max_residual_moment_Nm": _finite(s["residual_moment_Nm"]["max"]),
        "fraction_over_tolerance": None if unchecked else s["fraction_over_tolerance"],
        "cone_violations": sum(c["violations"] for c in s["contacts"].values()),
        "share_checked": report.evidence.share_checked,
        "bound_force_N": _finite(report.evidence.bound_force),
        "bound_moment_Nm": _finite(report.evidence.bound_moment),
        "diagnosis": report.diagnosis[0].message if report.diagnosis else None,
        "text": report.format_summary(),
    }
    if html:  # rendered where the report is, so only the page fragment travels back
        from .report_html import anchor, report_section

        return {k: row[k] for k in ROW_KEYS} | {"html": report_section(report, anchor(path))}
    return {k: row[k] for k in ROW_KEYS}


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
    """Accelerations from ``v`` as
    :func:`wholebody.robot.differentiation.estimate_accelerations` on the whole log gives them,
    computed on a part that holds ``overlap`` neighbours each side.

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


@dataclass(frozen=True)
class _Checked:
    """The samples of one chunk, checked once (:meth:`Robot.check_batch`) for every reader.

    ``arrays``: ``q``, ``v``, ``a`` checked, in the robot's joint order; ``bad``: the samples
    the residual cannot use (a bad state, time or wrench) and ``reasons`` why (indices in the
    chunk); ``motion``: ``(q, v, flagged)`` as the convention checks read them. Those look at
    ``q`` and ``v`` only, so a sample flagged for its ``a``, time or wrenches keeps its ``q``
    and ``v`` there: the rows ``check_batch`` flagged are checked again on ``q`` and ``v``
    alone (the check is row by row: the same flags and renormalised ``q`` as a check of
    ``q`` and ``v`` on every row), which leaves every unflagged sample checked once.
    """

    arrays: dict[str, Array]
    bad: NDArray[np.bool_]
    reasons: dict[int, str]
    motion: tuple[Array, Array, NDArray[np.bool_]]


def _sample_checks(robot: Robot, part: Trajectory) -> _Checked:
    """The checks of a chunk's samples (:class:`_Checked`): states, times, wrenches beyond
    physical magnitudes."""
    q, v, a, _ = part.for_robot(robot)
    assert a is not None  # read with accelerations (_read_part)
    arrays, bad, reasons = robot.check_batch(q=q, v=v, a=a)
    motion = (arrays["q"], arrays["v"], bad.copy())
    if bad.any():  # is q and v of a flagged sample usable on its own? (the conventions read it)
        again = np.flatnonzero(bad)
        alone, alone_bad, _ = robot.check_batch(q=q[again], v=v[again])
        motion = (arrays["q"].copy(), arrays["v"].copy(), motion[2])
        motion[0][again], motion[1][again], motion[2][again] = alone["q"], alone["v"], alone_bad
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
    return _Checked(arrays, bad, reasons, motion)


@dataclass(frozen=True)
class _Options:
    preset: str
    tol: dict[str, float]
    workers: int
    chunk_size: int


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
    checked states (``q``, ``v``, flagged: :class:`~_Checked`) and
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
    robot: Robot, source: _Source, contacts: list[Contact], opts: _Options, **kwargs: Any
) -> Report:
    """:func:`check_trajectory` and :func:`check_log`: the log worked through in chunks, with
    one progress bar for the whole log (not one per chunk)."""
    if opts.workers == 0:  # workers="auto": from the log's length
        opts = replace(opts, workers=auto_workers(source.n, opts.chunk_size))
    if not kwargs["progress"]:
        return _check_chunks(robot, source, contacts, opts, **kwargs)
    from .._progress import run_progress  # the bars only when asked for

    with run_progress(source.n, True, desc="checking", unit="samples"):
        return _check_chunks(robot, source, contacts, opts, **kwargs)


def _check_chunks(
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
    min_checked_share: float = MIN_CHECKED_SHARE,
    max_waived_share: float = MAX_WAIVED_SHARE,
) -> Report:
    """The body of :func:`_check_source`."""
    tol, workers = opts.tol, opts.workers
    N, k, e = source.n, len(contacts), len(source.external_frames)
    diff = None if source.has_accelerations else _Differentiation.from_time(source.time(), savgol)
    estimated = True if diff is not None else source.accelerations_estimated
    parents = [
        robot.model.names[robot.model.frames[robot.frame_id(c.frame)].parentJoint] for c in contacts
    ]
    frames = [c.frame for c in contacts] + list(source.external_frames)
    # A log of at most MAX_SAMPLES samples: the diagnosis keeps every sample the checks pass,
    # so the chunks' pass also places what it reads (the contacts' parent joints) and its
    # kinematics are kept for it (one pass per sample); a longer log's diagnosis places the
    # MAX_SAMPLES it keeps in a pass of its own rather than the log's kinematics being held.
    placed = _Placed.empty(N, k, e) if diagnose_causes and N <= MAX_SAMPLES else None
    if placed is not None:
        frames += parents
    cone_slack = (tol["cone_tolerance"] * robot.weight, tol["cone_tolerance_relative"])
    bounds = chunk_bounds(N, opts.chunk_size)
    out = _Results.empty(N, k)
    reasons: dict[int, str] = {}
    convention_parts: list[tuple[int, int, Any]] = []
    run_conventions = conventions and N >= 3
    # chunk start -> the convention checks' piece, its first sample and its checked states
    pending: dict[int, tuple[int, Any, Any]] = {}
    recent_states, recent_placed = _Recent(), _Recent()  # for a chunk shorter than the checks
    # Several chunks go to the workers at once: all of an in-memory log (its chunks are
    # views), ``workers`` of a file.
    group = len(bounds) if (workers > 1 and source.in_memory) else workers
    # Contacts the log's schedule says are not touching (Trajectory.contact_active): no cone
    # to respect there (their wrenches still enter the balance: a stale force shows).
    inactive: NDArray[np.bool_] | None = None
    # The storage resolution of the logged values (float32 detected on the first chunk).
    res_f, res_m = np.zeros(N), np.zeros(N)
    single: bool | None = None
    # Readings repeated bit for bit (held or stale streams, judged once residuals are known).
    same = np.zeros((N, len(contacts)), dtype=bool)
    last_row: Array | None = None
    for g in range(0, len(bounds), group):
        jobs, shared = [], {}
        for c, (start, stop) in enumerate(bounds[g : g + group]):
            part, off = _read_part(source, start, stop, diff)
            here = slice(off, off + stop - start)
            piece = part if (off == 0 and len(part) == stop - start) else part.select(here)
            checked = _sample_checks(robot, piece)  # the chunk's one state check
            arrays, bad, why = checked.arrays, checked.bad, checked.reasons
            if run_conventions:  # checked once the chunk's pass is done (it reuses it)
                lo, conv_piece = _convention_piece(source, part, off, start, stop)
                states = recent_states.before(start - lo, *checked.motion)
                pending[start] = (lo, conv_piece, states)
            out.time[start:stop] = piece.time
            if piece.contact_active is not None:
                if inactive is None:
                    inactive = np.zeros((N, len(contacts)), dtype=bool)
                inactive[start:stop] = ~piece.contact_active
            out.bad[start:stop] = bad
            reasons.update({start + i: r for i, r in why.items()})
            if len(contacts) and len(piece.contact_wrenches):
                same[start:stop] = repeats(piece.contact_wrenches, last_row)
                last_row = np.array(piece.contact_wrenches[-1])
            if single is None:
                single = any(
                    is_float32(x[:1000])
                    for x in (piece.q, piece.v, piece.contact_wrenches)
                    if x is not None
                )
            forces = np.abs(np.nan_to_num(piece.contact_wrenches[..., :3])).sum(axis=-1)
            res_f[start:stop], res_m[start:stop] = residual_resolution(
                piece.contact_wrenches, forces.sum(axis=1), single, robot.weight
            )
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
                        placed is not None,
                    ),
                )
            )
            del part, piece, arrays, checked
        results = run_chunks(robot, _check_chunk, jobs, workers, shared=shared)
        if workers > 1 and progress:  # the workers' chunks, counted here as they come back
            from .._progress import advance

            advance(sum(stop - start for (start, stop), _ in jobs))
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
                if placed is not None:
                    placed.com[start:stop], placed.rate[start:stop] = res.com, res.rate
                    placed.positions[start:stop] = res.frames
                    placed.rotations[start:stop] = res.rotations
            if run_conventions:
                lo, conv_piece, states = pending.pop(start)
                n = stop - start
                com, origins = (
                    (np.full((n, 3), np.nan), np.full((n, k, 3), np.nan))
                    if isinstance(res, ChunkFailure)
                    else (res.com, res.positions)
                )
                here_placed = recent_placed.before(start - lo, com, origins)
                checks = _chunk_conventions(
                    robot, conv_piece, contacts, ground, here_placed, states
                )
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
    # A held or stale stream: its samples are no evidence (flagged with the reason); the
    # verdict rests on the rest.
    held = held_rows(
        same & ~bad[:, None],
        np.where(bad[:, None], np.nan, out.r_f),
        out.time,
        [c.name for c in contacts],
        tol["force_tolerance"] * robot.weight,
    )
    for row, reason in held.items():
        reasons[row] = reason
        bad[row] = True
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
    e_f, e_m = res_f.copy(), res_m.copy()
    smoothing = 1
    bias = None
    if estimated and N >= 3:
        # Every sample's bound when the log is not long (the report's CSV gives it), else
        # those the waivers and the bias test read.
        need = over.copy() if N > _ALL_BOUNDS else np.ones(N, dtype=bool)
        need[window_edges(N)] = True
        need &= ~bad
        d_f, d_m, slow_f, slow_m, total = _differentiation_bounds(
            robot, source, bounds, contacts, report, need
        )
        e_f += d_f
        e_m += d_m
        w = robot.weight
        with np.errstate(invalid="ignore"):
            report.unreliable = over & (
                (report.force_norm <= report.force_tolerance * w + e_f)
                & (report.moment_norm <= report.moment_tolerance * w + e_m)
            )
        bias = bias_test(
            out.time,
            out.r_f,
            out.r_m,
            slow_f + res_f,
            slow_m + res_m,
            total,
            bad,
            tol["force_tolerance"] * w,
            tol["moment_tolerance"] * w,
        )
        report.systematic = bias.systematic
        smoothing = bias.smoothing
    report.bound_force, report.bound_moment = e_f, e_m
    report.implausible = _implausible_rows(reasons, N)
    report.evidence = _evidence(report, bias, bool(single), res_f, res_m)
    report.evidence.min_checked_share = min_checked_share
    report.evidence.max_waived_share = max_waived_share
    findings: list[Finding] = []
    if convention_report is not None:
        findings += [
            Finding(
                f"convention:{c.name}",
                # Measured: the share of the check's disagreement its named fix repairs (0
                # when it names none).
                float(c.evidence.get("explained", 0.0)) if c.hypotheses else 0.0,
                c.message + (f"; fix: {c.fix}" if c.fix else ""),
                {"hypotheses": list(c.hypotheses), "evidence": c.evidence},
            )
            # A named mistake first (degrees explain contacts that seem to move).
            for c in sorted(convention_report.findings, key=lambda c: not c.hypotheses)
        ]
    inconsistent = report.inconsistent_samples

    def diagnosis_data(with_links: bool = True) -> DiagnosisData:
        # Valid samples whose kinematics the diagnosis keeps (at most MAX_SAMPLES, evenly spread).
        valid = np.flatnonzero(checked_ok)
        keep = (
            valid
            if len(valid) <= MAX_SAMPLES
            else valid[np.linspace(0, len(valid) - 1, MAX_SAMPLES).astype(int)]
        )
        rows = keep[~bad[keep]]
        kept = _kept_samples(robot, source, bounds, contacts, parents, rows, bad, diff, placed)
        euler = False
        if estimated:  # is v an Euler integrator's? (the lag fit's basis)
            from ..diagnosis.causes_timing import semi_implicit_euler

            head, _ = _read_part(source, 0, min(source.n, 2000), None)
            euler = semi_implicit_euler(*head.for_robot(robot)[:2])
        links = _link_motion(robot, source, bounds, rows, diff) if with_links else None
        return DiagnosisData(
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
            accelerations_estimated=estimated,
            euler_velocities=euler,
            links=links,
            bound=np.stack([e_f[rows], e_m[rows]], axis=1),
            smoothing=_kept_smoothing(smoothing, N, len(rows)),
            log_flagged=bad.copy(),
        )

    if diagnose_causes and inconsistent.any():
        findings += diagnose(diagnosis_data())
    elif diagnose_causes and contacts and report.n_checked >= 8:
        # A log within tolerance whose small residual one parameter removes: a note.
        from ..diagnosis.notes import consistent_log_notes

        report.notes = consistent_log_notes(diagnosis_data(with_links=False))
    from ..diagnosis.notes import limit_notes

    report.notes += limit_notes(convention_report)
    if held:
        report.notes.insert(0, held_note(held, out.time))
    cone = cone_finding(report)
    if cone is not None:  # which contact, how far, when: a line of its own
        findings.append(cone)
    report.diagnosis = findings
    return report


def _link_motion(
    robot: Robot,
    source: _Source,
    bounds: list[tuple[int, int]],
    rows: NDArray[np.intp],
    diff: _Differentiation | None,
) -> Any:
    """The motion of the links without ``<inertial>`` at ``rows`` (None when there are none)."""
    from ._links import link_motion

    names = robot.links_without_inertia  # read when the URDF was loaded
    if not names or not len(rows):
        return None

    def read(start: int, stop: int) -> tuple[Array, Array, Array, int]:
        part, off = _read_part(source, start, stop, diff)
        q, v, a, _ = part.for_robot(robot)
        assert a is not None  # read with accelerations (_read_part)
        return q, v, a, off

    return link_motion(robot, read, bounds, rows, names)


#: Logs up to this many samples get every sample's expected error (one Pinocchio pass each).
_ALL_BOUNDS = 100_000


def _kept_smoothing(smoothing: int, n: int, kept: int) -> int:
    """The bias test's averaging window in samples, in the diagnosis' kept samples (spread
    evenly over the log), at most an eighth of them."""
    if smoothing <= 1 or kept < 16:
        return 1
    return int(max(1, min(round(smoothing * kept / max(n, 1)), kept // 8)))


def _implausible_rows(reasons: dict[int, str], n: int) -> NDArray[np.bool_]:
    """Samples flagged for values beyond physical magnitudes (evidence of a bad log)."""
    rows = np.zeros(n, dtype=bool)
    for i, why in reasons.items():
        if "physical magnitude" in why:
            rows[i] = True
    return rows


def _evidence(report: Report, bias: Any, single: bool, res_f: Array, res_m: Array) -> Evidence:
    """The figures of :class:`~wholebody.check.report.Evidence` for a report."""
    ok = ~report.flagged
    n_checked = int(ok.sum())
    n_waived = int(report.unreliable.sum())

    def median(x: Array) -> float:
        x = x[ok & np.isfinite(x)]
        return float(np.median(x)) if len(x) else float("nan")

    ev = Evidence(
        n_samples=report.n_samples,
        n_checked=n_checked,
        n_waived=n_waived,
        n_implausible=int(report.implausible.sum()),
        share_checked=n_checked / max(report.n_samples, 1),
        share_waived=n_waived / max(n_checked, 1),
        bound_force=median(report.bound_force),
        bound_moment=median(report.bound_moment),
        resolution_force=median(res_f),
        resolution_moment=median(res_m),
        float32=single,
    )
    if bias is not None:
        ev.window_bound_force = bias.bound_force
        ev.window_bound_moment = bias.bound_moment
        ev.window_seconds = bias.seconds
        ev.systematic_windows = bias.windows
        ev.systematic_ratio = bias.ratio
    return ev


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
    # With ``keep`` (for the diagnosis, _Placed), else None: the momentum rate (n, 6), every
    # frame's origin (n, k + e + k, 3), the contact frames' rotations (n, k, 3, 3).
    rate: Array | None = None
    frames: Array | None = None
    rotations: Array | None = None


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
    keep: bool = False,
) -> _ChunkOutput:
    """The residual and the cones of one chunk of samples (one Pinocchio pass each); with
    ``keep`` also the pass's kinematics (the diagnosis reads them)."""
    k, N = len(contacts), Q.shape[0]
    com = np.full((N, 3), np.nan)
    rate = np.full((N, 6), np.nan)
    positions = np.full((N, len(frames), 3), np.nan)
    R = np.full((N, k, 3, 3), np.nan)
    rows: Any = np.flatnonzero(~skip).tolist()
    ids = [robot.frame_id(f) for f in frames]
    if progress:  # the run's one bar (run_progress), in this process
        from .._progress import advance
    for s in range(0, len(rows), _PASS_BLOCK):  # one Pinocchio pass per sample
        block = rows[s : s + _PASS_BLOCK]
        centroidal_frames_rows(robot, Q, V, A, block, ids, com, rate, positions, R, n_rotations=k)
        if progress:  # the run's one bar (run_progress), in this process
            advance(len(block))
    if progress:
        advance(N - len(rows))  # the skipped samples are done too
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
    kept = (rate, positions, R) if keep else (None, None, None)
    return _ChunkOutput(
        r_f,
        r_m,
        margin,
        cones.utilisation,
        normal,
        cones.cop,
        violated,
        com,
        positions[:, :k],
        *kept,
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
