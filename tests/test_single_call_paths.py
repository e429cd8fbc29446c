"""The one-sample fast paths against independent references and against the batch paths.

The single-sample calls run the library's one formula on Python floats (no array machinery);
the batch calls run it on arrays. Each is tied here to a reference that shares no code with
either: raw Pinocchio calls and ``np.cross``, the RNEA base rows, hand-written rotations.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose

from wholebody.balance import (
    centre_of_pressure,
    contact_wrench,
    gravito_inertial_wrench,
    newton_euler_residual,
)
from wholebody.balance.newton_euler import newton_euler_residual_arrays, wrench_sum
from wholebody.contacts import PointContact, SurfaceContact
from wholebody.errors import StateError
from wholebody.estimation import ContactEstimate, build_estimation_problem
from wholebody.spatial import cross

TOL = 1e-12  # [N], [N m], [m]: the fast path and the batch path against each other
TOL_REF = 1e-10  # [N], [N m]: against the independent references (sums of ~500 N terms)
HALF_LENGTH, HALF_WIDTH, MU = 0.1, 0.05, 0.8  # [m], [m], [-]
CONTACTS = [
    SurfaceContact("left_sole", half_length=HALF_LENGTH, half_width=HALF_WIDTH, mu=MU),
    SurfaceContact("right_sole", half_length=HALF_LENGTH, half_width=HALF_WIDTH, mu=MU),
    PointContact("left_hand", mu=0.5),
]


def sample(robot, seed):
    """A random state and random contact wrenches (world axes, at the frame origins)."""
    rng = np.random.default_rng(seed)
    q = robot.random_configuration(rng)
    v, a = rng.normal(size=robot.nv), rng.normal(size=robot.nv)
    wrenches = [
        rng.normal(scale=100.0, size=6),
        rng.normal(scale=100.0, size=6),
        rng.normal(scale=20.0, size=3),
    ]
    return q, v, a, wrenches


def reference_residual(robot, q, v, a, contacts, wrenches, point=None):
    """Raw Pinocchio + np.cross: ``sum (f_i, tau_i + (p_i - A) x f_i) + w_gi(A)``."""
    model = robot.model
    data = model.createData()
    pin.computeCentroidalMomentumTimeVariation(model, data, q, v, a)
    com = data.com[0].copy()
    dh = data.dhg.vector.copy()
    A = com if point is None else np.asarray(point, dtype=float)
    f_gi = robot.mass * model.gravity.linear - dh[:3]
    force = f_gi.copy()
    moment = np.cross(com - A, f_gi) - dh[3:]
    for c, w in zip(contacts, wrenches, strict=True):
        fid = model.getFrameId(c.frame)
        p = pin.updateFramePlacement(model, data, fid).translation
        f = np.asarray(w[:3], dtype=float)
        tau = np.zeros(3) if c.size == 3 else np.asarray(w[3:], dtype=float)
        force += f
        moment += tau + np.cross(p - A, f)
    return force, moment, com


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("at", ["com", "origin", (0.3, -0.2, 0.05)])
def test_residual_fast_path_equals_reference_and_batch(humanoid, seed, at):
    q, v, a, wrenches = sample(humanoid, seed)
    point = None if at == "com" else (np.zeros(3) if at == "origin" else np.array(at))
    f_ref, m_ref, com = reference_residual(humanoid, q, v, a, CONTACTS, wrenches, point)
    one = newton_euler_residual(humanoid, q, v, a, CONTACTS, wrenches, at=at)
    assert_allclose(one.force, f_ref, rtol=0, atol=TOL_REF)
    assert_allclose(one.moment, m_ref, rtol=0, atol=TOL_REF)
    assert_allclose(one.point, com if point is None else point, rtol=0, atol=TOL)
    assert one.weight == humanoid.mass * np.linalg.norm(humanoid.model.gravity.linear)
    # The batch path (arrays) on the same sample, in a batch of three: the same numbers.
    stacked = np.concatenate(
        [np.r_[w, np.zeros(6 - len(w))][: c.size] for c, w in zip(CONTACTS, wrenches, strict=True)]
    )
    batch = newton_euler_residual(
        humanoid,
        np.stack([q, q, q]),
        np.stack([v, v, v]),
        np.stack([a, a, a]),
        CONTACTS,
        np.stack([stacked, stacked, stacked]),
        at=at,
    )
    for i in range(3):
        assert_allclose(batch.force[i], one.force, rtol=0, atol=TOL)
        assert_allclose(batch.moment[i], one.moment, rtol=0, atol=TOL)


def test_residual_with_external_wrenches_equals_reference(humanoid):
    q, v, a, wrenches = sample(humanoid, 5)
    push = np.array([30.0, -10.0, 5.0, 1.0, 2.0, -3.0])  # at the right hand's origin
    given_point = np.array([0.1, 0.2, 0.9])
    force_only = np.array([0.0, 15.0, -4.0])
    one = newton_euler_residual(
        humanoid,
        q,
        v,
        a,
        CONTACTS,
        wrenches,
        external_wrenches={"right_hand": push, "label": (force_only, given_point)},
    )
    f_ref, m_ref, _ = reference_residual(
        humanoid,
        q,
        v,
        a,
        CONTACTS
        + [SurfaceContact("right_hand", half_length=HALF_LENGTH, half_width=HALF_WIDTH, mu=MU)],
        wrenches + [push],
    )
    f_ref = f_ref + force_only
    m_ref = m_ref + np.cross(given_point - one.point, force_only)
    assert_allclose(one.force, f_ref, rtol=0, atol=TOL_REF)
    assert_allclose(one.moment, m_ref, rtol=0, atol=TOL_REF)


def test_residual_accepts_mappings_and_stacked_arrays(humanoid):
    q, v, a, wrenches = sample(humanoid, 3)
    ref = newton_euler_residual(humanoid, q, v, a, CONTACTS, wrenches)
    by_name = {c.name: w for c, w in zip(CONTACTS, wrenches, strict=True)}
    stacked = np.concatenate(wrenches)
    as_lists = [w.tolist() for w in wrenches]
    for given in (by_name, stacked, as_lists, tuple(wrenches)):
        other = newton_euler_residual(humanoid, q, v, a, CONTACTS, given)
        assert_allclose(other.force, ref.force, rtol=0, atol=TOL)
        assert_allclose(other.moment, ref.moment, rtol=0, atol=TOL)


def test_gravito_inertial_wrench_is_minus_the_rnea_base_rows(humanoid):
    """Independent route: rnea's first six rows are the base-frame wrench at the base
    origin that the contacts must supply, i.e. ``-w_gi`` moved to the base."""
    for q, v, a, _ in (sample(humanoid, s) for s in range(3)):
        tau = pin.rnea(humanoid.model, humanoid.model.createData(), q, v, a)
        base = pin.XYZQUATToSE3(q[:7])
        w = gravito_inertial_wrench(humanoid, q, v, a, at=base.translation)
        R = base.rotation
        assert_allclose(R.T @ w.force, -tau[:3], rtol=0, atol=TOL_REF)
        assert_allclose(R.T @ w.moment, -tau[3:6], rtol=0, atol=TOL_REF)
        at_com = gravito_inertial_wrench(humanoid, q, v, a)
        assert_allclose(at_com.shift_to(base.translation).moment, w.moment, rtol=0, atol=TOL_REF)


def test_contact_wrench_equals_hand_sum(humanoid):
    q, _, _, wrenches = sample(humanoid, 4)
    model = humanoid.model
    data = model.createData()
    com = pin.centerOfMass(model, data, q).copy()
    for at, A in (("com", com), ("origin", np.zeros(3)), ([0.1, 0.0, 0.4], np.r_[0.1, 0, 0.4])):
        w = contact_wrench(humanoid, q, CONTACTS, wrenches, at=at)
        f, m = np.zeros(3), np.zeros(3)
        for c, x in zip(CONTACTS, wrenches, strict=True):
            p = pin.updateFramePlacement(model, data, model.getFrameId(c.frame)).translation
            f += x[:3]
            m += (x[3:] if c.size == 6 else 0.0) + np.cross(p - A, x[:3])
        assert_allclose(w.force, f, rtol=0, atol=TOL_REF)
        assert_allclose(w.moment, m, rtol=0, atol=TOL_REF)
        assert_allclose(w.point, A, rtol=0, atol=TOL)


def test_wrench_sum_and_residual_arrays_one_sample_equal_batch_and_cross():
    rng = np.random.default_rng(7)
    W = rng.normal(scale=50.0, size=(4, 6))
    P = rng.normal(size=(4, 3))
    at = rng.normal(size=3)
    com, rate = rng.normal(size=3), rng.normal(scale=10.0, size=6)
    g = np.array([0.0, 0.0, -9.81])
    f1, m1 = wrench_sum(W, P, at)
    fb, mb = wrench_sum(W[None], P[None], at[None])
    f_ref = W[:, :3].sum(axis=0)
    m_ref = (W[:, 3:] + np.cross(P - at, W[:, :3])).sum(axis=0)
    assert_allclose(f1, f_ref, rtol=0, atol=TOL)
    assert_allclose(m1, m_ref, rtol=0, atol=TOL)
    assert_allclose(fb[0], f1, rtol=0, atol=0)
    assert_allclose(mb[0], m1, rtol=0, atol=0)
    for point in (None, at):
        r1 = newton_euler_residual_arrays(W, P, com, rate, mass=30.0, gravity=g, at=point)
        rb = newton_euler_residual_arrays(
            W[None],
            P[None],
            com[None],
            rate[None],
            mass=30.0,
            gravity=g,
            at=None if point is None else point[None],
        )
        A = com if point is None else point
        f_gi = 30.0 * g - rate[:3]
        assert_allclose(r1[0], f_ref + f_gi, rtol=0, atol=TOL)
        m_expect = (W[:, 3:] + np.cross(P - A, W[:, :3])).sum(axis=0)
        m_expect = m_expect + np.cross(com - A, f_gi) - rate[3:]
        assert_allclose(r1[1], m_expect, rtol=0, atol=TOL)
        assert_allclose(rb[0][0], r1[0], rtol=0, atol=0)  # one formula: bit for bit
        assert_allclose(rb[1][0], r1[1], rtol=0, atol=0)
    empty = wrench_sum(np.zeros((0, 6)), np.zeros((0, 3)), at)
    assert_allclose(np.r_[empty[0], empty[1]], np.zeros(6), rtol=0, atol=0)


def test_cross_of_two_vectors_equals_numpy():
    rng = np.random.default_rng(3)
    for _ in range(5):
        a, b = rng.normal(size=3), rng.normal(size=3)
        assert_allclose(cross(a, b), np.cross(a, b), rtol=0, atol=1e-15)
        assert_allclose(cross(a[None], b[None])[0], np.cross(a, b), rtol=0, atol=1e-15)


def test_centre_of_pressure_equals_rotation_by_hand(humanoid):
    q, _, _, _ = sample(humanoid, 6)
    model = humanoid.model
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    M = data.oMf[model.getFrameId("left_sole")]
    R, p = M.rotation, M.translation
    local_wrench = np.array([3.0, -2.0, 400.0, 4.0, -6.0, 0.5])  # contact axes
    world = np.r_[R @ local_wrench[:3], R @ local_wrench[3:]]
    cop = centre_of_pressure(humanoid, q, CONTACTS[0], world)
    expect_local = np.array([6.0 / 400.0, 4.0 / 400.0])
    assert_allclose(cop.local, expect_local, rtol=0, atol=TOL)
    assert_allclose(
        cop.world, p + R[:, 0] * expect_local[0] + R[:, 1] * expect_local[1], rtol=0, atol=TOL
    )
    assert cop.normal_force == pytest.approx(400.0, abs=TOL_REF)
    # About the world CoP the moment has no component along the sole's x and y axes.
    m_at_cop = world[3:] + np.cross(p - cop.world, world[:3])
    assert_allclose(R.T @ m_at_cop, [0.0, 0.0, R.T[2] @ m_at_cop], rtol=0, atol=TOL_REF)
    pulling = np.r_[-R @ local_wrench[:3], R @ local_wrench[3:]]
    lifted = centre_of_pressure(humanoid, q, CONTACTS[0], pulling)
    assert np.isnan(lifted.local).all() and np.isnan(lifted.world).all()


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        (np.array([1.0, np.nan, 3.0, 0.0, 0.0, 0.0]), "non-finite"),
        (np.array([1e12, 0.0, 3.0, 0.0, 0.0, 0.0]), "beyond any physical magnitude"),
        (np.zeros(5), "takes a wrench (f, tau) (6,) per sample, got shape (5,)"),
        (np.array([1.0, 2.0, -np.inf, 0.0, 0.0, 0.0]), "non-finite"),
        (np.zeros((6, 1)), "takes a wrench (f, tau) (6,) per sample, got shape (6, 1)"),
    ],
)
@pytest.mark.parametrize("position", [0, 1])
def test_single_calls_refuse_bad_wrenches(humanoid, bad, fragment, position):
    # In the first or a later place: the one-loop fast path of the sample layout stops at
    # it (after taking the rows before it) and the general path names it.
    q, v, a, wrenches = sample(humanoid, 0)
    given = list(wrenches)
    given[position] = bad
    with pytest.raises(StateError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        newton_euler_residual(humanoid, q, v, a, CONTACTS, given)
    with pytest.raises(StateError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        contact_wrench(humanoid, q, CONTACTS, given)


def test_single_residual_names_an_unknown_contact_frame_and_takes_any_wrench_form(humanoid):
    """The fast sample layout reads frame ids from the name table: an unknown frame is still
    named, and wrenches given as lists, tuples or int arrays give the numbers of float64
    arrays, those of raw Pinocchio and np.cross (computed here)."""
    from wholebody.errors import FrameNotFoundError

    q, v, a, wrenches = sample(humanoid, 5)
    unknown = [SurfaceContact("no_such_sole", half_length=0.1, half_width=0.05, mu=0.8)]
    with pytest.raises(FrameNotFoundError, match="no_such_sole"):
        newton_euler_residual(humanoid, q, v, a, unknown, [wrenches[0]])
    m = humanoid.model
    d = m.createData()
    dh = pin.computeCentroidalMomentumTimeVariation(m, d, q, v, a)
    com = d.com[0].copy()
    force = m.gravity.linear * humanoid.mass - dh.linear
    moment = -dh.angular.copy()
    for c, w in zip(CONTACTS, wrenches, strict=True):
        p = pin.updateFramePlacement(m, d, m.getFrameId(c.frame)).translation
        force = force + w[:3]
        moment = moment + (w[3:] if c.size == 6 else 0.0) + np.cross(p - com, w[:3])
    forms = [
        wrenches,
        tuple(wrenches),
        [w.tolist() for w in wrenches],
        [np.round(w).astype(int) for w in wrenches],
    ]
    for given in forms:
        res = newton_euler_residual(humanoid, q, v, a, CONTACTS, given)
        ref_f, ref_m = force, moment
        if given is forms[-1]:  # rounded wrenches: the reference with the same rounding
            ref_f = force + sum(np.round(w)[:3] - w[:3] for w in wrenches)
            ref_m = moment + sum(
                (np.round(w)[3:] - w[3:] if c.size == 6 else 0.0)
                + np.cross(
                    pin.updateFramePlacement(m, d, m.getFrameId(c.frame)).translation - com,
                    np.round(w)[:3] - w[:3],
                )
                for c, w in zip(CONTACTS, wrenches, strict=True)
            )
        assert_allclose(res.force, ref_f, rtol=0, atol=TOL_REF)
        assert_allclose(res.moment, ref_m, rtol=0, atol=TOL_REF)
        assert_allclose(res.point, com, rtol=0, atol=1e-15)


def test_centre_of_pressure_refuses_bad_wrenches(humanoid):
    q = humanoid.neutral()
    with pytest.raises(StateError, match="wrench has non-finite values"):
        centre_of_pressure(humanoid, q, CONTACTS[0], [0, 0, np.inf, 0, 0, 0])
    with pytest.raises(StateError, match=r"must have shape \(6,\), got \(3,\)"):
        centre_of_pressure(humanoid, q, CONTACTS[0], [0, 0, 1])


def test_weight_follows_gravity(humanoid):
    robot = copy.deepcopy(humanoid)
    assert robot.weight == pytest.approx(robot.mass * 9.81, rel=1e-15)
    robot.gravity_vector = [0.0, 0.0, -1.62]
    assert robot.weight == pytest.approx(robot.mass * 1.62, rel=1e-15)
    assert_allclose(robot.gravity_vector, [0.0, 0.0, -1.62], rtol=0, atol=0)
    q, v, a, wrenches = sample(robot, 1)
    res = newton_euler_residual(robot, q, v, a, CONTACTS, wrenches)
    f_ref, m_ref, _ = reference_residual(robot, q, v, a, CONTACTS, wrenches)
    assert res.weight == robot.weight
    assert_allclose(res.force, f_ref, rtol=0, atol=TOL_REF)
    g = robot.gravity_vector
    g[2] = 5.0  # a copy: the robot's gravity is unchanged
    assert robot.gravity_vector[2] == -1.62


# --- the estimate of a prebuilt problem --------------------------------------------------


def standing_problem(robot, seed=0):
    rng = np.random.default_rng(seed)
    q = robot.neutral()
    q[2] = -robot.frame_position(q, "left_sole")[2]
    v, a = 0.05 * rng.normal(size=robot.nv), 0.05 * rng.normal(size=robot.nv)
    feet = CONTACTS[:2]
    return build_estimation_problem(robot, q, v, a, feet), (q, v, a, feet)


FIELDS = [f.name for f in dataclasses.fields(ContactEstimate)]


def assert_same_estimate(x, y, atol=0.0):
    """Every field equal (``atol`` on the numbers, [N, N m, m]) but the backend's name and
    time."""
    for name in FIELDS:
        if name in ("solve_time", "solver"):
            continue
        a, b = getattr(x, name), getattr(y, name)
        if name == "newton_euler_residual":
            for part in ("force", "moment", "point"):
                assert_allclose(getattr(a, part), getattr(b, part), rtol=0, atol=atol)
            assert a.weight == b.weight
        elif isinstance(a, dict):
            assert a.keys() == b.keys(), name
            for key in a:
                assert_allclose(np.asarray(a[key]), np.asarray(b[key]), rtol=0, atol=atol)
        elif isinstance(a, np.ndarray):
            assert_allclose(a, b, rtol=0, atol=atol)
        elif isinstance(a, float) and atol:
            assert a == pytest.approx(b, abs=atol), name
        else:
            assert a == b, name


def test_problem_solve_reads_as_another_backend_and_balance(humanoid):
    problem, (q, v, a, feet) = standing_problem(humanoid)
    est = problem.solve()
    assert "_derive" in est.__dict__  # the derived fields wait for their first read
    other = problem.solve("quadprog")
    assert est.status == other.status == "found"
    # daqp on its workspace and quadprog through qpsolvers: the same QP, answers equal to
    # rounding.
    assert_same_estimate(est, other, atol=TOL_REF)
    # Independent checks of what was derived: the residual by the balance module, the local
    # wrenches by hand, the equations by the problem's own rows.
    res = newton_euler_residual(humanoid, q, v, a, feet, [est.wrenches[c.name] for c in feet])
    assert_allclose(est.newton_euler_residual.force, res.force, rtol=0, atol=TOL_REF)
    assert_allclose(est.newton_euler_residual.moment, res.moment, rtol=0, atol=TOL_REF)
    assert est.equations_residual == pytest.approx(
        float(np.abs(problem.equations @ est.x - problem.target).max()), rel=1e-12, abs=1e-12
    )
    for j, c in enumerate(feet):
        R = problem.rotations[j]
        w = est.wrenches[c.name]
        assert_allclose(
            est.wrenches_local[c.name], np.r_[R.T @ w[:3], R.T @ w[3:]], rtol=0, atol=TOL_REF
        )
    assert min(est.cone_margins.values()) >= -problem.tolerance * problem.weight


def test_lazy_estimate_pickles_copies_and_replaces_with_values(humanoid):
    problem, _ = standing_problem(humanoid, seed=1)
    reference = problem.solve()
    _ = reference.wrenches  # derived now
    for make in (
        lambda e: pickle.loads(pickle.dumps(e)),
        copy.deepcopy,
        lambda e: dataclasses.replace(e, intervals=None),
    ):
        other = make(problem.solve())
        assert "_derive" not in other.__dict__
        assert_same_estimate(other, reference)
    again = pickle.loads(pickle.dumps(problem))
    assert_allclose(again.solve().x, reference.x, rtol=0, atol=0)
    lazy = problem.solve()
    assert repr(lazy) == repr(reference).replace(
        f"solve_time={reference.solve_time!r}", f"solve_time={lazy.solve_time!r}"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        lazy.wrenches = {}


def test_solve_keeps_its_own_copy_of_x(humanoid):
    problem, _ = standing_problem(humanoid, seed=2)
    est = problem.solve()
    x = est.x.copy()
    est.x[:] = 0.0  # the caller's array; the derived wrenches come from the solution
    assert_allclose(np.concatenate(list(est.wrenches.values())), x, rtol=0, atol=0)


def test_infeasible_problem_says_so(humanoid):
    q = humanoid.neutral()
    q[2] = -humanoid.frame_position(q, "left_sole")[2]
    a = np.zeros(humanoid.nv)
    a[0] = 30.0  # a 3 g forward push with mu = 0.8: no wrench inside the cones gives it
    problem = build_estimation_problem(humanoid, q, np.zeros(humanoid.nv), a, CONTACTS[:2])
    est = problem.solve()
    assert est.status == "infeasible"
    assert est.reason.startswith("no wrenches inside the cones meet the equations")


# --- state checks -------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:overflow encountered in dot:RuntimeWarning")
def test_state_checks_accept_exactly_the_finite_states_within_the_limit(humanoid):
    """Whatever path a state takes (byte test, dot product, slow path), it is accepted iff
    every entry is finite and within 1e8: checked against np.isfinite and abs directly."""
    rng = np.random.default_rng(11)
    specials = [
        0.0,
        -0.0,
        5e-324,
        131071.99,
        131072.0,
        -131072.0,
        2.0**17 + 1,
        5e6,
        1e8,
        -1e8,
        1.0000001e8,
        1e200,
        np.inf,
        -np.inf,
        np.nan,
    ]
    q0 = humanoid.neutral()

    def accepted(call, *args) -> bool:
        try:
            call(*args)
        except StateError:
            return False
        return True

    for trial in range(300):
        v = rng.normal(size=humanoid.nv) * 10.0 ** rng.integers(-3, 9, size=humanoid.nv)
        if trial % 2:
            v[rng.integers(humanoid.nv)] = specials[trial % len(specials)]
        ok = bool(np.isfinite(v).all() and np.abs(v).max() <= 1e8)
        assert accepted(humanoid.state, q0, v.copy()) == ok, v
        assert accepted(humanoid.nonlinear_effects, q0, v.copy()) == ok, v
        q = q0.copy()
        q[:3] = v[:3]
        q[7:] = v[3 : 3 + humanoid.nq - 7]
        ok_q = bool(np.isfinite(q).all() and np.abs(q).max() <= 1e8)
        assert accepted(humanoid.state, q) == ok_q, q
        assert accepted(humanoid.com, q) == ok_q, q


@pytest.mark.filterwarnings("ignore:overflow encountered in dot:RuntimeWarning")
def test_a_state_changed_in_place_is_checked_again(humanoid):
    """Raw arrays are checked at every call, not remembered: a controller that writes a bad
    value into its buffer is caught at the next call."""
    q, v, a, _ = sample(humanoid, 9)
    humanoid.inverse_dynamics(q, v, a)
    humanoid.centroidal_momentum(q, v)
    v[3] = np.nan
    with pytest.raises(StateError, match=r"v has non-finite values at indices \[3\]"):
        humanoid.inverse_dynamics(q, v, a)
    with pytest.raises(StateError, match=r"v has non-finite values at indices \[3\]"):
        humanoid.centroidal_momentum(q, v)
    v[3] = 0.0
    a[0] = 1e200
    with pytest.raises(StateError, match=r"a\[0\] = 1e\+200 is beyond any physical magnitude"):
        gravito_inertial_wrench(humanoid, q, v, a)
    a[0] = 0.0
    q[3:7] = [0.0, 0.0, 0.0, 2.0]
    with pytest.raises(StateError, match="base quaternion q\\[3:7\\] has norm 2"):
        humanoid.inverse_dynamics(q, v, a)


def test_wrench_sum_broadcasts_one_set_of_wrenches_over_per_sample_points():
    """(k, 6) wrenches with (N, k, 3) points and (3,) or (N, 3) reference points: the Varignon
    sum of each sample, against a loop with np.cross."""
    from wholebody.balance.newton_euler import wrench_sum

    rng = np.random.default_rng(3)
    for k in (2, 3):
        W = rng.normal(size=(k, 6))
        P = rng.normal(size=(4, k, 3))
        for at in (rng.normal(size=3), rng.normal(size=(4, 3))):
            f, m = wrench_sum(W, P, at)
            A = np.broadcast_to(at, (4, 3))
            for n in range(4):
                np.testing.assert_allclose(f[n], W[:, :3].sum(0), rtol=0, atol=1e-12)
                ref = sum(W[i, 3:] + np.cross(P[n, i] - A[n], W[i, :3]) for i in range(k))
                np.testing.assert_allclose(m[n], ref, rtol=0, atol=1e-12)


def test_state_checks_of_com_frame_jacobian_and_inverse_dynamics(humanoid):
    """com, frame_jacobian and inverse_dynamics on raw arrays (the fused test, else the full
    check): each bad input, new or written in place into a state that has just passed,
    still gets the named StateError, and good inputs in any accepted form give raw
    Pinocchio's numbers (computed here on a Data of its own)."""
    m = humanoid.model
    d = m.createData()
    fid = m.getFrameId("left_sole")
    lwa = pin.LOCAL_WORLD_ALIGNED
    q, v, a, _ = sample(humanoid, 21)
    terms = {
        "com": (
            lambda q, v, a: humanoid.com(q),
            lambda q, v, a: pin.centerOfMass(m, d, q, False).copy(),
        ),
        "frame_jacobian": (
            lambda q, v, a: humanoid.frame_jacobian(q, "left_sole"),
            lambda q, v, a: pin.computeFrameJacobian(m, d, q, fid, lwa),
        ),
        "inverse_dynamics": (
            lambda q, v, a: humanoid.inverse_dynamics(q, v, a),
            lambda q, v, a: pin.rnea(m, d, q, v, a).copy(),
        ),
    }
    nq = humanoid.nq
    bad_q = [
        (lambda x: x.__setitem__(9, np.nan), r"q has non-finite values at indices \[9\]"),
        (lambda x: x.__setitem__(0, -np.inf), r"q has non-finite values at indices \[0\]"),
        (lambda x: x.__setitem__(8, 1e9), r"q\[8\] = 1e\+09 is beyond any physical magnitude"),
        (lambda x: x.__setitem__(slice(3, 7), [0, 0, 0, 2.0]), r"q\[3:7\] has norm 2"),
        (lambda x: x.__setitem__(slice(3, 7), [0, 0, 0, np.nan]), r"non-finite .* \[6\]"),
    ]
    for name, (ours, ref) in terms.items():
        expected = ref(q, v, a)
        # Accepted forms: the array, a list, a column vector, a strided view.
        for qq in (q, q.tolist(), q.reshape(-1, 1), np.repeat(q, 2)[::2]):
            assert_allclose(ours(qq, v, a), ref(np.asarray(qq, float).ravel(), v, a), atol=0)
        for change, message in bad_q:
            for fresh in (True, False):
                x = q.copy()
                if not fresh:  # the same array passed just before, then written in place
                    assert_allclose(ours(x, v, a), expected, rtol=0, atol=0, err_msg=name)
                change(x)
                with pytest.raises(StateError, match=message):
                    ours(x, v, a)
        for size in (nq - 1, nq + 1):
            with pytest.raises(StateError, match=rf"q must have shape \({nq},\), got \({size},\)"):
                ours(np.zeros(size), v, a)
        with pytest.raises(StateError, match="q = 'not a state' is not a real number"):
            ours("not a state", v, a)
        assert_allclose(ours(q, v, a), expected, rtol=0, atol=0, err_msg=name)
    # inverse_dynamics: v and a are named, new or changed in place after a pass.
    f = terms["inverse_dynamics"][0]
    nv = humanoid.nv
    for what in ("v", "a"):
        for fresh in (True, False):
            vv, aa = v.copy(), a.copy()
            if not fresh:
                f(q, vv, aa)
            x = vv if what == "v" else aa
            x[4] = np.inf
            with pytest.raises(StateError, match=rf"{what} has non-finite values at indices \[4\]"):
                f(q, vv, aa)
            x[4] = -2e8
            with pytest.raises(StateError, match=rf"{what}\[4\] = -2e\+08 is beyond"):
                f(q, vv, aa)
        short = (np.zeros(nv - 1), a) if what == "v" else (v, np.zeros(nv - 1))
        with pytest.raises(StateError, match=rf"{what} must have shape \({nv},\)"):
            f(q, *short)
