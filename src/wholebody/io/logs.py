"""Reading and writing logs as :class:`~wholebody.trajectory.Trajectory` objects.

``.npz`` and ``.csv`` in the core, ``.parquet`` and ``.h5`` with the ``parquet`` / ``hdf5``
extras; the schema is in ``docs/log-format.md``. The formats themselves live in
:mod:`wholebody.io.logfiles` (fields only); this module adds the ``Trajectory`` on top:

- :func:`open_log` opens a log and reads its names, sizes and metadata; :meth:`LogReader.read`
  reads a range of samples and :meth:`LogReader.chunks` iterates over the log in ranges.
  Parquet (by row groups) and HDF5 (by slices) read only the range asked for, so a streamed
  check's memory does not grow with the log's length; ``.npz`` loads each field used whole on
  first access (unused fields are never read) and ``.csv`` is parsed whole at opening.
- :func:`read_log` is ``Trajectory.load`` for a log file, and reads a recording too; a log is
  written by ``Trajectory.save``.

A file-level problem (missing file, truncated file, missing field, wrong shape or kind,
unknown suffix) raises :class:`~wholebody.errors.LogFormatError` naming the file and the
field (:class:`~wholebody.errors.LogFileError` when the path cannot be opened); writing raises
:class:`~wholebody.errors.OutputError` naming the path and the reason. Sample-level problems
(NaN rows) are left in the arrays for the checks to flag.

The log format (``docs/log-format.md``):

.. include:: ../../../docs/log-format.md
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError
from ..robot.core import Robot
from .logfiles import SUFFIXES, FieldReader, open_fields

if TYPE_CHECKING:
    from ..trajectory import Trajectory

# The Trajectory is imported where it is used: it reads its files through ``io.logfiles``, and
# importing that runs this package's face, which imports this module, so the first import of
# ``wholebody.trajectory`` reaches here before its class is defined.

__all__ = ["open_log", "LogReader", "read_log", "SUFFIXES"]


class LogReader:
    """A log opened for reading in ranges of samples. Use :func:`open_log` to make one.

    Names, sizes and metadata are read at opening; samples are read by :meth:`read` and
    :meth:`chunks`. Close it (or use it in a ``with`` block) to release the file.

    Attributes
    ----------
    source : str
        The path, as given.
    n_samples : int
        Number of samples N in the log.
    joint_names, contact_names, external_frames : tuple of str
        Names of the joint columns, the contacts and the frames of known external wrenches.
    metadata : dict
        The log's metadata (``time_origin`` added when the file's times are datetimes).
    accelerations_estimated : bool
        True when the log's ``a`` was estimated from ``v``.
    has_accelerations, has_torques : bool
        Whether the log holds ``a`` and ``tau``.
    has_active : bool
        Whether the log holds a contact schedule (``contact_active``; each chunk read then
        carries its rows of it).
    """

    def __init__(self, fields: FieldReader, _convert: tuple[Any, Any] | None = None):
        self._fields = fields
        self._convert = _convert

    source = property(lambda self: self._fields.source, doc="The path, as given.")
    n_samples = property(lambda self: self._fields.n_samples, doc="Number of samples.")
    joint_names = property(lambda self: self._fields.joint_names, doc="Joint column names.")
    contact_names = property(lambda self: self._fields.contact_names, doc="Contact names.")
    external_frames = property(
        lambda self: self._fields.external_frames, doc="Frames of the known external wrenches."
    )
    metadata = property(lambda self: dict(self._fields.metadata), doc="A copy of the metadata.")
    accelerations_estimated = property(
        lambda self: self._fields.accelerations_estimated,
        doc="True when ``a`` was estimated from ``v``.",
    )
    has_accelerations = property(
        lambda self: self._fields.has_accelerations,
        doc="Whether the log holds accelerations ``a``.",
    )
    has_torques = property(
        lambda self: self._fields.has_torques, doc="Whether the log holds joint torques ``tau``."
    )
    has_active = property(
        lambda self: self._fields.has_active,
        doc="Whether the log holds a contact schedule ``contact_active``.",
    )
    has_points = property(
        lambda self: (
            bool(
                self._fields.has_points
                or self._fields.contact_points_local is not None
                or self._fields.external_points_local is not None
            )
            and self._convert is None
        ),
        doc="Whether the trajectories read hold wrenches about stated points (point fields; "
        "False once :meth:`at_frame_origins` converts them).",
    )

    def __len__(self) -> int:
        return int(self._fields.n_samples)

    def __repr__(self) -> str:
        return (
            f"LogReader({self.source!r}, n_samples={self.n_samples}, "
            f"joints={len(self.joint_names)}, contacts={list(self.contact_names)})"
        )

    def read(self, start: int = 0, stop: int | None = None) -> Trajectory:
        """Samples ``start`` to ``stop - 1`` (all by default) as a :class:`Trajectory`.

        The times are checked to increase across ``start`` too (against sample
        ``start - 1``), with sample numbers counted from the start of the log.

        Raises
        ------
        LogFormatError
            An empty or out-of-range ``[start, stop)``, or a field that cannot be read.
        """
        from ..trajectory import Trajectory

        traj = Trajectory.from_fields(self._fields.read(start, stop))
        if self._convert is not None:
            return traj.at_frame_origins(*self._convert)
        return traj

    def at_frame_origins(
        self, robot: Any, contacts: Sequence[Any] | Mapping[str, str] | None = None
    ) -> LogReader:
        """A reader of the same open file whose :meth:`read` and :meth:`chunks` give every
        wrench about its frame's origin (:meth:`Trajectory.at_frame_origins`, chunk by
        chunk: the result equals converting the whole log). Closing either closes the file.

        Parameters
        ----------
        robot : Robot
        contacts : sequence of Contact, or mapping {contact name: frame name}, optional
            As :meth:`Trajectory.at_frame_origins`.
        """
        return LogReader(self._fields, (robot, contacts))

    def chunks(self, size: int) -> Iterator[tuple[int, int, Trajectory]]:
        """Iterate over the log in consecutive ranges of at most ``size`` samples.

        Yields
        ------
        start, stop : int
            The range ``[start, stop)`` of sample indices in the log.
        trajectory : Trajectory
            Those samples (``len == stop - start``).
        """
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidArgumentError(f"chunks: size must be a positive integer, got {size!r}")
        N = self.n_samples
        for start in range(0, N, size):
            stop = min(start + size, N)
            yield start, stop, self.read(start, stop)

    def close(self) -> None:
        """Release the file."""
        self._fields.close()

    def __enter__(self) -> LogReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open_log(path: str | Path) -> LogReader:
    """Open a log for reading in ranges of samples; the format follows the suffix.

    Parameters
    ----------
    path : str or Path
        A ``.npz``, ``.csv``, ``.parquet``, ``.h5`` or ``.hdf5`` log (``docs/log-format.md``).

    Returns
    -------
    LogReader
        Names, sizes and metadata are read; samples are read on demand.

    Raises
    ------
    LogFileError
        The path is missing, a directory, not a regular file, or unreadable.
    LogFormatError
        The file is not a valid log; the message names the file and the field or column.

    Examples
    --------
    >>> with open_log("walk.parquet") as log:                    # doctest: +SKIP
    ...     for start, stop, part in log.chunks(10_000):
    ...         report = check_trajectory(robot, part, contacts)
    """
    return LogReader(open_fields(path))


def read_log(
    path: str | Path,
    *,
    mapping: Any = None,
    robot: Robot | None = None,
    episode: int = 0,
) -> Trajectory:
    """Read a whole log into a :class:`Trajectory` (same as :meth:`Trajectory.load` for log
    files); a recording is read through :mod:`wholebody.io.recordings`.

    Parameters
    ----------
    path : str or Path
        A log file (``.npz``, ``.csv``, ``.parquet``, ``.h5``), a ROS 2 bag / MCAP file
        (``.mcap``, ``.db3``, ``.bag`` or a bag folder) or a LeRobot-style dataset folder.
    mapping : RobotProfile, str or Path, or a mapping section, optional
        Required for a recording: the profile (or its path) whose ``[recording]`` or
        ``[lerobot]`` section maps topics or columns to fields (``docs/recordings.md``).
        Ignored for log files.
    robot : Robot, optional
        For a recording: converts sensor-frame wrenches (default: the profile's robot).
    episode : int
        For a LeRobot dataset: which episode.

    Raises
    ------
    InvalidArgumentError
        A recording without ``mapping``.
    LogFormatError, LogFileError
        As :meth:`Trajectory.load`, and for recordings as :mod:`wholebody.io.recordings`.
    """
    from ..trajectory import Trajectory

    if Path(path).suffix.lower() in SUFFIXES and not Path(path).is_dir():
        return Trajectory.load(path)  # a log file: no recording has these suffixes
    from .recordings import read_recording, recording_kind

    kind = recording_kind(path)
    if kind is None:
        return Trajectory.load(path)
    if mapping is None:
        raise InvalidArgumentError(
            f"{path} is a {'ROS bag' if kind == 'rosbag' else 'LeRobot dataset'}: give the "
            "profile that maps its topics or columns to fields (mapping=..., or --config on "
            "the command line; docs/recordings.md)"
        )
    return read_recording(path, mapping, robot, episode=episode)
