"""WholeBodyController: the QP's solutions against independent references, each constraint
by a solution that breaks it being refused, contacts switched on a live controller.

References: Pinocchio's RNEA and separately computed frame Jacobians (equations of motion),
``forwardKinematics(q, v, a)`` classical accelerations (contacts held), the exact cone check
of ``ContactSet.check``, a one-joint simulation of the discrete step (viability).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import qpsolvers

import wholebody as wb
from wholebody.contacts import PointContact
from wholebody.control import (
    ComTask,
    ContactForceTask,
    FrameTask,
    JointBounds,
    MinimumJerk,
    PostureTask,
    WholeBodyController,
)
from wholebody.errors import InvalidArgumentError, SolverError, StateError
from wholebody.friction import ContactSet

from ._control_common import SOLES, controller, eom_residual, sole, standing

#: The QP's equations hold to this [N, N m, m/s^2] (daqp is an exact active-set solver).
TOL = 1e-9
#: A CoM weight that makes the other terms' pull on it negligible (below 1e-6 relative).
DOMINANT = 1e6


def contact_jacobian(robot, q, frame, rows=6):
    m = robot.model
    return pin.computeFrameJacobian(
        m, m.createData(), q, m.getFrameId(frame), pin.LOCAL_WORLD_ALIGNED
    )[:rows]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_solution_obeys_equations_of_motion_cones_and_contacts(humanoid, seed):
    robot = humanoid
    ctrl = controller(robot)
    hand = ctrl.add_task(FrameTask("left_hand", kp=100.0, kd=20.0, weight=0.1))
    ctrl.add_constraint(JointBounds(robot, dt=1e-3, acceleration_limit=200.0, margin=0.01))
    q, v = standing(robot, seed)
    ctrl.update(q, v, 0.0)
    hand.set_reference(hand.placement.act(pin.SE3(np.eye(3), np.array([0.1, 0.0, 0.1]))))
    ctrl.update(q, v, 0.0)
    sol = ctrl.solve()
    m = robot.model
    rhs = np.r_[np.zeros(6), sol.torque]
    for f in SOLES:
        rhs += contact_jacobian(robot, q, f).T @ sol.wrenches[f]
    tau_rnea = pin.rnea(m, m.createData(), q, v, sol.acceleration)
    np.testing.assert_allclose(tau_rnea, rhs, rtol=0, atol=TOL)
    # The soles' classical accelerations are the drift-stabilising PD's (about 0 here).
    d = m.createData()
    pin.forwardKinematics(m, d, q, v, sol.acceleration)
    for f in SOLES:
        state = ctrl.contacts[f]
        acc = pin.getFrameClassicalAcceleration(m, d, m.getFrameId(f), pin.LOCAL_WORLD_ALIGNED)
        np.testing.assert_allclose(acc.vector, state.desired, rtol=0, atol=TOL)
    cones = ContactSet([sole(f) for f in SOLES]).check(
        np.array([sol.wrenches[f] for f in SOLES])[None],
        np.array([ctrl.contacts[f].placement.rotation for f in SOLES])[None],
        tol=TOL,
    )
    assert cones.margin.min() >= -TOL
    assert all(v <= TOL for v in ctrl.violations(sol.x).values())
    # A second exact solver (quadprog's dual active set) on the qpsolvers.Problem finds
    # the same optimum.
    if "quadprog" in qpsolvers.available_solvers:
        other = qpsolvers.solve_problem(ctrl.problem(), solver="quadprog")
        assert other.found
        np.testing.assert_allclose(other.x, sol.x, rtol=0, atol=1e-7)


def test_com_task_gives_the_requested_com_acceleration(humanoid):
    """A feasible CoM acceleration under a dominant CoM weight: the momentum rate of an
    independent Pinocchio pass (``computeCentroidalMomentumTimeVariation`` at the solution's
    ``a``) says ``m c_ddot`` is that acceleration."""
    ctrl = controller(humanoid)
    com = ctrl.task("com")
    com.weight = DOMINANT
    com.kp[:], com.kd[:] = 0.0, 0.0
    target = np.array([0.2, 0.1, -0.5])
    com.set_reference(np.zeros(3), acceleration=target)
    q, v = standing(humanoid)
    ctrl.update(q, v, 0.0)
    sol = ctrl.solve()
    m, d = humanoid.model, humanoid.model.createData()
    pin.computeCentroidalMomentumTimeVariation(m, d, q, v, sol.acceleration)
    np.testing.assert_allclose(d.dhg.linear / humanoid.mass, target, rtol=0, atol=1e-6)
    assert eom_residual(humanoid, q, v, sol) <= TOL * humanoid.weight


def test_static_standing_carries_the_weight_inside_the_cones(humanoid):
    """At rest, the CoM held still by a dominant weight: the soles' forces add up to the
    weight (statics) and each wrench is inside its exact cone (``ContactSet.check``)."""
    ctrl = controller(humanoid)
    ctrl.task("com").weight = DOMINANT
    q, _ = standing(humanoid)
    v = np.zeros(humanoid.nv)
    ctrl.update(q, v, 0.0)
    sol = ctrl.solve()
    W = np.array([sol.wrenches[f] for f in SOLES])
    # The other tasks (posture 1e-3, force regularisation 1e-6) against the CoM's 1e6 pull
    # the total by ~2e-9 of the weight.
    total = W[:, :3].sum(axis=0)
    np.testing.assert_allclose(total, [0, 0, humanoid.weight], rtol=0, atol=1e-8 * humanoid.weight)
    rotations = np.array([ctrl.contacts[f].placement.rotation for f in SOLES])
    check = ContactSet([sole(f) for f in SOLES]).check(W[None], rotations[None])
    assert check.margin.min() >= -1e-9


def test_friction_cones_refuse_a_slipping_solution(humanoid):
    """With mu = 2 the CoM task gets 1.7 m/s^2 sideways (the soles. CoP limits it); with
    mu = 0.05 that solution breaks
    the cones (refused), and the solution found keeps inside them."""
    robot = humanoid
    q, v = standing(robot, 0, scale=0.0)
    lax, tight = controller(robot, mu=2.0), controller(robot, mu=0.05)
    for ctrl in (lax, tight):
        ctrl.task("com").set_reference(np.zeros(3), acceleration=[6.0, 0.0, 0.0])
        ctrl.task("com").kp[:] = 0.0
        ctrl.update(q, v, 0.0)
    x_lax, x_tight = lax.solve().x, tight.solve().x
    assert tight.violations(x_lax)["friction_cones"] > 1.0  # [N]
    assert tight.violations(x_tight)["friction_cones"] <= TOL
    assert lax.violations(x_lax)["friction_cones"] <= TOL


def test_normal_force_bounds_and_torque_limits(humanoid):
    robot = humanoid
    q, v = standing(robot, 0, scale=0.0)
    free = controller(robot)
    free.update(q, v, 0.0)
    x_free = free.solve()
    assert x_free.wrenches["left_sole"][2] > 200.0  # the split is even: about 300 N each
    bounded = WholeBodyController(robot)
    bounded.add_contact(sole("left_sole"), max_normal_force=100.0)
    bounded.add_contact(sole("right_sole"), min_normal_force=450.0)
    for t in free.tasks:
        bounded.add_task(t)
    bounded.update(q, v, 0.0)
    assert bounded.violations(x_free.x)["normal_force_bounds"] > 100.0
    sol = bounded.solve()
    assert sol.wrenches["left_sole"][2] <= 100.0 + TOL
    assert sol.wrenches["right_sole"][2] >= 450.0 - TOL
    # Torque limits: the free solution's largest torque, made a limit 30 % lower.
    tau = np.abs(x_free.torque)
    limits = np.where(tau > 0.5 * tau.max(), 0.7 * tau, 1e3)
    limited = controller(robot, torque_limits=limits)
    limited.update(q, v, 0.0)
    assert limited.violations(x_free.x)["torque_limits"] > 0.1
    sol = limited.solve()
    assert np.all(np.abs(sol.torque) <= limits + TOL)
    assert np.max(np.abs(sol.torque) - limits) >= -1e-6  # a limit is active
    assert eom_residual(robot, q, v, sol) <= TOL * robot.weight
    # Torques too small to carry the robot with the joints held still (feet held too): no
    # solution, a typed error.
    weak = controller(robot, torque_limits=np.full(robot.nv - 6, 1e-3))
    weak.add_constraint(JointBounds(robot, dt=1e-3, acceleration_limit=1e-6))
    weak.update(q, v, 0.0)
    message = r"at t = 0.0 s \(exit flag -1: infeasible\); without joint_bounds or torque_limits"
    with pytest.raises(SolverError, match=message + " it has one$"):
        weak.solve()


def test_joint_bounds_refuse_a_solution_past_the_limit(humanoid):
    robot = humanoid
    q, v = standing(robot, 0, scale=0.0)
    j = robot.model.getJointId("left_elbow")
    iq, iv = robot.model.joints[j].idx_q, robot.model.joints[j].idx_v
    q_max = robot.model.upperPositionLimit[iq]
    q[iq], v[iv] = q_max - 0.02, 1.2  # close to the limit and moving towards it
    bounds = JointBounds(robot, dt=1e-3, acceleration_limit=50.0, margin=0.005)
    ctrl = controller(robot)
    target = q.copy()
    target[iq] = q_max + 1.0  # the posture task pulls past the limit
    ctrl.task("posture").set_reference(target)
    ctrl.task("posture").weight = 1.0
    ctrl.update(q, v, 0.0)
    x_free = ctrl.solve().x
    ctrl.add_constraint(bounds)
    ctrl.update(q, v, 0.0)
    assert ctrl.violations(x_free)["joint_bounds"] > 1.0
    a = ctrl.solve().acceleration
    assert bounds.lower[iv - 6] - TOL <= a[iv] <= bounds.upper[iv - 6] + TOL
    # It brakes: 1.2 rad/s, 15 mm from q_max - margin, only a_max = 50 rad/s^2 to stop.
    assert a[iv] < -20.0


def test_joint_bounds_keep_a_simulated_joint_viable(humanoid):
    """Driving one joint at its upper bound every step (the discrete step of the bounds)
    never leaves [q_min + margin, q_max - margin] nor the velocity and acceleration limits."""
    bounds = JointBounds(
        humanoid, dt=1e-3, acceleration_limit=20.0, velocity_limit=3.0, margin=0.01
    )
    nu = humanoid.nv - 6
    lo, hi = bounds.position_lower + 0.01, bounds.position_upper - 0.01
    rng = np.random.default_rng(3)
    for trial in range(20):
        q = lo + rng.uniform(0.2, 0.8, nu) * (hi - lo)
        # Velocities from which braking at a_max still stops inside the range.
        room = np.minimum(hi - q, q - lo)
        v = rng.uniform(-1.0, 1.0, nu) * np.minimum(3.0, np.sqrt(2 * 20.0 * room))
        sign = 1.0 if trial % 2 else -1.0
        for _ in range(3000):
            lower, upper = bounds.bounds(q, v)
            assert np.all(lower <= upper + 1e-9)
            a = upper if sign > 0 else lower
            q = q + 1e-3 * v + 0.5e-6 * a
            v = v + 1e-3 * a
            assert np.all(q <= hi + 1e-9) and np.all(q >= lo - 1e-9)
            assert np.all(np.abs(v) <= 3.0 + 1e-9) and np.all(np.abs(a) <= 20.0 + 1e-9)


def closed_loop(ctrl, q, v, steps, dt=1e-3, t0=0.0, each=None):
    """Integrate the QP's accelerations exactly (a perfect plant): returns (q, v, log)."""
    log = []
    for k in range(steps):
        t = t0 + k * dt
        if each is not None:
            each(t)
        ctrl.update(q, v, t)
        sol = ctrl.solve()
        log.append(sol)
        v_next = v + dt * sol.acceleration
        q = pin.integrate(ctrl.robot.model, q, dt * v_next)
        v = v_next
    return q, v, log


def test_contact_switching_ramps_the_force(humanoid):
    robot = humanoid
    q, v = standing(robot, 0, scale=0.0)
    ctrl = controller(robot)
    ctrl.update(q, v, 0.0)
    com = ctrl.task("com")
    right = ctrl.contacts["right_sole"].placement.translation
    c0 = com.position.copy()
    shift = MinimumJerk(c0, np.r_[right[:2], c0[2]], duration=0.4)

    def follow(t):
        com.set_reference(*shift(t))

    q, v, _ = closed_loop(ctrl, q, v, 450, each=follow)
    n_before = ctrl.layout.n
    f0 = ctrl.solve().wrenches["left_sole"][2]
    ramp, dt = 0.05, 1e-3
    ctrl.remove_contact("left_sole", ramp=ramp)
    t0 = 0.45
    q, v, log = closed_loop(ctrl, q, v, 60, t0=t0)
    on = [s for s in log if "left_sole" in s.wrenches]
    off = [s for s in log if "left_sole" not in s.wrenches]
    assert len(on) == round(ramp / dt) and off  # removed at the first tick after the ramp
    for s in on:  # below the ramp at each tick
        assert s.wrenches["left_sole"][2] <= f0 * (1 - (s.time - t0) / ramp) + 1e-6
    # The last force before removal is at most one ramp step: no jump at lift-off.
    assert on[-1].wrenches["left_sole"][2] <= f0 * dt / ramp + 1e-6
    assert ctrl.layout.n == n_before - 6
    # The right foot carries the robot alone, in its cone.
    assert abs(off[-1].wrenches["right_sole"][2] - robot.weight) < 0.05 * robot.weight
    # Touch-down on the live controller, the bound rising from zero over 0.05 s.
    ctrl.add_contact(sole("left_sole"), kp=10.0, kd=6.0, ramp=0.05, ramp_force=robot.weight)
    t1 = 0.51
    q, v, log = closed_loop(ctrl, q, v, 80, t0=t1)
    for s in log:
        bound = robot.weight * min(max((s.time - t1) / 0.05, 0.0), 1.0)
        if s.time < t1 + 0.05:
            assert s.wrenches["left_sole"][2] <= bound + 1e-6
    assert ctrl.contacts["left_sole"].phase == "active"
    assert ctrl.layout.n == n_before


def test_solve_names_an_infeasible_qp():
    """Soles whose normals point down (frames turned upside down) can only pull the robot
    down; with the joints' torques limited to nearly nothing the motion is the passive one,
    which cannot keep the soles held: no (a, w) meets the constraints, and the error names
    the group without which there is one (the joints' torques, free, hold the soles)."""
    robot = wb.load("humanoid")
    for side in ("left", "right"):
        robot.add_frame(
            f"{side}_flipped", f"{side}_sole", pin.SE3(pin.utils.rotate("x", np.pi), np.zeros(3))
        )
    ctrl = WholeBodyController(robot, torque_limits=np.full(robot.nv - 6, 1e-3))
    for side in ("left", "right"):
        ctrl.add_contact(sole(f"{side}_flipped"))
    ctrl.add_task(ComTask(kp=25.0, kd=10.0))
    ctrl.update(*standing(robot), 0.0)
    message = r"exit flag -1: infeasible\); without torque_limits it has one$"
    with pytest.raises(SolverError, match=message):
        ctrl.solve()


def test_bad_use(humanoid, two_link_arm):
    robot = humanoid
    with pytest.raises(InvalidArgumentError, match="floating-base robot; 'two_link_arm'"):
        WholeBodyController(two_link_arm)
    with pytest.raises(InvalidArgumentError, match="dt must be a positive period"):
        WholeBodyController(robot, dt=0.0)
    with pytest.raises(InvalidArgumentError, match="regularization must be finite"):
        WholeBodyController(robot, regularization=-1.0)
    with pytest.raises(InvalidArgumentError, match="torque limits must be a vector of positive"):
        WholeBodyController(robot, torque_limits=np.zeros(robot.nv - 6))
    ctrl = WholeBodyController(robot)
    with pytest.raises(StateError):
        ctrl.solve()
    ctrl.add_contact(sole("left_sole"))
    with pytest.raises(InvalidArgumentError, match="already"):
        ctrl.add_contact(sole("left_sole"))
    with pytest.raises(InvalidArgumentError, match="no active contact"):
        ctrl.remove_contact("right_sole")
    with pytest.raises(InvalidArgumentError, match="min_normal_force"):
        ctrl.add_contact(sole("right_sole"), min_normal_force=10.0, max_normal_force=5.0)
    with pytest.raises(InvalidArgumentError, match="ramp"):
        ctrl.add_contact(PointContact("right_hand", mu=0.5), ramp=-1.0)
    ctrl.add_task(ComTask(kp=1.0, kd=1.0))
    with pytest.raises(InvalidArgumentError, match="already"):
        ctrl.add_task(ComTask(kp=1.0, kd=1.0))
    with pytest.raises(InvalidArgumentError, match="no task"):
        ctrl.task("nope")


def test_one_pinocchio_pass_per_tick(humanoid, monkeypatch):
    """Every task type and constraint is refreshed from one ``computeAllTerms`` per tick: no
    other pass over the tree (kinematics, Jacobians, CoM, momentum, RNEA) is run."""
    from wholebody.control import LinearMomentumTask, RelativeFrameTask

    robot = humanoid
    ctrl = controller(robot)
    ctrl.add_task(FrameTask("left_hand", kp=1.0, kd=1.0))
    ctrl.add_task(RelativeFrameTask("left_hand", "right_hand", kp=1.0, kd=1.0))
    ctrl.add_task(LinearMomentumTask(kd=1.0, weight=1e-3))
    ctrl.add_constraint(JointBounds(robot, dt=1e-3, acceleration_limit=100.0))
    q, v = standing(robot, 1)
    ctrl.update(q, v, 0.0)  # first tick: frame ids resolved
    calls: dict[str, int] = {}
    passes = [
        "computeAllTerms",
        "forwardKinematics",
        "framesForwardKinematics",
        "computeJointJacobians",
        "computeFrameJacobian",
        "centerOfMass",
        "jacobianCenterOfMass",
        "ccrba",
        "computeCentroidalMap",
        "computeCentroidalMomentum",
        "rnea",
        "crba",
        "nonLinearEffects",
    ]
    for name in passes:
        original = getattr(pin, name)

        def counted(*args, _f=original, _n=name, **kwargs):
            calls[_n] = calls.get(_n, 0) + 1
            return _f(*args, **kwargs)

        monkeypatch.setattr(pin, name, counted)
    ctrl.update(q, v, 1e-3)
    ctrl.solve()
    assert calls == {"computeAllTerms": 1}


def test_point_contacts_obey_equations_of_motion_and_cones(humanoid):
    """Point contacts (3 force unknowns, inner 4-face pyramids): RNEA with the contact forces
    on 3-row Jacobians, forces inside the exact Coulomb cones (pyramids are inscribed)."""
    robot = humanoid
    ctrl = WholeBodyController(robot)
    points = [PointContact(f, mu=0.5) for f in SOLES]
    for c in points:
        ctrl.add_contact(c, kp=5.0, kd=4.0)
    ctrl.add_task(ComTask(kp=25.0, kd=10.0))
    ctrl.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-2))
    q, v = standing(robot, 4)
    ctrl.update(q, v, 0.0)
    ctrl.task("com").set_reference(ctrl.task("com").position, acceleration=[0.5, 0.3, 0.0])
    ctrl.update(q, v, 0.0)
    sol = ctrl.solve()
    m = robot.model
    rhs = np.r_[np.zeros(6), sol.torque]
    for f in SOLES:
        assert sol.wrenches[f].shape == (3,)
        rhs += contact_jacobian(robot, q, f, rows=3).T @ sol.wrenches[f]
    np.testing.assert_allclose(pin.rnea(m, m.createData(), q, v, sol.acceleration), rhs, atol=TOL)
    cones = ContactSet(points).check(
        np.array([np.r_[sol.wrenches[f], np.zeros(3)] for f in SOLES])[None],
        np.array([ctrl.contacts[f].placement.rotation for f in SOLES])[None],
        tol=TOL,
    )
    assert cones.margin.min() >= -TOL
    assert np.all(cones.utilisation <= 1.0 + 1e-9)


def test_contact_force_task_tracks_a_feasible_reference(humanoid):
    """A reference split of the weight (70 % left) inside the cones is met to the ratio of the
    task weights: the total is fixed by the dynamics, the split by the tracking task."""
    robot = humanoid
    q, v = standing(robot, 0, scale=0.0)
    ctrl = WholeBodyController(robot)
    for f in SOLES:
        ctrl.add_contact(sole(f))
    ctrl.add_task(ComTask(kp=25.0, kd=10.0))
    ctrl.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-3))
    W = robot.weight
    left = ctrl.add_task(
        ContactForceTask("left_sole", weight=1.0, reference=[0, 0, 0.7 * W, 0, 0, 0])
    )
    ctrl.add_task(ContactForceTask("right_sole", weight=1.0, reference=[0, 0, 0.3 * W, 0, 0, 0]))
    ctrl.update(q, v, 0.0)
    sol = ctrl.solve()
    np.testing.assert_allclose(sol.wrenches["left_sole"][2], 0.7 * W, rtol=1e-2)
    np.testing.assert_allclose(sol.wrenches["right_sole"][2], 0.3 * W, rtol=1e-2)
    left.set_reference([0, 0, 0.5 * W, 0, 0, 0])
    ctrl.update(q, v, 0.0)
    sol = ctrl.solve()
    assert abs(sol.wrenches["left_sole"][2] - 0.5 * W) < 0.05 * W
    with pytest.raises(InvalidArgumentError, match=r"reference must be a vector of 3 or 6"):
        left.set_reference([1.0, 2.0])
    with pytest.raises(InvalidArgumentError, match=r"reference must be finite; entries \[1\]"):
        left.set_reference([1.0, np.nan, 0.0])
    # A point's force on a surface contact: refused at the call that sets it.
    with pytest.raises(InvalidArgumentError, match=r"a vector of 6 \(contact 'left_sole'\)"):
        left.set_reference([0.0, 0.0, 0.5 * W])


def _bounds_by_side(b, q, v):
    """JointBounds' acceleration bounds written side by side from their definition (the
    least of a_max, the position, velocity and viability bounds; mirrored for the lower
    one; clipped; braking at a_max against the motion outside the viable set)."""
    dt, amax = b.dt, b.acceleration_limit
    qmax, qmin = b.position_upper - b.margin, b.position_lower + b.margin

    def viable(q, v, qmax):
        arg = amax * (amax * dt * dt - 4 * v * dt + 8 * (qmax - q))
        root = np.sqrt(np.maximum(arg, 0.0))
        return np.where(arg >= 0, (-(2 * v + amax * dt) + root) / (2 * dt), -amax)

    with np.errstate(invalid="ignore"):
        up = np.minimum(amax, (b.velocity_limit - v) / dt)
        lo = np.maximum(-amax, (-b.velocity_limit - v) / dt)
        up_pos = np.minimum(2 * (qmax - q - dt * v) / dt**2, viable(q, v, qmax))
        lo_pos = np.maximum(2 * (qmin - q - dt * v) / dt**2, -viable(-q, -v, -qmin))
    up = np.clip(np.where(np.isfinite(qmax), np.minimum(up, up_pos), up), -amax, amax)
    lo = np.clip(np.where(np.isfinite(qmin), np.maximum(lo, lo_pos), lo), -amax, amax)
    bad = lo > up
    brake = np.where(v > 0, -amax, amax)
    return np.where(bad, brake, lo), np.where(bad, brake, up)


def test_joint_bounds_match_their_definition_side_by_side(humanoid):
    """The stacked (both sides at once) computation equals the per-side definition, with
    free joints, states outside the viable set and velocities past their limits."""
    nu = humanoid.nv - 6
    rng = np.random.default_rng(11)
    amax = rng.uniform(5.0, 100.0, nu)
    bounds = JointBounds(humanoid, dt=1e-3, acceleration_limit=amax, margin=0.01)
    bounds.position_lower[:3], bounds.position_upper[:3] = -np.inf, np.inf  # free joints
    lo, hi = bounds.position_lower, bounds.position_upper
    outside, far = 0, 0
    for k in range(400):
        span = np.where(np.isfinite(hi - lo), hi - lo, 2.0)
        base = np.where(np.isfinite(lo), lo, -1.0)
        if k % 2:  # some past the limits
            q = base + rng.uniform(-0.05, 1.05, nu) * span
            v = rng.uniform(-1.5, 1.5, nu) * np.minimum(bounds.velocity_limit, 10.0)
        else:  # inside, slow: every joint far from its limits, or one just near
            q = base + rng.uniform(0.3, 0.7, nu) * span
            v = rng.uniform(-0.05, 0.05, nu)
            if k % 4:
                j = rng.integers(3, nu)
                q[j] = hi[j] - 0.01 - rng.uniform(0.0, 2e-5)
                v[j] = rng.uniform(-0.1, 0.1)
        want_lo, want_up = _bounds_by_side(bounds, q, v)
        got_lo, got_up = bounds.bounds(q, v)
        outside += int(np.sum(want_lo == want_up))
        far += bounds._far
        np.testing.assert_allclose(got_lo, want_lo, rtol=1e-13, atol=1e-9)
        np.testing.assert_allclose(got_up, want_up, rtol=1e-13, atol=1e-9)
    assert outside > 50  # the braking branch was exercised
    assert 50 < far < 300  # the far-from-limits shortcut, and near a limit its refusal


def test_joint_bounds_rows_written_once_stay_right(humanoid):
    """The identity pattern of the joint rows is written once per buffer: after ticks, a
    layout change and a second controller sharing the constraint, every controller's rows
    are still ``a_j`` with this tick's bounds, and a solution past a bound is refused."""
    robot = humanoid
    bounds = JointBounds(robot, dt=1e-3, acceleration_limit=50.0, margin=0.005)
    one, two = controller(robot), controller(robot)
    for ctrl in (one, two):
        ctrl.add_constraint(bounds)
    nu = robot.nv - 6
    for k in range(3):
        if k == 2:
            one.remove_contact(SOLES[1])  # a new layout: new rows
        for ctrl in (one, two):
            q, v = standing(robot, k, scale=0.3)
            ctrl.update(q, v, 1e-3 * k)
            sol = ctrl.solve()
            C, lower, upper = ctrl.rows()
            rows = dict(ctrl._qp.spans)["joint_bounds"]
            want = np.zeros((nu, C.shape[1]))
            want[:, 6 : robot.nv] = np.eye(nu)
            np.testing.assert_array_equal(C[rows], want)
            lo_def, up_def = _bounds_by_side(bounds, q[7:], v[6:])
            np.testing.assert_allclose(lower[rows], lo_def, rtol=1e-13, atol=1e-9)
            np.testing.assert_allclose(upper[rows], up_def, rtol=1e-13, atol=1e-9)
            assert ctrl.violations(sol.x)["joint_bounds"] <= TOL
            past = sol.x.copy()
            past[6] = upper[rows][0] + 1e-3
            assert ctrl.violations(past)["joint_bounds"] >= 1e-3 - 1e-12


def test_posture_joint_weights_changed_between_ticks_reach_the_cost(humanoid):
    """Joint weights assigned between ticks (twice, so that a freed array's id may come
    back; from an array edited afterwards) are the ones in the tick's cost: P equals that of
    a controller given those weights at construction (no cost kept from an earlier tick).
    (The cost was once cached by the weights' id: stale on 49 of 50 such ticks.)"""
    ctrl = controller(humanoid)
    posture = ctrl.task("posture")
    q, v = standing(humanoid)
    nu = humanoid.nv - 6
    ctrl.update(q, v, 0.0)
    ctrl.solve()
    for k in range(20):
        want = np.full(nu, 0.5 + 0.1 * k)
        # Two assignments: the first frees the array of the last tick's cost, whose id
        # the second may take.
        posture.joint_weights = np.full(nu, 7.0)
        posture.joint_weights = np.full(nu, 0.5 + 0.1 * k)
        ctrl.update(q, v, 1e-3 * k)
        ctrl.solve()
        fresh = controller(humanoid)
        fresh.remove_task("posture")
        fresh.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-3, joint_weights=want))
        fresh.update(q, v, 1e-3 * k)
        fresh.solve()
        np.testing.assert_allclose(ctrl.problem().P, fresh.problem().P, rtol=0, atol=1e-12)
    given = np.full(nu, 2.0)
    posture.joint_weights = given
    given[0] = 99.0  # the task keeps its own copy
    assert posture.joint_weights[0] == 2.0
    with pytest.raises(InvalidArgumentError, match="joint_weights"):
        posture.joint_weights = -np.ones(nu)
    early = PostureTask(kp=1.0, kd=1.0)
    early.joint_weights = np.full(nu, 2.0)  # before the first update: taken at it
    ctrl.remove_task("posture")
    ctrl.add_task(early)
    ctrl.update(q, v, 1.0)
    np.testing.assert_array_equal(early.joint_weights, np.full(nu, 2.0))
