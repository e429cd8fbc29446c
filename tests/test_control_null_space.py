"""The single-support solve: one surface contact, the wrench and the base accelerations
eliminated (``WholeBodyController._solve_null_space``), against independent references.

References: the same QP (``WholeBodyController.problem``) solved by quadprog (a dual
active-set method, independent of the controller's solves); the KKT system with only the
wrenches eliminated (``_solve_active_set_reduced``, an LU of another linear system); the
equations of motion from Pinocchio's own calls. Failing directions: a solution that breaks
an inequality row (a cone on low friction) is refused, so is one from a wrong inverse of the
contact's base block, so is one that breaks a torque limit (a lazy constraint), and
``solve`` still returns the optimum; a failed Cholesky hands over to the reduced KKT system.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import qpsolvers

from wholebody.contacts import SurfaceContact
from wholebody.control import (
    AngularMomentumTask,
    ComTask,
    ContactForceTask,
    FrameTask,
    PostureTask,
    WholeBodyController,
)
from wholebody.control._controller import WholeBodyController as _Impl

from ._control_common import eom_residual

#: Two exact QP solvers on the same problem agree to this [m/s^2, N] (measured: <= 3.3e-11).
AGREE = 1e-8
#: Two exact solves of the same equality-constrained QP agree to this [m/s^2, N].
SAME = 1e-9
#: The rows hold to this [N, N m, m/s^2].
TOL = 1e-9


def single_support(robot, mu=0.7, force_reference=None):
    bent = {"hip_pitch": -0.25, "knee": 0.5, "ankle_pitch": -0.25}
    q = robot.q_from_named({f"{s}_{j}": x for s in ("left", "right") for j, x in bent.items()})
    ctrl = WholeBodyController(robot)
    # A sole large enough to hold the CoM between the feet on one foot (no CoP row active).
    ctrl.add_contact(
        SurfaceContact("left_sole", half_length=0.3, half_width=0.3, mu=mu), kp=10.0, kd=6.0
    )
    ctrl.add_task(ComTask(kp=25.0, kd=10.0))
    ctrl.add_task(AngularMomentumTask(kd=10.0, weight=1e-3))
    ctrl.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-3))
    ctrl.add_task(FrameTask("right_sole", kp=100.0, kd=20.0, weight=1.0))
    ctrl.add_task(ContactForceTask("left_sole", weight=1e-6, reference=force_reference))
    return ctrl, q


def reference(ctrl):
    x = qpsolvers.solve_problem(ctrl.problem(), solver="quadprog").x
    assert x is not None
    return x


def test_single_support_solve_is_the_optimum(humanoid, monkeypatch):
    """One sole held, random velocities, with and without a force reference (wrench terms
    in q): the null-space solve is used, gives quadprog's optimum, the reduced KKT system's
    solution to rounding, and meets the equations of motion and every row."""
    used = []
    method = _Impl._solve_null_space

    def counted(self, wrench_terms):
        sol = method(self, wrench_terms)
        used.append(sol)
        return sol

    monkeypatch.setattr(_Impl, "_solve_null_space", counted)
    rng = np.random.default_rng(7)
    for force in (None, [3.0, -2.0, 200.0, 1.0, -0.5, 0.2]):
        ctrl, q0 = single_support(humanoid, force_reference=force)
        for k in range(4):
            q = pin.integrate(humanoid.model, q0, rng.normal(scale=0.02, size=humanoid.nv))
            v = rng.normal(scale=0.05, size=humanoid.nv)
            ctrl.update(q, v, 1e-3 * k)
            sol = ctrl.solve()
            assert used and used[-1] is sol  # the null-space solve gave it
            np.testing.assert_allclose(sol.x, reference(ctrl), rtol=0, atol=AGREE)
            reduced = ctrl._solve_active_set_reduced(force is not None)
            assert reduced is not None
            np.testing.assert_allclose(
                sol.x, reduced.x, rtol=0, atol=SAME * max(1.0, np.abs(sol.x).max())
            )
            assert eom_residual(humanoid, q, v, sol) <= TOL * max(1.0, humanoid.weight)
            assert all(g <= TOL for g in ctrl.violations(sol.x).values())


def test_single_support_solve_refuses_a_broken_cone(humanoid):
    """Low friction and a sideways CoM acceleration: the equality-constrained optimum leaves
    the cone; the null-space solve refuses it and solve() returns quadprog's optimum (cone
    rows active)."""
    ctrl, q = single_support(humanoid, mu=0.05)
    com = ctrl.task("com")
    com.set_reference(np.zeros(3), acceleration=[3.0, 1.0, 0.0])
    com.kp[:] = 0.0
    ctrl.update(q, np.zeros(humanoid.nv), 0.0)
    assert ctrl._rows.single_surface and not len(ctrl._rows.active)
    ctrl._objective()  # the cost of this update (solve() forms it first)
    assert ctrl._solve_null_space(False) is None
    sol = ctrl.solve()
    np.testing.assert_allclose(sol.x, reference(ctrl), rtol=0, atol=AGREE)
    assert len(ctrl._rows.active)  # cone rows active at the optimum
    assert all(g <= TOL for g in ctrl.violations(sol.x).values())


def test_a_wrong_inverse_of_the_base_block_is_refused(humanoid):
    """G = J_b^-1 is formed from the free-flyer blocks of J_b; a G that is not its inverse
    (here: the rotation block read transposed) leaves the contact and base rows broken,
    and the row check refuses the solution (solve() then returns quadprog's optimum)."""
    ctrl, q = single_support(humanoid)
    rng = np.random.default_rng(3)
    q = pin.integrate(humanoid.model, q, rng.normal(scale=0.3, size=humanoid.nv))  # base turned
    ctrl.update(q, np.zeros(humanoid.nv), 0.0)
    ctrl._objective()
    assert ctrl._solve_null_space(False) not in (None, False)  # the right G: accepted
    ns = ctrl._rows.null_space()
    ns.R_T = ns.R_T.T  # R instead of R^T: not J_b's inverse unless R is symmetric
    assert ctrl._solve_null_space(False) is None
    np.testing.assert_allclose(ctrl.solve().x, reference(ctrl), rtol=0, atol=AGREE)


def test_a_failed_cholesky_hands_over_to_the_reduced_system(humanoid, monkeypatch):
    """dposv reporting H not positive definite (info > 0): the null-space solve says it
    cannot run (False) and solve() returns the optimum from the reduced KKT system."""
    from wholebody.control import _controller

    ctrl, q = single_support(humanoid)
    ctrl.update(q, np.zeros(humanoid.nv), 0.0)
    monkeypatch.setattr(_controller, "_dposv", lambda a, b, **kw: (a, b, 1))
    ctrl._objective()
    assert ctrl._solve_null_space(False) is False
    reduced = []
    method = _Impl._solve_active_set_reduced

    def counted(self, wrench_terms):
        sol = method(self, wrench_terms)
        reduced.append(sol)
        return sol

    monkeypatch.setattr(_Impl, "_solve_active_set_reduced", counted)
    sol = ctrl.solve()
    assert reduced and reduced[-1] is sol
    np.testing.assert_allclose(sol.x, reference(ctrl), rtol=0, atol=AGREE)


def test_a_broken_torque_limit_is_refused(humanoid):
    """Torque limits are lazy (their rows left out while met): an equality-constrained
    optimum that breaks one is refused by the null-space solve, and solve() returns an
    optimum within the limits (quadprog's on the QP with every row)."""
    from wholebody.control import TorqueLimits

    ctrl, q = single_support(humanoid)
    ctrl.update(q, np.zeros(humanoid.nv), 0.0)
    free = ctrl.solve()
    # Limits just below the torques this state needs: at least one is broken.
    limits = np.maximum(0.8 * np.abs(free.torque), 1e-3)
    ctrl.remove_constraint("torque_limits")  # the model's effort limits, by default
    ctrl.add_constraint(TorqueLimits(limits))
    ctrl.update(q, np.zeros(humanoid.nv), 1e-3)
    ctrl._objective()
    assert ctrl._rows.single_surface and not len(ctrl._rows.active)
    assert ctrl._solve_null_space(False) is None  # its optimum breaks a limit
    sol = ctrl.solve()
    assert np.all(np.abs(sol.torque) <= limits + TOL)
    ctrl._fill_lazy()
    np.testing.assert_allclose(sol.x, reference(ctrl), rtol=0, atol=AGREE)
