"""Per-call cost of every ``Robot`` term against raw Pinocchio doing the same work, one run.

"Raw" is the Pinocchio call (or calls) that give the same arrays, with the copies a caller
must make to keep them (``.vector`` of a returned motion or force is a view into a temporary
object; ``data.oMf`` entries are overwritten by the next call). ``Robot`` adds the state
checks (shape, finiteness, magnitude <= 1e8, unit quaternion) and the frame-name lookup.

Timing: for each repetition, every case runs ``number`` calls of wholebody, then of raw
Pinocchio, interleaved across cases, once on one repeated state and once on a new state per
call; the table gives the median over repetitions, in microseconds of this thread's CPU time
per call (``time.thread_time``: robust to the machine being shared). Robot: G1
(nv = 35) when example-robot-data is installed, else the shipped humanoid.

Run: taskset -c 1 python benchmarks/bench_dynamics.py
"""

from __future__ import annotations

import itertools
import statistics
import time
import timeit
from collections.abc import Callable

import numpy as np
import pinocchio as pin
from _common import benchmark_robot

from wholebody.robot._state import SPEEDUPS

TARGET_RATIO = 1.3  # each Robot term, checked, against raw Pinocchio


State = tuple[np.ndarray, np.ndarray, np.ndarray]
Case = tuple[Callable[[State], object], Callable[[State], object]]


def cases(robot, feet) -> dict[str, Case]:
    """Each term as (wholebody, raw Pinocchio), both functions of a state ``(q, v, a)``."""
    model, data = robot.model, robot.data
    frame = feet[0]
    fid = robot.frame_id(frame)
    lwa = pin.LOCAL_WORLD_ALIGNED
    zero = np.zeros(robot.nv)
    nograv = pin.Model(model)
    nograv.gravity = pin.Motion.Zero()
    nograv_data = nograv.createData()

    def raw_placement(s):
        pin.framesForwardKinematics(model, data, s[0])
        return pin.SE3(data.oMf[fid])

    def raw_drift(s):
        pin.forwardKinematics(model, data, s[0], s[1], zero)
        return pin.getFrameClassicalAcceleration(model, data, fid, lwa).vector.copy()

    def raw_rate(s):
        return pin.computeCentroidalMomentumTimeVariation(model, data, *s).vector.copy()

    out: dict[str, Case] = {
        "mass_matrix": (lambda s: robot.mass_matrix(s[0]), lambda s: pin.crba(model, data, s[0])),
        "coriolis_matrix": (
            lambda s: robot.coriolis_matrix(s[0], s[1]),
            lambda s: pin.computeCoriolisMatrix(model, data, s[0], s[1]),
        ),
        "coriolis": (
            lambda s: robot.coriolis(s[0], s[1]),
            lambda s: pin.rnea(nograv, nograv_data, s[0], s[1], zero),
        ),
        "gravity": (
            lambda s: robot.gravity(s[0]),
            lambda s: pin.computeGeneralizedGravity(model, data, s[0]),
        ),
        "nonlinear_effects": (
            lambda s: robot.nonlinear_effects(s[0], s[1]),
            lambda s: pin.nonLinearEffects(model, data, s[0], s[1]),
        ),
        "inverse_dynamics": (
            lambda s: robot.inverse_dynamics(*s),
            lambda s: pin.rnea(model, data, *s),
        ),
        "forward_dynamics": (
            lambda s: robot.forward_dynamics(*s),
            lambda s: pin.aba(model, data, *s),
        ),
        "frame_jacobian": (
            lambda s: robot.frame_jacobian(s[0], frame),
            lambda s: pin.computeFrameJacobian(model, data, s[0], fid, lwa),
        ),
        "frame_placement": (lambda s: robot.frame_placement(s[0], frame), raw_placement),
        "frame_drift": (lambda s: robot.frame_drift(s[0], s[1], frame), raw_drift),
        "com": (lambda s: robot.com(s[0]), lambda s: pin.centerOfMass(model, data, s[0], False)),
        "com_jacobian": (
            lambda s: robot.com_jacobian(s[0]),
            lambda s: pin.jacobianCenterOfMass(model, data, s[0], False),
        ),
        "centroidal_momentum": (
            lambda s: robot.centroidal_momentum(s[0], s[1]),
            lambda s: pin.computeCentroidalMomentum(model, data, s[0], s[1]).vector.copy(),
        ),
        "centroidal_momentum_rate": (lambda s: robot.centroidal_momentum_rate(*s), raw_rate),
    }

    return out


def per_call(f: Callable[..., object], number: int) -> float:
    # CPU time of this thread: time spent descheduled on a shared machine does not count.
    return timeit.Timer(f, timer=time.thread_time).timeit(number) / number * 1e6


def main(number: int = 1000, repeats: int = 25, pool: int = 64) -> None:
    robot, name, feet = benchmark_robot()
    rng = np.random.default_rng(0)
    states = [
        (robot.random_configuration(rng), rng.normal(size=robot.nv), rng.normal(size=robot.nv))
        for _ in range(pool)
    ]
    s0 = states[0]
    table = cases(robot, feet)
    cols = ("same", "raw_same", "new", "raw_new", "unchecked")
    times: dict[str, dict[str, list[float]]] = {k: {c: [] for c in cols} for k in table}
    base_same: list[float] = []
    base_new: list[float] = []

    def empty(s: State) -> None:
        return None

    for _ in range(repeats):
        it = itertools.cycle(states)
        base_same.append(per_call(lambda: empty(s0), number))
        base_new.append(per_call(lambda it=it: empty(next(it)), number))
        for key, (ours, raw) in table.items():
            t = times[key]
            t["same"].append(per_call(lambda f=ours: f(s0), number))
            t["raw_same"].append(per_call(lambda f=raw: f(s0), number))
            t["new"].append(per_call(lambda f=ours, it=it: f(next(it)), number))
            t["raw_new"].append(per_call(lambda f=raw, it=it: f(next(it)), number))
            robot.check_inputs = False
            t["unchecked"].append(per_call(lambda f=ours: f(s0), number))
            robot.check_inputs = True
    b_same, b_new = statistics.median(base_same), statistics.median(base_new)
    print(
        f"robot {name}: nq={robot.nq}, nv={robot.nv}; median of {repeats} interleaved "
        f"repetitions x {number} calls; microseconds per call (call overhead of the timing "
        f"loop, {b_same:.2f} / {b_new:.2f} us, subtracted)"
    )
    print(
        "same: one state repeated (a controller tick asks several terms of one state; the "
        "Python checks pass a state equal to the last one on a bytes comparison)"
    )
    print(f"new: a new state every call (cycling through {pool}): the full checks every call")
    checks = "compiled (wholebody._speedups)" if SPEEDUPS else "Python (no wholebody._speedups)"
    print(f"state checks: {checks}")
    print(
        f"{'term':32s} {'same':>7s} {'raw':>7s} {'ratio':>6s}   {'new':>7s} {'raw':>7s} "
        f"{'ratio':>6s}   {'unchecked':>9s}"
    )
    for key, t in times.items():
        same = statistics.median(t["same"]) - b_same
        raw_same = statistics.median(t["raw_same"]) - b_same
        new = statistics.median(t["new"]) - b_new
        raw_new = statistics.median(t["raw_new"]) - b_new
        fast = statistics.median(t["unchecked"]) - b_same
        mark = "" if max(same / raw_same, new / raw_new) <= TARGET_RATIO else "  > target"
        print(
            f"{key:32s} {same:7.2f} {raw_same:7.2f} {same / raw_same:5.2f}x   {new:7.2f} "
            f"{raw_new:7.2f} {new / raw_new:5.2f}x   {fast / raw_same:8.2f}x{mark}"
        )
    print(
        f"target: ratio <= {TARGET_RATIO}x per term, "
        "checks on ('unchecked': check_inputs=False against raw, same state)"
    )


if __name__ == "__main__":
    main()
