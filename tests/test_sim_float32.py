"""Logs of float32 engines: the convention check of v against dq/dt takes its bound from the
precision the recorder states (``metadata["float_epsilon"]``), and only from it."""

from __future__ import annotations

import numpy as np
import pytest

import wholebody as wb
from wholebody.contacts import SurfaceContact
from wholebody.conventions import check_conventions
from wholebody.sim._common import precision_metadata
from wholebody.trajectory import Trajectory


def _standing_log(metadata):
    # A base swaying by 2 um at 1 kHz, stored in float32 as MJX or Newton store it: the
    # rounding of q (~6e-8 m at 0.94 m) over dt is ~1e-4 m/s, more than the sway's velocity.
    robot = wb.load("humanoid")
    t = np.arange(1000) * 1e-3
    q = np.tile(robot.neutral(), (len(t), 1))
    q[:, 2] = 0.94 + 2e-6 * np.sin(2 * np.pi * t)
    v = np.zeros((len(t), robot.nv))
    v[:, 2] = 2e-6 * 2 * np.pi * np.cos(2 * np.pi * t)
    q32, v32 = q.astype(np.float32).astype(float), v.astype(np.float32).astype(float)
    traj = Trajectory.from_arrays(
        t,
        q32,
        v32,
        joint_names=robot.joint_names,
        contact_wrenches={"left_sole": np.zeros((len(t), 6))},
        metadata=metadata,
    )
    return robot, traj


def _velocity_check(metadata):
    robot, traj = _standing_log(metadata)
    report = check_conventions(
        robot, traj, [SurfaceContact("left_sole", half_length=0.12, half_width=0.05, mu=1.0)]
    )
    return next(c for c in report.all_checks if c.name == "velocity_matches_configuration")


def test_float32_log_passes_with_its_stated_precision():
    check = _velocity_check(precision_metadata(np.float32))
    assert check.passed, check.message
    assert check.evidence["float_epsilon"] == pytest.approx(np.finfo(np.float32).eps)


def test_a_real_convention_mistake_still_fails_in_float32():
    # The failing direction: the float32 bound (~1e-3 m/s here) does not hide a base linear
    # velocity given in world axes on a turning base.
    robot = wb.load("humanoid")
    t = np.arange(1000) * 1e-3
    yaw = 1.0 * t  # [rad]
    q = np.tile(robot.neutral(), (len(t), 1))
    q[:, 0], q[:, 2] = 0.5 * t, 0.94
    q[:, 5], q[:, 6] = np.sin(yaw / 2), np.cos(yaw / 2)
    v = np.zeros((len(t), robot.nv))
    v[:, 0], v[:, 5] = 0.5, 1.0  # world-axes velocity: the mistake (base axes expected)
    q32, v32 = q.astype(np.float32).astype(float), v.astype(np.float32).astype(float)
    traj = Trajectory.from_arrays(
        t,
        q32,
        v32,
        joint_names=robot.joint_names,
        contact_wrenches={"left_sole": np.zeros((len(t), 6))},
        metadata=precision_metadata(np.float32),
    )
    contacts = [SurfaceContact("left_sole", half_length=0.12, half_width=0.05, mu=1.0)]
    report = check_conventions(robot, traj, contacts)
    check = next(c for c in report.all_checks if c.name == "velocity_matches_configuration")
    assert not check.passed
    assert "base_linear_velocity_in_world" in check.hypotheses


def test_a_float32_recorders_log_gets_float32_bounds():
    """Issue 36: a recorder that states float32 (MJX, MuJoCo Warp, Newton, Genesis "32") gave
    logs whose values are float64 computations (sums, shifts of float32 forces), so the
    checks took a float64 storage bound (~1e-13 N) for a log that balances to ~1e-4 N. The
    wrenches are now stored at the precision stated; the check's bound follows it (its
    storage part is float32's epsilon times the weight, at least)."""
    mujoco = pytest.importorskip("mujoco")
    from wholebody.check.analysis import check_trajectory
    from wholebody.sim.mujoco import MujocoStateMap, mujoco_spec_for_robot
    from wholebody.sim.mujoco_recorder import MujocoRecorder

    class Float32Recorder(MujocoRecorder):  # MuJoCo's readout, stated as a float32 engine's
        def _metadata(self):
            return {**super()._metadata(), **precision_metadata(np.float32)}

    robot = wb.load("humanoid")
    soles = [
        SurfaceContact(f, half_length=0.12, half_width=0.05, mu=1.0)
        for f in ("left_sole", "right_sole")
    ]
    build = mujoco_spec_for_robot(robot, soles, other_collisions=False)
    m = build.compile()
    d = mujoco.MjData(m)
    q0 = robot.neutral()
    q0[2] = 5e-4 - robot.frame_position(q0, "left_sole")[2]
    MujocoStateMap(robot, m).qpos(q0, out=d.qpos)
    logs = {}
    for kind in (MujocoRecorder, Float32Recorder):
        mujoco.mj_resetData(m, d)
        MujocoStateMap(robot, m).qpos(q0, out=d.qpos)
        rec = kind.from_build(build, m)
        for _ in range(100):
            rec.record(d)
            mujoco.mj_step(m, d)
        logs[kind] = rec.trajectory()
    W32 = logs[Float32Recorder].contact_wrenches
    np.testing.assert_array_equal(W32, W32.astype(np.float32).astype(float))
    eps32 = float(np.finfo(np.float32).eps)
    for kind, single in ((MujocoRecorder, False), (Float32Recorder, True)):
        report = check_trajectory(build.robot, logs[kind], soles)
        assert report.evidence.float32 is single
        assert report.verdict == "consistent"
        if single:
            assert report.evidence.resolution_force >= eps32 * robot.weight
        else:
            assert report.evidence.resolution_force < 1e-9
