"""The command line as a user runs it: output and exit codes."""

from __future__ import annotations

import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wholebody.cli", *args], capture_output=True, text=True, timeout=120)


def test_info_prints_the_summary():
    result = run("info", "humanoid")
    assert result.returncode == 0, result.stderr
    assert "nq, nv     26, 25" in result.stdout and "mass       65.700 kg" in result.stdout


def test_unknown_robot_is_bad_input():
    result = run("info", "talo")
    assert result.returncode == 2
    assert "robot 'talo' not found; did you mean 'talos'" in result.stderr


def test_help():
    result = run("--help")
    assert result.returncode == 0 and "info" in result.stdout and "demo" in result.stdout


def test_demo_runs(tmp_path):
    result = run("demo", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "standing at base height 0.94 m" in result.stdout
