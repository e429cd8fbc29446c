"""Drake recorder: a standing humanoid's log balances to Drake's floor (SAP and TAMSI),
against Drake's own momentum change, and reading the ports before the step is refused
(runs when drake is installed)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import wholebody as wb
from wholebody.check.analysis import check_trajectory
from wholebody.errors import ModelError, StateError

from ._engine_robots import feet_contacts, sphere_feet_urdf

pytest.importorskip("pydrake.multibody.plant")
from pydrake.geometry import HalfSpace  # noqa: E402
from pydrake.math import RigidTransform  # noqa: E402
from pydrake.multibody.parsing import Parser  # noqa: E402
from pydrake.multibody.plant import (  # noqa: E402
    AddMultibodyPlant,
    CoulombFriction,
    MultibodyPlantConfig,
)
from pydrake.multibody.tree import JacobianWrtVariable  # noqa: E402
from pydrake.systems.analysis import Simulator  # noqa: E402
from pydrake.systems.framework import DiagramBuilder  # noqa: E402

from wholebody.sim.drake import DrakeRecorder  # noqa: E402

DT = 1e-3
#: Drake's floors on this robot standing (median Newton-Euler residual): SAP converges to
#: round-off (measured ~1e-11 N), TAMSI to its own solver tolerance (measured ~1e-6 N).
FLOOR = {"sap": 1e-9, "tamsi": 1e-4}


def _plant(path, approximation):
    builder = DiagramBuilder()
    config = MultibodyPlantConfig(
        time_step=DT, discrete_contact_approximation=approximation, contact_model="point"
    )
    try:
        plant, _ = AddMultibodyPlant(config, builder)
    except (RuntimeError, ValueError) as exc:  # TAMSI is deprecated, gone from newer Drakes
        pytest.skip(f"this Drake has no {approximation!r}: {exc}")
    Parser(plant).AddModels(str(path))
    plant.RegisterCollisionGeometry(
        plant.world_body(), RigidTransform(), HalfSpace(), "ground", CoulombFriction(1.0, 1.0)
    )
    plant.Finalize()
    sim = Simulator(builder.Build())
    ctx = plant.GetMyMutableContextFromRoot(sim.get_mutable_context())
    return plant, sim, ctx


def _stand(robot, contacts, plant, ctx):
    q0 = robot.neutral()
    q0[2] = 1e-4 - min(robot.frame_position(q0, c.frame)[2] for c in contacts)
    plant.SetFreeBodyPose(ctx, plant.GetBodyByName("pelvis"), RigidTransform(q0[:3]))


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return sphere_feet_urdf(tmp_path_factory.mktemp("drake"), inertial_everywhere=True)


@pytest.fixture(scope="module", params=["sap", "tamsi"])
def standing(request, path):
    robot, contacts = wb.Robot.from_urdf(path), feet_contacts()
    plant, sim, ctx = _plant(path, request.param)
    _stand(robot, contacts, plant, ctx)
    rec = DrakeRecorder(robot, plant, contacts, ctx)
    joints = [plant.GetJointByName(j) for j in robot.joint_names]
    instance = plant.GetModelInstanceByName(robot.name)
    mass = plant.CalcTotalMass(ctx)
    rate = []
    for n in range(1, 301):
        q, v = plant.GetPositions(ctx), plant.GetVelocities(ctx)
        tau = np.zeros(plant.num_velocities())
        for j in joints:  # joint PD: internal forces
            tau[j.velocity_start()] = -300 * q[j.position_start()] - 3 * v[j.velocity_start()]
        plant.get_applied_generalized_force_input_port().FixValue(ctx, tau)
        # Drake's own centre-of-mass acceleration of the step: J_com(x_n) a + bias(x_n).
        world = plant.world_frame()
        J = plant.CalcJacobianCenterOfMassTranslationalVelocity(
            ctx, [instance], JacobianWrtVariable.kV, world, world
        )
        bias = plant.CalcBiasCenterOfMassTranslationalAcceleration(
            ctx, [instance], JacobianWrtVariable.kV, world, world
        )
        sim.AdvanceTo(n * DT)
        a = plant.get_generalized_acceleration_output_port().Eval(ctx)
        rate.append(mass * (J @ a + bias))
        rec.record(ctx)
    return request.param, robot, contacts, rec.trajectory(), np.array(rate), mass


def test_contact_forces_equal_drakes_momentum_change(standing):
    approx, _, _, traj, rate, mass = standing
    total = traj.contact_wrenches[:, :, :3].sum(axis=1)
    expected = rate - mass * np.array([0.0, 0.0, -9.81])
    # Measured: SAP 2e-12 N at most, TAMSI 5e-8 N (its iterative solver's tolerance).
    assert np.abs(total - expected).max() < {"sap": 1e-10, "tamsi": 1e-6}[approx]
    assert total[-1, 2] == pytest.approx(mass * 9.81, rel=1e-3)


def test_log_balances_to_drakes_floor(standing):
    approx, robot, contacts, traj, _, _ = standing
    report = check_trajectory(robot, traj, contacts)
    assert report.verdict == "consistent"
    assert np.median(report.force_norm) < FLOOR[approx]
    assert np.median(report.moment_norm) < FLOOR[approx]
    assert traj.metadata["dtype"] == "float64"
    assert traj.metadata["discrete_contact_approximation"] == f"k{approx.capitalize()}"


def test_forces_read_before_the_step_lag_and_are_refused(standing, path):
    approx, robot, contacts, traj, _, _ = standing
    # The mistake, made by hand: each sample's forces are those of the previous step.
    lagged = replace(
        traj, contact_wrenches=np.r_[traj.contact_wrenches[:1], traj.contact_wrenches[:-1]]
    )
    good = check_trajectory(robot, traj, contacts)
    bad = check_trajectory(robot, lagged, contacts)
    assert np.median(bad.force_norm[1:]) > 1e3 * max(np.median(good.force_norm), 1e-12)
    # The recorder refuses it: reading before the first step, or after two steps.
    plant, sim, ctx = _plant(path, approx)
    _stand(robot, contacts, plant, ctx)
    rec = DrakeRecorder(robot, plant, contacts, ctx)
    with pytest.raises(StateError, match="after each step"):
        rec.record(ctx)
    sim.AdvanceTo(2 * DT)
    with pytest.raises(StateError, match="after each step"):
        rec.record(ctx)


def test_force_on_the_other_body_is_caught(standing):
    _, robot, contacts, traj, _, _ = standing
    flipped = replace(traj, contact_wrenches=-traj.contact_wrenches)
    assert check_trajectory(robot, flipped, contacts).verdict == "inconsistent"


def test_masses_differing_from_the_robot_are_refused(path):
    robot, contacts = wb.Robot.from_urdf(path), feet_contacts()
    model = robot.model.copy()
    model.inertias[1].mass = model.inertias[1].mass + 1.0
    heavier = wb.Robot(model, name=robot.name, source=robot.source)
    plant, sim, ctx = _plant(path, "sap")
    with pytest.raises(ModelError, match="pelvis"):
        DrakeRecorder(heavier, plant, contacts, ctx)


def test_another_robots_plant_or_no_context_is_refused(path):
    """Issue 37: another robot's plant (Drake's base is no frame of the robot) and a context
    that is not the plant's get typed errors naming them, not IndexError or TypeError."""
    from wholebody.errors import InvalidArgumentError

    robot, contacts = wb.Robot.from_urdf(path), feet_contacts()
    other = wb.load("two_link_arm")  # a fixed-base arm: refused for its base first
    plant, sim, ctx = _plant(path, "sap")
    with pytest.raises(ModelError, match="floating-base"):
        DrakeRecorder(other, plant, contacts, ctx)
    arm = wb.Robot.from_urdf(wb.load("two_link_arm").source)  # floating base, no 'pelvis'
    with pytest.raises(ModelError, match="floating base body 'pelvis' is not the root link"):
        DrakeRecorder(arm, plant, contacts, ctx)
    with pytest.raises(InvalidArgumentError, match="context must be the plant's Context"):
        DrakeRecorder(robot, plant, contacts, None)
    with pytest.raises(InvalidArgumentError, match="the context is not the plant's"):
        DrakeRecorder(robot, plant, contacts, sim.get_mutable_context())  # the diagram's
    rec = DrakeRecorder(robot, plant, contacts, ctx)
    with pytest.raises(InvalidArgumentError, match="context must be the plant's Context"):
        rec.record(None)
