"""MuJoCo on the same URDF, and MuJoCo's state conventions converted to Pinocchio's.

This is the one place where MuJoCo's conventions are known (the ``mujoco`` extra):

* free-joint ``qpos = [x, y, z, qw, qx, qy, qz]`` (scalar first) where Pinocchio has
  ``[x, y, z, qx, qy, qz, qw]``;
* free-joint ``qvel = [linear velocity in world axes, angular velocity in body axes]`` where
  Pinocchio has both in body axes (LOCAL);
* hence ``qacc``'s linear part is ``R (dv_local + omega x v_local)``: the ``omega x v`` term
  must be removed when converting accelerations;
* joint order is MuJoCo's tree order: joints are mapped by name, never by position.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from .errors import MissingDependencyError, ModelError
from .robot import Array, Robot

__all__ = ["import_mujoco", "mujoco_model_from_urdf", "mujoco_mass_matrix", "MujocoStateMap"]


def import_mujoco() -> Any:
    """Import :mod:`mujoco` or raise :class:`MissingDependencyError` with the install line."""
    try:
        import mujoco
    except ImportError:
        raise MissingDependencyError("MuJoCo is not installed; pip install 'wholebody[mujoco]'") from None
    return mujoco


def mujoco_model_from_urdf(
    urdf: str | Path, *, floating_base: bool = True, floor: bool = False, timestep: float = 0.002
) -> Any:
    """Compile a MuJoCo model from a URDF file (visual meshes dropped).

    Parameters
    ----------
    floating_base : bool
        Give the root link a free joint, as :meth:`Robot.from_urdf` does.
    floor : bool
        Add a ground plane at z = 0 (for simulations with contacts).

    Returns
    -------
    mujoco.MjModel
    """
    mujoco = import_mujoco()
    text = Path(urdf).read_text()
    # Meshes are not needed for dynamics and their paths rarely resolve: keep primitives.
    text = re.sub(r"<visual>.*?</visual>", "", text, flags=re.S)
    text = re.sub(r"<collision>(?:(?!</collision>).)*<mesh.*?</collision>", "", text, flags=re.S)
    spec = mujoco.MjSpec.from_string(text)
    spec.compiler.balanceinertia = False
    spec.compiler.discardvisual = True
    spec.option.timestep = timestep
    root = spec.worldbody.first_body()
    if floating_base:
        root.add_freejoint()
    if floor:
        spec.worldbody.add_geom(
            type=mujoco.mjtGeom.mjGEOM_PLANE, size=[10, 10, 0.1], pos=[0, 0, 0]
        )
    try:
        return spec.compile()
    except Exception as exc:
        raise ModelError(f"MuJoCo cannot compile {urdf}: {exc}") from exc


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
        self._free_mj = None
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
                raise ModelError(f"joint {name!r} has {pj.nq} coordinates in Pinocchio, 1 in MuJoCo")
            q_idx[pj.idx_q] = qa
            v_idx[pj.idx_v] = va
        if robot.has_floating_base and self._free_mj is None:
            raise ModelError("the robot has a floating base but the MuJoCo model no free joint")
        start_q, start_v = (7, 6) if robot.has_floating_base else (0, 0)
        missing = [robot.model.names[j] for j in range(1, m.njoints)
                   if m.joints[j].nq == 1 and q_idx[m.joints[j].idx_q] < 0]
        if missing:
            raise ModelError(f"joints {missing} are not in the MuJoCo model")
        self._q_idx = q_idx[start_q:]
        self._v_idx = v_idx[start_v:]

    def _base_rotation(self, qpos: Array) -> Array:
        qa, _ = self._free_mj
        w, x, y, z = qpos[qa + 3 : qa + 7]
        return pin.Quaternion(w, x, y, z).normalized().toRotationMatrix()

    def q(self, qpos: Array) -> Array:
        """Pinocchio ``q`` from MuJoCo ``qpos``."""
        qpos = np.asarray(qpos, dtype=float)
        parts = []
        if self._free_mj is not None:
            qa, _ = self._free_mj
            w, x, y, z = qpos[qa + 3 : qa + 7]
            parts.append(np.r_[qpos[qa : qa + 3], x, y, z, w])
        parts.append(qpos[self._q_idx])
        return np.concatenate(parts)

    def v(self, qpos: Array, qvel: Array) -> Array:
        """Pinocchio ``v`` (base twist in base axes) from MuJoCo ``qvel``."""
        qvel = np.asarray(qvel, dtype=float)
        parts = []
        if self._free_mj is not None:
            _, va = self._free_mj
            R = self._base_rotation(np.asarray(qpos, dtype=float))
            parts.append(np.r_[R.T @ qvel[va : va + 3], qvel[va + 3 : va + 6]])
        parts.append(qvel[self._v_idx])
        return np.concatenate(parts)

    def a(self, qpos: Array, qvel: Array, qacc: Array) -> Array:
        """Pinocchio ``a`` from MuJoCo ``qacc``: removes the ``omega x v`` term of the base."""
        qacc = np.asarray(qacc, dtype=float)
        parts = []
        if self._free_mj is not None:
            _, va = self._free_mj
            R = self._base_rotation(np.asarray(qpos, dtype=float))
            v_local = R.T @ np.asarray(qvel, dtype=float)[va : va + 3]
            omega = np.asarray(qvel, dtype=float)[va + 3 : va + 6]
            parts.append(np.r_[R.T @ qacc[va : va + 3] - np.cross(omega, v_local), qacc[va + 3 : va + 6]])
        parts.append(qacc[self._v_idx])
        return np.concatenate(parts)

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
