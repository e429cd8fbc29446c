"""What every log format shares: the fields of a log as plain arrays, the reader interface,
the checks of names and arrays, safe reading and writing, and the storage precision of the
logged values (:func:`storage_resolution`).

:class:`LogFields` is what a format reader produces and a writer consumes: numpy arrays and
names, in wholebody's conventions (``docs/log-format.md``), with no knowledge of
:class:`~wholebody.trajectory.Trajectory` (which builds itself from them).
:class:`FieldReader` is the interface every format implements: names and sizes first,
samples on demand.

Safe reading and writing: reading never trusts a size a file declares: each field's shape
times its item size is compared with the memory available before anything is read
(:func:`check_declared_size`). Writing goes to a temporary file beside the target, renamed
into place, so a failed write leaves no half file (:func:`output_file`).
"""

from __future__ import annotations

import json
import math
import os
import stat
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import LogFileError, LogFormatError, OutputError

__all__ = [
    "FieldReader",
    "check_input_path",
    "available_memory",
    "check_declared_size",
    "output_file",
    "LogFields",
    "ARRAY_FIELDS",
    "NUMERIC_FIELDS",
    "NAME_FIELDS",
    "REQUIRED",
    "BASE_Q",
    "BASE_V",
    "BASE_A",
    "WRENCH",
    "as_float_array",
    "as_bool_array",
    "as_mapping",
    "points_by_name",
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


#: Every per-sample numeric field, as a file of named fields (``.npz``, ``.h5``) stores it.
NUMERIC_FIELDS = ARRAY_FIELDS + (ACTIVE_FIELD,) + POINT_SAMPLE_FIELDS


#: Optional fields of points fixed in frames, each (k, 3) or (e, 3) [m] in that frame.
POINT_STATIC_FIELDS = ("contact_points_local", "external_points_local")


#: Names field of the point forces: the contact each belongs to (repeats allowed).
POINT_FORCE_CONTACTS = "point_force_contacts"


#: JSON nesting deeper than this in ``metadata`` is refused (a log's metadata is shallow).
MAX_METADATA_DEPTH = 64


@dataclass(frozen=True)
class LogFields:
    """A log's fields as stored: arrays in wholebody's conventions and names. The base of
    :class:`~wholebody.trajectory.Trajectory`, which checks them at construction.

    Attributes
    ----------
    time : ndarray, shape (N,)
        Sample times [s].
    q : ndarray, shape (N, 7 + nj)
        Base pose (position, quaternion x-y-z-w) and joint positions in ``joint_names`` order.
    v : ndarray, shape (N, 6 + nj)
        Base twist in the base frame, then joint velocities.
    a : ndarray, shape (N, 6 + nj) or None
        Accelerations, same layout; None when the log has none.
    tau : ndarray, shape (N, nj) or None
        Joint torques [N m].
    joint_names : tuple of str
        Names of the joint columns.
    contact_names : tuple of str
        Names of the contacts (matched to :class:`Contact` names when checking).
    contact_wrenches : ndarray, shape (N, k, 6)
        ``(f, tau)`` world axes at each contact frame's origin; point contacts have tau = 0.
    external_frames : tuple of str
        Frames where known external wrenches act (a push).
    external_wrenches : ndarray, shape (N, e, 6) or None
        World axes at those frames' origins.
    accelerations_estimated : bool
        True when ``a`` was computed from ``v`` rather than logged.
    metadata : dict
        JSON-compatible free-form data (robot name, source, units note).
    source : str
        Where the fields came from (a path), for messages.
    contact_active : ndarray of bool, shape (N, k), or None
        The contact schedule: per sample and contact (``contact_names`` order), whether the
        contact is active (touching, may carry a wrench). None when unknown; a log with no
        contacts has none (an (N, 0) mask becomes None). Integers 0 / 1 are converted.
    contact_points_local : ndarray, shape (k, 3), or None
        When given, each contact wrench's moment is about this point instead of the contact
        frame's origin: a point fixed in the contact frame (contact-frame coordinates [m],
        e.g. the ankle). Finite. Exclusive with ``contact_points_world``.
    contact_points_world : ndarray, shape (N, k, 3), or None
        When given, each contact wrench's moment is about this point, per sample (world
        coordinates [m], e.g. the measured CoP). NaN is allowed where the force is zero.
    point_forces : ndarray, shape (N, m, 3), or None
        Point forces on the robot, world axes [N], each part of the contact
        ``point_force_contacts[j]``: the contact's total wrench is ``contact_wrenches`` plus
        these forces at their positions.
    point_force_positions : ndarray, shape (N, m, 3), or None
        Where each point force acts, world coordinates [m] (NaN allowed where the force is
        zero).
    point_force_contacts : tuple of str, length m
        The contact (one of ``contact_names``; repeats allowed) of each point force.
    external_points_local : ndarray, shape (e, 3), or None
        The point each external wrench's moment is about, fixed in its frame [m] (a push
        at a point of a link). Exclusive with ``external_points_world``.
    external_points_world : ndarray, shape (N, e, 3), or None
        The same per sample, world coordinates [m].

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


def as_mapping(value: Any, where: str, expect: str) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else :class:`LogFormatError` saying ``where`` takes
    ``{name: expect}``."""
    if not isinstance(value, Mapping):
        raise LogFormatError(
            f"{where} must be a mapping {{name: {expect}}}, got {type(value).__name__}"
            + (f" of shape {np.shape(value)}" if isinstance(value, np.ndarray) else "")
        )
    return value


def points_by_name(
    value: Any, names: tuple[str, ...], where: str, source: str, key: str, of: str
) -> Array:
    """A (len(names), 3) array [m] from ``{name: [x, y, z]}``; names absent get the frame
    origin. Messages start with ``where`` (an argument, or a metadata key of a file)."""
    value = as_mapping(value, where, "(3,) point [m]")
    unknown = [n for n in value if n not in names]
    if unknown:
        raise LogFormatError(
            f"{where} names {unknown[0]!r}, which is not one of the {of} {list(names)}"
        )
    out = np.zeros((len(names), 3))
    for j, name in enumerate(names):
        if name in value:
            point = as_float_array(value[name], f"{key}[{name!r}]", source)
            if point.shape != (3,):
                raise LogFormatError(
                    f"{where} {name!r} must have shape (3,) [m], got {point.shape}"
                )
            out[j] = point
    return out


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


BASE_NQ, BASE_NV = 7, 6


class FieldReader(ABC):
    """A log file opened for reading: names, sizes and metadata read at once, samples by range.

    Subclasses set the attributes below in their constructor and implement :meth:`_raw`.

    Attributes
    ----------
    source : str
        The path, for messages.
    n_samples : int
        Number of samples N.
    joint_names, contact_names, external_frames : tuple of str
    metadata : dict
    accelerations_estimated : bool
    has_accelerations, has_torques, has_external : bool
        Whether ``a``, ``tau`` and ``external_wrenches`` are in the file.
    has_active : bool
        Whether the file holds a contact schedule (``contact_active``); False by default.
    has_points : frozenset of str
        Which per-sample point fields (:data:`~wholebody.io.logfiles.fields.POINT_SAMPLE_FIELDS`)
        the file holds; empty by default.
    point_force_contacts : tuple of str
        The contact of each point force (m entries); () by default.
    contact_points_local, external_points_local : ndarray, (k, 3) and (e, 3), or None
        Points fixed in the contact / external frames, read at opening; None by default.
    """

    source: str
    n_samples: int
    joint_names: tuple[str, ...]
    contact_names: tuple[str, ...]
    external_frames: tuple[str, ...]
    metadata: dict[str, Any]
    accelerations_estimated: bool
    has_accelerations: bool
    has_torques: bool
    has_external: bool
    has_active: bool = False
    has_points: frozenset[str] = frozenset()
    point_force_contacts: tuple[str, ...] = ()
    contact_points_local: NDArray[np.float64] | None = None
    external_points_local: NDArray[np.float64] | None = None
    #: datetime64 of the first sample when the file's times are datetimes, else None.
    time_origin: np.datetime64 | None = None

    @abstractmethod
    def _raw(self, name: str, start: int, stop: int) -> NDArray[Any]:
        """Samples ``start:stop`` of a numeric field, as float64 (the time field may be
        datetime64 or timedelta64; ``contact_active`` bool, or integers for
        :meth:`read` to check)."""

    def close(self) -> None:
        """Release the file (a no-op for formats read whole)."""
        return None

    def expected_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shape of each numeric field present, from the names and ``n_samples``."""
        N, nj = self.n_samples, len(self.joint_names)
        shapes: dict[str, tuple[int, ...]] = {
            "time": (N,),
            "q": (N, BASE_NQ + nj),
            "v": (N, BASE_NV + nj),
            "contact_wrenches": (N, len(self.contact_names), 6),
        }
        if self.has_accelerations:
            shapes["a"] = (N, BASE_NV + nj)
        if self.has_torques:
            shapes["tau"] = (N, nj)
        if self.has_external:
            shapes["external_wrenches"] = (N, len(self.external_frames), 6)
        if self.has_active:
            shapes[ACTIVE_FIELD] = (N, len(self.contact_names))
        widths = {
            "contact_points_world": len(self.contact_names),
            "point_forces": len(self.point_force_contacts),
            "point_force_positions": len(self.point_force_contacts),
            "external_points_world": len(self.external_frames),
        }
        for name in POINT_SAMPLE_FIELDS:
            if name in self.has_points:
                shapes[name] = (N, widths[name], 3)
        return shapes

    def check_shapes(self, declared: dict[str, tuple[int, ...]]) -> None:
        """Compare declared shapes with the expected ones (messages as ``Trajectory``'s)."""
        nj = len(self.joint_names)
        if self.n_samples == 0:
            raise LogFormatError(f"{self.source}: the log has no samples")
        for name, shape in self.expected_shapes().items():
            got = declared[name]
            if len(got) != len(shape):
                raise LogFormatError(
                    f"{self.source}: field {name!r} must have {len(shape)} "
                    f"dimensions, got shape {got}"
                )
            if got != shape:
                detail = f" (N samples, base + {nj} joints)" if name in ("q", "v") else ""
                raise LogFormatError(
                    f"{self.source}: field {name!r} must have shape {shape}{detail}, got {got}"
                )

    def init_points(self, present: Any, has_force_contacts: bool) -> None:
        """Set :attr:`has_points` from the names of the fields ``present``, refusing point
        forces without their positions or their contacts (and the reverse)."""
        self.has_points = frozenset(n for n in POINT_SAMPLE_FIELDS if n in present)
        pair = ("point_forces", "point_force_positions")
        given = [n for n in pair if n in self.has_points]
        if given and len(given) < 2:
            other = pair[1] if given[0] == pair[0] else pair[0]
            raise LogFormatError(
                f"{self.source}: field {given[0]!r} needs {other!r} (point forces and "
                "their positions come together)"
            )
        if given and not has_force_contacts:
            raise LogFormatError(
                f"{self.source}: field 'point_forces' needs 'point_force_contacts' (the "
                "contact each point force belongs to)"
            )
        if has_force_contacts and not given:
            raise LogFormatError(
                f"{self.source}: field 'point_force_contacts' is given without "
                "'point_forces' and 'point_force_positions'"
            )

    def _text(self, name: str) -> Any:
        """A names or metadata field as stored (formats of named fields only)."""
        raise NotImplementedError

    def _static(self, name: str) -> NDArray[np.float64]:
        """A point field fixed in frames, as float64 (formats of named fields only)."""
        raise NotImplementedError

    def _declared(self, name: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
        """A numeric field's declared shape and dtype, nothing read (formats of named
        fields only)."""
        raise NotImplementedError

    def open_named(self, present: Collection[str]) -> None:
        """Names, metadata, points fixed in frames and declared shapes of a format that stores
        each field under its name (``.npz``, ``.h5``; ``present``: the names in the file),
        read through :meth:`_text`, :meth:`_static` and :meth:`_declared`."""
        src = self.source
        missing = [k for k in REQUIRED if k not in present]
        if missing:
            raise LogFormatError(f"{src}: missing field(s) {missing}; present: {sorted(present)}")
        self.has_accelerations, self.has_torques = "a" in present, "tau" in present
        self.has_external = "external_wrenches" in present
        self.has_active = ACTIVE_FIELD in present
        if self.has_external and "external_frames" not in present:
            raise LogFormatError(
                f"{src}: field 'external_wrenches' needs 'external_frames' (the frames they act on)"
            )
        self.metadata, self.accelerations_estimated = {}, False
        if "metadata" in present:
            self.metadata, self.accelerations_estimated = parse_metadata(
                self._text("metadata"), src
            )
        names = {k: check_names(self._text(k), k, src) if k in present else () for k in NAME_FIELDS}
        self.joint_names, self.contact_names = names["joint_names"], names["contact_names"]
        self.external_frames = names["external_frames"] if self.has_external else ()
        has_labels = POINT_FORCE_CONTACTS in present
        self.init_points(present, has_labels)
        if has_labels:
            labels = self._text(POINT_FORCE_CONTACTS)
            self.point_force_contacts = check_labels(labels, POINT_FORCE_CONTACTS, src)
        for name in POINT_STATIC_FIELDS:
            if name in present:
                setattr(self, name, self._static(name))
        declared: dict[str, tuple[int, ...]] = {}
        for name in NUMERIC_FIELDS:
            if name in present:
                shape, dtype = self._declared(name)
                if name == ACTIVE_FIELD:
                    if dtype.kind not in "biu":
                        as_bool_array(np.zeros(0, dtype=dtype), name, src)
                elif dtype.kind not in "fiu" and not (name == "time" and dtype.kind in "Mm"):
                    as_float_array(np.zeros(0, dtype=dtype), name, src)  # it names the kind
                check_declared_size(src, name, shape, dtype.itemsize)
                declared[name] = shape
        if len(declared["time"]) != 1:
            raise LogFormatError(
                f"{src}: field 'time' must have 1 dimensions, got shape {declared['time']}"
            )
        self.n_samples = declared["time"][0]
        self.check_shapes(declared)
        self.init_time()

    def first_time(self) -> np.datetime64 | None:
        """The first sample's datetime when the time field holds datetimes."""
        raw = self._raw("time", 0, 1)
        if raw.dtype.kind != "M":
            return None
        origin = raw[0]
        if np.isnat(origin):
            raise LogFormatError(
                f"{self.source}: field 'time' holds datetimes and its first "
                "sample is not a time (NaT); it is the origin of the seconds"
            )
        return origin

    def init_time(self) -> None:
        """Find the time origin of datetime logs and record it as ``metadata['time_origin']``
        (ISO 8601, nanoseconds)."""
        self.time_origin = self.first_time()
        if self.time_origin is not None:
            self.metadata["time_origin"] = str(np.datetime_as_string(self.time_origin, unit="ns"))

    def _bounds(self, start: int, stop: int | None) -> tuple[int, int]:
        N = self.n_samples
        stop = N if stop is None else stop
        if not (0 <= start <= stop <= N) or start == stop:
            raise LogFormatError(
                f"{self.source}: samples [{start}, {stop}) are not a non-empty "
                f"range of the log's {N} samples"
            )
        return int(start), int(stop)

    def time(self, start: int, stop: int) -> NDArray[np.float64]:
        """Sample times ``start:stop`` [s] (datetimes as seconds since the first sample)."""
        raw = self._raw("time", start, stop)
        if raw.dtype.kind in "Mm":
            return seconds_from_times(raw, self.time_origin)
        return raw

    def read(self, start: int = 0, stop: int | None = None) -> LogFields:
        """Samples ``start:stop`` (all by default) as :class:`LogFields`.

        The times are checked to increase across ``start`` (against the sample before it).
        """
        start, stop = self._bounds(start, stop)
        width = sum(math.prod(shape[1:]) for shape in self.expected_shapes().values())
        check_declared_size(
            self.source,
            f"reading samples {start}..{stop - 1}",
            (stop - start, width),
            8,
            field=False,
        )
        lo = max(start - 1, 0)
        t = self.time(lo, stop)
        check_time_increasing(t, self.source, offset=lo)
        arrays = {
            name: self._raw(name, start, stop) for name in self.expected_shapes() if name != "time"
        }
        return LogFields(
            time=t[start - lo :],
            a=arrays.pop("a", None),
            tau=arrays.pop("tau", None),
            joint_names=self.joint_names,
            contact_names=self.contact_names,
            external_frames=self.external_frames,
            accelerations_estimated=self.accelerations_estimated,
            metadata=dict(self.metadata),
            source=self.source,
            contact_points_local=self.contact_points_local,
            point_force_contacts=self.point_force_contacts,
            external_points_local=self.external_points_local,
            **arrays,
        )


#: Used when the available memory cannot be measured.
FALLBACK_MEMORY = 64 * 2**30


def check_input_path(path: Path) -> None:
    """Raise :class:`LogFileError` unless ``path`` is a readable regular file."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise LogFileError(f"{path}: no such log file") from None
    except PermissionError as exc:
        raise LogFileError(f"{path}: cannot open the log file: permission denied") from exc
    except OSError as exc:
        raise LogFileError(f"{path}: cannot open the log file: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(st.st_mode):
        raise LogFileError(f"{path}: is a directory, not a log file")
    if not stat.S_ISREG(st.st_mode):
        raise LogFileError(f"{path}: is not a regular file (a device, pipe or socket)")
    if not os.access(path, os.R_OK):
        raise LogFileError(f"{path}: cannot open the log file: permission denied")


def available_memory() -> int:
    """Bytes of memory available now (psutil when installed, else ``sysconf``), or
    :data:`FALLBACK_MEMORY` when neither can tell."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # noqa: BLE001 - psutil is optional and may fail in a sandbox
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return FALLBACK_MEMORY


def _gb(n: float) -> str:
    return f"{n / 1e9:.3g} GB"


def check_declared_size(
    source: str,
    name: str,
    shape: Sequence[int],
    itemsize: int,
    limit: int | None = None,
    *,
    field: bool = True,
) -> None:
    """Raise :class:`LogFormatError` when a field's declared size exceeds ``limit`` bytes
    (default: the memory available now); ``field=False`` names ``name`` as it is (a range)."""
    what = f"field {name!r}" if field else name
    if any(int(n) < 0 for n in shape):
        raise LogFormatError(f"{source}: {what} declares a negative shape {tuple(shape)}")
    size = math.prod(int(n) for n in shape) * int(itemsize)
    limit = available_memory() if limit is None else limit
    if size > limit:
        raise LogFormatError(
            f"{source}: {what} declares shape {tuple(shape)} "
            f"({_gb(size)}), more than the {_gb(limit)} of memory available; "
            "refusing to read it"
        )


def _reason(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if isinstance(exc, NotADirectoryError):
        return "a part of the path is a file, not a directory"
    return exc.strerror or str(exc)


@contextmanager
def output_file(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path``, renamed to ``path`` when the block succeeds.

    Raises
    ------
    OutputError
        ``path`` is a directory, a parent is a regular file, the directory is read-only, or
        the write fails; the message names the path and the reason.
    """
    if path.is_dir():
        raise OutputError(f"{path}: cannot write the log: is a directory")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(
                    f"{path}: cannot write the log: {parent} is a file, not a directory"
                )
            break
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(
            f"{path}: cannot create the directory {path.parent}: {_reason(exc)}"
        ) from exc
    if not os.access(path.parent, os.W_OK):
        raise OutputError(
            f"{path}: cannot write the log: permission denied (the directory "
            f"{path.parent} is not writable)"
        )
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write the log: {_reason(exc)}") from exc
    finally:
        try:
            tmp.unlink()
        except OSError:
            pass


def is_float32(x: Array) -> bool:
    """Whether every finite value of ``x`` is exactly a float32 (a log stored in single
    precision; a float64 value of 6 or more significant digits almost never is)."""
    x = np.asarray(x)
    if x.dtype == np.float32:
        return True
    finite = x[np.isfinite(x)]
    if finite.size < 16 or not np.any(finite != np.round(finite)):
        return False  # integers and tiny arrays say nothing
    with np.errstate(over="ignore"):
        return bool(np.all(finite.astype(np.float32).astype(np.float64) == finite))


def storage_resolution(x: Array, float32: bool | None = None) -> Array:
    """The rounding step of each value of ``x`` in its storage precision: ``spacing(|x|)``
    in float32 when the data are float32 (:func:`is_float32`), else in float64. Same
    shape; NaN stays NaN."""
    x = np.asarray(x, dtype=np.float64)
    single = is_float32(x) if float32 is None else float32
    if single:
        with np.errstate(over="ignore", invalid="ignore"):
            return np.spacing(np.abs(x).astype(np.float32)).astype(np.float64)
    return np.spacing(np.abs(x))
