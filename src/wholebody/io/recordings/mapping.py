"""Which topic or column holds which field: the ``[recording]`` and ``[lerobot]`` profile
sections, as objects.

Both are read strictly from a TOML table (or any mapping with the same keys, e.g. parsed
JSON): an unknown key names itself with a close match, a value of the wrong type names the key
and what is allowed (:class:`~wholebody.errors.ProfileError`). ``docs/recordings.md`` is the
recipe and ``docs/profile.md`` the table of keys.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import ProfileError
from .._toml import check_keys, table

__all__ = [
    "WrenchSource",
    "RosbagMapping",
    "ColumnSlice",
    "LerobotMapping",
    "RECORDING_KEYS",
    "LEROBOT_KEYS",
    "WRENCH_KEYS",
    "DEFAULT_TOLERANCE",
]

#: Keys of the ``[recording]`` section (ROS 2 bags / MCAP), with their meaning.
RECORDING_KEYS: dict[str, str] = {
    "joint_states": "topic of sensor_msgs/msg/JointState (required)",
    "joints": "array of joint names to read (default: the names of the first message)",
    "effort": "bool: read JointState.effort as tau (default true when every message has it)",
    "base_pose": "topic of nav_msgs/msg/Odometry or geometry_msgs/msg/PoseStamped",
    "base_twist": "topic of geometry_msgs/msg/TwistStamped (with a PoseStamped base_pose)",
    "twist_axes": "'base' or 'world': axes of the recorded base twist (Odometry: 'base')",
    "imu": "topic of sensor_msgs/msg/Imu (aligned, kept beside the trajectory)",
    "wrenches": "array of tables [[recording.wrenches]]: one per force-torque topic",
    "time_base": "a mapped topic whose stamps are the samples (default: joint_states)",
    "rate": "number [Hz]: a uniform time base over the span every topic covers, instead",
    "stamps": "'header' (default; receive time where a topic's stamps are all zero) or 'receive'",
    "tolerance": "number [s] >= 0: with crop = false, how far beyond a topic's first / last "
    "stamp the time base may reach (its end value is held) (default 0.005)",
    "crop": "bool: cut the time base to the span every topic covers, so that no end value is "
    "held (default true; metadata['cropped'] says what was cut); false: keep it, holding end "
    "values within tolerance, and refuse a longer reach",
    "max_gap": "number [s] > 0: samples a topic would interpolate across a longer gap in its "
    "stamps become NaN (flagged by the checks, listed in metadata['gaps']); default 5 times "
    "the topic's median period",
    "differentiate": "bool: velocities missing from the messages come from finite "
    "differences of the positions (default false: error)",
}
#: Keys of the ``[lerobot]`` section (LeRobot-style Parquet datasets), with their meaning.
LEROBOT_KEYS: dict[str, str] = {
    "q": "column[slice] of the joint positions (required), e.g. 'observation.state[0:29]'",
    "joints": "array of joint names (default: the feature names in meta/info.json)",
    "v": "column[slice] of the joint velocities",
    "tau": "column[slice] of the joint torques",
    "base_position": "column[slice] of 3 numbers: base origin, world coordinates [m]",
    "base_orientation": "column[slice] of 4 numbers: base orientation (a unit quaternion)",
    "quaternion_order": "'xyzw' (default) or 'wxyz': order of base_orientation",
    "base_linear_velocity": "column[slice] of 3 numbers: velocity of the base origin [m/s]",
    "base_angular_velocity": "column[slice] of 3 numbers [rad/s]",
    "twist_axes": "'base' (default) or 'world': axes of the base velocities",
    "time": "column of the sample times [s] (default 'timestamp')",
    "wrenches": "array of tables [[lerobot.wrenches]]: one per wrench column slice",
    "differentiate": "bool: velocities not mapped come from finite differences (default false)",
}
#: Keys of a ``[[recording.wrenches]]`` or ``[[lerobot.wrenches]]`` entry.
WRENCH_KEYS: dict[str, str] = {
    "topic": "ROS: topic of geometry_msgs/msg/WrenchStamped (or an unstamped "
    "geometry_msgs/msg/Wrench, taken at its receive time; give 'frame' or axes = 'world')",
    "column": "LeRobot: column[slice] of 6 numbers (fx, fy, fz, tx, ty, tz)",
    "contact": "name of the contact the wrench acts on (a [[contacts]] name)",
    "external": "instead of 'contact': the robot frame a known non-contact wrench acts at (a "
    "push, the load on a hand sensor); stored as an external wrench at that frame's origin",
    "contact_frame": "with 'contact': the robot frame at whose origin the wrench is stated "
    "(default: the profile contact's frame, or the contact name); with axes = 'world' a "
    "moment about another frame's origin is moved to the contact's; with axes = 'sensor' it "
    "must be the contact's frame",
    "frame": "sensor frame: the wrench's axes and the point it is taken at (ROS default: the "
    "message's header.frame_id)",
    "axes": "'sensor' (default: convert from the sensor frame) or 'world' (already world "
    "axes at the contact frame's origin)",
}
#: Default ``tolerance`` [s]: how far beyond a topic's ends the time base may reach.
DEFAULT_TOLERANCE = 0.005
_TWIST_AXES = ("base", "world")
_SLICE = re.compile(r"^\s*(?P<col>[^\[\]]+?)\s*(\[\s*(?P<a>-?\d*)\s*:\s*(?P<b>-?\d*)\s*\])?\s*$")


def _str(entry: Mapping[str, Any], key: str, where: str, default: str | None = None) -> Any:
    value = entry.get(key, default)
    if value is None and default is None and key not in entry:
        return None
    if not isinstance(value, str) or not value:
        raise ProfileError(f"{where}: {key!r} must be a non-empty string, got {value!r}")
    return value


def _choice(entry: Mapping[str, Any], key: str, where: str, allowed: Sequence[str]) -> Any:
    value = entry.get(key)
    if value is not None and value not in allowed:
        raise ProfileError(
            f"{where}: {key!r} must be one of {', '.join(map(repr, allowed))}, got {value!r}"
        )
    return value


def _bool(entry: Mapping[str, Any], key: str, where: str, default: bool | None) -> Any:
    value = entry.get(key, default)
    if value is not None and not isinstance(value, bool):
        raise ProfileError(f"{where}: {key!r} must be true or false, got {value!r}")
    return value


def _nonneg(entry: Mapping[str, Any], key: str, where: str, positive: bool) -> float | None:
    if key not in entry:
        return None
    value = entry[key]
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value < 0 or (positive and value == 0):
        kind = "positive" if positive else "non-negative"
        raise ProfileError(f"{where}: {key!r} must be a {kind} finite number, got {value!r}")
    return float(value)


def _tolerance(entry: Mapping[str, Any], where: str) -> float:
    value = _nonneg(entry, "tolerance", where, positive=False)
    return DEFAULT_TOLERANCE if value is None else value


def _names(entry: Mapping[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    if key not in entry:
        return None
    value = entry[key]
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        raise ProfileError(f"{where}: {key!r} must be an array of names, got {value!r}")
    if len(set(value)) != len(value):
        dup = sorted({x for x in value if value.count(x) > 1})
        raise ProfileError(f"{where}: {key!r} repeats {dup}")
    return tuple(value)


@dataclass(frozen=True)
class WrenchSource:
    """One force-torque stream and the contact it acts on.

    Attributes
    ----------
    contact : str
        The contact's name (the trajectory's contact; several sources of one contact are
        summed at its frame's origin).
    source : str
        The ROS topic, or the LeRobot column selection (``"observation.ft[0:6]"``).
    contact_frame : str or None
        The contact's robot frame; None: the profile contact's frame, else ``contact``.
    frame : str or None
        The sensor frame: the axes of the recorded wrench and the point its moment is taken
        about. None: the message's ``header.frame_id`` (ROS).
    axes : {"sensor", "world"}
        ``"world"``: the recorded wrench is already in world axes, about the origin of
        ``contact_frame`` (or of the contact's frame), and only its moment is moved.
    external : str or None
        A robot frame: the wrench is a known external wrench acting there (a push), stored
        in world axes at that frame's origin; ``contact`` is then empty.
    """

    contact: str
    source: str
    contact_frame: str | None = None
    frame: str | None = None
    axes: str = "sensor"
    external: str | None = None

    @property
    def label(self) -> str:
        """``contact:NAME`` or ``external:FRAME``, for messages and topic summaries."""
        return f"external:{self.external}" if self.external else f"wrench:{self.contact}"

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any], where: str, source_key: str) -> WrenchSource:
        """From a ``[[recording.wrenches]]`` (``source_key="topic"``) or ``[[lerobot.wrenches]]``
        (``source_key="column"``) table; :class:`~wholebody.errors.ProfileError` names the
        entry."""
        if not isinstance(entry, Mapping):
            raise ProfileError(f"{where}: must be a table, got {entry!r}")
        other = "column" if source_key == "topic" else "topic"
        check_keys(entry, {k: v for k, v in WRENCH_KEYS.items() if k != other}, where)
        if source_key not in entry:
            raise ProfileError(f"{where}: missing key {source_key!r}")
        if ("contact" in entry) == ("external" in entry):
            raise ProfileError(
                f"{where}: give 'contact' (a contact's name) or 'external' (the frame of a "
                "known non-contact wrench), one of them"
            )
        if "external" in entry and "contact_frame" in entry:
            raise ProfileError(
                f"{where}: 'contact_frame' applies with 'contact'; an external wrench is "
                "stated at the 'external' frame's origin"
            )
        axes = _choice(entry, "axes", where, ("sensor", "world")) or "sensor"
        frame = _str(entry, "frame", where)
        if axes == "world" and frame is not None:
            raise ProfileError(f"{where}: 'frame' applies with axes = 'sensor', not 'world'")
        if source_key == "column" and axes == "sensor" and frame is None:
            raise ProfileError(f"{where}: give 'frame' (the sensor frame) or axes = 'world'")
        return cls(
            contact=_str(entry, "contact", where) if "contact" in entry else "",
            source=_str(entry, source_key, where),
            contact_frame=_str(entry, "contact_frame", where),
            frame=frame,
            axes=axes,
            external=_str(entry, "external", where),
        )


def _wrench_list(value: Any, where: str, source_key: str) -> tuple[WrenchSource, ...]:
    if not isinstance(value, list):
        raise ProfileError(f"{where}: 'wrenches' must be an array of tables, got {value!r}")
    return tuple(
        WrenchSource.from_dict(e, f"{where}: wrenches[{i}]", source_key)
        for i, e in enumerate(value)
    )


@dataclass(frozen=True)
class RosbagMapping:
    """Topics of a ROS 2 bag / MCAP file and the fields they fill (the ``[recording]``
    section; keys in :data:`RECORDING_KEYS`).

    Attributes
    ----------
    joint_states : str
        Topic of ``sensor_msgs/msg/JointState``: joint positions, velocities, efforts.
    base_pose, base_twist, imu : str or None
        Topics of the base pose (Odometry or PoseStamped), the base twist (TwistStamped)
        and an IMU.
    twist_axes : {"base", "world"} or None
        Axes of the recorded base twist; None: ``"base"`` for Odometry (REP 105: the twist
        is in ``child_frame_id``); required with a TwistStamped topic.
    wrenches : tuple of WrenchSource
        Force-torque topics.
    joints : tuple of str or None
        Joints to read; None: those of the first JointState message.
    effort : bool or None
        Read efforts as ``tau``; None: when every message has them.
    time_base : str or None
        The topic whose stamps become the samples; None: ``joint_states``.
    rate : float or None
        [Hz] a uniform time base instead of a topic's stamps.
    stamps : {"header", "receive"}
        Which time each message is taken at.
    tolerance : float
        [s] how far the time base may reach beyond a topic's first or last stamp.
    crop : bool
        Cut the time base to where every topic has started and not yet ended (default), so
        no end value is held; ``metadata["cropped"]`` says what was cut. False: keep it,
        holding end values within ``tolerance``, and refuse a longer reach.
    differentiate : bool
        Estimate velocities the messages lack by finite differences.
    max_gap : float or None
        [s] samples interpolated across a longer gap in a topic's stamps are made NaN;
        None: 5 times the topic's median period.
    """

    joint_states: str
    base_pose: str | None = None
    base_twist: str | None = None
    twist_axes: str | None = None
    imu: str | None = None
    wrenches: tuple[WrenchSource, ...] = ()
    joints: tuple[str, ...] | None = None
    effort: bool | None = None
    time_base: str | None = None
    rate: float | None = None
    stamps: str = "header"
    tolerance: float = DEFAULT_TOLERANCE
    crop: bool = True
    differentiate: bool = False
    max_gap: float | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "[recording]") -> RosbagMapping:
        """From the ``[recording]`` table of a profile (or the same keys in any mapping).

        Raises
        ------
        ProfileError
            An unknown key (with a close match), a value of the wrong type, a missing
            ``joint_states``, a ``time_base`` that is not a mapped topic, both ``rate`` and
            ``time_base``; the message starts with ``where``.
        """
        check_keys(table(data, where), RECORDING_KEYS, where)
        if "joint_states" not in data:
            raise ProfileError(f"{where}: missing key 'joint_states' (a JointState topic)")
        out = cls(
            joint_states=_str(data, "joint_states", where),
            base_pose=_str(data, "base_pose", where),
            base_twist=_str(data, "base_twist", where),
            twist_axes=_choice(data, "twist_axes", where, _TWIST_AXES),
            imu=_str(data, "imu", where),
            wrenches=_wrench_list(data.get("wrenches", []), where, "topic"),
            joints=_names(data, "joints", where),
            effort=_bool(data, "effort", where, None),
            time_base=_str(data, "time_base", where),
            rate=_nonneg(data, "rate", where, positive=True),
            stamps=_choice(data, "stamps", where, ("header", "receive")) or "header",
            tolerance=_tolerance(data, where),
            crop=_bool(data, "crop", where, True),
            differentiate=_bool(data, "differentiate", where, False),
            max_gap=_nonneg(data, "max_gap", where, positive=True),
        )
        if out.base_twist is not None and out.base_pose is None:
            raise ProfileError(f"{where}: 'base_twist' needs 'base_pose' (the orientation)")
        if out.rate is not None and out.time_base is not None:
            raise ProfileError(f"{where}: give 'rate' or 'time_base', not both")
        if out.time_base is not None and out.time_base not in out.topics():
            raise ProfileError(
                f"{where}: 'time_base' {out.time_base!r} is not a mapped topic "
                f"(mapped: {', '.join(out.topics())})"
            )
        return out

    def topics(self) -> tuple[str, ...]:
        """Every mapped topic, once, joint states first."""
        names = [self.joint_states, self.base_pose, self.base_twist, self.imu]
        names += [w.source for w in self.wrenches]
        return tuple(dict.fromkeys(n for n in names if n is not None))


@dataclass(frozen=True)
class ColumnSlice:
    """A column of a Parquet table and the slice of its (list-valued) entries to read.

    Attributes
    ----------
    column : str
        The column's name (``"observation.state"``).
    start, stop : int or None
        The slice ``[start:stop]`` of each row's list; both None: the whole column (a scalar
        column reads as one value per row).
    """

    column: str
    start: int | None = None
    stop: int | None = None

    @classmethod
    def parse(cls, text: Any, where: str, key: str) -> ColumnSlice:
        """From ``"column"`` or ``"column[start:stop]"``; ProfileError names ``key``."""
        m = _SLICE.match(text) if isinstance(text, str) else None
        if m is None:
            raise ProfileError(
                f"{where}: {key!r} must be 'column' or 'column[start:stop]', got {text!r}"
            )
        a, b = m.group("a"), m.group("b")
        return cls(m.group("col"), int(a) if a else None, int(b) if b else None)

    @property
    def sliced(self) -> bool:
        """Whether a slice was given."""
        return self.start is not None or self.stop is not None

    def __str__(self) -> str:
        if not self.sliced:
            return self.column
        a = "" if self.start is None else self.start
        b = "" if self.stop is None else self.stop
        return f"{self.column}[{a}:{b}]"


@dataclass(frozen=True)
class LerobotMapping:
    """Columns of a LeRobot-style dataset and the fields they fill (the ``[lerobot]``
    section; keys in :data:`LEROBOT_KEYS`).

    Attributes
    ----------
    q : ColumnSlice
        Joint positions [rad or m].
    joints : tuple of str or None
        Joint names; None: the feature names of ``q``'s slice in ``meta/info.json``.
    v, tau : ColumnSlice or None
        Joint velocities and torques.
    base_position, base_orientation, base_linear_velocity, base_angular_velocity
        ColumnSlice or None: the floating base (world coordinates; velocities in
        ``twist_axes``). No base position and orientation: identity pose, zero twist.
    quaternion_order : {"xyzw", "wxyz"}
        Order of ``base_orientation``.
    twist_axes : {"base", "world"}
        Axes of the base velocities (the linear one is the base origin's velocity).
    time : str
        Column of the sample times [s].
    wrenches : tuple of WrenchSource
        Wrench column slices (6 numbers: force then moment).
    differentiate : bool
        Velocities not mapped come from finite differences of the positions.
    """

    q: ColumnSlice
    joints: tuple[str, ...] | None = None
    v: ColumnSlice | None = None
    tau: ColumnSlice | None = None
    base_position: ColumnSlice | None = None
    base_orientation: ColumnSlice | None = None
    quaternion_order: str = "xyzw"
    base_linear_velocity: ColumnSlice | None = None
    base_angular_velocity: ColumnSlice | None = None
    twist_axes: str = "base"
    time: str = "timestamp"
    wrenches: tuple[WrenchSource, ...] = ()
    differentiate: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "[lerobot]") -> LerobotMapping:
        """From the ``[lerobot]`` table of a profile (or the same keys in any mapping).

        Raises
        ------
        ProfileError
            An unknown key (with a close match), a malformed column selection, a base
            position without an orientation (or the reverse), base velocities without a
            pose; the message starts with ``where``.
        """
        check_keys(table(data, where), LEROBOT_KEYS, where)
        if "q" not in data:
            raise ProfileError(f"{where}: missing key 'q' (the joint positions' column)")

        def col(key: str) -> ColumnSlice | None:
            return ColumnSlice.parse(data[key], where, key) if key in data else None

        out = cls(
            q=ColumnSlice.parse(data["q"], where, "q"),
            joints=_names(data, "joints", where),
            v=col("v"),
            tau=col("tau"),
            base_position=col("base_position"),
            base_orientation=col("base_orientation"),
            quaternion_order=_choice(data, "quaternion_order", where, ("xyzw", "wxyz")) or "xyzw",
            base_linear_velocity=col("base_linear_velocity"),
            base_angular_velocity=col("base_angular_velocity"),
            twist_axes=_choice(data, "twist_axes", where, _TWIST_AXES) or "base",
            time=_str(data, "time", where, "timestamp"),
            wrenches=_wrench_list(data.get("wrenches", []), where, "column"),
            differentiate=_bool(data, "differentiate", where, False),
        )
        if (out.base_position is None) != (out.base_orientation is None):
            raise ProfileError(f"{where}: give both 'base_position' and 'base_orientation'")
        twist = (out.base_linear_velocity, out.base_angular_velocity)
        if any(t is not None for t in twist) and out.base_position is None:
            raise ProfileError(f"{where}: base velocities need 'base_position' and orientation")
        if (twist[0] is None) != (twist[1] is None):
            raise ProfileError(
                f"{where}: give both 'base_linear_velocity' and 'base_angular_velocity'"
            )
        return out
