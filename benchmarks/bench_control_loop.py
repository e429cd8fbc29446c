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
ratio are printed only where it imports (that path, written against TSID 1.x's binding, is
not run on this machine; if it fails it says so and prints no number).

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
    from wholebody.sim.mujoco import MujocoStateMap, import_mujoco, mujoco_spec_for_robot

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
        ctrl.add_task(ContactForceTask(c.name, weight=1e-6))
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
    elif which == "tsid":
        tick = tsid_tick(robot, planned, q0)
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
    try:
        theirs, err_tsid = loop(seconds, "tsid")
    except Exception as exc:  # TSID's binding differs between releases: say so, no number
        print(f"tsid imports but its loop failed ({type(exc).__name__}: {exc}); no ratio")
        return
    print(
        f"TSID {getattr(tsid, '__version__', '?')} (same tasks, HQuadProgFast): {theirs:.0f} us "
        f"per tick, CoM error RMS {err_tsid:.2f} mm; ratio wholebody / TSID "
        f"{ours / theirs:.2f}x"
    )


def tsid_tick(robot, planned, q0):
    """The same task set in TSID 1.x (untested here: TSID is not installed on this machine)."""
    import tsid

    model = robot.model
    wrapper = tsid.RobotWrapper(model, tsid.FLOATING_BASE_SYSTEM, False)
    form = tsid.InverseDynamicsFormulationAccForce("tsid", wrapper, False)
    v0 = np.zeros(robot.nv)
    form.computeProblemData(0.0, q0, v0)
    data = form.data()
    for c in planned:
        hl, hw = c.half_length, c.half_width
        points = np.array([[hl, hl, -hl, -hl], [hw, -hw, hw, -hw], [0.0, 0.0, 0.0, 0.0]])
        contact = tsid.Contact6d(
            c.name, wrapper, c.frame, points, np.array([0, 0, 1.0]), c.mu, 0.0, 1e4
        )
        contact.setKp(10.0 * np.ones(6))
        contact.setKd(6.0 * np.ones(6))
        contact.setReference(wrapper.framePosition(data, model.getFrameId(c.frame)))
        form.addRigidContact(contact, 1e-6)
    com = tsid.TaskComEquality("com", wrapper)
    com.setKp(25.0 * np.ones(3))
    com.setKd(10.0 * np.ones(3))
    form.addMotionTask(com, 1.0, 1, 0.0)
    com_ref = wrapper.com(data)
    com.setReference(tsid.TrajectoryEuclidianConstant("com", com_ref).computeNext())
    am = tsid.TaskAMEquality("am", wrapper)
    am.setKp(np.zeros(3))
    am.setKd(10.0 * np.ones(3))
    form.addMotionTask(am, 1e-3, 1, 0.0)
    am.setReference(tsid.TrajectorySample(3))
    posture = tsid.TaskJointPosture("posture", wrapper)
    posture.setKp(50.0 * np.ones(robot.nv - 6))
    posture.setKd(14.0 * np.ones(robot.nv - 6))
    form.addMotionTask(posture, 1e-3, 1, 0.0)
    posture.setReference(tsid.TrajectoryEuclidianConstant("posture", q0[7:]).computeNext())
    hand = tsid.TaskSE3Equality("hand", wrapper, HAND)
    hand.setKp(100.0 * np.ones(6))
    hand.setKd(20.0 * np.ones(6))
    form.addMotionTask(hand, 1e-1, 1, 0.0)
    hand_ref = wrapper.framePosition(data, model.getFrameId(HAND))
    hand.setReference(tsid.TrajectorySE3Constant("hand", hand_ref).computeNext())
    bounds = tsid.TaskActuationBounds("torque", wrapper)
    lim = model.effortLimit[6:]
    bounds.setBounds(-lim, lim)
    form.addActuationTask(bounds, 1.0, 0, 0.0)
    solver = tsid.SolverHQuadProgFast("qp")
    solver.resize(form.nVar, form.nEq, form.nIn)
    clock = {"t": 0.0}

    def tick(q, v):
        problem = form.computeProblemData(clock["t"], q, v)
        clock["t"] += DT
        sol = solver.solve(problem)
        return form.getActuatorForces(sol), com_ref - wrapper.com(form.data())

    return tick


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
