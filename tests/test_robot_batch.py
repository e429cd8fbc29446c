"""The vectorised pieces of batch estimation and of the log checks, each tied to an
independent reference: the manifold difference to ``pin.difference`` row by row, the batch
pass to single Pinocchio calls, the batch Newton-Euler rows and face rows to
:class:`ContactSet`'s per-sample matrices and to the rotated local faces."""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest

import wholebody as wb
from wholebody.contacts import PointContact, SurfaceContact
from wholebody.errors import InvalidArgumentError
from wholebody.estimation._daqp_batch import newton_euler_rows, world_face_rows
from wholebody.friction import ContactSet
from wholebody.robot.batch import (
    centroidal_frames_rows,
    configuration_difference,
    consecutive_differences,
)

TOL = 1e-12  # manifold difference against pin.difference, absolute [m, rad]


def _g1() -> wb.Robot:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return wb.load("g1")
        except wb.errors.MissingDependencyError:
            pytest.skip("example-robot-data (G1) not installed")


def _pairs(robot: wb.Robot, n: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Far pairs, near pairs, and the same rotation with the quaternion's sign flipped."""
    rng = np.random.default_rng(seed)
    Q0 = np.array([robot.random_configuration(rng) for _ in range(n)])
    Q1 = np.array([robot.random_configuration(rng) for _ in range(n)])
    near = np.array([pin.integrate(robot.model, q, 1e-6 * rng.normal(size=robot.nv)) for q in Q0])
    flipped = Q0.copy()
    flipped[:, 3:7] *= -1.0
    # Rotations near pi (the log's branch point), and the identity.
    half_turn = Q0.copy()
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    half_turn[:, 3:6] = axis * np.sin(0.5 * (np.pi - 1e-7))
    half_turn[:, 6] = np.cos(0.5 * (np.pi - 1e-7))
    ident = Q0.copy()
    ident[:, 3:7] = [0.0, 0.0, 0.0, 1.0]
    return [(Q0, Q1), (Q1, Q0), (Q0, near), (Q0, flipped), (ident, half_turn), (ident, Q1)]


@pytest.mark.parametrize("which", ["humanoid", "g1"])
def test_configuration_difference_matches_pinocchio(which, humanoid):
    robot = humanoid if which == "humanoid" else _g1()
    for Q0, Q1 in _pairs(robot, 200, seed=3):
        ref = np.array([pin.difference(robot.model, a, b) for a, b in zip(Q0, Q1, strict=True)])
        got = configuration_difference(robot, Q0, Q1)
        np.testing.assert_allclose(got, ref, rtol=0, atol=TOL)


def test_consecutive_differences_match_pinocchio(humanoid):
    """The tangents between consecutive samples of a log (rows of the result), including a
    quaternion whose sign flips between samples."""
    rng = np.random.default_rng(8)
    Q = np.array([humanoid.random_configuration(rng) for _ in range(60)])
    Q[7, 3:7] = -Q[6, 3:7]  # the same rotation as the sample before, the other sign
    ref = np.array([pin.difference(humanoid.model, Q[i], Q[i + 1]) for i in range(59)])
    got = consecutive_differences(humanoid, Q)
    assert got.shape == (humanoid.nv, 59)
    np.testing.assert_allclose(got.T, ref, rtol=0, atol=TOL)


def test_configuration_difference_other_joints():
    """Continuous (cos, sin), spherical and planar joints on a free-floating chain."""
    model = pin.Model()
    inertia = pin.Inertia(1.0, np.zeros(3), np.diag([0.02, 0.03, 0.04]))  # physical, fixed
    parent = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root")
    model.appendBodyToJoint(parent, inertia, pin.SE3.Identity())
    for name, joint in (
        ("continuous", pin.JointModelRUBZ()),
        ("revolute", pin.JointModelRY()),
        ("spherical", pin.JointModelSpherical()),
        ("planar", pin.JointModelPlanar()),
        ("prismatic", pin.JointModelPX()),
    ):
        parent = model.addJoint(parent, joint, pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.1])), name)
        model.appendBodyToJoint(parent, inertia, pin.SE3.Identity())
    robot = wb.Robot.from_model(model)
    pin.seed(7)
    lower, upper = -np.ones(model.nq), np.ones(model.nq)
    Q0 = np.array([pin.randomConfiguration(model, lower, upper) for _ in range(100)])
    Q1 = np.array([pin.randomConfiguration(model, lower, upper) for _ in range(100)])
    ref = np.array([pin.difference(model, a, b) for a, b in zip(Q0, Q1, strict=True)])
    np.testing.assert_allclose(configuration_difference(robot, Q0, Q1), ref, rtol=0, atol=TOL)


def test_batch_pass_matches_single_calls(humanoid):
    robot = humanoid
    rng = np.random.default_rng(4)
    N = 12
    Q = np.array([robot.random_configuration(rng) for _ in range(N)])
    V, A = rng.normal(size=(N, robot.nv)), rng.normal(size=(N, robot.nv))
    frames = ["left_sole", "right_sole", "torso"]
    ids = [robot.frame_id(f) for f in frames]
    com, rate = np.full((N, 3), np.nan), np.full((N, 6), np.nan)
    P, R = np.full((N, 3, 3), np.nan), np.full((N, 2, 3, 3), np.nan)
    rows = [0, 2, 3, 7, 11]  # the others stay NaN
    centroidal_frames_rows(robot, Q, V, A, rows, ids, com, rate, P, R, n_rotations=2)
    for i in range(N):
        if i not in rows:
            assert np.isnan(com[i]).all() and np.isnan(P[i]).all() and np.isnan(R[i]).all()
            continue
        np.testing.assert_allclose(com[i], robot.com(Q[i]), rtol=0, atol=1e-12)
        ref_rate = robot.centroidal_momentum_rate(Q[i], V[i], A[i])
        np.testing.assert_allclose(rate[i], ref_rate, rtol=0, atol=1e-9)
        for j, f in enumerate(frames):
            placement = robot.placements(Q[i], f).se3()
            np.testing.assert_allclose(P[i, j], placement.translation, rtol=0, atol=1e-12)
            if j < 2:
                np.testing.assert_allclose(R[i, j], placement.rotation, rtol=0, atol=1e-12)


def test_batch_pass_rejects_bad_frame_ids(humanoid):
    z = np.zeros((1, 3))
    with pytest.raises(InvalidArgumentError, match=r"frame id 100000 \(frame_ids\[0\]\) is out"):
        centroidal_frames_rows(
            humanoid, z, z, z, [0], [100000], z, np.zeros((1, 6)), np.zeros((1, 1, 3))
        )


def _sets() -> list[ContactSet]:
    return [
        ContactSet(
            [
                SurfaceContact("a", half_length=0.12, half_width=0.05, mu=0.8),
                SurfaceContact("b", half_length=0.1, half_width=0.04, mu=0.6),
            ]
        ),
        ContactSet([PointContact(f"p{i}", mu=0.7) for i in range(4)]),
        ContactSet(
            [
                PointContact("p", mu=0.5, normal=np.array([0.1, 0.2, 1.0])),
                SurfaceContact("s", half_length=0.1, half_width=0.04, mu=0.7),
            ],
            pyramid_faces=6,
        ),
    ]


def _rotations(n: int, k: int, seed: int) -> np.ndarray:
    from scipy.spatial.transform import Rotation

    return Rotation.random(n * k, random_state=seed).as_matrix().reshape(n, k, 3, 3)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_newton_euler_rows_equal_contact_set(index):
    cset = _sets()[index]
    rng = np.random.default_rng(index)
    P, c = rng.normal(size=(50, len(cset), 3)), rng.normal(size=(50, 3))
    ref = np.array([cset.newton_euler_matrix(p, g) for p, g in zip(P, c, strict=True)])
    np.testing.assert_array_equal(newton_euler_rows(cset, P, c), ref)  # same bits
    # And by its meaning: the total force and moment about c of random wrenches.
    x = rng.normal(size=(50, cset.n))
    f_tot, m_tot = np.zeros((50, 3)), np.zeros((50, 3))
    for j, cols in enumerate(cset.cols):
        w = x[:, cols]
        f_tot += w[:, :3]
        m_tot += np.cross(P[:, j] - c, w[:, :3]) + (w[:, 3:] if w.shape[1] == 6 else 0.0)
    got = np.einsum("nrc,nc->nr", newton_euler_rows(cset, P, c), x)
    np.testing.assert_allclose(got, np.hstack([f_tot, m_tot]), rtol=0, atol=1e-12)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_world_face_rows_equal_contact_set(index):
    cset = _sets()[index]
    R = _rotations(40, len(cset), seed=index)
    out = np.zeros((40, cset.n_rows, cset.n))
    world_face_rows(cset, R, out)
    ref = np.array([cset.face_matrix(r) for r in R])
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-15)
    # By its meaning: G x equals the local faces applied to x in each contact's axes.
    x = np.random.default_rng(index).normal(size=(40, cset.n))
    for j, (L, rows, cols) in enumerate(zip(cset.local_faces, cset.rows, cset.cols, strict=True)):
        w = x[:, cols]
        local = np.concatenate(
            [np.einsum("nji,nj->ni", R[:, j], w[:, p : p + 3]) for p in range(0, w.shape[1], 3)],
            axis=1,
        )
        got = np.einsum("nrc,nc->nr", out[:, rows], x)
        np.testing.assert_allclose(got, local @ L.T, rtol=0, atol=1e-12)


def test_chunked_daqp_path_matches_another_backend(humanoid, monkeypatch):
    """The chunked Newton-Euler daqp path (chunks of 7 here, so samples straddle chunk
    boundaries) against quadprog through the per-sample loop, with a contact schedule (one
    row with no active contact) and a known push at a point: the same least-norm wrenches
    (1e-6 N), the same statuses."""
    from wholebody.estimation import _daqp_batch, estimate_contact_wrenches_batch

    monkeypatch.setattr(_daqp_batch, "CHUNK", 7)
    robot = humanoid
    feet = [
        SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.8)
        for f in ("left_sole", "right_sole")
    ]
    rng = np.random.default_rng(11)
    N = 30
    Q = np.array([robot.q_from_named({}, base_position=[0, 0, 0.94]) for _ in range(N)])
    Q[:, 7:] += rng.uniform(-0.1, 0.1, size=(N, robot.nq - 7))
    V = rng.normal(scale=0.2, size=(N, robot.nv))
    A = rng.normal(scale=0.5, size=(N, robot.nv))
    active = np.ones((N, 2), dtype=bool)
    active[10:14, 1] = False
    active[20] = False
    push = {"torso": (rng.normal(scale=5.0, size=(N, 3)), rng.normal(size=(N, 3)))}
    kw = {"active": active, "external_wrenches": push}
    fast = estimate_contact_wrenches_batch(robot, Q, V, A, feet, **kw)
    other = estimate_contact_wrenches_batch(robot, Q, V, A, feet, solver="quadprog", **kw)
    assert list(fast.status) == list(other.status)
    assert (fast.status == "found").sum() >= 20
    found = fast.status == "found"
    np.testing.assert_allclose(fast.wrenches[found], other.wrenches[found], rtol=0, atol=1e-6)
    np.testing.assert_allclose(
        fast.residual_force[found], other.residual_force[found], rtol=0, atol=1e-6
    )
