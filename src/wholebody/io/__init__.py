"""Logs in and out: log files, recordings and robot profiles, as
:class:`~wholebody.trajectory.Trajectory` objects.

- :mod:`wholebody.io.logs`: :func:`open_log` (a log read in ranges of samples) and
  :func:`read_log` (a whole log file, as ``Trajectory.load``, or a recording); a log is written
  by ``Trajectory.save``.
- :mod:`wholebody.io.logfiles`: the file formats (``.npz``, ``.csv``, ``.parquet``, ``.h5``),
  read safely and lazily as fields; they know no ``Trajectory``.
- :mod:`wholebody.io.recordings`: ROS 2 bags / MCAP and LeRobot-style datasets mapped by a
  profile and aligned on one time base.
- :mod:`wholebody.io.profile`: strict TOML robot profiles (robot, frames, contacts, mappings).
- :mod:`wholebody.io.calibration`: sensor calibrations (offsets, gains, mount rotations) applied
  to a log, and their TOML files.
"""

from .logs import SUFFIXES, LogReader, open_log, read_log

__all__ = ["open_log", "LogReader", "read_log", "SUFFIXES"]
