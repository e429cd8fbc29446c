"""The strict step of ROS bags: a bag folder reads only its own files, each mapped topic's
message definition (as the bag itself defines it) holds the fields the reader uses, and a
uniform time grid is bounded before it is built; the time base, cropped by default."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import LogFormatError, OutsideInputError, RecordingError
from ...limits import check_file_size, check_limit
from .mapping import RosbagMapping

_HEADER = ("header.stamp.sec:int", "header.stamp.nanosec:int", "header.frame_id:string")
_XYZ = ("x", "y", "z")


def _vec(prefix: str, names: tuple[str, ...] = _XYZ) -> tuple[str, ...]:
    return tuple(f"{prefix}.{n}:float" for n in names)


#: Per message type, the fields the reader uses (dotted path : kind).
FIELDS: dict[str, tuple[str, ...]] = {
    "sensor_msgs/msg/JointState": _HEADER
    + ("name:string[]", "position:float[]", "velocity:float[]", "effort:float[]"),
    "nav_msgs/msg/Odometry": _HEADER
    + ("child_frame_id:string",)
    + _vec("pose.pose.position")
    + _vec("pose.pose.orientation", ("x", "y", "z", "w"))
    + _vec("twist.twist.linear")
    + _vec("twist.twist.angular"),
    "geometry_msgs/msg/PoseStamped": _HEADER
    + _vec("pose.position")
    + _vec("pose.orientation", ("x", "y", "z", "w")),
    "geometry_msgs/msg/PoseWithCovarianceStamped": _HEADER
    + _vec("pose.pose.position")
    + _vec("pose.pose.orientation", ("x", "y", "z", "w")),
    "geometry_msgs/msg/TwistStamped": _HEADER + _vec("twist.linear") + _vec("twist.angular"),
    "geometry_msgs/msg/TwistWithCovarianceStamped": _HEADER
    + _vec("twist.twist.linear")
    + _vec("twist.twist.angular"),
    "geometry_msgs/msg/WrenchStamped": _HEADER + _vec("wrench.force") + _vec("wrench.torque"),
    "geometry_msgs/msg/Wrench": _vec("force") + _vec("torque"),
    "sensor_msgs/msg/Imu": _HEADER
    + _vec("orientation", ("x", "y", "z", "w"))
    + _vec("angular_velocity")
    + _vec("linear_acceleration"),
}
_INTS = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"}
_FLOATS = {"float32", "float64"} | _INTS


def _leaf_kind(node: Any) -> str:
    """'int', 'float', 'string', 'float[]', 'string[]' or '' of a field's type node."""
    nodetype, desc = node
    name = getattr(nodetype, "name", str(nodetype))
    if name == "BASE":
        base = desc[0]
        if base in ("string", "wstring"):
            return "string"
        return "int" if base in _INTS else ("float" if base in _FLOATS else "")
    if name in ("SEQUENCE", "ARRAY"):
        inner = _leaf_kind(desc[0])
        return f"{inner}[]" if inner in ("float", "int", "string") else ""
    return ""


def _resolve(fielddefs: Mapping[str, Any], msgtype: str, path: str) -> str | None:
    """The kind of the field at ``path`` in ``msgtype``, or None when it is missing."""
    current = msgtype
    parts = path.split(".")
    for i, part in enumerate(parts):
        if current not in fielddefs:
            return None
        fields = dict(fielddefs[current][1])
        if part not in fields:
            return None
        node = fields[part]
        if i == len(parts) - 1:
            return _leaf_kind(node)
        nodetype, desc = node
        if getattr(nodetype, "name", "") != "NAME":
            return None
        current = desc
    return None


def check_definition(fielddefs: Mapping[str, Any], msgtype: str, topic: str, bag: Path) -> None:
    """Refuse a topic whose message type, as the bag defines it, lacks a field the reader
    uses or holds it with another type (a bag that defines ``sensor_msgs/msg/JointState``
    itself with other fields).

    Raises
    ------
    RecordingError
        Names the topic, the message type and the field.
    """
    for spec in FIELDS.get(msgtype, ()):
        path, want = spec.split(":")
        have = _resolve(fielddefs, msgtype, path)
        ok = (
            have == want
            or (want == "float" and have == "int")
            or (want == "float[]" and have == "int[]")
        )
        if not ok:
            found = "is missing" if have is None else f"is {have or 'of another type'}"
            raise RecordingError(
                f"{bag}: topic {topic!r}: the bag defines {msgtype} with field {path!r} that "
                f"{found} (expected {want}); the reader takes the standard definition only",
                topic,
            )


def check_bag_files(path: Path) -> None:
    """A ROS 2 bag folder reads only its own files: every file its ``metadata.yaml`` lists
    is inside the folder (symbolic links resolved).

    Raises
    ------
    OutsideInputError
        A listed file outside the folder (named).
    LogFormatError
        An unreadable ``metadata.yaml``.
    """
    meta = path / "metadata.yaml"
    if not path.is_dir() or not meta.exists():
        return
    root = path.resolve()
    if not meta.resolve().is_relative_to(root):
        raise OutsideInputError(
            f"{meta}: resolves to {meta.resolve()}, outside the bag's folder; refusing to read it",
            str(meta),
        )
    import yaml

    check_file_size(meta)
    try:
        doc = yaml.safe_load(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise LogFormatError(f"{meta}: not readable YAML: {exc}") from exc
    info = doc.get("rosbag2_bagfile_information") if isinstance(doc, dict) else None
    if not isinstance(info, dict):
        raise LogFormatError(f"{meta}: no 'rosbag2_bagfile_information' mapping")
    names = list(info.get("relative_file_paths") or [])
    names += [f.get("path") for f in info.get("files") or [] if isinstance(f, dict)]
    for name in names:
        if not isinstance(name, str):
            raise LogFormatError(f"{meta}: a listed file is {name!r}, not a path")
        target = path / name
        if Path(name).is_absolute() or not target.resolve().is_relative_to(root):
            raise OutsideInputError(
                f"{meta}: lists {name!r}, outside the bag's folder {path}; a bag reads only its "
                "own files; refusing to read it",
                name,
            )


def check_grid(rate: float, start_ns: int, end_ns: int, where: str) -> int:
    """The number of samples of a uniform grid at ``rate`` [Hz] over ``[start, end]`` [ns],
    checked against :data:`~wholebody.limits.LIMITS` ``.grid_samples`` before it is built."""
    n = int((end_ns - start_ns) * 1e-9 * rate) + 1
    check_limit(
        "grid_samples",
        n,
        where,
        f"rate = {rate:g} Hz over {(end_ns - start_ns) * 1e-9:.6g} s is a time grid of {n:,} "
        "samples",
        f"about {n * 8 * 64 / 1e9:.3g} GB for 64 numbers per sample",
    )
    return n


def time_base(
    m: RosbagMapping, times: dict[str, NDArray[np.int64]], where: str
) -> tuple[NDArray[np.int64], dict[str, Any] | None, NDArray[np.bool_]]:
    """The time base [ns]: a topic's sorted stamps, or a uniform grid at ``rate`` over the span
    every topic covers; with ``crop`` (the default), cut to where every topic has started and
    not yet ended, so no end value is held. Also what was cropped (None: nothing) and which
    samples of the base are outliers: stamps outside that span and beyond a gap longer than
    ``max_gap`` (default 5 median periods) from it, a message stamped wrong, kept (and
    flagged by the reader) rather than cropped."""
    start = max(int(t[0]) for t in times.values())
    end = min(int(t[-1]) for t in times.values())
    if m.rate is not None:
        if end < start:
            raise RecordingError("the mapped topics share no common time span", "")
        n = check_grid(m.rate, start, end, f"{where}: [recording] rate")
        step = 1e9 / m.rate
        n = min(n, int(np.floor((end - start) / step + 1e-9)) + 1)
        base = start + np.round(np.arange(n) * step).astype(np.int64)
        return base, None, np.zeros(n, dtype=bool)
    base = times[m.time_base or m.joint_states]
    inside = (base >= start) & (base <= end)
    outlier = _outlier_stamps(base, inside, m.max_gap)
    if not m.crop:
        return base, None, outlier
    keep = inside | outlier
    if not inside.any():
        raise RecordingError("the mapped topics share no common time span", "")
    if keep.all():
        return base, None, outlier
    first = min(times, key=lambda k: -int(times[k][0]))
    last = min(times, key=lambda k: int(times[k][-1]))
    before, after = int((~keep & (base < start)).sum()), int((~keep & (base > end)).sum())
    cropped = {
        "samples_before": before,
        "samples_after": after,
        "start_s": (start - int(base[0])) * 1e-9,
        "end_s": (int(base[-1]) - end) * 1e-9,
        "started_last": first,
        "ended_first": last,
    }
    return base[keep], cropped, outlier[keep]


def _outlier_stamps(
    base: NDArray[np.int64], inside: NDArray[np.bool_], max_gap: float | None
) -> NDArray[np.bool_]:
    """The stamps of ``base`` (sorted [ns]) outside the common span (``inside`` False) and
    beyond a gap longer than ``max_gap`` [s] (None: 5 median periods) on the way from it."""
    out = np.zeros(base.size, dtype=bool)
    if base.size < 3 or not inside.any():
        return out
    steps = np.diff(base)
    limit = 5.0 * float(np.median(steps)) if max_gap is None else max_gap * 1e9
    first, last = np.flatnonzero(inside)[[0, -1]]
    wide = steps > limit
    out[last + 1 :] = np.cumsum(wide[last:]) > 0  # after a wide step past the span's end
    out[:first] = np.cumsum(wide[:first][::-1])[::-1] > 0  # before one ahead of its start
    return out
