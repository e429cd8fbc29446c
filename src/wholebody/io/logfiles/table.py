"""Column layout shared by the table formats (``.csv``, ``.parquet``).

``time``; ``base_x ... base_qw``; ``q:<joint>``; ``base_vx ... base_wz``; ``v:<joint>``;
optionally ``base_dvx ... base_dwz`` and ``a:<joint>``; optionally ``tau:<joint>``;
``contact:<name>:fx|fy|fz|tx|ty|tz``; optionally ``active:<contact name>`` (0 or 1) for every
contact (the contact schedule); optionally ``external:<frame>:fx|...|tz``; the points of
wrenches (``docs/log-format.md``): optionally ``contact_point:<name>:x|y|z`` for every contact,
``external_point:<frame>:x|y|z`` for every external frame, and ``point_force:<j>:<contact>:
fx|fy|fz|x|y|z`` per point force ``j = 0 .. m-1``; the points fixed in frames are the metadata
entries ``contact_points_local`` and ``external_points_local`` (``{name: [x, y, z]}``). Names
may contain ``:`` (the component is after the last one). Columns with other names are ignored.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import LogFormatError
from .fields import (
    ACTIVE_FIELD,
    BASE_A,
    BASE_Q,
    BASE_V,
    POINT_STATIC_FIELDS,
    WRENCH,
    FieldReader,
    LogFields,
    as_float_array,
)

__all__ = [
    "TableReader",
    "table_columns",
    "table_metadata",
    "ACTIVE_PREFIX",
    "column_label",
    "POINT",
    "POINT_FORCE",
]

#: Prefix of the contact schedule's columns: ``active:<contact name>``, 0 or 1.
ACTIVE_PREFIX = "active:"
#: Components of a point's columns (world coordinates [m]).
POINT = ("x", "y", "z")
#: Components of a point force's columns: force (world axes [N]) then position (world [m]).
POINT_FORCE = ("fx", "fy", "fz", "x", "y", "z")
_CONTACT_POINT, _EXTERNAL_POINT, _POINT_FORCE = "contact_point:", "external_point:", "point_force:"
_PREFIXES = ("q:", "v:", "a:", "tau:", "contact:", "external:", ACTIVE_PREFIX) + (
    _CONTACT_POINT,
    _EXTERNAL_POINT,
    _POINT_FORCE,
)


def column_label(header: list[str], j: int) -> str:
    """``column 3 ('q:knee')`` for a column of the layout, ``column 3`` for any other: an
    error message names a file's column by number, and by name only when the name is one of
    the layout's (a message never quotes what else a file holds, such as the first line of a
    file that is no log)."""
    h = header[j]
    known = h == "time" or h in BASE_Q + BASE_V + BASE_A or h.startswith(_PREFIXES)
    return f"column {j + 1} ({h!r})" if known else f"column {j + 1}"


def _grouped(
    header: list[str], prefix: str, source: str, comps: tuple[str, ...] = WRENCH
) -> list[str]:
    names: dict[str, None] = {}
    for h in header:
        if h.startswith(prefix):
            name, _, comp = h[len(prefix) :].rpartition(":")
            if comp not in comps or not _:
                raise LogFormatError(
                    f"{source}: column {h!r}: expected {prefix}<name>:{'|'.join(comps)}"
                )
            names[name] = None
    return list(names)


def _point_force_columns(header: list[str], source: str) -> tuple[str, ...]:
    """The contact of each point force from the ``point_force:<j>:<contact>:<comp>`` columns
    (``j`` = 0 .. m-1, each with one contact)."""
    contact: dict[int, str] = {}
    for h in header:
        if not h.startswith(_POINT_FORCE):
            continue
        body, _, comp = h[len(_POINT_FORCE) :].rpartition(":")
        index, _, name = body.partition(":")
        if comp not in POINT_FORCE or not name or not index.isdigit():
            raise LogFormatError(
                f"{source}: column {h!r}: expected {_POINT_FORCE}<j>:<contact>:"
                f"{'|'.join(POINT_FORCE)} with j = 0, 1, ..."
            )
        j = int(index)
        if contact.setdefault(j, name) != name:
            raise LogFormatError(
                f"{source}: column {h!r}: point force {j} already belongs to contact {contact[j]!r}"
            )
    if sorted(contact) != list(range(len(contact))):
        missing = sorted(set(range(max(contact, default=-1) + 1)) - set(contact))
        raise LogFormatError(
            f"{source}: the {_POINT_FORCE} columns must number the point forces 0, 1, ...; "
            f"missing j = {missing}"
        )
    return tuple(contact[j] for j in range(len(contact)))


def _static_points(value: Any, names: tuple[str, ...], key: str, source: str) -> Any:
    """A (len(names), 3) array from the metadata entry ``{name: [x, y, z]}``; names absent
    from it get the frame origin (0, 0, 0)."""
    if not isinstance(value, dict):
        raise LogFormatError(
            f"{source}: metadata key {key!r} must be a JSON object {{name: [x, y, z]}}, got "
            f"{type(value).__name__}"
        )
    unknown = [n for n in value if n not in names]
    if unknown:
        raise LogFormatError(
            f"{source}: metadata key {key!r} names {unknown[0]!r}, which is not among {list(names)}"
        )
    out = np.zeros((len(names), 3))
    for j, name in enumerate(names):
        if name in value:
            point = as_float_array(value[name], f"{key}[{name!r}]", source)
            if point.shape != (3,):
                raise LogFormatError(
                    f"{source}: metadata key {key!r}: the point of {name!r} must be 3 "
                    f"numbers [m], got shape {point.shape}"
                )
            out[j] = point
    return out


class TableReader(FieldReader):
    """A log stored as named columns; subclasses give :meth:`_columns` and the header."""

    header: list[str]

    def _layout(self, metadata: dict[str, Any], estimated: bool) -> None:
        header, source = self.header, self.source
        seen: dict[str, int] = {}
        for i, h in enumerate(header):
            if h in seen:
                raise LogFormatError(
                    f"{source}: {column_label(header, i)} repeats column {seen[h] + 1}"
                )
            seen[h] = i
        if "time" not in seen:
            raise LogFormatError(f"{source}: missing column 'time'")
        self.metadata, self.accelerations_estimated = metadata, estimated
        self.joint_names = tuple(h[2:] for h in header if h.startswith("q:"))
        self.contact_names = tuple(_grouped(header, "contact:", source))
        self.external_frames = tuple(_grouped(header, "external:", source))
        self.has_accelerations = any(h.startswith("a:") for h in header) or BASE_A[0] in seen
        self.has_torques = any(h.startswith("tau:") for h in header)
        self.has_external = bool(self.external_frames)
        active = [h[len(ACTIVE_PREFIX) :] for h in header if h.startswith(ACTIVE_PREFIX)]
        unknown = [a for a in active if a not in self.contact_names]
        if unknown:
            raise LogFormatError(
                f"{source}: column {ACTIVE_PREFIX + unknown[0]!r} names no "
                f"contact; contacts (from the contact: columns): "
                f"{list(self.contact_names)}"
            )
        self.has_active = bool(active)
        self._layout_points(seen)
        self._names = self._field_columns()
        missing_all = [
            (what, [n for n in cols if n not in seen]) for what, cols in self._names.items()
        ]
        for what, missing in missing_all:
            if missing:
                raise LogFormatError(f"{source}: missing column(s) {missing[:6]} for {what}")

    def _layout_points(self, seen: dict[str, int]) -> None:
        header, source = self.header, self.source
        present = set()
        for prefix, names, field_name in (
            (_CONTACT_POINT, self.contact_names, "contact_points_world"),
            (_EXTERNAL_POINT, self.external_frames, "external_points_world"),
        ):
            given = _grouped(header, prefix, source, POINT)
            if not given:
                continue
            unknown = [n for n in given if n not in names]
            missing = [n for n in names if n not in given]
            if unknown or missing:
                raise LogFormatError(
                    f"{source}: {prefix} columns must give a point for every one of "
                    f"{list(names)}; unknown {unknown}, missing {missing}"
                )
            present.add(field_name)
        self.point_force_contacts = _point_force_columns(header, source)
        if self.point_force_contacts:
            present |= {"point_forces", "point_force_positions"}
        self.init_points(present, bool(self.point_force_contacts))
        for key, names in zip(
            POINT_STATIC_FIELDS, (self.contact_names, self.external_frames), strict=True
        ):
            if key in self.metadata:
                setattr(self, key, _static_points(self.metadata.pop(key), names, key, source))

    def _field_columns(self) -> dict[str, list[str]]:
        j = self.joint_names
        cols = {
            "time": ["time"],
            "q": [*BASE_Q, *(f"q:{n}" for n in j)],
            "v": [*BASE_V, *(f"v:{n}" for n in j)],
            "contact_wrenches": [f"contact:{c}:{x}" for c in self.contact_names for x in WRENCH],
        }
        if self.has_accelerations:
            cols["a"] = [*BASE_A, *(f"a:{n}" for n in j)]
        if self.has_torques:
            cols["tau"] = [f"tau:{n}" for n in j]
        if self.has_external:
            cols["external_wrenches"] = [
                f"external:{e}:{x}" for e in self.external_frames for x in WRENCH
            ]
        if self.has_active:
            cols[ACTIVE_FIELD] = [ACTIVE_PREFIX + c for c in self.contact_names]
        if "contact_points_world" in self.has_points:
            cols["contact_points_world"] = [
                f"{_CONTACT_POINT}{c}:{x}" for c in self.contact_names for x in POINT
            ]
        if "external_points_world" in self.has_points:
            cols["external_points_world"] = [
                f"{_EXTERNAL_POINT}{e}:{x}" for e in self.external_frames for x in POINT
            ]
        if self.point_force_contacts:
            pf = list(enumerate(self.point_force_contacts))
            cols["point_forces"] = [f"{_POINT_FORCE}{j}:{c}:{x}" for j, c in pf for x in WRENCH[:3]]
            cols["point_force_positions"] = [
                f"{_POINT_FORCE}{j}:{c}:{x}" for j, c in pf for x in POINT
            ]
        return cols

    @abstractmethod
    def _columns(self, names: list[str], start: int, stop: int) -> NDArray[Any]:
        """Rows ``start:stop`` of the named columns, shape (stop - start, len(names))."""

    def _raw(self, name: str, start: int, stop: int) -> NDArray[Any]:
        cols = self._names[name]
        if name == "time":
            return self._time_column(start, stop)
        table = self._columns(cols, start, stop)
        if name == "contact_wrenches":
            return table.reshape(stop - start, len(self.contact_names), 6)
        if name == "external_wrenches":
            return table.reshape(stop - start, len(self.external_frames), 6)
        if name == ACTIVE_FIELD:
            return self._flags(table, cols, start)
        if name in self.has_points:
            return table.reshape(stop - start, -1, 3)
        return table

    def _flags(self, table: NDArray[Any], cols: list[str], start: int) -> NDArray[np.bool_]:
        """The ``active:`` columns as bool, refusing anything but 0 and 1 (NaN included)."""
        bad = (table != 0) & (table != 1)
        if bad.any():
            i, j = (int(x) for x in np.argwhere(bad)[0])
            raise LogFormatError(
                f"{self.source}: column {cols[j]!r}, sample {start + i}: "
                f"{float(table[i, j])!r} is not 0 or 1 (whether the contact is "
                "active)"
            )
        return table.astype(np.bool_)

    def _time_column(self, start: int, stop: int) -> NDArray[Any]:
        return self._columns(["time"], start, stop)[:, 0]


def table_columns(fields: LogFields) -> tuple[list[str], list[NDArray[Any]]]:
    """Column names and columns (each shape (N,)) of ``fields`` in the table layout: float64,
    and uint8 (0 or 1) for the ``active:`` columns."""
    j = list(fields.joint_names)
    header = ["time", *BASE_Q, *(f"q:{n}" for n in j), *BASE_V, *(f"v:{n}" for n in j)]
    blocks = [fields.time[:, None], fields.q, fields.v]
    if fields.a is not None:
        header += [*BASE_A, *(f"a:{n}" for n in j)]
        blocks.append(fields.a)
    if fields.tau is not None:
        header += [f"tau:{n}" for n in j]
        blocks.append(fields.tau)
    for k, name in enumerate(fields.contact_names):
        header += [f"contact:{name}:{c}" for c in WRENCH]
        blocks.append(fields.contact_wrenches[:, k])
    if fields.external_wrenches is not None:
        for k, name in enumerate(fields.external_frames):
            header += [f"external:{name}:{c}" for c in WRENCH]
            blocks.append(fields.external_wrenches[:, k])
    columns: list[NDArray[Any]] = [col for b in blocks for col in np.asarray(b, dtype=float).T]
    points = []
    if fields.contact_points_world is not None:
        for k, name in enumerate(fields.contact_names):
            header += [f"{_CONTACT_POINT}{name}:{x}" for x in POINT]
            points.append(fields.contact_points_world[:, k])
    if fields.external_points_world is not None:
        for k, name in enumerate(fields.external_frames):
            header += [f"{_EXTERNAL_POINT}{name}:{x}" for x in POINT]
            points.append(fields.external_points_world[:, k])
    if fields.point_forces is not None and fields.point_force_positions is not None:
        for i, name in enumerate(fields.point_force_contacts):
            header += [f"{_POINT_FORCE}{i}:{name}:{x}" for x in POINT_FORCE]
            points += [fields.point_forces[:, i], fields.point_force_positions[:, i]]
    columns += [col for b in points for col in np.asarray(b, dtype=float).T]
    if fields.contact_active is not None:
        header += [ACTIVE_PREFIX + name for name in fields.contact_names]
        columns += list(np.asarray(fields.contact_active, dtype=np.uint8).T)
    return header, columns


def table_metadata(fields: LogFields) -> dict[str, Any]:
    """The reserved metadata entries of a table format: the points fixed in frames,
    ``{"contact_points_local": {name: [x, y, z]}, "external_points_local": {...}}``."""
    out: dict[str, Any] = {}
    for key, names in zip(
        POINT_STATIC_FIELDS, (fields.contact_names, fields.external_frames), strict=True
    ):
        value = getattr(fields, key)
        if value is not None:
            out[key] = {n: [float(x) for x in p] for n, p in zip(names, value, strict=True)}
    return out
