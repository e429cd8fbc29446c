"""Column layout shared by the table formats (``.csv``, ``.parquet``).

``time``; ``base_x ... base_qw``; ``q:<joint>``; ``base_vx ... base_wz``; ``v:<joint>``;
optionally ``base_dvx ... base_dwz`` and ``a:<joint>``; optionally ``tau:<joint>``;
``contact:<name>:fx|fy|fz|tx|ty|tz``; optionally ``active:<contact name>`` (0 or 1) for every
contact (the contact schedule); optionally ``external:<frame>:fx|...|tz``. Names may contain
``:`` (the component is after the last one). Columns with other names are ignored.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import LogFormatError
from .base import FieldReader
from .fields import ACTIVE_FIELD, BASE_A, BASE_Q, BASE_V, WRENCH, LogFields

__all__ = ["TableReader", "table_columns", "ACTIVE_PREFIX"]

#: Prefix of the contact schedule's columns: ``active:<contact name>``, 0 or 1.
ACTIVE_PREFIX = "active:"


def _grouped(header: list[str], prefix: str, source: str) -> list[str]:
    names: dict[str, None] = {}
    for h in header:
        if h.startswith(prefix):
            name, _, comp = h[len(prefix) :].rpartition(":")
            if comp not in WRENCH or not _:
                raise LogFormatError(
                    f"{source}: column {h!r}: expected {prefix}<name>:{'|'.join(WRENCH)}"
                )
            names[name] = None
    return list(names)


class TableReader(FieldReader):
    """A log stored as named columns; subclasses give :meth:`_columns` and the header."""

    header: list[str]

    def _layout(self, metadata: dict[str, Any], estimated: bool) -> None:
        header, source = self.header, self.source
        seen: dict[str, int] = {}
        for i, h in enumerate(header):
            if h in seen:
                raise LogFormatError(
                    f"{source}: column {h!r} appears twice (columns {seen[h] + 1} and {i + 1})"
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
        self._names = self._field_columns()
        missing_all = [
            (what, [n for n in cols if n not in seen]) for what, cols in self._names.items()
        ]
        for what, missing in missing_all:
            if missing:
                raise LogFormatError(f"{source}: missing column(s) {missing[:6]} for {what}")

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
    if fields.contact_active is not None:
        header += [ACTIVE_PREFIX + name for name in fields.contact_names]
        columns += list(np.asarray(fields.contact_active, dtype=np.uint8).T)
    return header, columns
