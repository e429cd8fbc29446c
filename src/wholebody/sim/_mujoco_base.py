"""MuJoCo's conventions converted (the one place they are known), and lookups in a compiled
MuJoCo model. Public through :mod:`wholebody.sim.mujoco`, which re-exports these names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from ..contacts import Contact
from ..errors import ModelError, require
from ..robot.core import Array, Robot
from ..spatial import rotation_from_quat_xyzw
from ..trajectory import Trajectory

__all__ = [
    "import_mujoco",
    "free_base_to_pinocchio",
    "trajectory_from_mujoco",
    "contact_wrenches_on_bodies",
    "MujocoStateMap",
    "mujoco_mass_matrix",
    "contact_site_id",
    "contact_body_id",
    "CONTACT_SITE_PREFIX",
    "CONTACT_GEOM_PREFIX",
    "FLOOR_NAME",
]


def free_base_to_pinocchio(
    qpos: ArrayLike, qvel: ArrayLike, qacc: ArrayLike | None = None
) -> tuple[Array, Array, Array | None]:
    """Convert free-floating states from MuJoCo's conventions to Pinocchio's, for N samples.

    Parameters
    ----------
    qpos : array, shape (N, 7 + nj)
        ``[x, y, z, qw, qx, qy, qz, joints...]``.
    qvel, qacc : arrays, shape (N, 6 + nj)
        ``[linear velocity (world axes), angular velocity (body axes), joints...]`` and its
        time derivative.

    Returns
    -------
    q, v, a
        ``q = [x, y, z, qx, qy, qz, qw, joints]``; ``v`` with the base linear velocity in
        base axes, ``v_lin = R^T qvel_lin``; ``a_lin = R^T qacc_lin - omega x v_lin``
        (the derivative of a rotating-frame vector). The joints are unchanged.
    """
    qpos = np.atleast_2d(np.asarray(qpos, dtype=float))
    qvel = np.atleast_2d(np.asarray(qvel, dtype=float))
    R = rotation_from_quat_xyzw(qpos[:, [4, 5, 6, 3]])  # MuJoCo: w, x, y, z
    q = np.concatenate([qpos[:, :3], qpos[:, 4:7], qpos[:, 3:4], qpos[:, 7:]], axis=1)
    v_lin = np.einsum("nji,nj->ni", R, qvel[:, :3])
    v = np.concatenate([v_lin, qvel[:, 3:]], axis=1)
    a = None
    if qacc is not None:
        qacc = np.atleast_2d(np.asarray(qacc, dtype=float))
        a_lin = np.einsum("nji,nj->ni", R, qacc[:, :3]) - np.cross(qvel[:, 3:6], v_lin)
        a = np.concatenate([a_lin, qacc[:, 3:]], axis=1)
    return q, v, a


def trajectory_from_mujoco(
    qpos: ArrayLike,
    qvel: ArrayLike,
    qacc: ArrayLike | None = None,
    *,
    time: ArrayLike,
    joint_names: Sequence[str],
    contact_wrenches: Mapping[str, ArrayLike],
    tau: ArrayLike | None = None,
    external_wrenches: Mapping[str, ArrayLike] | None = None,
    metadata: Mapping[str, Any] | None = None,
    contact_active: Mapping[str, ArrayLike] | ArrayLike | None = None,
) -> Trajectory:
    """A :class:`~wholebody.trajectory.Trajectory` from MuJoCo arrays of a free-floating robot
    with hinge/slide joints.

    ``qpos`` (N, 7 + nj): free joint ``[x, y, z, qw, qx, qy, qz]`` then joints in
    ``joint_names`` order; ``qvel`` / ``qacc`` (N, 6 + nj): free joint linear velocity in
    world axes and angular velocity in body axes, then joints. Converted by
    :func:`free_base_to_pinocchio`. Contact wrenches must already be per contact in world
    axes at the contact frame origins, on the robot (:func:`contact_wrenches_on_bodies` gives
    that from ``mj_contactForce``, which acts from geom1 on geom2 in the contact frame).
    ``contact_active`` is the contact schedule, as in
    :meth:`~wholebody.trajectory.Trajectory.from_arrays` (for instance which contacts
    MuJoCo's contact list touches at each sample); ``metadata["converted_from"]`` is
    ``"mujoco"``.
    """
    q, v, a = free_base_to_pinocchio(qpos, qvel, qacc)
    return Trajectory.from_arrays(
        time,
        q,
        v,
        joint_names=joint_names,
        contact_wrenches=contact_wrenches,
        a=a,
        tau=tau,
        external_wrenches=external_wrenches,
        contact_active=contact_active,
        metadata={"converted_from": "mujoco", **dict(metadata or {})},
    )


def contact_wrenches_on_bodies(
    mj_model: Any, mj_data: Any, bodies: list[str], points: Array
) -> Array:
    """The contact wrench on each named body, world axes, about the given points, (k, 6).

    Sums every active contact of the body: ``mj_contactForce`` gives the force of geom1 on
    geom2 in the contact frame (rows of ``contact.frame`` are its axes, the normal first), so
    a body that is geom1 receives its opposite. Torsional/rolling friction torques (condim >
    3) are included.
    """
    mujoco = import_mujoco()
    ids = [mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_BODY, b) for b in bodies]
    for name, i in zip(bodies, ids, strict=True):
        if i < 0:
            raise ModelError(f"MuJoCo model has no body {name!r}")
    out = np.zeros((len(bodies), 6))
    local = np.zeros(6)
    for c in range(mj_data.ncon):
        con = mj_data.contact[c]
        mujoco.mj_contactForce(mj_model, mj_data, c, local)
        frame = con.frame.reshape(3, 3).T  # columns: normal, tangent 1, tangent 2
        f, tau = frame @ local[:3], frame @ local[3:]
        b1, b2 = mj_model.geom_bodyid[con.geom1], mj_model.geom_bodyid[con.geom2]
        for k, body in enumerate(ids):
            sign = 1.0 if b2 == body else (-1.0 if b1 == body else 0.0)
            if sign:
                out[k, :3] += sign * f
                out[k, 3:] += sign * (tau + np.cross(con.pos - points[k], f))
    return out


def import_mujoco() -> Any:
    """Import :mod:`mujoco` or raise :class:`MissingDependencyError` with the install line."""
    return require("mujoco", "mujoco", "MuJoCo models and logs")


#: Prefixes of the names the bridge gives to what it adds.
CONTACT_SITE_PREFIX = "wb_contact_"
CONTACT_GEOM_PREFIX = "wb_sole_"
FLOOR_NAME = "wb_floor"


def contact_site_id(mj_model: Any, c: Contact, sites: Mapping[str, str] | None) -> int:
    mujoco = import_mujoco()
    names = [sites[c.name]] if sites and c.name in sites else []
    names += [CONTACT_SITE_PREFIX + c.name, c.frame]
    for n in names:
        i = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_SITE, n)
        if i >= 0:
            return int(i)
    return -1


def contact_body_id(mj_model: Any, c: Contact, sites: Mapping[str, str] | None) -> int:
    mujoco = import_mujoco()
    site = contact_site_id(mj_model, c, sites)
    if site >= 0:
        return int(mj_model.site_bodyid[site])
    body = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_BODY, c.frame)
    if body < 0:
        raise ModelError(
            f"contact {c.name!r}: the MuJoCo model has no site {CONTACT_SITE_PREFIX + c.name!r} "
            f"nor a site or body {c.frame!r} (MuJoCo merges bodies welded to their parent: build "
            "the model with mujoco_spec_for_robot, which adds a site at each contact frame)"
        )
    return int(body)


class MujocoStateMap:
    """Maps MuJoCo states of a model to Pinocchio states of a :class:`Robot`, by joint name.

    Parameters
    ----------
    robot : Robot
    mj_model : mujoco.MjModel
        A model of the same robot (for example from :func:`mujoco_model_from_urdf`).
    """

    def __init__(self, robot: Robot, mj_model: Any):
        mujoco = import_mujoco()
        self.robot = robot
        m = robot.model
        self.nq_mj, self.nv_mj = mj_model.nq, mj_model.nv
        q_idx = np.full(m.nq, -1)
        v_idx = np.full(m.nv, -1)
        self._free_mj: tuple[int, int] | None = None
        for jid in range(mj_model.njnt):
            jtype = int(mj_model.jnt_type[jid])
            qa, va = mj_model.jnt_qposadr[jid], mj_model.jnt_dofadr[jid]
            if jtype == int(mujoco.mjtJoint.mjJNT_FREE):
                if not robot.has_floating_base:
                    raise ModelError("the MuJoCo model has a free joint, the robot a fixed base")
                self._free_mj = (qa, va)
                continue
            name = mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_JOINT, jid)
            if jtype not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
                raise ModelError(f"MuJoCo joint {name!r}: only hinge, slide and free joints map")
            pj = m.joints[robot.joint_id(name)]
            if pj.nq != 1:
                raise ModelError(
                    f"joint {name!r} has {pj.nq} coordinates in Pinocchio, 1 in MuJoCo"
                )
            q_idx[pj.idx_q] = qa
            v_idx[pj.idx_v] = va
        if robot.has_floating_base and self._free_mj is None:
            raise ModelError("the robot has a floating base but the MuJoCo model no free joint")
        start_q, start_v = (7, 6) if robot.has_floating_base else (0, 0)
        missing = [
            robot.model.names[j]
            for j in range(1, m.njoints)
            if m.joints[j].nq == 1 and q_idx[m.joints[j].idx_q] < 0
        ]
        if missing:
            raise ModelError(f"joints {missing} are not in the MuJoCo model")
        self._q_idx = q_idx[start_q:]
        self._v_idx = v_idx[start_v:]

    @property
    def joint_qpos_indices(self) -> NDArray[np.int64]:
        """MuJoCo ``qpos`` indices of the robot's joints, in the robot's joint order."""
        return np.array(self._q_idx, dtype=np.int64)

    @property
    def joint_dof_indices(self) -> NDArray[np.int64]:
        """MuJoCo ``qvel`` / force indices of the robot's joints, in the robot's joint order."""
        return np.array(self._v_idx, dtype=np.int64)

    def qpos(self, q: ArrayLike, out: Array | None = None) -> Array:
        """MuJoCo ``qpos`` of a Pinocchio ``q`` (the free joint's quaternion w-x-y-z).

        Written into ``out`` (for example ``mj_data.qpos``) when given, else into zeros of
        the MuJoCo model's ``nq`` (coordinates of joints the robot does not have stay 0).

        Raises
        ------
        StateError
            ``q`` is not a valid state of the robot (its length, a non-finite value, its
            quaternion's norm), before anything is written into ``out``.
        """
        q = self.robot._check_q(q)
        qpos = np.zeros(self.nq_mj) if out is None else out
        start = 0
        if self._free_mj is not None:
            qa, _ = self._free_mj
            qpos[qa : qa + 3] = q[:3]
            qpos[qa + 3] = q[6]
            qpos[qa + 4 : qa + 7] = q[3:6]
            start = 7
        qpos[self._q_idx] = q[start:]
        return qpos

    def _base_rotation(self, qpos: Array) -> Array:
        if self._free_mj is None:
            return np.eye(3)
        qa, _ = self._free_mj
        w, x, y, z = qpos[qa + 3 : qa + 7]
        return pin.Quaternion(w, x, y, z).normalized().toRotationMatrix()

    def _convert(self, qpos: Array, qvel: Array | None, qacc: Array | None):
        # Reorder into [free joint, joints in robot order], then convert in one place.
        qpos = np.asarray(qpos, dtype=float)
        if self._free_mj is None:
            return (
                qpos[self._q_idx],
                None if qvel is None else np.asarray(qvel)[self._v_idx],
                None if qacc is None else np.asarray(qacc)[self._v_idx],
            )
        qa, va = self._free_mj
        qp = np.concatenate([qpos[qa : qa + 7], qpos[self._q_idx]])
        qv = (
            np.zeros(6 + len(self._v_idx))
            if qvel is None
            else np.concatenate(
                [
                    np.asarray(qvel, dtype=float)[va : va + 6],
                    np.asarray(qvel, dtype=float)[self._v_idx],
                ]
            )
        )
        qc = (
            None
            if qacc is None
            else np.concatenate(
                [
                    np.asarray(qacc, dtype=float)[va : va + 6],
                    np.asarray(qacc, dtype=float)[self._v_idx],
                ]
            )
        )
        q, v, a = free_base_to_pinocchio(qp, qv, qc)
        return q[0], v[0], None if a is None else a[0]

    def q(self, qpos: Array) -> Array:
        """Pinocchio ``q`` from MuJoCo ``qpos``."""
        return self._convert(qpos, None, None)[0]

    def v(self, qpos: Array, qvel: Array) -> Array:
        """Pinocchio ``v`` (base twist in base axes) from MuJoCo ``qvel``."""
        return self._convert(qpos, qvel, None)[1]

    def a(self, qpos: Array, qvel: Array, qacc: Array) -> Array:
        """Pinocchio ``a`` from MuJoCo ``qacc``: removes the ``omega x v`` term of the base."""
        return self._convert(qpos, qvel, qacc)[2]

    def velocity_map(self, qpos: Array) -> Array:
        """``T`` with ``qvel = T v``, shape (nv_mj, nv); generalized forces map by ``T^T``."""
        T = np.zeros((self.nv_mj, self.robot.nv))
        start = 0
        if self._free_mj is not None:
            _, va = self._free_mj
            T[va : va + 3, 0:3] = self._base_rotation(np.asarray(qpos, dtype=float))
            T[va + 3 : va + 6, 3:6] = np.eye(3)
            start = 6
        T[self._v_idx, np.arange(start, self.robot.nv)] = 1.0
        return T


def mujoco_mass_matrix(mj_model: Any, mj_data: Any) -> Array:
    """MuJoCo's dense mass matrix after ``mj_forward``, shape (nv_mj, nv_mj).

    ``mj_fullM`` changed its signature in MuJoCo 3.3 (data instead of ``qM``).
    """
    mujoco = import_mujoco()
    M = np.zeros((mj_model.nv, mj_model.nv))
    if hasattr(mj_data, "qM"):
        mujoco.mj_fullM(mj_model, M, mj_data.qM)
    else:
        mujoco.mj_fullM(mj_model, mj_data, M)
    return M
