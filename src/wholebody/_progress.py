"""Progress bars for long batch work: tqdm when installed, else nothing (said once, with the
install line, the first time a bar is asked for).

One bar per run: :func:`run_progress` opens it for the whole run (all chunks of a log), and
the work inside, in this process, moves it with :func:`advance`. Worker processes never draw
(a forked copy of the bar is not theirs); their caller advances the bar as their results come.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

# The bar of the run under way, with the process that owns it.
_ACTIVE: list[tuple[int, Any]] = []
# Whether the missing tqdm was said (once per process).
_SAID: list[bool] = []


def _tqdm() -> Any:
    """tqdm's bar class, or None without tqdm: a warning says so, once per process."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        if not _SAID:
            _SAID.append(True)
            from .errors import WholebodyWarning

            warnings.warn(
                "no progress bar: tqdm is not installed (pip install tqdm, or the extra: "
                "pip install -e '.[progress]' in a clone of wholebody)",
                WholebodyWarning,
                stacklevel=4,
            )
        return None
    return tqdm


def progress_bar(iterable: Iterable[Any], **kwargs: Any) -> Iterable[Any]:
    """``iterable`` wrapped in a tqdm bar (``kwargs`` passed on), or itself without tqdm."""
    tqdm = _tqdm()
    return iterable if tqdm is None else tqdm(iterable, **kwargs)


@contextmanager
def run_progress(total: int, enabled: bool, **kwargs: Any) -> Iterator[None]:
    """One tqdm bar of ``total`` steps for the run inside the ``with`` (nothing when not
    ``enabled`` or without tqdm); :func:`advance` moves it."""
    bar = None
    tqdm = _tqdm() if enabled else None
    if tqdm is not None:
        bar = tqdm(total=total, **kwargs)
        _ACTIVE.append((os.getpid(), bar))
    try:
        yield
    finally:
        if bar is not None:
            _ACTIVE.remove((os.getpid(), bar))
            bar.close()


def advance(n: int) -> None:
    """Move the run's bar by ``n`` steps (nothing without one, or in a worker process)."""
    if _ACTIVE and _ACTIVE[-1][0] == os.getpid() and n:
        _ACTIVE[-1][1].update(int(n))
