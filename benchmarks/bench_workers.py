"""When do worker processes pay? ``check_trajectory`` with 1 and 2 workers, by log length.

Each log is split into two equal chunks (``chunk_size = ceil(N / 2)``), so two workers get
one each; the wall time (best of 3, diagnosis off: it runs in the calling process either way)
shows the length below which starting and feeding the workers costs more than it saves.
``wholebody.parallel.AUTO_MIN_SAMPLES`` (what ``workers="auto"`` uses) is set from this, with
a margin.

Run: python benchmarks/bench_workers.py [N ...]
"""

from __future__ import annotations

import math
import sys
import time
import warnings

from _common import benchmark_robot, synthetic_log

from wholebody.check import CheckOptions
from wholebody.check.analysis import check_trajectory
from wholebody.contacts import SurfaceContact
from wholebody.parallel import AUTO_MIN_SAMPLES, auto_workers, default_workers

warnings.simplefilter("ignore")
REPEATS = 3


def wall(robot, log, feet, workers: int, chunk: int) -> float:
    best = math.inf
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        check_trajectory(
            robot, log, feet, CheckOptions(workers=workers, chunk_size=chunk, diagnose_causes=False)
        )
        best = min(best, time.perf_counter() - t0)
    return best


def main(sizes: list[int]) -> None:
    robot, name, frames = benchmark_robot()
    feet = [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.8) for f in frames]
    print(f"{name}, {default_workers()} CPUs; AUTO_MIN_SAMPLES = {AUTO_MIN_SAMPLES}")
    print(f"{'samples':>8s} {'1 worker [s]':>13s} {'2 workers [s]':>14s} {'ratio':>6s}  auto")
    for n in sizes:
        log = synthetic_log(robot, frames, n)
        chunk = math.ceil(n / 2)
        one, two = wall(robot, log, feet, 1, chunk), wall(robot, log, feet, 2, chunk)
        print(f"{n:8d} {one:13.3f} {two:14.3f} {two / one:6.2f}  {auto_workers(n, chunk)}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1500, 5000, 10000, 20000, 50000])
