"""One entry point for every recording kind, for the command line and ``wholebody.io``: tell
a recording from a log file by its path, and read it with the reader its kind needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import LogFormatError
from ...robot.core import Robot
from ...trajectory import Trajectory

__all__ = ["recording_kind", "read_recording", "BAG_SUFFIXES"]

#: File suffixes read as ROS bags (a folder holding ``metadata.yaml`` is a ROS 2 bag too).
BAG_SUFFIXES = (".mcap", ".db3", ".bag")


def recording_kind(path: str | Path) -> str | None:
    """``"rosbag"``, ``"lerobot"`` or None (not a recording: a log file, or nothing).

    A ``.mcap`` / ``.db3`` / ``.bag`` file or a folder with ``metadata.yaml`` is a bag; a folder
    with ``meta/info.json`` is a LeRobot dataset. Only the path is looked at, no file is read.
    """
    p = Path(path)
    if p.is_dir():
        if (p / "metadata.yaml").is_file():
            return "rosbag"
        if (p / "meta" / "info.json").is_file():
            return "lerobot"
        return None
    return "rosbag" if p.suffix.lower() in BAG_SUFFIXES else None


def read_recording(
    path: str | Path, mapping: Any, robot: Robot | None = None, *, episode: int = 0
) -> Trajectory:
    """Read a bag or one episode of a dataset, whichever :func:`recording_kind` says it is.

    Parameters
    ----------
    path : str or Path
        A ROS 2 bag / MCAP file, or a LeRobot-style dataset folder.
    mapping : RobotProfile, str or Path, or a section as an object or a dict
        A profile (its ``[recording]`` or ``[lerobot]`` section is used), or the section.
    robot : Robot, optional
        Needed to convert wrenches from sensor frames (default: the profile's robot).
    episode : int
        The dataset episode (LeRobot only).

    Raises
    ------
    LogFormatError
        The path is neither kind of recording.
    """
    kind = recording_kind(path)
    if kind == "rosbag":
        from .rosbag import read_rosbag  # the readers on first use of their kind

        return read_rosbag(path, mapping, robot)
    if kind == "lerobot":
        from .lerobot import read_lerobot

        return read_lerobot(path, mapping, episode=episode, robot=robot)
    raise LogFormatError(
        f"{path}: not a recording (a ROS bag: {', '.join(BAG_SUFFIXES)} or a folder with "
        "metadata.yaml; a LeRobot dataset: a folder with meta/info.json)"
    )
