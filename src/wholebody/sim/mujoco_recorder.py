"""Log a running MuJoCo simulation into a :class:`~wholebody.Trajectory`, correctly.

What a correct log needs, and what :class:`MujocoRecorder` does for it at each
:meth:`~MujocoRecorder.record`:

* one consistent state: ``mj_forward`` is run before reading, so ``qacc`` and the contact
  forces belong to the ``qpos``/``qvel`` logged (after ``mj_step`` they belong to the state
  *before* the step);
* contact wrenches per declared contact, on the robot, in world axes at the contact frame's
  origin, from ``mj_contactForce`` (the force of geom1 on geom2 in the contact's frame).
  MuJoCo merges bodies welded to their parent, so a sole's contacts are on the merged body
  (the ankle link) while the wrench point is the sole frame: the point is read from the
  contact's site (see :func:`~wholebody.sim.mujoco.mujoco_spec_for_robot`), the body is
  the site's body. Contacts between two robot bodies are internal and skipped; contacts of
  robot bodies that carry no declared contact are measured and reported;
* joints mapped by name, the free joint converted (quaternion order, base velocity axes,
  the ``omega x v`` term of the acceleration) by
  :func:`~wholebody.sim.mujoco.free_base_to_pinocchio`;
* optional joint torques: every generalized force on the joint's degree of freedom except
  contacts (actuators, applied, passive, joint limits and friction);
* optional pushes: ``xfrc_applied`` of named bodies, as world-axes wrenches at the body
  frame's origin (MuJoCo applies them at the body's centre of mass).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..contacts import Contact
from ..errors import InvalidArgumentError, ModelError
from ..robot.core import Array, Robot
from ..trajectory import Trajectory
from ._common import Recorder
from .mujoco import (
    MujocoBuild,
    MujocoStateMap,
    contact_body_id,
    contact_site_id,
    import_mujoco,
    trajectory_from_mujoco,
)

__all__ = ["MujocoRecorder"]


class MujocoRecorder(Recorder):
    """Records samples of a MuJoCo simulation of a robot, then gives them as a Trajectory.

    Parameters
    ----------
    robot : Robot
        The robot the log is for (joint names, frames). Use :attr:`MujocoBuild.robot` when the
        model came from :func:`~wholebody.sim.mujoco.mujoco_spec_for_robot`.
    mj_model : mujoco.MjModel
        The compiled model; one free joint (the robot's root) and hinge/slide joints named as
        the robot's.
    contacts : sequence of Contact
        Declared contacts. Each is found in the model as the site of ``contact_sites``, else
        the site ``wb_contact_<name>``, else a site or body named as the contact's frame.
    contact_sites : mapping of str to str, optional
        Contact name -> site name (:attr:`MujocoBuild.contact_sites`).
    push_bodies : sequence of str
        Bodies whose ``xfrc_applied`` is logged as external wrenches (names must also be
        robot frames).
    torques : bool
        Log joint torques (see the module docstring).
    forward : bool
        Run ``mj_forward`` before reading each sample (default; keep it unless you have just
        run it yourself on this state).

    Examples
    --------
    >>> build = mujoco_spec_for_robot(robot, contacts)            # doctest: +SKIP
    >>> model = build.compile(); data = mujoco.MjData(model)     # doctest: +SKIP
    >>> rec = MujocoRecorder.from_build(build, model)             # doctest: +SKIP
    >>> for _ in range(1000):                                     # doctest: +SKIP
    ...     data.ctrl[:] = controller(data)
    ...     rec.record(data)
    ...     mujoco.mj_step(model, data)
    >>> traj = rec.trajectory()                                   # doctest: +SKIP
    """

    engine = "MuJoCo"
    parts = "bodies"

    def __init__(
        self,
        robot: Robot,
        mj_model: Any,
        contacts: Sequence[Contact],
        *,
        contact_sites: Mapping[str, str] | None = None,
        push_bodies: Sequence[str] = (),
        torques: bool = True,
        forward: bool = True,
    ):
        mujoco = import_mujoco()
        self._mujoco = mujoco
        self.robot = robot
        self.model = mj_model
        self.contacts = tuple(contacts)
        names = [c.name for c in self.contacts]
        if len(set(names)) != len(names):
            raise InvalidArgumentError(f"contact names must be unique, got {names}")
        self._map = MujocoStateMap(robot, mj_model)
        if self._map._free_mj is None:
            raise ModelError(
                "MujocoRecorder needs a floating-base robot (a free joint in the model)"
            )
        qa, va = self._map._free_mj
        self._qcols = np.r_[np.arange(qa, qa + 7), self._map._q_idx]
        self._vcols = np.r_[np.arange(va, va + 6), self._map._v_idx]
        free = int(np.flatnonzero(mj_model.jnt_type == mujoco.mjtJoint.mjJNT_FREE)[0])
        root = int(mj_model.body_rootid[mj_model.jnt_bodyid[free]])
        self._robot_body: np.ndarray = np.asarray(mj_model.body_rootid) == root
        self._sites = []
        self._bodies = []
        for c in self.contacts:
            body = contact_body_id(mj_model, c, contact_sites)
            site = contact_site_id(mj_model, c, contact_sites)
            self._bodies.append(body)
            self._sites.append(site)
        self._site_arr = np.array(self._sites, dtype=int)
        self._body_arr = np.array(self._bodies, dtype=int)
        self._slot = {b: k for k, b in enumerate(self._bodies)}
        if len(self._slot) != len(self._bodies):
            raise InvalidArgumentError(
                "two declared contacts are on the same MuJoCo body: their wrenches cannot be told "
                "apart from MuJoCo's contacts; declare one contact per body"
            )
        self._push = []
        for b in push_bodies:
            i = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_BODY, b)
            if i < 0:
                raise ModelError(f"push body {b!r} is not a body of the MuJoCo model")
            robot.frame_id(b)  # the wrench is placed at the robot frame of that name
            self._push.append(int(i))
        self.push_bodies = tuple(push_bodies)
        self.torques = torques
        self.forward = forward
        self._start_log(
            [
                mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_BODY, b)
                for b in range(mj_model.nbody)
            ]
        )
        self._local = np.zeros(6)

    @classmethod
    def from_build(cls, build: MujocoBuild, mj_model: Any, **options: Any) -> MujocoRecorder:
        """A recorder for a model compiled from ``build`` (its robot, contacts and sites)."""
        return cls(
            build.robot, mj_model, build.contacts, contact_sites=build.contact_sites, **options
        )

    def contact_wrenches(self, mj_data: Any) -> Array:
        """Wrenches of the declared contacts on the robot now, shape (k, 6).

        World axes, at each contact site's origin (the contact frame), [N, N m]. Reads the
        current ``mj_data`` as it is (run ``mj_forward`` first).
        """
        m, mujoco = self.model, self._mujoco
        out = np.zeros((len(self.contacts), 6))
        # The wrench point: the contact's site, else the origin of the body named as its frame.
        has_site = self._site_arr >= 0
        points = np.where(
            has_site[:, None],
            mj_data.site_xpos[np.maximum(self._site_arr, 0)],
            mj_data.xpos[self._body_arr],
        )
        for i in range(mj_data.ncon):
            con = mj_data.contact[i]
            b1, b2 = int(m.geom_bodyid[con.geom1]), int(m.geom_bodyid[con.geom2])
            r1, r2 = self._robot_body[b1], self._robot_body[b2]
            if r1 == r2:
                continue  # internal to the robot, or not touching it
            mujoco.mj_contactForce(m, mj_data, i, self._local)
            frame = con.frame.reshape(3, 3).T  # columns: normal, tangent 1, tangent 2
            f, tau = frame @ self._local[:3], frame @ self._local[3:]
            body, sign = (b2, 1.0) if r2 else (b1, -1.0)  # mj_contactForce acts on geom2
            k = self._slot.get(body)
            if k is None:
                self._undeclared[body] = max(self._undeclared[body], float(np.linalg.norm(f)))
                continue
            p = points[k]
            out[k, :3] += sign * f
            out[k, 3:] += sign * (tau + np.cross(con.pos - p, f))
        return out

    def _joint_torques(self, d: Any) -> Array:
        m, mujoco = self.model, self._mujoco
        contact_rows = d.efc_type >= int(mujoco.mjtConstraint.mjCNSTR_CONTACT_FRICTIONLESS)
        f = np.where(contact_rows, d.efc_force, 0.0)
        qfrc_contact = np.zeros(m.nv)
        if f.size:
            mujoco.mj_mulJacTVec(m, d, qfrc_contact, f)
        total = d.qfrc_actuator + d.qfrc_applied + d.qfrc_passive + d.qfrc_constraint - qfrc_contact
        return np.asarray(total[self._map._v_idx], dtype=float)

    def record(self, mj_data: Any, time: float | None = None) -> None:
        """Log the current state of ``mj_data`` (after ``mj_forward`` unless ``forward=False``).

        Call it after setting this step's controls (``ctrl``, ``qfrc_applied``,
        ``xfrc_applied``) and before ``mj_step``, or right after ``mj_step``: either way the
        sample is one consistent state. ``time`` defaults to ``mj_data.time`` [s].

        Raises
        ------
        InvalidArgumentError
            ``mj_data`` is not an ``MjData`` of the recorder's model (another model's sizes).
        """
        self._check_data(mj_data)
        if self.forward:
            self._mujoco.mj_forward(self.model, mj_data)
        self._read(mj_data, time)

    def _check_data(self, mj_data: Any) -> None:
        """Refuse what is not an ``MjData`` of :attr:`model` (MuJoCo would abort or read
        another model's arrays)."""
        if not isinstance(mj_data, self._mujoco.MjData):
            raise InvalidArgumentError(
                f"{type(self).__name__}.record: expected the simulation's mujoco.MjData, got "
                f"{type(mj_data).__name__}"
            )
        m = self.model
        sizes = {"nq": (mj_data.qpos, m.nq), "nv": (mj_data.qvel, m.nv)}
        sizes |= {"nbody": (mj_data.xpos, m.nbody), "ngeom": (mj_data.geom_xpos, m.ngeom)}
        for name, (array, n) in sizes.items():
            if len(array) != n:
                raise InvalidArgumentError(
                    f"{type(self).__name__}.record: mj_data belongs to another model ({name} = "
                    f"{len(array)}, the recorder's model has {n}); give the MjData made from "
                    "the model the recorder was built with"
                )

    def _read(self, mj_data: Any, time: float | None = None) -> None:
        """Log ``mj_data`` as it is (its ``mj_forward`` done)."""
        rows = self._rows
        rows["t"].append(np.array(mj_data.time if time is None else time, dtype=float))
        rows["qpos"].append(np.array(mj_data.qpos[self._qcols]))
        rows["qvel"].append(np.array(mj_data.qvel[self._vcols]))
        rows["qacc"].append(np.array(mj_data.qacc[self._vcols]))
        rows["w"].append(self.contact_wrenches(mj_data))
        if self.torques:
            rows["tau"].append(self._joint_torques(mj_data))
        if self._push:
            x = mj_data.xfrc_applied[self._push]
            lever = mj_data.xipos[self._push] - mj_data.xpos[self._push]
            rows["push"].append(np.c_[x[:, :3], x[:, 3:] + np.cross(lever, x[:, :3])])

    def _metadata(self) -> dict[str, Any]:
        opt = self.model.opt
        return {
            "simulator": f"MuJoCo {self._mujoco.__version__}",
            "timestep": float(opt.timestep),
            "solver_tolerance": float(opt.tolerance),
        }

    def _assemble(self, metadata: dict[str, Any]) -> Trajectory:
        """MuJoCo's samples converted (:func:`~wholebody.sim.mujoco.trajectory_from_mujoco`)."""
        rows = self._rows
        W = np.array(rows["w"])
        pushes = None
        if self._push:
            P = np.array(rows["push"])
            pushes = {b: P[:, k] for k, b in enumerate(self.push_bodies)}
        return trajectory_from_mujoco(
            np.array(rows["qpos"]),
            np.array(rows["qvel"]),
            np.array(rows["qacc"]),
            time=np.array(rows["t"]),
            joint_names=self.robot.joint_names,
            contact_wrenches={c.name: W[:, k] for k, c in enumerate(self.contacts)},
            tau=np.array(rows["tau"]) if self.torques else None,
            external_wrenches=pushes,
            metadata=metadata,
        )
