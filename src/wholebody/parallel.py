"""Chunks of samples on several processes, in order, with failures reported per chunk.

Each worker process receives the robot once (pickled: the Pinocchio model travels, the
scratch data is made afresh) and then only chunks of arrays. Results come back in chunk order,
so ``workers=2`` gives bit-for-bit what ``workers=1`` gives.

Failures stay with their chunk:

- a chunk whose function raises comes back as a :class:`ChunkFailure` with the error, for
  the caller to flag its samples with the reason;
- a chunk whose worker process dies (killed, out of memory, a crash in compiled code) is run
  once more on a fresh worker process; if that one dies too, the chunk comes back as a
  :class:`ChunkFailure` ("worker process died (exit code -9) twice on samples 0..49999").
  The other chunks complete on the surviving and replacement workers.

On ``KeyboardInterrupt`` (Ctrl-C) in the calling process the workers are terminated (killed
if they do not stop within a second), joined, and the interrupt is raised again: no worker
outlives the call. Workers ignore SIGINT themselves (a terminal sends it to the whole process
group), and exit on their own if the calling process disappears.
"""

from __future__ import annotations

import collections
import os
import pickle
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidArgumentError, WorkerError

__all__ = [
    "ChunkFailure",
    "run_chunks",
    "chunk_bounds",
    "default_workers",
    "auto_workers",
    "AUTO_MIN_SAMPLES",
    "Shared",
]

_WORKER_ROBOT: Any = None
# Arrays the workers read by name. With the "fork" start method they are inherited from the
# parent (copy-on-write, nothing pickled); otherwise they are sent once per worker.
_SHARED: dict[str, Any] = {}

# Seconds between checks, in a waiting worker, that the calling process is still there.
_PARENT_POLL_S = 0.5
# Seconds a terminated worker gets to exit before it is killed.
_TERMINATE_GRACE_S = 1.0


@dataclass(frozen=True)
class Shared:
    """A slice of a shared array, standing in a chunk's arguments for ``array[start:stop]``.

    Parameters
    ----------
    name : str
        Key of the array in the ``shared`` mapping given to :func:`run_chunks`.
    start, stop : int
        Rows ``start:stop`` (along the first axis, the samples).
    """

    name: str
    start: int
    stop: int

    def resolve(self, arrays: dict[str, Any]) -> Any:
        """The slice ``arrays[name][start:stop]`` (a view, not a copy, for numpy arrays)."""
        return arrays[self.name][self.start : self.stop]


def _resolve(args: tuple[Any, ...], arrays: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(a.resolve(arrays) if isinstance(a, Shared) else a for a in args)


@dataclass(frozen=True)
class ChunkFailure:
    """A chunk that could not be computed: its sample range and the reason, as text.

    Attributes
    ----------
    start, stop : int
        The chunk's samples ``start:stop`` (``stop`` excluded).
    error : str
        ``"TYPE: message"`` when the function raised, or ``"worker process died (exit code
        -9) twice on samples 100000..149999"`` when its worker process died on both tries.
    """

    start: int
    stop: int
    error: str


def default_workers() -> int:
    """The number of CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


#: Samples below which ``workers="auto"`` uses one process: shorter logs check faster in
#: one process than the workers take to start and be fed. ``benchmarks/bench_workers.py``
#: on a loaded 2-core machine: 2 workers take 2.3x as long at 1,500 samples, 1.16x at
#: 20,000, 1.02x at 50,000 (on a quiet one they pay earlier: 1.83x faster at 200,000).
AUTO_MIN_SAMPLES = 50_000


def auto_workers(n: int, chunk_size: int) -> int:
    """Processes for ``workers="auto"`` over ``n`` samples in chunks of ``chunk_size``.

    One below :data:`AUTO_MIN_SAMPLES` samples or with a single chunk (starting workers would
    only cost time), else one per chunk up to :func:`default_workers`.
    """
    chunks = max(1, -(-int(n) // max(int(chunk_size), 1)))
    if n < AUTO_MIN_SAMPLES or chunks == 1:
        return 1
    return max(1, min(default_workers(), chunks))


def chunk_bounds(n: int, chunk_size: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``range(n)`` in chunks of at most ``chunk_size``.

    Raises
    ------
    InvalidArgumentError
        ``chunk_size`` below 1.
    """
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise InvalidArgumentError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    return [(a, min(a + chunk_size, n)) for a in range(0, n, chunk_size)] or [(0, 0)]


def _failure(bounds: tuple[int, int], exc: BaseException) -> ChunkFailure:
    return ChunkFailure(bounds[0], bounds[1], f"{type(exc).__name__}: {exc}")


def _call(fn: Callable[..., Any], bounds: tuple[int, int], args: tuple[Any, ...]) -> Any:
    try:
        return fn(_WORKER_ROBOT, *_resolve(args, _SHARED))
    except Exception as exc:  # reported per chunk, not lost
        return _failure(bounds, exc)


def _worker_main(
    conn: Any, robot_bytes: bytes, shared: dict[str, Any] | None, parent_pid: int
) -> None:
    """A worker process: take ``(index, fn, bounds, args)`` tasks until ``None`` or EOF."""
    global _WORKER_ROBOT, _SHARED
    # Ctrl-C in a terminal reaches the whole process group: the caller decides, not us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _WORKER_ROBOT = pickle.loads(robot_bytes)
    if shared is not None:
        _SHARED = shared
    while True:
        while not conn.poll(_PARENT_POLL_S):
            if os.getppid() != parent_pid:  # the caller is gone: do not linger as an orphan
                return
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        index, fn, bounds, args = task
        result = _call(fn, bounds, args)
        try:
            conn.send((index, result))
        except (EOFError, OSError):
            return
        except Exception as exc:  # the result does not pickle: say so instead
            conn.send(
                (
                    index,
                    ChunkFailure(bounds[0], bounds[1], f"the result could not be sent back: {exc}"),
                )
            )


@dataclass(eq=False)
class _Worker:
    process: Any
    conn: Any
    task: int | None = None
    dead: bool = False


@dataclass
class _Pool:
    """Worker processes with one task at a time each, so a death names its chunk."""

    context: Any
    robot_bytes: bytes
    shared: dict[str, Any] | None
    workers: list[_Worker] = field(default_factory=list)

    def start(self) -> _Worker:
        parent_end, child_end = self.context.Pipe(duplex=True)
        process = self.context.Process(
            target=_worker_main,
            args=(child_end, self.robot_bytes, self.shared, os.getpid()),
            daemon=True,
            name="wholebody-worker",
        )
        # SIGINT blocked across the fork: a Ctrl-C then waits for the parent, and the child
        # starts with it blocked until it has chosen to ignore it.
        block = hasattr(signal, "pthread_sigmask")
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if block else None
        try:
            process.start()
        finally:
            if old is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)
        child_end.close()  # the parent reads EOF when the worker dies
        worker = _Worker(process, parent_end)
        self.workers.append(worker)
        return worker

    def stop(self, interrupted: bool) -> None:
        """Ask idle workers to exit (terminate everything when ``interrupted``); join all."""
        for w in self.workers:
            if interrupted or w.task is not None:
                w.process.terminate()
            else:
                try:
                    w.conn.send(None)
                except (OSError, ValueError):
                    w.process.terminate()
        for w in self.workers:
            w.process.join(_TERMINATE_GRACE_S)
            if w.process.is_alive():
                w.process.kill()
                w.process.join()
            w.conn.close()
        self.workers.clear()


def _describe(bounds: tuple[int, int], item: str) -> str:
    start, stop = bounds
    return f"{item} {start}" if stop - start == 1 else f"{item} {start}..{stop - 1}"


def run_chunks(
    robot: Any,
    fn: Callable[..., Any],
    chunks: Sequence[tuple[tuple[int, int], tuple[Any, ...]]],
    workers: int = 1,
    shared: dict[str, Any] | None = None,
    *,
    item: str = "samples",
) -> list[Any]:
    """Run ``fn(robot, *args)`` for each ``(bounds, args)`` chunk; results in chunk order.

    Parameters
    ----------
    robot : object
        Passed first to ``fn``; pickled once per worker process.
    fn : callable
        A module-level function (workers find it by name).
    chunks : sequence of ((start, stop), args)
        ``bounds`` name the chunk's samples (for failure reports); ``args`` may hold
        :class:`Shared` slices.
    workers : int
        Processes. ``1`` (or a single chunk) runs here, with no pickling.
    shared : dict, optional
        Name -> array for the :class:`Shared` arguments. Under ``fork`` the workers inherit
        these arrays instead of receiving pickled copies.
    item : str
        What the bounds count, in failure messages ("samples", "log").

    Returns
    -------
    list
        ``fn``'s result per chunk, or a :class:`ChunkFailure` for a chunk that raised or whose
        worker process died twice.

    Raises
    ------
    InvalidArgumentError
        ``workers`` below 1.
    WorkerError
        Worker processes die before taking any work, again and again (they cannot start).
    KeyboardInterrupt
        Re-raised after every worker process has been stopped and joined.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidArgumentError(f"workers must be a positive integer, got {workers!r}")
    shared = shared or {}
    if workers == 1 or len(chunks) <= 1:
        out = []
        for bounds, args in chunks:
            try:
                out.append(fn(robot, *_resolve(args, shared)))
            except Exception as exc:
                out.append(_failure(bounds, exc))
        return out
    return _run_on_processes(robot, fn, chunks, min(workers, len(chunks)), shared, item)


def _run_on_processes(
    robot: Any,
    fn: Callable[..., Any],
    chunks: Sequence[tuple[tuple[int, int], tuple[Any, ...]]],
    workers: int,
    shared: dict[str, Any],
    item: str,
) -> list[Any]:
    global _SHARED
    import multiprocessing  # 7 ms, for work on processes only
    import multiprocessing.connection

    fork = "fork" in multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if fork else "spawn")
    pool = _Pool(context, pickle.dumps(robot), None if fork else shared)
    pending = collections.deque(range(len(chunks)))
    results: list[Any] = [None] * len(chunks)
    done = [False] * len(chunks)
    exit_codes: list[list[int]] = [[] for _ in chunks]
    idle_deaths = 0  # deaths of workers that held no task: they cannot start
    remaining = len(chunks)

    def finish(index: int, value: Any) -> None:
        nonlocal remaining
        if not done[index]:
            results[index], done[index] = value, True
            remaining -= 1

    def receive(w: _Worker) -> bool:
        """Read one result from ``w``; False when the worker is gone instead."""
        try:
            index, value = w.conn.recv()
        except (EOFError, OSError):
            return False
        finish(index, value)
        w.task = None
        return True

    def bury(w: _Worker) -> None:
        """A worker died: retry its chunk once, or report it; start a replacement."""
        nonlocal idle_deaths
        if w.dead:
            return
        w.dead = True
        while w.task is not None and w.conn.poll(0) and receive(w):
            pass  # a result sent just before dying still counts
        w.process.join()
        code = w.process.exitcode
        if w.task is None:
            idle_deaths += 1
        else:
            index, w.task = w.task, None
            exit_codes[index].append(code)
            if len(exit_codes[index]) < 2:
                pending.appendleft(index)  # once more, on a fresh process
            else:
                codes = sorted(set(exit_codes[index]))
                said = (
                    f"exit code {codes[0]}"
                    if len(codes) == 1
                    else f"exit codes {', '.join(map(str, exit_codes[index]))}"
                )
                finish(
                    index,
                    ChunkFailure(
                        *chunks[index][0],
                        f"worker process died ({said}) "
                        f"twice on {_describe(chunks[index][0], item)}",
                    ),
                )
        pool.workers.remove(w)
        w.conn.close()
        if idle_deaths > 2 * workers:
            raise WorkerError(
                f"worker processes exit before taking any work (last exit code "
                f"{code}); run with workers=1 to see why"
            )
        alive = len(pool.workers)
        if alive < workers and alive < remaining:
            pool.start()

    _SHARED = shared  # inherited by forked workers
    interrupted = False
    try:
        for _ in range(workers):
            pool.start()
        while remaining:
            for w in list(pool.workers):
                if w.task is None and pending and not w.dead:
                    index = pending.popleft()
                    bounds, args = chunks[index]
                    w.task = index
                    try:
                        w.conn.send((index, fn, bounds, args))
                    except (OSError, ValueError):
                        bury(w)
            busy = {w.conn: w for w in pool.workers if w.task is not None}
            sentinels = {w.process.sentinel: w for w in pool.workers}
            ready = multiprocessing.connection.wait(list(busy) + list(sentinels))
            for obj in ready:  # results first: a worker may send and then die
                if obj in busy and not busy[obj].dead and not receive(busy[obj]):
                    bury(busy[obj])
            for obj in ready:
                if obj in sentinels:
                    bury(sentinels[obj])
    except BaseException:
        interrupted = True
        raise
    finally:
        _SHARED = {}
        pool.stop(interrupted)
    return results
