"""MuJoCo Warp recorder: a standing humanoid's log balances to float32 precision, its forces
equal MuJoCo Warp's own constraint force on the free joint, and the host copy's contact
geoms are completed (runs when mujoco-warp is installed; Warp compiles its CPU kernels
once, minutes, then caches them)."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

import wholebody as wb
from wholebody.check.analysis import check_trajectory

from ._engine_robots import feet_contacts, sphere_feet_urdf

mjw = pytest.importorskip("mujoco_warp")
wp = pytest.importorskip("warp")
import mujoco  # noqa: E402

from wholebody.sim.mjx import MujocoWarpRecorder  # noqa: E402
from wholebody.sim.mujoco import MujocoStateMap, mujoco_spec_for_robot  # noqa: E402

#: float32: a ~650 N weight resolves to ~4e-5 N.
FLOOR = 5e-4


@pytest.fixture(scope="module")
def standing(tmp_path_factory):
    path = sphere_feet_urdf(
        tmp_path_factory.mktemp("mjw"), inertial_everywhere=True, base_com_offset=True
    )
    robot, contacts = wb.Robot.from_urdf(path), feet_contacts()
    build = mujoco_spec_for_robot(
        robot,
        contacts,
        contact_geoms=False,
        timestep=1e-3,
        solver_tolerance=1e-6,
        solver_iterations=100,
    )
    m = build.compile()
    d = mujoco.MjData(m)
    smap = MujocoStateMap(robot, m)
    q0 = robot.neutral()
    q0[2] = 1e-4 - min(robot.frame_position(q0, c.frame)[2] for c in contacts)
    smap.qpos(q0, out=d.qpos)
    jq, jv = smap.joint_qpos_indices, smap.joint_dof_indices
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wm, wd = mjw.put_model(m), mjw.put_data(m, d)
    rec = MujocoWarpRecorder.from_build(build, m)
    constraint, pairs = [], []
    for _ in range(100):
        qp, qv = wd.qpos.numpy()[0], wd.qvel.numpy()[0]
        f = np.zeros((1, m.nv), dtype=np.float32)
        f[0, jv] = -300 * qp[jq] - 3 * qv[jv]
        wd.qfrc_applied.assign(f)
        rec.record(wm, wd)
        host = rec._host
        constraint.append(np.array(host.qfrc_constraint[:3]))
        n = host.ncon
        pairs.append(
            np.array_equal(
                host.contact.geom[:n], np.c_[host.contact.geom1[:n], host.contact.geom2[:n]]
            )
        )
        mjw.step(wm, wd)
    return build.robot, contacts, rec.trajectory(), np.array(constraint), pairs


def test_host_contact_geoms_are_completed(standing):
    *_, pairs = standing
    assert all(pairs)


def test_forces_equal_the_constraint_force_on_the_free_joint(standing):
    _, _, traj, constraint, _ = standing
    total = traj.contact_wrenches[:, :, :3].sum(axis=1)
    assert (
        np.abs(total - constraint).max() < 100 * np.finfo(np.float32).eps * np.abs(constraint).max()
    )
    assert traj.metadata["dtype"] == "float32"


def test_log_balances_to_float32_precision(standing):
    robot, contacts, traj, _, _ = standing
    report = check_trajectory(robot, traj, contacts)
    assert report.verdict == "consistent"
    assert np.median(report.force_norm) < FLOOR


def test_force_on_the_other_body_is_caught(standing):
    robot, contacts, traj, _, _ = standing
    flipped = replace(traj, contact_wrenches=-traj.contact_wrenches)
    assert check_trajectory(robot, flipped, contacts).verdict == "inconsistent"
