"""What the controller tests share: the humanoid standing on two soles, its controller with
the usual tasks, and the equations of motion checked by Pinocchio's own calls."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from wholebody.contacts import SurfaceContact
from wholebody.control import (
    AngularMomentumTask,
    ComTask,
    ContactForceTask,
    PostureTask,
    WholeBodyController,
)

SOLES = ("left_sole", "right_sole")


def sole(frame, mu=0.7):
    return SurfaceContact(frame, half_length=0.1, half_width=0.04, mu=mu)


def standing(robot, seed=0, scale=0.1):
    """Knees bent, and random velocities of scale ``scale``."""
    bent = {"hip_pitch": -0.25, "knee": 0.5, "ankle_pitch": -0.25}
    q = robot.q_from_named({f"{s}_{j}": x for s in ("left", "right") for j, x in bent.items()})
    return q, np.random.default_rng(seed).normal(scale=scale, size=robot.nv)


def controller(robot, mu=0.7, **kwargs):
    """Both soles held; CoM, angular momentum, posture and force regularisation tasks."""
    ctrl = WholeBodyController(robot, **kwargs)
    for f in SOLES:
        ctrl.add_contact(sole(f, mu), kp=10.0, kd=6.0)
    ctrl.add_task(ComTask(kp=25.0, kd=10.0))
    ctrl.add_task(AngularMomentumTask(kd=10.0, weight=1e-3))
    ctrl.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-3))
    for f in SOLES:
        ctrl.add_task(ContactForceTask(f, weight=1e-6))
    return ctrl


def eom_residual(robot, q, v, sol):
    """``|M a + h - S^T tau - sum J_c^T w_c|`` from Pinocchio's own calls at ``(q, v)``
    (the contacts' frames named as the contacts)."""
    m, d = robot.model, robot.model.createData()
    M = pin.crba(m, d, q)
    M = np.triu(M) + np.triu(M, 1).T
    r = M @ sol.acceleration + pin.rnea(m, d, q, v, 0 * v)
    r[6:] -= sol.torque
    pin.computeJointJacobians(m, d, q)
    pin.updateFramePlacements(m, d)
    for name, w in sol.wrenches.items():
        J = pin.getFrameJacobian(m, d, m.getFrameId(name), pin.LOCAL_WORLD_ALIGNED)
        r -= J[: len(w)].T @ w  # a point contact's force: the Jacobian's linear rows
    return float(np.max(np.abs(r)))
