"""Logs of float32 engines: the convention check of v against dq/dt takes its bound from the
precision the recorder states (``metadata["float_epsilon"]``), and only from it."""

from __future__ import annotations

import numpy as np
import pytest

import wholebody as wb
from wholebody.contacts import SurfaceContact
from wholebody.conventions import check_conventions
from wholebody.sim._common import precision_metadata
from wholebody.trajectory import Trajectory


def _standing_log(metadata):
    # A base swaying by 2 um at 1 kHz, stored in float32 as MJX or Newton store it: the
    # rounding of q (~6e-8 m at 0.94 m) over dt is ~1e-4 m/s, more than the sway's velocity.
    robot = wb.load("humanoid")
    t = np.arange(1000) * 1e-3
    q = np.tile(robot.neutral(), (len(t), 1))
    q[:, 2] = 0.94 + 2e-6 * np.sin(2 * np.pi * t)
    v = np.zeros((len(t), robot.nv))
    v[:, 2] = 2e-6 * 2 * np.pi * np.cos(2 * np.pi * t)
    q32, v32 = q.astype(np.float32).astype(float), v.astype(np.float32).astype(float)
    traj = Trajectory.from_arrays(
        t,
        q32,
        v32,
        joint_names=robot.joint_names,
        contact_wrenches={"left_sole": np.zeros((len(t), 6))},
        metadata=metadata,
    )
    return robot, traj


def _velocity_check(metadata):
    robot, traj = _standing_log(metadata)
    report = check_conventions(
        robot, traj, [SurfaceContact("left_sole", half_length=0.12, half_width=0.05, mu=1.0)]
    )
    return next(c for c in report.all_checks if c.name == "velocity_matches_configuration")


def test_float32_log_passes_with_its_stated_precision():
    check = _velocity_check(precision_metadata(np.float32))
    assert check.passed, check.message
    assert check.evidence["float_epsilon"] == pytest.approx(np.finfo(np.float32).eps)


def test_a_real_convention_mistake_still_fails_in_float32():
    # The failing direction: the float32 bound (~1e-3 m/s here) does not hide a base linear
    # velocity given in world axes on a turning base.
    robot = wb.load("humanoid")
    t = np.arange(1000) * 1e-3
    yaw = 1.0 * t  # [rad]
    q = np.tile(robot.neutral(), (len(t), 1))
    q[:, 0], q[:, 2] = 0.5 * t, 0.94
    q[:, 5], q[:, 6] = np.sin(yaw / 2), np.cos(yaw / 2)
    v = np.zeros((len(t), robot.nv))
    v[:, 0], v[:, 5] = 0.5, 1.0  # world-axes velocity: the mistake (base axes expected)
    q32, v32 = q.astype(np.float32).astype(float), v.astype(np.float32).astype(float)
    traj = Trajectory.from_arrays(
        t,
        q32,
        v32,
        joint_names=robot.joint_names,
        contact_wrenches={"left_sole": np.zeros((len(t), 6))},
        metadata=precision_metadata(np.float32),
    )
    contacts = [SurfaceContact("left_sole", half_length=0.12, half_width=0.05, mu=1.0)]
    report = check_conventions(robot, traj, contacts)
    check = next(c for c in report.all_checks if c.name == "velocity_matches_configuration")
    assert not check.passed
    assert "base_linear_velocity_in_world" in check.hypotheses
