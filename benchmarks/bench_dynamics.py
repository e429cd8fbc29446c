"""Per-call cost of the dynamics terms through ``Robot`` against raw Pinocchio, same run.

What ``Robot`` adds per call: the state checks (shape, finiteness, quaternion norm), the
frame-name lookup and a copy of the result. Robot: G1 (nv = 35) when example-robot-data is
installed, else the shipped humanoid.

Run: python benchmarks/bench_dynamics.py
"""

from __future__ import annotations

import timeit

import numpy as np
import pinocchio as pin
from _common import benchmark_robot

TARGET_RATIO = 1.3


def main(number: int = 3000) -> None:
    robot, _, feet = benchmark_robot()
    frame = feet[0]
    model, data = robot.model, robot.data
    rng = np.random.default_rng(0)
    q, v = robot.random_configuration(rng), rng.normal(size=robot.nv)
    fid = model.getFrameId(frame)
    LWA = pin.LOCAL_WORLD_ALIGNED
    cases = {
        "mass_matrix": (lambda: robot.mass_matrix(q), lambda: pin.crba(model, data, q)),
        "coriolis_matrix": (lambda: robot.coriolis_matrix(q, v), lambda: pin.computeCoriolisMatrix(model, data, q, v)),
        "gravity": (lambda: robot.gravity(q), lambda: pin.computeGeneralizedGravity(model, data, q)),
        "nonlinear_effects": (lambda: robot.nonlinear_effects(q, v), lambda: pin.nonLinearEffects(model, data, q, v)),
        "frame_jacobian": (lambda: robot.frame_jacobian(q, frame),
                           lambda: pin.computeFrameJacobian(model, data, q, fid, LWA)),
        "check_q + check_v only": (lambda: (robot.check_q(q), robot.check_v(v)), lambda: None),
    }
    print(f"robot {robot.name}: nv={robot.nv}; best of 5 x {number} calls, microseconds per call")
    print("wholebody copies its results (raw Pinocchio returns views of data that the next call overwrites)")
    print(f"{'term':24s} {'wholebody':>10s} {'unchecked':>10s} {'raw pin':>10s} {'ratio':>7s} {'unchecked':>10s}")
    for name, (ours, raw) in cases.items():
        robot.check_inputs = True
        t_ours = min(timeit.repeat(ours, number=number, repeat=5)) / number * 1e6
        robot.check_inputs = False
        t_fast = min(timeit.repeat(ours, number=number, repeat=5)) / number * 1e6
        robot.check_inputs = True
        t_raw = min(timeit.repeat(raw, number=number, repeat=5)) / number * 1e6
        if name == "check_q + check_v only":
            print(f"{name:24s} {t_ours:10.2f}")
            continue
        print(f"{name:24s} {t_ours:10.2f} {t_fast:10.2f} {t_raw:10.2f} {t_ours / t_raw:6.2f}x {t_fast / t_raw:9.2f}x")
    print(f"target: ratio <= {TARGET_RATIO}x for the dynamics terms (checked; 'unchecked' is check_inputs=False)")


if __name__ == "__main__":
    main()
