"""PyBullet recorder: a standing humanoid's log balances to PyBullet's floor, against
PyBullet's own momentum change, and readout mistakes are caught (runs when pybullet is
installed)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import wholebody as wb
from wholebody.check.analysis import check_trajectory
from wholebody.errors import ModelError, ModelWarning, StateError, WholebodyWarning

from ._engine_robots import feet_contacts, sphere_feet_urdf

p = pytest.importorskip("pybullet")
from wholebody.sim._common import base_to_pinocchio  # noqa: E402
from wholebody.sim.pybullet import PybulletRecorder  # noqa: E402

DT = 1e-3
#: PyBullet's floor with its link damping off (the recorder's default) and the masses
#: matched: round-off (measured median 1e-12 N). With its default damping kept: ~3e-5 N
#: standing, ~0.1 N swaying.
FLOOR = 1e-9


def _world(path, robot, contacts, flags):
    client = p.connect(p.DIRECT)
    p.setGravity(0, 0, -9.81, physicsClientId=client)
    p.setTimeStep(DT, physicsClientId=client)
    p.createMultiBody(
        0, p.createCollisionShape(p.GEOM_PLANE, physicsClientId=client), physicsClientId=client
    )
    q0 = robot.neutral()
    q0[2] = 1e-4 - min(robot.frame_position(q0, c.frame)[2] for c in contacts)
    body = p.loadURDF(str(path), q0[:3], q0[3:7], flags=flags, physicsClientId=client)
    return client, body


def _momentum(client, body):
    P = np.zeros(3)
    for j in range(-1, p.getNumJoints(body, physicsClientId=client)):
        m = p.getDynamicsInfo(body, j, physicsClientId=client)[0]
        if j < 0:
            v = p.getBaseVelocity(body, physicsClientId=client)[0]
        else:
            v = p.getLinkState(body, j, computeLinkVelocity=1, physicsClientId=client)[6]
        P += m * np.asarray(v)
    return P


@pytest.fixture(scope="module")
def standing(tmp_path_factory):
    path = sphere_feet_urdf(tmp_path_factory.mktemp("pb"))
    robot, contacts = wb.Robot.from_urdf(path), feet_contacts()
    client, body = _world(path, robot, contacts, p.URDF_USE_INERTIA_FROM_FILE)
    with pytest.warns(ModelWarning, match="left_hand"):
        rec = PybulletRecorder(robot, body, contacts, client=client, masses="repair")
    idx = [
        p.getJointInfo(body, j, physicsClientId=client)[0]
        for j in range(p.getNumJoints(body, physicsClientId=client))
        if p.getJointInfo(body, j, physicsClientId=client)[2] == p.JOINT_REVOLUTE
    ]
    p.setJointMotorControlArray(
        body, idx, p.VELOCITY_CONTROL, forces=[0.0] * len(idx), physicsClientId=client
    )
    mass = sum(
        p.getDynamicsInfo(body, j, physicsClientId=client)[0]
        for j in range(-1, p.getNumJoints(body, physicsClientId=client))
    )
    momentum_rate = []
    for _ in range(400):
        st = p.getJointStates(body, idx, physicsClientId=client)
        tau = [-400.0 * s[0] - 20.0 * s[1] for s in st]  # joint PD: internal forces
        p.setJointMotorControlArray(body, idx, p.TORQUE_CONTROL, forces=tau, physicsClientId=client)
        P0 = _momentum(client, body)
        p.stepSimulation(physicsClientId=client)
        momentum_rate.append((_momentum(client, body) - P0) / DT)
        rec.record()
    traj = rec.trajectory()
    p.disconnect(client)
    return rec, traj, contacts, np.array(momentum_rate), mass, path


def test_contact_forces_equal_pybullets_momentum_change(standing):
    rec, traj, _, rate, mass, _ = standing
    total = traj.contact_wrenches[:, :, :3].sum(axis=1)
    expected = rate - mass * np.array([0.0, 0.0, -9.81])
    assert np.median(np.abs(total - expected)) < FLOOR
    assert total[-1, 2] == pytest.approx(mass * 9.81, rel=1e-3)


def test_log_balances_to_pybullets_floor(standing):
    rec, traj, contacts, _, _, _ = standing
    report = check_trajectory(rec.robot, traj, contacts)
    assert report.verdict == "consistent"
    assert np.median(report.force_norm) < FLOOR
    assert np.median(report.moment_norm) < FLOOR
    assert traj.metadata["dtype"] == "float64"
    assert traj.metadata["simulator"].startswith("PyBullet")


def test_force_on_the_other_body_is_caught(standing):
    rec, traj, contacts, _, _, _ = standing
    from dataclasses import replace

    flipped = replace(traj, contact_wrenches=-traj.contact_wrenches)
    report = check_trajectory(rec.robot, flipped, contacts)
    assert report.verdict == "inconsistent"
    assert np.median(report.force_norm) > 100.0


def test_masses_checked_at_attach(tmp_path):
    path = sphere_feet_urdf(tmp_path)
    robot, contacts = wb.Robot.from_urdf(path), feet_contacts()
    for flags in (p.URDF_USE_INERTIA_FROM_FILE, 0):
        client, body = _world(path, robot, contacts, flags)
        with pytest.raises(ModelError, match="left_hand.*URDF_USE_INERTIA_FROM_FILE") as e:
            PybulletRecorder(robot, body, contacts, client=client)
        # masses='repair' changes the robot, not PyBullet: the message says so (issue 36)
        assert "masses='repair' to give recorder.robot (and the log" in str(e.value)
        assert "PyBullet's values" in str(e.value)
        p.disconnect(client)
    # With an explicit (zero) <inertial> everywhere and the inertia flag, nothing differs.
    path = sphere_feet_urdf(tmp_path, inertial_everywhere=True)
    client, body = _world(path, robot, contacts, p.URDF_USE_INERTIA_FROM_FILE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rec = PybulletRecorder(robot, body, contacts, client=client)
    assert rec.repairs == () and rec.robot is robot
    with pytest.raises(StateError, match="once after each stepSimulation"):
        rec.record()  # no step taken since attaching
    p.disconnect(client)


@pytest.mark.parametrize("damping", ["zero", "keep"])
def test_spinning_base_with_offset_centre_of_mass(tmp_path, damping):
    # PyBullet's base pose and velocity are its inertial frame's: the log must hold the URDF
    # link frame's. A spinning, flying robot (no contact) balances only if both are right,
    # and only without PyBullet's default link damping (a force the log cannot hold).
    path = sphere_feet_urdf(tmp_path, base_com_offset=True, inertial_everywhere=True)
    robot, contacts = wb.Robot.from_urdf(path), feet_contacts()
    client, body = _world(path, robot, contacts, p.URDF_USE_INERTIA_FROM_FILE)
    p.resetBasePositionAndOrientation(body, [0, 0, 3.0], [0.1, 0.2, 0.3, 0.927], client)
    p.resetBaseVelocity(body, [0.1, -0.2, 0.3], [2.5, 1.2, -2.4], physicsClientId=client)
    if damping == "keep":
        with pytest.warns(WholebodyWarning, match="damping"):
            rec = PybulletRecorder(robot, body, contacts, client=client, link_damping="keep")
    else:
        rec = PybulletRecorder(robot, body, contacts, client=client)
    for _ in range(50):
        p.stepSimulation(physicsClientId=client)
        rec.record()
    traj = rec.trajectory()
    report = check_trajectory(robot, traj, contacts)
    if damping == "zero":
        assert np.max(report.force_norm) < FLOOR and np.max(report.moment_norm) < FLOOR
    else:
        assert np.median(report.force_norm) > 1e-3
    # The state kept for the next sample (read after the last step) is the link frame.
    s = rec._prev
    qb, _ = base_to_pinocchio(s["p"], s["R"], s["v"], s["w"])
    foot = p.getLinkState(body, 15, computeForwardKinematics=1, physicsClientId=client)
    assert p.getJointInfo(body, 15, physicsClientId=client)[12] == b"left_foot"
    # getLinkState's link frame is single precision.
    np.testing.assert_allclose(
        robot.frame_position(np.r_[qb, s["qj"]], "left_foot"), foot[4], atol=1e-6
    )
    p.disconnect(client)


def test_a_repaired_log_checks_consistent_from_the_command_line(standing, tmp_path, capsys):
    """Issue 36: a log recorded with masses='repair' records PyBullet's inertias of the bodies
    it repaired, and `wholebody check` with the URDF checks it with them (the plain URDF's
    hands weigh 1 kg less than PyBullet's: that log did not balance from the command line)."""
    from wholebody.cli import main
    from wholebody.sim import robot_for_log

    rec, traj, contacts, _, _, path = standing
    assert set(traj.metadata["robot_inertias"]) == {
        "left_elbow",
        "right_elbow",
        "left_ankle_roll",
        "right_ankle_roll",
    }
    restored = robot_for_log(wb.Robot.from_urdf(path), traj.metadata)
    np.testing.assert_allclose(
        [restored.model.inertias[j].matrix() for j in range(1, restored.model.njoints)],
        [rec.robot.model.inertias[j].matrix() for j in range(1, rec.robot.model.njoints)],
        rtol=0,
        atol=1e-12,
    )
    traj.save(tmp_path / "repaired.npz")
    spec = [f"{c.frame}:surface:0.12:0.05:1.0" for c in contacts]
    argv = ["check", str(tmp_path / "repaired.npz"), "--robot", str(path)]
    assert main([*argv, "--contact", spec[0], "--contact", spec[1], "--json"]) == 0
    captured = capsys.readouterr()
    assert '"verdict": "consistent"' in captured.out
    assert "checked with them, not the robot file's" in captured.err
