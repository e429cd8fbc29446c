"""Logs in and out: log files, recordings and robot profiles, as
:class:`~wholebody.trajectory.Trajectory` objects.

- :mod:`wholebody.io.logs`: :func:`open_log` (a log read in ranges of samples), :func:`read_log`
  and :func:`write_log` (``Trajectory.load`` / ``Trajectory.save``, and recordings).
- :mod:`wholebody.io.logfiles`: the file formats (``.npz``, ``.csv``, ``.parquet``, ``.h5``),
  read safely and lazily as fields; they know no ``Trajectory``.
- :mod:`wholebody.io.recordings`: ROS 2 bags / MCAP and LeRobot-style datasets mapped by a
  profile and aligned on one time base.
- :mod:`wholebody.io.profile`: strict TOML robot profiles (robot, frames, contacts, mappings).

The names below are imported on first use: :mod:`wholebody.trajectory` reads its files through
:mod:`wholebody.io.logfiles`, and importing that must not import the ``Trajectory`` back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .logs import SUFFIXES, LogReader, open_log, read_log, write_log

# name -> module of this package, imported on first access (PEP 562).
_LAZY = {
    "open_log": "logs",
    "LogReader": "logs",
    "read_log": "logs",
    "write_log": "logs",
    "SUFFIXES": "logs",
}

__all__ = ["open_log", "LogReader", "read_log", "write_log", "SUFFIXES"]


__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)
