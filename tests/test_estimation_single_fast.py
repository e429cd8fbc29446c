"""The one-sample fast path (Newton-Euler mode, daqp on a kept workspace) gives what the
qpsolvers path gives, and leaves every other case to the full path."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose

import wholebody as wb
from wholebody.contacts import PointContact, SurfaceContact
from wholebody.errors import StateError
from wholebody.estimation import _single, build_estimation_problem, estimate_contact_wrenches
from wholebody.models import HUMANOID_STANDING_HEIGHT as H

from .test_estimation import FEET, MU, known_sample

ATOL = 1e-8  # [N], [N m]: the answer is unique (least norm), so any exact solver gives it


def _reference(robot, q, v, a, contacts, solver="quadprog"):
    """The same sample through qpsolvers: the problem built in full, another backend."""
    return build_estimation_problem(robot, q, v, a, contacts).solve(solver)


def _assert_same(fast, ref, contacts):
    assert fast.status == ref.status == "found"
    assert_allclose(fast.x, ref.x, rtol=0, atol=ATOL)
    for c in contacts:
        assert_allclose(fast.wrenches[c.name], ref.wrenches[c.name], rtol=0, atol=ATOL)
        assert_allclose(fast.wrenches_local[c.name], ref.wrenches_local[c.name], atol=ATOL)
        assert fast.cone_margins[c.name] == pytest.approx(ref.cone_margins[c.name], abs=ATOL)
        if c.size == 6:
            assert_allclose(
                fast.centres_of_pressure[c.name], ref.centres_of_pressure[c.name], atol=1e-10
            )
    assert_allclose(fast.newton_euler_residual.force, ref.newton_euler_residual.force, atol=ATOL)
    assert_allclose(fast.newton_euler_residual.moment, ref.newton_euler_residual.moment, atol=ATOL)
    assert fast.equations_residual == pytest.approx(ref.equations_residual, abs=ATOL)
    assert fast.data_residual == pytest.approx(ref.data_residual, abs=ATOL)
    assert (fast.rank, fast.identifiable, fast.mode) == (ref.rank, ref.identifiable, ref.mode)
    assert fast.identifiable_by_contact == ref.identifiable_by_contact
    assert fast.active == ref.active and fast.friction == ref.friction
    assert fast.reason == ref.reason == "" and fast.min_friction_scale is None


def test_fast_path_equals_quadprog_on_random_feasible_states(humanoid):
    """Soles and point contacts (rank from the SVD), 20 random feasible states each, in
    sequence (each daqp solve starts from the previous working set): every field equals
    quadprog's answer on the problem built in full, and the fast path did answer."""
    rng = np.random.default_rng(7)
    points = [PointContact(f, mu=MU, name=f"{f}_pt") for f in ("left_sole", "right_sole")]
    # Two points leave the moment about the line through them to nobody: rank 5, which
    # quadprog refuses (dependent equality rows); daqp called once, cold, through the
    # problem built in full is the reference there.
    for contacts, solver in ((FEET, "quadprog"), (points, "daqp")):
        for _ in range(20):
            q, v, a, _, _ = known_sample(humanoid, rng, contacts)
            fast = _single.estimate_one(humanoid, q, v, a, contacts, 4, 1e-6)
            assert fast is not None  # feasible and verified: the fast path's own answer
            assert fast.solver == "daqp"
            _assert_same(fast, _reference(humanoid, q, v, a, contacts, solver), contacts)
            # The public call takes the fast path and gives the same.
            public = estimate_contact_wrenches(humanoid, q, v, a, contacts)
            assert_allclose(public.x, fast.x, rtol=0, atol=1e-10)


def test_fast_path_on_g1_equals_the_qpsolvers_path():
    """The robot of the benchmark, two rectangular feet."""
    import warnings

    from wholebody.friction import wrench_cone_generators

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            robot = wb.load("g1")
        except wb.errors.MissingDependencyError:
            pytest.skip("G1 needs example-robot-data")
    frames = ("left_ankle_roll_link", "right_ankle_roll_link")
    feet = [SurfaceContact(f, half_length=0.12, half_width=0.05, mu=0.8) for f in frames]
    rng = np.random.default_rng(3)
    for _ in range(10):
        joints = {j: rng.uniform(-0.15, 0.15) for j in robot.joint_names}
        q = robot.q_from_named(joints, base_position=[0, 0, 0.75], beyond_limits=True)
        v = rng.normal(scale=0.3, size=robot.nv)
        ext = {}
        for c in feet:
            R = robot.placements(q, c.frame).se3().rotation
            local = wrench_cone_generators(0.12, 0.05, 0.8) @ rng.exponential(20.0, 16)
            ext[c.frame] = np.r_[R @ local[:3], R @ local[3:]]
        tau = rng.normal(scale=10.0, size=robot.nv - 6)
        a = robot.forward_dynamics(q, v, np.r_[np.zeros(6), tau], ext)
        fast = estimate_contact_wrenches(robot, q, v, a, feet)
        assert fast.solver == "daqp"
        _assert_same(fast, _reference(robot, q, v, a, feet), feet)


def test_infeasible_sample_gets_a_clear_status_and_the_next_is_found(humanoid):
    """The fast path gives nothing for an infeasible sample (daqp fails it, its workspace is
    dropped); the full path says infeasible, with a reason; the next feasible sample is
    found by the fast path again, equal to quadprog's."""
    q = humanoid.q_from_named({}, base_position=[0.0, 0.0, H])
    zero = np.zeros(humanoid.nv)
    a = zero.copy()
    a[1] = 1.2 * MU * 9.81  # a lateral acceleration no friction on these soles can carry
    assert _single.estimate_one(humanoid, q, zero, a, FEET, 4, 1e-6) is None
    est = estimate_contact_wrenches(humanoid, q, zero, a, FEET)
    assert est.status == "infeasible" and not est.found
    assert "no wrenches inside the cones meet the equations" in est.reason
    assert np.all(np.isfinite(est.x))
    assert est.newton_euler_residual.force_norm > 0.05 * humanoid.weight
    q2, v2, a2, _, _ = known_sample(humanoid, np.random.default_rng(1))
    again = _single.estimate_one(humanoid, q2, v2, a2, FEET, 4, 1e-6)
    assert again is not None
    _assert_same(again, _reference(humanoid, q2, v2, a2, FEET), FEET)


@pytest.mark.filterwarnings("ignore::Warning")
def test_other_backends_by_name_take_the_qpsolvers_path(humanoid):
    q, v, a, _, _ = known_sample(humanoid, np.random.default_rng(2))
    fast = estimate_contact_wrenches(humanoid, q, v, a, FEET)
    for solver in ("quadprog", "proxqp"):
        est = estimate_contact_wrenches(humanoid, q, v, a, FEET, solver=solver)
        assert est.solver == solver and est.status == "found"
        assert_allclose(est.x, fast.x, rtol=0, atol=1e-4 * humanoid.weight)
    assert_allclose(
        estimate_contact_wrenches(humanoid, q, v, a, FEET, solver="quadprog").x,
        fast.x,
        rtol=0,
        atol=ATOL,
    )


def test_fast_path_follows_the_robot_and_the_tolerance(humanoid):
    """A frame added (the model and its data are copied) and a changed gravity are read
    at the next call, not from the workspace; a tolerance below what daqp reaches leaves
    the sample to the full path's verification."""
    robot = wb.load("humanoid")
    rng = np.random.default_rng(4)
    q, v, a, _, _ = known_sample(robot, rng)
    before = estimate_contact_wrenches(robot, q, v, a, FEET)
    robot.add_frame("fast_path_marker", "left_sole", [0.0, 0.0, 0.1])
    after = estimate_contact_wrenches(robot, q, v, a, FEET)
    assert_allclose(after.x, before.x, rtol=0, atol=1e-10)
    robot.gravity_vector = [0.0, 0.0, -9.0]
    moon = estimate_contact_wrenches(robot, q, v, a, FEET)
    _assert_same(moon, _reference(robot, q, v, a, FEET), FEET)
    assert abs(moon.x[2] + moon.x[8] - before.x[2] - before.x[8]) > 0.5 * robot.mass
    # Failing direction: a limit no answer meets is not "found" by the fast path.
    assert _single.estimate_one(robot, q, v, a, FEET, 4, 1e-30) is None


def test_bad_input_still_raises_typed_errors(humanoid):
    zero = np.zeros(humanoid.nv)
    q = humanoid.q_from_named({}, base_position=[0.0, 0.0, H])
    with pytest.raises(StateError, match="q"):
        estimate_contact_wrenches(humanoid, q[:-1], zero, zero, FEET)
    bad_v = zero.copy()
    bad_v[3] = np.nan
    with pytest.raises(StateError):
        estimate_contact_wrenches(humanoid, q, bad_v, zero, FEET)
    with pytest.raises(StateError, match="unique"):
        estimate_contact_wrenches(humanoid, q, zero, zero, [FEET[0], FEET[0]])


def test_lazy_fields_survive_pickling_and_later_calls(humanoid):
    """The derived fields come from the sample's own copies: a later call (which reuses the
    workspace's buffers) does not change an earlier estimate."""
    rng = np.random.default_rng(5)
    q, v, a, _, _ = known_sample(humanoid, rng)
    first = estimate_contact_wrenches(humanoid, q, v, a, FEET)
    ref = _reference(humanoid, q, v, a, FEET)
    q2, v2, a2, _, _ = known_sample(humanoid, rng)
    estimate_contact_wrenches(humanoid, q2, v2, a2, FEET)
    _assert_same(first, ref, FEET)
    copy = pickle.loads(pickle.dumps(estimate_contact_wrenches(humanoid, q, v, a, FEET)))
    _assert_same(copy, ref, FEET)


def test_wrenches_read_alone_then_the_rest(humanoid):
    # The wrenches of a fast estimate are read from x without deriving the other fields; the
    # rest, derived later, keeps the same wrench objects and equals quadprog's answer, and an
    # estimate pickled after reading only its wrenches carries every field.
    rng = np.random.default_rng(11)
    q, v, a, _, _ = known_sample(humanoid, rng, FEET)
    fast = _single.estimate_one(humanoid, q, v, a, FEET, 4, 1e-6)
    assert fast is not None
    first = fast.wrenches
    assert "_derive" in fast.__dict__  # the rest not derived yet
    copy = pickle.loads(pickle.dumps(fast))
    assert "_wrenches_of" not in copy.__dict__ and "_derive" not in copy.__dict__
    ref = _reference(humanoid, q, v, a, FEET)
    _assert_same(fast, ref, FEET)
    _assert_same(copy, ref, FEET)
    assert fast.wrenches is first
