"""Simulate the shipped humanoid in MuJoCo and check its contact forces with wholebody.

The robot stands on its two box feet and squats (PD-controlled joints) for a few seconds.
Each step logs MuJoCo's state and acceleration, converted to Pinocchio's conventions by
``wholebody.mujoco_bridge``, and the contact force of every contact point, summed per foot
into a wrench in world axes at the sole frame's origin. The Newton-Euler residual of every
sample must vanish (MuJoCo's own accelerations are used): it prints the largest one and
asserts it is below 1e-6 N.

The log is written as ``humanoid_squat.npz`` (to $WHOLEBODY_EXAMPLE_OUT or ./out).

Needs the ``mujoco`` extra. Run: python examples/mujoco_humanoid_simulation.py
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

import wholebody as wb
from wholebody.balance import newton_euler_residuals
from wholebody.contacts import SurfaceContact
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH, HUMANOID_SOLE_HALF_WIDTH
from wholebody.mujoco_bridge import MujocoStateMap, import_mujoco, mujoco_model_from_urdf

mujoco = import_mujoco()

DURATION, DT = 3.0, 0.001
FEET = {"left_sole": "left_foot", "right_sole": "right_foot"}  # sole frame -> MuJoCo body


def squat_angles(t: float) -> dict[str, float]:
    theta = 0.25 + 0.10 * np.sin(2 * np.pi * 0.5 * t)
    angles = {}
    for side in ("left", "right"):
        angles |= {f"{side}_hip_pitch": -theta, f"{side}_knee": 2 * theta, f"{side}_ankle_pitch": -theta}
    angles |= {"left_shoulder_pitch": -0.3 * np.sin(np.pi * t), "right_elbow": -0.5}
    return angles


def foot_wrenches(m, d, robot: wb.Robot, q: np.ndarray) -> np.ndarray:
    """Per foot, the contact wrench on the foot: world axes at the sole origin, (2, 6)."""
    out = np.zeros((len(FEET), 6))
    bodies = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b) for b in FEET.values()]
    soles = [robot.frame_position(q, f) for f in FEET]
    local = np.zeros(6)
    for i in range(d.ncon):
        con = d.contact[i]
        mujoco.mj_contactForce(m, d, i, local)
        # mj_contactForce gives the force of geom1 on geom2 in the contact frame (rows of
        # con.frame are its axes, the normal first).
        f_world = con.frame.reshape(3, 3).T @ local[:3]
        for k, body in enumerate(bodies):
            if m.geom_bodyid[con.geom2] == body:
                f = f_world
            elif m.geom_bodyid[con.geom1] == body:
                f = -f_world
            else:
                continue
            out[k, :3] += f
            out[k, 3:] += np.cross(con.pos - soles[k], f)
    return out


def simulate(robot: wb.Robot) -> dict[str, np.ndarray]:
    m = mujoco_model_from_urdf(robot.source, floor=True, timestep=DT)
    d = mujoco.MjData(m)
    smap = MujocoStateMap(robot, m)
    # Start in the squat posture with the soles on the floor.
    q0 = robot.q_from_named(squat_angles(0.0))
    q0[2] = -robot.frame_position(q0, "left_sole")[2] - 7e-4  # MuJoCo's soft contact sinks ~0.7 mm
    d.qpos[:3] = q0[:3]
    d.qpos[3:7] = [1.0, 0.0, 0.0, 0.0]
    joint_adr = {n: m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n)] for n in robot.joint_names}
    dof_adr = {n: m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n)] for n in robot.joint_names}
    for n, value in robot.named(q0).items():
        d.qpos[joint_adr[n]] = value
    # Stiff PD: the stiffness as an applied force, the damping as MuJoCo joint damping, which
    # the implicit integrator handles stably on light links. Both are internal (joint) forces:
    # they do not enter the Newton-Euler balance of the whole robot.
    kp = {n: (100.0 if ("shoulder" in n or "elbow" in n) else 800.0) for n in robot.joint_names}
    for n in robot.joint_names:
        m.dof_damping[dof_adr[n]] = 0.05 * kp[n]
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    # MuJoCo's qacc and contact forces agree only as far as its solver converged: ask for it.
    m.opt.tolerance, m.opt.iterations = 1e-12, 500
    log: dict[str, list] = {k: [] for k in ("t", "q", "v", "a", "tau", "wrenches")}
    for step in range(int(DURATION / DT)):
        t = step * DT
        target = squat_angles(t)
        d.qfrc_applied[:] = 0.0
        for n in robot.joint_names:
            err = target.get(n, 0.0) - d.qpos[joint_adr[n]]
            d.qfrc_applied[dof_adr[n]] = kp[n] * err
        mujoco.mj_forward(m, d)
        q = smap.q(d.qpos)
        log["t"].append(t)
        log["q"].append(q)
        log["v"].append(smap.v(d.qpos, d.qvel))
        log["a"].append(smap.a(d.qpos, d.qvel, d.qacc))
        log["tau"].append(smap.velocity_map(d.qpos).T @ (d.qfrc_applied + d.qfrc_passive))
        log["wrenches"].append(foot_wrenches(m, d, robot, q))
        mujoco.mj_step(m, d)
    return {k: np.array(v) for k, v in log.items()}


def main() -> float:
    robot = wb.load("humanoid")
    log = simulate(robot)
    contacts = [
        SurfaceContact(f, half_length=HUMANOID_SOLE_HALF_LENGTH, half_width=HUMANOID_SOLE_HALF_WIDTH, mu=1.0)
        for f in FEET
    ]
    W = log["wrenches"].reshape(len(log["t"]), -1)
    res = newton_euler_residuals(robot, log["q"], log["v"], log["a"], contacts, W)
    fz = W[:, [2, 8]].sum(axis=1)
    print(f"{len(res)} samples over {DURATION} s; total normal force {fz.min():.1f} .. {fz.max():.1f} N "
          f"(weight {robot.weight:.1f} N)")
    print(f"largest residual: force {np.nanmax(res.force_norm):.2e} N, moment {np.nanmax(res.moment_norm):.2e} N m")
    out = Path(os.environ.get("WHOLEBODY_EXAMPLE_OUT", "out"))
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        out / "humanoid_squat.npz", t=log["t"], q=log["q"], v=log["v"], a=log["a"], tau=log["tau"],
        contact_names=np.array(list(FEET)), contact_wrenches=log["wrenches"],
    )
    # Cross-check: MuJoCo's contact forces balance MuJoCo's motion through wholebody's model.
    assert res.n_checked == len(res)
    assert np.nanmax(res.force_norm) < 1e-6 and np.nanmax(res.moment_norm) < 1e-6
    assert fz[int(0.1 / DT) :].min() > 0.5 * robot.weight  # it stood on its feet after settling
    return float(np.nanmax(res.force_norm))


if __name__ == "__main__":
    main()
