"""Every example runs and asserts its own cross-check (see each script's last section)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


# The controller example has its own short-horizon test (tests/test_control_example.py).
@pytest.mark.parametrize(
    "script", sorted(p.name for p in EXAMPLES.glob("*.py") if p.name != "whole_body_qp_control.py")
)
def test_example_runs(script, tmp_path, monkeypatch):
    if "mujoco" in script:
        pytest.importorskip("mujoco")
    monkeypatch.chdir(tmp_path)
    env = dict(os.environ, MPLBACKEND="Agg", WHOLEBODY_EXAMPLE_OUT=str(tmp_path))
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
