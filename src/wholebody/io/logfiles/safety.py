"""Safe reading and writing: input paths, declared sizes against memory, output paths.

Reading never trusts a size a file declares: each field's shape times its item size is
compared with the memory available before anything is read. Writing goes to a temporary file
beside the target, renamed into place, so a failed write leaves no half file.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ...errors import LogFileError, LogFormatError, OutputError

__all__ = ["check_input_path", "available_memory", "check_declared_size", "output_file"]

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
