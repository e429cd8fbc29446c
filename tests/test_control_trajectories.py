"""Reference trajectories: velocities and accelerations by central differences (on SO(3)
for rotations: ``R log3(R^T R(t +- h))``), the minimum-jerk closed forms (peak speed
``1.875 d / T`` at mid-time, zero velocity and acceleration at both ends), waypoints met."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from wholebody.control import MinimumJerk, MinimumJerkSE3, SE3Spline, SplineTrajectory
from wholebody.errors import InvalidArgumentError

H = 1e-5
#: Central differences with h = 1e-5 on these smooth curves: error below 1e-6.
TOL = 1e-6


def fd(f, t):
    return (np.asarray(f(t + H)) - np.asarray(f(t - H))) / (2 * H)


def se3_fd(traj, t):
    R = traj(t)[0].rotation
    dp = fd(lambda s: traj(s)[0].translation, t)
    dw = R @ (pin.log3(R.T @ traj(t + H)[0].rotation) - pin.log3(R.T @ traj(t - H)[0].rotation))
    return np.r_[dp, dw / (2 * H)]


def test_minimum_jerk_closed_forms():
    start, end = np.array([0.1, -0.2]), np.array([0.5, 0.4])
    mj = MinimumJerk(start, end, duration=0.5, t0=1.0)  # seed 001's fast reach: 0.5 s
    p, v, a = mj(1.25)
    np.testing.assert_allclose(p, (start + end) / 2, atol=1e-15)
    np.testing.assert_allclose(v, 1.875 * (end - start) / 0.5, atol=1e-12)
    np.testing.assert_allclose(a, 0.0, atol=1e-12)
    for t in (1.0, 1.5):
        _, v, a = mj(t)
        np.testing.assert_allclose(v, 0.0, atol=1e-12)
        np.testing.assert_allclose(a, 0.0, atol=1e-12)
    np.testing.assert_allclose(mj(0.0)[0], start)
    np.testing.assert_allclose(mj(9.0)[0], end)
    for t in np.linspace(1.01, 1.49, 7):
        np.testing.assert_allclose(mj(t)[1], fd(lambda s: mj(s)[0], t), atol=TOL)
        np.testing.assert_allclose(mj(t)[2], fd(lambda s: mj(s)[1], t), atol=10 * TOL)


@pytest.mark.parametrize("kind", ["minimum_jerk", "spline"])
def test_se3_twists_by_differences_on_the_manifold(kind):
    rng = np.random.default_rng(4)
    poses = [pin.SE3(pin.exp3(rng.normal(size=3)), rng.normal(size=3)) for _ in range(4)]
    if kind == "minimum_jerk":
        traj = MinimumJerkSE3(poses[0], poses[1], duration=2.0)
        times = np.linspace(0.05, 1.95, 9)
    else:
        traj = SE3Spline([0.0, 0.7, 1.5, 2.0], poses)
        times = np.linspace(0.05, 1.95, 9)
        for tk, M in zip([0.0, 0.7, 1.5, 2.0], poses, strict=True):
            assert np.allclose(traj(tk)[0].homogeneous, M.homogeneous, atol=1e-12)
    for t in times:
        _, twist, acc = traj(t)
        np.testing.assert_allclose(twist, se3_fd(traj, t), atol=TOL)
        np.testing.assert_allclose(acc, fd(lambda s: traj(s)[1], t), atol=10 * TOL)
    M_end = traj(5.0)[0]
    assert np.allclose(M_end.homogeneous, poses[1 if kind == "minimum_jerk" else 3].homogeneous)


def test_spline_and_bad_input():
    times = [0.0, 1.0, 3.0]
    points = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 2.0]])
    sp = SplineTrajectory(times, points)
    for tk, pk in zip(times, points, strict=True):
        np.testing.assert_allclose(sp(tk)[0], pk, atol=1e-12)
    for t in (0.3, 1.7, 2.5):
        np.testing.assert_allclose(sp(t)[1], fd(lambda s: sp(s)[0], t), atol=TOL)
        np.testing.assert_allclose(sp(t)[2], fd(lambda s: sp(s)[1], t), atol=10 * TOL)
    with pytest.raises(InvalidArgumentError):
        SplineTrajectory([0.0, 0.0], points[:2])
    with pytest.raises(InvalidArgumentError):
        MinimumJerk([0.0], [1.0], duration=0.0)
