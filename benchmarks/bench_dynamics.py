"""Per-call cost of every ``Robot`` term against raw Pinocchio doing the same work, one run.

"Raw" is the Pinocchio call (or calls) that give the same arrays, with the copies a caller
must make to keep them (``.vector`` of a returned motion or force is a view into a temporary
object; ``data.oMf`` entries are overwritten by the next call). Two columns for ``Robot``:

* *state*: the call on a :class:`wholebody.robot.State` checked once before (``robot.state``;
  trusted, no check in the call), target <= 1.1x raw;
* *arrays*: the call on raw arrays, checked at each call (shape, real float64, finite and
  ``|x| <= 1e8``, unit quaternion), target <= 2x raw.

Each call takes a new state (64 cycled). The single-sample Newton-Euler residual (2 feet) is
measured the same way against its raw floor (one ``computeCentroidalMomentumTimeVariation``,
two frame placements and the wrench sum in numpy, on a ``Data`` of its own), target <= 1.2x on
raw arrays. Before timing, each ``Robot`` call's result is compared with raw's (1e-9).

Timing: for each repetition, every case runs ``number`` calls of each column and of raw,
interleaved across cases; the table gives the median over repetitions, in microseconds of this
thread's CPU time per call (``time.thread_time``: robust to the machine being shared), with
the timing loop's own cost subtracted. Robot: G1 (nv = 35) when example-robot-data is
installed, else the shipped humanoid.

Run: taskset -c 0 python benchmarks/bench_dynamics.py
"""

from __future__ import annotations

import itertools
import statistics
import time
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np
import pinocchio as pin
from _common import benchmark_robot

from wholebody.balance import newton_euler_residual
from wholebody.contacts import SurfaceContact

TARGET_STATE = 1.1  # a call on a State, against raw Pinocchio
TARGET_ARRAYS = 2.0  # a call on raw arrays, checked at the call
TARGET_RESIDUAL = 1.2  # the single-sample residual on raw arrays, against its floor

# (name, call on a State, call on arrays (q, v, a), raw Pinocchio on arrays (q, v, a))
Case = tuple[str, Callable[[Any], object], Callable[[Any], object], Callable[[Any], object]]


def cases(robot, feet) -> list[Case]:
    """Each term as (name, wholebody on a State, wholebody on arrays, raw Pinocchio)."""
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
        placement = data.oMf[fid]
        return placement.translation.copy(), placement.rotation.copy()

    def raw_drift(s):
        pin.forwardKinematics(model, data, s[0], s[1], zero)
        return pin.getFrameClassicalAcceleration(model, data, fid, lwa).vector.copy()

    def raw_rate(s):
        return pin.computeCentroidalMomentumTimeVariation(model, data, *s).vector.copy()

    out: list[Case] = [
        ("mass_matrix", robot.mass_matrix, lambda s: robot.mass_matrix(s[0]),
         lambda s: pin.crba(model, data, s[0])),
        ("coriolis_matrix", robot.coriolis_matrix, lambda s: robot.coriolis_matrix(s[0], s[1]),
         lambda s: pin.computeCoriolisMatrix(model, data, s[0], s[1])),
        ("coriolis", robot.coriolis, lambda s: robot.coriolis(s[0], s[1]),
         lambda s: pin.rnea(nograv, nograv_data, s[0], s[1], zero)),
        ("gravity", robot.gravity, lambda s: robot.gravity(s[0]),
         lambda s: pin.computeGeneralizedGravity(model, data, s[0])),
        ("nonlinear_effects", robot.nonlinear_effects,
         lambda s: robot.nonlinear_effects(s[0], s[1]),
         lambda s: pin.nonLinearEffects(model, data, s[0], s[1])),
        ("inverse_dynamics", robot.inverse_dynamics, lambda s: robot.inverse_dynamics(*s),
         lambda s: pin.rnea(model, data, *s)),
        ("forward_dynamics", lambda st: robot.forward_dynamics(st, tau=st.a),
         lambda s: robot.forward_dynamics(*s), lambda s: pin.aba(model, data, *s)),
        ("frame_jacobian", lambda st: robot.frame_jacobian(st, frame),
         lambda s: robot.frame_jacobian(s[0], frame),
         lambda s: pin.computeFrameJacobian(model, data, s[0], fid, lwa)),
        ("placements (one frame)", lambda st: robot.placements(st, frame),
         lambda s: robot.placements(s[0], frame), raw_placement),
        ("frame_drift", lambda st: robot.frame_drift(st, frame=frame),
         lambda s: robot.frame_drift(s[0], s[1], frame), raw_drift),
        ("com", robot.com, lambda s: robot.com(s[0]),
         lambda s: pin.centerOfMass(model, data, s[0], False)),
        ("com_jacobian", robot.com_jacobian, lambda s: robot.com_jacobian(s[0]),
         lambda s: pin.jacobianCenterOfMass(model, data, s[0], False)),
        ("centroidal_momentum", robot.centroidal_momentum,
         lambda s: robot.centroidal_momentum(s[0], s[1]),
         lambda s: pin.computeCentroidalMomentum(model, data, s[0], s[1]).vector.copy()),
        ("centroidal_momentum_rate", robot.centroidal_momentum_rate,
         lambda s: robot.centroidal_momentum_rate(*s), raw_rate),
    ]  # fmt: skip

    # The controller's tick pass: computeAllTerms and the momentum drift dA_G/dt v.
    tick = robot.controller_pass()
    drift6 = np.empty(6)

    def raw_tick(s):
        pin.computeAllTerms(model, data, s[0], s[1])
        data.dAg.dot(s[1], out=drift6)
        return data.M

    def our_tick(*args):
        tick(*args)
        return tick.mass_matrix

    out.append(("controller_pass (one tick)", our_tick, lambda s: our_tick(s[0], s[1]), raw_tick))
    return out


def residual_case(robot, feet) -> Case:
    """The single-sample Newton-Euler residual at the CoM, 2 feet, and its raw floor."""
    model = robot.model
    raw_data = model.createData()  # the floor has its own Data, as a user's would
    contacts = [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.7) for f in feet]
    fids = [robot.frame_id(f) for f in feet]
    mg = robot.mass * model.gravity.linear
    weight = robot.weight
    W = np.array(
        [[5.0, -3.0, 0.5 * weight, 2.0, -1.0, 0.3], [-4.0, 2.0, 0.5 * weight, -1.5, 1.2, -0.2]]
    )
    wrenches = [W[0], W[1]]

    def raw(s):
        pin.computeCentroidalMomentumTimeVariation(model, raw_data, *s)
        com, dh = raw_data.com[0], raw_data.dhg
        f = mg - dh.linear
        m = -dh.angular
        for fid, w in zip(fids, W, strict=True):
            p = pin.updateFramePlacement(model, raw_data, fid).translation - com
            f = f + w[:3]
            m = (
                m
                + w[3:]
                + np.array(
                    [
                        p[1] * w[2] - p[2] * w[1],
                        p[2] * w[0] - p[0] * w[2],
                        p[0] * w[1] - p[1] * w[0],
                    ]
                )
            )
        return np.concatenate([f, m])

    def ours(*args):
        r = newton_euler_residual(robot, *args, contacts, wrenches)
        return np.concatenate([r.force, r.moment])

    return ("newton_euler_residual (2 feet)", lambda st: ours(st, None, None),
            lambda s: ours(*s), raw)  # fmt: skip


def per_call(f: Callable[[], object], number: int) -> float:
    # CPU time of this thread: time spent descheduled on a shared machine does not count.
    return timeit.Timer(f, timer=time.thread_time).timeit(number) / number * 1e6


def main(number: int = 1000, repeats: int = 25, pool: int = 64) -> None:
    robot, name, feet = benchmark_robot()
    rng = np.random.default_rng(0)
    arrays = [
        (robot.random_configuration(rng), rng.normal(size=robot.nv), rng.normal(size=robot.nv))
        for _ in range(pool)
    ]
    states = [robot.state(*s) for s in arrays]
    table = [*cases(robot, feet), residual_case(robot, feet)]
    for key, on_state, on_arrays, raw in table:  # the same numbers before timing
        want = as_array(raw(arrays[0]))
        for got in (on_arrays(arrays[0]), on_state(states[0])):
            np.testing.assert_allclose(as_array(got), want, rtol=0, atol=1e-9, err_msg=key)
    cols = ("state", "arrays", "raw")
    times: dict[str, dict[str, list[float]]] = {c[0]: {k: [] for k in cols} for c in table}
    base: list[float] = []
    for _ in range(repeats):
        it_s, it_a = itertools.cycle(states), itertools.cycle(arrays)
        base.append(per_call(lambda it=it_a: next(it), number))
        for key, on_state, on_arrays, raw in table:
            t = times[key]
            t["state"].append(per_call(lambda f=on_state, it=it_s: f(next(it)), number))
            t["arrays"].append(per_call(lambda f=on_arrays, it=it_a: f(next(it)), number))
            t["raw"].append(per_call(lambda f=raw, it=it_a: f(next(it)), number))
    b = statistics.median(base)
    print(
        f"robot {name}: nq={robot.nq}, nv={robot.nv}; median of {repeats} interleaved "
        f"repetitions x {number} calls, a new state every call (cycling through {pool}); "
        f"microseconds per call (the timing loop's {b:.2f} us subtracted)"
    )
    print("state: on a State checked once (robot.state); arrays: on raw arrays checked at the call")
    print(f"{'call':32s} {'state':>7s} {'arrays':>7s} {'raw':>7s} {'state':>6s} {'arrays':>7s}")
    misses = []
    for key, *_ in table:
        t = {c: statistics.median(times[key][c]) - b for c in cols}
        on_state, on_arrays = t["state"] / t["raw"], t["arrays"] / t["raw"]
        target_arrays = TARGET_RESIDUAL if key.startswith("newton_euler") else TARGET_ARRAYS
        if on_state > TARGET_STATE or on_arrays > target_arrays:
            misses.append(key)
        print(
            f"{key:32s} {t['state']:7.2f} {t['arrays']:7.2f} {t['raw']:7.2f} "
            f"{on_state:5.2f}x {on_arrays:6.2f}x"
        )
    print(
        f"targets: state <= {TARGET_STATE}x, arrays <= {TARGET_ARRAYS}x, the residual on "
        f"arrays <= {TARGET_RESIDUAL}x its floor: "
        + ("met" if not misses else f"NOT met for {', '.join(misses)}")
    )


def as_array(x: Any) -> np.ndarray:
    """A result as a fresh array (placements: positions and rotations, flattened)."""
    if isinstance(x, tuple):
        return np.concatenate([np.ravel(part) for part in x[:2]])
    return np.array(x, dtype=float)


if __name__ == "__main__":
    main()
