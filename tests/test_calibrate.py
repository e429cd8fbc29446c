"""Calibration files, their application to logs, and the fit CLI's Python path end to end."""

from __future__ import annotations

import numpy as np
import pytest

import wholebody as wb
from wholebody.check.analysis import check_trajectory
from wholebody.cli.fit import run_fit
from wholebody.errors import InvalidArgumentError, ProfileError
from wholebody.identify import SensorModel, fit_inertial_parameters
from wholebody.io.calibration import Calibration, ContactCalibration
from wholebody.io.profile import load_profile
from wholebody.models import models_dir

from ._identify_logs import (
    FEET,
    add_contact_bias,
    humanoid_text,
    inverse_dynamics_log,
    perturbed_urdf,
)


@pytest.fixture(scope="module")
def nominal():
    return wb.load("humanoid")


def test_toml_round_trip(tmp_path):
    cal = Calibration(
        {
            "left_sole": ContactCalibration([5.0, 0, 0], [0, 0.5, 0], 0.01, [0, 0, 0.002]),
            "plate": ContactCalibration([1.0, 2.0, 3.0], axes="world"),
        },
        {"left_knee": 0.25},
        {"plate": "right_sole"},
    )
    cal.save(tmp_path / "c.toml")
    back = Calibration.load(tmp_path / "c.toml")
    assert back.torque_offsets == {"left_knee": 0.25} and back.frames["plate"] == "right_sole"
    for name, c in cal.contacts.items():
        np.testing.assert_array_equal(back.contacts[name].offset, c.offset)
        np.testing.assert_array_equal(back.contacts[name].rotation, c.rotation)
        assert back.contacts[name].gain == c.gain and back.contacts[name].axes == c.axes


def test_bad_calibration_files(tmp_path):
    with pytest.raises(ProfileError, match="unknown key 'offset'"):
        Calibration.from_toml("[contacts.left_sole]\noffset = [1, 2, 3]\n")
    with pytest.raises(ProfileError, match="'force_offset' must be an array of 3 numbers"):
        Calibration.from_toml("[contacts.left_sole]\nforce_offset = [1, 2]\n")
    with pytest.raises(ProfileError, match="'axes' must be 'contact' or 'world'"):
        Calibration.from_toml('[contacts.left_sole]\naxes = "sensor"\n')
    with pytest.raises(ProfileError, match="cannot read the calibration"):
        Calibration.load(tmp_path / "missing.toml")


def test_apply_removes_an_injected_bias(nominal):
    """A bias injected in the contact frame's axes (rotation per sample from Pinocchio) is
    removed exactly; world-axes calibrations need no robot."""
    log = inverse_dynamics_log(nominal, n=20, seed=0)
    bias = np.array([5.0, -1.0, 2.0, 0.5, 0.1, -0.2])
    cal = Calibration({"left_sole": ContactCalibration(bias[:3], bias[3:])})
    fixed = cal.apply(add_contact_bias(log, nominal, "left_sole", bias), nominal)
    np.testing.assert_allclose(fixed.contact_wrenches, log.contact_wrenches, rtol=0, atol=1e-12)
    with pytest.raises(InvalidArgumentError, match="pass robot="):
        cal.apply(log)
    plate = Calibration(
        {"right_sole": ContactCalibration([1.0, 0, 0], axes="world")}, {"left_knee": 0.3}
    )
    out = plate.apply(log)
    np.testing.assert_allclose(
        out.contact_wrench("right_sole")[:, 0], log.contact_wrench("right_sole")[:, 0] - 1
    )
    k = log.joint_names.index("left_knee")
    np.testing.assert_allclose(out.tau[:, k], log.tau[:, k] - 0.3)
    with pytest.raises(
        InvalidArgumentError, match="calibrated contacts \\['plate'\\] are not in the log"
    ):
        Calibration({"plate": ContactCalibration()}).apply(log)


def test_gain_rotation_and_torque_offsets_fitted(nominal):
    """Readings made by the documented model (gain, small rotation, offsets) and torque
    offsets: recovered exactly with the torque rows."""
    log = inverse_dynamics_log(nominal, n=80, seed=7)
    W = log.contact_wrenches.copy()
    k = log.contact_names.index("right_sole")
    gain, delta = 0.02, np.array([0.01, -0.005, 0.003])  # world axes (a force plate)
    # The reading w_log solves w_true = (1 + gain) w_log + delta x w_log: invert per sample.
    M = (1 + gain) * np.eye(3) + np.array(
        [[0, -delta[2], delta[1]], [delta[2], 0, -delta[0]], [-delta[1], delta[0], 0]]
    )
    W[:, k, :3] = np.linalg.solve(M, W[:, k, :3].T).T
    W[:, k, 3:] = np.linalg.solve(M, W[:, k, 3:].T).T
    tau = log.tau.copy()
    tau[:, log.joint_names.index("left_knee")] += 0.4
    import dataclasses

    biased = dataclasses.replace(log, contact_wrenches=W, tau=tau)
    fit = fit_inertial_parameters(
        nominal,
        biased,
        FEET,
        parameters=None,
        sensors=SensorModel(
            offsets=False,
            gains=["right_sole"],
            rotations=["right_sole"],
            axes="world",
            torque_offsets=["left_knee"],
        ),
    )
    cal = fit.calibration
    assert abs(cal.contacts["right_sole"].gain - gain) < 1e-9
    np.testing.assert_allclose(cal.contacts["right_sole"].rotation, delta, rtol=0, atol=1e-9)
    assert abs(cal.torque_offsets["left_knee"] - 0.4) < 1e-9
    np.testing.assert_allclose(
        cal.apply(biased).contact_wrenches, log.contact_wrenches, rtol=0, atol=1e-9
    )


def test_fit_cli_end_to_end(nominal, tmp_path):
    """``wholebody fit`` through its Python function: heavier torso and a biased sensor; the
    written URDF, calibration and profile make the log's residual vanish in ``check``."""
    truth = wb.Robot.from_urdf_string(perturbed_urdf(humanoid_text(), "torso", 1.05))
    log = add_contact_bias(
        inverse_dynamics_log(truth, n=60, seed=8),
        nominal,
        "left_sole",
        np.array([5.0, 0, 0, 0, 0.5, 0]),
    )
    log.save(tmp_path / "log.npz")
    outputs = run_fit(
        [tmp_path / "log.npz"],
        models_dir() / "humanoid.toml",
        tmp_path / "out",
        mass=True,
        links=["torso", "pelvis"],
        offsets=True,
        use_torques=True,
    )
    assert outputs.urdf is not None and outputs.profile is not None
    assert "torso: mass 18.00 -> 18.90 kg (+5.0 %)" in outputs.report_text.read_text()
    profile = load_profile(outputs.profile)
    calibration = Calibration.load(outputs.calibration)
    before = check_trajectory(nominal, log, FEET)
    after = check_trajectory(profile.robot, calibration.apply(log, profile.robot), profile.contacts)
    assert before.over_tolerance.mean() > 0.8
    assert np.nanmax(after.force_norm) < 1e-8 and np.nanmax(after.moment_norm) < 1e-8
    np.testing.assert_allclose(
        calibration.contacts["left_sole"].offset, [5, 0, 0, 0, 0.5, 0], rtol=0, atol=1e-8
    )


def test_fit_subcommand_parser(nominal, tmp_path, capsys):
    """``add_fit_command`` wires ``fit`` into a parser; its handler writes the outputs."""
    import argparse

    from wholebody.cli.fit import add_fit_command

    truth = wb.Robot.from_urdf_string(perturbed_urdf(humanoid_text(), "torso", 1.05))
    inverse_dynamics_log(truth, n=30, seed=9).save(tmp_path / "log.npz")
    parser = argparse.ArgumentParser(prog="wholebody")
    add_fit_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        [
            "fit",
            str(tmp_path / "log.npz"),
            "--config",
            str(models_dir() / "humanoid.toml"),
            "--link",
            "torso",
            "-o",
            str(tmp_path / "out"),
        ]
    )
    assert args.func(args) == 0
    assert "torso: mass 18.00 -> 18.90 kg (+5.0 %)" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "calibration.toml",
        "fit.json",
        "fit.txt",
        "humanoid.corrected.urdf",
        "profile.toml",
    ]
