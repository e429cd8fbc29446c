"""Tasks of WholeBodyController against finite differences on the configuration manifold.

Each task's Jacobian is checked column by column with ``pin.integrate(q, +-eps e_i)`` of its
position-level quantity (positions, ``log3``/``log6`` of relative rotations/placements) from
separate Pinocchio calls; each drift ``dJ/dt v`` by central differences of the task velocity
along ``q(t) = integrate(q, t v)`` with ``v`` held (``a = 0``), from separate Pinocchio calls
(``computeCentroidalMomentum`` for the momenta). Central differences with ``eps = 1e-6``
have a truncation error of order ``eps^2`` and a rounding error of order ``1e-16 / eps``:
the stated tolerance ``TOL = 1e-6`` (relative to the column's scale, at least 1) holds both.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from wholebody.balance.cop import cop_in_contact_frame, zmp
from wholebody.contacts import PointContact, SurfaceContact
from wholebody.control import (
    AngularMomentumTask,
    ComTask,
    CopTask,
    DcmTask,
    FrameTask,
    LinearMomentumTask,
    PostureTask,
    RelativeFrameTask,
    TorqueTask,
    WholeBodyController,
    ZmpTask,
)
from wholebody.errors import InvalidArgumentError
from wholebody.spatial import Wrench

EPS, TOL = 1e-6, 1e-6
SEEDS = [0, 1, 2]


def state(robot, seed):
    rng = np.random.default_rng(seed)
    q = pin.integrate(robot.model, pin.neutral(robot.model), rng.normal(scale=0.4, size=robot.nv))
    return q, rng.normal(scale=0.8, size=robot.nv)


def close(a, b, tol=TOL):
    scale = max(1.0, float(np.abs(b).max()))
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * scale)


def fd_columns(robot, q, f):
    """Columns d f(integrate(q, eps e_i)) / d eps, f returning a vector in a fixed frame."""
    cols = []
    for i in range(robot.nv):
        e = np.zeros(robot.nv)
        e[i] = EPS
        cols.append(
            (f(pin.integrate(robot.model, q, e)) - f(pin.integrate(robot.model, q, -e))) / (2 * EPS)
        )
    return np.array(cols).T


def fd_along(robot, q, v, f):
    """d f(integrate(q, t v), v) / dt at t = 0."""
    return (
        f(pin.integrate(robot.model, q, EPS * v)) - f(pin.integrate(robot.model, q, -EPS * v))
    ) / (2 * EPS)


def placement(robot, q, frame):
    m, d = robot.model, robot.model.createData()
    pin.framesForwardKinematics(m, d, q)
    return d.oMf[m.getFrameId(frame)].copy()


def frame_jac(robot, q, frame, ref):
    m = robot.model
    return pin.computeFrameJacobian(m, m.createData(), q, m.getFrameId(frame), ref)


@pytest.mark.parametrize("seed", SEEDS)
def test_frame_task(humanoid, seed):
    robot = humanoid
    q, v = state(robot, seed)
    kin = robot.controller_pass()
    task = FrameTask("left_hand", kp=10.0, kd=3.0)
    ref = pin.SE3(pin.exp3(np.array([0.1, -0.2, 0.3])), np.array([0.3, 0.2, 1.0]))
    task.set_reference(ref, velocity=np.arange(6.0), acceleration=-np.arange(6.0))
    kin(q, v)
    task.update(kin)
    M0 = placement(robot, q, "left_hand")

    def pose(qq):
        M = placement(robot, qq, "left_hand")
        return np.r_[M.translation, M0.rotation @ pin.log3(M0.rotation.T @ M.rotation)]

    close(task.jacobian, fd_columns(robot, q, pose))
    lwa = pin.LOCAL_WORLD_ALIGNED
    close(task.drift, fd_along(robot, q, v, lambda qq: frame_jac(robot, qq, "left_hand", lwa) @ v))
    # The PD law on the manifold error (world-aligned axes).
    err = np.r_[
        ref.translation - M0.translation, M0.rotation @ pin.log3(M0.rotation.T @ ref.rotation)
    ]
    twist = frame_jac(robot, q, "left_hand", lwa) @ v
    close(task.desired, -np.arange(6.0) + 10.0 * err + 3.0 * (np.arange(6.0) - twist), 1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_relative_frame_task(humanoid, seed):
    robot = humanoid
    q, v = state(robot, seed)
    kin = robot.controller_pass()
    task = RelativeFrameTask("left_hand", "right_hand", kp=1.0, kd=1.0)
    kin(q, v)
    task.update(kin)

    def rel(qq):
        return placement(robot, qq, "left_hand").actInv(placement(robot, qq, "right_hand"))

    R0 = rel(q)
    close(task.jacobian, fd_columns(robot, q, lambda qq: pin.log6(R0.actInv(rel(qq))).vector))
    close(task.twist, task.jacobian @ v, 1e-12)

    def rel_twist(qq):
        # B's body twist relative to A, in B's axes, from separate local Jacobians.
        loc = pin.LOCAL
        X = rel(qq).inverse().action
        return (
            frame_jac(robot, qq, "right_hand", loc) - X @ frame_jac(robot, qq, "left_hand", loc)
        ) @ v

    close(task.drift, fd_along(robot, q, v, rel_twist))


@pytest.mark.parametrize("seed", SEEDS)
def test_com_and_momentum_tasks(humanoid, seed):
    robot = humanoid
    q, v = state(robot, seed)
    kin = robot.controller_pass()
    com = ComTask(kp=1.0, kd=1.0)
    ang, lin = AngularMomentumTask(kd=2.0), LinearMomentumTask(kd=2.0)
    kin(q, v)
    for t in (com, ang, lin):
        t.update(kin)
    m = robot.model

    def c(qq):
        return pin.centerOfMass(m, m.createData(), qq).copy()

    def hg(qq):
        return pin.computeCentroidalMomentum(m, m.createData(), qq, v).vector.copy()

    close(com.jacobian, fd_columns(robot, q, c))
    close(
        com.drift,
        fd_along(robot, q, v, lambda qq: pin.jacobianCenterOfMass(m, m.createData(), qq) @ v),
    )
    # The momentum matrices give the momentum of a second algorithm, and their drift is
    # its time derivative at a = 0.
    h0 = hg(q)
    close(lin.jacobian @ v, h0[:3], 1e-10)
    close(ang.jacobian @ v, h0[3:], 1e-10)
    dh = fd_along(robot, q, v, hg)
    close(lin.drift, dh[:3])
    close(ang.drift, dh[3:])
    close(ang.desired, 2.0 * (0 - h0[3:]), 1e-10)


@pytest.mark.parametrize("seed", SEEDS)
def test_dcm_task(humanoid, seed):
    """The DCM ``xi = c + dc/dt / omega`` from separate Pinocchio calls; its rate along
    ``q(t) = integrate(q, t v)``, ``v(t) = v + t a`` is the task's ``J a + drift``."""
    robot, omega = humanoid, 3.5
    q, v = state(robot, seed)
    a = np.random.default_rng(seed + 20).normal(size=robot.nv)
    kin = robot.controller_pass()
    task = DcmTask(omega=omega, gain=2.0)
    kin(q, v)
    task.update(kin)
    m = robot.model

    def xi(qq, vv):
        d = m.createData()
        c = pin.centerOfMass(m, d, qq).copy()
        return c + pin.jacobianCenterOfMass(m, m.createData(), qq) @ vv / omega

    close(task.dcm, xi(q, v), 1e-12)
    for acc in (np.zeros(robot.nv), a):
        rate = (
            xi(pin.integrate(m, q, EPS * v), v + EPS * acc)
            - xi(pin.integrate(m, q, -EPS * v), v - EPS * acc)
        ) / (2 * EPS)
        close(task.jacobian @ acc + task.drift, rate)
    # Its law drives the DCM error down at the rate ``gain`` from the reference's rate.
    task.set_reference(xi(q, v) + [0.1, -0.2, 0.0], velocity=[0.3, 0.0, 0.0])
    task.update(kin)
    close(task.desired, [0.3 + 0.2, -0.4, 0.0], 1e-12)


def _contacts_controller(robot, q, v):
    """A controller with the two soles (surface contacts) and a point contact on the left
    hand at ``(q, v)``; random wrenches for its columns."""
    ctrl = WholeBodyController(robot, torque_limits=False)
    for f in ("left_sole", "right_sole"):
        ctrl.add_contact(SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.7))
    ctrl.add_contact(PointContact("left_hand", mu=0.5))
    return ctrl


@pytest.mark.parametrize("seed", SEEDS)
def test_cop_and_zmp_tasks(humanoid, seed):
    """CoP rows against the contact frame's CoP of ``balance.cop`` (its placement from a
    separate Pinocchio call), the ZMP rows against ``balance.zmp`` of the contacts' total
    wrench, at random configurations and wrenches; both rows are ``f_n (p - p_ref)``, and
    their columns are the derivatives of that expression in the wrench (central
    differences)."""
    robot = humanoid
    q, v = state(robot, seed)
    rng = np.random.default_rng(seed + 30)
    ctrl = _contacts_controller(robot, q, v)
    ref = np.array([0.02, -0.01])
    cop = ctrl.add_task(CopTask("right_sole", reference=ref))
    zmp_task = ctrl.add_task(ZmpTask(reference=[0.1, 0.05], height=0.02))
    ctrl.update(q, v, 0.0)
    layout = ctrl.layout
    x = rng.normal(size=layout.n) * 50.0
    for s in layout.contacts:  # pressing: a CoP and a ZMP exist
        x[s.columns.start : s.columns.start + 3] += (
            1e3 * placement(robot, q, s.contact.frame).rotation[:, 2]
        )

    def cop_row(xx):
        M = placement(robot, q, "right_sole")
        w = xx[layout.contacts[1].columns]
        local = np.r_[M.rotation.T @ w[:3], M.rotation.T @ w[3:]]
        return local[2] * (cop_in_contact_frame(local) - ref)

    def zmp_row(xx):
        total = Wrench(np.zeros(3), np.zeros(3), np.zeros(3))
        for s in layout.contacts:
            w, p = xx[s.columns], placement(robot, q, s.contact.frame).translation
            moment = w[3:] if len(w) == 6 else np.zeros(3)
            total = total + Wrench(w[:3], moment, p).shift_to(np.zeros(3))
        return total.force[2] * (zmp(total, height=0.02)[:2] - [0.1, 0.05])

    close(cop.residual(x), cop_row(x), 1e-12)
    close(zmp_task.residual(x), zmp_row(x), 1e-12)
    for task, f in ((cop, cop_row), (zmp_task, zmp_row)):
        columns = []
        for i in range(layout.n):
            e = np.zeros(layout.n)
            e[i] = 1.0
            columns.append((f(x + e) - f(x - e)) / 2.0)
        close(task.jacobian, np.array(columns).T, 1e-9)
        close(task.drift, np.zeros(2), 0.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_torque_task(humanoid, seed):
    """``J x + drift`` is the joint torque ``rnea(q, v, a) - J_c^T w - J_e^T w_e`` of
    Pinocchio's RNEA with the contact and external wrenches (world axes at the frames'
    origins) as a second algorithm."""
    robot = humanoid
    q, v = state(robot, seed)
    rng = np.random.default_rng(seed + 40)
    ctrl = _contacts_controller(robot, q, v)
    task = ctrl.add_task(TorqueTask(weight=1e-3))
    push = rng.normal(size=6) * 20.0
    ctrl.update(q, v, 0.0, external_wrenches={"right_hand": push})
    layout = ctrl.layout
    x = rng.normal(size=layout.n) * 30.0
    m = robot.model
    d = m.createData()
    pin.framesForwardKinematics(m, d, q)
    fext = [pin.Force.Zero() for _ in range(m.njoints)]
    frames = [(s.contact.frame, x[s.columns]) for s in layout.contacts]
    for frame, w in [*frames, ("right_hand", push)]:  # the wrenches on the robot
        fid = m.getFrameId(frame)
        w6 = np.r_[w, np.zeros(6 - len(w))]
        p = d.oMf[fid].translation
        at_origin = pin.Force(w6[:3], w6[3:] + np.cross(p, w6[:3]))
        j = m.frames[fid].parentJoint
        fext[j] += d.oMi[j].actInv(at_origin)
    tau = pin.rnea(m, d, q, v, x[: robot.nv], fext)[6:]
    close(task.jacobian @ x + task.drift, tau, 1e-10)
    with pytest.raises(InvalidArgumentError, match=r"reference must be a vector of 19, got shape"):
        task.set_reference(np.zeros(18))


@pytest.mark.parametrize("seed", SEEDS)
def test_posture_task(humanoid, seed):
    robot = humanoid
    q, v = state(robot, seed)
    q_ref, _ = state(robot, seed + 10)
    kin = robot.controller_pass()
    weights = np.linspace(0.5, 2.0, robot.nv - 6)
    task = PostureTask(kp=4.0, kd=2.0, joint_weights=weights)
    task.set_reference(q_ref)
    kin(q, v)
    task.update(kin)

    # The error is the joint part of the manifold difference; its derivative along each
    # joint direction is minus the task Jacobian (the base is left free).
    def err(qq):
        return pin.difference(robot.model, qq, q_ref)[6:]

    close(-task.jacobian, fd_columns(robot, q, err))
    close(task.desired, 4.0 * err(q) - 2.0 * v[6:], 1e-12)
    # The cost is sum_j w_j (a_j - desired_j)^2: P and q of the QP, in its diagonal form
    # and in the rows' form (J^T diag(w) J, its row scales sqrt(w)).
    n = robot.nv
    P, qv = np.zeros((n, n)), np.zeros(n)
    task.add_cost_diagonal(np.einsum("ii->i", P), qv)
    np.testing.assert_allclose(np.diag(P)[6:], weights)
    np.testing.assert_allclose(qv[6:], -weights * task.desired)
    J = task.jacobian * task._row_scale[:, None]
    np.testing.assert_allclose(J.T @ J, P, rtol=0, atol=1e-15)


def test_mask_and_bad_arguments(humanoid):
    kin = humanoid.controller_pass()
    q, v = state(humanoid, 0)
    kin(q, v)
    task = FrameTask("left_sole", kp=1.0, kd=1.0, mask=[0, 0, 1, 0, 0, 0])
    task.update(kin)
    assert task.residual(np.zeros(humanoid.nv)).shape == (1,)
    with pytest.raises(InvalidArgumentError, match="mask"):
        task.set_mask([1, 0])
    with pytest.raises(InvalidArgumentError, match="kp"):
        ComTask(kp=[1.0, -1.0, 1.0], kd=1.0)
    with pytest.raises(InvalidArgumentError, match="weight"):
        ComTask(kp=1.0, kd=1.0, weight=-1.0)
    from wholebody.errors import FrameNotFoundError

    with pytest.raises(FrameNotFoundError):
        FrameTask("no_such_frame", kp=1.0, kd=1.0).update(kin)


def test_posture_error_is_pinocchio_difference_on_either_path(humanoid):
    """PostureTask's error without a Pinocchio call (revolute and prismatic joints: a
    subtraction) and with pin.difference (any other joint, here a continuous one) equals
    pin.difference(q, q_ref)[6:] at random configurations; the path follows the model."""
    from types import SimpleNamespace

    import pinocchio as pin

    from wholebody.control import PostureTask

    def chain(*joints):
        model, parent = pin.Model(), 0
        for i, joint in enumerate(joints):
            parent = model.addJoint(parent, joint, pin.SE3.Random(), f"j{i}")
        return model

    free = pin.JointModelFreeFlyer()
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    # Shortcut: revolute, prismatic, unaligned ones after a free flyer.
    mixed = chain(
        free,
        pin.JointModelRX(),
        pin.JointModelPY(),
        pin.JointModelRevoluteUnaligned(axis),
        pin.JointModelPrismaticUnaligned(axis),
    )
    continuous = chain(free, pin.JointModelRUBZ(), pin.JointModelRX())
    spherical = chain(free, pin.JointModelSpherical(), pin.JointModelRY())
    planar = chain(free, pin.JointModelPlanar(), pin.JointModelRY())
    # A composite root (a hinge, then a free flyer) whose sizes pass nq - 7 == nv - 6 with
    # euclidean joints after it: q and v are laid out otherwise, so Pinocchio's difference
    # (the shortcut there gives another error: checked).
    composite_root = pin.JointModelComposite(pin.JointModelRX())
    composite_root.addJoint(free)
    composite = chain(composite_root, pin.JointModelRY(), pin.JointModelRZ())
    pin.seed(5)
    cases = [
        (humanoid.model, True),
        (mixed, True),
        (continuous, False),
        (spherical, False),
        (planar, False),
        (composite, False),
    ]
    for model, euclidean in cases:
        task = PostureTask(kp=1.0, kd=0.0)
        for _ in range(3):
            q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
            ref = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
            task.set_reference(ref)
            kin = SimpleNamespace(model=model, q=q, v=np.zeros(model.nv), nq=model.nq, nv=model.nv)
            task.update(kin)
            assert task._euclidean is euclidean
            np.testing.assert_allclose(
                task.error, pin.difference(model, q, ref)[6:], rtol=0, atol=1e-15
            )


def test_a_contact_task_keeps_its_mask_while_its_contact_is_away(humanoid):
    """A CoP task's mask outlives its contact's removal (no rows meanwhile, an empty
    residual) and serves again when the contact is back."""
    ctrl = WholeBodyController(humanoid)
    for f in ("left_sole", "right_sole"):
        ctrl.add_contact(SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.7))
    cop = ctrl.add_task(CopTask("right_sole", mask=[1, 0]))
    q, v = state(humanoid, 0)
    ctrl.update(q, v, 0.0)
    assert cop.size == 2 and cop.residual(ctrl.solve().x).shape == (1,)
    ctrl.remove_contact("right_sole")
    ctrl.update(q, v, 1e-3)
    assert cop.size == 0 and cop.residual(ctrl.solve().x).shape == (0,)
    ctrl.add_contact(SurfaceContact("right_sole", half_length=0.1, half_width=0.05, mu=0.7))
    ctrl.update(q, v, 2e-3)
    ctrl.solve()
    np.testing.assert_array_equal(cop.mask, [True, False])
