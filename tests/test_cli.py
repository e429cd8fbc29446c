"""The command line as a user runs it: output and exit codes (0 consistent, 1 not, 2 bad input)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "data" / "humanoid_squat.npz"
PROFILE = ROOT / "models" / "humanoid.toml"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wholebody.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_info_prints_the_summary():
    result = run("info", "humanoid")
    assert result.returncode == 0, result.stderr
    assert "nq, nv     26, 25" in result.stdout and "mass       65.700 kg" in result.stdout


def test_unknown_robot_is_bad_input():
    result = run("info", "talo")
    assert result.returncode == 2
    assert "robot 'talo' not found; did you mean 'talos'" in result.stderr


def test_help_everywhere():
    for sub in ([], ["check"], ["estimate"], ["info"], ["demo"]):
        result = run(*sub, "--help")
        assert result.returncode == 0 and "usage: wholebody" in result.stdout
    assert "Exit codes" in run("--help").stdout


def test_check_consistent_log_exits_0_and_writes_reports(tmp_path):
    result = run("check", str(LOG), "--config", str(PROFILE), "--out", str(tmp_path), "--plot")
    assert result.returncode == 0, result.stderr
    assert "verdict   consistent" in result.stdout
    for suffix in ("report.json", "report.csv", "report.png"):
        assert (tmp_path / f"humanoid_squat.{suffix}").is_file()


def test_check_inconsistent_log_exits_1_with_diagnosis(tmp_path):
    traj = Trajectory.load(LOG)
    bad = dataclasses.replace(traj, contact_wrenches=-traj.contact_wrenches)
    bad.save(tmp_path / "flipped.npz")
    result = run("check", str(tmp_path / "flipped.npz"), str(LOG), "--robot", "humanoid",
                 "--contact", "left_sole:surface:0.12:0.05:1.0", "--contact", "right_sole:surface:0.12:0.05:1.0")
    assert result.returncode == 1, result.stderr
    assert "diagnosis contact wrenches have the wrong sign" in result.stdout
    table = result.stdout.splitlines()
    assert "flipped.npz" in table[-3] and "INCONSISTENT" in table[-3]
    assert table[-1] == "2 logs: 1 consistent, 1 inconsistent, 0 unreadable"
    js = run("check", str(LOG), "--config", str(PROFILE), "--json")
    assert json.loads(js.stdout)[0]["consistent"] is True


def test_check_bad_input_exits_2(tmp_path):
    (tmp_path / "empty.npz").write_bytes(b"not a zip")
    result = run("check", str(tmp_path / "empty.npz"), "--config", str(PROFILE))
    assert result.returncode == 2 and "cannot read as .npz" in result.stderr
    result = run("check", str(LOG), "--robot", "humanoid", "--contact", "left_sole:box:1")
    assert result.returncode == 2 and "expected FRAME:surface" in result.stderr
    (tmp_path / "p.toml").write_text('robot = "humanoid"\n[[contacts]]\nframe = "left_sol"\nmu = 1\n'
                                     'half_length = 0.1\nhalf_width = 0.05\n')
    result = run("check", str(LOG), "--config", str(tmp_path / "p.toml"))
    assert result.returncode == 2 and "frame 'left_sol' not found; did you mean 'left_sole'" in result.stderr


def test_estimate_writes_estimates_beside_the_log(tmp_path):
    short = Trajectory.load(LOG)
    short = Trajectory(short.time[:50], short.q[:50], short.v[:50], short.a[:50], short.tau[:50],
                       short.joint_names, short.contact_names, short.contact_wrenches[:50])
    short.save(tmp_path / "short.npz")
    result = run("estimate", str(tmp_path / "short.npz"), "--config", str(PROFILE), "-o", str(tmp_path / "est.npz"))
    assert result.returncode == 0, result.stderr
    est = Trajectory.load(tmp_path / "est.npz")
    assert est.contact_names[-1] == "right_sole:estimated"
    np.testing.assert_allclose(est.contact_wrench("right_sole:estimated"), est.contact_wrench("right_sole"), atol=1e-5)


def test_demo_runs(tmp_path):
    result = run("demo", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "verdict   consistent" in result.stdout and "has the wrong sign" in result.stdout
    assert (tmp_path / "report.json").is_file()
