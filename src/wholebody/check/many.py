"""Many logs: one summary table, on this machine's processes or on a Dask cluster.

:func:`check_many` checks each log with :func:`~wholebody.check.analysis.check_file` and
returns one row per log, every row with the same keys (:data:`ROW_KEYS`). Logs are
independent, so they spread over ``workers`` local processes, or over a Dask cluster when a
``dask.distributed.Client`` is given: the robot is scattered once to every worker
(``client.scatter(..., broadcast=True)``), so each worker holds one copy and every task reuses
it. To use a real cluster, start a scheduler and workers where the logs are readable (a shared
file system), each with wholebody installed, then::

    from wholebody.check.many import check_many, connect
    client = connect("tcp://scheduler-host:8786", timeout=10.0)
    rows = check_many(paths, robot, contacts, client=client)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..contacts import Contact
from ..errors import ClusterError
from ..parallel import ChunkFailure, default_workers, run_chunks
from ..robot.core import Robot
from .analysis import ROW_KEYS, check_file, error_row
from .options import CheckOptions, given_options

__all__ = [
    "ROW_KEYS",
    "check_many",
    "connect",
    "format_table",
    "auto_log_workers",
    "AUTO_MIN_BYTES",
]

#: Bytes of log files in all below which ``workers="auto"`` checks many logs in one process
#: (about :data:`wholebody.parallel.AUTO_MIN_SAMPLES` samples of a 35-dof robot in .npz, 870
#: bytes each): short logs check faster than worker processes start.
AUTO_MIN_BYTES = 40_000_000


def _size(path: str) -> int:
    p = Path(path)
    try:
        if p.is_dir():  # a LeRobot dataset
            return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
        return p.stat().st_size
    except OSError:
        return 0  # its row will say why it cannot be read


def auto_log_workers(paths: Sequence[str | Path]) -> int:
    """Processes for ``check_many(..., workers="auto")``: one per log up to the CPUs, or one
    in all for a single log or logs under :data:`AUTO_MIN_BYTES` in all."""
    names = [str(p) for p in paths]
    if len(names) < 2 or sum(_size(p) for p in names) < AUTO_MIN_BYTES:
        return 1
    return max(1, min(default_workers(), len(names)))


def _task(
    path: str,
    robot: Robot,
    contacts: Sequence[Contact],
    options: CheckOptions,
    out_dir: str | None,
    plot: bool,
    calibration: Any = None,
    recording: Any = None,
    episode: int = 0,
    html: bool = False,
) -> dict[str, Any]:
    return check_file(
        robot, path, contacts, options, out_dir, plot, calibration, recording, episode, html
    )


def connect(address: str, *, timeout: float = 10.0) -> Any:
    """A ``dask.distributed.Client`` connected to the scheduler at ``address``.

    Parameters
    ----------
    address : str
        The scheduler, ``tcp://host:8786`` (or ``host:8786``).
    timeout : float
        Seconds to wait for the connection, > 0.

    Raises
    ------
    ClusterError
        The scheduler cannot be reached within ``timeout`` (or the address is malformed); the
        message names the address and the timeout, the backend's error is the ``__cause__``.
    MissingDependencyError
        dask.distributed is not installed (the ``dask`` extra).
    InvalidArgumentError
        ``timeout`` not a positive number.
    """
    from ..errors import InvalidArgumentError, require

    if not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
        raise InvalidArgumentError(f"timeout must be a positive number of seconds, got {timeout!r}")
    distributed = require("dask.distributed", "dask", "Dask clusters")
    try:
        return distributed.Client(address, timeout=timeout)
    except Exception as exc:
        raise ClusterError(
            f"cannot reach the Dask scheduler at {address!r} within {timeout:g} s: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def check_many(
    paths: Sequence[str | Path],
    robot: Robot,
    contacts: Sequence[Contact],
    *,
    workers: int | str = 1,
    client: Any = None,
    out_dir: str | Path | None = None,
    plot: bool = False,
    options: CheckOptions | None = None,
    calibration: Any = None,
    recording: Any = None,
    episode: int = 0,
    html: bool = False,
) -> list[dict[str, Any]]:
    """Check many logs; one row (a dict) per log, in the order of ``paths``.

    A log that cannot be read or checked does not stop the others: its row carries the error.

    Parameters
    ----------
    paths : sequence of str or Path
        Log files (.npz, .csv, .parquet, .h5).
    robot : Robot
    contacts : sequence of Contact
        Declared contacts, matched to each log's contacts by name.
    workers : int or "auto"
        Local processes, one log at a time each (ignored with ``client``); ``"auto"``:
        :func:`auto_log_workers`.
    client : dask.distributed.Client, optional
        Run on this Dask cluster instead (the ``dask`` extra; see :func:`connect`).
    out_dir, plot
        Write each log's report (``STEM.report.json``, ``STEM.report.csv`` and with ``plot``
        ``STEM.report.png``) there.
    options : CheckOptions, optional
        How each log is checked (tolerances, the window, its own ``workers`` for the samples
        of each log, ...; defaults when omitted).
    calibration : Calibration, optional
        Sensor calibration applied to every log before it is checked
        (:meth:`wholebody.io.calibration.Calibration.apply`; a profile's ``calibration`` key).
    recording : RobotProfile, str or Path, optional
        For ROS 2 bags / MCAP files and LeRobot datasets among ``paths``: the profile (or its
        path) whose ``[recording]`` / ``[lerobot]`` section maps them (``docs/recordings.md``).
    episode : int
        The episode read from each LeRobot dataset.
    html : bool
        Also render each readable log's HTML section
        (:func:`wholebody.check.report_html.report_section`, the ``html`` extra) into one more
        key of its row, ``"html"``, for :func:`wholebody.check.report_html.many_html`.

    Returns
    -------
    list of dict
        Every row has exactly the keys :data:`ROW_KEYS` (documented there), ``None`` where
        not applicable; a log that could not be read or checked has the verdict ``"error"``
        and its ``error``.

    Raises
    ------
    ClusterError
        The robot cannot be sent to the Dask cluster (the scheduler went away).
    InvalidArgumentError
        ``options`` is not a :class:`~wholebody.check.CheckOptions`.
    """
    names = [str(p) for p in paths]
    options = given_options(options)
    out = None if out_dir is None else str(out_dir)
    contacts = list(contacts)
    if client is not None:
        return _on_dask(
            client,
            names,
            robot,
            contacts,
            options,
            out,
            plot,
            calibration,
            recording,
            episode,
            html,
        )
    processes = auto_log_workers(names) if workers == "auto" else workers
    chunks = [
        ((i, i + 1), (p, contacts, options, out, plot, calibration, recording, episode, html))
        for i, p in enumerate(names)
    ]
    results = run_chunks(robot, check_file, chunks, processes, item="log")  # type: ignore[arg-type]
    return [
        error_row(p, r.error) if isinstance(r, ChunkFailure) else r
        for p, r in zip(names, results, strict=True)
    ]


def _on_dask(
    client: Any,
    paths: list[str],
    robot: Robot,
    contacts: list[Contact],
    options: CheckOptions,
    out: str | None,
    plot: bool,
    calibration: Any = None,
    recording: Any = None,
    episode: int = 0,
    html: bool = False,
) -> list[dict[str, Any]]:
    try:
        robot_future = client.scatter(robot, broadcast=True, hash=False)  # a fresh key per call
        futures = client.map(
            _task,
            paths,
            robot=robot_future,
            contacts=contacts,
            options=options,
            out_dir=out,
            plot=plot,
            calibration=calibration,
            recording=recording,
            episode=episode,
            html=html,
            pure=False,
        )
    except Exception as exc:
        address = getattr(getattr(client, "scheduler", None), "address", "(unknown address)")
        raise ClusterError(
            f"cannot send the work to the Dask cluster at {address}: {type(exc).__name__}: {exc}"
        ) from exc
    rows = []
    for path, future in zip(paths, futures, strict=True):
        try:
            rows.append(future.result())
        except Exception as exc:  # a task that failed on the cluster: that log's row says why
            rows.append(error_row(path, f"Dask task failed: {type(exc).__name__}: {exc}"))
    return rows


_VERDICT_SHOWN = {
    "consistent": "consistent",
    "inconsistent": "INCONSISTENT",
    "unchecked": "UNCHECKED",
    "consistent_except_unreliable": "consistent*",
    "inconclusive": "INCONCLUSIVE",
}


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """One line per log (samples checked and flagged, largest residual force, verdict or the
    error), then the count of each outcome."""
    lines = [f"{'log':36s} {'checked':>8s} {'flagged':>8s} {'max |f_r| [N]':>14s}  verdict"]
    for r in rows:
        name = Path(r["path"]).name
        if r["verdict"] == "error":
            lines.append(f"{name:36s} {'-':>8s} {'-':>8s} {'-':>14s}  ERROR: {r['error'][:60]}")
            continue
        force = r["max_residual_force_N"]
        shown = "-" if force is None else f"{force:.3g}"
        lines.append(
            f"{name:36s} {r['checked']:8d} {r['flagged']:8d} {shown:>14s}  "
            f"{_VERDICT_SHOWN[r['verdict']]}"
        )
    count = {
        v: sum(r["verdict"] == v for r in rows)
        for v in ("consistent", "inconsistent", "unchecked", "inconclusive", "error")
    }
    # "consistent except samples whose differentiated accelerations are unreliable" (*)
    count["consistent"] += sum(r["verdict"] == "consistent_except_unreliable" for r in rows)
    unchecked = f"{count['unchecked']} unchecked, " if count["unchecked"] else ""
    if count["inconclusive"]:
        unchecked += f"{count['inconclusive']} inconclusive, "
    lines.append(
        f"{len(rows)} logs: {count['consistent']} consistent, "
        f"{count['inconsistent']} inconsistent, {unchecked}{count['error']} unreadable"
    )
    return "\n".join(lines)
