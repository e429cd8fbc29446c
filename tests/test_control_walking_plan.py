"""Walking references (wholebody.control.trajectories): the DCM and CoM of DcmTrajectory
against an independent numerical integration of the pendulum (the DCM backward from its end,
where it equals the ZMP; the CoM forward from its start through ``c_dot = omega (xi - c)``),
the pendulum's identities and continuity at the waypoints; the footstep plan's timeline and
ZMP; the swing foot's ends, lift and rates by differences on the manifold."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from scipy.integrate import solve_ivp

from wholebody.control.trajectories import DcmTrajectory, FootstepPlan, SwingFoot
from wholebody.errors import InvalidArgumentError

G, HEIGHT = 9.81, 0.6
OMEGA = np.sqrt(G / HEIGHT)
#: Integration by DOP853 at rtol = atol = 1e-12 over a few seconds: error below 1e-10 m.
TOL_INTEGRATION = 1e-9
H = 1e-6


def random_zmp(seed: int, k: int = 7) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    times = np.cumsum(np.r_[0.0, rng.uniform(0.1, 0.7, size=k - 1)])
    return times, rng.uniform(-0.2, 0.2, size=(k, 2))


def feet(width: float = 0.2) -> dict[str, pin.SE3]:
    return {
        "left": pin.SE3(np.eye(3), np.array([0.0, width / 2, 0.0])),
        "right": pin.SE3(np.eye(3), np.array([0.0, -width / 2, 0.0])),
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dcm_and_com_against_integration(seed):
    times, zmp = random_zmp(seed)
    com0 = np.r_[0.05, -0.03, HEIGHT]
    traj = DcmTrajectory(times, zmp, com0, HEIGHT, gravity=G)
    assert traj.omega == pytest.approx(OMEGA, rel=1e-15)

    def p(t):  # the ZMP, written here from the waypoints
        return np.array([np.interp(t, times, zmp[:, i]) for i in range(2)])

    # The DCM backward from the end (stable in reverse time), then the CoM forward.
    back = solve_ivp(
        lambda t, xi: OMEGA * (xi - p(t)),
        (times[-1], times[0]),
        zmp[-1],
        method="DOP853",
        rtol=1e-12,
        atol=1e-12,
        dense_output=True,
        max_step=0.01,
    )
    fwd = solve_ivp(
        lambda t, c: OMEGA * (back.sol(t) - c),
        (times[0], times[-1]),
        com0[:2],
        method="DOP853",
        rtol=1e-12,
        atol=1e-12,
        dense_output=True,
        max_step=0.01,
    )
    for t in np.r_[np.linspace(times[0], times[-1], 41), times]:
        np.testing.assert_allclose(traj.dcm(t), back.sol(t), rtol=0, atol=TOL_INTEGRATION)
        c, dc, ddc = traj(t)
        if t > times[0]:
            np.testing.assert_allclose(c[:2], fwd.sol(t), rtol=0, atol=TOL_INTEGRATION)
            np.testing.assert_allclose(dc[:2], OMEGA * (back.sol(t) - fwd.sol(t)), atol=1e-8)
            # The pendulum: c_ddot = omega^2 (c - p), exactly.
            np.testing.assert_allclose(ddc[:2], OMEGA**2 * (c[:2] - p(t)), rtol=0, atol=1e-12)
        np.testing.assert_allclose(traj.zmp(t), p(t), rtol=0, atol=1e-15)
        assert c[2] == com0[2] and dc[2] == 0.0 and ddc[2] == 0.0


def test_dcm_continuity_ends_and_the_capture_point():
    times, zmp = random_zmp(3)
    com0 = np.r_[0.0, 0.0, HEIGHT]
    traj = DcmTrajectory(times, zmp, com0, HEIGHT, gravity=G)
    for t in times[1:-1]:  # CoM position and velocity continuous at the waypoints
        left, right = traj(t - 1e-9), traj(t + 1e-9)
        np.testing.assert_allclose(left[0], right[0], atol=1e-9)
        np.testing.assert_allclose(left[1], right[1], atol=1e-8)
        np.testing.assert_allclose(traj.dcm(t - 1e-9), traj.dcm(t + 1e-9), atol=1e-8)
    np.testing.assert_allclose(traj(times[0])[0], com0, atol=0)
    np.testing.assert_allclose(traj.dcm(times[-1]), zmp[-1], atol=1e-15)
    # After the end: the ZMP and DCM at the last point, the CoM converging to it.
    T = times[-1]
    c_end = traj(T)[0][:2]
    for s in (0.1, 1.0):
        c = traj(T + s)[0][:2]
        np.testing.assert_allclose(c - zmp[-1], np.exp(-OMEGA * s) * (c_end - zmp[-1]), atol=1e-12)
    # Pratt's capture point: a ZMP held at p from t0 to T makes xi(t) = p + e^{w (t - T)}
    # (xi(T) - p); with a last ramp from p to q over T2 (then held, the DCM ending at q),
    # xi(T) = p + (q - p) (1 - e^{-w T2}) / (w T2) (q as T2 -> 0).
    P, Q, T1, T2 = np.array([0.1, -0.05]), np.array([0.3, 0.05]), 0.8, 0.3
    ramp = DcmTrajectory([0.0, T1, T1 + T2], [P, P, Q], com0, HEIGHT, gravity=G)
    xi_T = P + (Q - P) * (1 - np.exp(-OMEGA * T2)) / (OMEGA * T2)
    for t in (0.0, 0.3, T1):
        np.testing.assert_allclose(
            ramp.dcm(t), P + np.exp(OMEGA * (t - T1)) * (xi_T - P), rtol=0, atol=1e-14
        )


def test_dcm_bad_input():
    with pytest.raises(InvalidArgumentError, match="strictly increasing"):
        DcmTrajectory([0.0, 0.0], np.zeros((2, 2)), np.zeros(3), HEIGHT)
    with pytest.raises(InvalidArgumentError, match="one x-y row per time"):
        DcmTrajectory([0.0, 1.0], np.zeros((3, 2)), np.zeros(3), HEIGHT)
    with pytest.raises(InvalidArgumentError, match="height > 0"):
        DcmTrajectory([0.0, 1.0], np.zeros((2, 2)), np.zeros(3), -1.0)


def test_straight_plan_timeline_and_zmp():
    ss, ds, rest, length = 0.5, 0.2, 1.0, 0.15
    plan = FootstepPlan.straight(
        feet(),
        steps=4,
        length=length,
        first="right",
        single_support=ss,
        double_support=ds,
        rest=rest,
        t0=2.0,
    )
    steps = plan.footsteps
    assert [s.foot for s in steps] == ["right", "left", "right", "left"]
    # Each foot lands `length` ahead of the other; the last beside it.
    np.testing.assert_allclose([s.end.translation[0] for s in steps], [0.15, 0.3, 0.45, 0.45])
    for s in steps:
        assert s.end.translation[1] == s.start.translation[1]
    for k, s in enumerate(steps):
        assert s.lift_off == pytest.approx(2.0 + rest + ds + k * (ss + ds), abs=1e-12)
        assert s.touch_down - s.lift_off == pytest.approx(ss, abs=1e-12)
        before = steps[k - 2].end if k > 1 else feet()[s.foot]
        np.testing.assert_allclose(s.start.homogeneous, before.homogeneous, atol=0)
    assert plan.end == pytest.approx(steps[-1].touch_down + ds + rest, abs=1e-12)
    dcm = DcmTrajectory(plan.zmp_times, plan.zmp_points, np.r_[0.0, 0.0, HEIGHT], HEIGHT)
    # The ZMP: at the centre at rest, at the stance sole in single support.
    np.testing.assert_allclose(dcm.zmp(2.5), [0.0, 0.0])
    np.testing.assert_allclose(dcm.zmp(plan.end - 0.1), [0.45, 0.0], atol=1e-15)
    for s in steps:
        stance = [0.0, 0.1] if s.foot == "right" else [0.0, -0.1]
        other = [t for t in steps if t.foot != s.foot and t.touch_down < s.lift_off]
        stance[0] = other[-1].end.translation[0] if other else 0.0
        for t in np.linspace(s.lift_off, s.touch_down, 5):
            np.testing.assert_allclose(dcm.zmp(t), stance, atol=1e-15)


def test_plan_bad_input():
    with pytest.raises(InvalidArgumentError, match="alternate between the feet"):
        FootstepPlan(
            feet(),
            [("left", pin.SE3.Identity()), ("left", pin.SE3.Identity())],
            single_support=0.5,
            double_support=0.2,
        )
    with pytest.raises(InvalidArgumentError, match="unknown foot 'hand'"):
        FootstepPlan(feet(), [("hand", pin.SE3.Identity())], single_support=0.5, double_support=0.2)
    with pytest.raises(InvalidArgumentError, match="duration > 0"):
        FootstepPlan.straight(
            feet(), steps=2, length=0.1, first="left", single_support=0.0, double_support=0.2
        )
    with pytest.raises(InvalidArgumentError, match="first among"):
        FootstepPlan.straight(
            feet(), steps=2, length=0.1, first="hand", single_support=0.5, double_support=0.2
        )


def test_swing_foot_ends_lift_and_rates():
    rng = np.random.default_rng(5)
    start = pin.SE3(pin.exp3(0.2 * rng.normal(size=3)), rng.normal(size=3))
    end = pin.SE3(pin.exp3(0.2 * rng.normal(size=3)), rng.normal(size=3))
    T, h, t0 = 0.5, 0.05, 1.0
    swing = SwingFoot(start, end, h, T, t0=t0)
    for t, M_ref in ((t0, start), (t0 + T, end)):
        M, twist, acc = swing(t)
        np.testing.assert_allclose(M.homogeneous, M_ref.homogeneous, atol=1e-12)
        np.testing.assert_allclose(twist, 0.0, atol=1e-12)
        np.testing.assert_allclose(acc, 0.0, atol=1e-12)
    # Mid-swing: the straight line's midpoint lifted by h.
    mid = swing(t0 + T / 2)[0].translation
    np.testing.assert_allclose(
        mid, (start.translation + end.translation) / 2 + [0, 0, h], atol=1e-12
    )
    for t in np.linspace(t0 + 0.02, t0 + T - 0.02, 7):
        M, twist, acc = swing(t)
        R = M.rotation
        plus, minus = swing(t + H)[0], swing(t - H)[0]
        dp = (plus.translation - minus.translation) / (2 * H)
        dw = R @ (pin.log3(R.T @ plus.rotation) - pin.log3(R.T @ minus.rotation)) / (2 * H)
        np.testing.assert_allclose(twist, np.r_[dp, dw], atol=1e-7)
        np.testing.assert_allclose(acc, (swing(t + H)[1] - swing(t - H)[1]) / (2 * H), atol=1e-6)
    with pytest.raises(InvalidArgumentError, match="height must be finite and >= 0"):
        SwingFoot(start, end, -0.01, T)
