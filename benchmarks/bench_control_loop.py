"""The WholeBodyController tick on Talos inside a MuJoCo closed loop (and TSID's, where it is
installed).

Task set (the one of the TSID side by side in DESIGN.md section 8): two 6D sole contacts
(0.10 x 0.05 m, mu = 0.7), CoM, angular momentum, joint posture, the left gripper's SE3 pose,
force regularisation per sole, torque limits. Talos (example-robot-data's reduced model)
stands in MuJoCo with knees bent; each tick reads the state, runs
``WholeBodyController.update`` (one Pinocchio pass) and ``solve`` (daqp) and applies the
torques. The tick is timed with the thread's CPU clock (less sensitive to a shared machine);
the median over the loop is printed, with the old fixed-contact ``InverseDynamicsQP`` tick
in the same loop for reference. TSID (``import tsid``) is not installable quickly here (its
C++ library compiles from source and its binding needs pinocchio 4.0.0): its figure and the
ratio are printed only where it imports.

Run: python benchmarks/bench_control_loop.py [SECONDS]   (default 1.0 s of simulation)
"""

from __future__ import annotations

import os
import sys
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

import wholebody as wb  # noqa: E402
from wholebody.contacts import SurfaceContact  # noqa: E402
from wholebody.control import (  # noqa: E402
    AngularMomentumTask,
    ComTask,
    ContactForceTask,
    FrameTask,
    InverseDynamicsQP,
    PostureTask,
    WholeBodyController,
)
from wholebody.errors import ModelWarning  # noqa: E402

DT = 1e-3
SOLES = ("left_sole_link", "right_sole_link")
HAND = "gripper_left_base_link"


def setup():
    """Talos in MuJoCo, its state map, the initial state and the planned contacts."""
    from wholebody.mujoco_bridge import MujocoStateMap, import_mujoco, mujoco_spec_for_robot

    mujoco = import_mujoco()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        robot = wb.load("talos")
        real = [SurfaceContact(f, half_length=0.10, half_width=0.05, mu=1.0) for f in SOLES]
        build = mujoco_spec_for_robot(
            robot, real, other_collisions=False, inertia="repair", timestep=DT
        )
    build.spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    m = build.compile()
    d = mujoco.MjData(m)
    robot = build.robot
    bent = {"3": -0.3, "4": 0.6, "5": -0.3}
    q0 = robot.q_from_named(
        {f"leg_{s}_{j}_joint": x for s in ("left", "right") for j, x in bent.items()}
    )
    q0[2] = 5e-4 - min(robot.frame_position(q0, f)[2] for f in SOLES)
    smap = MujocoStateMap(robot, m)
    jid = {n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in robot.joint_names}
    d.qpos[:3], d.qpos[3:7] = q0[:3], [q0[6], *q0[3:6]]
    for n, value in robot.named(q0).items():
        d.qpos[m.jnt_qposadr[jid[n]]] = value
    dofs = np.array([m.jnt_dofadr[jid[n]] for n in robot.joint_names])
    planned = [SurfaceContact(f, half_length=0.075, half_width=0.0375, mu=0.7) for f in SOLES]
    return mujoco, m, d, robot, smap, dofs, q0, planned


def new_controller(robot, planned, q0):
    ctrl = WholeBodyController(robot, dt=DT)
    for c in planned:
        ctrl.add_contact(c, kp=10.0, kd=6.0)
    ctrl.add_task(ComTask(kp=25.0, kd=10.0, weight=1.0))
    ctrl.add_task(AngularMomentumTask(kd=10.0, weight=1e-3))
    posture = ctrl.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-3))
    posture.set_reference(q0)
    ctrl.add_task(FrameTask(HAND, kp=100.0, kd=20.0, weight=1e-1))
    for c in planned:
        ctrl.add_task(ContactForceTask(c.name, weight=1e-5))
    return ctrl


def loop(seconds: float, which: str) -> tuple[float, float]:
    """Median tick [us] (thread CPU time) and the CoM's RMS error [mm] of one closed loop."""
    mujoco, m, d, robot, smap, dofs, q0, planned = setup()
    steps = int(round(seconds / DT))
    ticks, errors = np.empty(steps), np.empty(steps)
    clock = time.thread_time
    if which == "WholeBodyController":
        ctrl = new_controller(robot, planned, q0)
        com = ctrl.task("com")

        def tick(q, v):
            ctrl.update(q, v)
            return ctrl.solve().torque, com.error
    else:
        old = InverseDynamicsQP(robot, planned)
        c_ref = robot.com(q0)

        def tick(q, v):
            cd = old.update(q, v)
            hg, c = cd.centroidal_momentum, cd.com
            acc = 25.0 * (c_ref - c) - 10.0 * hg[:3] / robot.mass
            tasks = [
                old.com_task(acc, weight=1.0),
                old.angular_momentum_task(-10.0 * hg[3:], weight=1e-3),
                old.posture_task(q0, kp=50.0, kd=14.0, weight=1e-3),
            ]
            return old.split(old.solve(tasks))[2], c_ref - c

    for k in range(steps):
        q, v = smap.q(d.qpos), smap.v(d.qpos, d.qvel)
        t0 = clock()
        tau, err = tick(q, v)
        ticks[k] = clock() - t0
        errors[k] = np.linalg.norm(err)
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[dofs] = tau
        mujoco.mj_step(m, d)
    return 1e6 * float(np.median(ticks)), 1e3 * float(np.sqrt(np.mean(errors**2)))


def main(seconds: float = 1.0) -> None:
    print(
        f"bench_control_loop: Talos in MuJoCo, {seconds:g} s at 1 kHz; pinocchio "
        f"{pin.__version__}, numpy {np.__version__}; tick = thread CPU time, median"
    )
    try:
        ours, err = loop(seconds, "WholeBodyController")
    except wb.MissingDependencyError as exc:
        print(f"skipped ({exc})")
        return
    print(
        f"WholeBodyController (CoM, momentum, posture, hand SE3, 2 x force reg., torque limits, "
        f"2 soles): {ours:.0f} us per tick, CoM error RMS {err:.2f} mm"
    )
    old, err_old = loop(seconds, "InverseDynamicsQP")
    print(
        f"InverseDynamicsQP (CoM, momentum, posture, torque limits): {old:.0f} us per tick, "
        f"CoM error RMS {err_old:.2f} mm"
    )
    try:
        import tsid  # noqa: F401
    except ImportError:
        print("tsid: not installed here, no ratio (see DESIGN.md section 8 for installing it)")
        return
    print("tsid imports: its closed loop is not wired in this benchmark yet; no ratio printed")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
