"""Log a running Genesis simulation into a :class:`~wholebody.Trajectory`, correctly:
:class:`GenesisRecorder` (genesis-world 1.4, rigid solver). What it handles and why (read
after the step, the free base's velocity coordinates, merged links and masses, precision,
armature) is in ``docs/simulators.md`` (Genesis).
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from ..contacts import Contact
from ..errors import InvalidArgumentError, ModelError, ModelWarning, StateError, require
from ..robot import Array, Robot
from ..spatial import rotation_from_quat_xyzw
from ._common import (
    Recorder,
    base_acceleration_between_states,
    base_to_pinocchio,
    joints_in_robot_order,
    precision_metadata,
)

__all__ = ["GenesisRecorder", "import_genesis"]


def import_genesis() -> Any:
    """Import :mod:`genesis` or raise :class:`MissingDependencyError` with the install line."""
    return require("genesis", "genesis", "Genesis logs")


def _np(x: Any) -> Array:
    """A torch tensor (or array) as a float64 NumPy array."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=float)


def _wxyz_to_matrix(q: Any) -> Array:
    w, x, y, z = _np(q)
    return rotation_from_quat_xyzw([x, y, z, w])


def _links_without_inertial(robot: Robot) -> list[str]:
    """The robot's URDF links without ``<inertial>`` (empty when the source is not a URDF)."""
    source = getattr(robot, "source", None)
    if not source or not str(source).lower().endswith(".urdf") or not Path(source).is_file():
        return []
    try:
        root = ET.parse(source).getroot()
    except ET.ParseError:
        return []
    return [str(link.get("name")) for link in root.findall("link") if link.find("inertial") is None]


class GenesisRecorder(Recorder):
    """Records a Genesis simulation of a robot standing on a plane, then gives a Trajectory.

    Parameters
    ----------
    robot : Robot
        The robot the log is for, loaded from the same URDF as the Genesis entity.
    entity : genesis RigidEntity
        The robot (``scene.add_entity(gs.morphs.URDF(file=...))``) in a built scene; its root
        joint is free.
    ground : genesis RigidEntity
        The entity the robot touches (``gs.morphs.Plane()``): forces from any other entity
        are not read.
    contacts : sequence of Contact
        Declared contacts: the forces on each Genesis link go to the contact on the same robot
        body (see :class:`~wholebody.sim.Recorder`).
    masses : {"raise", "repair"}
        What to do when Genesis' link masses or inertias differ from the robot's: raise
        :class:`ModelError` naming the links (default), or warn (ModelWarning) and give
        :attr:`robot` Genesis' values on those bodies (:attr:`repairs` lists them).

    Attributes
    ----------
    robot : Robot
        The robot to check the log with: the one given, or a copy with Genesis' inertias
        (``masses="repair"``).
    timestep : float
        The scene's ``dt`` [s].
    dtype : numpy.dtype
        Genesis' float type (``gs.init(precision=...)``).

    Examples
    --------
    >>> rec = GenesisRecorder(robot, entity, plane, contacts)   # doctest: +SKIP
    >>> for _ in range(1000):                                   # doctest: +SKIP
    ...     entity.control_dofs_force(tau, dofs)
    ...     scene.step()
    ...     rec.record()                                        # after the step
    >>> traj = rec.trajectory()                                 # doctest: +SKIP
    """

    engine = "Genesis"

    def __init__(
        self,
        robot: Robot,
        entity: Any,
        ground: Any,
        contacts: Sequence[Contact],
        *,
        masses: str = "raise",
    ):
        gs = import_genesis()
        self._check_attach(robot, masses, ("raise", "repair"))
        if not getattr(entity, "is_built", True):
            raise ModelError("the Genesis scene is not built: call scene.build() first")
        if entity is ground or getattr(entity, "idx", None) == getattr(ground, "idx", -1):
            raise InvalidArgumentError("entity and ground are the same Genesis entity")
        if np.ndim(_np(entity.get_qpos())) != 1:
            raise ModelError(
                "the Genesis scene is batched (scene.build(n_envs=...)): GenesisRecorder "
                "records a scene built without n_envs"
            )
        self.robot, self.entity, self.ground = robot, entity, ground
        joints = list(entity.joints)
        free = [j for j in joints if j.type == gs.JOINT_TYPE.FREE]
        if len(free) != 1 or entity.base_link.name != entity.links[0].name:
            raise ModelError(
                f"the Genesis entity has {len(free)} free joints; one robot with a free base "
                "expected (load the URDF with fixed=False)"
            )
        link_names = [str(link.name) for link in entity.links]
        m = robot.model
        if (
            not m.existFrame(link_names[0])
            or int(m.frames[m.getFrameId(link_names[0])].parentJoint) != 1
        ):
            raise ModelError(f"Genesis' base link {link_names[0]!r} is not the robot's root link")
        moving = (gs.JOINT_TYPE.REVOLUTE, gs.JOINT_TYPE.PRISMATIC)
        ordered = joints_in_robot_order(
            robot, {str(j.name): j for j in joints}, lambda j: j.type in moving, self.engine
        )
        self._dofs = np.array([int(j.dof_start) - int(entity.dof_start) for j in ordered], int)
        self._qs = np.array([int(j.q_start) - int(entity.q_start) for j in ordered], int)
        self._link_start = int(entity.link_start)
        self._map_contacts(robot, contacts, link_names)
        self.timestep = float(entity.sim.dt)
        if not (np.isfinite(self.timestep) and self.timestep > 0):
            raise ModelError(f"cannot read the Genesis scene's dt (got {self.timestep!r})")
        self.dtype = np.dtype(str(entity.get_qpos().dtype).replace("torch.", ""))
        # The base read by get_pos/get_quat is the URDF link frame; refuse a solver frame
        # elsewhere (align=True, morph offsets): its velocities would be of another point.
        qpos = _np(entity.get_qpos())
        if not (
            np.allclose(qpos[:3], _np(entity.get_pos()), rtol=0, atol=1e-9)
            and np.allclose(np.abs(qpos[3:7] @ _np(entity.get_quat())), 1.0, rtol=0, atol=1e-9)
        ):
            raise ModelError(
                "Genesis' solver frame of the base differs from the URDF link frame (the morph "
                "was loaded with align=True or an offset): load it without them"
            )
        self.robot = self._matched_masses(
            robot,
            self._link_inertias(),
            masses,
            ". Load the robot and the entity from the same file; Genesis gives a link without "
            "<inertial> a tiny mass: give it an <inertial>, or attach with masses='repair' to "
            "check the log with Genesis' values",
        )
        missing = _links_without_inertial(robot)
        if missing:
            warnings.warn(
                f"links {missing} have no <inertial>: Genesis gives each a tiny mass, the robot "
                "none (a difference below the mass check's tolerance passes it); give them an "
                "<inertial> so that model and simulation agree exactly",
                ModelWarning,
                stacklevel=2,
            )
        self.armature = _np(entity.get_dofs_armature())[self._dofs]
        self._prev = self._state()

    # --- attach-time checks ----------------------------------------------------------

    def _link_inertias(self) -> list[Any]:
        """Each Genesis link's spatial inertia in its own (URDF link) frame."""
        e = self.entity
        mass = _np(e.get_links_mass())
        com = _np(e.get_links_COM())
        inertia = _np(e.get_links_inertia())
        out = []
        for i, link in enumerate(e.links):
            quat = getattr(getattr(link, "desc", None), "inertial_quat", None)
            R = _wxyz_to_matrix(quat) if quat is not None else np.eye(3)
            out.append(pin.Inertia(float(mass[i]), com[i], R @ inertia[i] @ R.T))
        return out

    # --- reading -------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        """The current state: base origin, world-axes velocities, joints in the robot's order."""
        e = self.entity
        R = _wxyz_to_matrix(e.get_quat())
        qpos, dofs = _np(e.get_qpos()), _np(e.get_dofs_velocity())
        return {
            "p": _np(e.get_pos()),
            "R": R,
            "v": _np(e.get_vel()),  # the link origin's velocity, world axes
            "w": _np(e.get_ang()),  # world axes
            "qj": qpos[self._qs],
            "vj": dofs[self._dofs],
        }

    def record(self, time: float | None = None) -> None:
        """Log the step just taken: call right after each ``scene.step()``.

        The sample is the state before the step (``q_n``, ``v_n``), ``a_n = (v_{n+1} -
        v_n) / dt`` and the contact forces of the step, at time ``time`` (default: the number
        of steps recorded times ``dt`` [s]).
        """
        s0, s1, dt = self._prev, self._state(), self.timestep
        if np.array_equal(s0["qj"], s1["qj"]) and np.array_equal(s0["p"], s1["p"]):
            raise StateError(
                "GenesisRecorder.record: the state did not change since the last sample; "
                "call record() once after each scene.step()"
            )
        q_base, v_base = base_to_pinocchio(s0["p"], s0["R"], s0["v"], s0["w"])
        # The engine's integration coordinates: the origin's velocity in world axes, the
        # angular velocity in base axes, each advanced by dt * acc.
        base = base_acceleration_between_states(
            s0["R"], s1["R"], (s0["v"], s1["v"]), (s0["w"], s1["w"]), v_base, dt
        )
        a = np.r_[base, (s1["vj"] - s0["vj"]) / dt]
        c = self.entity.get_contacts(with_entity=self.ground)
        link_a, link_b = _np(c["link_a"]).astype(int), _np(c["link_b"]).astype(int)
        force_a, force_b = _np(c["force_a"]), _np(c["force_b"])
        position = _np(c["position"])
        n_links = len(self.link_names)
        sums = self._sums()
        for i in range(len(link_a)):
            la, lb = link_a[i] - self._link_start, link_b[i] - self._link_start
            a_is, b_is = 0 <= la < n_links, 0 <= lb < n_links
            if a_is == b_is:
                continue  # between two robot links (internal), or none
            if a_is:
                sums.add(int(la), force_a[i], position[i])
            else:
                sums.add(int(lb), force_b[i], position[i])
        t = len(self) * dt if time is None else float(time)
        self._append(t, np.r_[q_base, s0["qj"]], np.r_[v_base, s0["vj"]], a, sums)
        self._prev = s1

    def _metadata(self) -> dict[str, Any]:
        import genesis

        return {
            "simulator": f"Genesis {getattr(genesis, '__version__', '')}",
            "timestep": self.timestep,
            "accelerations": "(v[n+1] - v[n]) / dt of the engine's step",
            "mass_repairs": list(self.repairs),
            "armature": {n: float(x) for n, x in zip(self.robot.joint_names, self.armature)},
            **precision_metadata(self.dtype),
        }
