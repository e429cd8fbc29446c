"""CheckOptions: one options object for check_trajectory, check_log, check_many and the CLI,
checked when made."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from wholebody.check import TOLERANCE_PRESETS, CheckOptions, check_log, check_trajectory
from wholebody.check.many import check_many
from wholebody.errors import InvalidArgumentError
from wholebody.io.profile import load_profile
from wholebody.models import models_dir
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def squat():
    profile = load_profile(models_dir() / "humanoid.toml")
    traj = Trajectory.load(ROOT / "data" / "humanoid_squat.npz")
    # 10 % more force than the motion needs: inconsistent, so the diagnosis runs too
    bad = Trajectory(
        time=traj.time,
        q=traj.q,
        v=traj.v,
        a=traj.a,
        tau=traj.tau,
        joint_names=traj.joint_names,
        contact_names=traj.contact_names,
        contact_wrenches=traj.contact_wrenches * 1.1,
    )
    return profile.robot, profile.contacts, traj, bad


def _same_report(a, b):
    assert a.verdict == b.verdict
    assert a.n_checked == b.n_checked
    np.testing.assert_array_equal(a.residual_force, b.residual_force)
    np.testing.assert_array_equal(a.residual_moment, b.residual_moment)
    assert [d.message for d in a.diagnosis] == [d.message for d in b.diagnosis]


def test_the_options_choose_the_samples_and_the_tolerances(squat):
    robot, contacts, _, bad = squat
    report = check_trajectory(
        robot,
        bad,
        contacts,
        CheckOptions(preset="measured", force_tolerance=0.002, t_start=0.2, t_stop=1.5),
    )
    assert report.verdict == "inconsistent" and report.diagnosis
    assert report.n_checked == int(np.sum((bad.time >= 0.2) & (bad.time <= 1.5)))
    # The given force tolerance; the moment's from the noise measured in the log's residual
    # (its logged accelerations: the 10 % force error is smooth, no noise), at least the
    # float64 engine floor (1e-7 m g).
    assert report.force_tolerance == 0.002
    assert 1e-7 <= report.moment_tolerance < 1e-5
    assert report.preset == "measured"
    assert report.tolerance_basis.startswith("measured: ")
    assert report.tolerance_basis.endswith("; given: force_tolerance = 0.002")


def test_check_log_takes_the_options(squat, tmp_path):
    robot, contacts, _, bad = squat
    path = tmp_path / "bad.npz"
    bad.save(path)
    options = CheckOptions(t_stop=1.0, chunk_size=200)
    _same_report(
        check_log(robot, path, contacts, options),
        check_trajectory(robot, bad, contacts, CheckOptions(t_stop=1.0)),
    )


def test_check_many_takes_the_options(squat, tmp_path):
    robot, contacts, traj, bad = squat
    paths = [tmp_path / "good.npz", tmp_path / "bad.npz"]
    traj.save(paths[0])
    bad.save(paths[1])
    rows = check_many(paths, robot, contacts, options=CheckOptions(t_stop=1.0))
    assert [r["verdict"] for r in rows] == ["consistent", "inconsistent"]
    assert [r["samples_in"] for r in rows] == [int(np.sum(traj.time <= 1.0))] * 2


def test_tolerances_follow_the_preset_unless_given():
    """No preset: a log whose metadata names its simulator is checked at the engine's floor
    for its number type (its accelerations logged), any other with the physical tolerances;
    given values win; the basis says which and why."""
    sim = {"simulator": "MuJoCo 3.3"}
    floor = CheckOptions().for_log(sim, estimated=False, float32=False)
    assert floor.preset == "simulation"
    assert floor.values == {
        **TOLERANCE_PRESETS["simulation"],
        "force_tolerance": 1e-7,
        "moment_tolerance": 1e-7,
    }
    assert (
        floor.basis
        == "the engine's floor: a log of MuJoCo 3.3 in float64, its accelerations logged"
    )
    single = CheckOptions().for_log(sim, estimated=False, float32=True)
    assert single.values["force_tolerance"] == 2e-5 and "in float32" in single.basis
    differentiated = CheckOptions().for_log(sim, estimated=True, float32=False)
    assert differentiated.values["force_tolerance"] == 0.01
    assert "differentiated accelerations" in differentiated.basis
    sensor = CheckOptions().for_log({}, estimated=False, float32=False)
    assert sensor.preset == "physical" and sensor.values == TOLERANCE_PRESETS["physical"]
    assert "no simulator named" in sensor.basis
    measured = CheckOptions(preset="measured", moment_tolerance=0.03).for_log(
        sim, estimated=False, float32=False
    )
    assert measured.values["moment_tolerance"] == 0.03 and measured.from_noise
    assert measured.basis.endswith("given: moment_tolerance = 0.03")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"preset": "lab"},
            "preset must be one of ['measured', 'physical', 'simulation'], got 'lab'",
        ),
        ({"force_tolerance": -1.0}, "force_tolerance must be a finite number >= 0, got -1.0"),
        ({"cone_tolerance": float("nan")}, "cone_tolerance must be a finite number >= 0"),
        ({"workers": 0}, "workers must be an integer >= 1, got 0"),
        ({"chunk_size": 2.5}, "chunk_size must be an integer >= 1, got 2.5"),
    ],
)
def test_bad_options_are_refused_when_made(changes, message):
    with pytest.raises(InvalidArgumentError, match=message.replace("[", r"\[").replace("]", r"\]")):
        CheckOptions(**changes)
    with pytest.raises(InvalidArgumentError):
        CheckOptions().replace(**changes)


def test_unknown_options_and_a_wrong_options_type_are_named(squat, tmp_path):
    robot, contacts, traj, _ = squat
    with pytest.raises(InvalidArgumentError, match=r"unknown check options \['force_tol'\]"):
        CheckOptions().replace(force_tol=0.1)
    with pytest.raises(InvalidArgumentError, match="options must be a CheckOptions, got dict"):
        check_trajectory(robot, traj, contacts, {"t_stop": 1.0})
    with pytest.raises(InvalidArgumentError, match="options must be a CheckOptions, got dict"):
        check_many([tmp_path / "any.npz"], robot, contacts, options={"t_stop": 1.0})
