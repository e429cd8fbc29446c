"""Real recordings as :class:`~wholebody.trajectory.Trajectory` objects: ROS 2 bags and MCAP
files (``pip install 'wholebody[ros]'``) and LeRobot-style Parquet datasets (``pip install
'wholebody[parquet]'``).

Which topic or column fills which field is a profile section (``[recording]``, ``[lerobot]``)
or a plain mapping with the same keys; every reader converts to wholebody's conventions once
(base quaternion x-y-z-w, base twist in the base frame, contact wrenches in world axes at each
contact frame's origin) and aligns streams with their own stamps onto one time base.

Example
-------
>>> from wholebody.io.recordings import read_rosbag, lerobot_episodes
>>> traj = read_rosbag("run_bag", "lab_profile.toml")  # doctest: +SKIP
>>> for traj in lerobot_episodes("dataset", {"q": "observation.state[0:12]",
...                                          "v": "observation.velocity[0:12]"}):
...     print(len(traj))  # doctest: +SKIP

The recipe (``docs/recordings.md``):

.. include:: ../../../../docs/recordings.md
"""

from .dispatch import BAG_SUFFIXES, read_recording, recording_kind
from .lerobot import LerobotDataset, lerobot_episodes, read_lerobot
from .mapping import ColumnSlice, LerobotMapping, RosbagMapping, WrenchSource
from .rosbag import RosbagRecording, read_rosbag, read_rosbag_recording
from .timing import TopicTimes
from .wrenches import wrench_at_contact_in_world

__all__ = [
    "read_recording",
    "recording_kind",
    "BAG_SUFFIXES",
    "read_rosbag",
    "read_rosbag_recording",
    "RosbagRecording",
    "read_lerobot",
    "lerobot_episodes",
    "LerobotDataset",
    "RosbagMapping",
    "LerobotMapping",
    "WrenchSource",
    "ColumnSlice",
    "TopicTimes",
    "wrench_at_contact_in_world",
]
