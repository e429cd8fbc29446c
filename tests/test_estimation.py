"""Contact-wrench estimation recovers wrenches known by construction; infeasible is a status."""

from __future__ import annotations

import numpy as np
import pytest
import qpsolvers
from numpy.testing import assert_allclose

import wholebody as wb
from wholebody.contacts import PointContact, SurfaceContact
from wholebody.errors import (
    ContactNotFoundError,
    InvalidArgumentError,
    SolverError,
    StateError,
)
from wholebody.estimation import (
    SolverNotAvailableError,
    build_estimation_problem,
    estimate_contact_wrenches,
)
from wholebody.friction import wrench_cone_generators
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH as X
from wholebody.models import HUMANOID_SOLE_HALF_WIDTH as Y
from wholebody.models import HUMANOID_STANDING_HEIGHT as H

MU = 0.8
FEET = [SurfaceContact(f, half_length=X, half_width=Y, mu=MU) for f in ("left_sole", "right_sole")]
TOL = 1e-6  # [N], [N m]


def known_sample(robot, rng, contacts=FEET):
    """A standing-like state whose foot wrenches (inside their cones) are known.

    The wrenches are drawn from the cone generators, the joint torques at random, and the
    acceleration follows by forward dynamics (ABA).
    """
    joints = {n: rng.uniform(-0.2, 0.2) for n in robot.joint_names}
    joints |= {"left_knee": rng.uniform(0.1, 0.6), "right_knee": rng.uniform(0.1, 0.6)}
    q = robot.q_from_named(joints, base_position=[0.0, 0.0, H], beyond_limits=True)
    v = rng.normal(scale=0.3, size=robot.nv)
    truth, ext = [], {}
    for c in contacts:
        R = robot.placements(q, c.frame).se3().rotation
        if c.size == 6:
            V = wrench_cone_generators(c.half_length, c.half_width, c.mu)
            local = V @ rng.exponential(20.0, 16)
            w = np.r_[R @ local[:3], R @ local[3:]]
        else:
            t = rng.uniform(0, 2 * np.pi)
            f = np.array([np.cos(t), np.sin(t), 0.0]) * rng.uniform(0, 0.6 * c.mu) + [0, 0, 1.0]
            w = R @ (f * rng.exponential(80.0))
        truth.append(w)
        ext[c.frame] = w
    tau = rng.normal(scale=10.0, size=robot.nv - 6)
    a = robot.forward_dynamics(q, v, np.r_[np.zeros(6), tau], ext)
    return q, v, a, tau, truth


def total_wrench_about_com(robot, q, contacts, wrenches):
    com = robot.com(q)
    f, m = np.zeros(3), np.zeros(3)
    for c, w in zip(contacts, wrenches, strict=True):
        p = robot.frame_position(q, c.frame)
        f += w[:3]
        m += np.cross(p - com, w[:3]) + (w[3:] if c.size == 6 else 0.0)
    return np.r_[f, m]


def test_full_dynamics_recovers_each_foot(humanoid):
    rng = np.random.default_rng(0)
    for _ in range(20):
        q, v, a, tau, truth = known_sample(humanoid, rng)
        est = estimate_contact_wrenches(humanoid, q, v, a, FEET, tau=tau)
        assert est.found and est.mode == "full_dynamics"
        assert est.rank == 12 and est.identifiable and not est.split_from_regularization
        for c, w in zip(FEET, truth, strict=True):
            assert_allclose(est.wrenches[c.name], w, rtol=0, atol=TOL)
        assert est.newton_euler_residual.force_norm < TOL


def test_newton_euler_mode_recovers_the_total(humanoid):
    rng = np.random.default_rng(1)
    for _ in range(20):
        q, v, a, _, truth = known_sample(humanoid, rng)
        est = estimate_contact_wrenches(humanoid, q, v, a, FEET)
        assert est.found and est.mode == "newton_euler" and est.split_from_regularization
        assert est.rank == 6
        estimated = [est.wrenches[c.name] for c in FEET]
        assert_allclose(
            total_wrench_about_com(humanoid, q, FEET, estimated),
            total_wrench_about_com(humanoid, q, FEET, truth),
            rtol=0,
            atol=TOL,
        )
        assert min(est.cone_margins.values()) >= -1e-6 * humanoid.weight


def test_eight_point_contacts(humanoid):
    robot = wb.load("humanoid")
    corners = []
    for side in ("left", "right"):
        for i, (x, y) in enumerate([(X, Y), (-X, Y), (-X, -Y), (X, -Y)]):
            robot.add_frame(f"{side}_corner_{i}", f"{side}_sole", [x, y, 0.0])
            corners.append(PointContact(f"{side}_corner_{i}", mu=MU))
    rng = np.random.default_rng(2)
    for _ in range(5):
        q, v, a, tau, truth = known_sample(robot, rng, corners)
        est = estimate_contact_wrenches(robot, q, v, a, corners)
        assert est.found
        estimated = [est.wrenches[c.name] for c in corners]
        assert_allclose(
            total_wrench_about_com(robot, q, corners, estimated),
            total_wrench_about_com(robot, q, corners, truth),
            rtol=0,
            atol=TOL,
        )


def test_lateral_load_above_friction_is_infeasible_with_the_needed_scale(humanoid):
    q = humanoid.q_from_named({}, base_position=[0.0, 0.0, H])
    zero = np.zeros(humanoid.nv)
    # A known horizontal push at ground level: the feet must resist it by friction alone.
    push = np.array([1.2 * MU * humanoid.weight, 0, 0, 0, 0, 0])
    est = estimate_contact_wrenches(
        humanoid, q, zero, zero, FEET, external_wrenches={"left_sole": push}
    )
    assert est.status == "infeasible" and not est.found
    assert est.min_friction_scale == pytest.approx(1.2, rel=1e-3)
    assert est.min_friction_coefficients["left_sole"] == pytest.approx(1.2 * MU, rel=1e-3)
    # What comes back is the closest answer inside the cones: both feet at the friction
    # limit, and a residual that shows what the cones cannot carry.
    assert min(est.cone_margins.values()) >= -1e-6 * humanoid.weight
    for c in FEET:
        f = est.wrenches_local[c.name]
        assert abs(f[0]) == pytest.approx(MU * f[2], rel=1e-6)
    assert est.newton_euler_residual.force_norm > 0.05 * humanoid.weight
    # A lateral acceleration of the whole robot tips it over: no friction fixes that.
    a = zero.copy()
    a[1] = 1.2 * MU * 9.81
    est = estimate_contact_wrenches(humanoid, q, zero, a, FEET)
    assert est.status == "infeasible" and est.min_friction_scale is None


# OSQP and qpsolvers warn about sparsity and defaults
@pytest.mark.filterwarnings("ignore::Warning")
def test_backends_agree_or_report_failure(humanoid):
    rng = np.random.default_rng(3)
    problems = []
    for _ in range(5):
        q, v, a, tau, _ = known_sample(humanoid, rng)
        problems.append(build_estimation_problem(humanoid, q, v, a, FEET))
        problems.append(build_estimation_problem(humanoid, q, v, a, FEET, tau=tau))
    reference = [p.solve("daqp") for p in problems]
    assert all(r.found for r in reference)
    table = {}
    for solver in qpsolvers.available_solvers:
        results = [p.solve(solver) for p in problems]
        found = [r.found for r in results]
        # A verified answer is the answer: the problems are strictly convex.
        for r, ref in zip(results, reference, strict=True):
            if r.found:
                assert_allclose(r.x, ref.x, rtol=0, atol=1e-6 * humanoid.weight)
        table[solver] = sum(found)
    print("verified solutions per backend:", table)
    assert table["daqp"] == len(problems)


def test_batch_matches_single_and_flags_bad_rows(humanoid):
    rng = np.random.default_rng(4)
    samples = [known_sample(humanoid, rng) for _ in range(8)]
    Q, V, A = (np.array([s[i] for s in samples]) for i in range(3))
    T = np.array([s[3] for s in samples])
    Q[2, 3:7] = 0.0
    for mode_tau in (None, T):
        batch = estimate_contact_wrenches(humanoid, Q, V, A, FEET, tau=mode_tau)
        assert batch.status[2] == "flagged" and "base quaternion is zero" in batch.reasons[2]
        for i in (0, 5):
            single = estimate_contact_wrenches(
                humanoid, Q[i], V[i], A[i], FEET, tau=None if mode_tau is None else T[i]
            )
            assert batch.status[i] == "found"
            assert_allclose(batch.wrenches[i], single.x, rtol=0, atol=1e-7)
            assert_allclose(batch.wrench("right_sole")[i], single.wrenches["right_sole"], atol=1e-7)
    assert (batch.status != "found").sum() == 1


def test_bad_arguments():
    robot = wb.load("humanoid")
    q, zero = robot.neutral(), np.zeros(robot.nv)
    with pytest.raises(
        SolverNotAvailableError, match="QP solver 'gurobi' is not installed; installed: "
    ):
        estimate_contact_wrenches(robot, q, zero, zero, FEET, solver="gurobi")
    with pytest.raises(StateError, match=r"tau must have shape \(19,\) \(joints\) or \(25,\)"):
        estimate_contact_wrenches(robot, q, zero, zero, FEET, tau=np.zeros(3))
    with pytest.raises(StateError, match="contact names must be unique"):
        estimate_contact_wrenches(robot, q, zero, zero, [FEET[0], FEET[0]])


def tipping_sample(robot, rng):
    """A random state with a large random acceleration: no wrenches inside the cones
    (mu = 0.1) can produce it."""
    joints = {n: rng.uniform(-0.3, 0.3) for n in robot.joint_names}
    q = robot.q_from_named(joints, base_position=[0.0, 0.0, H], beyond_limits=True)
    a = rng.normal(scale=20.0, size=robot.nv)
    a[0] = 15.0  # a large forward acceleration of the base
    return q, rng.normal(scale=0.5, size=robot.nv), a


@pytest.mark.filterwarnings("ignore::Warning")
@pytest.mark.parametrize("full", [False, True])
def test_infeasible_samples_are_infeasible_for_every_backend(humanoid, full):
    slippery = [SurfaceContact(c.frame, half_length=X, half_width=Y, mu=0.1) for c in FEET]
    rng = np.random.default_rng(94)
    limit = 1e-6 * humanoid.weight
    for _ in range(4):
        q, v, a = tipping_sample(humanoid, rng)
        tau = rng.normal(scale=10.0, size=humanoid.nv - 6) if full else None
        problem = build_estimation_problem(humanoid, q, v, a, slippery, tau=tau)
        answers = {}
        for solver in ("daqp", "quadprog", "proxqp"):
            if solver not in qpsolvers.available_solvers:
                continue
            est = problem.solve(solver, friction_scale=False)
            assert est.status == "infeasible", (solver, est.reason)
            assert est.reason.startswith("no wrenches inside the cones meet the equations")
            assert np.all(np.isfinite(est.x))
            assert min(est.cone_margins.values()) >= -limit
            assert est.equations_residual > 100 * limit
            answers[solver] = est.x
        # The closest wrenches are (nearly) unique: the backends agree to 1e-4 of the weight.
        for x in answers.values():
            assert_allclose(x, answers["daqp"], rtol=0, atol=1e-4 * humanoid.weight)
        batch = estimate_contact_wrenches(
            humanoid, q[None], v[None], a[None], slippery, tau=None if tau is None else tau[None]
        )
        assert batch.status[0] == "infeasible" and type(batch.status[0]) is str
        assert_allclose(batch.wrenches[0], answers["daqp"], rtol=0, atol=1e-6 * humanoid.weight)


def test_batch_speaks_the_single_vocabulary(humanoid):
    rng = np.random.default_rng(5)
    samples = [known_sample(humanoid, rng) for _ in range(3)]
    Q, V, A = (np.array([s[i] for s in samples]) for i in range(3))
    T = np.array([s[3] for s in samples])
    Q[1, 3:7] = 0.0
    ne = estimate_contact_wrenches(humanoid, Q, V, A, FEET)
    full = estimate_contact_wrenches(humanoid, Q, V, A, FEET, tau=T)
    for batch, rank, split in ((ne, 6, True), (full, 12, False)):
        single = estimate_contact_wrenches(
            humanoid, Q[0], V[0], A[0], FEET, tau=T[0] if batch is full else None
        )
        assert batch.rank.tolist() == [rank, -1, rank] == [single.rank, -1, single.rank]
        assert batch.identifiable.tolist() == [not split, False, not split]
        assert batch.split_from_regularization.tolist() == [split, False, split]
        assert single.split_from_regularization == split
        assert batch.status.tolist() == ["found", "flagged", "found"]
        assert all(type(s) is str for s in batch.status)
        assert batch.status_counts() == {"found": 2, "flagged": 1}
        assert all(type(s) is str for s in batch.status_counts())
        assert single.reason == "" and set(batch.reasons) == {1}
        # The residual of the estimates is balance's: the weight carried exactly.
        residual = single.newton_euler_residual.force
        assert batch.residual_force_norm[0] == pytest.approx(residual, abs=1e-8)
    with pytest.raises(ContactNotFoundError, match=r"contact 'nope' not found.*left_sole"):
        ne.wrench("nope")
    # One default regularisation, single and batch.
    import inspect

    from wholebody.estimation import DEFAULT_REGULARIZATION

    for fn in (build_estimation_problem, estimate_contact_wrenches):
        assert inspect.signature(fn).parameters["regularization"].default == DEFAULT_REGULARIZATION


def test_backend_errors_keep_their_reason(humanoid, monkeypatch):
    q, zero = humanoid.q_from_named({}, base_position=[0.0, 0.0, H]), np.zeros(humanoid.nv)
    problem = build_estimation_problem(humanoid, q, zero, zero, FEET)

    def broken(*args, **kwargs):
        raise RuntimeError("workspace exhausted")

    monkeypatch.setattr(qpsolvers, "solve_problem", broken)
    est = problem.solve("quadprog")
    assert est.status == "failed" and np.isnan(est.x).all()
    assert "RuntimeError: workspace exhausted" in est.reason
    monkeypatch.undo()
    with pytest.raises(SolverError, match="QP solver 'quadprog' rejected the options"):
        problem.solve("quadprog", no_such_option=1.0)


# --- known external wrenches, active contacts, per-contact identifiability ---------------


@pytest.fixture(scope="module")
def pushed_log():
    from tests.test_schedule import mujoco_log

    return mujoco_log("stand", 0.6, (0.3, 0.4, (0.0, 60.0, 0.0)))


def test_pushed_log_in_batch_with_the_push_given_is_exact(humanoid, pushed_log):
    """Full dynamics (double support, torques logged): each foot equals MuJoCo's to 1e-6 N
    once the push is given, in one process or in chunks; without it, it is far off."""
    from tests.test_schedule import DECLARED

    q, v, a, tau, W, t, push = pushed_log
    truth = W.reshape(len(t), -1)
    blind = estimate_contact_wrenches(humanoid, q, v, a, DECLARED, tau=tau)
    assert np.abs(blind.wrenches - truth).max() > 50.0
    for options in ({}, {"workers": 2, "chunk_size": 100}):
        batch = estimate_contact_wrenches(
            humanoid, q, v, a, DECLARED, tau=tau, external_wrenches={"torso": push}, **options
        )
        assert (batch.status == "found").all()
        assert_allclose(batch.wrenches, truth, rtol=0, atol=TOL)
        assert batch.identifiable_by_contact.all() and batch.rank.tolist() == [12] * len(t)
    # The push as a force at a point of its line of action (MuJoCo applies it at the
    # torso's centre of mass): the log's moment about the torso origin gives the lever.
    origin = np.array([humanoid.frame_position(qi, "torso") for qi in q])
    f, m = push[:, :3], push[:, 3:]
    lever = np.zeros_like(f)
    on = f[:, 1] != 0
    lever[on, 0] = m[on, 2] / f[on, 1]
    lever[on, 2] = -m[on, 0] / f[on, 1]
    pair = estimate_contact_wrenches(
        humanoid, q, v, a, DECLARED, tau=tau, external_wrenches={"torso": (f, origin + lever)}
    )
    assert_allclose(pair.wrenches, truth, rtol=0, atol=TOL)
    # Single samples agree.
    i = int(np.flatnonzero(on)[10])
    single = estimate_contact_wrenches(
        humanoid,
        q[i],
        v[i],
        a[i],
        DECLARED,
        tau=tau[i],
        external_wrenches={"torso": (f[i], origin[i] + lever[i])},
    )
    assert_allclose(single.x, truth[i], rtol=0, atol=TOL)


@pytest.mark.slow
def test_pushed_single_support_in_newton_euler_mode_is_exact(humanoid):
    """A push during single support, Newton-Euler mode (no torques), the simulator's
    schedule and the push given: the stance foot equals MuJoCo's to 1e-6 N."""
    from tests.test_schedule import DECLARED, mujoco_log, simulator_schedule

    q, v, a, _, W, t, push = mujoco_log("step", 1.4, (1.15, 1.25, (0.0, 20.0, 0.0)))
    schedule = simulator_schedule(W)
    single = schedule.sum(axis=1) == 1
    pushed = single & (np.abs(push[:, 1]) > 0)
    assert pushed.sum() > 20
    batch = estimate_contact_wrenches(
        humanoid, q, v, a, DECLARED, active=schedule, external_wrenches={"torso": push}
    )
    assert_allclose(batch.wrenches[single], W.reshape(len(t), -1)[single], rtol=0, atol=TOL)
    blind = estimate_contact_wrenches(
        humanoid, q[pushed], v[pushed], a[pushed], DECLARED, active=schedule[pushed]
    )
    assert np.abs(blind.wrenches - W.reshape(len(t), -1)[pushed]).max() > 5.0


def test_active_mask_single_and_batch(humanoid):
    """A foot declared inactive carries exactly zero; the other then carries the whole
    determined wrench (identifiable), equal to the one-foot problem's."""
    rng = np.random.default_rng(7)
    q, v, a, _, _ = known_sample(humanoid, rng, FEET[:1])
    one = estimate_contact_wrenches(humanoid, q, v, a, FEET[:1])
    masked = estimate_contact_wrenches(humanoid, q, v, a, FEET, active=[True, False])
    assert masked.found and masked.identifiable and not masked.split_from_regularization
    assert masked.active == {"left_sole": True, "right_sole": False}
    assert masked.identifiable_by_contact == {"left_sole": True, "right_sole": True}
    assert_allclose(masked.wrenches["left_sole"], one.wrenches["left_sole"], rtol=0, atol=TOL)
    assert (masked.wrenches["right_sole"] == 0.0).all()
    both = estimate_contact_wrenches(humanoid, q, v, a, FEET)
    assert both.detailed_status == "underdetermined" and masked.detailed_status == "found"
    assert both.split_from_regularization_by_contact == {"left_sole": True, "right_sole": True}
    Q, V, A = q[None].repeat(3, 0), v[None].repeat(3, 0), a[None].repeat(3, 0)
    act = np.array([[True, False], [True, True], [False, False]])
    batch = estimate_contact_wrenches(humanoid, Q, V, A, FEET, active=act)
    assert_allclose(batch.wrenches[0], masked.x, rtol=0, atol=TOL)
    assert_allclose(batch.wrenches[1], both.x, rtol=0, atol=TOL)
    assert batch.status.tolist() == ["found", "found", "infeasible"]
    assert (batch.wrenches[2] == 0.0).all() and batch.rank.tolist() == [6, 6, 0]
    assert batch.identifiable_by_contact.tolist() == [[True, True], [False, False], [True, True]]
    assert batch.detailed_status.tolist() == ["found", "underdetermined", "infeasible"]
    assert batch.status_counts(detailed=True) == {"found": 1, "underdetermined": 1, "infeasible": 1}
    # The quadprog path (per-sample qpsolvers) agrees.
    slow = estimate_contact_wrenches(humanoid, Q, V, A, FEET, active=act, solver="quadprog")
    assert_allclose(slow.wrenches[:2], batch.wrenches[:2], rtol=0, atol=1e-6)


def test_point_contacts_identifiable_per_contact(humanoid):
    """Two point contacts on the left sole and one on the right. Newton-Euler mode: 9
    unknowns, rank 6, none determined. Full dynamics: the right point is determined; the two
    left ones are not (a force along the line between them is internal to the foot: rank
    5 + 3 = 8)."""
    robot = wb.load("humanoid")
    corners = []
    for i, (side, x, y) in enumerate([("left", X, Y), ("left", -X, -Y), ("right", 0.0, 0.0)]):
        robot.add_frame(f"c{i}", f"{side}_sole", [x, y, 0.0])
        corners.append(PointContact(f"c{i}", mu=MU))
    rng = np.random.default_rng(8)
    q, v, a, tau, truth = known_sample(robot, rng, corners)
    ne = estimate_contact_wrenches(robot, q, v, a, corners)
    assert ne.rank == 6 and not any(ne.identifiable_by_contact.values())
    full = estimate_contact_wrenches(robot, q, v, a, corners, tau=tau)
    assert full.rank == 8
    assert full.identifiable_by_contact == {"c0": False, "c1": False, "c2": True}
    assert_allclose(full.wrenches["c2"], truth[2], rtol=0, atol=TOL)
    for T in (None, tau[None]):
        batch = estimate_contact_wrenches(robot, q[None], v[None], a[None], corners, tau=T)
        assert batch.identifiable_by_contact.tolist() == (
            [[False, False, False]] if T is None else [[False, False, True]]
        )


def test_batch_friction_scale_matches_single(humanoid):
    q = humanoid.q_from_named({}, base_position=[0.0, 0.0, H])
    zero = np.zeros(humanoid.nv)
    push = np.array([1.2 * MU * humanoid.weight, 0, 0, 0, 0, 0])
    batch = estimate_contact_wrenches(
        humanoid,
        q[None],
        zero[None],
        zero[None],
        FEET,
        external_wrenches={"left_sole": push},
        friction_scale=True,
    )
    assert batch.status[0] == "infeasible"
    assert batch.min_friction_scale[0] == pytest.approx(1.2, rel=1e-3)


def test_bad_estimation_arguments(humanoid):
    q, zero = humanoid.neutral(), np.zeros(humanoid.nv)
    with pytest.raises(InvalidArgumentError, match=r"active must be a bool array of shape \(2,\)"):
        estimate_contact_wrenches(humanoid, q, zero, zero, FEET, active=[True])
    with pytest.raises(InvalidArgumentError, match=r"shape \(3, 2\)"):
        estimate_contact_wrenches(
            humanoid,
            np.tile(q, (3, 1)),
            np.zeros((3, 25)),
            np.zeros((3, 25)),
            FEET,
            active=np.ones((2, 2), bool),
        )
    with pytest.raises(InvalidArgumentError, match="full-dynamics estimation needs the body"):
        estimate_contact_wrenches(
            humanoid,
            q,
            zero,
            zero,
            FEET,
            tau=np.zeros(19),
            external_wrenches={"push": (np.ones(3), np.zeros(3))},
        )
    # A label with its point is fine in Newton-Euler mode.
    est = estimate_contact_wrenches(
        humanoid, q, zero, zero, FEET, external_wrenches={"push": (np.ones(3), np.zeros(3))}
    )
    assert est.newton_euler_residual.force_norm < TOL
