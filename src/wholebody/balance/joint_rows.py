"""The joint rows of the equations of motion, and their tolerances: for the check
(:mod:`wholebody.check`) and its diagnosis (the full-dynamics estimate's equations are the
same rows from its own pass, tested equal).

.. math::

    r_j = \\left(M(q)\\,a + h(q, v) - \\sum_i J_i^T w_i - \\sum_e J_e^T w_e\\right)_j - \\tau_j

for each actuated joint ``j`` [N m for a revolute joint, N for a prismatic one]: the torque
the motion and the wrenches on the robot (contacts ``i``, known external wrenches ``e``,
world axes at their frames' origins) need, less the logged torque. One ``rnea`` per sample
with the wrenches as external forces gives it
(:func:`wholebody.robot.batch.inverse_dynamics_rows`).

**Tolerance per joint** (``docs/diagnosis.md``, "Joint rows"): the wrench balance accepts a
residual force of ``eps_f m |g|`` and moment of ``eps_m m |g|``. Such a wrench error, acting
anywhere on the links a joint carries (its subtree), changes that joint's torque by at most

.. math::

    \\mathrm{tol}_j = m |g| \\left(\\varepsilon_m + \\varepsilon_f L_j\\right)

(a prismatic joint: ``eps_f m |g|`` [N]), with ``L_j`` the joint's lever: the longest chain of
placements from the joint to a point of its subtree (child joints, frames, centres of mass),
a bound on their distance in every configuration. The joint rows are thus held to the
standard of the wrench balance, joint by joint.

**Waived rows**: with accelerations differentiated from ``v``, a sample whose wrench balance
is waived (its residual within the tolerance plus the differentiation's expected error
``(e_f, e_m)``) has its joint rows waived where each is within its tolerance plus
``e_m + e_f L_j`` (:func:`joint_weights`), the same error carried to the joint; a row beyond
that fails the sample.

**Checked joints**: those the log gives a finite torque for and the model does not mark
passive (an effort limit of exactly 0); the others are stated, never guessed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ..robot.batch import inverse_dynamics_rows
from ..robot.core import Robot

__all__ = ["joint_levers", "joint_weights", "joint_tolerances", "passive_joints", "joint_rows"]

Array = NDArray[np.float64]


def joint_levers(robot: Robot) -> Array:
    """Each joint's lever ``L_j`` [m], ``robot.joint_names`` order: the longest chain of
    placement translations from the joint's origin to a child joint's origin, then to a frame
    or a centre of mass of that joint's body (a configuration-independent bound on the
    distance from the joint to any point of its subtree)."""
    model = robot.model
    n = model.njoints
    reach = np.zeros(n)  # the farthest point of joint k's own body from k's origin
    for frame in model.frames:
        k = frame.parentJoint
        reach[k] = max(reach[k], float(np.linalg.norm(frame.placement.translation)))
    for k in range(1, n):
        reach[k] = max(reach[k], float(np.linalg.norm(model.inertias[k].lever)))
    # Deepest first: a joint's lever is its body's reach or a child's lever plus the step.
    lever = reach.copy()
    for k in range(n - 1, 0, -1):
        parent = model.parents[k]
        step = float(np.linalg.norm(model.jointPlacements[k].translation))
        lever[parent] = max(lever[parent], lever[k] + step)
    return np.array([lever[robot.joint_id(name)] for name in robot.joint_names])


def joint_weights(robot: Robot) -> Array:
    """How a wrench error reaches each joint row, ``robot.joint_names`` order: (nj, 2) with
    ``(1, L_j)`` for a revolute joint (a moment error counts once, a force error with the
    joint's lever ``L_j`` [m]) and ``(0, 1)`` for a prismatic one (the force alone). A row's
    tolerance, and its share of a sample's expected error, are ``w_m e_m + w_f e_f`` of the
    wrench balance's moment and force figures ``e_m`` [N m] and ``e_f`` [N]."""
    model = robot.model
    prismatic = np.array(
        ["Prismatic" in model.joints[robot.joint_id(j)].shortname() for j in robot.joint_names],
        dtype=bool,
    )
    lever = joint_levers(robot)
    return np.stack([np.where(prismatic, 0.0, 1.0), np.where(prismatic, 1.0, lever)], axis=1)


def joint_tolerances(robot: Robot, force_tolerance: float, moment_tolerance: float) -> Array:
    """The tolerance of each joint row (module docstring), ``robot.joint_names`` order:
    ``m |g| (moment_tolerance + force_tolerance L_j)`` [N m] for a revolute joint,
    ``m |g| force_tolerance`` [N] for a prismatic one (:func:`joint_weights`).

    Parameters
    ----------
    robot : Robot
    force_tolerance : float
        The wrench balance's force tolerance, relative to the weight.
    moment_tolerance : float
        Its moment tolerance over the weight [m].
    """
    w = joint_weights(robot)
    return robot.weight * (w[:, 0] * moment_tolerance + w[:, 1] * force_tolerance)


def passive_joints(robot: Robot) -> NDArray[np.bool_]:
    """Joints the model marks passive (an effort limit of exactly 0), ``robot.joint_names``
    order: no actuator, no torque to check."""
    model = robot.model
    limits = model.effortLimit
    return np.array(
        [float(limits[model.joints[robot.joint_id(j)].idx_v]) == 0.0 for j in robot.joint_names],
        dtype=bool,
    )


def joint_rows(
    robot: Robot,
    Q: Array,
    V: Array,
    A: Array,
    tau: Array,
    rows: Sequence[int] | NDArray[np.integer],
    frame_ids: Sequence[int],
    wrenches: Array,
    rotations: Array,
    jacobians: Array | None = None,
) -> Array:
    """The joint rows' residual ``r`` (module docstring) at ``rows`` (NaN elsewhere).

    Parameters
    ----------
    robot : Robot
        A floating-base robot whose joints have one coordinate each.
    Q : ndarray, shape (N, nq)
    V, A : ndarray, shape (N, nv)
        Checked states.
    tau : ndarray, shape (N, nv - 6)
        Logged joint torques, ``robot.joint_names`` order [N m or N] (NaN: not logged).
    rows : sequence of int
        The samples to compute.
    frame_ids : sequence of int
        The frames the wrenches act at (contacts, then known external wrenches).
    wrenches : ndarray, shape (N, m, 6)
        On the robot, world axes, at each frame's origin [N, N m].
    rotations : ndarray, shape (N, m, 3, 3)
        World-from-frame rotations.
    jacobians : ndarray, shape (N, m, 6, nv), optional
        Out: the frames' Jacobians (:func:`~wholebody.robot.batch.inverse_dynamics_rows`).

    Returns
    -------
    ndarray, shape (N, nv - 6)
        ``(M a + h - sum J^T w)_j - tau_j`` [N m or N].
    """
    out = np.full((len(Q), robot.nv), np.nan)
    inverse_dynamics_rows(robot, Q, V, A, rows, frame_ids, wrenches, rotations, out, jacobians)
    return out[:, 6:] - tau
