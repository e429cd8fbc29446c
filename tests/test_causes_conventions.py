"""Convention mistakes of simulators and loggers: a base velocity already in base axes
converted again as if in world axes (rotated twice; Genesis' base angular velocity), joint
angles, velocities and accelerations all in degrees (``v`` still equals ``dq/dt``), joint
positions beyond the URDF's limits (flagged per sample with the joint), and ``q_from_named``
refusing positions beyond the limits unless asked."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import wholebody as wb
from wholebody.check.analysis import check_trajectory
from wholebody.conventions import check_conventions
from wholebody.conventions._core import CHECK_NAME
from wholebody.errors import StateError

from .test_conventions import FEET, VELOCITY, _rotations, logs, yawed  # noqa: F401

RATES = ["squat_1khz", "squat_500hz"]


def _twice(traj, part):
    v = traj.v.copy()
    R = _rotations(traj.q[:, 3:7])
    cols = slice(3, 6) if part == "angular" else slice(0, 3)
    v[:, cols] = np.einsum("nji,nj->ni", R, v[:, cols])  # R^T applied to a base-axes value
    return dataclasses.replace(traj, v=v)


@pytest.mark.parametrize("accelerations", ["logged", "differentiated"])
@pytest.mark.parametrize("part", ["angular", "linear"])
@pytest.mark.parametrize("name", RATES)
def test_base_velocity_rotated_twice_is_named(humanoid, logs, name, part, accelerations):  # noqa: F811
    traj = _twice(yawed(logs[name], 1.2), part)
    if accelerations == "differentiated":
        traj = dataclasses.replace(traj, a=None)
    report = check_conventions(humanoid, traj, FEET)
    check = report[VELOCITY]
    assert check.hypotheses == (f"base_{part}_velocity_rotated_twice",), check.message
    full = check_trajectory(humanoid, traj, FEET)
    assert full.diagnosis[0].cause == f"convention:{VELOCITY}"
    assert "rotated_twice" in full.diagnosis[0].message


def _in_degrees(traj):
    q, v = traj.q.copy(), traj.v.copy()
    q[:, 7:] = np.degrees(q[:, 7:])
    v[:, 6:] = np.degrees(v[:, 6:])
    a = None if traj.a is None else traj.a.copy()
    if a is not None:
        a[:, 6:] = np.degrees(a[:, 6:])
    return dataclasses.replace(traj, q=q, v=v, a=a)


@pytest.mark.parametrize("accelerations", ["logged", "differentiated"])
@pytest.mark.parametrize("name", RATES)
def test_joint_angles_velocities_and_accelerations_in_degrees(humanoid, logs, name, accelerations):  # noqa: F811
    traj = _in_degrees(logs[name])
    if accelerations == "differentiated":
        traj = dataclasses.replace(traj, a=None)
    report = check_conventions(humanoid, traj, FEET)
    assert report[VELOCITY].passed  # v = dq/dt in degrees too
    limits = report[CHECK_NAME]
    assert not limits.passed and limits.hypotheses == ("joint_angles_in_degrees",)
    assert "left_knee" in limits.evidence["joints"]
    full = check_trajectory(humanoid, traj, FEET)
    assert full.diagnosis[0].cause == f"convention:{CHECK_NAME}", full.format_summary()
    assert "degrees" in full.diagnosis[0].message


def test_joints_beyond_limits_are_flagged_per_sample(humanoid, logs):  # noqa: F811
    traj = logs["squat_500hz"]
    q = traj.q.copy()
    j = 7 + list(traj.joint_names).index("left_knee")
    q[100:110, j] = -0.5  # a knee bent backwards: beyond [0, ...]
    check = check_conventions(humanoid, dataclasses.replace(traj, q=q), FEET)[CHECK_NAME]
    assert check.passed and check.hypotheses == ()  # not degrees: flagged, not a failure
    flagged = check.evidence["flagged"]
    assert sorted(flagged) == list(range(100, 110))
    assert all("left_knee" in why for why in flagged.values())
    report = check_trajectory(humanoid, dataclasses.replace(traj, q=q), FEET)
    (note,) = [n for n in report.notes if n.cause == "joint_limits"]
    assert sorted(note.parameters["flagged"]) == list(range(100, 110))
    assert "left_knee" in report.format_summary()
    # Clean logs pass (simulated within the limits).
    for name in RATES:
        assert check_conventions(humanoid, logs[name], FEET)[CHECK_NAME].passed


def test_q_from_named_refuses_positions_beyond_the_limits(humanoid):
    with pytest.raises(StateError, match=r"left_knee.*beyond its limits.*degrees.*0.7854 rad"):
        humanoid.q_from_named({"left_knee": 45})
    q = humanoid.q_from_named({"left_knee": 45}, beyond_limits=True)
    assert q[7 + humanoid.joint_names.index("left_knee")] == 45.0
    assert humanoid.q_from_named({"left_knee": 0.5})[
        7 + humanoid.joint_names.index("left_knee")
    ] == pytest.approx(0.5)


def test_third_party_robot_degrees():
    try:
        talos = wb.load("talos")
    except wb.errors.MissingDependencyError:
        pytest.skip("example-robot-data is not installed")
    rng = np.random.default_rng(0)
    lo = talos.model.lowerPositionLimit[7:]
    hi = talos.model.upperPositionLimit[7:]
    N = 200
    q = np.tile(talos.neutral(), (N, 1))
    q[:, 7:] = lo + (hi - lo) * (0.3 + 0.4 * rng.random(len(lo)))
    from wholebody.conventions._core import joint_limit_check

    assert joint_limit_check(talos, q).passed
    qd = q.copy()
    qd[:, 7:] = np.degrees(q[:, 7:])
    check = joint_limit_check(talos, qd)
    assert check.hypotheses == ("joint_angles_in_degrees",), check.message
