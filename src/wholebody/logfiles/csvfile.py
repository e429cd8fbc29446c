"""``.csv`` logs: one header row of named columns (``table`` layout), one row per sample.

Read and written with the :mod:`csv` module (RFC 4180 quoting), UTF-8. Floats are written
with ``repr`` precision, so a round trip is exact; ``nan``, ``inf`` and empty fields read as
NaN / infinity / NaN. An optional first line ``# wholebody: {JSON}`` carries the metadata.
A CSV log is read whole (it has no index to seek by sample).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import LogFormatError
from .fields import LogFields, dump_metadata, parse_metadata
from .safety import available_memory, output_file
from .table import TableReader, table_columns

__all__ = ["CsvReader", "write_csv", "METADATA_PREFIX"]

METADATA_PREFIX = "# wholebody: "


def _decode(path: Path) -> str:
    size = path.stat().st_size
    if size * 8 > available_memory():  # text plus its parsed rows
        raise LogFormatError(f"{path}: a {size / 1e9:.3g} GB CSV log does not fit the memory "
                             "available; convert it to Parquet or HDF5, which are read in chunks")
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise LogFormatError(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} on line "
                             f"{line}); save the CSV as UTF-8") from exc


def _to_float(cells: NDArray[Any], header: list[str], first_line: list[int],
              source: str) -> NDArray[np.float64]:
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
                    raise LogFormatError(f"{source}: line {first_line[i]}, column "
                                         f"{header[j]!r}: {str(text)[:40]!r} is not a "
                                         "number") from None
    raise LogFormatError(f"{source}: a field is not a number")  # pragma: no cover


class CsvReader(TableReader):
    """A ``.csv`` log, parsed whole at opening (see the module docstring)."""

    def __init__(self, path: Path):
        self.source = str(path)
        text = _decode(path)
        metadata: dict[str, Any] = {}
        estimated = False
        if text.startswith(METADATA_PREFIX):
            first, _, text = text.partition("\n")
            metadata, estimated = parse_metadata(first[len(METADATA_PREFIX):].rstrip("\r"),
                                                 self.source)
            offset = 1
        else:
            offset = 0
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        try:
            header = next(reader, None)
            if header is None:
                raise LogFormatError(f"{path}: empty file")
            self.header = [h.strip() for h in header]
            width = len(self.header)
            rows, lines = [], []
            for row in reader:
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                if len(row) != width:
                    raise LogFormatError(f"{path}: line {reader.line_num + offset} has "
                                         f"{len(row)} fields, the header {width} (truncated "
                                         "file?)")
                rows.append(row)
                lines.append(reader.line_num + offset)
        except csv.Error as exc:
            raise LogFormatError(f"{path}: line {reader.line_num + offset}: not valid CSV: "
                                 f"{exc}") from exc
        self._layout(metadata, estimated)
        self.n_samples = len(rows)
        if self.n_samples == 0:
            raise LogFormatError(f"{path}: the log has no samples")
        used = sorted({self.header.index(c) for cols in self._names.values() for c in cols})
        cells = np.array(rows, dtype=str).reshape(len(rows), width)[:, used]
        self._table = _to_float(cells, [self.header[i] for i in used], lines, self.source)
        self._col = {self.header[i]: k for k, i in enumerate(used)}
        self.init_time()

    def _columns(self, names: list[str], start: int, stop: int) -> NDArray[Any]:
        return self._table[start:stop, [self._col[n] for n in names]]


def write_csv(fields: LogFields, path: Path) -> None:
    """Write ``fields`` as CSV: a metadata comment line, the header, one row per sample."""
    header, columns = table_columns(fields)
    meta = dump_metadata(fields, str(path))
    rows = np.column_stack(columns).tolist() if columns else []
    with output_file(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        fh.write(METADATA_PREFIX + meta + "\n")
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)

