"""A progress bar for long batch work: tqdm when installed, else a plain pass-through."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def progress_bar(iterable: Iterable[Any], **kwargs: Any) -> Iterable[Any]:
    """``iterable`` wrapped in a tqdm bar (``kwargs`` passed on), or itself without tqdm."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, **kwargs)
