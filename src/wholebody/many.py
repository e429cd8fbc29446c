"""Many logs: one summary table, on this machine's processes or on a Dask cluster.

:func:`check_many` checks each log with :func:`~wholebody.analysis.check_trajectory` and
returns one row per log. Logs are independent, so they spread over ``workers`` local
processes, or over a Dask cluster when a ``dask.distributed.Client`` is given: the robot is
scattered once to every worker (``client.scatter(..., broadcast=True)``), so each worker holds
one copy and every task reuses it. To use a real cluster, start a scheduler and workers where
the logs are readable (a shared file system), each with wholebody installed, then::

    from dask.distributed import Client
    client = Client("tcp://scheduler-host:8786")
    rows = check_many(paths, robot, contacts, client=client)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .contacts import Contact
from .parallel import ChunkFailure, run_chunks
from .robot import Robot

__all__ = ["check_many", "format_table"]


def _check_file(robot: Robot, path: str, contacts: Sequence[Contact], options: dict[str, Any],
                out_dir: str | None, plot: bool) -> dict[str, Any]:
    """Check one log; never raises: a log that cannot be read is a row with its error."""
    from .analysis import check_trajectory
    from .errors import WholebodyError
    from .trajectory import Trajectory

    try:
        report = check_trajectory(robot, Trajectory.load(path), contacts, **options)
    except (WholebodyError, OSError, ValueError) as exc:
        return {"path": str(path), "error": str(exc), "consistent": None, "text": f"{path}: error: {exc}"}
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        stem = Path(path).stem
        report.to_json(out / f"{stem}.report.json")
        report.to_csv(out / f"{stem}.report.csv")
        if plot:
            report.plot(out / f"{stem}.report.png")
            import matplotlib.pyplot as plt

            plt.close("all")
    s = report.summary()
    return {
        "path": str(path), "error": None, "consistent": report.consistent,
        "samples_in": s["samples"]["in"], "checked": s["samples"]["checked"], "flagged": s["samples"]["flagged"],
        "max_residual_force_N": s["residual_force_N"]["max"], "max_residual_moment_Nm": s["residual_moment_Nm"]["max"],
        "fraction_over_tolerance": s["fraction_over_tolerance"],
        "cone_violations": sum(c["violations"] for c in s["contacts"].values()),
        "diagnosis": report.diagnosis[0].message if report.diagnosis else "",
        "text": report.format_summary(),
    }


def _task(path: str, robot: Robot, contacts: Sequence[Contact], options: dict[str, Any],
          out_dir: str | None, plot: bool) -> dict[str, Any]:
    return _check_file(robot, path, contacts, options, out_dir, plot)


def check_many(
    paths: Sequence[str | Path],
    robot: Robot,
    contacts: Sequence[Contact],
    *,
    workers: int = 1,
    client: Any = None,
    out_dir: str | Path | None = None,
    plot: bool = False,
    options: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Check many logs; one row (a dict) per log, in the order of ``paths``.

    Parameters
    ----------
    workers : int
        Local processes (ignored with ``client``).
    client : dask.distributed.Client, optional
        Run on this Dask cluster instead (the ``dask`` extra).
    out_dir, plot
        Write each log's report (and figure) there.
    options : dict, optional
        Passed to :func:`~wholebody.analysis.check_trajectory` (tolerances, its own
        ``workers`` for the samples of each log, ...).

    Returns
    -------
    list of dict
        ``path``, ``consistent``, ``samples_in``, ``checked``, ``flagged``,
        ``max_residual_force_N``, ``max_residual_moment_Nm``, ``fraction_over_tolerance``,
        ``cone_violations``, ``diagnosis``, ``text`` (the report summary), and ``error`` (a log
        that could not be read: its row says why, the others are still checked).
    """
    paths = [str(p) for p in paths]
    options = dict(options or {})
    out = None if out_dir is None else str(out_dir)
    contacts = list(contacts)
    if client is not None:
        robot_future = client.scatter(robot, broadcast=True)
        futures = client.map(_task, paths, robot=robot_future, contacts=contacts, options=options,
                             out_dir=out, plot=plot, pure=False)
        return client.gather(futures)
    chunks = [((i, i + 1), (p, contacts, options, out, plot)) for i, p in enumerate(paths)]
    results = run_chunks(robot, _check_file, chunks, workers)
    return [
        {"path": p, "error": r.error, "consistent": None, "text": f"{p}: error: {r.error}"}
        if isinstance(r, ChunkFailure) else r
        for p, r in zip(paths, results)
    ]


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """One line per log: samples, largest residual, verdict (or the error)."""
    lines = [f"{'log':36s} {'checked':>8s} {'flagged':>8s} {'max |f_r| [N]':>14s}  verdict"]
    for r in rows:
        name = Path(r["path"]).name
        if r.get("error"):
            lines.append(f"{name:36s} {'-':>8s} {'-':>8s} {'-':>14s}  ERROR: {r['error'][:60]}")
            continue
        verdict = "consistent" if r["consistent"] else "INCONSISTENT"
        lines.append(f"{name:36s} {r['checked']:8d} {r['flagged']:8d} {r['max_residual_force_N']:14.3g}  {verdict}")
    good = [r for r in rows if not r.get("error")]
    lines.append(f"{len(rows)} logs: {sum(bool(r['consistent']) for r in good)} consistent, "
                 f"{sum(not r['consistent'] for r in good)} inconsistent, {len(rows) - len(good)} unreadable")
    return "\n".join(lines)
