"""Batch Newton-Euler residual throughput against the raw Pinocchio floor, same run, one core.

Robot: example-robot-data's G1 (nv = 35) when installed, else the shipped humanoid, with two
surface contacts at the ankle-roll links (G1) or the soles (humanoid).

The floor is the least a Python loop on Pinocchio must do per sample:
``computeCentroidalMomentumTimeVariation`` (CoM and momentum rate) plus the two contact
frame placements, with no algebra at all. The ratio says what wholebody adds on top
(input checks, the wrench algebra, result arrays).

Run: python benchmarks/bench_balance.py [N]
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402
from _common import benchmark_robot  # noqa: E402

from wholebody.balance import newton_euler_residual  # noqa: E402
from wholebody.contacts import SurfaceContact  # noqa: E402

TARGET_RATE, TARGET_RATIO = 60_000, 2.2


def setup():
    robot, _, feet = benchmark_robot()
    contacts = [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.8) for f in feet]
    return robot, contacts


def samples(robot, n, seed=0):
    rng = np.random.default_rng(seed)
    Q = np.array([robot.random_configuration(rng) for _ in range(min(n, 2000))])
    Q = Q[np.arange(n) % len(Q)]
    V = rng.normal(size=(n, robot.nv))
    A = rng.normal(size=(n, robot.nv))
    W = rng.normal(scale=100.0, size=(n, 12))
    return Q, V, A, W


def raw_floor(robot, contacts, Q, V, A):
    model, data = robot.model, robot.data
    fids = [model.getFrameId(c.frame) for c in contacts]
    for i in range(Q.shape[0]):
        pin.computeCentroidalMomentumTimeVariation(model, data, Q[i], V[i], A[i])
        for fid in fids:
            pin.updateFramePlacement(model, data, fid)


def best_of(fn, repeats=3):
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(n: int = 50_000) -> None:
    robot, contacts = setup()
    Q, V, A, W = samples(robot, n)
    t_raw = best_of(lambda: raw_floor(robot, contacts, Q, V, A))
    t_wb = best_of(lambda: newton_euler_residual(robot, Q, V, A, contacts, W))
    rate_raw, rate_wb = n / t_raw, n / t_wb
    print(
        f"robot {robot.name}: nq={robot.nq} nv={robot.nv}, {n} samples, 2 surface contacts, "
        "one core"
    )
    print(
        f"raw Pinocchio floor (centroidal rate + 2 frame placements): {rate_raw:10,.0f} samples/s  "
        f"({1e6 / rate_raw:.2f} us/sample)"
    )
    print(
        f"wholebody newton_euler_residual:                          {rate_wb:10,.0f} samples/s  "
        f"({1e6 / rate_wb:.2f} us/sample)"
    )
    print(f"ratio wholebody / floor: {t_wb / t_raw:.2f}x   (target <= {TARGET_RATIO}x)")
    print(
        f"throughput target >= {TARGET_RATE:,} samples/s: "
        f"{'met' if rate_wb >= TARGET_RATE else 'NOT met'}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50_000)
