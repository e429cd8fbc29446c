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
