"""``.csv`` logs: one header row of named columns (``table`` layout), one row per sample.

Read and written with the :mod:`csv` module (RFC 4180 quoting), UTF-8. Floats are written
with ``repr`` precision, so a round trip is exact; ``nan``, ``inf`` and empty fields read as
NaN / infinity / NaN. An optional first line ``# wholebody: {JSON}`` carries the metadata.
A CSV log is read whole (it has no index to seek by sample).
"""

from __future__ import annotations

import csv
import io
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import LogFormatError
from .fields import LogFields, available_memory, dump_metadata, output_file, parse_metadata
from .table import TableReader, column_label, table_columns, table_metadata

__all__ = ["CsvReader", "write_csv", "METADATA_PREFIX"]

METADATA_PREFIX = "# wholebody: "


def _decode(path: Path) -> str:
    size = path.stat().st_size
    if size * 8 > available_memory():  # text plus its parsed rows
        raise LogFormatError(
            f"{path}: a {size / 1e9:.3g} GB CSV log does not fit the memory "
            "available; convert it to Parquet or HDF5, which are read in chunks"
        )
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise LogFormatError(
            f"{path}: not UTF-8 text (line {line}); save the CSV as UTF-8"
        ) from None


def _to_float(
    cells: NDArray[Any], header: list[str], first_line: list[int], source: str
) -> NDArray[np.float64]:
    cells = np.char.strip(cells)
    cells[cells == ""] = "nan"
    try:
        return cells.astype(np.float64)
    except ValueError:
        pass
    for j in range(cells.shape[1]):
        try:
            cells[:, j].astype(np.float64)
        except ValueError:
            for i, text in enumerate(cells[:, j]):
                try:
                    float(text)
                except ValueError:
                    raise LogFormatError(
                        f"{source}: line {first_line[i]}, {column_label(header, j)}: not a number"
                    ) from None
    raise LogFormatError(f"{source}: a field is not a number")  # pragma: no cover


def _arrow_parse(text: str) -> tuple[list[str], NDArray[np.float64]] | None:
    """Header and table parsed by ``pyarrow.csv`` when pyarrow is installed (exact, about
    ten times faster than Python's ``float``); None when pyarrow is absent or the text is not
    a clean numeric table (the :mod:`csv` path then gives the message)."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pc
    except ImportError:
        return None
    try:
        table = pc.read_csv(
            pa.BufferReader(text.encode("utf-8")),
            read_options=pc.ReadOptions(use_threads=False),
            convert_options=pc.ConvertOptions(null_values=[""], strings_can_be_null=False),
        )
    except Exception:  # noqa: BLE001 - any parse problem: the csv module path explains it
        return None
    header = [str(n).strip() for n in table.schema.names]
    t = pa.types
    if len(set(header)) != len(header) or not all(
        t.is_floating(f.type) or t.is_integer(f.type) or t.is_null(f.type) for f in table.schema
    ):
        return None
    out = np.empty((table.num_rows, len(header)))
    for k, col in enumerate(table.columns):
        if t.is_null(col.type):
            out[:, k] = np.nan
        else:
            out[:, k] = col.cast(pa.float64()).to_numpy(zero_copy_only=False)
    return header, out


def _fast_parse(text: str, offset: int) -> tuple[list[str], NDArray[np.float64]] | None:
    """Header and table of a CSV without quotes or empty fields, parsed in C; None when the
    text needs the :mod:`csv` module (quotes, empty fields, a bad line: it gives the
    message)."""
    if '"' in text or "\r" in text:
        return None
    head, _, body = text.partition("\n")
    header = [h.strip() for h in head.split(",")]
    commas = len(header) - 1
    lines = [line for line in body.split("\n") if line.strip()]
    if not lines or any(line.count(",") != commas for line in lines):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            flat = np.fromstring(",".join(lines), dtype=np.float64, sep=",")
        except (ValueError, DeprecationWarning):
            return None
    if flat.size != len(lines) * len(header):
        return None
    return header, flat.reshape(len(lines), len(header))


def _csv_parse(text: str, offset: int, source: str) -> tuple[list[str], NDArray[np.float64]]:
    """Header and table through the :mod:`csv` module, with messages naming line and
    column."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        first = next(reader, None)
        if first is None:
            raise LogFormatError(f"{source}: empty file")
        header = [h.strip() for h in first]
        width = len(header)
        rows, lines = [], []
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) != width:
                raise LogFormatError(
                    f"{source}: line {reader.line_num + offset} has "
                    f"{len(row)} fields, the header {width} (truncated "
                    "file?)"
                )
            rows.append(row)
            lines.append(reader.line_num + offset)
    except csv.Error as exc:
        raise LogFormatError(
            f"{source}: line {reader.line_num + offset}: not valid CSV: {exc}"
        ) from exc
    if not rows:
        return header, np.zeros((0, width))
    cells = np.array(rows, dtype=str).reshape(len(rows), width)
    return header, _to_float(cells, header, lines, source)


class CsvReader(TableReader):
    """A ``.csv`` log, parsed whole at opening (see the module docstring)."""

    def __init__(self, path: Path):
        self.source = str(path)
        text = _decode(path)
        metadata: dict[str, Any] = {}
        estimated = False
        offset = 0
        if text.startswith(METADATA_PREFIX):
            first, _, text = text.partition("\n")
            metadata, estimated = parse_metadata(
                first[len(METADATA_PREFIX) :].rstrip("\r"), self.source
            )
            offset = 1
        if not text.strip():
            raise LogFormatError(f"{path}: empty file")
        parsed = _arrow_parse(text) or _fast_parse(text, offset)
        if parsed is None:
            parsed = _csv_parse(text, offset, self.source)
        self.header, self._table = parsed
        self._layout(metadata, estimated)
        self.n_samples = self._table.shape[0]
        if self.n_samples == 0:
            raise LogFormatError(f"{path}: the log has no samples")
        self._col = {h: i for i, h in enumerate(self.header)}
        self.init_time()

    def _columns(self, names: list[str], start: int, stop: int) -> NDArray[Any]:
        return self._table[start:stop, [self._col[n] for n in names]]


def write_csv(fields: LogFields, path: Path) -> None:
    """Write ``fields`` as CSV: a metadata comment line, the header, one row per sample."""
    header, columns = table_columns(fields)
    meta = dump_metadata(fields, str(path), table_metadata(fields))
    n_float = sum(c.dtype.kind == "f" for c in columns)
    rows: Any = np.column_stack(columns[:n_float]).tolist() if n_float else []
    if n_float < len(columns):  # the active: columns, written as 0 / 1
        flags = np.column_stack(columns[n_float:]).tolist()
        rows = [r + f for r, f in zip(rows, flags, strict=True)]
    with output_file(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        fh.write(METADATA_PREFIX + meta + "\n")
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
