"""The command line as a user runs it: output and exit codes (0 consistent, 1 not, 2 bad input,
3 nothing checked; the bad inputs themselves are in test_bad_inputs_cli.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from wholebody.cli import main
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "data" / "humanoid_squat.npz"
PROFILE = ROOT / "models" / "humanoid.toml"


def run(*args: str, cwd: Path | None = None, process: bool = False) -> subprocess.CompletedProcess:
    """``wholebody ARGS``: in this process through ``cli.main`` (fast), or as a subprocess
    (``process=True``, as a user runs it: the tests of the installed command use that)."""
    if process or cwd is not None:
        return subprocess.run(
            [sys.executable, "-m", "wholebody.cli", *args],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=cwd,
        )
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(["wholebody", *args], code, out.getvalue(), err.getvalue())


def test_info_prints_the_summary():
    result = run("info", "humanoid")
    assert result.returncode == 0, result.stderr
    assert "nq, nv     26, 25" in result.stdout and "mass       65.700 kg" in result.stdout


def test_unknown_robot_is_bad_input():
    result = run("info", "talo")
    assert result.returncode == 2
    assert "robot 'talo' not found; did you mean 'talos'" in result.stderr


def test_help_everywhere(capsys):
    # In process (each subprocess costs a second of imports); the top-level help once as a
    # subprocess, as a user sees it.
    from wholebody.cli import main

    for sub in (["check"], ["estimate"], ["info"], ["demo"], ["contacts"], ["fit"]):
        assert main([*sub, "--help"]) == 0
        assert "usage: wholebody" in capsys.readouterr().out
    top = " ".join(run("--help", process=True).stdout.split())
    assert "Exit codes: 0 every log consistent" in top and "3 nothing could be checked" in top
    assert "130 interrupted" in top and "--traceback" in top


def test_check_consistent_log_exits_0_and_writes_reports(tmp_path):
    result = run(
        "check", str(LOG), "--config", str(PROFILE), "--out", str(tmp_path), "--plot", process=True
    )
    assert result.returncode == 0, result.stderr
    assert "verdict   consistent" in result.stdout
    for suffix in ("report.json", "report.csv", "report.png"):
        assert (tmp_path / f"humanoid_squat.{suffix}").is_file()


def test_check_inconsistent_log_exits_1_with_diagnosis(tmp_path):
    traj = Trajectory.load(LOG)
    bad = dataclasses.replace(traj, contact_wrenches=-traj.contact_wrenches)
    bad.save(tmp_path / "flipped.npz")
    result = run(
        "check",
        str(tmp_path / "flipped.npz"),
        str(LOG),
        "--robot",
        "humanoid",
        "--contact",
        "left_sole:surface:0.12:0.05:1.0",
        "--contact",
        "right_sole:surface:0.12:0.05:1.0",
    )
    assert result.returncode == 1, result.stderr
    assert "diagnosis contact wrenches have the wrong sign" in result.stdout
    table = result.stdout.splitlines()
    assert "flipped.npz" in table[-3] and "INCONSISTENT" in table[-3]
    assert table[-1] == "2 logs: 1 consistent, 1 inconsistent, 0 unreadable"
    js = run("check", str(LOG), "--config", str(PROFILE), "--json")
    row = json.loads(js.stdout)[0]
    assert row["consistent"] is True and row["verdict"] == "consistent" and row["error"] is None
    assert row["checked"] == 1000 and row["diagnosis"] is None


def test_mixed_outcomes_exit_with_the_worst(tmp_path):
    """2 if any log is unreadable, else 1 if any inconsistent, else 3 if any unchecked."""
    traj = Trajectory.load(LOG)
    dataclasses.replace(traj, contact_wrenches=-traj.contact_wrenches).save(tmp_path / "flip.npz")
    dataclasses.replace(traj, q=np.full_like(traj.q, np.nan)).save(tmp_path / "nan.npz")
    flip, nan, missing = (str(tmp_path / n) for n in ("flip.npz", "nan.npz", "missing.npz"))
    config = ("--config", str(PROFILE), "--json")
    assert run("check", str(LOG), nan, *config).returncode == 3
    assert run("check", str(LOG), nan, flip, *config).returncode == 1
    result = run("check", str(LOG), nan, flip, missing, *config)
    assert result.returncode == 2
    assert [r["verdict"] for r in json.loads(result.stdout)] == [
        "consistent",
        "unchecked",
        "inconsistent",
        "error",
    ]
    assert result.stderr.count("\n") == 1 and "missing.npz" in result.stderr


def test_check_bad_input_exits_2(tmp_path):
    (tmp_path / "empty.npz").write_bytes(b"not a zip")
    result = run("check", str(tmp_path / "empty.npz"), "--config", str(PROFILE))
    assert result.returncode == 2 and "cannot read as .npz" in result.stderr
    result = run("check", str(LOG), "--robot", "humanoid", "--contact", "left_sole:box:1")
    assert result.stderr.startswith("wholebody: error: ") and result.stdout == ""
    assert result.returncode == 2 and "expected FRAME:surface" in result.stderr
    (tmp_path / "p.toml").write_text(
        'robot = "humanoid"\n[[contacts]]\nframe = "left_sol"\n'
        "mu = 1\nhalf_length = 0.1\nhalf_width = 0.05\n"
    )
    result = run("check", str(LOG), "--config", str(tmp_path / "p.toml"))
    assert result.returncode == 2
    assert "frame 'left_sol' not found; did you mean 'left_sole'" in result.stderr


def test_estimate_writes_estimates_beside_the_log(tmp_path):
    short = Trajectory.load(LOG)
    short = Trajectory(
        short.time[:50],
        short.q[:50],
        short.v[:50],
        short.a[:50],
        short.tau[:50],
        short.joint_names,
        short.contact_names,
        short.contact_wrenches[:50],
    )
    short.save(tmp_path / "short.npz")
    result = run(
        "estimate",
        str(tmp_path / "short.npz"),
        "--config",
        str(PROFILE),
        "-o",
        str(tmp_path / "est.npz"),
    )
    assert result.returncode == 0, result.stderr
    est = Trajectory.load(tmp_path / "est.npz")
    assert est.contact_names[-1] == "right_sole:estimated"
    np.testing.assert_allclose(
        est.contact_wrench("right_sole:estimated"), est.contact_wrench("right_sole"), atol=1e-5
    )


def test_demo_runs(tmp_path):
    result = run("demo", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "verdict   consistent" in result.stdout and "has the wrong sign" in result.stdout
    assert (tmp_path / "report.json").is_file()
