"""Hard and soft tasks, contacts and constraints, and strict priority levels.

References: quadprog (a dual active-set method independent of daqp) on QPs assembled here
from the tasks' public rows (``jacobian``, ``drift``, ``desired``, ``mask``, ``weight``) and the
controller's rows of a problem without them; a strict hierarchy as a sequence of quadprog
solves, each level's task values at its optimum kept as equalities (an independent row
basis of them, by SVD) for the levels below; the equations of motion from Pinocchio's own
calls.
"""

from __future__ import annotations

import numpy as np
import pytest
from quadprog import solve_qp as quadprog_solve

from wholebody.control import (
    AngularMomentumTask,
    ComTask,
    ContactForceTask,
    FrameTask,
    JointBounds,
    PostureTask,
    TorqueLimits,
    WholeBodyController,
)
from wholebody.errors import InvalidArgumentError, SolverError

from ._control_common import SOLES, controller, eom_residual, sole, standing

#: Two exact QP solvers on the same problem agree to this [m/s^2, N].
AGREE = 1e-8
#: The rows hold to this [N, N m, m/s^2].
TOL = 1e-9
#: quadprog's inequality rows relaxed by this (of each row's norm) in the hierarchy's
#: reference: it breaks the ties of degenerate vertices (a foot unloaded at its cone's apex),
#: where quadprog otherwise reports feasible QPs inconsistent.
RELAX = 1e-10


def quadprog(P, q, A, b, C, lower, upper):
    """``min x^T P x / 2 + q^T x`` s.t. ``A x = b``, ``lower <= C x <= upper`` (quadprog on
    the null space of an independent basis of ``A`` (SVD), the inequality rows there scaled
    to unit norm, those the equalities fix left out)."""
    U, S, Vt = np.linalg.svd(A)
    r = int(np.sum(S > 1e-9 * S[0]))
    x0 = Vt[:r].T @ ((U[:, :r].T @ b) / S[:r])
    Z = Vt[r:].T
    if Z.shape[1] == 0:
        return x0
    G, c = C @ Z, C @ x0
    norm = np.linalg.norm(G, axis=1)
    free = norm > 1e-9 * np.linalg.norm(C, axis=1)
    has_up, has_lo = free & (upper < 1e29), free & (lower > -1e29)
    rows = np.vstack([-G[has_up], G[has_lo]])
    h = np.concatenate([c[has_up] - upper[has_up], lower[has_lo] - c[has_lo]])
    scale = np.linalg.norm(rows, axis=1)
    h = h - RELAX * scale
    if not len(h):
        return x0 - Z @ np.linalg.solve(Z.T @ P @ Z, Z.T @ (P @ x0 + q))
    z = quadprog_solve(Z.T @ P @ Z, -Z.T @ (P @ x0 + q), (rows / scale[:, None]).T, h / scale)[0]
    return x0 + Z @ z


def assert_same(robot, x, reference):
    """``x`` is ``reference`` (the same columns) to 1e-8: of the accelerations' scale on
    them, of the robot's weight on the wrenches (two exact solvers' agreement on QPs whose
    regularization is 1e-8 is some 1e-11 relative), and absolutely on any slacks."""
    nv, n0 = robot.nv, len(reference)
    scale = max(1.0, float(np.abs(reference[:nv]).max()))
    np.testing.assert_allclose(x[:nv], reference[:nv], rtol=0, atol=AGREE * scale)
    np.testing.assert_allclose(x[nv:n0], reference[nv:], rtol=0, atol=AGREE * robot.weight)


def task_rows(task, n):
    """A task's rows over ``n`` columns: ``(J, r, w)`` with ``w`` each row's weight in the
    cost ``sum w (J x - r)^2 / 2`` (the controller's convention), from its public fields."""
    J = np.zeros((task.size, n))
    J[:, : task.jacobian.shape[1]] = task.jacobian
    w = task.weight * task.mask
    if isinstance(task, PostureTask):
        w = w * task.joint_weights
    return J, task.desired - task.drift, w


def kept_rows(tasks, n):
    """The rows of a level's tasks that count (weight > 0)."""
    rows = [task_rows(t, n) for t in tasks]
    return np.vstack([J[w > 0] for J, _, w in rows])


def level_cost(tasks, n, regularization, slack_costs=()):
    P, q = regularization * np.eye(n), np.zeros(n)
    for t in tasks:
        J, r, w = task_rows(t, n)
        P += J.T @ (w[:, None] * J)
        q -= J.T @ (w * r)
    for columns, weight in slack_costs:
        q[columns] += weight
    return P, q


def independent(E, e):
    """An independent row basis of the consistent equalities ``E x = e`` (SVD)."""
    U, S, Vt = np.linalg.svd(E, full_matrices=False)
    r = int(np.sum(S > 1e-9 * S[0]))
    return Vt[:r], (U[:, :r].T @ e) / S[:r]


def test_a_hard_task_is_an_equality_and_the_rest_the_optimum(humanoid):
    """A CoM task and a hand's height (a masked frame task) as hard tasks: their rows hold
    to 1e-9, and the solution is quadprog's optimum of the QP without them plus their rows
    as equalities written here."""
    robot = humanoid
    q, v = standing(robot, 1)
    hard = controller(robot, torque_limits=False)
    hard.remove_task("com")
    com = hard.add_task(ComTask(kp=25.0, kd=10.0), priority=0)
    com.set_reference(robot.com(q) + [0.01, -0.005, -0.01])
    hand = hard.add_task(FrameTask("left_hand", kp=50.0, kd=14.0, mask=[0, 0, 1, 0, 0, 0]))
    hard.remove_task(hand.name)
    hard.add_task(hand, priority=0)
    hard.update(q, v, 0.0)
    sol = hard.solve()
    for t in (com, hand):
        assert np.abs(t.residual(sol.acceleration)).max() <= TOL
    assert eom_residual(robot, q, v, sol) <= TOL * robot.weight
    base = controller(robot, torque_limits=False)
    base.remove_task("com")
    base.update(q, v, 0.0)
    problem = base.problem()
    n = len(problem.q)
    rows = [task_rows(t, n) for t in (com, hand)]
    A = np.vstack([problem.A] + [J[t.mask] for (J, _, _), t in zip(rows, (com, hand))])
    b = np.concatenate([problem.b] + [r[t.mask] for (_, r, _), t in zip(rows, (com, hand))])
    C, lower, upper = problem.G, -np.full(len(problem.h), 1e30), problem.h
    x = quadprog(problem.P, problem.q, A, b, C, lower, upper)
    assert_same(robot, sol.x, x)


def _bounded(robot, amax, priority, weight, tasks_priority=1):
    ctrl = controller(robot, torque_limits=False)
    if tasks_priority != 1:
        for t in list(ctrl.tasks):
            ctrl.remove_task(t.name)
            ctrl.add_task(t, priority=tasks_priority)
    bounds = JointBounds(robot, dt=1e-3, acceleration_limit=amax)
    ctrl.add_constraint(bounds, priority=priority, weight=weight)
    return ctrl, bounds


@pytest.mark.parametrize("seed", [1, 2])
def test_soft_bounds_are_met_exactly_when_they_can_be(humanoid, seed):
    """Joint acceleration bounds tight enough to bite (several active) but feasible: soft
    (priority 1, weights 1e2 to 1e8; or on a level above the tasks, a weight 1e-2: only the
    level's regularization competes there) they give the hard bounds' solution, every slack
    zero and every bound met (to 1e-9). Failing direction: with a weight below what meeting
    them costs the tasks, they are broken."""
    robot = humanoid
    q, v = standing(robot, seed, scale=0.1)
    hard, bounds = _bounded(robot, 1.0, 0, 1.0)
    hard.update(q, v, 0.0)
    x_hard = hard.solve().x
    a = x_hard[6 : robot.nv]
    assert np.sum(np.minimum(bounds.upper - a, a - bounds.lower) <= TOL) >= 3  # they bite
    cases = [(1, w, 1) for w in (1e2, 1e4, 1e6, 1e8)] + [(1, 1e-2, 2)]
    for priority, weight, tasks_priority in cases:
        soft, soft_bounds = _bounded(robot, 1.0, priority, weight, tasks_priority)
        soft.update(q, v, 0.0)
        sol = soft.solve()
        assert_same(robot, sol.x, x_hard)
        assert np.abs(sol.slacks["joint_bounds"]).max() <= TOL
        a = sol.acceleration[6:]
        assert np.all(a <= soft_bounds.upper + TOL) and np.all(a >= soft_bounds.lower - TOL)
    cheap, cheap_bounds = _bounded(robot, 1.0, 1, 1e-6)
    cheap.update(q, v, 0.0)
    sol = cheap.solve()
    a = sol.acceleration[6:]
    assert sol.slacks["joint_bounds"].max() > 1e-6
    assert np.any((a > cheap_bounds.upper + 1e-6) | (a < cheap_bounds.lower - 1e-6))


def test_a_hard_bound_that_cannot_hold_is_named_and_a_soft_one_is_broken_least(humanoid):
    """Joint accelerations bounded to 0.1 rad/s^2 while both soles are held at a moving
    state: hard, no solution, the error names the bounds; soft (an exact penalty), the
    smallest violation the dynamics, contacts and cones allow: the equations of motion and
    the cones still hold, the slacks are the bounds' violations, and a larger weight does
    not lower the total violation (it is already the least)."""
    robot = humanoid
    q, v = standing(robot, 2, scale=0.3)
    hard, _ = _bounded(robot, 0.1, 0, 1.0)
    hard.update(q, v, 0.0)
    with pytest.raises(SolverError, match=r"infeasible\); without joint_bounds it has one$"):
        hard.solve()
    totals = []
    for weight in (1e4, 1e6):
        soft, bounds = _bounded(robot, 0.1, 1, weight)
        soft.update(q, v, 0.0)
        sol = soft.solve()
        a, s = sol.acceleration[6:], sol.slacks["joint_bounds"]
        past = np.maximum(np.maximum(a - bounds.upper, bounds.lower - a), 0.0)
        np.testing.assert_allclose(s, past, rtol=0, atol=1e-9)
        assert eom_residual(robot, q, v, sol) <= TOL * robot.weight
        violations = soft.violations(sol.x)
        assert violations["friction_cones"] <= TOL and violations["contacts"] <= TOL
        totals.append(s.sum())
    assert totals[0] > 0.1
    np.testing.assert_allclose(totals[1], totals[0], rtol=1e-6)


def test_soft_torque_limits_are_the_hard_ones_when_they_can_hold(humanoid):
    """Torque limits at half the unlimited solution's torques (several bite): hard, the
    solution is quadprog's optimum of the controller's problem with them; soft (priority 1)
    with a weight of 1e6 the same solution, every slack zero; with a weight of 1e-3 they are
    broken, each slack the torque's excess over its limit, the equations of motion kept."""
    robot = humanoid
    q, v = standing(robot, 2, scale=0.3)
    free = controller(robot, torque_limits=False)
    free.update(q, v, 0.0)
    limits = np.maximum(0.5 * np.abs(free.solve().torque), 1.0)
    hard = controller(robot, torque_limits=limits)
    hard.update(q, v, 0.0)
    sol = hard.solve()
    problem = hard.problem()
    x = quadprog(
        problem.P, problem.q, problem.A, problem.b, problem.G, -1e30 + 0 * problem.h, problem.h
    )
    assert_same(robot, sol.x, x)
    assert np.sum(np.abs(sol.torque) >= limits - TOL) >= 2  # they bite
    for weight in (1e6, 1e-3):
        soft = controller(robot, torque_limits=False)
        soft.add_constraint(TorqueLimits(limits), priority=1, weight=weight)
        soft.update(q, v, 0.0)
        ss = soft.solve()
        excess = np.maximum(np.abs(ss.torque) - limits, 0.0)
        np.testing.assert_allclose(ss.slacks["torque_limits"], excess, rtol=0, atol=TOL)
        assert eom_residual(robot, q, v, ss) <= TOL * robot.weight
        if weight > 1:
            assert_same(robot, ss.x, x)
            assert excess.max() <= TOL
        else:
            assert excess.max() > 0.1


def test_a_soft_contact_is_its_weighted_cost(humanoid):
    """A soft left sole (priority 1, weight 10): the solution is quadprog's optimum of the
    rigid controller's QP with the sole's rows taken out of the equalities and put in the
    cost; its acceleration residual is not zero, and shrinks with a larger weight."""
    robot = humanoid
    q, v = standing(robot, 3, scale=0.3)
    residuals = []
    for weight in (10.0, 1e3):
        soft = WholeBodyController(robot, torque_limits=False)
        left = soft.add_contact(sole(SOLES[0]), kp=10.0, kd=6.0, priority=1, weight=weight)
        soft.add_contact(sole(SOLES[1]), kp=10.0, kd=6.0)
        for t in controller(robot).tasks:
            soft.add_task(t)
        soft.update(q, v, 0.0)
        sol = soft.solve()
        rigid = controller(robot, torque_limits=False)
        rigid.update(q, v, 0.0)
        problem = rigid.problem()
        rows = np.arange(6, 12)  # the left sole's equality rows
        J, r = problem.A[rows], problem.b[rows]
        keep = np.setdiff1d(np.arange(len(problem.b)), rows)
        P = problem.P + weight * J.T @ J
        qv = problem.q - weight * J.T @ r
        x = quadprog(
            P, qv, problem.A[keep], problem.b[keep], problem.G, -1e30 + 0 * problem.h, problem.h
        )
        assert_same(robot, sol.x, x)
        assert eom_residual(robot, q, v, sol) <= TOL * robot.weight
        residuals.append(np.abs(left.jacobian @ sol.acceleration + left.drift - left.desired).max())
    assert residuals[0] > 1e-4 and residuals[1] < residuals[0] / 10


def _hierarchy(robot, regularization=1e-8):
    """Three levels: the CoM; the angular momentum; posture, the left hand's position (2 cm
    off) and force regularisation (the lowest; posture and forces diagonal costs)."""
    ctrl = WholeBodyController(robot, torque_limits=False, regularization=regularization)
    for f in SOLES:
        ctrl.add_contact(sole(f), kp=10.0, kd=6.0)
    com = ctrl.add_task(ComTask(kp=25.0, kd=10.0), priority=1)
    com.set_reference(robot.com(standing(robot)[0]) + [0.02, 0.01, -0.02])
    ctrl.add_task(AngularMomentumTask(kd=10.0, weight=0.1), priority=2)
    ctrl.add_constraint(JointBounds(robot, dt=1e-3, acceleration_limit=20.0))
    hand = FrameTask("left_hand", kp=50.0, kd=14.0, mask=[1, 1, 1, 0, 0, 0])
    ctrl.add_task(hand, priority=3)
    target = robot.placements(standing(robot)[0], "left_hand").se3()
    target.translation = target.translation + [0.02, 0.0, 0.02]
    hand.set_reference(target)
    ctrl.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-2), priority=3)
    for f in SOLES:
        ctrl.add_task(ContactForceTask(f, weight=1e-5), priority=3)
    return ctrl


@pytest.mark.parametrize("seed", range(6))
def test_three_levels_are_a_sequence_of_qps(humanoid, seed):
    """Each level's optimum in its tasks' values (the rows it keeps) is quadprog's, to 1e-8
    of their scale, on its cost under the constraints (hard joint bounds among them), each
    higher level's kept rows at quadprog's optimum and the inequality rows widened to hold
    the level above's solution (as the controller's); the final solution is quadprog's last
    one (accelerations to 1e-8 of their scale, wrenches to 1e-8 of the weight: the
    conditioning of a QP regularized by 1e-8 bounds the agreement of two exact solvers
    there, measured 1e-11 to 1e-10 relative), keeps every higher level's task values and
    meets the equations of motion. The levels above the lowest are regularized by 1e-6
    about the last tick's solution (the second tick here: warm workspaces)."""
    robot = humanoid
    q, v = standing(robot, seed, scale=0.1)
    ctrl = _hierarchy(robot)
    ctrl.update(q, v, 0.0)
    ctrl.solve()
    ctrl.update(q, v, 1e-3)
    center = ctrl._qp.x_last.copy()
    sol = ctrl.solve()
    assert ctrl.priorities == [1, 2, 3]
    C, lower, upper = (a.copy() for a in ctrl.rows())
    qp = ctrl._qp
    me, n = qp.me, qp.n
    levels = [[t for t in ctrl.tasks if t.priority == p] for p in (1, 2, 3)]
    A, b = C[:me], lower[:me]
    lo, up = lower[me:].copy(), upper[me:].copy()
    x = np.zeros(n)
    for k, tasks in enumerate(levels):
        if k < 2:
            P, qv = level_cost(tasks, n, 1e-6)
            qv -= 1e-6 * center
        else:
            P, qv = level_cost(tasks, n, ctrl.regularization)
        Ai, bi = independent(A, b)
        if k:  # the inequality rows widened to hold the level above's solution
            lo, up = np.minimum(lo, C[me:] @ x), np.maximum(up, C[me:] @ x)
        x = quadprog(P, qv, Ai, bi, C[me:], lo, up)
        rows = kept_rows(tasks, n)
        if k < 2:
            values = rows @ x
            atol = AGREE * max(1.0, float(np.abs(values).max()))
            np.testing.assert_allclose(rows @ qp.levels[k].x, values, rtol=0, atol=atol)
        A, b = np.vstack([A, rows]), np.concatenate([b, rows @ x])
    assert_same(robot, sol.x, x)
    for k, tasks in enumerate(levels[:2]):
        rows = kept_rows(tasks, n)
        np.testing.assert_allclose(rows @ sol.x, rows @ qp.levels[k].x, rtol=0, atol=TOL)
    assert eom_residual(robot, q, v, sol) <= TOL * robot.weight


def test_priorities_checked(humanoid):
    ctrl = WholeBodyController(humanoid)
    with pytest.raises(InvalidArgumentError, match=r"task 'com': priority must be an integer"):
        ctrl.add_task(ComTask(kp=1.0, kd=1.0), priority=-1)
    with pytest.raises(InvalidArgumentError, match=r"priority must be an integer >= 0"):
        ctrl.add_task(ComTask(kp=1.0, kd=1.0), priority=1.5)
    bounds = JointBounds(humanoid, dt=1e-3, acceleration_limit=10.0)
    with pytest.raises(InvalidArgumentError, match=r"'joint_bounds': weight must be finite"):
        ctrl.add_constraint(bounds, priority=1, weight=0.0)
    with pytest.raises(InvalidArgumentError, match=r"contact 'left_sole': weight must be"):
        ctrl.add_contact(sole(SOLES[0]), priority=2, weight=np.nan)
    assert ctrl.tasks == [] and "joint_bounds" not in [c.name for c in ctrl.constraints]
