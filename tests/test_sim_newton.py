"""Newton recorder: a standing humanoid simulated by SolverMuJoCo balances to float32
precision, its forces equal Newton's own momentum change, and solvers without contact
forces are refused by name (runs when newton is installed; Warp compiles its CPU kernels
once, minutes, then caches them)."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

import wholebody as wb
from wholebody.check.analysis import check_trajectory
from wholebody.errors import ModelError, StateError

from ._engine_robots import feet_contacts, sphere_feet_urdf

newton = pytest.importorskip("newton")
wp = pytest.importorskip("warp")
from wholebody.sim.newton import NewtonRecorder  # noqa: E402

DT = 1e-3
#: Newton's state is float32: a ~650 N weight resolves to ~4e-5 N (measured median 3.4e-5 N).
FLOOR = 5e-4


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    path = sphere_feet_urdf(tmp_path_factory.mktemp("newton"), inertial_everywhere=True)
    robot, contacts = wb.Robot.from_urdf(path), feet_contacts()
    q0 = robot.neutral()
    q0[2] = 1e-4 - min(robot.frame_position(q0, c.frame)[2] for c in contacts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Newton's version notes
        builder = newton.ModelBuilder()
        newton.solvers.SolverMuJoCo.register_custom_attributes(builder)
        builder.add_urdf(
            str(path),
            floating=True,
            enable_self_collisions=False,
            xform=wp.transform(wp.vec3(*q0[:3]), wp.quat_identity()),
        )
        builder.add_ground_plane()
        model = builder.finalize(device="cpu")
        solver = newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=True, use_mujoco_contacts=True)
    return robot, contacts, model, solver


@pytest.fixture(scope="module")
def standing(setup):
    robot, contacts, model, solver = setup
    s0, s1, control = model.state(), model.state(), model.control()
    newton.eval_fk(model, model.joint_q, model.joint_qd, s0)
    pipe = newton.CollisionPipeline(
        model, rigid_contact_max=solver.get_max_contact_count(), soft_contact_max=0
    )
    nc = pipe.contacts()
    rec = NewtonRecorder(robot, model, solver, nc, contacts, s0, timestep=DT)
    mass = model.body_mass.numpy()
    rate = []
    for _ in range(150):
        P0 = (mass[:, None] * s0.body_qd.numpy()[:, :3]).sum(axis=0)
        solver.step(s0, s1, control, nc, DT, observables=rec.observables)
        rec.record(s1)
        P1 = (mass[:, None] * s1.body_qd.numpy()[:, :3]).sum(axis=0)
        rate.append((P1 - P0) / DT - mass.sum() * np.array([0.0, 0.0, -9.81]))
        s0, s1 = s1, s0
    return robot, contacts, rec.trajectory(), np.array(rate)


def test_forces_equal_newtons_momentum_change(standing):
    _, _, traj, rate = standing
    total = traj.contact_wrenches[:, :, :3].sum(axis=1)
    assert np.median(np.abs(total - rate)) < FLOOR
    assert traj.metadata["dtype"] == "float32"


def test_log_balances_to_float32_precision(standing):
    robot, contacts, traj, _ = standing
    report = check_trajectory(robot, traj, contacts)
    assert report.verdict == "consistent"
    assert np.median(report.force_norm) < FLOOR
    assert np.median(report.moment_norm) < FLOOR


def test_force_on_the_other_body_is_caught(standing):
    robot, contacts, traj, _ = standing
    flipped = replace(traj, contact_wrenches=-traj.contact_wrenches)
    assert check_trajectory(robot, flipped, contacts).verdict == "inconsistent"


def test_solver_without_contact_forces_is_refused_by_name(setup):
    robot, contacts, model, _ = setup
    state = model.state()
    newton.eval_fk(model, model.joint_q, model.joint_qd, state)
    solver = newton.solvers.SolverFeatherstone(model)
    nc = newton.CollisionPipeline(model).contacts()
    with pytest.raises(ModelError, match="SolverFeatherstone exposes no contact forces"):
        NewtonRecorder(robot, model, solver, nc, contacts, state, timestep=DT)


def test_a_step_without_observables_is_refused_not_logged_as_zero_forces(setup):
    """Issue 36: without ``observables=`` Newton writes no contact forces and the log held
    zeros silently; the step is refused, naming the fix. The float32 log's wrenches are
    stored at float32, so the checks' bounds follow its precision."""
    robot, contacts, model, solver = setup
    s0, s1, control = model.state(), model.state(), model.control()
    newton.eval_fk(model, model.joint_q, model.joint_qd, s0)
    pipe = newton.CollisionPipeline(
        model, rigid_contact_max=solver.get_max_contact_count(), soft_contact_max=0
    )
    nc = pipe.contacts()
    rec = NewtonRecorder(robot, model, solver, nc, contacts, s0, timestep=DT)
    for _ in range(20):  # until the feet touch
        solver.step(s0, s1, control, nc, DT, observables=rec.observables)
        rec.record(s1)
        s0, s1 = s1, s0
    solver.step(s0, s1, control, nc, DT)  # observables forgotten
    with pytest.raises(StateError, match="pass observables=recorder.observables"):
        rec.record(s1)
    traj = rec.trajectory()
    assert traj.metadata["dtype"] == "float32"
    W = traj.contact_wrenches
    np.testing.assert_array_equal(W, W.astype(np.float32).astype(float))
    report = check_trajectory(robot, traj, contacts)
    assert report.evidence.float32
