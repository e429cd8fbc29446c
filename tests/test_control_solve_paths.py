"""The controller's fast solve paths give the QP's optimum, and refuse what is not.

``WholeBodyController.solve`` first tries the last tick's active set (the KKT system of the
equality rows and of the inequality rows active at the last solution), accepted only when the
KKT conditions hold; torque limits are lazy (left out when the solution without them meets
them). Reference: the same QP (``WholeBodyController.problem``) solved by quadprog, a dual
active-set method independent of daqp and of the KKT path. Failing directions: a wrong active
set is refused (the answer is still the optimum), a solution that breaks the torque limits
sends the QP back with every row.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import qpsolvers

from wholebody.control import (
    ComTask,
    ContactForceTask,
    PostureTask,
    WholeBodyController,
)
from wholebody.control._controller import WholeBodyController as _Impl

from ._control_common import SOLES, controller, eom_residual, standing

#: Two exact QP solvers on the same problem agree to this [m/s^2, N] (measured <= 3.3e-11).
AGREE = 1e-8
#: The rows hold to this [N, N m, m/s^2].
TOL = 1e-9


def reference(ctrl):
    """The QP of the last update solved by quadprog."""
    x = qpsolvers.solve_problem(ctrl.problem(), solver="quadprog").x
    assert x is not None
    return x


def count_paths(monkeypatch):
    """Counts of the active-set solves accepted / refused and of daqp solves."""
    counts = {"kkt": 0, "refused": 0, "daqp": 0}
    rows = _Impl._solve_rows

    def counted(method):
        def call(self, *args):
            sol = method(self, *args)
            counts["kkt" if sol is not None else "refused"] += 1
            return sol

        return call

    def counted_rows(self, P, q, m):
        counts["daqp"] += 1
        return rows(self, P, q, m)

    for name in ("_solve_active_set", "_solve_active_set_reduced"):  # full / wrenches eliminated
        monkeypatch.setattr(_Impl, name, counted(getattr(_Impl, name)))
    monkeypatch.setattr(_Impl, "_solve_rows", counted_rows)
    return counts


def test_active_set_path_is_the_optimum_with_rows_active(humanoid, monkeypatch):
    """A CoM pushed sideways on low friction: cone rows active, and the active-set path
    (used on most ticks) gives quadprog's optimum, with every row held."""
    counts = count_paths(monkeypatch)
    ctrl = controller(humanoid, mu=0.15)
    com = ctrl.task("com")
    q, v = standing(humanoid, 0)
    active_ticks = 0
    for k in range(30):
        com.set_reference(np.zeros(3), acceleration=[2.0 + 0.01 * k, 0.5, 0.0])
        com.kp[:] = 0.0
        ctrl.update(q, v, 1e-3 * k)
        sol = ctrl.solve()
        np.testing.assert_allclose(sol.x, reference(ctrl), rtol=0, atol=AGREE)
        assert all(g <= TOL for g in ctrl.violations(sol.x).values())
        active_ticks += bool(len(ctrl._rows.active))
    assert active_ticks > 20  # inequality rows active at the solutions
    assert counts["kkt"] > 20 and counts["daqp"] >= 1


def test_a_wrong_active_set_is_refused(humanoid):
    """The KKT system of a wrong active set breaks a KKT condition: refused, and solve()
    still returns the optimum (quadprog's)."""
    ctrl = controller(humanoid)
    q, v = standing(humanoid, 1)
    ctrl.update(q, v, 0.0)
    x_opt = reference(ctrl)
    qp = ctrl._rows
    cones = dict(qp.spans)["friction_cones"]
    # At the standing optimum no cone row is active: claim two are, at their upper bound 0.
    wrong = np.array([cones.start, cones.start + 1])
    qp.set_active(wrong, np.ones(2))
    P, qv = ctrl._cost()
    assert ctrl._solve_active_set(P, qv) is None  # the full KKT system
    assert ctrl._solve_active_set_reduced(ctrl._objective()) is None  # wrenches eliminated
    qp.set_active(wrong, np.ones(2))
    np.testing.assert_allclose(ctrl.solve().x, x_opt, rtol=0, atol=AGREE)
    # The active set daqp found there (set by that solve) is accepted by both: the optimum.
    for sol in (ctrl._solve_active_set(*ctrl._cost()), ctrl._solve_active_set_reduced(False)):
        assert sol is not None
        np.testing.assert_allclose(sol.x, x_opt, rtol=0, atol=AGREE)


def test_lazy_torque_limits_give_the_full_qps_solution(humanoid, monkeypatch):
    """Limits inactive: left out, the same optimum. Limits 30 % under the torques the
    robot needs: the solution without them breaks them, the QP is solved again with them
    (the optimum of the full QP), and the next tick goes to the full QP at once."""
    q, v = standing(humanoid, 0, scale=0.0)
    free = controller(humanoid)
    free.update(q, v, 0.0)
    tau = np.abs(free.solve().torque)
    counts = count_paths(monkeypatch)
    loose = controller(humanoid, torque_limits=np.full(humanoid.nv - 6, 1e3))
    loose.update(q, v, 0.0)
    sol = loose.solve()
    np.testing.assert_allclose(sol.x, reference(loose), rtol=0, atol=AGREE)
    assert not loose._rows.lazy_needed
    limits = np.where(tau > 0.5 * tau.max(), 0.7 * tau, 1e3)
    tight = controller(humanoid, torque_limits=limits)
    for k in range(3):
        tight.update(q, v, 1e-3 * k)
        sol = tight.solve()
        np.testing.assert_allclose(sol.x, reference(tight), rtol=0, atol=AGREE)
        assert np.all(np.abs(sol.torque) <= limits + TOL)
        assert tight._rows.lazy_needed  # active: every row at the next tick
    assert counts["refused"] >= 1 and counts["daqp"] >= 2


def test_controller_pass_against_separate_pinocchio_calls(humanoid):
    """Robot.controller_pass: each term against its own Pinocchio algorithm on fresh data;
    the robot's other methods between two ticks leave it alone; a frame added later is
    read (the pass follows the robot's copied model)."""
    robot = humanoid
    rng = np.random.default_rng(3)
    q = pin.integrate(robot.model, robot.neutral(), rng.normal(scale=0.3, size=robot.nv))
    v = rng.normal(scale=0.5, size=robot.nv)
    tick = robot.controller_pass()
    tick(q, v)
    m = robot.model
    d = m.createData()
    M = pin.crba(m, d, q)
    np.testing.assert_allclose(tick.mass_matrix, np.triu(M) + np.triu(M, 1).T, atol=1e-12)
    np.testing.assert_allclose(tick.nonlinear_effects, pin.rnea(m, d, q, v, 0 * v), atol=1e-10)
    np.testing.assert_allclose(tick.com, pin.centerOfMass(m, d, q), atol=1e-12)
    np.testing.assert_allclose(tick.momentum, pin.computeCentroidalMomentum(m, d, q, v).vector)
    Ag = pin.computeCentroidalMap(m, d, q)
    np.testing.assert_allclose(tick.momentum_matrix, Ag, atol=1e-12)
    np.testing.assert_allclose(tick.com_jacobian, Ag[:3] / robot.mass, atol=1e-12)
    np.testing.assert_allclose(tick.com_velocity, Ag[:3] @ v / robot.mass, atol=1e-12)
    rate = pin.computeCentroidalMomentumTimeVariation(m, d, q, v, 0 * v)
    np.testing.assert_allclose(tick.momentum_drift, pin.Force(rate).vector, atol=1e-9)
    fid = robot.frame_id("left_hand")
    placement, J, drift = tick.frame(fid)
    lwa = pin.LOCAL_WORLD_ALIGNED
    np.testing.assert_allclose(J, pin.computeFrameJacobian(m, d, q, fid, lwa), atol=1e-12)
    pin.forwardKinematics(m, d, q, v, 0 * v)
    pin.updateFramePlacements(m, d)
    acc = pin.getFrameClassicalAcceleration(m, d, fid, lwa).vector
    np.testing.assert_allclose(drift, acc, atol=1e-10)
    assert placement.isApprox(d.oMf[fid], 1e-12)
    for local, frame in ((False, lwa), (True, pin.LOCAL)):
        np.testing.assert_allclose(
            tick.velocity(fid, local=local), pin.getFrameVelocity(m, d, fid, frame).vector,
            atol=1e-12,
        )  # fmt: skip
    np.testing.assert_allclose(tick.velocity(fid), J @ v, atol=1e-12)
    # The placement is a copy of its own: the next pass leaves it alone (tasks and contacts
    # keep it as theirs without copying it again).
    kept = placement.copy()
    tick(robot.neutral(), np.zeros(robot.nv))
    assert placement == kept and not tick.placement(fid).isApprox(kept, 1e-6)
    tick(q, v)
    # The robot's own methods at another state do not touch the pass's arrays.
    before = tick.mass_matrix.copy(), tick.com.copy()
    robot.mass_matrix(robot.neutral())
    robot.com(robot.neutral())
    np.testing.assert_array_equal(tick.mass_matrix, before[0])
    np.testing.assert_array_equal(tick.com, before[1])
    # A frame added after the pass was built (the robot's model is copied): read at once.
    robot2 = type(robot)(robot.model)
    tick2 = robot2.controller_pass()
    tick2(q, v)
    robot2.add_frame("hand_tip", "left_hand", [0.0, 0.0, -0.1])
    tick2(q, v)
    tip = tick2.placement(robot2.frame_id("hand_tip"))
    expected = pin.SE3(np.eye(3), np.array([0.0, 0.0, -0.1]))
    assert tip.isApprox(tick2.placement(robot2.frame_id("left_hand")) * expected, 1e-12)


@pytest.mark.parametrize("bad", [-1.0, np.nan])
def test_task_weight_checked_when_set(bad):
    task = ComTask(kp=1.0, kd=1.0)
    with pytest.raises(ValueError, match="weight"):
        task.weight = bad
    task.weight = 4.0
    np.testing.assert_allclose(task._row_scale, 2.0)
    task.mask = [True, False, True]
    np.testing.assert_allclose(task._row_scale, [2.0, 0.0, 2.0])
    with pytest.raises(ValueError, match="mask"):
        task.mask = [True, False]
    with pytest.raises(ValueError):
        task.mask[0] = False  # read-only: set a new mask


def test_wrenches_eliminated_with_point_contacts_and_force_references(humanoid, monkeypatch):
    """Point contacts (3 unknowns each) tracking reference forces (wrench terms in q): the
    system with the wrenches eliminated gives quadprog's optimum; no contact at all too."""
    from wholebody.contacts import PointContact

    counts = count_paths(monkeypatch)
    q, v = standing(humanoid, 2)
    ctrl = WholeBodyController(humanoid)
    for f in SOLES:
        ctrl.add_contact(PointContact(f, mu=0.5), kp=10.0, kd=6.0)
        ctrl.add_task(ContactForceTask(f, weight=1e-6, reference=[1.0, -2.0, 300.0]))
    ctrl.add_task(ComTask(kp=25.0, kd=10.0))
    ctrl.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-3))
    free = WholeBodyController(humanoid)  # no contact: nothing to eliminate
    free.add_task(ComTask(kp=25.0, kd=10.0))
    free.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-3))
    for c in (ctrl, free):
        for k in range(3):
            c.update(q, v, 1e-3 * k)
            np.testing.assert_allclose(c.solve().x, reference(c), rtol=0, atol=AGREE)
    assert counts["kkt"] >= 4


@pytest.mark.parametrize("frozen", [False, True])
def test_kept_views_follow_a_model_copied_between_ticks(humanoid, monkeypatch, frozen):
    """The views that a tick keeps of the pass's arrays (M and h rows) are made again when
    the robot's model is copied between ticks (a frame added): the next solution meets the
    equations of motion of an independent Pinocchio pass at its state. Failing direction:
    with the views frozen at the first tick's (the old data, no longer written), it does
    not."""
    from wholebody.control._controller import _Rows

    robot = type(humanoid)(humanoid.model)
    ctrl = controller(robot)
    q, v = standing(robot, 0)
    for k in range(3):
        ctrl.update(q, v, 1e-3 * k)
        ctrl.solve()
    if frozen:
        kept = _Rows.views

        def first(self, kin):
            if self._views is None:
                return kept(self, kin)
            return self._views

        monkeypatch.setattr(_Rows, "views", first)
    robot.add_frame("tick_probe", "left_hand", [0.0, 0.0, -0.1])  # the model is copied
    q2 = pin.integrate(robot.model, q, 2.0 * v)
    v2 = standing(robot, 1, scale=0.3)[1]
    ctrl.update(q2, v2, 3e-3)
    residual = eom_residual(robot, q2, v2, ctrl.solve())
    if frozen:
        assert residual > 1e-3  # [N, N m]
    else:
        assert residual <= TOL * max(1.0, robot.weight)


def test_active_set_repairs_when_a_joint_bound_starts_to_bite(humanoid, monkeypatch):
    """The same state twice, the posture task pulling the elbow past its limit, which it
    nears too fast to brake: first with a_max = 1e4 (the elbow's bound far), then 50 rad/s^2
    (the bound bites). The last tick's set breaks the elbow's row and is refused; the sets
    with the broken rows added are tried, the second accepted by the KKT checks (no daqp):
    quadprog's optimum, the elbow at its bound. A wrong set claimed: still the optimum."""
    from wholebody.control import JointBounds

    counts = count_paths(monkeypatch)
    robot = humanoid
    ctrl = controller(robot)
    bounds = ctrl.add_constraint(JointBounds(robot, dt=1e-3, acceleration_limit=1e4))
    j = robot.model.getJointId("left_elbow")
    iq, iv = robot.model.joints[j].idx_q, robot.model.joints[j].idx_v
    q_max = robot.model.upperPositionLimit[iq]
    q, v = standing(robot, 0, scale=0.0)
    q[iq], v[iv] = q_max - 0.02, 1.5
    target = q.copy()
    target[iq] = q_max + 1.0
    ctrl.task("posture").set_reference(target)
    ctrl.task("posture").weight = 1.0
    ctrl.update(q, v, 0.0)
    ctrl.solve()
    row = dict(ctrl._spans)["joint_bounds"].start + iv - 6
    assert row not in ctrl._rows.active
    bounds.acceleration_limit[:] = 50.0
    before = dict(counts)
    ctrl.update(q, v, 1e-3)
    sol = ctrl.solve()
    assert counts["daqp"] == before["daqp"]  # no daqp: the repaired set was accepted
    # Refused: the last tick's set (the elbow's row broken), then that set with the row
    # (a second joint's row broken by the braking); accepted with both.
    assert counts["refused"] == before["refused"] + 2
    assert row in ctrl._rows.active and len(ctrl._rows.active) == 2
    assert abs(sol.acceleration[iv] - bounds.upper[iv - 6]) <= TOL
    assert bounds.upper[iv - 6] == -50.0  # braking at a_max
    np.testing.assert_allclose(sol.x, reference(ctrl), rtol=0, atol=AGREE)
    assert all(g <= TOL for g in ctrl.violations(sol.x).values())
    # Failing direction: a repaired set that is wrong again is refused and daqp answers.
    ctrl.update(q, v, 2e-3)
    qp = ctrl._rows
    cones = dict(qp.spans)["friction_cones"]
    qp.set_active(np.array([cones.start, cones.start + 1]), np.ones(2))
    sol = ctrl.solve()
    np.testing.assert_allclose(sol.x, reference(ctrl), rtol=0, atol=AGREE)
    assert all(g <= TOL for g in ctrl.violations(sol.x).values())
    # The other direction of the repair: a set claiming the elbow's upper bound, which does
    # not bite here (a_max = 5 rad/s^2, the elbow at rest mid-range, the posture at it):
    # held at the bound, the row's multiplier has the wrong sign; the set without it is
    # tried and accepted, no daqp.
    bounds.acceleration_limit[:] = 5.0
    q[iq], v[iv] = 0.5 * (q_max + robot.model.lowerPositionLimit[iq]), 0.0
    ctrl.task("posture").set_reference(q)
    ctrl.update(q, v, 3e-3)
    ctrl.solve()
    ctrl.update(q, v, 4e-3)
    ctrl._rows.set_active(np.array([row]), np.ones(1))
    before = dict(counts)
    sol = ctrl.solve()
    assert counts["daqp"] == before["daqp"] and counts["refused"] == before["refused"] + 1
    assert row not in ctrl._rows.active
    np.testing.assert_allclose(sol.x, reference(ctrl), rtol=0, atol=AGREE)


def test_a_lazy_constraint_of_the_users_is_met_through_the_default_check(humanoid):
    """A user's lazy constraint (the base class's satisfied: its rows written and checked):
    a bound on one joint acceleration that the QP without it breaks. The solution meets it
    and is quadprog's optimum of the QP with every row; with the bound far, the rows are left
    out and the answer is the same as without the constraint."""
    from wholebody.control import Constraint

    robot = humanoid
    iv = robot.model.joints[robot.model.getJointId("left_elbow")].idx_v

    class ElbowBound(Constraint):
        name, lazy = "elbow_bound", True

        def __init__(self, bound):
            self.bound = bound

        def rows(self, kin, layout):
            return 1

        def fill(self, kin, layout, C, lower, upper):
            C[0, iv] = 1.0
            lower[0], upper[0] = -self.bound, self.bound

    ctrl = controller(robot)
    q, v = standing(robot, 2, scale=0.5)
    ctrl.update(q, v, 0.0)
    free = ctrl.solve()
    bound = 0.5 * abs(free.acceleration[iv])
    assert bound > 1e-3
    ctrl.add_constraint(ElbowBound(bound))
    ctrl.update(q, v, 1e-3)
    sol = ctrl.solve()
    assert abs(sol.acceleration[iv]) <= bound + TOL
    ctrl._fill_lazy()
    np.testing.assert_allclose(sol.x, reference(ctrl), rtol=0, atol=AGREE)
    loose = controller(robot)
    loose.add_constraint(ElbowBound(1e6))
    loose.update(q, v, 0.0)
    np.testing.assert_allclose(loose.solve().x, free.x, rtol=0, atol=AGREE)
