"""Identities between Pinocchio algorithms and finite differences on the manifold.

Robots: the shipped humanoid (floating base, 25 dofs) and, when installed, Talos.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose

import wholebody as wb

from .conftest import random_states

ROBOTS = ["humanoid", "two_link_arm"]
H = 1e-6  # finite-difference step on the manifold; central differences err by O(H^2)


@pytest.fixture(scope="module", params=ROBOTS)
def robot(request):
    return wb.load(request.param)


def _step(robot, q, v, h):
    return pin.integrate(robot.model, q, v * h)


def test_rnea_equals_mass_coriolis_gravity(robot):
    for q, v, a in random_states(robot, 10):
        tau = robot.inverse_dynamics(q, v, a)
        split = robot.mass_matrix(q) @ a + robot.coriolis_matrix(q, v) @ v + robot.gravity(q)
        assert_allclose(tau, split, rtol=0, atol=1e-9 * max(1.0, abs(tau).max()))
        assert_allclose(
            robot.coriolis(q, v) + robot.gravity(q),
            robot.nonlinear_effects(q, v),
            rtol=0,
            atol=1e-9,
        )
        assert_allclose(robot.coriolis_matrix(q, v) @ v, robot.coriolis(q, v), rtol=0, atol=1e-9)
        assert_allclose(robot.torque_terms(q, v, a).total, tau, rtol=0, atol=1e-9)


def test_mass_matrix_symmetric_positive_definite(robot):
    for q, _, _ in random_states(robot, 10):
        M = robot.mass_matrix(q)
        assert_allclose(M, M.T, rtol=0, atol=0)
        assert np.linalg.eigvalsh(M)[0] > 0


def test_forward_dynamics_inverts_inverse_dynamics(robot):
    for q, v, a in random_states(robot, 10):
        tau = robot.inverse_dynamics(q, v, a)
        assert_allclose(robot.forward_dynamics(q, v, tau), a, rtol=0, atol=1e-8)


def test_mdot_minus_two_c_is_skew_symmetric(robot):
    # Mdot from central differences along the motion q(t) = integrate(q, t v).
    for q, v, _ in random_states(robot, 5):
        Mdot = (
            robot.mass_matrix(_step(robot, q, v, H)) - robot.mass_matrix(_step(robot, q, v, -H))
        ) / (2 * H)
        N = Mdot - 2 * robot.coriolis_matrix(q, v)
        assert_allclose(N, -N.T, rtol=0, atol=1e-6)


def test_frame_jacobian_against_finite_differences(humanoid):
    # J e_i is the world-aligned twist of the frame when q moves along e_i on the manifold.
    for q, _, _ in random_states(humanoid, 3):
        for frame in ("left_sole", "right_hand"):
            J = humanoid.frame_jacobian(q, frame)
            for i in range(humanoid.nv):
                e = np.zeros(humanoid.nv)
                e[i] = 1.0
                Mp = humanoid.placements(_step(humanoid, q, e, H), frame).se3()
                Mm = humanoid.placements(_step(humanoid, q, e, -H), frame).se3()
                lin = (Mp.translation - Mm.translation) / (2 * H)
                ang = pin.log3(Mp.rotation @ Mm.rotation.T) / (2 * H)
                assert_allclose(J[:, i], np.r_[lin, ang], rtol=0, atol=1e-7)


def test_jacobian_times_v_is_frame_velocity_and_drift_matches_differences(humanoid):
    for q, v, _ in random_states(humanoid, 5):
        for frame in ("left_sole", "left_hand", "torso"):
            J = humanoid.frame_jacobian(q, frame)
            assert_allclose(J @ v, humanoid.frame_velocity(q, v, frame), rtol=0, atol=1e-12)
            # d/dt (J v) along q(t) = integrate(q, t v) with constant v is Jdot v.
            Jv_p = humanoid.frame_jacobian(_step(humanoid, q, v, H), frame) @ v
            Jv_m = humanoid.frame_jacobian(_step(humanoid, q, v, -H), frame) @ v
            assert_allclose(
                humanoid.frame_drift(q, v, frame), (Jv_p - Jv_m) / (2 * H), rtol=0, atol=1e-6
            )


def test_com_jacobian_and_momentum(humanoid):
    for q, v, a in random_states(humanoid, 5):
        Jc = humanoid.com_jacobian(q)
        com_fd = (
            humanoid.com(_step(humanoid, q, v, H)) - humanoid.com(_step(humanoid, q, v, -H))
        ) / (2 * H)
        assert_allclose(Jc @ v, com_fd, rtol=0, atol=1e-7)
        h = humanoid.centroidal_momentum(q, v)
        assert_allclose(h[:3], humanoid.mass * (Jc @ v), rtol=0, atol=1e-9)
        # dh/dt along the motion q(t), v(t) = v + t a (integrated on the manifold).
        hp = humanoid.centroidal_momentum(_step(humanoid, q, v, H), v + H * a)
        hm = humanoid.centroidal_momentum(_step(humanoid, q, v, -H), v - H * a)
        # q(t) also changes along v + t a; the O(H^2) term of that is below the tolerance.
        assert_allclose(
            humanoid.centroidal_momentum_rate(q, v, a), (hp - hm) / (2 * H), rtol=0, atol=1e-5
        )


def test_static_robot_gravity_is_weight(humanoid):
    # At rest the base rows of g(q) are the weight, in base axes at the base origin.
    q = humanoid.neutral()
    g = humanoid.gravity(q)
    assert_allclose(g[:3], [0, 0, humanoid.mass * 9.81], rtol=1e-12)
    rate = humanoid.centroidal_momentum_rate(q, np.zeros(humanoid.nv), np.zeros(humanoid.nv))
    assert_allclose(rate, np.zeros(6), atol=1e-12)
