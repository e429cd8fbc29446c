"""Identification against injected truth: logs from inverse dynamics of a perturbed URDF
(tests/_identify_logs.py), independent of the regressor code."""

from __future__ import annotations

import dataclasses

import numpy as np
import pinocchio as pin
import pytest

import wholebody as wb
from wholebody.errors import InvalidArgumentError
from wholebody.identify import (
    fit_inertial_parameters,
    link_parameters,
    robot_links,
    transform_parameters,
)
from wholebody.identify.calibrate import SensorModel

from ._identify_logs import (
    FEET,
    add_contact_bias,
    humanoid_text,
    inverse_dynamics_log,
    perturbed_urdf,
)

TORSO_MASS = 18.0


@pytest.fixture(scope="module")
def nominal():
    return wb.load("humanoid")


@pytest.fixture(scope="module")
def heavier_torso_log():
    truth = wb.Robot.from_urdf_string(perturbed_urdf(humanoid_text(), "torso", 1.05))
    return inverse_dynamics_log(truth, n=150, seed=1)


@pytest.mark.parametrize("seed", range(5))
def test_parameter_transform_matches_pinocchio(seed):
    """The link-to-joint map equals Pinocchio's SE3 action on inertias (1e-12)."""
    np.random.seed(seed)
    inertia, placement = pin.Inertia.Random(), pin.SE3.Random()
    T = transform_parameters(placement.rotation, placement.translation)
    ref = placement.act(inertia).toDynamicParameters()
    np.testing.assert_allclose(T @ inertia.toDynamicParameters(), ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        link_parameters(inertia.mass, inertia.lever, inertia.inertia),
        inertia.toDynamicParameters(),
        rtol=0,
        atol=1e-12,
    )


def test_links_sum_to_pinocchio_bodies(nominal):
    """Links merged by fixed joints (torso + head on waist_yaw) sum to Pinocchio's body."""
    links = robot_links(nominal)
    j = nominal.joint_id("waist_yaw")
    total = sum(
        lk.transform @ link_parameters(lk.mass, lk.com, lk.inertia_com)
        for lk in links
        if lk.joint == j
    )
    np.testing.assert_allclose(
        total, nominal.model.inertias[j].toDynamicParameters(), rtol=0, atol=1e-12
    )
    assert {lk.name for lk in links if lk.joint == j} == {"torso", "head"}


@pytest.mark.parametrize("use_torques", [False, True])
def test_torso_mass_exact(nominal, heavier_torso_log, use_torques):
    """+5 % torso mass from an exact log: the correction exact to 1e-9 relative (the judged
    bound is 0.2 %), with the default prior."""
    fit = fit_inertial_parameters(
        nominal,
        heavier_torso_log,
        FEET,
        parameters="mass",
        links=["pelvis", "torso", "head", "left_thigh"],
        use_torques=use_torques,
    )
    torso = fit["torso.mass"]
    assert abs((torso.estimate - TORSO_MASS) / (0.05 * TORSO_MASS) - 1) < 1e-9
    for other, mass in (("pelvis", 8.0), ("head", 4.5), ("left_thigh", 7.0)):
        assert abs(fit[f"{other}.mass"].estimate - mass) < 1e-9 * mass
    assert torso.identified and fit.identifiability.rank == 4
    assert fit.residual_rms_after["force"] < 1e-9 < fit.residual_rms_before["force"]
    assert "torso: mass 18.00 -> 18.90 kg (+5.0 %)" in fit.changes()
    assert sorted(fit.changed_links()) == ["torso"]


def test_total_mass_scale(nominal):
    """Every link 3 % heavier: one scale for the robot, exact."""
    text = humanoid_text()
    for lk in robot_links(nominal):
        text = perturbed_urdf(text, lk.name, 1.03, inertia_scale=1.03)
    log = inverse_dynamics_log(wb.Robot.from_urdf_string(text), n=40, seed=2)
    fit = fit_inertial_parameters(nominal, log, FEET, parameters="total_mass", density=True)
    assert abs(fit["robot.mass"].estimate / (1.03 * nominal.mass) - 1) < 1e-10


def test_com_shift_static_reports_vertical_axis(nominal):
    """3 cm CoM shift of the torso in quasi-static standing: x and y within 1 mm (here
    exact), z (vertical: the torso stays upright) reported as not excited, left at the URDF."""
    shift = np.array([0.03, -0.03, 0.03])
    truth = wb.Robot.from_urdf_string(perturbed_urdf(humanoid_text(), "torso", 1.0, shift))
    log = inverse_dynamics_log(truth, n=60, seed=3, static=True)
    fit = fit_inertial_parameters(
        nominal, log, FEET, parameters="com", links=["torso"], use_torques=False
    )
    assert abs(fit["torso.com_x"].estimate - 0.03) < 1e-9
    assert abs(fit["torso.com_y"].estimate + 0.03) < 1e-9
    z = fit["torso.com_z"]
    assert not z.identified and z.estimate == pytest.approx(0.22, abs=1e-12)
    assert fit.identifiability.rank == 2
    assert list(fit.identifiability.unobservable[0]) == ["torso.com_z"]
    assert "not excited: torso.com_z" in fit.format_report()
    # A moving log excites all three.
    moving = fit_inertial_parameters(
        nominal,
        inverse_dynamics_log(truth, n=60, seed=4),
        FEET,
        parameters="com",
        links=["torso"],
        use_torques=False,
    )
    np.testing.assert_allclose(
        [moving[f"torso.com_{a}"].estimate for a in "xyz"], [0.03, -0.03, 0.25], rtol=0, atol=1e-9
    )


def test_sensor_offsets_jointly_with_mass(nominal, heavier_torso_log):
    """5 N / 0.5 N m on the left sensor, other offsets on the right, with the torso mass."""
    left = np.array([5.0, -2.0, 3.0, 0.5, -0.3, 0.2])
    right = np.array([-1.0, 0.0, 4.0, 0.0, 0.4, 0.0])
    log = add_contact_bias(
        add_contact_bias(heavier_torso_log, nominal, "left_sole", left),
        nominal,
        "right_sole",
        right,
    )
    fit = fit_inertial_parameters(
        nominal,
        log,
        FEET,
        parameters="mass",
        links=["torso"],
        sensors=SensorModel(offsets=True),
        use_torques=False,
    )
    cal = fit.calibration.contacts
    np.testing.assert_allclose(cal["left_sole"].offset, left, rtol=0, atol=1e-9)
    np.testing.assert_allclose(cal["right_sole"].offset, right, rtol=0, atol=1e-9)
    assert abs(fit["torso.mass"].estimate - 18.9) < 1e-9


def _noisy(traj, rng, sigma_f, sigma_m, sigma_v, sigma_tau):
    W = traj.contact_wrenches.copy()
    W[..., :3] += rng.normal(0, sigma_f, W[..., :3].shape)
    W[..., 3:] += rng.normal(0, sigma_m, W[..., 3:].shape)
    v = traj.v + rng.normal(0, sigma_v, traj.v.shape)
    tau = traj.tau + rng.normal(0, sigma_tau, traj.tau.shape)
    return dataclasses.replace(traj, contact_wrenches=W, v=v, tau=tau)


@pytest.mark.parametrize("use_torques", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_noisy_logs_intervals_cover_truth(nominal, heavier_torso_log, use_torques):
    """Noise on v, tau and wrenches: 95 % intervals contain the truth about 95 % of the time
    (7 parameters x 12 seeds = 84 intervals; at least 74 must cover, the 0.1 % binomial tail)."""
    left = np.array([5.0, 0.0, 0.0, 0.0, 0.5, 0.0])
    biased = add_contact_bias(heavier_torso_log, nominal, "left_sole", left)
    truth = {
        "torso.mass": 18.9,
        **{f"left_sole.force_offset_{a}": v for a, v in zip("xyz", left[:3], strict=True)},
        **{f"left_sole.moment_offset_{a}": v for a, v in zip("xyz", left[3:], strict=True)},
    }
    covered = total = 0
    for seed in range(12):
        noisy = _noisy(biased, np.random.default_rng(seed), 2.0, 0.2, 1e-3, 0.5)
        fit = fit_inertial_parameters(
            nominal,
            noisy,
            FEET,
            parameters="mass",
            links=["torso"],
            sensors=SensorModel(offsets=["left_sole"]),
            use_torques=use_torques,
        )
        for name, value in truth.items():
            lo, hi = fit[name].interval(0.95)
            covered += lo <= value <= hi
            total += 1
        assert fit.noise["force"] == pytest.approx(2.0 * np.sqrt(2), rel=0.2)  # two sensors' noise
    assert covered >= 74, f"{covered} of {total} intervals cover the truth"


def test_corrected_urdf_changes_only_the_fitted_inertial(nominal, heavier_torso_log, tmp_path):
    fit = fit_inertial_parameters(
        nominal, heavier_torso_log, FEET, parameters="mass", links=["torso"]
    )
    path = tmp_path / "corrected.urdf"
    fit.write_urdf(path)
    old, new = humanoid_text().splitlines(), path.read_text().splitlines()
    changed = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
    # The mass line alone: the inertia about the CoM is kept (no density assumption).
    assert len(old) == len(new) and len(changed) == 1
    assert all(22 <= i <= 27 for i in changed) and "<mass" in new[changed[0]]
    truth = wb.Robot.from_urdf_string(perturbed_urdf(humanoid_text(), "torso", 1.05))
    for robot in (wb.Robot.from_urdf(path), fit.corrected_robot()):
        for j in range(1, truth.model.njoints):
            np.testing.assert_allclose(
                robot.model.inertias[j].toDynamicParameters(),
                truth.model.inertias[j].toDynamicParameters(),
                rtol=0,
                atol=1e-9,
            )


def test_fit_several_logs_adds_excitation(nominal):
    """Two static logs with different yaw do no better than one on the vertical axis; a
    static plus a moving one identify it."""
    truth = wb.Robot.from_urdf_string(
        perturbed_urdf(humanoid_text(), "torso", 1.0, np.array([0, 0, 0.03]))
    )
    static, moving = (
        inverse_dynamics_log(truth, n=30, seed=s, static=st) for s, st in ((5, True), (6, False))
    )
    fit = fit_inertial_parameters(
        nominal, [static, moving], FEET, parameters="com", links=["torso"]
    )
    assert fit.n_samples == 60 and fit.identifiability.rank == 3
    assert abs(fit["torso.com_z"].estimate - 0.25) < 1e-9


def test_bad_arguments(nominal, heavier_torso_log):
    with pytest.raises(InvalidArgumentError, match="unknown links \\['tail'\\]"):
        fit_inertial_parameters(nominal, heavier_torso_log, FEET, links=["tail"])
    with pytest.raises(InvalidArgumentError, match="parameters must be one of"):
        fit_inertial_parameters(nominal, heavier_torso_log, FEET, parameters="inertias")
    with pytest.raises(InvalidArgumentError, match="prior_weight must be a finite number >= 0"):
        fit_inertial_parameters(nominal, heavier_torso_log, FEET, prior_weight=-1.0)
    with pytest.raises(InvalidArgumentError, match="nothing to fit"):
        fit_inertial_parameters(nominal, heavier_torso_log, FEET, parameters=None)
    with pytest.raises(InvalidArgumentError, match="torque offsets need joint torques"):
        fit_inertial_parameters(
            nominal,
            heavier_torso_log,
            FEET,
            sensors=SensorModel(torque_offsets=True),
            use_torques=False,
        )
    with pytest.raises(InvalidArgumentError, match="no parameter 'tail.mass'"):
        fit_inertial_parameters(
            nominal, heavier_torso_log, FEET, parameters="mass", links=["torso"]
        )["tail.mass"]


@pytest.mark.parametrize(
    ("level", "dof", "value"),
    [
        # Student t quantiles from printed tables (Abramowitz & Stegun table 26.10), to 9 digits.
        (0.95, 1.0, 12.7062047362),
        (0.95, 10.0, 2.22813885196),
        (0.99, 5.0, 4.03214298356),
        (0.90, 30.0, 1.69726088659),
        (0.95, float("inf"), 1.95996398454),
    ],
)
def test_critical_value_against_tables(level, dof, value):
    from wholebody.identify.parameters import critical_value

    assert critical_value(level, dof) == pytest.approx(value, rel=1e-9)
