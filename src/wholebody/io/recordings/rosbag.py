"""ROS 2 bags (sqlite3 or MCAP storage), bare ``.mcap`` files and ROS 1 bags as a
:class:`~wholebody.trajectory.Trajectory`, through ``rosbags`` (``pip install
'wholebody[ros]'``; no ROS installation needed).

Topics are mapped to fields by the profile's ``[recording]`` section
(:class:`~wholebody.io.recordings.mapping.RosbagMapping`); each topic keeps its own stamps, and
every stream is interpolated onto one time base (``docs/recordings.md``).

Example
-------
>>> from wholebody.io.recordings import read_rosbag
>>> mapping = {"joint_states": "/joint_states", "base_pose": "/odom"}
>>> traj = read_rosbag("run.mcap", mapping)  # doctest: +SKIP
>>> traj.metadata["topic_times"]["/odom"]["receive_delay"]  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import (
    LogFileError,
    LogFormatError,
    ProfileError,
    RecordingError,
    StateWarning,
    require,
)
from ...robot.core import Robot
from ...trajectory import Trajectory
from ._assemble import AlignedWrench, assemble, contact_frames_of, twist_in_base
from ._rosbag_schema import check_bag_files, check_definition, time_base
from .mapping import RosbagMapping, WrenchSource
from .timing import (
    TopicTimes,
    base_twist_from_poses,
    check_coverage,
    differentiate,
    gap_mask,
    interpolate_linear,
    interpolate_quaternions,
    sorted_stream,
)

__all__ = ["read_rosbag", "read_rosbag_recording", "RosbagRecording", "MESSAGE_TYPES"]

Array = NDArray[np.float64]

#: Message types accepted per mapped field.
MESSAGE_TYPES: dict[str, tuple[str, ...]] = {
    "joint_states": ("sensor_msgs/msg/JointState",),
    "base_pose": (
        "nav_msgs/msg/Odometry",
        "geometry_msgs/msg/PoseStamped",
        "geometry_msgs/msg/PoseWithCovarianceStamped",
    ),
    "base_twist": (
        "geometry_msgs/msg/TwistStamped",
        "geometry_msgs/msg/TwistWithCovarianceStamped",
    ),
    "imu": ("sensor_msgs/msg/Imu",),
    "wrench": ("geometry_msgs/msg/WrenchStamped", "geometry_msgs/msg/Wrench"),
}
_EXTRAPOLATION_HINT = (
    "; set crop = true to cut the time base to the span every topic covers, or raise tolerance"
)


@dataclass(frozen=True)
class RosbagRecording:
    """A bag read onto one time base, with the raw stamps of every topic.

    Attributes
    ----------
    trajectory : Trajectory
        The aligned log (wholebody's conventions; ``metadata["topic_times"]`` summarises the
        stamps, ``metadata["time_origin"]`` is the time base's first stamp, ISO 8601 UTC).
    topic_times : dict of str to TopicTimes
        Per topic, its header and receive stamps [s from the time origin]: feed these to a
        lag estimate.
    imu : dict of str to ndarray, or None
        With an ``imu`` topic: ``"orientation"`` (N, 4) x-y-z-w, ``"angular_velocity"`` (N, 3)
        [rad/s] and ``"linear_acceleration"`` (N, 3) [m/s^2], in the IMU frame
        (``metadata["imu_frame"]``), on the time base.
    """

    trajectory: Trajectory
    topic_times: dict[str, TopicTimes]
    imu: dict[str, Array] | None = None


@dataclass
class _Stream:
    topic: str
    kind: str
    msgtype: str
    header: list[int] = field(default_factory=list)
    receive: list[int] = field(default_factory=list)
    rows: list[Any] = field(default_factory=list)
    frames: set[str] = field(default_factory=set)


def _ns(stamp: Any) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def _xyz(v: Any) -> list[float]:
    return [v.x, v.y, v.z]


def _pose(p: Any) -> list[float]:
    o = p.orientation
    return _xyz(p.position) + [o.x, o.y, o.z, o.w]


def _row(msgtype: str, msg: Any) -> tuple[Any, str]:
    """The numbers of a message and the frame they are in."""
    if msgtype == "sensor_msgs/msg/JointState":
        return (list(msg.name), msg.position, msg.velocity, msg.effort), msg.header.frame_id
    if msgtype == "nav_msgs/msg/Odometry":
        tw = msg.twist.twist
        return _pose(msg.pose.pose) + _xyz(tw.linear) + _xyz(tw.angular), msg.child_frame_id
    if msgtype == "geometry_msgs/msg/PoseStamped":
        return _pose(msg.pose), msg.header.frame_id
    if msgtype == "geometry_msgs/msg/PoseWithCovarianceStamped":
        return _pose(msg.pose.pose), msg.header.frame_id
    if msgtype.startswith("geometry_msgs/msg/Twist"):
        tw = msg.twist if msgtype.endswith("TwistStamped") else msg.twist.twist
        return _xyz(tw.linear) + _xyz(tw.angular), msg.header.frame_id
    if msgtype == "geometry_msgs/msg/WrenchStamped":
        return _xyz(msg.wrench.force) + _xyz(msg.wrench.torque), msg.header.frame_id
    if msgtype == "geometry_msgs/msg/Wrench":  # no header: no frame, receive time
        return _xyz(msg.force) + _xyz(msg.torque), ""
    o = msg.orientation  # sensor_msgs/msg/Imu
    row = [o.x, o.y, o.z, o.w] + _xyz(msg.angular_velocity) + _xyz(msg.linear_acceleration)
    return row, msg.header.frame_id


def _fields(m: RosbagMapping) -> dict[str, str]:
    """topic -> the field kind it fills (a topic mapped twice must have one kind)."""
    out: dict[str, str] = {}
    pairs = [("joint_states", m.joint_states), ("base_pose", m.base_pose)]
    pairs += [("base_twist", m.base_twist), ("imu", m.imu)]
    pairs += [("wrench", w.source) for w in m.wrenches]
    for kind, topic in pairs:
        if topic is None:
            continue
        if out.get(topic, kind) != kind:
            raise ProfileError(f"[recording]: topic {topic!r} is mapped as {out[topic]} and {kind}")
        out[topic] = kind
    return out


def _read_streams(path: Path, kinds: Mapping[str, str]) -> dict[str, _Stream]:
    highlevel = require("rosbags.highlevel", "ros", "ROS 2 bags and MCAP files")
    typesys = require("rosbags.typesys", "ros", "ROS 2 bags and MCAP files")
    if not path.exists():
        raise LogFileError(f"{path}: no such bag or MCAP file")
    check_bag_files(path)  # a bag folder reads only its own files
    try:
        reader = highlevel.AnyReader(
            [path], default_typestore=typesys.get_typestore(typesys.Stores.LATEST)
        )
        reader.open()
    except Exception as exc:  # rosbags raises its own classes, OSError and more
        raise LogFormatError(f"{path}: not a readable ROS bag or MCAP file: {exc}") from exc
    try:
        available: dict[str, set[str]] = {}
        for c in reader.connections:
            available.setdefault(c.topic, set()).add(c.msgtype)
        streams: dict[str, _Stream] = {}
        for topic, kind in kinds.items():
            if topic not in available:
                listing = ", ".join(f"{t} ({'/'.join(sorted(m))})" for t, m in available.items())
                raise RecordingError(
                    f"{path}: no topic {topic!r} (mapped as {kind}); topics: {listing or 'none'}",
                    topic,
                )
            wrong = sorted(available[topic] - set(MESSAGE_TYPES[kind]))
            if wrong:
                raise RecordingError(
                    f"{path}: topic {topic!r} has message type {wrong[0]}; as {kind} it must be "
                    f"{' or '.join(MESSAGE_TYPES[kind])}",
                    topic,
                )
            streams[topic] = _Stream(topic, kind, next(iter(available[topic])))
            check_definition(reader.typestore.fielddefs, streams[topic].msgtype, topic, path)
        connections = [c for c in reader.connections if c.topic in streams]
        for con, receive_ns, raw in reader.messages(connections=connections):
            s = streams[con.topic]
            try:
                msg = reader.deserialize(raw, con.msgtype)
            except Exception as exc:
                raise RecordingError(
                    f"{path}: topic {con.topic!r}: message {len(s.rows)} does not decode as "
                    f"{con.msgtype}: {exc}",
                    con.topic,
                ) from exc
            try:
                row, frame = _row(con.msgtype, msg)
            except (AttributeError, TypeError, ValueError) as exc:  # a non-standard definition
                raise RecordingError(
                    f"{path}: topic {con.topic!r}: message {len(s.rows)} of {con.msgtype} lacks "
                    f"a field the reader uses: {exc}",
                    con.topic,
                ) from exc
            # An unstamped message (geometry_msgs/msg/Wrench) is taken at its receive time.
            s.header.append(_ns(msg.header.stamp) if hasattr(msg, "header") else 0)
            s.receive.append(int(receive_ns))
            s.rows.append(row)
            s.frames.add(frame)
    finally:
        reader.close()
    for s in streams.values():
        if not s.rows:
            raise RecordingError(f"{path}: topic {s.topic!r} has no messages", s.topic)
    return streams


def _stamps(s: _Stream, which: str) -> tuple[NDArray[np.int64], str]:
    header = np.asarray(s.header, dtype=np.int64)
    if which == "receive" or not header.any():
        return np.asarray(s.receive, dtype=np.int64), "receive"
    if not header.all():
        raise RecordingError(
            f"topic {s.topic!r}: {int((header == 0).sum())} of {header.size} messages have an "
            "unset (zero) header stamp; set stamps = 'receive' to use the receive times",
            s.topic,
        )
    return header, "header"


def _joint_arrays(
    s: _Stream, joints: tuple[str, ...] | None
) -> tuple[tuple[str, ...], Array, Array | None, Array | None]:
    names = joints or tuple(s.rows[0][0])
    n, nj = len(s.rows), len(names)
    P = np.empty((n, nj))
    V: Array | None = np.empty((n, nj))
    E: Array | None = np.empty((n, nj))
    last: list[str] = []
    idx = np.arange(nj)
    for k, (msg_names, pos, vel, eff) in enumerate(s.rows):
        if msg_names != last:
            where = {name: i for i, name in enumerate(msg_names)}
            missing = [j for j in names if j not in where]
            if missing:
                raise RecordingError(
                    f"topic {s.topic!r}: message {k} has no joint {missing[0]!r} "
                    f"(it names {msg_names})",
                    s.topic,
                )
            idx, last = np.array([where[j] for j in names]), msg_names
        if len(pos) != len(msg_names):
            raise RecordingError(
                f"topic {s.topic!r}: message {k} has {len(pos)} positions for "
                f"{len(msg_names)} names",
                s.topic,
            )
        P[k] = np.asarray(pos)[idx]
        if V is not None:
            V = V if len(vel) == len(msg_names) else None
            if V is not None:
                V[k] = np.asarray(vel)[idx]
        if E is not None:
            E = E if len(eff) == len(msg_names) else None
            if E is not None:
                E[k] = np.asarray(eff)[idx]
    return names, P, V, E


def read_rosbag_recording(
    path: str | Path, mapping: Any, robot: Robot | None = None
) -> RosbagRecording:
    """Read a bag onto one time base, keeping every topic's raw stamps.

    Parameters
    ----------
    path : str or Path
        A ROS 2 bag folder (sqlite3 or MCAP storage), a ``.mcap`` or ``.db3`` file, or a ROS 1
        ``.bag``.
    mapping : RobotProfile, RosbagMapping, mapping, str or Path
        A profile (its ``[recording]`` section, robot and contacts), a profile's path, a
        :class:`RosbagMapping`, or a mapping with the ``[recording]`` keys.
    robot : Robot, optional
        Needed to convert wrenches from sensor frames (default: the profile's robot).

    Returns
    -------
    RosbagRecording
        The trajectory: ``time`` [s] from the time origin; ``q`` base position (world) and
        quaternion x-y-z-w, joints in ``joint_names`` order; ``v`` base twist in the base
        frame, joints; ``tau`` from the efforts; contact wrenches in world axes at each
        contact frame's origin [N, N m]. And the raw stamps per topic.

    Raises
    ------
    MissingDependencyError
        ``rosbags`` is not installed (``pip install 'wholebody[ros]'``).
    LogFileError
        The path does not exist.
    RecordingError
        A missing topic, a wrong message type, a joint missing from a message, repeated or
        partly unset stamps; ``.name`` is the topic.
    ExtrapolationError
        A topic that does not cover the time base within ``tolerance``.
    ProfileError
        A malformed mapping.
    """
    m, robot, profile = _recording_mapping(mapping, robot)
    path = Path(path)
    streams = _read_streams(path, _fields(m))
    used: dict[str, str] = {}
    stamps: dict[str, NDArray[np.int64]] = {}
    for topic, s in streams.items():
        stamps[topic], used[topic] = _stamps(s, m.stamps)
    base_ns, cropped, outliers = time_base(m, {t: np.sort(x) for t, x in stamps.items()}, str(path))
    tb = _TimeBase(m, stamps, base_ns, outliers)
    metadata: dict[str, Any] = {"recording": "rosbag", "source": str(path)}
    names, qj, vj, tau, estimated = _joints(m, streams[m.joint_states], tb)
    base = None
    if m.base_pose is not None:
        base = _base(m, streams[m.base_pose], streams, tb, metadata, estimated)
    wrenches = [_wrench(w, streams[w.source], tb) for w in m.wrenches]
    imu = None
    if m.imu is not None:
        im = streams[m.imu]
        rows = np.asarray(im.rows, dtype=float)
        imu = {
            "orientation": tb.aligned(im.topic, rows[:, :4], quaternion=True),
            "angular_velocity": tb.aligned(im.topic, rows[:, 4:7]),
            "linear_acceleration": tb.aligned(im.topic, rows[:, 7:]),
        }
        metadata["imu_frame"] = sorted(im.frames)[0] if im.frames else ""
    labels = {w.source: w.label for w in m.wrenches}
    times = {
        topic: TopicTimes(
            topic,
            labels.get(topic, s.kind),
            np.where(np.asarray(s.header) == 0, np.nan, tb.seconds(np.asarray(s.header))),
            tb.seconds(np.asarray(s.receive)),
            used[topic],
        )
        for topic, s in streams.items()
    }
    metadata["time_origin"] = str(np.datetime_as_string(np.datetime64(tb.origin, "ns"), unit="ns"))
    metadata["time_base"] = f"{m.rate} Hz" if m.rate else (m.time_base or m.joint_states)
    metadata["topic_times"] = {topic: tt.summary() for topic, tt in times.items()}
    if tb.outliers.any():
        at = np.flatnonzero(tb.outliers)
        metadata["outlier_stamps"] = {"samples": at.tolist(), "times_s": tb.t[at].tolist()}
        warnings.warn(
            f"{path}: {at.size} message(s) of {metadata['time_base']!r} stamped far outside "
            f"the recording (samples {at[:10].tolist()} at {np.round(tb.t[at[:10]], 6).tolist()} "
            "s, beyond a gap longer than max_gap): kept with NaN fields, flagged by the checks",
            StateWarning,
            stacklevel=2,
        )
    _note_gaps_and_crop(path, tb.gaps, cropped, metadata)
    if estimated:
        metadata["estimated"] = estimated
    traj = assemble(
        tb.t,
        names,
        qj,
        vj,
        tau,
        base,
        wrenches,
        robot=robot,
        contact_frames=contact_frames_of(profile),
        metadata=metadata,
        source=str(path),
    )
    return RosbagRecording(traj, times, imu)


def _recording_mapping(
    mapping: Any, robot: Robot | None
) -> tuple[RosbagMapping, Robot | None, Any]:
    """The ``[recording]`` section, the robot (the profile's unless given) and the profile (or
    the mapping given) from what :func:`read_rosbag_recording` was given."""
    from ..profile import RobotProfile, load_profile

    profile = load_profile(mapping) if isinstance(mapping, (str, Path)) else mapping
    if isinstance(profile, RobotProfile):
        if getattr(profile, "recording", None) is None:
            raise ProfileError(f"{profile.source}: no [recording] section")
        return profile.recording, robot or profile.robot, profile
    if isinstance(profile, RosbagMapping):
        return profile, robot, profile
    if isinstance(profile, Mapping):
        return RosbagMapping.from_dict(profile), robot, profile
    raise ProfileError(f"mapping must be a profile or a [recording] table, got {mapping!r}")


class _TimeBase:
    """The time base of a bag: its times ``t`` [s from ``origin``, a stamp in ns], and each
    topic's values aligned onto it (coverage checked, gaps left NaN and listed in ``gaps``)."""

    def __init__(
        self,
        m: RosbagMapping,
        stamps: dict[str, NDArray[np.int64]],
        base_ns: NDArray[np.int64],
        outliers: NDArray[np.bool_],
    ):
        self.m, self.stamps = m, stamps
        self.origin = int(base_ns[0])
        self.t = self.seconds(base_ns)
        self.hint = "" if m.crop else _EXTRAPOLATION_HINT
        self.gaps: dict[str, dict[str, float]] = {}
        # Samples stamped far outside the recording (:func:`time_base`): NaN in every field.
        self.outliers = outliers
        self._inside = self.t[~outliers]

    def seconds(self, ns: NDArray[Any]) -> Array:
        return (np.asarray(ns, dtype=np.int64) - self.origin).astype(np.float64) * 1e-9

    def mark_gaps(self, topic: str, ts: Array, x: Array) -> Array:
        """NaN where the topic would be interpolated across a gap (flagged, not made up), and
        at the outlier samples."""
        mask, longest = gap_mask(ts, self.t, self.m.max_gap)
        mask &= ~self.outliers
        if mask.any():
            x[mask] = np.nan
            self.gaps[topic] = {"samples": int(mask.sum()), "longest_s": longest}
        x[self.outliers] = np.nan
        return x

    def aligned_at(self, topic: str, ns: NDArray[np.int64], x: Array) -> Array:
        """Values ``x`` stamped ``ns`` (sorted) on the time base, linearly interpolated."""
        ts = self.seconds(ns)
        check_coverage(topic, ts, self._inside, self.m.tolerance, self.hint)
        return self.mark_gaps(topic, ts, interpolate_linear(ts, x, self.t))

    def aligned(self, topic: str, values: Array, quaternion: bool = False) -> Array:
        """A topic's values (one row per message) on the time base; quaternions by slerp."""
        ns, x = sorted_stream(self.stamps[topic], values, topic)
        if not quaternion:
            return self.aligned_at(topic, ns, x)
        ts = self.seconds(ns)
        check_coverage(topic, ts, self._inside, self.m.tolerance, self.hint)
        return self.mark_gaps(topic, ts, interpolate_quaternions(ts, x, self.t))


def _joints(
    m: RosbagMapping, js: _Stream, tb: _TimeBase
) -> tuple[tuple[str, ...], Array, Array, Array | None, list[str]]:
    """Joint names, positions, velocities (differentiated when the messages have none and
    ``differentiate`` is set) and efforts on the time base, and what was estimated."""
    names, P, V, E = _joint_arrays(js, m.joints)
    if V is None and not m.differentiate:
        raise RecordingError(
            f"topic {js.topic!r}: JointState messages without velocities; set differentiate = "
            "true to estimate them from the positions",
            js.topic,
        )
    if m.effort and E is None:
        raise RecordingError(f"topic {js.topic!r}: JointState messages without efforts", js.topic)
    JS = tb.aligned(js.topic, np.concatenate([P] + [x for x in (V, E) if x is not None], axis=1))
    nj = len(names)
    qj = JS[:, :nj]
    if V is None:
        vj, estimated = differentiate(tb.t, qj), ["joint velocities"]
    else:
        vj, estimated = JS[:, nj : 2 * nj], []
    tau = JS[:, -nj:] if (E is not None and m.effort is not False) else None
    return names, qj, vj, tau, estimated


def _base(
    m: RosbagMapping,
    bp: _Stream,
    streams: dict[str, _Stream],
    tb: _TimeBase,
    metadata: dict[str, Any],
    estimated: list[str],
) -> tuple[Array, Array, Array]:
    """The base position (world), quaternion x-y-z-w and twist in the base frame on the time
    base: the twist from an Odometry pose topic, a twist topic (rotated from world axes at its
    own stamps when it is in them) or differentiated poses."""
    rows = np.asarray(bp.rows, dtype=float)
    pos = tb.aligned(bp.topic, rows[:, :3])
    quat = tb.aligned(bp.topic, rows[:, 3:7], quaternion=True)
    metadata["base_frame"] = sorted(bp.frames)[0] if len(bp.frames) == 1 else sorted(bp.frames)
    if bp.msgtype == "nav_msgs/msg/Odometry":
        axes = m.twist_axes or "base"
        twist = tb.aligned(bp.topic, twist_in_base(rows[:, 7:], rows[:, 3:7], axes))
    elif m.base_twist is not None:
        bt = streams[m.base_twist]
        if m.twist_axes is None:
            raise RecordingError(
                f"topic {bt.topic!r}: give twist_axes ('base' or 'world'): a TwistStamped "
                f"in frame {sorted(bt.frames)} does not say which",
                bt.topic,
            )
        axes = m.twist_axes
        ns, x = sorted_stream(tb.stamps[bt.topic], np.asarray(bt.rows, dtype=float), bt.topic)
        if axes == "world":  # rotate once, at the twist's own stamps, then align
            pose_ns, pose_q = sorted_stream(tb.stamps[bp.topic], rows[:, 3:7], bp.topic)
            q_at = interpolate_quaternions(tb.seconds(pose_ns), pose_q, tb.seconds(ns))
            x = twist_in_base(x, q_at, "world")
        twist = tb.aligned_at(bt.topic, ns, x)
    elif m.differentiate:
        axes, twist = "base", base_twist_from_poses(tb.t, pos, quat)
        estimated.append("base twist")
    else:
        raise RecordingError(
            f"topic {bp.topic!r}: {bp.msgtype} has no twist; map base_twist or set "
            "differentiate = true",
            bp.topic,
        )
    metadata["twist_axes_recorded"] = axes
    return pos, quat, twist


def _wrench(w: WrenchSource, ws: _Stream, tb: _TimeBase) -> AlignedWrench:
    """One mapped wrench topic on the time base, with the sensor frame it is stated in."""
    frame = w.frame
    if frame is None and w.axes == "sensor":
        if len(ws.frames) != 1 or not next(iter(ws.frames)):
            raise RecordingError(
                f"topic {ws.topic!r}: header.frame_id is {sorted(ws.frames)}; give the "
                "sensor frame as 'frame'",
                ws.topic,
            )
        frame = next(iter(ws.frames))
    return AlignedWrench(w, tb.aligned(ws.topic, np.asarray(ws.rows, dtype=float)), frame)


def _note_gaps_and_crop(
    path: Path,
    gaps: dict[str, dict[str, float]],
    cropped: dict[str, Any] | None,
    metadata: dict[str, Any],
) -> None:
    """Keep the gaps left NaN and the crop of the time base in ``metadata``, and warn."""
    if gaps:
        metadata["gaps"] = gaps
        listed = ", ".join(
            f"{topic} ({g['samples']} samples, longest gap {g['longest_s']:.3g} s)"
            for topic, g in gaps.items()
        )
        warnings.warn(
            f"{path}: samples inside gaps of {listed} are NaN (flagged by the checks), not "
            "interpolated; raise max_gap in the [recording] section to accept longer gaps",
            StateWarning,
            stacklevel=3,
        )
    if cropped is not None:
        metadata["cropped"] = cropped
        warnings.warn(
            f"{path}: the time base is cropped to where every mapped topic has data: "
            f"{cropped['samples_before']} samples ({cropped['start_s']:.6g} s) before "
            f"{cropped['started_last']!r} starts and {cropped['samples_after']} samples "
            f"({cropped['end_s']:.6g} s) after {cropped['ended_first']!r} ends are left out, "
            "not held (crop = false keeps them within tolerance)",
            StateWarning,
            stacklevel=3,
        )


def read_rosbag(path: str | Path, mapping: Any, robot: Robot | None = None) -> Trajectory:
    """Read a ROS 2 bag / MCAP file as a Trajectory (:func:`read_rosbag_recording` without the
    raw stamps; their summaries are in ``metadata["topic_times"]``).

    Parameters, returns and errors are those of :func:`read_rosbag_recording`.
    """
    return read_rosbag_recording(path, mapping, robot).trajectory
