"""Clean logs with torques from MuJoCo, PyBullet and Drake (``examples/cross_engine.py``'s
robot and motion, in a pose away from the joint limits, whose constraint forces no applied
torque holds): every joint row is consistent at the engine's precision.

MuJoCo's recorder logs the torques (every generalized force but the contacts'); PyBullet's
and Drake's do not, so the torque applied during each step is attached here (the recorders
log that step's state and forces)."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import wholebody as wb
from wholebody.check.analysis import check_trajectory
from wholebody.check.options import CheckOptions

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
import cross_engine as ce  # noqa: E402

#: Knees, hips, ankles and elbows bent off their limits [rad].
BENT = {"knee": 0.1, "hip_pitch": -0.05, "ankle_pitch": -0.05, "elbow": -0.3}
#: Explicit tolerances (relative to m g): 6.4e-7 N and m, 6.9e-7 .. 1.3e-6 N m per joint.
PRECISE = CheckOptions(force_tolerance=1e-9, moment_tolerance=1e-9)


def _targets(robot: wb.Robot, t: float) -> np.ndarray:
    out = _SWAY(robot, t)
    for i, name in enumerate(robot.joint_names):
        out[i] += next((v for k, v in BENT.items() if name.endswith(k)), 0.0)
    return out


def _initial_q(robot: wb.Robot, contacts) -> np.ndarray:
    q0 = robot.neutral()
    q0[7:] = _targets(robot, 0.0)
    q0[2] = 1e-4 - min(robot.frame_position(q0, c.frame)[2] for c in contacts)
    return q0


_SWAY = ce.targets


def _pybullet(robot, path, contacts):
    import pybullet as p

    applied, original = [], p.setJointMotorControlArray

    def spy(body, joints, mode, *args, **kwargs):
        if mode == p.TORQUE_CONTROL:
            applied.append(np.array(kwargs["forces"]))
        return original(body, joints, mode, *args, **kwargs)

    p.setJointMotorControlArray = spy
    try:
        traj, check_robot = ce.run_pybullet(robot, path, contacts)
    finally:
        p.setJointMotorControlArray = original
    return dataclasses.replace(traj, tau=np.array(applied)), check_robot


def _drake(robot, path, contacts):
    from pydrake.systems.framework import InputPort

    applied, plants, original = [], [], InputPort.FixValue

    def spy(port, context, value):
        applied.append(np.asarray(value, dtype=float).copy())
        plants[:] = [port.get_system()]
        return original(port, context, value)

    InputPort.FixValue = spy
    try:
        traj, check_robot = ce.run_drake(robot, path, contacts)
    finally:
        InputPort.FixValue = original
    # Drake's generalized forces, by each joint's velocity index in the plant.
    index = [plants[0].GetJointByName(n).velocity_start() for n in robot.joint_names]
    return dataclasses.replace(traj, tau=np.array(applied)[:, index]), check_robot


RUNS = {"mujoco": ("mujoco", ce.run_mujoco), "pybullet": ("pybullet", _pybullet)}
RUNS["drake"] = ("pydrake", _drake)


@pytest.fixture(scope="module")
def sphere_feet(tmp_path_factory):
    path = ce.sphere_feet_urdf(tmp_path_factory.mktemp("engines"))
    return path, wb.Robot.from_urdf(path), ce.soles()


def _log(engine, sphere_feet, monkeypatch):
    module, run = RUNS[engine]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} not installed")
    monkeypatch.setattr(ce, "targets", _targets)
    monkeypatch.setattr(ce, "initial_q", _initial_q)
    path, robot, contacts = sphere_feet
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj, check_robot = run(robot, path, contacts)
    assert traj.tau is not None and traj.tau.shape == (len(traj), len(robot.joint_names))
    return check_robot, contacts, traj


@pytest.mark.parametrize("engine", ["mujoco", "pybullet"])
def test_float64_engines_balance_every_joint_row_to_round_off(engine, sphere_feet, monkeypatch):
    robot, contacts, traj = _log(engine, sphere_feet, monkeypatch)
    report = check_trajectory(robot, traj, contacts, PRECISE)
    assert report.verdict == "consistent", report.format_summary()
    assert np.nanmax(np.abs(report.joint_residual)) < 1e-10  # [N m]
    assert report.joints_not_checked == {}


def test_drake_joint_rows_agree_as_closely_as_its_wrench_balance(sphere_feet, monkeypatch):
    # Drake's contact readout balances most steps to round-off and some to about 2e-3 N (its
    # wrench balance's floor here); the joint rows read the same forces, to the same floor.
    # Checked at the physical tolerances: that floor is above float64's (as cross_engine.py).
    robot, contacts, traj = _log("drake", sphere_feet, monkeypatch)
    report = check_trajectory(robot, traj, contacts, CheckOptions(preset="physical"))
    assert report.verdict == "consistent", report.format_summary()
    rows = np.nanmax(np.abs(report.joint_residual), axis=1)
    assert np.median(rows) < 1e-9
    off = rows > 1e-6  # the samples whose joint rows are off ...
    assert (report.force_norm[off] > 1e-6).mean() > 0.9  # ... are those whose balance is
    assert rows.max() < 1e-2
