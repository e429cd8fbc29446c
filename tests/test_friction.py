"""Friction cones against independent references: LP over corner forces, nesting of cones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from wholebody.contacts import PointContact, SurfaceContact
from wholebody.friction import (
    CWC_ROW_NAMES,
    check_friction_cone,
    check_wrench_cone,
    contact_wrench_cone,
    friction_pyramid,
    in_world_axes,
    normal_rotation,
    wrench_cone_generators,
)

from ._cone_reference import corner_lp_member

X, Y, MU = 0.12, 0.05, 0.7
BOUNDARY = 1e-9  # samples this close to a face (relative) are not judged


@pytest.mark.parametrize("n", [1_000, pytest.param(10_000, marks=pytest.mark.slow)])
def test_wrench_cone_equals_corner_forces_by_linear_programming(n):
    rng = np.random.default_rng(0)
    A = contact_wrench_cone(X, Y, MU)
    G = wrench_cone_generators(X, Y, MU)
    judged, agree = 0, 0
    for _ in range(n):
        # Half the samples are generated inside (then perturbed), half broadly at random.
        if rng.random() < 0.5:
            noise = rng.choice([0.0, 0.01, 0.1, 1.0])
            w = G @ rng.exponential(size=16) + rng.normal(scale=noise, size=6)
        else:
            w = rng.normal(size=6) * [1, 1, 1, 0.1, 0.1, 0.1] + [0, 0, rng.uniform(0, 2), 0, 0, 0]
        row_values = (A @ w) / np.linalg.norm(A, axis=1)
        if np.min(np.abs(row_values)) < BOUNDARY * np.linalg.norm(w):
            continue
        judged += 1
        agree += (row_values.max() <= 0) == corner_lp_member(w, X, Y, MU)
    assert judged > 0.99 * n
    assert agree == judged


def test_generators_are_inside_and_on_the_boundary():
    A = contact_wrench_cone(X, Y, MU)
    G = wrench_cone_generators(X, Y, MU)
    values = A @ G
    assert values.max() <= 1e-12
    # Each generator is an extreme ray: it lies on at least 5 faces.
    assert ((np.abs(values) < 1e-12).sum(axis=0) >= 5).all()


def test_row_names_describe_violations():
    sole = SurfaceContact("left_sole", half_length=X, half_width=Y, mu=MU)
    # CoP at x = +0.2 m (beyond the front edge X = 0.12): tau_y = -x f_z.
    check = check_wrench_cone(sole, [0, 0, 100.0, 0, -20.0, 0])
    assert not check.inside[0]
    assert check.violations() == ["CoP outside the sole along +x (tau_y < -X f_z)"]
    check = check_wrench_cone(sole, [0, 90.0, 100.0, 0, 0, 0])
    assert check.violations() == ["slip along +y (f_y > mu f_z)"]
    check = check_wrench_cone(sole, [0, 0, 100.0, 0, 0, 30.0])
    assert check.violations()[0].startswith("yaw torque too high")
    inside = check_wrench_cone(sole, [1.0, -2.0, 100.0, 0.5, -0.3, 0.1])
    assert inside.inside[0] and inside.margin[0] > 0
    assert len(CWC_ROW_NAMES) == 16


def test_pyramids_nest_around_the_exact_cone():
    rng = np.random.default_rng(1)
    f = rng.normal(size=(20_000, 3)) + [0, 0, 1.0]
    exact = check_friction_cone(f, MU).inside
    for k in (4, 6, 8, 16):
        inner = (f @ friction_pyramid(MU, k, inner=True).T <= 0).all(axis=1)
        outer = (f @ friction_pyramid(MU, k, inner=False).T <= 0).all(axis=1)
        assert not (inner & ~exact).any(), "inner pyramid accepted a force outside the cone"
        assert not (exact & ~outer).any(), "outer pyramid rejected a force inside the cone"
        assert inner.sum() < exact.sum() < outer.sum()
    A4 = friction_pyramid(MU, 4)
    assert_allclose(np.abs(A4[:, :2]).max(axis=1), 1.0)
    assert_allclose(A4[:, 2], -MU / np.sqrt(2))


@settings(max_examples=300, deadline=None)
@given(
    fn=st.floats(1e-6, 1e4),
    angle=st.floats(0, 2 * np.pi),
    ratio=st.floats(0.0, 3.0),
    mu=st.floats(0.05, 2.0),
)
def test_exact_cone_margin_and_utilisation(fn, angle, ratio, mu):
    ft = ratio * mu * fn
    f = np.array([ft * np.cos(angle), ft * np.sin(angle), fn])
    check = check_friction_cone(f, mu, tol=0.0)
    assert check.utilisation[0] == pytest.approx(ratio, rel=1e-9, abs=1e-12)
    assert check.margin[0] == pytest.approx(mu * fn - ft, rel=1e-9, abs=1e-9)
    if ratio < 1 - 1e-9:
        assert check.inside[0]
    if ratio > 1 + 1e-9:
        assert not check.inside[0]


def test_world_axes_and_tilted_normals():
    rng = np.random.default_rng(2)
    from scipy.spatial.transform import Rotation

    R = Rotation.random(random_state=3).as_matrix()
    A = contact_wrench_cone(X, Y, MU)
    A_world = in_world_axes(A, R)
    w_local = wrench_cone_generators(X, Y, MU) @ rng.exponential(size=16)
    w_world = np.r_[R @ w_local[:3], R @ w_local[3:]]
    assert_allclose(A_world @ w_world, A @ w_local, atol=1e-12)
    contact = PointContact("hand", mu=MU, normal=[1.0, 0.0, 0.0])
    P = in_world_axes(friction_pyramid(MU), normal_rotation(contact.normal))
    assert (P @ [1.0, 0.1, -0.1] <= 0).all() and not (P @ [-1.0, 0.0, 0.0] <= 0).all()
    assert check_friction_cone([1.0, 0.1, -0.1], MU, normal=[1, 0, 0]).inside[0]
