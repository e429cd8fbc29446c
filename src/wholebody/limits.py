"""Size limits checked before work starts: a reader refuses an input whose cost it can tell
in advance (the samples of a time grid, the episodes of a dataset, the bodies and nesting depth
of a model, the values of a column) with a :class:`~wholebody.errors.SizeLimitError` that says
what the input would have cost and which limit to raise.

The limits are fields of :data:`LIMITS` (a :class:`Limits`); change them for a session with
:func:`set_limits` (or as a context manager), or before starting Python with environment
variables ``WHOLEBODY_MAX_<FIELD>`` (``WHOLEBODY_MAX_GRID_SAMPLES=1e8``). The defaults are
far above what a humanoid's logs and models need and far below what would exhaust a laptop.

Example
-------
>>> from wholebody.limits import LIMITS, set_limits
>>> LIMITS.grid_samples
20000000
>>> with set_limits(grid_samples=10**8):
...     LIMITS.grid_samples
100000000
"""

from __future__ import annotations

import math
import os
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields, replace
from pathlib import Path

from .errors import InvalidArgumentError, SizeLimitError

__all__ = ["Limits", "LIMITS", "set_limits", "check_limit", "check_file_size"]


@dataclass
class Limits:
    """The limits (all counts; each field is also ``WHOLEBODY_MAX_<FIELD>`` upper-cased).

    Attributes
    ----------
    grid_samples : int
        Samples of a recording's time base (a bag's ``rate`` times its duration): 2e7 is
        5.5 hours at 1 kHz.
    episodes : int
        Episodes a dataset may declare (``total_episodes``) or hold.
    decoded_values : int
        Numbers decoded from the mapped columns of one dataset episode (8 bytes each as
        float64): 2.5e8 is 2 GB.
    model_elements : int
        XML elements of a robot description file, includes counted.
    model_bodies : int
        Bodies of an MJCF model: Pinocchio's MJCF parser needs about 0.4 GB for 200 bodies,
        1 GB for 300 and 24 GB for 1000 (it grows close to the cube of the count); humanoids
        with hands have under 100.
    model_depth : int
        Nesting depth of bodies (MJCF): Pinocchio's parser takes about 180 MB for a chain of
        100 bodies, 640 MB for 200, and grows faster than the depth; humanoids are 10 to 20
        deep.
    include_files : int
        Files an MJCF may include, directly or through others.
    text_bytes : int
        Bytes of a text file read whole: an MJCF or a file it includes, a dataset's
        ``meta/info.json``, a bag's ``metadata.yaml`` (100 MB; Menagerie's largest models
        are about 1 MB).
    """

    grid_samples: int = 20_000_000
    episodes: int = 1_000_000
    decoded_values: int = 250_000_000
    model_elements: int = 200_000
    model_bodies: int = 300
    model_depth: int = 100
    include_files: int = 1_000
    text_bytes: int = 100_000_000


def _from_environment() -> Limits:
    out = Limits()
    for f in fields(Limits):
        text = os.environ.get(f"WHOLEBODY_MAX_{f.name.upper()}")
        if text is None:
            continue
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 1:
            raise InvalidArgumentError(
                f"WHOLEBODY_MAX_{f.name.upper()} must be a number >= 1, got {text!r}"
            )
        setattr(out, f.name, int(value))
    return out


#: The limits in force (read once from the environment at import).
LIMITS: Limits = _from_environment()


class _Restore:
    """What :func:`set_limits` returns: leaving a ``with`` block restores the old values."""

    def __init__(self, old: Limits):
        self._old = old

    def __enter__(self) -> Limits:
        return LIMITS

    def __exit__(self, *exc: object) -> None:
        for f in fields(Limits):
            setattr(LIMITS, f.name, getattr(self._old, f.name))


def set_limits(**values: int) -> AbstractContextManager[Limits]:
    """Change limits now (keyword: a field of :class:`Limits`); used as a context manager,
    the old values come back at the end of the block.

    Raises
    ------
    InvalidArgumentError
        An unknown limit or a value that is not a positive integer.
    """
    names = {f.name for f in fields(Limits)}
    for key, value in values.items():
        if key not in names:
            raise InvalidArgumentError(f"unknown limit {key!r}; limits: {', '.join(sorted(names))}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"limit {key!r} must be a positive integer, got {value!r}")
    old = replace(LIMITS)
    for key, value in values.items():
        setattr(LIMITS, key, value)
    return _Restore(old)


def check_file_size(path: Path, source: str | None = None) -> None:
    """Refuse a text file larger than :data:`LIMITS` ``.text_bytes`` before it is read (a
    missing file passes: the reader names it)."""
    try:
        size = path.stat().st_size
    except OSError:
        return
    check_limit("text_bytes", size, source or str(path), f"a file of {size:,} bytes")


def check_regular_text_file(path: Path, what: str, error: type[Exception]) -> None:
    """Refuse, with ``error`` naming ``path`` and ``what`` it should be, a path that exists but
    is not a regular file (a device such as /dev/zero or a pipe would be read forever), and a
    regular file over :data:`LIMITS` ``.text_bytes``; a missing file passes (the reader names
    it)."""
    import stat

    try:
        st = path.stat()
    except OSError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{path}: is a directory, not {what}")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{path}: is not a regular file (a device, pipe or socket), not {what}")
    check_file_size(path)


def check_limit(name: str, value: float, source: str, what: str, cost: str = "") -> None:
    """Raise :class:`~wholebody.errors.SizeLimitError` when ``value`` exceeds the limit
    ``name``.

    Parameters
    ----------
    name : str
        A field of :class:`Limits`.
    value : float
        The count the input asks for.
    source : str
        The file or option, for the message.
    what : str
        What is counted ("a time grid of 4e8 samples").
    cost : str
        What it would have cost ("about 30 GB"), appended when given.
    """
    limit = getattr(LIMITS, name)
    if value > limit:
        extra = f" ({cost})" if cost else ""
        raise SizeLimitError(
            f"{source}: {what}{extra} exceeds the limit {name} = {limit:,}; refusing before "
            f"any work (raise it with wholebody.limits.set_limits({name}=...) or the "
            f"environment variable WHOLEBODY_MAX_{name.upper()})",
            name,
        )
