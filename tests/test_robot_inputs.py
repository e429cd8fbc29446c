"""Robot inputs: no hidden mutation, typed errors for bad frames, ids, states and URDFs, and
the one-pass contact-dynamics bundle against the individual calls.

Tolerances: identities computed by a second algorithm agree to 1e-9 (absolute, unit-scale
states); bundled outputs equal the individual calls to 1e-12.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose

import wholebody as wb
from wholebody.errors import (
    FrameNotFoundError,
    InvalidArgumentError,
    InvalidJointError,
    ModelError,
    ModelWarning,
    StateError,
    URDFParseError,
)
from wholebody.robot import MAX_STATE_MAGNITUDE

from .conftest import random_states

# --- no hidden mutation -------------------------------------------------------------------


def test_coriolis_leaves_gravity_alone_and_matches_the_coriolis_matrix(humanoid):
    g0 = humanoid.model.gravity.linear.copy()
    for q, v, _ in random_states(humanoid, 5):
        cv = humanoid.coriolis(q, v)
        assert_allclose(humanoid.model.gravity.linear, g0, rtol=0, atol=0)
        # Independent routes: C(q, v) @ v, and nle - g from a fresh Pinocchio data.
        assert_allclose(cv, humanoid.coriolis_matrix(q, v) @ v, rtol=0, atol=1e-9)
        d = humanoid.model.createData()
        ref = pin.nonLinearEffects(humanoid.model, d, q, v) - pin.computeGeneralizedGravity(
            humanoid.model, d, q
        )
        assert_allclose(cv, ref, rtol=0, atol=1e-9)


def test_add_frame_and_gravity_do_not_touch_the_callers_model():
    model = pin.buildModelFromUrdf(str(wb.models.path("humanoid")), pin.JointModelFreeFlyer())
    nframes, gravity = model.nframes, model.gravity.linear.copy()
    robot = wb.Robot.from_model(model)
    robot.add_frame("left_toe", "left_sole", [0.12, 0.0, 0.0])
    robot.gravity_vector = [0.0, 0.0, -1.62]
    assert model.nframes == nframes and not model.existFrame("left_toe")
    assert_allclose(model.gravity.linear, gravity, rtol=0, atol=0)
    assert robot.model.nframes == nframes + 1 and robot.model is not model
    assert_allclose(robot.gravity_vector, [0, 0, -1.62], rtol=0, atol=0)
    # The robot's own gravity is used: at rest, g(q)'s vertical base force is m |g|.
    assert robot.gravity(robot.neutral())[2] == pytest.approx(robot.mass * 1.62, rel=1e-12)
    q = robot.neutral()
    assert_allclose(
        robot.frame_position(q, "left_toe") - robot.frame_position(q, "left_sole"),
        [0.12, 0, 0],
        rtol=0,
        atol=1e-15,
    )


def test_results_are_not_overwritten_by_later_calls(humanoid):
    (q1, v1, a1), (q2, v2, a2) = random_states(humanoid, 2, seed=4)
    calls = {
        "M": lambda q, v, a: humanoid.mass_matrix(q),
        "C": lambda q, v, a: humanoid.coriolis_matrix(q, v),
        "Cv": lambda q, v, a: humanoid.coriolis(q, v),
        "g": lambda q, v, a: humanoid.gravity(q),
        "h": lambda q, v, a: humanoid.nonlinear_effects(q, v),
        "rnea": lambda q, v, a: humanoid.inverse_dynamics(q, v, a),
        "aba": lambda q, v, a: humanoid.forward_dynamics(q, v, a),
        "J": lambda q, v, a: humanoid.frame_jacobian(q, "left_sole"),
        "drift": lambda q, v, a: humanoid.frame_drift(q, v, "left_sole"),
        "twist": lambda q, v, a: humanoid.frame_velocity(q, v, "left_sole"),
        "com": lambda q, v, a: humanoid.com(q),
        "Jcom": lambda q, v, a: humanoid.com_jacobian(q),
        "hg": lambda q, v, a: humanoid.centroidal_momentum(q, v),
        "dhg": lambda q, v, a: humanoid.centroidal_momentum_rate(q, v, a),
    }
    for name, f in calls.items():
        first = f(q1, v1, a1)
        kept = first.copy()
        f(q2, v2, a2)
        assert_allclose(first, kept, rtol=0, atol=0, err_msg=name)


def test_pickled_robot_keeps_added_frames_and_gravity():
    robot = wb.load("humanoid")
    robot.add_frame("left_toe", "left_sole", [0.12, 0.0, 0.0])
    robot.gravity_vector = [0.0, 0.0, -3.0]
    copy = pickle.loads(pickle.dumps(robot))
    q = robot.neutral()
    assert_allclose(copy.frame_position(q, "left_toe"), robot.frame_position(q, "left_toe"))
    assert_allclose(copy.gravity(q), robot.gravity(q), rtol=0, atol=0)


# --- frames and ids -------------------------------------------------------------------------


def test_frame_given_as_non_string(humanoid):
    q = humanoid.neutral()
    with pytest.raises(
        InvalidArgumentError, match="frame must be a frame name \\(str\\), got int 5"
    ):
        humanoid.frame_jacobian(q, 5)
    with pytest.raises(InvalidArgumentError, match="got int 5"):
        humanoid.placements(q, ["left_sole", 5])
    with pytest.raises(InvalidArgumentError, match="got float 1.5"):
        humanoid.placements(q, 1.5)
    with pytest.raises(InvalidArgumentError, match="got NoneType None"):
        humanoid.frame_id(None)
    with pytest.raises(FrameNotFoundError, match="frame 'nope' not found"):
        humanoid.frame_drift(q, np.zeros(humanoid.nv), "nope")


@pytest.mark.parametrize("bad", ["nframes", 10**6, -1])
def test_out_of_range_frame_ids_are_refused(humanoid, bad):
    n = humanoid.model.nframes
    fid = n if bad == "nframes" else bad
    q, v = humanoid.neutral(), np.zeros(humanoid.nv)
    msg = f"frame id {fid} \\(frame_ids\\[1\\]\\) is out of range: valid ids are 0 to {n - 1}"
    ids = [humanoid.frame_id("left_sole"), fid]
    with pytest.raises(InvalidArgumentError, match=msg):
        humanoid.contact_pass(q, v, v, ids, jacobians=False)
    with pytest.raises(InvalidArgumentError, match=msg):
        humanoid.contact_pass(q, v, v, tuple(ids), jacobians=True)
    # A valid list still works after the refusal (the cache holds only valid lists).
    kin = humanoid.contact_pass(q, v, v, ids[:1], jacobians=False)
    assert_allclose(kin.positions[0], humanoid.frame_position(q, "left_sole"), rtol=0, atol=1e-15)
    assert_allclose(kin.com, humanoid.com(q), rtol=0, atol=1e-15)


def test_frame_ids_that_are_not_ints(humanoid):
    q, v = humanoid.neutral(), np.zeros(humanoid.nv)
    with pytest.raises(
        InvalidArgumentError, match=r"frame_ids\[0\] must be a frame index \(int\), got str"
    ):
        humanoid.contact_pass(q, v, v, ["left_sole"], jacobians=False)
    with pytest.raises(InvalidArgumentError, match="frame_ids must be a sequence"):
        humanoid.contact_pass(q, v, v, 3, jacobians=False)
    # numpy integer ids are fine.
    fid = humanoid.frame_id("left_sole")
    kin = humanoid.contact_pass(q, v, v, np.array([fid]), jacobians=False)
    assert_allclose(kin.positions[0], humanoid.frame_position(q, "left_sole"), rtol=0, atol=1e-15)


def test_add_frame_errors(humanoid):
    robot = wb.load("humanoid")
    with pytest.raises(ModelError, match="frame 'left_sole' already exists in robot 'humanoid'"):
        robot.add_frame("left_sole", "torso", [0, 0, 0])
    with pytest.raises(InvalidArgumentError, match="name must be a frame name"):
        robot.add_frame(3, "torso", [0, 0, 0])
    with pytest.raises(ModelError, match="not a rotation matrix"):
        robot.add_frame("x", "torso", 2 * np.eye(4))


def test_load_with_a_non_string_name():
    with pytest.raises(
        InvalidArgumentError, match="name must be a robot name \\(str\\) or a path, got list"
    ):
        wb.load(["g1"])


def test_from_urdf_with_a_non_path():
    with pytest.raises(InvalidArgumentError, match="path must be a URDF file path"):
        wb.Robot.from_urdf(3)
    with pytest.raises(InvalidArgumentError, match="text must be URDF text"):
        wb.Robot.from_urdf_string(b"<robot/>")


def test_policy_is_checked():
    with pytest.raises(
        InvalidArgumentError,
        match="validate must be one of 'raise', 'warn', 'ignore', got 'strict'",
    ):
        wb.load("humanoid", validate="strict")


# --- state magnitudes -----------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:overflow encountered in dot")  # pytest shows all
def test_huge_velocity_is_refused_naming_index_and_value(humanoid):
    v = np.ones(humanoid.nv)
    v[3] = 1e200
    with pytest.raises(
        StateError, match=r"v\[3\] = 1e\+200 is beyond any physical magnitude \(\|x\| <= 1e\+08\)"
    ):
        humanoid.nonlinear_effects(humanoid.neutral(), v)
    with pytest.raises(StateError, match=r"v\[0\] = 1e\+200 is beyond .* \(and 24 more\)"):
        humanoid.nonlinear_effects(humanoid.neutral(), 1e200 * np.ones(humanoid.nv))
    a = np.zeros(humanoid.nv)
    a[5] = -2e8
    with pytest.raises(StateError, match=r"a\[5\] = -2e\+08 is beyond"):
        humanoid.inverse_dynamics(humanoid.neutral(), np.zeros(humanoid.nv), a)
    with pytest.raises(StateError, match=r"tau\[0\] = 1e\+300"):
        humanoid.forward_dynamics(humanoid.neutral(), np.zeros(humanoid.nv), np.r_[1e300, a[1:]])


def test_large_but_physical_states_pass(humanoid):
    # A UTM base position (5e6 m) and entries just inside the limit on every coordinate.
    q = humanoid.neutral()
    shift = np.array([5e6, 5e6, 100.0])
    q[:3] = shift
    assert_allclose(humanoid.com(q) - humanoid.com(humanoid.neutral()), shift, rtol=0, atol=1e-8)
    v = np.full(humanoid.nv, 0.9 * MAX_STATE_MAGNITUDE)  # norm beyond 1e8, each entry inside
    assert_allclose(humanoid.state(q, v).v, v, rtol=0, atol=0)


def test_check_batch_flags_huge_samples(humanoid):
    N = 4
    q = np.tile(humanoid.neutral(), (N, 1))
    v = np.zeros((N, humanoid.nv))
    v[1, 3] = 1e200
    v[2, 0] = np.nan
    q[3, 0] = 3e9
    _, bad, reasons = humanoid.check_batch(q=q, v=v, a=np.zeros((N, humanoid.nv)))
    assert bad.tolist() == [False, True, True, True]
    assert reasons[1] == "v[3] = 1e+200 is beyond any physical magnitude (|x| <= 1e+08)"
    assert reasons[2] == "v has non-finite values"
    assert reasons[3].startswith("q[0] = 3e+09 is beyond")


def test_non_arrays_and_complex_states(humanoid):
    with pytest.raises(StateError, match="q must have shape \\(26,\\), got \\(\\)"):
        humanoid.gravity(1.0)
    with pytest.raises(StateError, match=r"v\[0\] = 0j is not a real number \(complex128 array\)"):
        humanoid.nonlinear_effects(humanoid.neutral(), np.zeros(humanoid.nv, dtype=complex))
    # A list and an int array are converted.
    assert_allclose(
        humanoid.gravity(humanoid.neutral().tolist()), humanoid.gravity(humanoid.neutral())
    )
    fixed = wb.load("two_link_arm")
    assert_allclose(fixed.gravity(np.zeros(2, dtype=int)), fixed.gravity(np.zeros(2)))


# --- URDF structure -------------------------------------------------------------------------

BODY = (
    '<inertial><mass value="1"/>'
    '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>'
)


def _urdf(links, joints):
    text = '<robot name="t">'
    text += "".join(f'<link name="{n}">{BODY}</link>' for n in links)
    for name, parent, child, extra in joints:
        text += (
            f'<joint name="{name}" type="revolute"><parent link="{parent}"/>'
            f'<child link="{child}"/><axis xyz="0 0 1"/>{extra}</joint>'
        )
    return text + "</robot>"


LIMIT = '<limit lower="-1" upper="1" effort="1" velocity="1"/>'


def test_duplicated_link_name():
    text = _urdf(["base", "arm", "arm"], [("hinge", "base", "arm", LIMIT)])
    with pytest.raises(URDFParseError, match="link name 'arm' is used twice"):
        wb.Robot.from_urdf_string(text)


def test_joint_to_a_missing_link():
    text = _urdf(
        ["base", "arm"], [("hinge", "base", "arm", LIMIT), ("wrist", "arm", "hand", LIMIT)]
    )
    with pytest.raises(
        InvalidJointError, match="joint 'wrist' has child link 'hand', which does not exist"
    ):
        wb.Robot.from_urdf_string(text)
    text = _urdf(["base", "arm"], [("hinge", "bse", "arm", LIMIT)])
    with pytest.raises(InvalidJointError, match="joint 'hinge' has parent link 'bse'"):
        wb.Robot.from_urdf_string(text, validate="ignore")  # structural: whatever the policy


def test_two_roots_and_loops():
    with pytest.raises(URDFParseError, match="2 separate trees \\(roots 'a', 'b'\\)"):
        wb.Robot.from_urdf_string(_urdf(["a", "b"], []))
    text = _urdf(["a", "b"], [("j", "a", "b", LIMIT), ("k", "b", "a", LIMIT)])
    with pytest.raises(URDFParseError, match="form a loop"):
        wb.Robot.from_urdf_string(text)


def test_inverted_joint_limit_follows_the_policy():
    inverted = '<limit lower="1.5" upper="-0.5" effort="1" velocity="1"/>'
    text = _urdf(["base", "arm"], [("hinge", "base", "arm", inverted)])
    msg = "joint 'hinge' has an inverted limit: lower 1.5 > upper -0.5"
    with pytest.raises(InvalidJointError, match=msg):
        wb.Robot.from_urdf_string(text)
    with pytest.warns(ModelWarning, match=msg):
        wb.Robot.from_urdf_string(text, validate="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        robot = wb.Robot.from_urdf_string(text, validate="ignore")
    assert robot.nv == 7


def test_checks_see_in_place_changes_of_a_state_that_passed():
    # An array changed in place after a call that passed is checked again at the next call.
    robot = wb.load("humanoid")
    q, v = robot.neutral(), np.zeros(robot.nv)
    robot.nonlinear_effects(q, v)
    v[4] = np.nan
    with pytest.raises(StateError, match=r"v has non-finite values at indices \[4\]: nan"):
        robot.nonlinear_effects(q, v)
    v[4] = 0.0
    q[3:7] = [0.0, 0.0, 0.0, 2.0]
    with pytest.raises(StateError, match=r"base quaternion q\[3:7\] has norm 2"):
        robot.nonlinear_effects(q, v)
    # Same values in another shape: converted, not refused.
    q = robot.neutral()
    assert_allclose(robot.gravity(q.reshape(-1, 1)), robot.gravity(q), rtol=0, atol=0)
    a = np.zeros(robot.nv)
    robot.inverse_dynamics(q, v, a)
    with pytest.raises(StateError, match=r"a must have shape \(25,\), got \(26,\)"):
        robot.inverse_dynamics(q, v, np.zeros(robot.nv + 1))


def test_placements_over_a_log_equal_single_placements():
    robot = wb.load("humanoid")
    rng = np.random.default_rng(3)
    Q = np.array([robot.random_configuration(rng) for _ in range(5)])
    Q[2, 3:7] = 0.0  # a bad quaternion: that sample is NaN, the others are placed
    positions, rotations, flagged, _ = robot.placements(Q, ["left_sole", "torso"])
    assert positions.shape == (5, 2, 3) and rotations.shape == (5, 2, 3, 3)
    assert np.isnan(positions[2]).all() and flagged.tolist() == [False, False, True, False, False]
    for i in (0, 1, 3, 4):
        for j, frame in enumerate(["left_sole", "torso"]):
            M = robot.placements(Q[i], frame).se3()
            np.testing.assert_allclose(positions[i, j], M.translation, rtol=0, atol=1e-14)
            np.testing.assert_allclose(rotations[i, j], M.rotation, rtol=0, atol=1e-14)
