"""Cross-engine: MuJoCo on the same URDF gives the same mass matrix and bias forces.

After converting conventions (quaternion order, base linear velocity in world vs base axes,
the ``omega x v`` term): ``M = T^T M_mj T`` and ``nle = T^T (bias_mj + M_mj Tdot v)``
with ``qvel = T v``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose

import wholebody as wb

mujoco = pytest.importorskip("mujoco")
from wholebody.sim.mujoco import MujocoStateMap, mujoco_mass_matrix, mujoco_model_from_urdf  # noqa: E402

RTOL = 1e-9


def _qpos_from_q(robot, smap, mj_model, q):
    # Built here by hand (not by the bridge) so that the bridge's q() is tested against it.
    qpos = np.zeros(mj_model.nq)
    qpos[:3] = q[:3]
    qpos[3:7] = q[6], q[3], q[4], q[5]
    for name in robot.joint_names:
        jid = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_JOINT, name)
        qpos[mj_model.jnt_qposadr[jid]] = q[robot.model.joints[robot.joint_id(name)].idx_q]
    return qpos


@pytest.mark.parametrize("name", ["humanoid", "g1", "talos"])
def test_mass_matrix_and_bias_agree_with_mujoco(name):
    if name != "humanoid":
        pytest.importorskip("cmeel")  # example-robot-data ships through cmeel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = wb.load(name)
    mj_model = mujoco_model_from_urdf(robot.source)
    mj_data = mujoco.MjData(mj_model)
    smap = MujocoStateMap(robot, mj_model)
    rng = np.random.default_rng(0)
    for _ in range(10):
        q = robot.random_configuration(rng)
        v = rng.normal(size=robot.nv)
        qpos = _qpos_from_q(robot, smap, mj_model, q)
        # qvel built by hand: base linear velocity to world axes, joints by name.
        R = pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix()
        qvel = np.zeros(mj_model.nv)
        qvel[:3], qvel[3:6] = R @ v[:3], v[3:6]
        for jname in robot.joint_names:
            jid = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_JOINT, jname)
            qvel[mj_model.jnt_dofadr[jid]] = v[robot.model.joints[robot.joint_id(jname)].idx_v]
        assert_allclose(smap.q(qpos), q, rtol=0, atol=1e-15)
        assert_allclose(smap.v(qpos, qvel), v, rtol=0, atol=1e-14)
        T = smap.velocity_map(qpos)
        assert_allclose(T @ v, qvel, rtol=0, atol=1e-14)

        mj_data.qpos[:], mj_data.qvel[:] = qpos, qvel
        mujoco.mj_forward(mj_model, mj_data)
        M_mj = mujoco_mass_matrix(mj_model, mj_data)
        M = robot.mass_matrix(q)
        assert_allclose(T.T @ M_mj @ T, M, rtol=0, atol=RTOL * abs(M).max())
        Tdot_v = np.zeros(mj_model.nv)
        Tdot_v[:3] = R @ np.cross(v[3:6], v[:3])
        nle = robot.nonlinear_effects(q, v)
        assert_allclose(
            T.T @ (mj_data.qfrc_bias + M_mj @ Tdot_v), nle, rtol=0, atol=RTOL * abs(nle).max()
        )


def test_acceleration_conversion_removes_omega_cross_v(humanoid):
    # MuJoCo integrates qacc; a Pinocchio a converted from it must reproduce MuJoCo's
    # forward dynamics: a = aba(q, v, 0) when no force acts (free fall).
    mj_model = mujoco_model_from_urdf(humanoid.source)
    mj_data = mujoco.MjData(mj_model)
    smap = MujocoStateMap(humanoid, mj_model)
    rng = np.random.default_rng(5)
    for _ in range(5):
        q = humanoid.random_configuration(rng)
        v = rng.normal(size=humanoid.nv)
        qpos = _qpos_from_q(humanoid, smap, mj_model, q)
        mj_data.qpos[:], mj_data.qvel[:] = qpos, smap.velocity_map(qpos) @ v
        mujoco.mj_forward(mj_model, mj_data)
        a = smap.a(qpos, mj_data.qvel, mj_data.qacc)
        expected = humanoid.forward_dynamics(q, v, np.zeros(humanoid.nv))
        assert_allclose(a, expected, rtol=0, atol=1e-8 * max(1.0, abs(expected).max()))
