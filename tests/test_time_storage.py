"""A time column's storage precision: float16 cannot resolve a log's step (refused, naming the
field and the resolution); float32 can at these spans (checked as any log)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from wholebody.cli import main
from wholebody.errors import LogFormatError
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "data" / "humanoid_squat.npz"
PROFILE = str(ROOT / "models" / "humanoid.toml")


def _with_time_dtype(tmp_path, dtype) -> Path:
    fields = dict(np.load(LOG))
    fields["time"] = fields["time"].astype(dtype)
    out = tmp_path / f"time_{np.dtype(dtype).name}.npz"
    np.savez(out, **fields)
    return out


def test_a_float16_time_column_is_refused(tmp_path):
    path = _with_time_dtype(tmp_path, np.float16)
    with pytest.raises(LogFormatError, match=r"'time' is stored as float16.*resolution"):
        Trajectory.load(path)
    # The command line says so in one line (exit 2) instead of blaming v (it did).
    assert main(["check", str(path), "--config", PROFILE]) == 2


def test_a_float32_time_column_is_checked_and_consistent(tmp_path, capsys):
    path = _with_time_dtype(tmp_path, np.float32)
    assert main(["check", str(path), "--config", PROFILE]) == 0, capsys.readouterr().out
