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


def test_recorder_base_counts_samples_and_names_the_undeclared_contact(humanoid):
    """The shared part of every recorder (``sim.Recorder``), through MuJoCo's: a humanoid
    dropped on both feet with only the left sole declared. ``len`` counts the samples; the
    force met on the right foot's body is the largest norm of one of its contacts' forces
    (``mj_contactForce`` in the contact frame, whose norm needs no rotation); the log's
    metadata holds it and the warning names the body; an empty recorder names itself."""
    from wholebody.contacts import SurfaceContact
    from wholebody.errors import LogFormatError, WholebodyWarning
    from wholebody.sim import Recorder
    from wholebody.sim.mujoco import mujoco_spec_for_robot
    from wholebody.sim.mujoco_recorder import MujocoRecorder

    soles = [
        SurfaceContact(f, half_length=0.1, half_width=0.05, mu=1.0)
        for f in ("left_sole", "right_sole")
    ]
    build = mujoco_spec_for_robot(humanoid, soles)
    m = build.compile()
    rec = MujocoRecorder(build.robot, m, soles[:1], contact_sites=build.contact_sites)
    assert isinstance(rec, Recorder) and len(rec) == 0
    with pytest.raises(LogFormatError, match="MujocoRecorder: no sample recorded"):
        rec.trajectory()
    site = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, build.contact_sites["right_sole"])
    body = int(m.site_bodyid[site])
    right = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, body)
    d = mujoco.MjData(m)
    d.qpos[2] = 0.95
    largest, local = 0.0, np.zeros(6)
    for _ in range(150):
        rec.record(d)  # runs mj_forward: the contacts below are the same state's
        for i in range(d.ncon):
            if body in m.geom_bodyid[[d.contact[i].geom1, d.contact[i].geom2]]:
                mujoco.mj_contactForce(m, d, i, local)
                largest = max(largest, float(np.linalg.norm(local[:3])))
        mujoco.mj_step(m, d)
    assert len(rec) == 150 and largest > 0.1 * humanoid.weight
    assert set(rec.undeclared_contact_force) == {right}
    assert rec.undeclared_contact_force[right] == pytest.approx(largest, rel=1e-12)
    with pytest.warns(WholebodyWarning, match=rf"MuJoCo: contacts on robot bodies .*{right}"):
        traj = rec.trajectory({"run": 7})
    assert traj.metadata["undeclared_contact_force_N"] == rec.undeclared_contact_force
    assert traj.metadata["run"] == 7 and traj.metadata["simulator"].startswith("MuJoCo")
    assert len(traj) == 150 and traj.contact_names == ("left_sole",)


def test_state_map_refuses_a_nan_before_writing_it(humanoid):
    """Issue 37: ``MujocoStateMap.qpos`` with a NaN (or a wrong length) raises StateError
    naming the index, and MuJoCo's state is left as it was."""
    from wholebody.errors import StateError
    from wholebody.sim.mujoco import mujoco_spec_for_robot

    m = mujoco_spec_for_robot(humanoid, []).compile()
    d = mujoco.MjData(m)
    smap = MujocoStateMap(humanoid, m)
    q = humanoid.neutral()
    q[2], q[9] = 0.9, np.nan
    before = d.qpos.copy()
    with pytest.raises(StateError, match=r"non-finite values at indices \[9\]"):
        smap.qpos(q, out=d.qpos)
    np.testing.assert_array_equal(d.qpos, before)
    with pytest.raises(StateError, match="26"):
        smap.qpos(q[:-1])


def test_recorder_refuses_another_models_data_or_none(humanoid):
    """Issue 37: the MuJoCo recorder given another model's MjData (MuJoCo aborted with a
    FatalError) or None (TypeError) raises InvalidArgumentError saying which."""
    from wholebody.contacts import SurfaceContact
    from wholebody.errors import InvalidArgumentError
    from wholebody.sim.mujoco import mujoco_spec_for_robot
    from wholebody.sim.mujoco_recorder import MujocoRecorder

    soles = [SurfaceContact("left_sole", half_length=0.1, half_width=0.05, mu=1.0)]
    build = mujoco_spec_for_robot(humanoid, soles)
    m = build.compile()
    rec = MujocoRecorder.from_build(build, m)
    other = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><body><freejoint/><geom size='0.1'/></body></worldbody></mujoco>"
    )
    with pytest.raises(InvalidArgumentError, match=r"another model \(nq = 7, .* has 26\)"):
        rec.record(mujoco.MjData(other))
    with pytest.raises(
        InvalidArgumentError, match="expected the simulation's mujoco.MjData, got NoneType"
    ):
        rec.record(None)
    assert len(rec) == 0
    rec.record(mujoco.MjData(m))
    assert len(rec) == 1
