"""Long chunked work: chunks of samples on several processes, in order, with failures
reported per chunk; and the one progress bar of a run.

The processes are the standard library's :class:`concurrent.futures.ProcessPoolExecutor`.
Each worker receives the robot and the shared arrays once, when it starts (inherited under
the ``fork`` start method, pickled otherwise), and then only the chunks' small arguments.
Results come back in chunk order, so ``workers=2`` gives bit for bit what ``workers=1`` gives.

Failures stay with their chunk:

- a chunk whose function raises comes back as a :class:`ChunkFailure` with the error, for
  the caller to flag its samples with the reason;
- a worker process that dies (killed, out of memory, a crash in compiled code) breaks its
  executor (``BrokenProcessPool``): the chunks that were in flight run once more, each alone
  on a fresh executor of one worker, so that a second death is that chunk's own and comes
  back as a :class:`ChunkFailure` ("worker process died (exit code -9) twice on samples
  0..49999"); the other chunks go on on a fresh executor.

On ``KeyboardInterrupt`` (Ctrl-C) in the calling process the workers are terminated (killed
if they do not stop within a second), joined, and the interrupt is raised again: no worker
outlives the call. Workers ignore SIGINT themselves (a terminal sends it to the whole process
group), and exit on their own if the calling process disappears.

Progress: :func:`run_progress` opens one tqdm bar for a whole run (all chunks of a log) and
:func:`advance` moves it, from the work in this process; chunks computed on worker
processes move it by their size as their results come back (a worker never draws).
"""

from __future__ import annotations

import os
import signal
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any

from .errors import InvalidArgumentError, WholebodyWarning

__all__ = [
    "ChunkFailure",
    "run_chunks",
    "chunk_bounds",
    "default_workers",
    "auto_workers",
    "AUTO_MIN_SAMPLES",
    "Shared",
    "progress_bar",
    "run_progress",
    "advance",
]

Chunk = tuple[tuple[int, int], tuple[Any, ...]]

# What a worker process received when it started: the robot and the shared arrays.
_WORKER: dict[str, Any] = {"robot": None, "shared": {}}

# Seconds between checks, in a worker, that the calling process is still there.
_PARENT_POLL_S = 0.5
# Seconds a terminated worker gets to exit before it is killed.
_TERMINATE_GRACE_S = 1.0


@dataclass(frozen=True)
class Shared:
    """A slice of a shared array, standing for ``array[start:stop]`` in a chunk's arguments
    (or in a field of a dataclass argument).

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


def _resolved(x: Any, arrays: dict[str, Any]) -> Any:
    if isinstance(x, Shared):
        return x.resolve(arrays)
    if is_dataclass(x) and not isinstance(x, type):
        given = {f.name: getattr(x, f.name) for f in fields(x)}
        slices = {k: v.resolve(arrays) for k, v in given.items() if isinstance(v, Shared)}
        return replace(x, **slices) if slices else x
    return x


def _resolve(args: tuple[Any, ...], arrays: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(_resolved(a, arrays) for a in args)


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
#: one process than the workers take to start and be fed (``benchmarks/bench_workers.py``).
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


def _describe(bounds: tuple[int, int], item: str) -> str:
    start, stop = bounds
    return f"{item} {start}" if stop - start == 1 else f"{item} {start}..{stop - 1}"


def run_chunks(
    robot: Any,
    fn: Callable[..., Any],
    chunks: Sequence[Chunk],
    workers: int = 1,
    shared: dict[str, Any] | None = None,
    *,
    item: str = "samples",
) -> list[Any]:
    """Run ``fn(robot, *args)`` for each ``(bounds, args)`` chunk; results in chunk order.

    Parameters
    ----------
    robot : object
        Passed first to ``fn``; sent once to each worker process.
    fn : callable
        A module-level function (workers find it by name).
    chunks : sequence of ((start, stop), args)
        ``bounds`` name the chunk's samples (for failure reports and the progress bar);
        ``args`` may hold :class:`Shared` slices, or dataclasses with :class:`Shared` fields.
    workers : int
        Processes. ``1`` (or a single chunk) runs here, with no pickling.
    shared : dict, optional
        Name -> array for the :class:`Shared` arguments, sent once to each worker (under
        ``fork`` inherited, not pickled).
    item : str
        What the bounds count, in failure messages ("samples", "log").

    Returns
    -------
    list
        ``fn``'s result per chunk, or a :class:`ChunkFailure` for a chunk that raised, whose
        result could not be sent back, or whose worker process died twice.

    Raises
    ------
    InvalidArgumentError
        ``workers`` below 1.
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


# --- on worker processes ---------------------------------------------------------------------


def _start_worker(robot: Any, shared: dict[str, Any], parent: int) -> None:
    """A worker process's initializer: keep what it was sent, leave SIGINT to the caller."""
    # Ctrl-C in a terminal reaches the whole process group: the caller decides, not us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _WORKER.update(robot=robot, shared=shared)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    """Exit this worker when the calling process is gone: no orphan left waiting for work."""
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_S)
    os._exit(1)


def _call(fn: Callable[..., Any], bounds: tuple[int, int], args: tuple[Any, ...]) -> Any:
    try:
        return fn(_WORKER["robot"], *_resolve(args, _WORKER["shared"]))
    except Exception as exc:  # reported per chunk, not lost
        return _failure(bounds, exc)


@contextmanager
def _executor(robot: Any, shared: dict[str, Any], workers: int) -> Iterator[ProcessPoolExecutor]:
    """An executor of ``workers`` processes, shut down on leaving; on an exception (Ctrl-C)
    its workers are terminated and joined first."""
    import multiprocessing  # for work on processes only

    fork = "fork" in multiprocessing.get_all_start_methods()
    pool = ProcessPoolExecutor(
        workers,
        multiprocessing.get_context("fork" if fork else "spawn"),
        initializer=_start_worker,
        initargs=(robot, shared, os.getpid()),
    )
    try:
        yield pool
    except BaseException:
        processes = _processes(pool)
        pool.shutdown(wait=False, cancel_futures=True)
        for p in processes:
            p.terminate()
        for p in processes:
            p.join(_TERMINATE_GRACE_S)
            if p.is_alive():
                p.kill()
                p.join()
        raise
    pool.shutdown(wait=True)


def _processes(pool: ProcessPoolExecutor) -> list[Any]:
    """The executor's worker processes (Python has no public handle on them before 3.14)."""
    return list((getattr(pool, "_processes", None) or {}).values())


def _submit(pool: ProcessPoolExecutor, fn: Callable[..., Any], chunk: Chunk) -> Future[Any]:
    """``pool.submit`` with SIGINT blocked: the workers it starts begin with SIGINT blocked
    until they ignore it, so a Ctrl-C in between waits for the caller."""
    block = hasattr(signal, "pthread_sigmask")
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if block else None
    try:
        return pool.submit(_call, fn, *chunk)
    finally:
        if old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _run_on_processes(
    robot: Any,
    fn: Callable[..., Any],
    chunks: Sequence[Chunk],
    workers: int,
    shared: dict[str, Any],
    item: str,
) -> list[Any]:
    results: list[Any] = [None] * len(chunks)
    todo = deque(range(len(chunks)))
    while todo:
        caught = _run_pool(robot, fn, chunks, workers, shared, todo, results)
        for index in caught:  # in flight when a worker died: once more, each alone
            results[index] = _run_alone(robot, fn, chunks[index], shared, item)
    return results


def _run_pool(
    robot: Any,
    fn: Callable[..., Any],
    chunks: Sequence[Chunk],
    workers: int,
    shared: dict[str, Any],
    todo: deque[int],
    results: list[Any],
) -> list[int]:
    """Run the chunks ``todo`` on one executor, ``workers`` in flight at a time, into
    ``results``; the chunks in flight when a worker died (the executor broke), in order."""
    running: dict[Future[Any], int] = {}
    caught: list[int] = []
    broken = False
    with _executor(robot, shared, workers) as pool:
        while running or (todo and not broken):
            while todo and not broken and len(running) < workers:
                index = todo.popleft()
                try:
                    running[_submit(pool, fn, chunks[index])] = index
                except BrokenProcessPool:  # a worker died: the chunks in flight say which
                    todo.appendleft(index)
                    broken = True
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                index = running.pop(future)
                try:
                    results[index] = future.result()
                except BrokenProcessPool:
                    caught.append(index)
                    broken = True
                except Exception as exc:  # a result or an argument that does not pickle
                    results[index] = _failure(chunks[index][0], exc)
                else:
                    advance(chunks[index][0][1] - chunks[index][0][0])
    return sorted(caught)


def _run_alone(
    robot: Any, fn: Callable[..., Any], chunk: Chunk, shared: dict[str, Any], item: str
) -> Any:
    """One chunk on an executor of its own: its result, or a :class:`ChunkFailure` when its
    worker dies again."""
    with _executor(robot, shared, 1) as pool:
        future = _submit(pool, fn, chunk)
        processes = _processes(pool)
        try:
            result = future.result()
        except BrokenProcessPool:
            pool.shutdown(wait=True)  # its manager thread reaps the worker: the exit code is set
            codes = ", ".join(str(p.exitcode) for p in processes)
            return ChunkFailure(
                *chunk[0],
                f"worker process died (exit code {codes}) twice on {_describe(chunk[0], item)}",
            )
        except Exception as exc:
            return _failure(chunk[0], exc)
    advance(chunk[0][1] - chunk[0][0])
    return result


# --- the progress bar of a run -----------------------------------------------------------------

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
