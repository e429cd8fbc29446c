"""Genesis recorder: a standing humanoid's log balances to Genesis' floor (float64), against
Genesis' own momentum change; a spinning flight checks the base conventions; readout mistakes
are caught (runs when genesis-world is installed; building the scene compiles Genesis' CPU
kernels: minutes on a 2-core machine, hence ``slow``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import wholebody as wb
from wholebody.check.analysis import check_trajectory
from wholebody.errors import ModelError, ModelWarning, StateError

from ._engine_robots import feet_contacts, sphere_feet_urdf

gs = pytest.importorskip("genesis")
from genesis.utils.misc import qd_to_torch  # noqa: E402

from wholebody.sim.genesis import GenesisRecorder  # noqa: E402
from wholebody.spatial import rotation_from_quat_xyzw  # noqa: E402

pytestmark = pytest.mark.slow

DT = 1e-3
#: Genesis float64's floor on the standing humanoid: round-off (DESIGN.md: 9.4e-14 N on the
#: G1; measured here, see the tests).
FLOOR = 1e-9
G = np.array([0.0, 0.0, -9.81])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    if not gs._initialized:
        gs.init(backend=gs.cpu, precision="64", logging_level="warning")
    path = sphere_feet_urdf(tmp_path_factory.mktemp("genesis"))
    robot, contacts = wb.Robot.from_urdf(path), feet_contacts()
    q0 = robot.neutral()
    q0[2] = 1e-4 - min(robot.frame_position(q0, c.frame)[2] for c in contacts)
    scene = gs.Scene(sim_options=gs.options.SimOptions(dt=DT, gravity=tuple(G)), show_viewer=False)
    plane = scene.add_entity(gs.morphs.Plane())
    entity = scene.add_entity(gs.morphs.URDF(file=str(path), pos=tuple(q0[:3]), fixed=False))
    scene.build()
    return scene, plane, entity, robot, contacts, q0


@pytest.fixture(scope="module")
def standing(world):
    scene, plane, entity, robot, contacts, q0 = world
    with pytest.warns(ModelWarning, match="left_hand"):
        rec = GenesisRecorder(robot, entity, plane, contacts)
    dofs = [entity.get_joint(n).dof_start - entity.dof_start for n in robot.joint_names]
    qs = [entity.get_joint(n).q_start - entity.q_start for n in robot.joint_names]
    base_force, frames = [], []
    for n in range(300):
        qpos, vel = entity.get_qpos().numpy(), entity.get_dofs_velocity().numpy()
        target = np.zeros(len(dofs))
        target[[i for i, j in enumerate(robot.joint_names) if j.endswith("hip_roll")]] = (
            0.05 * np.sin(2 * np.pi * 2.0 * n * DT)
        )
        entity.control_dofs_force(300.0 * (target - qpos[qs]) - 3.0 * vel[dofs], dofs)
        scene.step()
        # Genesis' own constraint force on the free joint in the step just taken (linear:
        # world axes; angular: base axes, about the base origin); no public getter.
        qf = qd_to_torch(entity.sim.rigid_solver.dyn_state.dofs.qf_constraint, transpose=True)
        base_force.append(qf.numpy().copy().reshape(-1)[entity.dof_start : entity.dof_start + 6])
        frames.append(
            (
                entity.get_quat().numpy(),
                entity.get_vel().numpy(),
                entity.get_ang().numpy(),
                entity.get_dofs_velocity().numpy()[:6],
            )
        )
        rec.record()
    mass = float(entity.get_links_mass().numpy().sum())
    return rec, rec.trajectory(), contacts, np.array(base_force), mass, frames


def test_contact_forces_equal_genesis_constraint_force(standing):
    # The log's contact wrenches, moved to the base origin, against the generalized force
    # Genesis' constraint solver put on the free joint in the same step.
    rec, traj, contacts, base_force, mass, _ = standing
    robot = rec.robot
    W = traj.contact_wrenches
    got = np.zeros((len(traj.time), 6))
    for n, q in enumerate(traj.q):
        R, p = rotation_from_quat_xyzw(q[3:7]), q[:3]
        f = W[n, :, :3].sum(axis=0)
        m = sum(
            W[n, k, 3:] + np.cross(robot.frame_position(q, c.frame) - p, W[n, k, :3])
            for k, c in enumerate(contacts)
        )
        got[n] = np.r_[f, R.T @ m]
    err = np.abs(got - base_force)
    print(
        "constraint-force residual median / max [N]:",
        np.median(err[:, :3].max(axis=1)),
        err[:, :3].max(),
        "[N m]:",
        np.median(err[:, 3:].max(axis=1)),
        err[:, 3:].max(),
    )
    assert np.median(err[:, :3].max(axis=1)) < FLOOR
    assert np.median(err[:, 3:].max(axis=1)) < FLOOR
    assert np.median(got[:, 2]) == pytest.approx(mass * 9.81, rel=2e-2)  # on the robot: up


def test_log_balances_to_genesis_floor(standing):
    rec, traj, contacts, _, _, _ = standing
    report = check_trajectory(rec.robot, traj, contacts)
    print(
        "check residual median / max [N]:",
        np.median(report.force_norm),
        np.max(report.force_norm),
        "moment",
        np.median(report.moment_norm),
    )
    assert report.verdict == "consistent"
    assert np.median(report.force_norm) < FLOOR
    assert np.median(report.moment_norm) < FLOOR
    assert traj.metadata["dtype"] == "float64"
    assert traj.metadata["simulator"].startswith("Genesis")


def test_force_on_the_other_body_is_caught(standing):
    rec, traj, contacts, _, _, _ = standing
    flipped = replace(traj, contact_wrenches=-traj.contact_wrenches)
    report = check_trajectory(rec.robot, flipped, contacts)
    assert report.verdict == "inconsistent"
    assert np.median(report.force_norm) > 100.0


def test_free_joint_velocity_axes(standing):
    # The free joint's velocity coordinates: linear in world axes, angular in base axes;
    # the quaternion is w-x-y-z.
    *_, frames = standing
    for quat, v, w, dof in frames[::50]:
        wq, x, y, z = quat
        R = rotation_from_quat_xyzw([x, y, z, wq])
        np.testing.assert_allclose(dof[:3], v, atol=1e-12)
        np.testing.assert_allclose(dof[3:], R.T @ w, atol=1e-12)


def test_spinning_flight_balances(world):
    # No contact, a spinning and translating base: the log balances only if the base's
    # position, orientation, velocities and accelerations are all converted right.
    scene, plane, entity, robot, contacts, q0 = world
    qpos = entity.get_qpos().numpy().copy()
    qpos[:7] = [0.0, 0.0, 3.0, 0.927, 0.1, 0.2, 0.3]
    qpos[:7][3:] /= np.linalg.norm(qpos[3:7])
    entity.set_qpos(qpos)
    vel = np.zeros(entity.n_dofs)
    vel[:6] = [0.1, -0.2, 0.3, 2.5, 1.2, -2.4]
    entity.set_dofs_velocity(vel)
    entity.control_dofs_force(np.zeros(entity.n_dofs - 6), list(range(6, entity.n_dofs)))
    with pytest.warns(ModelWarning):
        rec = GenesisRecorder(robot, entity, plane, contacts)
    with pytest.raises(StateError, match="once after each scene.step"):
        rec.record()
    for _ in range(50):
        scene.step()
        rec.record()
    traj = rec.trajectory()
    report = check_trajectory(robot, traj, contacts)
    print("flight residual max [N]:", np.max(report.force_norm), np.max(report.moment_norm))
    assert np.max(report.force_norm) < FLOOR and np.max(report.moment_norm) < FLOOR
    # A logger that takes Genesis' base-axes angular velocity for world axes and rotates it
    # into base axes again: its log does not balance.
    v = traj.v.copy()
    for n, q in enumerate(traj.q):
        v[n, 3:6] = rotation_from_quat_xyzw(q[3:7]).T @ v[n, 3:6]
    twice = check_trajectory(robot, replace(traj, v=v), contacts)
    print("rotated twice: moment residual median [N m]:", np.median(twice.moment_norm))
    assert twice.verdict == "inconsistent"
    assert np.median(twice.moment_norm) > 1e-2


def test_masses_checked_at_attach(world):
    import pinocchio as pin

    scene, plane, entity, robot, contacts, q0 = world
    model = robot.model.copy()
    j = model.getJointId("left_knee")
    good = pin.Inertia(model.inertias[j])  # a copy: the model's entry is a reference
    model.inertias[j] = pin.Inertia(1.1 * good.mass, good.lever.copy(), good.inertia.copy())
    heavier = wb.Robot(model, name=robot.name, source=robot.source)
    with pytest.raises(ModelError, match="left_shank"):
        GenesisRecorder(heavier, entity, plane, contacts)
    with pytest.warns(ModelWarning, match="left_shank"):
        rec = GenesisRecorder(heavier, entity, plane, contacts, masses="repair")
    assert rec.robot.model.inertias[j].mass == pytest.approx(good.mass, rel=1e-12)
    assert rec.repairs and "left_shank" in rec.repairs[0]


FLOAT32_RUN = """
import sys, warnings
import numpy as np
import genesis as gs
import wholebody as wb
from wholebody.check.analysis import check_trajectory
from wholebody.sim.genesis import GenesisRecorder
from tests._engine_robots import feet_contacts

gs.init(backend=gs.cpu, precision="32", logging_level="warning")
robot, contacts = wb.Robot.from_urdf(sys.argv[1]), feet_contacts()
q0 = robot.neutral()
q0[2] = 1e-4 - min(robot.frame_position(q0, c.frame)[2] for c in contacts)
scene = gs.Scene(sim_options=gs.options.SimOptions(dt=1e-3), show_viewer=False)
plane = scene.add_entity(gs.morphs.Plane())
entity = scene.add_entity(gs.morphs.URDF(file=sys.argv[1], pos=tuple(q0[:3]), fixed=False))
scene.build()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    rec = GenesisRecorder(robot, entity, plane, contacts)
for _ in range(200):
    scene.step()
    rec.record()
traj = rec.trajectory()
report = check_trajectory(rec.robot, traj, contacts)
print("RESULT", traj.metadata["dtype"], report.verdict, np.median(report.force_norm))
"""


def test_float32_scene_is_recorded_as_float32(tmp_path):
    # Genesis' default precision: the log says float32 and balances to float32 precision
    # (measured 1.1e-4 N median on the swaying humanoid). gs.init runs once per process:
    # a fresh one.
    import os
    import subprocess
    import sys
    from pathlib import Path

    path = sphere_feet_urdf(tmp_path)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    out = subprocess.run(
        [sys.executable, "-c", FLOAT32_RUN, str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
        cwd=root,
    )
    line = [x for x in out.stdout.splitlines() if x.startswith("RESULT")]
    assert line, out.stdout[-2000:] + out.stderr[-2000:]
    _, dtype, verdict, median = line[0].split()
    assert (dtype, verdict) == ("float32", "consistent")
    assert 1e-7 < float(median) < 5e-4  # float32 precision, not round-off
