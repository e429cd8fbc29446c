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

__all__ = ["ChunkFailure", "run_chunks", "chunk_bounds", "default_workers", "Shared"]

_WORKER_ROBOT: Any = None
# Arrays the workers read by name. With the "fork" start method they are inherited from the
# parent (copy-on-write, nothing pickled); otherwise they are sent once per worker.
_SHARED: dict[str, Any] = {}


@dataclass(frozen=True)
class Shared:
    """A slice of a shared array, standing in a chunk's arguments for ``array[start:stop]``."""

    name: str
    start: int
    stop: int

    def resolve(self, arrays: dict[str, Any]) -> Any:
        return arrays[self.name][self.start : self.stop]


def _resolve(args: tuple[Any, ...], arrays: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(a.resolve(arrays) if isinstance(a, Shared) else a for a in args)


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


def _init_worker(robot_bytes: bytes, shared: dict[str, Any] | None) -> None:
    global _WORKER_ROBOT, _SHARED
    _WORKER_ROBOT = pickle.loads(robot_bytes)
    if shared is not None:
        _SHARED = shared


def _call(fn: Callable[..., Any], bounds: tuple[int, int], args: tuple[Any, ...]) -> Any:
    try:
        return fn(_WORKER_ROBOT, *_resolve(args, _SHARED))
    except Exception as exc:  # reported per chunk, not lost
        return ChunkFailure(bounds[0], bounds[1], f"{type(exc).__name__}: {exc}")


def run_chunks(
    robot: Any,
    fn: Callable[..., Any],
    chunks: Sequence[tuple[tuple[int, int], tuple[Any, ...]]],
    workers: int = 1,
    shared: dict[str, Any] | None = None,
) -> list[Any]:
    """Run ``fn(robot, *args)`` for each ``(bounds, args)`` chunk; results in chunk order.

    ``workers=1`` runs in this process (no pickling). ``fn`` must be a module-level function.
    Arguments given as :class:`Shared` slices are read from ``shared`` (name -> array): under
    ``fork`` the workers inherit those arrays instead of receiving pickled copies.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    shared = shared or {}
    if workers == 1 or len(chunks) == 1:
        out = []
        for bounds, args in chunks:
            try:
                out.append(fn(robot, *_resolve(args, shared)))
            except Exception as exc:
                out.append(ChunkFailure(bounds[0], bounds[1], f"{type(exc).__name__}: {exc}"))
        return out
    global _SHARED
    methods = multiprocessing.get_all_start_methods()
    fork = "fork" in methods
    context = multiprocessing.get_context("fork" if fork else "spawn")
    _SHARED = shared  # inherited by forked workers
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker,
                                 initargs=(pickle.dumps(robot), None if fork else shared)) as pool:
            futures = [pool.submit(_call, fn, bounds, args) for bounds, args in chunks]
            return [f.result() for f in futures]
    finally:
        _SHARED = {}
