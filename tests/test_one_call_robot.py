"""One sample or N on the robot: ``Robot.state`` (one sample, raises) and ``Robot.check_batch``
(N samples, flags) decide each sample alike; ``Robot.placements`` takes ``q`` of shape (nq,)
or (N, nq) (or a State), and its result says which it holds (``is_batch``).

References: the renormalised quaternion is computed here (``q / |q|``), the placements by
Pinocchio's ``framesForwardKinematics`` on a fresh ``Data`` (all frames at once, another
algorithm than the per-frame update the robot uses)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import wholebody as wb
from wholebody.errors import FrameNotFoundError, InvalidArgumentError, StateError, StateWarning
from wholebody.robot import FramePlacements, StateCheck

FRAMES = ["left_sole", "torso", "right_hand"]


@pytest.fixture(scope="module")
def robot():
    return wb.load("humanoid")


@pytest.fixture(scope="module")
def states(robot):
    rng = np.random.default_rng(11)
    Q = np.array([robot.random_configuration(rng) for _ in range(6)])
    V = rng.normal(size=(6, robot.nv))
    A = rng.normal(size=(6, robot.nv))
    return Q, V, A


def _reference_placements(robot, q, frames):
    """Positions (k, 3) and rotations (k, 3, 3) from framesForwardKinematics, fresh Data."""
    model = robot.model
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    ids = [model.getFrameId(f) for f in frames]
    return (
        np.array([data.oMf[i].translation for i in ids]),
        np.array([data.oMf[i].rotation for i in ids]),
    )


# --- state checks -------------------------------------------------------------------------


def test_one_state_and_n_samples_are_checked_alike(robot, states):
    Q, V, A = states
    Q = Q.copy()
    Q[2, 3:7] *= 1 + 3e-8  # within 1e-6 of unit norm: renormalised
    many = robot.check_batch(q=Q, v=V, a=A)
    assert isinstance(many, StateCheck)
    assert many.flagged.tolist() == [False] * 6 and many.reasons == {}
    expected = Q[2, 3:7] / np.linalg.norm(Q[2, 3:7])
    np.testing.assert_allclose(many.arrays["q"][2, 3:7], expected, rtol=0, atol=1e-15)
    for i in range(6):
        if i == 2:
            with pytest.warns(StateWarning, match="renormalised"):
                one = robot.state(Q[i], V[i], A[i])
        else:
            one = robot.state(Q[i], V[i], A[i])
        for name in ("q", "v", "a"):
            np.testing.assert_allclose(
                getattr(one, name), many.arrays[name][i], rtol=0, atol=1e-15, err_msg=name
            )
        np.testing.assert_array_equal(one.v, V[i])


@pytest.mark.parametrize(
    ("field", "index", "value", "flag", "message"),
    [
        ("v", 4, np.nan, "v has non-finite values", r"v has non-finite values at indices \[4\]"),
        (
            "a",
            7,
            1e12,
            "a[7] = 1e+12 is beyond any physical magnitude",
            r"a\[7\] = 1e\+12 is beyond any physical magnitude",
        ),
        ("q", slice(3, 7), 0.0, "base quaternion is zero", r"base quaternion q\[3:7\] is zero"),
        (
            "q",
            3,
            0.9,
            "base quaternion norm off 1 by more than 1e-06",
            r"base quaternion q\[3:7\] has norm .* not 1",
        ),
    ],
)
def test_a_bad_sample_is_flagged_among_n_and_raises_alone(
    robot, states, field, index, value, flag, message
):
    Q, V, A = (x.copy() for x in states)
    bad = {"q": Q, "v": V, "a": A}[field]
    bad[3, index] = value
    many = robot.check_batch(q=Q, v=V, a=A)
    assert many.flagged.tolist() == [False, False, False, True, False, False]
    assert many.reasons[3].startswith(flag), many.reasons
    with pytest.raises(StateError, match=message):
        robot.state(Q[3], V[3], A[3])
    with pytest.raises(StateError, match=message):
        robot.inverse_dynamics(Q[3], V[3], A[3])
    # The good samples are the same alone and among N.
    for i in (0, 5):
        np.testing.assert_array_equal(robot.state(Q[i], V[i], A[i]).q, many.arrays["q"][i])


def test_other_named_arrays_of_n_samples_are_flagged(robot, states):
    Q = states[0]
    W = np.ones((6, 2, 6))
    W[1, 0, 2] = np.inf
    many = robot.check_batch(q=Q, wrenches=W)
    assert many.flagged.tolist() == [False, True, False, False, False, False]
    assert many.reasons == {1: "wrenches has non-finite values"}
    T = np.zeros((6, 3))
    T[4, 1] = 1e9
    many = robot.check_batch(q=Q, tau_measured=T)
    assert many.reasons == {
        4: "tau_measured[1] = 1e+09 is beyond any physical magnitude (|x| <= 1e+08)"
    }


# --- frame placements ---------------------------------------------------------------------


def test_placements_one_and_n_samples_agree_with_pinocchio(robot, states):
    Q = states[0]
    many = robot.placements(Q, FRAMES)
    assert isinstance(many, FramePlacements) and many.is_batch
    assert many.positions.shape == (6, 3, 3) and many.rotations.shape == (6, 3, 3, 3)
    assert not many.flagged.any() and many.reasons == {}
    for i in range(6):
        P, R = _reference_placements(robot, Q[i], FRAMES)
        one = robot.placements(Q[i], FRAMES)
        assert not one.is_batch and one.flagged is False and one.reasons == {}
        assert one.positions.shape == (3, 3) and one.rotations.shape == (3, 3, 3)
        for got in (one, FramePlacements(*(x[i] for x in many[:2]), False, {})):
            np.testing.assert_allclose(got.positions, P, rtol=0, atol=1e-14)
            np.testing.assert_allclose(got.rotations, R, rtol=0, atol=1e-14)
        # One frame: no frame axis, and se3(); a State gives the same.
        single = robot.placements(Q[i], "torso")
        assert single.positions.shape == (3,) and single.rotations.shape == (3, 3)
        np.testing.assert_allclose(single.se3().translation, P[1], rtol=0, atol=1e-14)
        np.testing.assert_allclose(single.se3().rotation, R[1], rtol=0, atol=1e-14)
        from_state = robot.placements(robot.state(Q[i]), "torso")
        np.testing.assert_array_equal(from_state.positions, single.positions)
        np.testing.assert_array_equal(from_state.rotations, single.rotations)
        np.testing.assert_allclose(many.se3(i, 2).translation, P[2], rtol=0, atol=1e-14)
        np.testing.assert_allclose(one.se3(0).rotation, R[0], rtol=0, atol=1e-14)
    torso = robot.placements(Q, "torso")
    assert torso.positions.shape == (6, 3)
    np.testing.assert_array_equal(torso.positions, many.positions[:, 1])


def test_placements_flag_a_bad_sample_among_n_and_raise_alone(robot, states):
    Q = states[0].copy()
    Q[4, 3:7] = 0.0
    many = robot.placements(Q, FRAMES)
    assert many.flagged.tolist() == [False] * 4 + [True, False]
    assert many.reasons == {4: "base quaternion is zero"}
    assert np.isnan(many.positions[4]).all() and np.isnan(many.rotations[4]).all()
    P, _ = _reference_placements(robot, Q[5], FRAMES)
    np.testing.assert_allclose(many.positions[5], P, rtol=0, atol=1e-14)
    with pytest.raises(StateError, match=r"base quaternion q\[3:7\] is zero"):
        robot.placements(Q[4], FRAMES)
    with pytest.raises(FrameNotFoundError, match="left_sol"):
        robot.placements(Q, ["left_sol"])
    with pytest.raises(InvalidArgumentError, match="names 3 placements, not one"):
        robot.placements(Q[0], FRAMES).se3()
    with pytest.raises(InvalidArgumentError, match="se3"):
        robot.placements(Q[0], FRAMES).se3(7)
