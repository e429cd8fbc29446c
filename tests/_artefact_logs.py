"""Simulated logs for the artefact and diagnosis tests: one MuJoCo run at a fine step, from
which logs at 1 kHz and 500 Hz are cut (so that a force stream can be shifted by a known time
that is not a whole number of the log's samples); standing logs of the shipped humanoid and of
robots not in the repository, clean or with a fault made in the simulation (gravity tilted, a
payload, no forward pass, a fall); and the check with the diagnosis inputs it will pass."""

from __future__ import annotations

import dataclasses
import functools
import sys
import warnings
from pathlib import Path

import numpy as np

import wholebody as wb
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
FINE_DT = 0.0005  # [s]: 2 kHz, so that 7 ms is 14 fine steps
DT = 0.002  # [s]: the standing logs' step (500 Hz)
SETTLE = 0.1  # [s] simulated before a standing log starts


@functools.lru_cache(maxsize=4)
def fine_run(scenario: str = "squat", duration: float = 0.6) -> Trajectory:
    """The shipped humanoid simulated in MuJoCo at 2 kHz (exact to the solver's tolerance)."""
    sys.path.insert(0, str(ROOT / "examples"))
    import mujoco_humanoid_simulation as sim

    old = sim.DT
    sim.DT = FINE_DT
    try:
        return sim.simulate(wb.load("humanoid"), duration, scenario=scenario)
    finally:
        sim.DT = old


def cut(fine: Trajectory, every: int, *, lag_steps: int = 0, start: int = 200) -> Trajectory:
    """Every ``every``-th fine sample from ``start`` on (0.1 s: after the landing transient);
    the contact wrenches read ``lag_steps`` fine steps late (positive: they lag)."""
    idx = np.arange(start, len(fine.time), every)
    idx = idx[(idx - lag_steps >= 0) & (idx - lag_steps < len(fine.time))]
    W = fine.contact_wrenches[idx - lag_steps]
    return dataclasses.replace(
        fine,
        time=fine.time[idx],
        q=fine.q[idx],
        v=fine.v[idx],
        a=None if fine.a is None else fine.a[idx],
        tau=None if fine.tau is None else fine.tau[idx],
        contact_wrenches=W,
    )


def check_options(options: dict) -> wb.CheckOptions:
    """The keyword options of a test as the check's options object."""
    return wb.CheckOptions(**options)


@functools.lru_cache(maxsize=16)
def standing_log(
    name: str = "g1",
    duration: float = 1.0,
    *,
    tilt: tuple[float, float] = (0.0, 0.0),
    payload: tuple[str, float, tuple[float, float, float]] | None = None,
    forward: bool = True,
    stiffness: float = 1.0,
    collisions: bool = False,
):
    """A MuJoCo log of ``name`` ("humanoid", or a robot of example-robot-data set up by
    ``examples/mujoco_any_humanoid.py``) squatting gently at 500 Hz after 0.1 s of settling.

    ``tilt``: gravity turned by these roll and pitch angles [degrees] (the ground tilted);
    ``payload``: (link, mass [kg], point in the link frame [m]) added to MuJoCo's model only;
    ``forward=False``: read after ``mj_step`` without ``mj_forward``; ``stiffness``: share of
    the joint PD's stiffness (near 0 the robot falls); ``collisions``: keep the robot's own
    collision geoms. Returns (robot, contacts, trajectory in the robot's layout).
    """
    import pinocchio as pin

    from wholebody.contacts import SurfaceContact
    from wholebody.errors import ModelWarning
    from wholebody.models import HUMANOID_SOLE_HALF_LENGTH as HL
    from wholebody.models import HUMANOID_SOLE_HALF_WIDTH as HW
    from wholebody.sim.mujoco import MujocoStateMap, import_mujoco, mujoco_spec_for_robot
    from wholebody.sim.mujoco_recorder import MujocoRecorder

    mujoco = import_mujoco()
    if name == "humanoid":
        robot, suffix, squat, arm = wb.load("humanoid"), "", 0.06, 0.4
        contacts = [
            SurfaceContact(f, half_length=HL, half_width=HW, mu=1.0)
            for f in ("left_sole", "right_sole")
        ]
    else:
        sys.path.insert(0, str(ROOT / "examples"))
        import mujoco_any_humanoid

        robot, contacts, _ = mujoco_any_humanoid.load_standing_robot(name)
        suffix, squat, arm = "_joint", 0.03, 0.2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        build = mujoco_spec_for_robot(
            robot, contacts, other_collisions=collisions, inertia="repair", timestep=DT
        )
    build.spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    if payload is not None:
        link, mass, point = payload
        body = build.spec.body(link).add_body(name="payload", pos=list(point))
        body.mass, body.inertia, body.ipos = mass, [1e-9] * 3, [0.0] * 3  # a point mass
        body.explicitinertial = True
    R = pin.rpy.rpyToMatrix(np.deg2rad(tilt[0]), np.deg2rad(tilt[1]), 0.0)
    build.spec.option.gravity = R @ np.array([0.0, 0.0, -9.81])
    m = build.compile()
    d = mujoco.MjData(m)
    robot = build.robot
    names = set(robot.joint_names)

    def targets(t: float) -> dict[str, float]:
        th = 0.25 + squat * np.sin(np.pi * t)
        out = {f"left_shoulder_pitch{suffix}": -arm * np.sin(np.pi * t)}
        for side in ("left", "right"):
            out |= {
                f"{side}_hip_pitch{suffix}": -th,
                f"{side}_knee{suffix}": 2 * th,
                f"{side}_ankle_pitch{suffix}": -th,
            }
        return {k: v for k, v in out.items() if k in names}

    q0 = robot.q_from_named(targets(0.0))
    q0[2] = 5e-4 - min(robot.frame_position(q0, c.frame)[2] for c in contacts)
    rec = MujocoRecorder.from_build(build, m, forward=forward)
    smap = MujocoStateMap(robot, m)
    jq, jv = smap.joint_qpos_indices, smap.joint_dof_indices
    d.qpos[:] = 0.0
    smap.qpos(q0, out=d.qpos)
    kp = 40.0 * robot.mass * stiffness
    m.dof_damping[jv] = 40.0 * robot.mass * max(stiffness, 0.05) * 0.02
    for k in range(int(round(duration / DT))):
        target = smap.qpos(robot.q_from_named(targets(k * DT)))[jq]
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[jv] = kp * (target - d.qpos[jq])
        if k * DT < SETTLE - 1e-12:
            mujoco.mj_step(m, d)
            continue
        if forward:
            rec.record(d)
        mujoco.mj_step(m, d)
        if not forward:
            rec.record(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # undeclared contacts of a fall are the point
        traj = rec.trajectory(metadata={"robot": name})
    q, v, a, _ = traj.for_robot(robot)
    traj = dataclasses.replace(traj, q=q, v=v, a=a, tau=None, joint_names=tuple(robot.joint_names))
    return robot, contacts, traj
