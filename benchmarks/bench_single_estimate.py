"""One sample at a time: ``estimate_contact_wrenches`` per call against one sample of
``estimate_contact_wrenches_batch``, on the same feasible G1 samples (bench_estimation's:
forward dynamics from random torques and cone-interior foot wrenches), Newton-Euler mode,
daqp. Best of 7 wall times; the batch figure is its time over the samples.

The single call runs the fast path (wholebody.estimation._single): the state check, one
Pinocchio pass, the rows written in place into buffers kept per robot and contact set, one
daqp update and solve on a kept workspace, the exact verification; the derived fields
(wrenches per contact, CoPs, residual, margins) are computed at first read, so the line also
times calls whose wrenches are read. "before" is the path every single call took before:
the problem built in full (EstimationProblem), solved and verified.

Run: python benchmarks/bench_single_estimate.py [N]
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
from _common import benchmark_robot
from bench_estimation import samples

from wholebody.contacts import SurfaceContact
from wholebody.estimation import (
    build_estimation_problem,
    estimate_contact_wrenches,
    estimate_contact_wrenches_batch,
)

warnings.simplefilter("ignore")


def best(fn, repeats: int = 7) -> float:
    out = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def main(n: int) -> None:
    robot, name, frames = benchmark_robot()
    feet = [SurfaceContact(f, half_length=0.12, half_width=0.05, mu=0.8) for f in frames]
    rows = samples(robot, feet, n, np.random.default_rng(0), 0.75)
    Q, V, A = (np.array([r[i] for r in rows]) for i in range(3))
    found = (estimate_contact_wrenches_batch(robot, Q, V, A, feet).status == "found").mean()
    print(f"{name}, {n} samples ({100 * found:.0f} % found)")
    for _ in range(2):
        batch = best(lambda: estimate_contact_wrenches_batch(robot, Q, V, A, feet)) / n
        one = (
            best(
                lambda: [estimate_contact_wrenches(robot, Q[i], V[i], A[i], feet) for i in range(n)]
            )
            / n
        )
        read = (
            best(
                lambda: [
                    estimate_contact_wrenches(robot, Q[i], V[i], A[i], feet).wrenches
                    for i in range(n)
                ]
            )
            / n
        )
        full = (
            best(
                lambda: [
                    build_estimation_problem(robot, Q[i], V[i], A[i], feet).solve()
                    for i in range(n)
                ]
            )
            / n
        )
        print(
            f"batch {1e6 * batch:6.1f} us/sample   single {1e6 * one:6.1f} us/call "
            f"(ratio {one / batch:4.2f}; with the wrenches read {1e6 * read:6.1f}, "
            f"ratio {read / batch:4.2f})   before: problem built and solved per call "
            f"{1e6 * full:6.1f} (ratio {full / batch:4.1f})"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
