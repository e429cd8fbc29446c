"""Every example runs and asserts its own cross-check (see each script's last section)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


# The controller example has its own short-horizon test (tests/test_control_example.py). The
# longest examples run with the slow tests (make test-all); what they exercise is also covered
# in process by test_logs (the MuJoCo simulation), test_identify (the repair) and
# test_diagnosis (the lag).
SLOW = {"mujoco_humanoid_simulation.py", "identify_and_repair.py", "validate_simulation_log.py"}
# The controller examples have their own tests (test_control_example.py,
# test_control_stepping_example.py, test_control_walking.py, which also check their logs with
# `wholebody check`).
OWN_TESTS = {"whole_body_qp_control.py", "humanoid_stepping_control.py", "walking.py"}
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py") if p.name not in OWN_TESTS)


@pytest.mark.parametrize(
    "script", [pytest.param(s, marks=pytest.mark.slow) if s in SLOW else s for s in SCRIPTS]
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
