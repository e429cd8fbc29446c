"""Chunks of samples on several processes, in order, with failures reported per chunk.

Each worker process receives the robot once (pickled: the Pinocchio model travels, the
scratch data is made afresh) and then only chunks of arrays. Results come back in chunk order,
so ``workers=2`` gives bit-for-bit what ``workers=1`` gives. A chunk whose function raises
comes back as a :class:`ChunkFailure` for the caller to flag its samples with the reason.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

__all__ = ["ChunkFailure", "run_chunks", "chunk_bounds", "default_workers"]

_WORKER_ROBOT: Any = None


@dataclass(frozen=True)
class ChunkFailure:
    """A chunk that raised: its sample range and the error, as text."""

    start: int
    stop: int
    error: str


def default_workers() -> int:
    """The number of CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def chunk_bounds(n: int, chunk_size: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``range(n)`` in chunks of at most ``chunk_size``."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    return [(a, min(a + chunk_size, n)) for a in range(0, n, chunk_size)] or [(0, 0)]


def _init_worker(robot_bytes: bytes) -> None:
    global _WORKER_ROBOT
    _WORKER_ROBOT = pickle.loads(robot_bytes)


def _call(fn: Callable[..., Any], bounds: tuple[int, int], args: tuple[Any, ...]) -> Any:
    try:
        return fn(_WORKER_ROBOT, *args)
    except Exception as exc:  # reported per chunk, not lost
        return ChunkFailure(bounds[0], bounds[1], f"{type(exc).__name__}: {exc}")


def run_chunks(
    robot: Any,
    fn: Callable[..., Any],
    chunks: Sequence[tuple[tuple[int, int], tuple[Any, ...]]],
    workers: int = 1,
) -> list[Any]:
    """Run ``fn(robot, *args)`` for each ``(bounds, args)`` chunk; results in chunk order.

    ``workers=1`` runs in this process (no pickling). ``fn`` must be a module-level function.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if workers == 1 or len(chunks) == 1:
        out = []
        for bounds, args in chunks:
            try:
                out.append(fn(robot, *args))
            except Exception as exc:
                out.append(ChunkFailure(bounds[0], bounds[1], f"{type(exc).__name__}: {exc}"))
        return out
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker,
                             initargs=(pickle.dumps(robot),)) as pool:
        futures = [pool.submit(_call, fn, bounds, args) for bounds, args in chunks]
        return [f.result() for f in futures]
