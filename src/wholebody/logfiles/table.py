"""Column layout shared by the table formats (``.csv``, ``.parquet``).

``time``; ``base_x ... base_qw``; ``q:<joint>``; ``base_vx ... base_wz``; ``v:<joint>``;
optionally ``base_dvx ... base_dwz`` and ``a:<joint>``; optionally ``tau:<joint>``;
``contact:<name>:fx|fy|fz|tx|ty|tz``; optionally ``external:<frame>:fx|...|tz``. Names may
contain ``:`` (the component is after the last one). Columns with other names are ignored.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import LogFormatError
from .base import FieldReader
from .fields import BASE_A, BASE_Q, BASE_V, WRENCH, LogFields

__all__ = ["TableReader", "table_columns"]


def _grouped(header: list[str], prefix: str, source: str) -> list[str]:
    names: dict[str, None] = {}
    for h in header:
        if h.startswith(prefix):
            name, _, comp = h[len(prefix):].rpartition(":")
            if comp not in WRENCH or not _:
                raise LogFormatError(f"{source}: column {h!r}: expected {prefix}<name>:"
                                     f"{'|'.join(WRENCH)}")
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
                raise LogFormatError(f"{source}: column {h!r} appears twice (columns "
                                     f"{seen[h] + 1} and {i + 1})")
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
        self._names = self._field_columns()
        missing_all = [(what, [n for n in cols if n not in seen])
                       for what, cols in self._names.items()]
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
            cols["external_wrenches"] = [f"external:{e}:{x}" for e in self.external_frames
                                         for x in WRENCH]
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
        return table

    def _time_column(self, start: int, stop: int) -> NDArray[Any]:
        return self._columns(["time"], start, stop)[:, 0]


def table_columns(fields: LogFields) -> tuple[list[str], list[NDArray[np.float64]]]:
    """Column names and columns (each shape (N,)) of ``fields`` in the table layout."""
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
    return header, [col for b in blocks for col in np.asarray(b, dtype=float).T]
