"""examples/whole_body_qp_control.py runs and asserts its own checks: balance held, the
MuJoCo log consistent, the QP's wrenches inside their cones (verified at every tick)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "whole_body_qp_control.py"


def run_example(tmp_path: Path, *args: str) -> str:
    env = dict(os.environ, MPLBACKEND="Agg", WHOLEBODY_EXAMPLE_OUT=str(tmp_path))
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_short_squat_and_push(tmp_path):
    """1.6 s: squat (0.2-1.0 s), push (1.12-1.22 s), recovery; about 10 s of wall time."""
    pytest.importorskip("mujoco")
    out = run_example(tmp_path, "--duration", "1.6")
    assert "verdict   consistent" in out
    assert "control tick" in out and "worst margin" in out
    if "no plot" not in out:
        assert (tmp_path / "whole_body_qp_control.png").stat().st_size > 10_000


@pytest.mark.slow
def test_full_scenario(tmp_path):
    pytest.importorskip("mujoco")
    out = run_example(tmp_path)
    assert "verdict   consistent" in out
