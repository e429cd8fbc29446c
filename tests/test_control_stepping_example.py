"""examples/humanoid_stepping_control.py: the humanoid balances, reaches, survives a push and
takes two steps in MuJoCo under WholeBodyController (its own assertions), and both of its logs
pass ``wholebody check``: MuJoCo's against the real soles, the controller's own forces against
the cones it planned with. A controller log with its forces scaled by 1.05 is flagged (the
check can fail)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "humanoid_stepping_control.py"
#: The shipped humanoid's soles (MuJoCo), and the smaller ones the controller plans with.
REAL = ["--contact", "{f}:surface:0.12:0.05:1.0"]
PLANNED = ["--contact", "{f}:surface:0.09:0.0375:0.7"]


def wholebody_check(log: Path, contact: list[str]) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "wholebody.cli", "check", str(log), "--robot", "humanoid"]
    for f in ("left_sole", "right_sole"):
        args += [a.format(f=f) for a in contact]
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def test_stepping_example_and_its_logs(tmp_path):
    pytest.importorskip("mujoco")
    env = dict(os.environ, MPLBACKEND="Agg")
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "feet advanced" in out and out.count("lift-off") == 2
    if "no plot" not in out:
        assert (tmp_path / "humanoid_stepping_control.png").stat().st_size > 10_000
    mj = wholebody_check(tmp_path / "stepping_mujoco.npz", REAL)
    assert mj.returncode == 0 and "verdict   consistent" in mj.stdout, mj.stdout + mj.stderr
    ctrl = wholebody_check(tmp_path / "stepping_controller.npz", PLANNED)
    assert ctrl.returncode == 0 and "verdict   consistent" in ctrl.stdout, ctrl.stdout
    # The failing direction: 5 % more force than the controller's dynamics ask for.
    with np.load(tmp_path / "stepping_controller.npz", allow_pickle=False) as z:
        arrays = dict(z)
    key = next(k for k in arrays if "wrench" in k)
    arrays[key] = arrays[key] * 1.05
    bad = tmp_path / "tampered.npz"
    np.savez(bad, **arrays)
    flagged = wholebody_check(bad, PLANNED)
    assert "INCONSISTENT" in flagged.stdout, flagged.stdout + flagged.stderr
