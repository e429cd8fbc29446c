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
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..contacts import Contact
from ..errors import InvalidArgumentError, LogFormatError
from ..robot.core import Robot
from ..trajectory import Trajectory
from ._engine import _check_source, _LogSource, _Options, _TrajectorySource
from ._verdict import MAX_WAIVED_SHARE, MIN_CHECKED_SHARE
from .report import Report

__all__ = [
    "CheckOptions",
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
    from ..estimation import estimate_contact_wrenches_batch

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
    batch = estimate_contact_wrenches_batch(
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
