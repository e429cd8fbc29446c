"""`wholebody fit` end to end through the command line: a biased foot sensor is found, the
calibration file is written, and `wholebody check` with the written profile passes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from wholebody.cli import main
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "models" / "humanoid.toml"
OFFSET = np.array([5.0, -3.0, 8.0, 0.5, -0.3, 0.2])  # [N, N m], world axes at the left sole


def test_fit_then_check_with_the_written_profile(tmp_path, capsys):
    log = Trajectory.load(ROOT / "data" / "humanoid_squat.npz")
    W = log.contact_wrenches.copy()
    W[:, 0] += OFFSET
    biased = tmp_path / "biased.npz"
    dataclasses.replace(log, contact_wrenches=W).save(biased)
    assert main(["check", str(biased), "--config", str(PROFILE)]) == 1
    out = tmp_path / "fit"
    assert main(["fit", str(biased), "--config", str(PROFILE), "--offsets", "-o", str(out)]) == 0
    assert {p.name for p in out.iterdir()} >= {"calibration.toml", "profile.toml", "fit.json"}
    capsys.readouterr()
    assert main(["check", str(biased), "--config", str(out / "profile.toml")]) == 0
    assert "verdict   consistent" in capsys.readouterr().out


def test_fit_profile_paths_relative_to_itself(tmp_path, capsys):
    """The written profile names the corrected URDF and the calibration relative to itself:
    the output folder can be moved and the profile still loads."""
    import shutil

    from wholebody.io.profile import load_profile

    log = Trajectory.load(ROOT / "data" / "humanoid_squat.npz")
    out = tmp_path / "fit"
    path = tmp_path / "log.npz"
    log.save(path)
    code = main(
        ["fit", str(path), "--config", str(PROFILE), "--mass", "--link", "torso", "-o", str(out)]
    )
    assert code == 0
    text = (out / "profile.toml").read_text()
    assert 'urdf = "humanoid.corrected.urdf"' in text
    assert 'calibration = "calibration.toml"' in text
    assert str(tmp_path) not in text
    moved = tmp_path / "elsewhere" / "fit"
    shutil.move(str(out), str(moved))
    profile = load_profile(moved / "profile.toml")
    assert profile.robot.nv == 25
    assert "physically consistent" in capsys.readouterr().out


def test_fit_log_without_excitation_names_it(tmp_path, capsys):
    """200 copies of one standing sample: a clear report of what is not excited, exit 0
    (was "internal error: math domain error", exit 4)."""
    log = Trajectory.load(ROOT / "data" / "humanoid_squat.npz")
    idx = np.zeros(200, dtype=int)
    same = Trajectory.from_arrays(
        np.arange(200) * 0.01,
        log.q[idx],
        0 * log.v[idx],
        joint_names=log.joint_names,
        contact_wrenches={c: log.contact_wrenches[idx, k] for k, c in enumerate(log.contact_names)},
        tau=None if log.tau is None else log.tau[idx],
    )
    path = tmp_path / "static.npz"
    same.save(path)
    for extra in ([], ["--com"], ["--mass", "--com", "--offsets"]):
        code = main(["fit", str(path), "--config", str(PROFILE), "-o", str(tmp_path / "o"), *extra])
        out = capsys.readouterr().out
        assert code == 0
        assert "excitation the logs excite" in out and "not excited" in out


def test_a_fit_of_an_exact_urdf_is_not_called_worse(tmp_path, capsys):
    # The passing direction of the held-out comparison (its failing direction is
    # tests/test_identify_trust.py): on the shipped log, which the URDF balances to round-off,
    # the fit changes nothing that the held-out windows can tell, and the result is the
    # recommended profile (it was "WORSE than the URDF" on a 2.5e-6 relative difference).
    out = tmp_path / "fit"
    log = str(ROOT / "data" / "humanoid_squat.npz")
    assert main(["fit", log, "--config", str(PROFILE), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "WORSE" not in text and (out / "profile.toml").exists(), text
    assert not (out / "profile.not-recommended.toml").exists()


def test_fit_com_on_one_held_posture(tmp_path, capsys):
    """200 copies of one standing sample (the log of issue 23 that ended in "math domain
    error", exit 4): exit 0 or 2, the report names the parameters the log does not excite, and
    no lag is read from wrenches that never change."""
    import wholebody as wb

    from ._identify_logs import inverse_dynamics_log

    robot = wb.load("humanoid")
    one = inverse_dynamics_log(robot, 1, static=True)
    n = 200
    log = Trajectory.from_arrays(
        np.arange(n) * 0.01,
        np.repeat(one.q, n, axis=0),
        np.zeros((n, robot.nv)),
        joint_names=robot.joint_names,
        contact_wrenches={
            c: np.repeat(one.contact_wrenches[:, k], n, axis=0)
            for k, c in enumerate(one.contact_names)
        },
        a=np.zeros((n, robot.nv)),
        tau=np.repeat(one.tau, n, axis=0),
    )
    path = tmp_path / "static.npz"
    log.save(path)
    capsys.readouterr()
    code = main(["fit", str(path), "--config", str(PROFILE), "--com", "-o", str(tmp_path / "o")])
    out = capsys.readouterr()
    assert code in (0, 2), out.err
    assert "internal error" not in out.err + out.out
    assert "not excited" in out.out
    assert "static: none read: its contact wrenches never change" in out.out


def test_fit_of_a_measured_log_says_which_low_pass_ran(tmp_path, capsys):
    """A log as a robot's logging pipeline gives it (noisy encoders, base pose, velocities,
    force and torque sensors; no accelerations) through `wholebody fit`: the report (printed,
    fit.txt) names the low-pass its equations were read through and its bandwidth, fit.json has
    the numbers, and the torso's mass (5 % heavier than the URDF's) is found within 0.5 %."""
    import json

    import wholebody as wb

    from ._identify_logs import humanoid_text, measured, perturbed_urdf, smooth_log

    truth = wb.Robot.from_urdf_string(perturbed_urdf(humanoid_text(), "torso", 1.05))
    path = tmp_path / "robot.npz"
    measured(smooth_log(truth, ["left_sole", "right_sole"], 2000, dt=2e-3), seed=1).save(path)
    out = tmp_path / "fit"
    args = ["fit", str(path), "--config", str(PROFILE), "--mass", "--link", "torso", "-o"]
    assert main([*args, str(out)]) == 0
    printed = capsys.readouterr().out
    line = next(x for x in printed.splitlines() if x.startswith("smoothed  robot: "))
    assert "zero-phase Gaussian low-pass" in line and "-3 dB at" in line
    assert "motion bandwidth" in line and line in (out / "fit.txt").read_text()
    report = json.loads((out / "fit.json").read_text())
    smoothing = report["smoothing"]["robot"]
    assert 0 < smoothing["motion_bandwidth_hz"] < smoothing["cutoff_hz"] < 10
    torso = next(p for p in report["parameters"] if p["name"] == "torso.mass")
    assert abs(torso["estimate"] / 18.9 - 1) < 5e-3
