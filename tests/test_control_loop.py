"""The controller in a MuJoCo closed loop with its new parts at once: strict priority levels
(a DCM task and soft joint bounds above the rest; the soles' CoP, a soft ZMP task and a
torque task among the rest), a push on the torso measured and given as an external wrench,
and a step (a contact removed with a force ramp, the swing sole lifted).

Checked on every tick against Pinocchio's own calls at the tick's state, independently of
the controller's pass: the equations of motion ``M a + h = S^T tau + J_c^T w + J_e^T w_e``
(``crba`` and ``nonLinearEffects``, the push's frame Jacobian) and each active sole's wrench
in its surface cone (:class:`~wholebody.friction.ContactSet` faces at the frame's orientation
from ``framesForwardKinematics``), both to 1e-9 (of the weight for the equations); the DCM
driven to its reference, and the loop ends standing. Failing direction: the same loop with
the push not given to the controller breaks the equations of motion by the push.
"""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest

import wholebody as wb
from wholebody.contacts import SurfaceContact
from wholebody.control import (
    AngularMomentumTask,
    ContactForceTask,
    CopTask,
    DcmTask,
    FrameTask,
    JointBounds,
    MinimumJerk,
    PostureTask,
    TorqueTask,
    WholeBodyController,
    ZmpTask,
)
from wholebody.errors import ModelWarning
from wholebody.friction import ContactSet

DT = 1e-3
SOLES = ("left_sole", "right_sole")
TOL = 1e-9
PUSH = np.array([25.0, -15.0, 0.0])  # on the torso's origin, world axes [N]
PUSH_TIME = (0.05, 0.15)  # [s]
SHIFT, LIFT, END = (0.05, 0.65), 0.75, 1.1  # [s]


def _loop(measured: bool):
    """The closed loop; per tick the largest equations-of-motion residual [N, N m] and cone
    row [N]; the DCM error at the end [m] and the lowest base height [m]."""
    mujoco = pytest.importorskip("mujoco")
    from wholebody.sim.mujoco import MujocoStateMap, mujoco_spec_for_robot

    robot = wb.load("humanoid")
    real = [SurfaceContact(f, half_length=0.12, half_width=0.05, mu=1.0) for f in SOLES]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        build = mujoco_spec_for_robot(robot, real, other_collisions=False, timestep=DT)
    build.spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    m = build.compile()
    d = mujoco.MjData(m)
    robot = build.robot
    bent = {"hip_pitch": -0.25, "knee": 0.5, "ankle_pitch": -0.25}
    named = {f"{s}_{j}": x for s in ("left", "right") for j, x in bent.items()}
    named.update({"left_elbow": -0.4, "right_elbow": -0.4})
    q0 = robot.q_from_named(named)
    q0[2] = -robot.frame_position(q0, SOLES[0])[2] - 5e-4
    smap = MujocoStateMap(robot, m)
    jid = {n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in robot.joint_names}
    d.qpos[:3], d.qpos[3:7] = q0[:3], [q0[6], *q0[3:6]]
    for n, value in robot.named(q0).items():
        d.qpos[m.jnt_qposadr[jid[n]]] = value
    dofs = np.array([m.jnt_dofadr[jid[n]] for n in robot.joint_names])
    torso = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "torso")

    planned = {f: SurfaceContact(f, half_length=0.09, half_width=0.0375, mu=0.7) for f in SOLES}
    ctrl = WholeBodyController(robot, dt=DT)
    for f in SOLES:
        ctrl.add_contact(planned[f], kp=20.0, kd=9.0)
    z0 = robot.com(q0)[2] - robot.frame_position(q0, SOLES[0])[2]
    omega = np.sqrt(9.81 / z0)
    dcm = ctrl.add_task(DcmTask(omega=omega, gain=5.0), priority=1)
    for f in SOLES:
        ctrl.add_task(CopTask(f, weight=1e-6), priority=2)
    ctrl.add_constraint(
        JointBounds(robot, dt=DT, acceleration_limit=200.0, margin=0.02), priority=1, weight=1e3
    )
    ctrl.add_task(AngularMomentumTask(kd=10.0, weight=1e-3), priority=2)
    ctrl.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-3), priority=2).set_reference(q0)
    ctrl.add_task(ZmpTask(weight=1e-6), priority=2)
    ctrl.add_task(TorqueTask(weight=1e-8), priority=2)
    for f in SOLES:
        ctrl.add_task(ContactForceTask(f, weight=1e-5), priority=2)

    checks = Checks(robot, planned)
    c0, left = robot.com(q0), robot.frame_position(q0, SOLES[0])
    shift = MinimumJerk(c0, [left[0], left[1], c0[2]], SHIFT[1] - SHIFT[0], SHIFT[0])
    swing: FrameTask | None = None
    eom, cone, low = [], [], np.inf
    for k in range(int(round(END / DT))):
        t = k * DT
        q, v = smap.q(d.qpos), smap.v(d.qpos, d.qvel)
        push = PUSH_TIME[0] <= t < PUSH_TIME[1]
        # The DCM of a CoM moving over the left sole: xi = c + dc/dt / omega.
        c, dc, ddc = shift(t)
        dcm.set_reference(c + dc / omega, dc + ddc / omega)
        if abs(t - LIFT) < DT / 2:
            ctrl.remove_contact(SOLES[1], ramp=0.05)
            swing = ctrl.add_task(FrameTask(SOLES[1], kp=100.0, kd=20.0), priority=2)
            start = robot.placements(q, SOLES[1]).se3()
            up = MinimumJerk([0.0], [0.01], 0.2, LIFT + 0.05)

            def lift(t, start=start, up=up):
                z, dz, ddz = up(t)
                M = start.copy()
                M.translation = M.translation + [0.0, 0.0, z[0]]
                return M, dz, ddz

        if swing is not None and t >= LIFT + 0.05:  # the swing sole up 1 cm
            M, dz, ddz = lift(t)
            swing.set_reference(
                M, np.r_[0.0, 0.0, dz[0], 0, 0, 0], np.r_[0.0, 0.0, ddz[0], 0, 0, 0]
            )
        wrench = np.r_[PUSH, 0.0, 0.0, 0.0] if push else np.zeros(6)
        external = {"torso": wrench} if measured else None
        ctrl.update(q, v, t, external_wrenches=external)
        sol = ctrl.solve()
        r, c = checks(q, v, sol, {"torso": wrench})
        eom.append(r)
        cone.append(c)
        low = min(low, float(q[2]))
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[dofs] = sol.torque
        d.xfrc_applied[:] = 0.0
        if push:  # the force at the torso's origin: with its moment about the body's CoM
            d.xfrc_applied[torso, :3] = PUSH
            d.xfrc_applied[torso, 3:] = np.cross(d.xpos[torso] - d.xipos[torso], PUSH)
        mujoco.mj_step(m, d)
    return np.array(eom), np.array(cone), np.abs(dcm.error[:2]).max(), low, q0[2]


class Checks:
    """The equations of motion and the cones at a tick's state from Pinocchio's own calls."""

    def __init__(self, robot, planned):
        self.robot, self.model = robot, robot.model
        self.data = self.model.createData()
        self.cones = {f: ContactSet([c]) for f, c in planned.items()}

    def __call__(self, q, v, sol, external):
        m, d = self.model, self.data
        M = pin.crba(m, d, q)
        M = np.triu(M) + np.triu(M, 1).T
        r = M @ sol.acceleration + pin.nonLinearEffects(m, d, q, v)
        r[6:] -= sol.torque
        pin.computeJointJacobians(m, d, q)
        pin.framesForwardKinematics(m, d, q)
        cone = -np.inf
        for frame, w in [*sol.wrenches.items(), *external.items()]:
            fid = m.getFrameId(frame)
            r -= pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED).T @ w
            if frame in self.cones:
                G = self.cones[frame].face_matrix(d.oMf[fid].rotation[None])
                cone = max(cone, float(np.max(G @ w)))
        return float(np.abs(r).max()), cone


def test_every_tick_meets_the_equations_of_motion_and_the_cones():
    eom, cone, dcm_error, low, z0 = _loop(measured=True)
    weight = wb.load("humanoid").weight
    assert eom.max() <= TOL * weight
    assert cone.max() <= TOL
    assert dcm_error < 0.02 and low > z0 - 0.05  # the DCM held, standing at the end


def test_a_push_not_given_breaks_the_equations_by_the_push():
    eom, *_ = _loop(measured=False)
    during = slice(int(PUSH_TIME[0] / DT), int(PUSH_TIME[1] / DT))
    assert eom[during].min() > 0.25 * np.linalg.norm(PUSH)
    assert eom[: during.start].max() <= TOL * wb.load("humanoid").weight
