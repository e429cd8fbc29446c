"""The one route of estimation (one sample as a chunk of one, N in chunks): the rows it writes
equal the contact set's own matrices, and its answers equal another backend's on the problem
built in full (quadprog through qpsolvers), for one sample, in sequence, and across chunks."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose

import wholebody as wb
from wholebody.contacts import PointContact, SurfaceContact
from wholebody.errors import StateError
from wholebody.estimation import _samples, build_estimation_problem, estimate_contact_wrenches
from wholebody.estimation.known import NO_KNOWN
from wholebody.models import HUMANOID_STANDING_HEIGHT as H

from .test_estimation import FEET, MU, known_sample

ATOL = 1e-8  # [N], [N m]: the answer is unique (least norm), so any exact solver gives it


def _reference(robot, q, v, a, contacts, solver="quadprog", **kw):
    """The same sample through qpsolvers: the problem built in full, another backend."""
    return build_estimation_problem(robot, q, v, a, contacts, **kw).solve(solver)


def _assert_same(est, ref, contacts):
    assert est.status == ref.status == "found"
    assert_allclose(est.x, ref.x, rtol=0, atol=ATOL)
    for c in contacts:
        assert_allclose(est.wrenches[c.name], ref.wrenches[c.name], rtol=0, atol=ATOL)
        assert_allclose(est.wrenches_local[c.name], ref.wrenches_local[c.name], atol=ATOL)
        assert est.cone_margins[c.name] == pytest.approx(ref.cone_margins[c.name], abs=ATOL)
        if c.size == 6:
            assert_allclose(
                est.centres_of_pressure[c.name], ref.centres_of_pressure[c.name], atol=1e-10
            )
    assert_allclose(est.newton_euler_residual.force, ref.newton_euler_residual.force, atol=ATOL)
    assert_allclose(est.newton_euler_residual.moment, ref.newton_euler_residual.moment, atol=ATOL)
    assert est.equations_residual == pytest.approx(ref.equations_residual, abs=ATOL)
    assert est.data_residual == pytest.approx(ref.data_residual, abs=ATOL)
    assert (est.rank, est.identifiable, est.mode) == (ref.rank, ref.identifiable, ref.mode)
    assert est.identifiable_by_contact == ref.identifiable_by_contact
    assert est.active == ref.active and est.friction == ref.friction
    assert est.reason == ref.reason == "" and est.min_friction_scale is None


SETS = [
    [
        SurfaceContact("left_sole", half_length=0.12, half_width=0.05, mu=0.8),
        SurfaceContact("right_sole", half_length=0.1, half_width=0.04, mu=0.6),
    ],
    [PointContact(f, mu=0.7, name=f"{f}_pt") for f in ("left_sole", "right_sole", "torso")],
    [
        PointContact("left_sole", mu=0.5, normal=np.array([0.1, 0.2, 1.0]), name="p"),
        SurfaceContact("right_sole", half_length=0.1, half_width=0.04, mu=0.7),
    ],
]


@pytest.mark.parametrize("index", [0, 1, 2])
def test_rows_equal_the_contact_sets_matrices(humanoid, index):
    """The chunk's rows from one product per part: the Newton-Euler rows and targets equal
    ContactSet.newton_euler_matrix and ``h - m g``, the cones its face_matrix, and the check
    rows ``[E, -t; -E, t; G / |g|, 0]``, for random states in a chunk of 5."""
    contacts = SETS[index]
    ws = _samples.workspace(humanoid, contacts, 6 if index == 2 else 4)
    cset, rng = ws.cset, np.random.default_rng(index)
    Q = np.array([humanoid.random_configuration(rng) for _ in range(5)])
    V, A = rng.normal(size=(2, 5, humanoid.nv))
    opt = _samples.Options("daqp", 1e-5, 4, 1e-6, False, None, 0.95)
    chunk = ws.start(humanoid, NO_KNOWN, None, 5, opt)
    ws.newton_euler(chunk, Q, V, A, 0, 5, list(range(5)))
    for c in range(5):
        frames = [humanoid.placements(Q[c], x.frame).se3() for x in contacts]
        P = np.array([f.translation for f in frames])
        R = np.array([f.rotation for f in frames])
        com = humanoid.com(Q[c])
        t = humanoid.centroidal_momentum_rate(Q[c], V[c], A[c])
        t[:3] -= humanoid.mass * humanoid.gravity_vector
        E, G = cset.newton_euler_matrix(P, com), cset.face_matrix(R)
        assert_allclose(chunk.rows[c, :6], E, rtol=0, atol=1e-12)
        assert_allclose(chunk.rows[c, 6:], G, rtol=0, atol=1e-12)
        assert_allclose(chunk.upper[c, :6], t, rtol=0, atol=1e-9)
        assert_allclose(chunk.lower[c, :6], t, rtol=0, atol=1e-9)
        assert (chunk.upper[c, 6:] == 0).all() and (chunk.lower[c, 6:] == -1e30).all()
        n = cset.n
        check = chunk.check[c]
        assert_allclose(check[:6, :n], E, atol=1e-12)
        assert_allclose(check[6:12, :n], -E, atol=1e-12)
        assert_allclose(check[:6, n], -t, atol=1e-9)
        assert_allclose(check[6:12, n], t, atol=1e-9)
        assert_allclose(check[12:, :n], G / cset.row_norms[:, None], atol=1e-12)
        assert (check[12:, n] == 0).all()


def test_one_sample_equals_quadprog_on_random_feasible_states(humanoid):
    """Soles and point contacts (rank from the SVD), 20 random feasible states each, in
    sequence (each daqp solve starts from the previous working set): every field equals
    quadprog's answer on the problem built in full."""
    rng = np.random.default_rng(7)
    points = [PointContact(f, mu=MU, name=f"{f}_pt") for f in ("left_sole", "right_sole")]
    # Two points leave the moment about the line through them to nobody: rank 5, which
    # quadprog refuses (dependent equality rows); daqp called once, cold, through qpsolvers
    # on the problem built in full is the reference there.
    for contacts, solver in ((FEET, "quadprog"), (points, "daqp")):
        for _ in range(20):
            q, v, a, _, _ = known_sample(humanoid, rng, contacts)
            est = estimate_contact_wrenches(humanoid, q, v, a, contacts)
            assert est.solver == "daqp"
            _assert_same(est, _reference(humanoid, q, v, a, contacts, solver), contacts)


def test_one_sample_on_g1_equals_quadprog():
    """The robot of the benchmark, two rectangular feet."""
    import warnings

    from wholebody.friction import wrench_cone_generators

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            robot = wb.load("g1")
        except wb.MissingDependencyError:
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
        est = estimate_contact_wrenches(robot, q, v, a, feet)
        _assert_same(est, _reference(robot, q, v, a, feet), feet)


def test_infeasible_sample_gets_a_clear_status_and_the_next_is_found(humanoid):
    """daqp fails an infeasible sample (its workspace is dropped): the closest wrenches
    inside the cones come back as infeasible, with a reason; the next feasible sample is
    found again, equal to quadprog's."""
    q = humanoid.q_from_named({}, base_position=[0.0, 0.0, H])
    zero = np.zeros(humanoid.nv)
    a = zero.copy()
    a[1] = 1.2 * MU * 9.81  # a lateral acceleration no friction on these soles can carry
    est = estimate_contact_wrenches(humanoid, q, zero, a, FEET)
    assert est.status == "infeasible" and not est.found
    assert "no wrenches inside the cones meet the equations" in est.reason
    assert np.all(np.isfinite(est.x))
    assert est.newton_euler_residual.force_norm > 0.05 * humanoid.weight
    q2, v2, a2, _, _ = known_sample(humanoid, np.random.default_rng(1))
    again = estimate_contact_wrenches(humanoid, q2, v2, a2, FEET)
    _assert_same(again, _reference(humanoid, q2, v2, a2, FEET), FEET)


@pytest.mark.filterwarnings("ignore::Warning")
def test_other_backends_by_name_give_the_same_answer(humanoid):
    q, v, a, _, _ = known_sample(humanoid, np.random.default_rng(2))
    daqp = estimate_contact_wrenches(humanoid, q, v, a, FEET)
    for solver in ("quadprog", "proxqp"):
        est = estimate_contact_wrenches(humanoid, q, v, a, FEET, solver=solver)
        assert est.solver == solver and est.status == "found"
        assert_allclose(est.x, daqp.x, rtol=0, atol=1e-4 * humanoid.weight)
    quadprog = estimate_contact_wrenches(humanoid, q, v, a, FEET, solver="quadprog")
    assert_allclose(quadprog.x, daqp.x, rtol=0, atol=ATOL)


def test_the_route_follows_the_robot_and_the_tolerance():
    """A frame added (the model and its data are copied) and a changed gravity are read at
    the next call, not from the workspace; a tolerance below what daqp reaches verifies
    nothing, so nothing is found."""
    robot = wb.load("humanoid")
    rng = np.random.default_rng(4)
    q, v, a, _, _ = known_sample(robot, rng)
    before = estimate_contact_wrenches(robot, q, v, a, FEET)
    robot.add_frame("route_marker", "left_sole", [0.0, 0.0, 0.1])
    after = estimate_contact_wrenches(robot, q, v, a, FEET)
    assert_allclose(after.x, before.x, rtol=0, atol=1e-10)
    robot.gravity_vector = [0.0, 0.0, -9.0]
    moon = estimate_contact_wrenches(robot, q, v, a, FEET)
    _assert_same(moon, _reference(robot, q, v, a, FEET), FEET)
    assert abs(moon.x[2] + moon.x[8] - before.x[2] - before.x[8]) > 0.5 * robot.mass
    strict = estimate_contact_wrenches(robot, q, v, a, FEET, tolerance=1e-30)
    assert strict.status != "found" and strict.reason


def test_bad_input_raises_typed_errors(humanoid):
    zero = np.zeros(humanoid.nv)
    q = humanoid.q_from_named({}, base_position=[0.0, 0.0, H])
    with pytest.raises(StateError, match="q"):
        estimate_contact_wrenches(humanoid, q[:-1], zero, zero, FEET)
    bad_v = zero.copy()
    bad_v[3] = np.nan
    with pytest.raises(StateError, match="v has non-finite values"):
        estimate_contact_wrenches(humanoid, q, bad_v, zero, FEET)
    with pytest.raises(StateError, match="contact names must be unique"):
        estimate_contact_wrenches(humanoid, q, zero, zero, [FEET[0], FEET[0]])
    with pytest.raises(StateError, match="estimation needs at least one contact"):
        estimate_contact_wrenches(humanoid, q, zero, zero, [])


def test_lazy_fields_survive_pickling_and_later_calls(humanoid):
    """The derived fields come from the sample's own copies: a later call (which reuses the
    chunk's buffers) does not change an earlier estimate."""
    rng = np.random.default_rng(5)
    q, v, a, _, _ = known_sample(humanoid, rng)
    first = estimate_contact_wrenches(humanoid, q, v, a, FEET)
    ref = _reference(humanoid, q, v, a, FEET)
    q2, v2, a2, _, _ = known_sample(humanoid, rng)
    estimate_contact_wrenches(humanoid, q2, v2, a2, FEET)
    Q2, V2, A2 = (np.tile(x, (40, 1)) for x in (q2, v2, a2))
    estimate_contact_wrenches(humanoid, Q2, V2, A2, FEET)
    _assert_same(first, ref, FEET)
    copy = pickle.loads(pickle.dumps(estimate_contact_wrenches(humanoid, q, v, a, FEET)))
    _assert_same(copy, ref, FEET)


def test_wrenches_read_alone_then_the_rest(humanoid):
    # The wrenches of an estimate are read from x without deriving the other fields; the
    # rest, derived later, keeps the same wrench objects and equals quadprog's answer, and an
    # estimate pickled after reading only its wrenches carries every field.
    rng = np.random.default_rng(11)
    q, v, a, _, _ = known_sample(humanoid, rng, FEET)
    est = estimate_contact_wrenches(humanoid, q, v, a, FEET)
    first = est.wrenches
    assert "_derive" in est.__dict__  # the rest not derived yet
    copy = pickle.loads(pickle.dumps(est))
    assert "_cset" not in copy.__dict__ and "_derive" not in copy.__dict__
    ref = _reference(humanoid, q, v, a, FEET)
    _assert_same(est, ref, FEET)
    _assert_same(copy, ref, FEET)
    assert est.wrenches is first


def test_chunks_match_another_backend(humanoid, monkeypatch):
    """N samples in chunks of 7 (samples straddle chunk boundaries) against quadprog, with a
    contact schedule (one row with no active contact), a known push at a point and a bad
    sample: the same least-norm wrenches (1e-6 N), the same statuses; each sample equals
    its one-sample estimate."""
    monkeypatch.setattr(_samples, "CHUNK", 7)
    feet = [
        SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.8)
        for f in ("left_sole", "right_sole")
    ]
    rng = np.random.default_rng(11)
    N = 30
    Q = np.array([humanoid.q_from_named({}, base_position=[0, 0, 0.94]) for _ in range(N)])
    Q[:, 7:] += rng.uniform(-0.1, 0.1, size=(N, humanoid.nq - 7))
    V = rng.normal(scale=0.2, size=(N, humanoid.nv))
    A = rng.normal(scale=0.5, size=(N, humanoid.nv))
    Q[15, 3:7] = 0.0  # flagged
    active = np.ones((N, 2), dtype=bool)
    active[10:14, 1] = False
    active[20] = False
    force, point = rng.normal(scale=5.0, size=(N, 3)), rng.normal(size=(N, 3))
    kw = {"active": active, "external_wrenches": {"torso": (force, point)}}
    daqp = estimate_contact_wrenches(humanoid, Q, V, A, feet, **kw)
    other = estimate_contact_wrenches(humanoid, Q, V, A, feet, solver="quadprog", **kw)
    assert list(daqp.status) == list(other.status)
    assert daqp.status[15] == "flagged" and daqp.status[20] == "infeasible"
    assert (daqp.status == "found").sum() >= 20
    found = daqp.status == "found"
    assert_allclose(daqp.wrenches[found], other.wrenches[found], rtol=0, atol=1e-6)
    assert_allclose(daqp.residual_force[found], other.residual_force[found], rtol=0, atol=1e-6)
    for i in (0, 6, 7, 12, 29):
        one = estimate_contact_wrenches(
            humanoid, Q[i], V[i], A[i], feet, active=active[i],
            external_wrenches={"torso": (force[i], point[i])},
        )  # fmt: skip
        assert one.status == daqp.status[i]
        assert_allclose(one.x, daqp.wrenches[i], rtol=0, atol=1e-9)
