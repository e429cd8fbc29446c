"""InverseDynamicsQP: its solutions checked against independent references.

References: Pinocchio's RNEA (the equations of motion, torques), the classical frame
accelerations from ``forwardKinematics(q, v, a)`` (feet fixed), the centroidal momentum rate
(CoM task), the exact cone check of ``ContactSet.check`` and statics (total force = weight).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import qpsolvers

import wholebody as wb
from wholebody.contacts import PointContact, SurfaceContact
from wholebody.control import InverseDynamicsQP, Task
from wholebody.errors import InvalidArgumentError, SolverError, StateError

SOLES = ("left_sole", "right_sole")
#: A CoM weight that makes the other terms' pull on it negligible (below 1e-6 relative).
DOMINANT = 1e6
#: Equations met to this [N, N m, m/s^2] (daqp is an exact active-set solver).
TOL = 1e-8


def soles(mu: float = 0.7) -> list[SurfaceContact]:
    return [SurfaceContact(f, half_length=0.12, half_width=0.05, mu=mu) for f in SOLES]


def standing_state(robot: wb.Robot, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Knees bent, feet flat, a small random velocity."""
    bent = {"hip_pitch": -0.25, "knee": 0.5, "ankle_pitch": -0.25}
    q = robot.q_from_named({f"{s}_{j}": x for s in ("left", "right") for j, x in bent.items()})
    v = np.random.default_rng(seed).normal(scale=0.1, size=robot.nv)
    return q, v


def solve(ctrl: InverseDynamicsQP, q, v, com_acc, **weights):
    cd = ctrl.update(q, v)
    assert cd.centroidal_momentum is not None
    tasks = [
        ctrl.com_task(com_acc, weight=weights.get("com", 1.0)),
        ctrl.angular_momentum_task(-cd.centroidal_momentum[3:], weight=1e-3),
        ctrl.posture_task(q, kp=50.0, kd=14.0, weight=weights.get("posture", 1e-3)),
    ]
    solution = qpsolvers.solve_problem(ctrl.problem(tasks), solver="daqp")
    assert solution.found and solution.x is not None
    # The direct daqp path solves the same QP: same answer (daqp is exact: 1e-9).
    np.testing.assert_allclose(ctrl.solve(tasks), solution.x, rtol=0, atol=1e-9)
    return ctrl.split(solution.x)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_solution_obeys_the_equations_of_motion(humanoid, seed):
    ctrl = InverseDynamicsQP(humanoid, soles())
    q, v = standing_state(humanoid, seed)
    a, w, tau = solve(ctrl, q, v, np.array([0.1, -0.2, 0.5]))
    model, data = humanoid.model, humanoid.data
    # RNEA: rnea(q, v, a) = S^T tau + sum_i J_i^T w_i, with J from a separate call.
    rhs = np.zeros(humanoid.nv)
    for j, f in enumerate(SOLES):
        fid = model.getFrameId(f)
        J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
        rhs += J.T @ w[6 * j : 6 * j + 6]
    rhs[6:] += tau
    np.testing.assert_allclose(pin.rnea(model, data, q, v, a), rhs, rtol=0, atol=TOL)
    # Feet fixed: their classical accelerations (linear and angular) are zero.
    pin.forwardKinematics(model, data, q, v, a)
    for f in SOLES:
        acc = pin.getFrameClassicalAcceleration(
            model, data, model.getFrameId(f), pin.LOCAL_WORLD_ALIGNED
        )
        np.testing.assert_allclose(acc.vector, 0.0, rtol=0, atol=TOL)


def test_com_task_gives_the_requested_com_acceleration(humanoid):
    """With a feasible request and a dominant CoM weight, the momentum rate says c_ddot."""
    ctrl = InverseDynamicsQP(humanoid, soles())
    q, v = standing_state(humanoid)
    target = np.array([0.2, 0.1, -0.5])
    a, _, _ = solve(ctrl, q, v, target, com=DOMINANT)
    model, data = humanoid.model, humanoid.data
    pin.computeCentroidalMomentumTimeVariation(model, data, q, v, a)
    np.testing.assert_allclose(data.dhg.linear / humanoid.mass, target, rtol=0, atol=1e-6)


def test_static_standing_carries_the_weight_inside_the_cones(humanoid):
    ctrl = InverseDynamicsQP(humanoid, soles())
    q, _ = standing_state(humanoid)
    v = np.zeros(humanoid.nv)
    cd = ctrl.update(q, v)
    rotations = cd.rotations.copy()
    _, w, _ = solve(ctrl, q, v, np.zeros(3), com=DOMINANT)
    W = w.reshape(2, 6)
    np.testing.assert_allclose(W[:, :3].sum(axis=0), [0, 0, humanoid.weight], rtol=0, atol=1e-6)
    check = ctrl.contact_set.check(W[None], rotations[None])
    assert check.margin.min() >= -1e-9
    # The same numbers through the generic Task path (a full matrix instead of the identity).
    assert ctrl.problem([Task("x", np.ones((1, 3)), np.zeros(1), 1.0, slice(0, 3))]).P[0, 1] == 1


def test_torque_limits_bind(humanoid):
    """Limits below the unconstrained torques are met exactly and change the answer."""
    q, v = standing_state(humanoid)
    free = InverseDynamicsQP(humanoid, soles())
    _, _, tau_free = solve(free, q, v, np.array([0.0, 0.0, 2.0]))
    limits = np.full(humanoid.nv - 6, 0.8 * np.abs(tau_free).max())
    ctrl = InverseDynamicsQP(humanoid, soles(), torque_limits=limits)
    a, w, tau = solve(ctrl, q, v, np.array([0.0, 0.0, 2.0]))
    assert np.abs(tau).max() <= limits[0] + 1e-7
    assert np.abs(tau).max() >= limits[0] - 1e-6  # active
    # Still a solution of the dynamics (independent RNEA, as above).
    model, data = humanoid.model, humanoid.data
    rhs = np.zeros(humanoid.nv)
    for j, f in enumerate(SOLES):
        J = pin.computeFrameJacobian(model, data, q, model.getFrameId(f), pin.LOCAL_WORLD_ALIGNED)
        rhs += J.T @ w[6 * j : 6 * j + 6]
    rhs[6:] += tau
    np.testing.assert_allclose(pin.rnea(model, data, q, v, a), rhs, rtol=0, atol=TOL)


def test_point_contacts():
    """Four point contacts at the sole corners: forces (3 each) inside their pyramids."""
    humanoid = wb.load("humanoid")  # frames are added: not the shared fixture
    corners = []
    for f in SOLES:
        for i, (x, y) in enumerate([(0.1, 0.04), (0.1, -0.04), (-0.1, 0.04), (-0.1, -0.04)]):
            name = f"{f}_c{i}"
            humanoid.add_frame(name, f, pin.SE3(np.eye(3), np.array([x, y, 0.0])))
            corners.append(PointContact(name, mu=0.7))
    ctrl = InverseDynamicsQP(humanoid, corners)
    q, _ = standing_state(humanoid)
    v = np.zeros(humanoid.nv)
    _, w, _ = solve(ctrl, q, v, np.zeros(3), com=DOMINANT)
    F = w.reshape(-1, 3)
    np.testing.assert_allclose(F.sum(axis=0), [0, 0, humanoid.weight], rtol=0, atol=1e-6)
    tangential = np.linalg.norm(F[:, :2], axis=1)
    assert np.all(tangential <= 0.7 * F[:, 2] + 1e-9)


def test_bad_inputs(humanoid, two_link_arm):
    with pytest.raises(InvalidArgumentError, match="floating-base"):
        InverseDynamicsQP(two_link_arm, [PointContact("link2", mu=0.5)])
    with pytest.raises(InvalidArgumentError, match=r"torque_limits must have shape \(19,\)"):
        InverseDynamicsQP(humanoid, soles(), torque_limits=np.ones(3))
    with pytest.raises(InvalidArgumentError, match="torque_limits must be positive"):
        InverseDynamicsQP(humanoid, soles(), torque_limits=np.zeros(19))
    with pytest.raises(InvalidArgumentError, match="regularization"):
        InverseDynamicsQP(humanoid, soles(), regularization=-1.0)
    ctrl = InverseDynamicsQP(humanoid, soles())
    with pytest.raises(StateError, match="call update"):
        ctrl.com_task(np.zeros(3))
    ctrl.update(*standing_state(humanoid))
    with pytest.raises(InvalidArgumentError, match=r"x must have shape \(37,\)"):
        ctrl.split(np.zeros(3))
    with pytest.raises(InvalidArgumentError, match="weight must be >= 0"):
        ctrl.problem([ctrl.com_task(np.zeros(3), weight=-1.0)])
    with pytest.raises(InvalidArgumentError, match=r"acceleration must have shape \(2,\)"):
        ctrl.acceleration_task("knees", slice(9, 11), np.zeros(3))


def test_solve_names_an_infeasible_qp():
    """Soles whose normals point down (frames turned upside down) can only pull the robot
    down; with the joints' torques limited to nearly nothing the motion is the passive one,
    which needs the floor to push up: no (a, w) meets the constraints, and the error says so."""
    robot = wb.load("humanoid")
    for side in ("left", "right"):
        robot.add_frame(
            f"{side}_flipped", f"{side}_sole", pin.SE3(pin.utils.rotate("x", np.pi), np.zeros(3))
        )
    flipped = [
        SurfaceContact(f"{s}_flipped", half_length=0.1, half_width=0.05, mu=0.7)
        for s in ("left", "right")
    ]
    ctrl = InverseDynamicsQP(robot, flipped, torque_limits=np.full(robot.nv - 6, 1e-3))
    q, v = standing_state(robot)
    ctrl.update(q, v)
    with pytest.raises(SolverError, match="no solution at this state"):
        ctrl.solve([ctrl.com_task(np.zeros(3))])
