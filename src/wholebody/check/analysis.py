"""The checks of one log: :func:`check_trajectory` (a Trajectory in memory),
:func:`check_log` (a log file, read chunk by chunk) and :func:`check_file` (a file or
recording, to its row of :data:`ROW_KEYS`); and :func:`estimate_trajectory`.

A check runs one Pinocchio pass per sample and everything else in numpy: the Newton-Euler
residual about the CoM, each contact's friction-cone margin (with the name of the violated
inequality), utilisation and centre of pressure, flags per sample, a summary and, when
residuals are large, a diagnosis (:mod:`wholebody.diagnosis`). The result is a
:class:`~wholebody.check.Report`, which writes JSON, CSV, a pandas DataFrame and figures.
How the log is worked through (read, evaluate, merge, chunk by chunk) is
:mod:`wholebody.check.engine`; where the samples come from, :mod:`wholebody.check.sources`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from ..contacts import Contact
from ..errors import InvalidArgumentError, WholebodyError
from ..robot.core import Robot
from ..trajectory import Trajectory
from .engine import check_source
from .options import CheckOptions, given_options
from .report import Report
from .report_text import ranking_dict
from .sources import LogSource, TrajectorySource, contacts_for_log

__all__ = [
    "check_trajectory",
    "check_log",
    "check_file",
    "estimate_trajectory",
    "ROW_KEYS",
    "error_row",
    "STREAMED_SUFFIXES",
]


def check_trajectory(
    robot: Robot,
    traj: Trajectory,
    contacts: Sequence[Contact],
    options: CheckOptions | None = None,
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
    >>> from wholebody.check import CheckOptions, check_trajectory
    >>> from wholebody.io.profile import load_profile
    >>> root = Path(wholebody.__file__).parents[2]  # the repository
    >>> profile = load_profile(root / "models" / "humanoid.toml")
    >>> traj = wholebody.Trajectory.load(root / "data" / "humanoid_squat.npz")
    >>> report = check_trajectory(
    ...     profile.robot, traj, profile.contacts, CheckOptions(t_stop=1.0)
    ... )
    >>> report.verdict, report.n_checked
    ('consistent', 501)
    """
    options = given_options(options)
    contacts = contacts_for_log(traj, contacts)
    traj = traj.at_frame_origins(robot, contacts)  # wrenches about stated points, moved
    source = TrajectorySource(traj, options.t_start, options.t_stop)
    return check_source(robot, source, contacts, options)


def check_log(
    robot: Robot,
    path: Any,
    contacts: Sequence[Contact],
    options: CheckOptions | None = None,
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

    options = given_options(options)
    with open_log(path) as log:
        contacts = contacts_for_log(log, contacts)
        log = log.at_frame_origins(robot, contacts)  # each chunk's wrenches at frame origins
        source = LogSource(
            log,
            options.t_start,
            options.t_stop,
            int(options.chunk_size),
        )
        return check_source(robot, source, contacts, options)


def estimate_trajectory(
    robot: Robot,
    traj: Trajectory,
    contacts: Sequence[Contact],
    *,
    use_torques: bool = True,
    solver: str | None = None,
    progress: bool = False,
    schedule: str = "auto",
    ground: Any = None,
) -> Trajectory:
    """Estimate the contact wrenches of a log by QP; returns the log with them.

    A log with contact wrenches keeps them: the estimates are stored beside them as contacts
    named ``"<name>:estimated"`` (so a check or a plot can compare them). A log without
    (motion only: ``q``, ``v``, optionally ``a`` and ``tau``) gets every declared contact's
    estimate under the contact's own name, with the schedule used as its ``contact_active``:
    the log completed, which checks with the same contacts. Accelerations are differentiated
    from ``v`` when the log has none (``accelerations_estimated``).

    Full-dynamics mode when the log has joint torques and ``use_torques`` (each contact's
    wrench is determined where the contact Jacobians have full column rank), else
    Newton-Euler mode (the total wrench is determined, the split between contacts comes from
    the regularisation). The log's known external wrenches are used.

    ``schedule="auto"``: which contacts may carry force
    (:func:`wholebody.check.estimate_report.schedule_for_estimate`): from the logged forces
    and the kinematics (a foot in the air carries nothing), else the log's schedule, else
    from the kinematics alone (each contact's height above ``ground`` and its speed);
    ``"declared"``: the log's schedule or every declared contact.

    Metadata: ``estimation_mode`` (``"full_dynamics"`` or ``"newton_euler"``),
    ``estimation_schedule`` (what the schedule rests on), ``estimation_status`` and
    ``estimation_detailed_status`` (counts: found, underdetermined, infeasible, failed,
    flagged), ``estimation_samples`` (``{status: [sample indices]}`` for every status but
    found), ``estimation_flagged`` (``{reason: [sample indices]}``: a sample whose time stamp
    is not finite is flagged for it, and so are the samples whose differentiated acceleration
    needs that stamp; so are, where the schedule rests on no logged force, the samples it gets
    wrong: :func:`wholebody.check.estimate_report.schedule_conflicts`) and
    ``estimation_unidentified`` (per contact, the samples whose wrench the equations do not
    determine), so a saved estimate keeps them in every format.

    Parameters
    ----------
    ground : Ground or float, optional
        The ground of the kinematic schedule (a :class:`wholebody.conventions.Ground`, or its
        height along world z [m]); default z = 0.
    """
    from ..estimation import EstimationBatch, estimate_contact_wrenches
    from .estimate_report import schedule_conflicts, schedule_for_estimate

    if schedule not in ("auto", "declared"):
        raise InvalidArgumentError(f"schedule must be 'auto' or 'declared', got {schedule!r}")
    contacts = contacts_for_log(traj, contacts) if traj.contact_names else list(contacts)
    traj = traj.at_frame_origins(robot, contacts)  # wrenches about stated points, moved
    if traj.a is None:
        # A stamp or a v that is not finite makes its neighbours' a NaN: flagged below.
        with np.errstate(invalid="ignore", divide="ignore"):
            traj = traj.with_accelerations()
    q, v, a, tau = traj.for_robot(robot)
    assert a is not None  # estimated above when the log has none
    external = None
    if traj.external_wrenches is not None:
        external = {f: traj.external_wrenches[:, j] for j, f in enumerate(traj.external_frames)}
    if schedule == "auto":
        mask, used = schedule_for_estimate(robot, traj, contacts, ground)
    else:
        mask, used = traj.contact_active, {"schedule": "the log's or every declared contact"}

    def run(rows: Any = slice(None), active: Any = mask) -> EstimationBatch:
        """The estimate of the samples ``rows`` with the schedule ``active``."""
        return cast(
            EstimationBatch,
            estimate_contact_wrenches(
                robot,
                q[rows],
                v[rows],
                a[rows],
                contacts,
                tau=tau[rows] if use_torques and tau is not None else None,
                solver=solver,
                progress=progress,
                external_wrenches=None
                if external is None
                else {f: w[rows] for f, w in external.items()},
                active=active,
            ),
        )

    batch = run()
    batch = _flag_time_stamps(batch, traj, v, a)
    if schedule == "auto" and "agreement" not in used:  # the schedule rests on no force
        for rows, reason in schedule_conflicts(robot, traj, contacts, mask, batch, run, ground):
            batch = batch.with_flagged(rows, reason)
    est = np.zeros((len(traj), len(contacts), 6))
    for j, c in enumerate(contacts):
        est[:, j, : c.size] = batch.wrench(c.name)
    return _with_estimates(traj, contacts, est, mask, _estimate_metadata(batch, used))


def _with_estimates(
    traj: Trajectory, contacts: Sequence[Contact], est: Any, mask: Any, metadata: dict[str, Any]
) -> Trajectory:
    """The log with the estimates ``est`` (N, k, 6): beside its logged wrenches as
    ``"<name>:estimated"``, or, in a log without any, as its contacts with the schedule
    ``mask`` used (the log completed)."""
    metadata = {**traj.metadata, **metadata}
    if not traj.contact_names:
        return replace(
            traj,
            contact_names=tuple(c.name for c in contacts),
            contact_wrenches=est,
            contact_active=mask,
            metadata=metadata,
        )
    active = traj.contact_active
    if active is not None:  # the estimated contacts share their logged ones' schedule
        active = np.concatenate([active, active], axis=1)
    return replace(
        traj,
        contact_names=traj.contact_names + tuple(f"{c.name}:estimated" for c in contacts),
        contact_wrenches=np.concatenate([traj.contact_wrenches, est], axis=1),
        contact_active=active,
        metadata=metadata,
    )


def _estimate_metadata(batch: Any, used: dict[str, Any]) -> dict[str, Any]:
    """The ``estimation_*`` metadata of an estimate (see :func:`estimate_trajectory`)."""
    flagged: dict[str, list[int]] = {}
    for i in np.flatnonzero(batch.status == "flagged").tolist():
        flagged.setdefault(batch.reasons.get(i, "?"), []).append(i)
    detailed = batch.status_counts(detailed=True)
    return {
        "estimation_mode": batch.mode,
        "estimation_detailed_status": detailed,
        "estimation_status": batch.status_counts(),
        "estimation_schedule": used,
        "estimation_unidentified": dict(
            zip(
                [c.name for c in batch.contacts],
                batch.split_from_regularization_by_contact.sum(axis=0).astype(int).tolist(),
                strict=True,
            )
        ),
        # Which samples: every detailed status but "found", as sample indices.
        "estimation_samples": {
            s: np.flatnonzero(batch.detailed_status == s).tolist() for s in detailed if s != "found"
        },
        "estimation_flagged": flagged,
    }


def _flag_time_stamps(batch: Any, traj: Trajectory, v: Any, a: Any) -> Any:
    """``batch`` with the samples whose time stamp is not finite flagged for it, and, when
    the accelerations were differentiated here or in the log, the samples whose ``a`` is not
    finite only through a neighbour (their own ``v`` and time finite)."""
    stamp = ~np.isfinite(traj.time)
    batch = batch.with_flagged(np.flatnonzero(stamp), "time stamp is not finite")
    if traj.accelerations_estimated:
        through = ~np.isfinite(a).all(axis=1) & np.isfinite(v).all(axis=1) & ~stamp
        batch = batch.with_flagged(
            np.flatnonzero(through),
            "a (differentiated from v) is not finite: a neighbouring sample's v or time stamp "
            "is not",
        )
    return batch


# --- one log file, its row ---------------------------------------------------------------------

#: The keys of every row of :func:`check_file` and :func:`~wholebody.check.check_many`, in
#: order, readable log or not (``None`` where not applicable):
#:
#: - ``path`` (str): the log as given;
#: - ``error`` (str or None): why the log could not be read or checked (the exception
#:   ``TYPE: message`` for an unexpected failure or a Dask task that failed, ``worker
#:   process died ...`` for a worker that died twice);
#: - ``verdict`` (str): ``"consistent"``, ``"consistent_except_unreliable"`` (shown
#:   ``consistent*``), ``"inconsistent"``, ``"inconclusive"`` (too little evidence),
#:   ``"unchecked"`` (no sample could be checked: every sample flagged) or ``"error"``
#:   (``error`` says why);
#: - ``consistent`` (bool or None): True only for ``"consistent"``; None with an error;
#: - ``samples_in``, ``checked``, ``flagged`` (int): samples in the log, checked, and
#:   flagged (not checkable: non-finite values, bad quaternions, ...);
#: - ``max_residual_force_N`` [N], ``max_residual_moment_Nm`` [N m] (float): the largest
#:   Newton-Euler residual norms over the checked samples (None when none was checked);
#: - ``fraction_over_tolerance`` (float): share of the checked samples over tolerance
#:   (None when none was checked);
#: - ``cone_violations`` (int): sample-contact pairs outside their friction cone;
#: - ``share_checked`` (float): samples checked over samples in the log;
#: - ``bound_force_N`` [N], ``bound_moment_Nm`` [N m] (float or None): the median bound
#:   on the residual's error the check achieved (``Report.evidence``);
#: - ``diagnosis`` (str or None): the most likely cause of an inconsistency;
#: - ``ranking`` (dict or None): every cause the diagnosis tested, best first, with the named
#:   cause, the runner-up, the margin and the ties
#:   (:meth:`~wholebody.diagnosis.ranking.Ranking.to_dict`);
#: - ``text`` (str): the report summary as the CLI prints it, or ``PATH: error: ...``.
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
    "ranking",
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
    options: CheckOptions,
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
    from ..io.logs import read_log

    try:
        if calibration is None and Path(path).suffix.lower() in STREAMED_SUFFIXES:
            # Read in row groups / slices: memory does not grow with the log's length.
            report = check_log(robot, path, contacts, options)
        else:
            traj = read_log(path, mapping=recording, robot=robot, episode=episode)
            if calibration is not None:
                traj = calibration.apply(traj, robot)
                # Calibrated readings hold the fit's precision, not the engine's floor.
                options = options.replace(preset=options.preset or "physical")
            report = check_trajectory(robot, traj, contacts, options)
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
        "ranking": ranking_dict(report),
        "text": report.format_summary(),
    }
    if html:  # rendered where the report is, so only the page fragment travels back
        from .report_html import anchor, report_section

        return {k: row[k] for k in ROW_KEYS} | {"html": report_section(report, anchor(path))}
    return {k: row[k] for k in ROW_KEYS}
