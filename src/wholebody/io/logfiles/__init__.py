"""Log files: the fields of a log (arrays and names) read from and written to ``.npz``,
``.csv`` (core), ``.parquet`` and ``.h5`` (extras). Knows nothing of ``Trajectory``, which
builds itself from :class:`LogFields`; :mod:`wholebody.io` is the public API on top.

A file-level problem raises :class:`~wholebody.errors.LogFormatError` naming the file and the
field, column or key (:class:`~wholebody.errors.LogFileError` for a path that cannot be opened);
a problem writing raises :class:`~wholebody.errors.OutputError` naming the path and the reason.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import LogFormatError
from .fields import FieldReader, LogFields, check_input_path

# Each format's module (its reader and writer) is imported on the first use of that format.

__all__ = ["SUFFIXES", "LogFields", "FieldReader", "open_fields", "write_fields"]

SUFFIXES = (".npz", ".csv", ".parquet", ".h5", ".hdf5")


def _unknown(path: Path) -> LogFormatError:
    return LogFormatError(
        f"{path}: unknown log format {path.suffix.lower()!r}; known: {', '.join(SUFFIXES)}"
    )


def open_fields(path: str | Path) -> FieldReader:
    """Open a log file for reading; the format follows the suffix.

    Raises
    ------
    LogFileError
        The path is missing, a directory, not a regular file, or not readable.
    LogFormatError
        The file cannot be read as a log (names the field, column or key).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        if path.is_file():
            raise _unknown(path)
    check_input_path(path)
    if suffix == ".npz":
        from .npz import NpzReader

        return NpzReader(path)
    if suffix == ".csv":
        from .csvfile import CsvReader

        return CsvReader(path)
    if suffix == ".parquet":
        from .parquet import ParquetReader

        return ParquetReader(path)
    if suffix in (".h5", ".hdf5"):
        from .hdf5 import Hdf5Reader

        return Hdf5Reader(path)
    raise _unknown(path)


def write_fields(fields: LogFields, path: str | Path) -> None:
    """Write a log's fields; the format follows the suffix.

    Raises
    ------
    LogFormatError
        Unknown suffix, or metadata that is not JSON-serialisable.
    OutputError
        The path cannot be written (a directory, a read-only directory, a file in the way).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        from .npz import write_npz

        write_npz(fields, path)
    elif suffix == ".csv":
        from .csvfile import write_csv

        write_csv(fields, path)
    elif suffix == ".parquet":
        from .parquet import write_parquet

        write_parquet(fields, path)
    elif suffix in (".h5", ".hdf5"):
        from .hdf5 import write_hdf5

        write_hdf5(fields, path)
    else:
        raise _unknown(path)
