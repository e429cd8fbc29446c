"""The seed's closed-form pendulum and double-pendulum dynamics against the shipped URDFs.

Seed 001 ("Multibody dynamics of simple biomechanical models") gives, for the planar
two-link arm with angles measured from the horizontal,
``tau = M(q) q'' + C(q, q') + G(q) + E(q, q')``. The parameters below are typed from the
seed, not read from the library.
"""

from __future__ import annotations

import numpy as np
from numpy.testing import assert_allclose

TOL = 1e-10  # absolute [N m]; the torques here are of order 1-10 N m

# Dempster parameters of the seed, 1.70 m and 70 kg.
H, MASS, G0 = 1.70, 70.0, 9.81
L1, L2 = 0.188 * H, 0.253 * H
D1, D2 = 0.436 * L1, 0.682 * L2
M1, M2 = 0.0280 * MASS, 0.0220 * MASS
I1, I2 = M1 * (0.322 * L1) ** 2, M2 * (0.468 * L2) ** 2


def seed_M(q):
    c2 = np.cos(q[1])
    m11 = I1 + I2 + L1**2 * M2 + 2 * L1 * D2 * M2 * c2 + D1**2 * M1 + D2**2 * M2
    m12 = I2 + L1 * D2 * M2 * c2 + D2**2 * M2
    return np.array([[m11, m12], [m12, I2 + D2**2 * M2]])


def seed_C(q, qd):
    s2 = np.sin(q[1])
    return np.array(
        [-L1 * D2 * M2 * (2 * qd[0] + qd[1]) * s2 * qd[1], L1 * D2 * M2 * s2 * qd[0] ** 2]
    )


def seed_G(q):
    return G0 * np.array(
        [
            L1 * M2 * np.cos(q[0]) + D1 * M1 * np.cos(q[0]) + D2 * M2 * np.cos(q[0] + q[1]),
            D2 * M2 * np.cos(q[0] + q[1]),
        ]
    )


def seed_E(q, Fex, Fey):
    s1, s12 = np.sin(q[0]), np.sin(q[0] + q[1])
    c1, c12 = np.cos(q[0]), np.cos(q[0] + q[1])
    return np.array(
        [Fex * (L1 * s1 + L2 * s12) - Fey * (L1 * c1 + L2 * c12), L2 * (Fex * s12 - Fey * c12)]
    )


def test_two_link_arm_matches_seed_closed_form(two_link_arm):
    rng = np.random.default_rng(1)
    for _ in range(50):
        q = rng.uniform(-np.pi, np.pi, 2)
        qd, qdd = rng.normal(scale=3.0, size=2), rng.normal(scale=10.0, size=2)
        Fex, Fey = rng.normal(scale=20.0, size=2)
        # The seed's plane is (x, y) with y up; ours is (x, z) with z up.
        external = {"fingertip": np.array([Fex, 0.0, Fey])}
        assert_allclose(two_link_arm.mass_matrix(q), seed_M(q), rtol=0, atol=TOL)
        assert_allclose(two_link_arm.coriolis(q, qd), seed_C(q, qd), rtol=0, atol=TOL)
        assert_allclose(two_link_arm.gravity(q), seed_G(q), rtol=0, atol=TOL)
        terms = two_link_arm.torque_terms(q, qd, qdd, external)
        assert_allclose(terms.inertial, seed_M(q) @ qdd, rtol=0, atol=TOL)
        assert_allclose(terms.external, seed_E(q, Fex, Fey), rtol=0, atol=TOL)
        expected = seed_M(q) @ qdd + seed_C(q, qd) + seed_G(q) + seed_E(q, Fex, Fey)
        assert_allclose(
            two_link_arm.inverse_dynamics(q, qd, qdd, external), expected, rtol=0, atol=TOL
        )
        assert_allclose(terms.total, expected, rtol=0, atol=TOL)


def test_two_link_arm_forward_dynamics_inverts_seed_equation(two_link_arm):
    rng = np.random.default_rng(2)
    for _ in range(20):
        q, qd, tau = rng.uniform(-np.pi, np.pi, 2), rng.normal(size=2), rng.normal(size=2)
        expected = np.linalg.solve(seed_M(q), tau - seed_C(q, qd) - seed_G(q))
        assert_allclose(two_link_arm.forward_dynamics(q, qd, tau), expected, rtol=0, atol=1e-9)


def test_inverted_pendulum_matches_seed(pendulum):
    # Seed 001: T = I_o alpha'' + m g d cos(alpha) + L F_ex sin(alpha) - L F_ey cos(alpha).
    L, m = 1.70, 70.0
    d, i_cm = 0.55 * L, m * (0.28 * L) ** 2
    i_o = i_cm + m * d**2
    rng = np.random.default_rng(3)
    for _ in range(20):
        alpha, alpha_d, alpha_dd = rng.uniform(-np.pi, np.pi), rng.normal(), rng.normal()
        Fex, Fey = rng.normal(scale=50.0, size=2)
        T = (
            i_o * alpha_dd
            + m * G0 * d * np.cos(alpha)
            + L * Fex * np.sin(alpha)
            - L * Fey * np.cos(alpha)
        )
        tau = pendulum.inverse_dynamics([alpha], [alpha_d], [alpha_dd], {"tip": [Fex, 0.0, Fey]})
        assert_allclose(tau, [T], rtol=0, atol=1e-9)
