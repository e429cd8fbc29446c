"""Progress bars for long batch work: tqdm when installed, else nothing.

One bar per run: :func:`run_progress` opens it for the whole run (all chunks of a log), and
the work inside, in this process, moves it with :func:`advance`. Worker processes never draw
(a forked copy of the bar is not theirs); their caller advances the bar as their results come.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

# The bar of the run under way, with the process that owns it.
_ACTIVE: list[tuple[int, Any]] = []


def progress_bar(iterable: Iterable[Any], **kwargs: Any) -> Iterable[Any]:
    """``iterable`` wrapped in a tqdm bar (``kwargs`` passed on), or itself without tqdm."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, **kwargs)


@contextmanager
def run_progress(total: int, enabled: bool, **kwargs: Any) -> Iterator[None]:
    """One tqdm bar of ``total`` steps for the run inside the ``with`` (nothing when not
    ``enabled`` or without tqdm); :func:`advance` moves it."""
    bar = None
    if enabled:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            bar = None
        else:
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
