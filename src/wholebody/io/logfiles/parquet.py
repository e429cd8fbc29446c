"""``.parquet`` logs: the ``table`` layout in a Parquet file, read by row groups.

Only the columns used are read, one row group at a time, so reading a range of samples costs
memory in proportion to the range (plus one row group), not to the log. Written with row
groups of :data:`ROW_GROUP` rows; the metadata is JSON under the schema key ``wholebody``
(files written by pandas with ``df.attrs["wholebody"]`` are read too).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import LogFormatError, require
from .fields import LogFields, check_declared_size, dump_metadata, output_file, parse_metadata
from .table import ACTIVE_PREFIX, TableReader, table_columns, table_metadata

__all__ = ["ParquetReader", "write_parquet", "ROW_GROUP"]

#: Rows per row group when writing.
ROW_GROUP = 50_000


def _pyarrow() -> Any:
    require("pyarrow", "parquet", "Parquet logs")
    return require("pyarrow.parquet", "parquet", "Parquet logs")


def _kind(pa: Any, name: str, typ: Any) -> str | None:
    """None when the column's type reads as numbers (or, for an ``active:`` column, as
    booleans), else what it holds."""
    t = pa.types
    if name.startswith(ACTIVE_PREFIX) and t.is_boolean(typ):
        return None
    if t.is_floating(typ) or t.is_integer(typ) or t.is_null(typ):
        return None
    if name == "time" and (t.is_timestamp(typ) or t.is_duration(typ)):
        return None
    if t.is_string(typ) or t.is_large_string(typ) or t.is_dictionary(typ):
        return "strings"
    if t.is_boolean(typ):
        return "booleans"
    if t.is_timestamp(typ) or t.is_date(typ) or t.is_time(typ) or t.is_duration(typ):
        return "dates or times (only the time column may hold timestamps)"
    return f"values of type {typ}"


class ParquetReader(TableReader):
    """A ``.parquet`` log opened for reading by row groups (see the module docstring)."""

    def __init__(self, path: Path):
        pq = _pyarrow()
        import pyarrow as pa

        self.source = str(path)
        self._pa = pa
        try:
            self._file = pq.ParquetFile(path)
            schema = self._file.schema_arrow
        except Exception as exc:  # pyarrow raises several types for damaged files
            raise LogFormatError(
                f"{path}: cannot read as Parquet (truncated or not Parquet): {exc}"
            ) from exc
        meta = schema.metadata or {}
        metadata: dict[str, Any] = {}
        estimated = False
        if b"wholebody" in meta:
            metadata, estimated = parse_metadata(meta[b"wholebody"], self.source)
        elif b"PANDAS_ATTRS" in meta:
            try:
                attrs = json.loads(meta[b"PANDAS_ATTRS"])
            except (ValueError, RecursionError) as exc:
                raise LogFormatError(f"{path}: schema metadata 'PANDAS_ATTRS' is not JSON") from exc
            if isinstance(attrs, dict) and "wholebody" in attrs:
                metadata, estimated = parse_metadata(attrs["wholebody"], self.source)
        self.header = [str(n) for n in schema.names]
        self._layout(metadata, estimated)
        types = {f.name: f.type for f in schema}
        for cols in self._names.values():
            for c in cols:
                what = _kind(pa, c, types[c])
                if what is not None:
                    expected = (
                        "0 or 1 (or booleans)" if c.startswith(ACTIVE_PREFIX) else "real numbers"
                    )
                    raise LogFormatError(f"{path}: column {c!r} holds {what}; expected {expected}")
        md = self._file.metadata
        self.n_samples = int(md.num_rows)
        if self.n_samples == 0:
            raise LogFormatError(f"{path}: the log has no samples")
        sizes = [md.row_group(i).num_rows for i in range(md.num_row_groups)]
        self._starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._cache: tuple[tuple[int, ...], Any] | None = None
        width = sum(len(cols) for cols in self._names.values())
        check_declared_size(self.source, "a row group", (max(sizes), width), 8, field=False)
        self.init_time()

    def _read(self, names: list[str], start: int, stop: int) -> Any:
        """Rows ``start:stop`` of the named columns. The row groups read (all the columns
        used) are kept until a range needs others, so consecutive fields and chunks inside
        one row group decode it once."""
        first = int(np.searchsorted(self._starts, start, side="right") - 1)
        last = int(np.searchsorted(self._starts, stop, side="left"))
        groups = tuple(range(first, max(last, first + 1)))
        if self._cache is None or self._cache[0] != groups:
            self._cache = None  # release the previous groups before reading the next
            used = [c for cols in self._names.values() for c in cols]
            try:
                table = self._file.read_row_groups(list(groups), columns=used, use_threads=False)
            except Exception as exc:  # pyarrow raises several types for damaged files
                raise LogFormatError(
                    f"{self.source}: cannot read rows {start}..{stop - 1}: {exc}"
                ) from exc
            self._cache = (groups, table)
        table = self._cache[1].select(names)
        return table.slice(start - int(self._starts[first]), stop - start)

    def _columns(self, names: list[str], start: int, stop: int) -> NDArray[Any]:
        table = self._read(names, start, stop)
        out = np.empty((stop - start, len(names)))
        for k, col in enumerate(table.columns):
            out[:, k] = self._numbers(col)
        return out

    def _numbers(self, col: Any) -> NDArray[np.float64]:
        pa = self._pa
        if pa.types.is_null(col.type):
            return np.full(len(col), np.nan)
        if col.null_count:
            col = col.cast(pa.float64())
            return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
        return np.asarray(col.to_numpy(), dtype=np.float64)

    def _time_column(self, start: int, stop: int) -> NDArray[Any]:
        col = self._read(["time"], start, stop).column(0)
        pa = self._pa
        if pa.types.is_timestamp(col.type):
            return np.asarray(
                col.cast(pa.timestamp("ns", col.type.tz)).to_numpy(zero_copy_only=False),
                dtype="datetime64[ns]",
            )
        if pa.types.is_duration(col.type):
            return np.asarray(
                col.cast(pa.duration("ns")).to_numpy(zero_copy_only=False), dtype="timedelta64[ns]"
            )
        return self._numbers(col)

    def close(self) -> None:
        """Drop the row groups kept and close the file."""
        self._cache = None
        self._file.close()


def write_parquet(fields: LogFields, path: Path) -> None:
    """Write ``fields`` as Parquet (``table`` layout, row groups of :data:`ROW_GROUP` rows,
    metadata under the schema key ``wholebody``)."""
    pq = _pyarrow()
    import pyarrow as pa

    header, columns = table_columns(fields)
    table = pa.table(dict(zip(header, columns, strict=True)))
    meta = dump_metadata(fields, str(path), table_metadata(fields))
    table = table.replace_schema_metadata({"wholebody": meta})
    with output_file(path) as tmp:
        pq.write_table(table, tmp, row_group_size=ROW_GROUP)
