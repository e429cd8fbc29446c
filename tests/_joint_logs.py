"""Logs with torques of robots that are not in the repository: G1 or Talos (example-robot-data)
swaying in MuJoCo (knees and elbows bent, arms swinging, waist turning) under a joint PD,
recorded with their torques (MuJoCo's recorder logs every generalized force but the
contacts')."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import wholebody as wb
from wholebody.contacts import SurfaceContact
from wholebody.errors import ModelWarning

ROOT = Path(__file__).resolve().parents[1]

#: The bent posture [rad], by joint name (G1's names, then Talos').
BENT = {
    "left_knee_joint": 0.3,
    "right_knee_joint": 0.3,
    "left_hip_pitch_joint": -0.15,
    "right_hip_pitch_joint": -0.15,
    "left_ankle_pitch_joint": -0.15,
    "right_ankle_pitch_joint": -0.15,
    "left_elbow_joint": 0.3,
    "right_elbow_joint": 0.3,
    "leg_left_3_joint": -0.15,
    "leg_right_3_joint": -0.15,
    "leg_left_4_joint": 0.3,
    "leg_right_4_joint": 0.3,
    "leg_left_5_joint": -0.15,
    "leg_right_5_joint": -0.15,
    "arm_left_4_joint": -0.3,
    "arm_right_4_joint": -0.3,
}
#: Swinging joints and their amplitude [rad] (1 Hz), turning joints (0.7 Hz).
SWING = {"left_shoulder_pitch_joint": 0.15, "right_shoulder_pitch_joint": 0.15}
TURN = {"waist_yaw_joint": 0.2, "torso_1_joint": 0.2}


def sway(
    name: str = "g1", duration: float = 1.0
) -> tuple[wb.Robot, list[SurfaceContact], wb.Trajectory]:
    """The robot (MuJoCo's repaired inertias), its soles and the log with torques."""
    pytest.importorskip("mujoco")
    sys.path.insert(0, str(ROOT / "examples"))
    import mujoco
    import mujoco_any_humanoid as mah
    import pinocchio as pin

    from wholebody.sim.mujoco import MujocoStateMap, mujoco_spec_for_robot
    from wholebody.sim.mujoco_recorder import MujocoRecorder

    try:
        robot, contacts, setup = mah.load_standing_robot(name)
    except wb.errors.MissingDependencyError:
        pytest.skip("example-robot-data not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        build = mujoco_spec_for_robot(
            robot, contacts, other_collisions=False, inertia="repair", timestep=mah.DT
        )
    build.spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    m = build.compile()
    d = mujoco.MjData(m)
    robot = build.robot
    q0 = robot.neutral()
    q0[3:7] = pin.Quaternion(setup.base_rotation).coeffs()
    names = robot.joint_names
    for i, joint in enumerate(names):
        q0[7 + i] = BENT.get(joint, 0.0)
    q0[2] = 5e-4 - min(robot.frame_position(q0, c.frame)[2] for c in contacts)
    rec = MujocoRecorder.from_build(build, m)
    smap = MujocoStateMap(robot, m)
    jq, jv = smap.joint_qpos_indices, smap.joint_dof_indices
    d.qpos[:] = 0.0
    smap.qpos(q0, out=d.qpos)
    hold = d.qpos[jq].copy()
    kp = mah.STIFFNESS_PER_KG * robot.mass
    m.dof_damping[jv] = kp * mah.DAMPING_TIME
    swing = np.array([SWING.get(j, 0.0) for j in names])
    turn = np.array([TURN.get(j, 0.0) for j in names])
    for _ in range(int(round(duration / mah.DT))):
        t = d.time
        target = hold + swing * np.sin(2 * np.pi * t) + turn * np.sin(2 * np.pi * 0.7 * t)
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[jv] = kp * (target - d.qpos[jq])
        rec.record(d)
        mujoco.mj_step(m, d)
    return robot, contacts, rec.trajectory(metadata={"robot": name})
