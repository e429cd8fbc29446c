"""The vectorised pieces of the log checks, each tied to an independent reference: the
manifold difference to ``pin.difference`` row by row, the batch pass to single Pinocchio
calls. (Estimation's rows: tests/test_estimation_route.py.)"""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest

import wholebody as wb
from wholebody.errors import InvalidArgumentError
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
