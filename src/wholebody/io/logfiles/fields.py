"""The fields of a log as plain arrays, and the checks every format shares.

:class:`LogFields` is what a format reader produces and a writer consumes: numpy arrays and
names, in wholebody's conventions (``docs/log-format.md``), with no knowledge of
:class:`~wholebody.trajectory.Trajectory` (which builds itself from them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import LogFormatError

__all__ = [
    "LogFields",
    "ARRAY_FIELDS",
    "NAME_FIELDS",
    "REQUIRED",
    "BASE_Q",
    "BASE_V",
    "BASE_A",
    "WRENCH",
    "as_float_array",
    "as_bool_array",
    "ACTIVE_FIELD",
    "POINT_SAMPLE_FIELDS",
    "POINT_STATIC_FIELDS",
    "POINT_FORCE_CONTACTS",
    "seconds_from_times",
    "parse_metadata",
    "dump_metadata",
    "check_names",
    "check_labels",
    "check_time_increasing",
]

Array = NDArray[np.float64]

#: Numeric fields, in the order they are read.
ARRAY_FIELDS = ("time", "q", "v", "a", "tau", "contact_wrenches", "external_wrenches")
#: Fields holding names (strings).
NAME_FIELDS = ("joint_names", "contact_names", "external_frames")
REQUIRED = ("time", "q", "v", "joint_names", "contact_names", "contact_wrenches")
#: Optional boolean field: per sample and contact, whether the contact is active (touching).
ACTIVE_FIELD = "contact_active"
BASE_Q = ("base_x", "base_y", "base_z", "base_qx", "base_qy", "base_qz", "base_qw")
BASE_V = ("base_vx", "base_vy", "base_vz", "base_wx", "base_wy", "base_wz")
BASE_A = tuple("base_d" + c[5:] for c in BASE_V)
WRENCH = ("fx", "fy", "fz", "tx", "ty", "tz")
#: Optional per-sample fields of wrenches at stated points, each (N, *, 3): the points of the
#: contact wrenches and of the external wrenches (world [m]), point forces (world axes [N]) and
#: their positions (world [m]).
POINT_SAMPLE_FIELDS = (
    "contact_points_world",
    "point_forces",
    "point_force_positions",
    "external_points_world",
)
#: Optional fields of points fixed in frames, each (k, 3) or (e, 3) [m] in that frame.
POINT_STATIC_FIELDS = ("contact_points_local", "external_points_local")
#: Names field of the point forces: the contact each belongs to (repeats allowed).
POINT_FORCE_CONTACTS = "point_force_contacts"

#: JSON nesting deeper than this in ``metadata`` is refused (a log's metadata is shallow).
MAX_METADATA_DEPTH = 64


@dataclass
class LogFields:
    """A log's fields as stored: arrays in wholebody's conventions and names.

    Attributes
    ----------
    time : ndarray, shape (N,)
        Sample times [s].
    q, v : ndarray, shape (N, 7 + nj) and (N, 6 + nj)
        Configuration and velocity (Pinocchio layout, base twist in the base frame).
    a : ndarray, shape (N, 6 + nj) or None
        Accelerations.
    tau : ndarray, shape (N, nj) or None
        Joint torques [N m].
    joint_names, contact_names, external_frames : tuple of str
        Names of the joint columns, the contacts and the frames of external wrenches.
    contact_wrenches : ndarray, shape (N, k, 6)
        ``(f, tau)`` in world axes at each contact frame's origin [N, N m].
    external_wrenches : ndarray, shape (N, e, 6) or None
        Known external wrenches, world axes at those frames' origins.
    accelerations_estimated : bool
        True when ``a`` was computed from ``v``.
    metadata : dict
        JSON-compatible free-form data.
    source : str
        Where the fields came from (a path), for messages.
    contact_active : ndarray of bool, shape (N, k), or None
        Per sample and contact (``contact_names`` order), whether the contact is active
        (touching); None when the log has no contact schedule.
    contact_points_local : ndarray, shape (k, 3), or None
        The point each contact wrench's moment is about, fixed in its contact frame
        (contact-frame coordinates [m]); None: the contact frame origins.
    contact_points_world : ndarray, shape (N, k, 3), or None
        The same, given per sample in world coordinates [m] (exclusive with the above).
    point_forces : ndarray, shape (N, m, 3), or None
        Point forces on the robot, world axes [N], added to their contact's wrench.
    point_force_positions : ndarray, shape (N, m, 3), or None
        Where each point force acts, world coordinates [m].
    point_force_contacts : tuple of str, length m
        The contact (a name of ``contact_names``) each point force belongs to.
    external_points_local, external_points_world : ndarray, (e, 3) or (N, e, 3), or None
        The points of the external wrenches, fixed in their frames or per sample in world.

    See ``docs/log-format.md`` (Wrenches at stated points).
    """

    time: Array
    q: Array
    v: Array
    a: Array | None
    tau: Array | None
    joint_names: tuple[str, ...]
    contact_names: tuple[str, ...]
    contact_wrenches: Array
    external_frames: tuple[str, ...] = ()
    external_wrenches: Array | None = None
    accelerations_estimated: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str = "arrays"
    contact_active: NDArray[np.bool_] | None = None
    contact_points_local: Array | None = None
    contact_points_world: Array | None = None
    point_forces: Array | None = None
    point_force_positions: Array | None = None
    point_force_contacts: tuple[str, ...] = ()
    external_points_local: Array | None = None
    external_points_world: Array | None = None

    def as_kwargs(self) -> dict[str, Any]:
        """The fields as keyword arguments (the names of ``Trajectory``'s constructor)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def as_float_array(value: Any, name: str, source: str) -> Array:
    """``value`` as a float64 array, refusing kinds that would convert silently.

    Integers are accepted; booleans, complex numbers, strings, bytes, datetimes (see
    :func:`seconds_from_times`) and Python objects that are not numbers raise
    :class:`LogFormatError` naming ``source`` and ``name``.
    """
    arr = value if isinstance(value, np.ndarray) else None
    if arr is None:
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError) as exc:
            raise LogFormatError(
                f"{source}: field {name!r} is not an array of numbers: {exc}"
            ) from exc
    kind = arr.dtype.kind
    if kind in "fiu":
        if name == "time":
            check_time_resolution(arr, source)
        return np.asarray(arr, dtype=np.float64)
    what = {
        "b": "booleans",
        "c": "complex numbers",
        "U": "strings",
        "S": "bytes",
        "M": "datetimes",
        "m": "time spans",
        "V": "structured records",
    }.get(kind)
    if what is None and kind == "O":
        numbers = (int, float, np.integer, np.floating)
        if arr.size and all(isinstance(x, numbers) and not isinstance(x, bool) for x in arr.flat):
            return np.asarray(arr, dtype=np.float64)
        what = "Python objects that are not all numbers"
    hint = ""
    if kind in "Mm":
        hint = (
            " (give seconds: the readers convert a datetime time field to seconds since "
            "the first sample)"
            if name == "time"
            else " (only the time field may)"
        )
    raise LogFormatError(
        f"{source}: field {name!r} holds {what or arr.dtype}; expected real numbers{hint}"
    )


def as_bool_array(value: Any, name: str, source: str, offset: int = 0) -> NDArray[np.bool_]:
    """``value`` as a bool array: booleans as they are, integers that are all 0 or 1.

    The first axis is samples; a message numbers them from ``offset`` (the first sample of a
    chunk).

    Floats (even 0.0 / 1.0), strings, other integers and Python objects raise
    :class:`LogFormatError` naming ``source`` and ``name``. (The table formats, whose cells
    are numbers, check their ``active:`` columns themselves, naming the column.)
    """
    arr = value if isinstance(value, np.ndarray) else None
    if arr is None:
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError) as exc:
            raise LogFormatError(
                f"{source}: field {name!r} is not an array of booleans: {exc}"
            ) from exc
    kind = arr.dtype.kind
    if kind == "b":
        return np.asarray(arr, dtype=np.bool_)
    if kind in "iu":
        bad = (arr != 0) & (arr != 1)
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            where = f"sample {offset + at[0]}" + (f", column {at[1]}" if len(at) > 1 else "")
            raise LogFormatError(
                f"{source}: field {name!r} must hold booleans or 0/1 "
                f"integers, got {arr[at].item()!r} at {where}"
            )
        return arr.astype(np.bool_)
    what = {
        "f": "floats",
        "c": "complex numbers",
        "U": "strings",
        "S": "bytes",
        "M": "datetimes",
        "m": "time spans",
        "V": "structured records",
        "O": "Python objects",
    }.get(kind, str(arr.dtype))
    raise LogFormatError(
        f"{source}: field {name!r} holds {what}; expected booleans (or 0/1 integers)"
    )


def seconds_from_times(raw: NDArray[Any], origin: np.datetime64 | None) -> Array:
    """Seconds from datetime64 (since ``origin``) or timedelta64 values; NaT becomes NaN."""
    if raw.dtype.kind == "M":
        assert origin is not None
        span = raw.astype("datetime64[ns]") - origin.astype("datetime64[ns]")
    else:
        span = raw.astype("timedelta64[ns]")
    nat = np.isnat(span)
    seconds = span.astype(np.int64).astype(np.float64) / 1e9
    seconds[nat] = np.nan
    return seconds


def _depth(value: Any, limit: int) -> int:
    stack = [(value, 1)]
    deepest = 0
    while stack:
        item, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        if isinstance(item, dict):
            stack.extend((v, d + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, d + 1) for v in item)
    return deepest


def parse_metadata(value: Any, source: str) -> tuple[dict[str, Any], bool]:
    """Parse the ``metadata`` field: a JSON object in a string.

    Returns the metadata without its ``accelerations_estimated`` entry, and that entry.
    """
    if isinstance(value, np.ndarray):
        if value.shape != () or value.dtype.kind not in "US":
            raise LogFormatError(
                f"{source}: field 'metadata' must be one JSON string, got an "
                f"array of {value.dtype} with shape {value.shape}"
            )
        value = value[()]
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LogFormatError(f"{source}: field 'metadata' is not UTF-8 text: {exc}") from exc
    if not isinstance(value, str):
        raise LogFormatError(
            f"{source}: field 'metadata' must be a JSON string, got {type(value).__name__}"
        )
    try:
        meta = json.loads(value)
    except json.JSONDecodeError as exc:
        raise LogFormatError(f"{source}: field 'metadata' is not JSON: {exc}") from exc
    except RecursionError as exc:
        raise LogFormatError(f"{source}: field 'metadata' is JSON nested too deeply") from exc
    if not isinstance(meta, dict):
        raise LogFormatError(
            f"{source}: field 'metadata' must be a JSON object, got a JSON {type(meta).__name__}"
        )
    if _depth(meta, MAX_METADATA_DEPTH) > MAX_METADATA_DEPTH:
        raise LogFormatError(
            f"{source}: field 'metadata' is JSON nested deeper than {MAX_METADATA_DEPTH} levels"
        )
    estimated = meta.pop("accelerations_estimated", False)
    if not isinstance(estimated, bool):
        raise LogFormatError(
            f"{source}: metadata key 'accelerations_estimated' must be true or "
            f"false, got {estimated!r}"
        )
    return meta, estimated


def dump_metadata(fields: LogFields, target: str, extra: dict[str, Any] | None = None) -> str:
    """The ``metadata`` field as JSON text (``accelerations_estimated`` included, then the
    reserved entries ``extra``: what a table format keeps in its metadata)."""
    try:
        return json.dumps(
            {
                "accelerations_estimated": bool(fields.accelerations_estimated),
                **fields.metadata,
                **(extra or {}),
            }
        )
    except (TypeError, ValueError) as exc:
        raise LogFormatError(f"{target}: metadata is not JSON-serialisable: {exc}") from exc


def check_names(names: Any, name: str, source: str) -> tuple[str, ...]:
    """A tuple of distinct strings, or :class:`LogFormatError` naming the field."""
    out = check_labels(names, name, source)
    dup = [x for i, x in enumerate(out) if x in out[:i]] if len(set(out)) < len(out) else []
    if dup:
        raise LogFormatError(f"{source}: field {name!r} has duplicates {sorted(set(dup))}")
    return out


def check_labels(names: Any, name: str, source: str) -> tuple[str, ...]:
    """A tuple of strings (repeats allowed: ``point_force_contacts``), or
    :class:`LogFormatError` naming the field."""
    if isinstance(names, np.ndarray):
        if names.dtype.kind not in "UO" or names.ndim > 1:
            raise LogFormatError(
                f"{source}: field {name!r} must be a 1-D array of strings, got "
                f"{names.dtype} with shape {names.shape}"
            )
        names = names.reshape(-1).tolist()
    if isinstance(names, str):
        names = [names]
    try:
        out = tuple(names)
    except TypeError:
        raise LogFormatError(
            f"{source}: field {name!r} must be a sequence of strings, got {type(names).__name__}"
        ) from None
    bad = [x for x in out if not isinstance(x, str)]
    if bad:
        raise LogFormatError(f"{source}: field {name!r} must hold strings, got {bad[0]!r}")
    return out


def check_time_increasing(t: Array, source: str, offset: int = 0) -> None:
    """Raise unless the finite times in ``t`` strictly increase; sample numbers start at
    ``offset``."""
    finite = np.flatnonzero(np.isfinite(t))
    if finite.size < 2:
        return
    tf = t[finite]
    step = np.diff(tf)
    if np.any(step <= 0):
        i = int(np.flatnonzero(step <= 0)[0])
        raise LogFormatError(
            f"{source}: field 'time' is not strictly increasing (sample "
            f"{offset + int(finite[i + 1])}: {tf[i + 1]!r} after {tf[i]!r})"
        )


def check_time_resolution(time: Any, source: str) -> None:
    """Refuse a time column whose storage precision cannot resolve the log's step (float16
    near 2 s rounds to 2 ms: the differences would be the rounding, not the motion).

    Raises
    ------
    LogFormatError
        The resolution of the stored float type at the largest time exceeds a thousandth of
        the median step.
    """
    stored = getattr(time, "dtype", None)
    if stored is None or stored.kind != "f" or np.ndim(time) != 1 or len(time) < 2:
        return
    t = np.asarray(time, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        steps = np.diff(t)
    steps = steps[np.isfinite(steps) & (steps > 0)]
    span = np.abs(t[np.isfinite(t)])
    if not len(steps) or not len(span):
        return
    resolution = float(np.finfo(stored).eps) * float(span.max())
    dt = float(np.median(steps))
    if resolution > 1e-3 * dt:
        raise LogFormatError(
            f"{source}: field 'time' is stored as {stored.name}, whose resolution at "
            f"{span.max():.3g} s ({resolution:.2g} s) is not small against the log's step "
            f"({dt:.2g} s): store time as float64"
        )
