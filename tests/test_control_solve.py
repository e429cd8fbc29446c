"""The controller's one solve route: daqp's workspace, warm-started, its answers checked.

Reference: the same QP (``WholeBodyController.problem``) solved by quadprog, a dual
active-set method independent of daqp, and the equations of motion from Pinocchio's own
calls. Cases where the working set matters: cone rows active (low friction), one contact
(single support), point contacts tracking forces, a joint bound that starts to bite between
two ticks. Failing directions: a wrong answer from the workspace is solved again cold, and
refused, naming the groups it breaks, when it stays wrong.
"""

from __future__ import annotations

import daqp
import numpy as np
import pinocchio as pin
import pytest
import qpsolvers

from wholebody.contacts import PointContact, SurfaceContact
from wholebody.control import (
    AngularMomentumTask,
    ComTask,
    ContactForceTask,
    FrameTask,
    JointBounds,
    PostureTask,
    WholeBodyController,
)
from wholebody.errors import SolverError

from ._control_common import SOLES, controller, eom_residual, standing

#: Two exact QP solvers on the same problem agree to this [m/s^2, N] (measured <= 3e-11).
AGREE = 1e-8
#: The rows hold to this [N, N m, m/s^2].
TOL = 1e-9


def reference(ctrl):
    """The QP of the last update solved by quadprog."""
    x = qpsolvers.solve_problem(ctrl.problem(), solver="quadprog").x
    assert x is not None
    return x


def check_optimum(ctrl, robot, q, v, sol):
    """quadprog's optimum, every row held, the equations of motion of Pinocchio's calls."""
    np.testing.assert_allclose(sol.x, reference(ctrl), rtol=0, atol=AGREE)
    assert all(g <= TOL for g in ctrl.violations(sol.x).values())
    assert eom_residual(robot, q, v, sol) <= TOL * robot.weight


class Recorded(daqp.Model):
    """daqp's workspace, its setups and its solves' iteration counts recorded."""

    setups: list[int] = []
    iterations: list[int] = []

    def setup(self, *args, **kwargs):
        Recorded.setups.append(len(args[3]))
        return super().setup(*args, **kwargs)

    def solve(self):
        out = super().solve()
        Recorded.iterations.append(out[3]["iterations"])
        return out


@pytest.fixture
def recorded(monkeypatch):
    Recorded.setups, Recorded.iterations = [], []
    monkeypatch.setattr(daqp, "Model", Recorded)
    return Recorded


def test_optimum_with_cone_rows_active(humanoid, recorded):
    """A CoM pushed sideways on low friction, the push growing tick by tick: cone rows
    active at every solution, each quadprog's optimum; one workspace set up for all ticks,
    each later tick warm-started from the last working set (one iteration: the same set)."""
    ctrl = controller(humanoid, mu=0.15)
    com = ctrl.task("com")
    com.kp[:] = 0.0
    q, v = standing(humanoid, 0)
    for k in range(30):
        com.set_reference(np.zeros(3), acceleration=[2.0 + 0.01 * k, 0.5, 0.0])
        ctrl.update(q, v, 1e-3 * k)
        sol = ctrl.solve()
        check_optimum(ctrl, humanoid, q, v, sol)
        C, lower, upper = ctrl.rows()
        cones = dict(ctrl._qp.spans)["friction_cones"]
        assert np.max(C[cones] @ sol.x - upper[cones]) >= -1e-9  # a cone row active
    assert len(recorded.setups) == 1
    assert recorded.iterations[0] > 1 and max(recorded.iterations[1:]) == 1


def test_single_support_is_the_optimum(humanoid):
    """One sole held, the other under a frame task, random states, with and without a force
    reference (wrench terms in q): quadprog's optimum and the equations of motion."""
    bent = {"hip_pitch": -0.25, "knee": 0.5, "ankle_pitch": -0.25}
    q0 = humanoid.q_from_named({f"{s}_{j}": x for s in ("left", "right") for j, x in bent.items()})
    rng = np.random.default_rng(7)
    for force in (None, [3.0, -2.0, 200.0, 1.0, -0.5, 0.2]):
        ctrl = WholeBodyController(humanoid)
        ctrl.add_contact(
            SurfaceContact("left_sole", half_length=0.1, half_width=0.05, mu=0.7), kp=10.0, kd=6.0
        )
        ctrl.add_task(ComTask(kp=25.0, kd=10.0))
        ctrl.add_task(AngularMomentumTask(kd=10.0, weight=1e-3))
        ctrl.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-3))
        ctrl.add_task(FrameTask("right_sole", kp=100.0, kd=20.0, weight=1.0))
        ctrl.add_task(ContactForceTask("left_sole", weight=1e-6, reference=force))
        for k in range(4):
            q = pin.integrate(humanoid.model, q0, rng.normal(scale=0.02, size=humanoid.nv))
            v = rng.normal(scale=0.05, size=humanoid.nv)
            ctrl.update(q, v, 1e-3 * k)
            check_optimum(ctrl, humanoid, q, v, ctrl.solve())


def test_point_contacts_with_force_references_and_no_contact(humanoid):
    """Point contacts (3 unknowns each) tracking reference forces; and no contact at all
    (the robot falls: only the floating base's rows): quadprog's optimum each time."""
    q, v = standing(humanoid, 2)
    ctrl = WholeBodyController(humanoid)
    for f in SOLES:
        ctrl.add_contact(PointContact(f, mu=0.5), kp=10.0, kd=6.0)
        ctrl.add_task(ContactForceTask(f, weight=1e-6, reference=[1.0, -2.0, 300.0]))
    free = WholeBodyController(humanoid)
    for c in (ctrl, free):
        c.add_task(ComTask(kp=25.0, kd=10.0))
        c.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-3))
        for k in range(3):
            c.update(q, v, 1e-3 * k)
            check_optimum(c, humanoid, q, v, c.solve())


def test_a_joint_bound_that_starts_to_bite(humanoid, recorded):
    """The same state twice, the posture task pulling the elbow past its limit, which it
    nears too fast to brake: first with a_max = 1e4 (its bound far), then 50 rad/s^2 (the
    bound bites, the working set changes): quadprog's optimum, the elbow braking at its
    bound, from the same workspace (warm-started from the set without the row)."""
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
    first = ctrl.solve()
    assert bounds.upper[iv - 6] - first.acceleration[iv] > 1.0  # its row not active
    bounds.acceleration_limit[:] = 50.0
    ctrl.update(q, v, 1e-3)
    sol = ctrl.solve()
    check_optimum(ctrl, robot, q, v, sol)
    assert bounds.upper[iv - 6] == -50.0  # braking at a_max
    assert abs(sol.acceleration[iv] - bounds.upper[iv - 6]) <= TOL
    assert len(recorded.setups) == 1


def test_a_wrong_answer_is_solved_again_cold_then_refused(humanoid, monkeypatch):
    """An answer of the workspace that breaks a row (a cone row broken by 1 N) is not
    returned: the QP is solved again from a cold workspace (quadprog's optimum); when the
    cold answer is wrong too, a SolverError names the groups broken and by how much."""
    ctrl = controller(humanoid, torque_limits=False)  # no lazy rows: one workspace
    q, v = standing(humanoid, 1)
    ctrl.update(q, v, 0.0)
    ctrl.solve()
    cones = dict(ctrl._qp.spans)["friction_cones"]
    wrong = {"left": 1}

    class Broken(daqp.Model):
        def solve(self):
            x, fval, flag, info = super().solve()
            if wrong["left"]:
                wrong["left"] -= 1
                C, _, upper = ctrl.rows()
                row = C[cones.start]
                x = x + (upper[cones.start] + 1.0 - row @ x) * row / (row @ row)
            return x, fval, flag, info

    monkeypatch.setattr(daqp, "Model", Broken)
    ctrl._qp.levels[0].workspaces[:] = [None, None]  # the next solve sets up a Broken workspace
    ctrl.update(q, v, 1e-3)
    sol = ctrl.solve()
    assert wrong["left"] == 0
    check_optimum(ctrl, humanoid, q, v, sol)
    wrong["left"] = 2
    ctrl.update(q, v, 2e-3)
    message = r"breaks dynamics by [\d.]+, friction_cones by [\d.]+ \(tolerance 6.4\de-07\)$"
    with pytest.raises(SolverError, match=message):
        ctrl.solve()


def test_lazy_torque_limits_give_the_full_qps_optimum(humanoid, recorded):
    """Limits far: their rows left out of daqp's (one workspace, without them), the optimum
    of the QP with them. Limits 30 % under the torques the robot needs: the answer without
    them breaks them, the QP is solved again with them (quadprog's optimum, the limits met,
    one active), and the next ticks with them at once; limits far again: left out again
    from the tick after."""
    q, v = standing(humanoid, 0, scale=0.0)
    free = controller(humanoid)
    free.update(q, v, 0.0)
    tau = np.abs(free.solve().torque)
    recorded.setups.clear()
    limits = np.full(humanoid.nv - 6, 1e3)
    ctrl = controller(humanoid, torque_limits=limits)
    rows = ctrl.constraints[-1]
    ctrl.update(q, v, 0.0)
    check_optimum(ctrl, humanoid, q, v, ctrl.solve())
    assert not ctrl._qp.levels[0].lazy_needed and recorded.setups == [ctrl._qp.m_core]
    rows.limits[:] = np.where(tau > 0.5 * tau.max(), 0.7 * tau, 1e3)
    rows._tau_max[:] = rows.limits
    for k in range(1, 4):
        ctrl.update(q, v, 1e-3 * k)
        sol = ctrl.solve()
        check_optimum(ctrl, humanoid, q, v, sol)
        assert np.all(np.abs(sol.torque) <= rows.limits + TOL)
        assert np.max(np.abs(sol.torque) - rows.limits) >= -1e-6
        assert ctrl._qp.levels[0].lazy_needed
    assert recorded.setups == [ctrl._qp.m_core, ctrl._qp.m]  # the second: with them
    rows.limits[:] = rows._tau_max[:] = 1e3
    for k in range(4, 6):
        ctrl.update(q, v, 1e-3 * k)
        check_optimum(ctrl, humanoid, q, v, ctrl.solve())
    assert not ctrl._qp.levels[0].lazy_needed


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
    check_optimum(ctrl, robot, q, v, sol)
    loose = controller(robot)
    loose.add_constraint(ElbowBound(1e6))
    loose.update(q, v, 0.0)
    np.testing.assert_allclose(loose.solve().x, free.x, rtol=0, atol=AGREE)
    assert not loose._qp.levels[0].lazy_needed


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


@pytest.mark.parametrize("frozen", [False, True])
def test_kept_views_follow_a_model_copied_between_ticks(humanoid, monkeypatch, frozen):
    """The views that a tick keeps of the pass's arrays (M and h rows) are made again when
    the robot's model is copied between ticks (a frame added): the next solution meets the
    equations of motion of an independent Pinocchio pass at its state. Failing direction:
    with the views frozen at the first tick's (the old data, no longer written), it does
    not."""
    from wholebody.control._qp import QP as _QP

    robot = type(humanoid)(humanoid.model)
    ctrl = controller(robot)
    q, v = standing(robot, 0)
    for k in range(3):
        ctrl.update(q, v, 1e-3 * k)
        ctrl.solve()
    if frozen:
        kept = _QP.views

        def first(self, kin):
            if self._views is None:
                return kept(self, kin)
            return self._views

        monkeypatch.setattr(_QP, "views", first)
    robot.add_frame("tick_probe", "left_hand", [0.0, 0.0, -0.1])  # the model is copied
    q2 = pin.integrate(robot.model, q, 2.0 * v)
    v2 = standing(robot, 1, scale=0.3)[1]
    ctrl.update(q2, v2, 3e-3)
    residual = eom_residual(robot, q2, v2, ctrl.solve())
    if frozen:
        assert residual > 1e-3  # [N, N m]
    else:
        assert residual <= TOL * max(1.0, robot.weight)
