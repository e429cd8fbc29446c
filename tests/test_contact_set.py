"""ContactSet against independent references: hand-written cones, corner-force LPs, the
old per-contact formulas, balance's wrench sum, and the cone-matrix layout."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import nnls
from scipy.spatial.transform import Rotation

from wholebody.balance import wrench_sum, wrenches_in_log_layout
from wholebody.contacts import PointContact, SurfaceContact
from wholebody.errors import InvalidArgumentError
from wholebody.friction import (
    PULLING,
    SLIPPING,
    VIOLATION_NAMES,
    ContactSet,
    check_friction_cone,
    check_wrench_cone,
    contact_wrench_cone,
    friction_pyramid,
    normal_rotation,
)

from ._cone_reference import corner_lp_member

X, Y = 0.11, 0.045
SOLES = [
    SurfaceContact("left_sole", half_length=X, half_width=Y, mu=0.7),
    SurfaceContact("right_sole", half_length=0.09, half_width=0.05, mu=0.5),
]
POINTS = [PointContact("hand", mu=0.6, normal=[1.0, 0.2, 0.1]), PointContact("toe", mu=0.9)]
MIXED = [SOLES[0], POINTS[0], SOLES[1], POINTS[1]]


def random_log(contacts, N, rng):
    """Wrenches (N, k, 6) world axes and rotations (N, k, 3, 3): half near the cones."""
    R = Rotation.random(N * len(contacts), random_state=rng.integers(1 << 30)).as_matrix()
    R = R.reshape(N, len(contacts), 3, 3)
    local = rng.normal(size=(N, len(contacts), 6)) * [30, 30, 60, 3, 3, 1]
    local[..., 2] += rng.uniform(-20, 200, size=(N, len(contacts)))
    W = np.concatenate(
        [
            np.einsum("nkij,nkj->nki", R, local[..., :3]),
            np.einsum("nkij,nkj->nki", R, local[..., 3:]),
        ],
        axis=-1,
    )
    return W, R, local


def test_check_matches_hand_computation_and_corner_lps():
    rng = np.random.default_rng(0)
    N = 300
    W, R, local = random_log(MIXED, N, rng)
    ev = ContactSet(MIXED).check(W, R, tol=1e-6)
    assert ev.margin.shape == ev.utilisation.shape == ev.worst.shape == (N, 4)
    judged = 0
    for j, c in enumerate(MIXED):
        f_local = local[:, j, :3]
        if isinstance(c, PointContact):
            n = c.normal
            fn = f_local @ n
            ft = np.linalg.norm(f_local - fn[:, None] * n, axis=1)
            assert_allclose(ev.margin[:, j], c.mu * fn - ft, rtol=0, atol=1e-9)
            assert_allclose(ev.normal_force[:, j], fn, rtol=0, atol=1e-9)
            pos = fn > 0
            assert_allclose(ev.utilisation[pos, j], ft[pos] / (c.mu * fn[pos]), rtol=1e-9)
            assert np.all(ev.worst[fn < 0, j] == PULLING)
            assert np.all(ev.worst[fn > 0, j] == SLIPPING)
            assert np.isnan(ev.cop[:, j]).all()
        else:
            A = contact_wrench_cone(c.half_length, c.half_width, c.mu)
            for i in range(N):
                values = A @ local[i, j] / np.linalg.norm(A, axis=1)
                assert ev.margin[i, j] == pytest.approx(-values.max(), abs=1e-9)
                # A sole pulled off the ground is named as such; otherwise its worst row.
                assert ev.worst[i, j] == (PULLING if local[i, j, 2] < 0 else np.argmax(values))
                if abs(values.max()) > 1e-6 * np.linalg.norm(local[i, j]):
                    judged += 1
                    inside = corner_lp_member(local[i, j], c.half_length, c.half_width, c.mu)
                    assert (ev.margin[i, j] > 0) == inside
            fz = local[:, j, 2]
            up = fz > 0
            cop = np.column_stack([-local[up, j, 4], local[up, j, 3]]) / fz[up, None]
            assert_allclose(ev.cop[up, j], cop, rtol=1e-12)
            assert np.isnan(ev.cop[~up, j]).all()
    assert judged > 0.95 * 2 * N
    # violated: the worst code where the margin is below -tol, -1 elsewhere.
    assert_allclose(ev.violated, np.where(ev.margin < -1e-6, ev.worst, -1))
    assert (ev.inside() == (ev.margin >= -1e-6)).all()
    names = ev.violation_names()
    i, j = np.argwhere(ev.violated >= 0)[0]
    assert f"{MIXED[j].name}: {VIOLATION_NAMES[ev.violated[i, j]]}" in names[i]


def test_check_agrees_with_the_single_contact_checks():
    rng = np.random.default_rng(1)
    W, R, local = random_log(MIXED, 200, rng)
    ev = ContactSet(MIXED).check(W, R)
    for j, c in enumerate(MIXED):
        if isinstance(c, SurfaceContact):
            one = check_wrench_cone(c, local[:, j], tol=0.0)
            assert_allclose(ev.margin[:, j], one.margin, rtol=0, atol=1e-12)
            # The set names a sole pulled off the ground; the single check gives its row.
            pushed = local[:, j, 2] >= 0
            assert (ev.worst[pushed, j] == one.worst_row[pushed]).all()
            assert (ev.worst[~pushed, j] == PULLING).all()
        else:
            one = check_friction_cone(local[:, j, :3], c.mu, c.normal, tol=0.0)
            assert_allclose(ev.margin[:, j], one.margin, rtol=0, atol=1e-12)
            assert_allclose(ev.utilisation[:, j], one.utilisation, rtol=1e-12)


def test_face_matrix_layout_generators_and_margins():
    rng = np.random.default_rng(2)
    cs = ContactSet(MIXED)
    assert cs.names == ("left_sole", "hand", "right_sole", "toe")
    assert cs.sizes == (6, 3, 6, 3) and cs.n == 18 and cs.n_rows == 40
    assert cs.row_names[0] == "left_sole: slip along +x (f_x > mu f_z)"
    assert len(cs.row_names) == cs.n_rows
    R = Rotation.random(4, random_state=3).as_matrix()
    G = cs.face_matrix(R)
    # Blocks written by hand: contact-frame faces, rotated to world axes.
    for c, Rj, rows, cols in zip(MIXED, R, cs.rows, cs.cols, strict=True):
        if isinstance(c, SurfaceContact):
            A = contact_wrench_cone(c.half_length, c.half_width, c.mu)
            block = np.hstack([A[:, :3] @ Rj.T, A[:, 3:] @ Rj.T])
        else:
            block = friction_pyramid(c.mu, 4) @ normal_rotation(c.normal).T @ Rj.T
        assert_allclose(G[rows, cols], block, rtol=0, atol=1e-12)
        G[rows, cols] = 0.0
    assert not G.any(), "entries outside the diagonal blocks"
    # Updating a reused buffer gives the same as a fresh build.
    out = np.zeros((cs.n_rows, cs.n))
    for seed in (4, 5):
        R2 = Rotation.random(4, random_state=seed).as_matrix()
        fresh = ContactSet(MIXED).face_matrix(R2)
        assert_allclose(cs.face_matrix(R2, out), fresh, rtol=0, atol=1e-15)
    # Generators: inside every face, and every x with G x <= 0 is a non-negative combination.
    V = cs.generators(R)
    G = cs.face_matrix(R)
    assert (G @ V <= 1e-12).all()
    for _ in range(20):
        x = V @ rng.exponential(size=V.shape[1])
        assert (G @ x <= 1e-9).all()
        _, residual = nnls(V, x)
        assert residual < 1e-9 * np.linalg.norm(x)
    # linear_margins by faces and by rotations agree with a per-contact hand computation.
    x = V @ rng.exponential(size=V.shape[1]) + rng.normal(scale=5.0, size=cs.n)
    by_faces = cs.linear_margins(x[None], faces=G)[0]
    by_rot = cs.linear_margins(x[None], rotations=R[None])[0]
    ref = [-(G[rows] @ x / np.linalg.norm(G[rows], axis=1)).max() for rows in cs.rows]
    assert_allclose(by_faces, ref, rtol=0, atol=1e-9)
    assert_allclose(by_rot, ref, rtol=0, atol=1e-9)


def test_newton_euler_matrix_is_balance_wrench_sum():
    rng = np.random.default_rng(6)
    cs = ContactSet(MIXED)
    positions = rng.normal(size=(4, 3))
    point = rng.normal(size=3)
    x = rng.normal(size=cs.n) * 50
    A_ne = cs.newton_euler_matrix(positions, point)
    f, m = wrench_sum(wrenches_in_log_layout(MIXED, x[None]), positions[None], point[None])
    assert_allclose(A_ne @ x, np.r_[f[0], m[0]], rtol=0, atol=1e-10)
    # A reused buffer updates the lever arms only.
    positions2 = rng.normal(size=(4, 3))
    A2 = cs.newton_euler_matrix(positions2, point, out=A_ne)
    f, m = wrench_sum(wrenches_in_log_layout(MIXED, x[None]), positions2[None], point[None])
    assert_allclose(A2 @ x, np.r_[f[0], m[0]], rtol=0, atol=1e-10)


def test_face_matrix_update_in_a_reused_buffer_equals_a_fresh_build():
    # The speed of the in-place update is measured by benchmarks/bench_control.py; here, that
    # reusing the buffer over changing rotations gives what a fresh build gives.
    cs = ContactSet(SOLES)
    out = cs.face_matrix(
        Rotation.random(2, random_state=7).as_matrix(), np.zeros((cs.n_rows, cs.n))
    )
    for seed in range(8, 12):
        R = Rotation.random(2, random_state=seed).as_matrix()
        np.testing.assert_array_equal(cs.face_matrix(R, out), ContactSet(SOLES).face_matrix(R))


def test_bad_inputs():
    cs = ContactSet(SOLES)
    with pytest.raises(InvalidArgumentError, match=r"rotations must have shape \(2, 3, 3\)"):
        cs.face_matrix(np.eye(3))
    with pytest.raises(InvalidArgumentError, match=r"wrenches must have shape \(N, 2, 6\)"):
        cs.check(np.zeros((5, 3, 6)), np.zeros((5, 3, 3, 3)))
    with pytest.raises(InvalidArgumentError, match=r"rotations must have shape \(5, 2, 3, 3\)"):
        cs.check(np.zeros((5, 2, 6)), np.zeros((4, 2, 3, 3)))
    with pytest.raises(InvalidArgumentError, match="out must be a C-contiguous float64 array"):
        cs.face_matrix(np.stack([np.eye(3)] * 2), np.zeros((12, 32)))
    with pytest.raises(InvalidArgumentError, match="exactly one of faces= and rotations="):
        cs.linear_margins(np.zeros(12))
    with pytest.raises(InvalidArgumentError, match="at least one contact"):
        ContactSet([])
    with pytest.raises(InvalidArgumentError, match="PointContact or SurfaceContact, got str"):
        ContactSet(["left_sole"])


def test_check_reproduces_the_log_checker_exactly(humanoid):
    """check_trajectory's per-contact cone figures on the shipped squat log (with an injected
    slip and a pull) are exactly ContactSet.check's on rotations obtained another way
    (Robot.placements per sample, not the checker's pass): the plumbing (rotations,
    slack, row names) is right. The cone formulas themselves are tested against hand
    computation and corner-force LPs above."""
    from pathlib import Path

    from wholebody.check import CheckOptions
    from wholebody.check.analysis import check_trajectory
    from wholebody.models import HUMANOID_SOLE_HALF_LENGTH, HUMANOID_SOLE_HALF_WIDTH
    from wholebody.trajectory import Trajectory

    path = Path(__file__).resolve().parents[1] / "data" / "humanoid_squat.npz"
    squat = Trajectory.load(path)
    feet = [
        SurfaceContact(
            f, half_length=HUMANOID_SOLE_HALF_LENGTH, half_width=HUMANOID_SOLE_HALF_WIDTH, mu=0.8
        )
        for f in ("left_sole", "right_sole")
    ]
    W = squat.contact_wrenches[:200].copy()
    W[50:60, 0, 0] += 400.0  # slip
    W[70:75, 1, 2] *= -1.0  # pull
    traj = Trajectory(
        squat.time[:200],
        squat.q[:200],
        squat.v[:200],
        squat.a[:200],
        squat.tau[:200],
        squat.joint_names,
        squat.contact_names,
        W,
    )
    report = check_trajectory(humanoid, traj, feet, CheckOptions(diagnose_causes=False))
    R = np.array(
        [
            [humanoid.placements(q, c.frame).se3().rotation for c in feet]
            for q in traj.for_robot(humanoid)[0]
        ]
    )
    tol = report.cone_tolerance * humanoid.weight
    ev = ContactSet(feet).check(W, R, tol=tol)
    assert_allclose(ev.margin, report.cone_margin, rtol=0, atol=1e-9)
    assert_allclose(ev.utilisation, report.utilisation, rtol=1e-12, atol=0)
    assert_allclose(ev.cop, report.cop, rtol=0, atol=1e-12)
    names = np.array(("",) + VIOLATION_NAMES, dtype=object)[ev.violated + 1]
    assert (names == report.violated_row).all()
    assert (ev.violated >= 0).sum() >= 15
