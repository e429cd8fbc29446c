"""Simulate the shipped humanoid in MuJoCo and check its contact forces with wholebody.

The robot stands on its two box feet and squats (PD-controlled joints); optionally a push
is applied to the torso. Each step logs MuJoCo's state and acceleration in MuJoCo's own
conventions and the contact force of every contact point, summed per foot into a wrench in
world axes at the sole frame's origin (``contact_wrenches_on_bodies``). The log becomes a
``Trajectory`` through ``trajectory_from_mujoco`` (quaternion order, base velocity axes and
the ``omega x v`` term converted there), and ``check_trajectory`` must find every sample
consistent (residual <= 1e-6 N with MuJoCo's accelerations).

The log is written as ``humanoid_<scenario>[_push].npz`` to ``--out`` (default
$WHOLEBODY_EXAMPLE_OUT or ./out). Scenarios: squat (default), stand, single_support.
``data/humanoid_squat.npz`` in the repository was made by:
python examples/mujoco_humanoid_simulation.py --out data --every 2

Needs the ``mujoco`` extra.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

import wholebody as wb
from wholebody.check.analysis import check_trajectory
from wholebody.contacts import SurfaceContact
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH, HUMANOID_SOLE_HALF_WIDTH
from wholebody.sim.mujoco import (
    MujocoStateMap,
    contact_wrenches_on_bodies,
    import_mujoco,
    mujoco_spec_for_robot,
    trajectory_from_mujoco,
)
from wholebody.trajectory import Trajectory

mujoco = import_mujoco()
CONTACT_ROWS = mujoco.mjtConstraint.mjCNSTR_CONTACT_FRICTIONLESS  # the first contact row type

DT = 0.001
FEET = {"left_sole": "left_foot", "right_sole": "right_foot"}  # sole frame -> MuJoCo body
FEET_CONTACTS = [
    SurfaceContact(
        f, half_length=HUMANOID_SOLE_HALF_LENGTH, half_width=HUMANOID_SOLE_HALF_WIDTH, mu=1.0
    )
    for f in FEET
]


def squat_angles(t: float) -> dict[str, float]:
    """Joint targets of the squat: legs flex and extend at 0.5 Hz, one arm swings."""
    theta = 0.25 + 0.10 * np.sin(2 * np.pi * 0.5 * t)
    angles = {}
    for side in ("left", "right"):
        angles |= {
            f"{side}_hip_pitch": -theta,
            f"{side}_knee": 2 * theta,
            f"{side}_ankle_pitch": -theta,
        }
    angles |= {"left_shoulder_pitch": -0.3 * np.sin(np.pi * t), "right_elbow": -0.5}
    return angles


def stand_angles(t: float) -> dict[str, float]:
    """Joint targets of quiet standing (the squat's first posture)."""
    return squat_angles(0.0) | {"left_shoulder_pitch": 0.0}


def single_support_angles(t: float) -> dict[str, float]:
    """Shift the pelvis over the left foot (hip and ankle roll) in 1 s, then lift the right foot."""

    def smooth(x: float) -> float:
        x = min(max(x, 0.0), 1.0)
        return x * x * (3 - 2 * x)

    phi = -0.075 * smooth(t / 1.0)
    lift = smooth((t - 1.2) / 0.4)
    angles = {
        "left_hip_roll": phi,
        "left_ankle_roll": -phi,
        "right_hip_roll": phi,
        "right_ankle_roll": -phi,
    }
    for side in ("left", "right"):
        angles |= {f"{side}_hip_pitch": -0.25, f"{side}_knee": 0.5, f"{side}_ankle_pitch": -0.25}
    angles |= {
        "right_hip_pitch": -0.25 - 0.3 * lift,
        "right_knee": 0.5 + 0.6 * lift,
        "right_ankle_pitch": -0.25 - 0.3 * lift,
    }
    return angles


SCENARIOS = {"squat": squat_angles, "stand": stand_angles, "single_support": single_support_angles}


def simulate(
    robot: wb.Robot,
    duration: float = 2.0,
    *,
    push: tuple[float, float, np.ndarray] | None = None,
    every: int = 1,
    scenario: str = "squat",
) -> Trajectory:
    """Simulate and log; ``push = (start, end, force)`` applies a force [N] at the torso's CoM.

    ``scenario``: "squat", "stand" or "single_support" (see :data:`SCENARIOS`).
    """
    targets = SCENARIOS[scenario]
    m = mujoco_spec_for_robot(robot, timestep=DT, solver_tolerance=None).compile()
    d = mujoco.MjData(m)
    smap = MujocoStateMap(robot, m)
    # Start in the squat posture with the soles on the floor.
    q0 = robot.q_from_named(targets(0.0))
    q0[2] = -robot.frame_position(q0, "left_sole")[2] - 7e-4  # MuJoCo's soft contact sinks ~0.7 mm
    d.qpos[:3] = q0[:3]
    d.qpos[3:7] = [1.0, 0.0, 0.0, 0.0]
    jid = {n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in robot.joint_names}
    for n, value in robot.named(q0).items():
        d.qpos[m.jnt_qposadr[jid[n]]] = value
    # Stiff PD: the stiffness as an applied force, the damping as MuJoCo joint damping, which
    # the implicit integrator handles stably on light links. Both are internal (joint) forces:
    # they do not enter the Newton-Euler balance of the whole robot.
    kp = {n: (100.0 if ("shoulder" in n or "elbow" in n) else 800.0) for n in robot.joint_names}
    for n in robot.joint_names:
        m.dof_damping[m.jnt_dofadr[jid[n]]] = 0.05 * kp[n]
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    # MuJoCo's qacc and contact forces agree only as far as its solver converged: ask for it.
    m.opt.tolerance, m.opt.iterations = 1e-12, 500
    torso = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "torso")
    # MuJoCo's joint order (qpos after the free joint) is kept: trajectory_from_mujoco maps by name.
    mj_joints = sorted(robot.joint_names, key=lambda n: m.jnt_qposadr[jid[n]])
    log: dict[str, list] = {k: [] for k in ("t", "qpos", "qvel", "qacc", "tau", "wrenches", "push")}
    for step in range(int(round(duration / DT))):
        t = step * DT
        target = targets(t)
        d.qfrc_applied[:] = 0.0
        for n in robot.joint_names:
            err = target.get(n, 0.0) - d.qpos[m.jnt_qposadr[jid[n]]]
            d.qfrc_applied[m.jnt_dofadr[jid[n]]] = kp[n] * err
        d.xfrc_applied[:] = 0.0
        if push is not None and push[0] <= t < push[1]:
            d.xfrc_applied[torso, :3] = push[2]
        mujoco.mj_forward(m, d)
        if step % every == 0:
            q = smap.q(d.qpos)
            soles = np.array([robot.frame_position(q, f) for f in FEET])
            log["t"].append(t)
            log["qpos"].append(d.qpos.copy())
            log["qvel"].append(d.qvel.copy())
            log["qacc"].append(d.qacc.copy())
            dofs = [m.jnt_dofadr[jid[n]] for n in mj_joints]
            # The joints' forces other than the contacts': PD, damping and the joint limits'
            # constraint forces (an arm at its limit), as the MuJoCo recorder logs them.
            limits = np.where(d.efc_type < int(CONTACT_ROWS), d.efc_force, 0.0)
            qfrc_limits = np.zeros(m.nv)
            if d.nefc:
                mujoco.mj_mulJacTVec(m, d, qfrc_limits, limits)
            log["tau"].append((d.qfrc_applied + d.qfrc_passive + qfrc_limits)[dofs])
            log["wrenches"].append(contact_wrenches_on_bodies(m, d, list(FEET.values()), soles))
            # The push as a wrench at the torso frame's origin (MuJoCo applies it at the CoM).
            f = d.xfrc_applied[torso, :3].copy()
            log["push"].append(np.r_[f, np.cross(d.xipos[torso] - d.xpos[torso], f)])
        mujoco.mj_step(m, d)
    W = np.array(log["wrenches"])
    external = {"torso": np.array(log["push"])} if push is not None else None
    return trajectory_from_mujoco(
        np.array(log["qpos"]),
        np.array(log["qvel"]),
        np.array(log["qacc"]),
        time=np.array(log["t"]),
        joint_names=mj_joints,
        tau=np.array(log["tau"]),
        contact_wrenches={name: W[:, k] for k, name in enumerate(FEET)},
        external_wrenches=external,
        metadata={
            "robot": "humanoid",
            "simulator": f"MuJoCo {mujoco.__version__}",
            "timestep": DT,
            "scenario": scenario + (" with push" if push else ""),
        },
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("WHOLEBODY_EXAMPLE_OUT", "out"))
    parser.add_argument("--duration", type=float, default=2.0)
    parser.add_argument("--every", type=int, default=1, help="log every n-th step")
    parser.add_argument("--push", action="store_true", help="push the torso sideways for 0.1 s")
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="squat")
    args = parser.parse_args()
    robot = wb.load("humanoid")
    push = (0.8, 0.9, np.array([0.0, 60.0, 0.0])) if args.push else None
    traj = simulate(robot, args.duration, push=push, every=args.every, scenario=args.scenario)
    report = check_trajectory(robot, traj, FEET_CONTACTS)
    print(report.format_summary())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"humanoid_{args.scenario}{'_push' if push else ''}"
    traj.save(out / f"{stem}.npz")
    try:
        report.plot(out / f"{stem}.report.png")
    except ImportError:
        print("no plot: pip install 'wholebody[plot]'")
    fz = traj.contact_wrenches[:, :, 2].sum(axis=1)
    # Cross-check: MuJoCo's contact forces balance MuJoCo's motion through wholebody's model.
    assert report.n_checked == len(traj)
    assert np.nanmax(report.force_norm) < 1e-6 and np.nanmax(report.moment_norm) < 1e-6
    assert (
        fz[int(0.1 / DT / args.every) :].min() > 0.5 * robot.weight
    )  # it stood on its feet after settling
    assert report.consistent and not report.diagnosis


if __name__ == "__main__":
    main()
