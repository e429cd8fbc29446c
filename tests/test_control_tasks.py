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

from wholebody.control import (
    AngularMomentumTask,
    ComTask,
    FrameTask,
    LinearMomentumTask,
    PostureTask,
    RelativeFrameTask,
)
from wholebody.errors import InvalidArgumentError

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
    # The cost is sum_j w_j (a_j - desired_j)^2: P and q of the QP.
    n = robot.nv
    P, qv = np.zeros((n, n)), np.zeros(n)
    task.add_cost(P, qv)
    np.testing.assert_allclose(np.diag(P)[6:], weights)
    np.testing.assert_allclose(qv[6:], -weights * task.desired)


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
