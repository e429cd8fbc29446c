"""examples/walking.py: the G1 walks in MuJoCo on a capture-point reference under
WholeBodyController (the script asserts its steps and both logs' verdicts). Here, from the
files it writes: both logs pass ``wholebody check`` with the profiles written beside them (the
controller's at a residual tolerance of 1e-9 m g), a controller log with its forces scaled by
1.05 is flagged, and on every tick of the controller's solutions the equations of motion hold
and each sole wrench is inside its contact wrench cone to 1e-9, both recomputed here with
Pinocchio's own calls and Caron et al.'s closed-form cone rows (written out here)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from wholebody.cli import main
from wholebody.errors import ModelWarning
from wholebody.io.profile import load_profile
from wholebody.trajectory import Trajectory

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "walking.py"
#: Equations of motion [N, N m] and cone rows [N, N m] on every tick.
TOL = 1e-9


def run_example(out: Path, *args: str) -> str:
    pytest.importorskip("mujoco")
    pytest.importorskip("cmeel")  # example-robot-data ships through cmeel
    env = dict(os.environ, MPLBACKEND="Agg")
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def check(capsys, log: Path, profile: Path, *options: str) -> str:
    main(["check", str(log), "--config", str(profile), "--workers", "1", *options])
    return capsys.readouterr().out


def cone_rows(f: np.ndarray, tau: np.ndarray, X: float, Y: float, mu: float) -> np.ndarray:
    """Caron, Pham and Nakamura (ICRA 2015): the 16 rows ``<= 0`` of a rectangular sole's
    wrench cone (force and moment at its centre in its axes), and ``-f_z <= 0``."""
    fx, fy, fz = f
    tx, ty, tz = tau
    return np.array(
        [abs(fx) - mu * fz, abs(fy) - mu * fz, abs(tx) - Y * fz, abs(ty) - X * fz, -fz]
        + [-mu * (X + Y) * fz + abs(Y * fx - mu * tx) + abs(X * fy - mu * ty) - tz]
        + [tz - mu * (X + Y) * fz + abs(Y * fx + mu * tx) + abs(X * fy + mu * ty)]
    )


def dynamics_and_cones(out: Path) -> tuple[float, float, int]:
    """The largest equation-of-motion residual and cone row over the controller's ticks,
    and the ticks with one sole only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        profile = load_profile(out / "walking_controller.toml")
    model = profile.robot.model
    data = model.createData()
    log = Trajectory.load(out / "walking_controller.npz")
    assert tuple(log.contact_names) == tuple(c.name for c in profile.contacts)
    assert tuple(log.joint_names) == tuple(model.names[2:])
    eom, cone = 0.0, -np.inf
    for k in range(len(log)):
        q, v = log.q[k], log.v[k]
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        r = M @ log.a[k] + pin.nonLinearEffects(model, data, q, v)
        r[6:] -= log.tau[k]
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        for j, c in enumerate(profile.contacts):
            w = log.contact_wrenches[k, j]
            if not log.contact_active[k, j]:
                assert not np.any(w)
                continue
            fid = model.getFrameId(c.frame)
            r -= pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED).T @ w
            R = data.oMf[fid].rotation
            rows = cone_rows(R.T @ w[:3], R.T @ w[3:], c.half_length, c.half_width, c.mu)
            cone = max(cone, float(rows.max()))
        eom = max(eom, float(np.abs(r).max()))
    return eom, cone, int(np.sum(log.contact_active.sum(axis=1) == 1))


def walk_and_check(tmp_path: Path, capsys, steps: int) -> None:
    out = run_example(tmp_path, "--steps", str(steps))
    assert f"steps walked: {steps} of {steps}" in out
    assert "CoM tracking error: RMS" in out
    for name in ("walking_mujoco", "walking_controller"):
        assert f"wholebody check {tmp_path / name}.npz --config {tmp_path / name}.toml" in out
    mj = check(capsys, tmp_path / "walking_mujoco.npz", tmp_path / "walking_mujoco.toml")
    assert "verdict   consistent" in mj, mj
    ctrl_profile = tmp_path / "walking_controller.toml"
    tight = ("--force-tolerance", "1e-9", "--moment-tolerance", "1e-9")
    ctrl = check(capsys, tmp_path / "walking_controller.npz", ctrl_profile, *tight)
    assert "verdict   consistent" in ctrl, ctrl
    # The failing direction: 5 % more force than the controller's dynamics ask for.
    with np.load(tmp_path / "walking_controller.npz", allow_pickle=False) as z:
        arrays = dict(z)
    key = next(k for k in arrays if "wrench" in k)
    arrays[key] = arrays[key] * 1.05
    np.savez(tmp_path / "tampered.npz", **arrays)
    assert "INCONSISTENT" in check(capsys, tmp_path / "tampered.npz", ctrl_profile)

    eom, cone, single = dynamics_and_cones(tmp_path)
    assert eom <= TOL, f"equations of motion off by {eom:.2e}"
    assert cone <= TOL, f"a wrench outside its cone by {cone:.2e}"
    # Every step has about its single support (0.5 s) on one sole.
    assert single >= steps * 450, single


def test_walking_two_steps(tmp_path, capsys):
    walk_and_check(tmp_path, capsys, 2)


@pytest.mark.slow
def test_walking_six_steps(tmp_path, capsys):
    walk_and_check(tmp_path, capsys, 6)
