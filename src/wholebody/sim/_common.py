"""What every simulator recorder shares: links mapped to declared contacts by name, contact
forces summed per contact, the free base converted once to Pinocchio's convention, and the
log assembled as a :class:`~wholebody.Trajectory`.

Each engine's module (:mod:`wholebody.sim.pybullet`, :mod:`wholebody.sim.drake`, ...) reads its
engine's quantities and hands them here in one form:

* base: origin position (world), orientation as a rotation matrix, linear velocity of the
  origin and angular velocity, both in world axes (and their time derivatives);
* joints: positions, velocities, accelerations in the robot's joint order (the engine
  module maps them by name);
* contact forces: per contact point, the force on the robot (world axes [N]), the point
  where it acts (world [m]) and the engine link (by its index in the list of link names the
  map was built from).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..contacts import Contact
from ..errors import InvalidArgumentError, LogFormatError, ModelError, WholebodyWarning
from ..robot import Array, Robot
from ..spatial import rotation_from_quat_xyzw
from ..trajectory import Trajectory

__all__ = [
    "ContactMap",
    "body_inertias",
    "inertia_mismatches",
    "ContactSums",
    "SampleLog",
    "base_to_pinocchio",
    "base_acceleration_to_pinocchio",
    "quat_xyzw_to_matrix",
    "precision_metadata",
    "UNDECLARED_FORCE_TOLERANCE",
]

#: Force [N] on robot links without a declared contact above which the log is flagged.
UNDECLARED_FORCE_TOLERANCE = 1e-9


def quat_xyzw_to_matrix(quat: ArrayLike) -> Array:
    """Rotation matrix (3, 3) of a quaternion ``[x, y, z, w]`` (normalised first)."""
    return rotation_from_quat_xyzw(quat)


def _matrix_to_quat_xyzw(R: Array) -> Array:
    import pinocchio as pin

    return np.asarray(pin.Quaternion(np.asarray(R, dtype=float)).normalized().coeffs(), float)


def base_to_pinocchio(
    position: ArrayLike,
    rotation: ArrayLike,
    linear_velocity_world: ArrayLike,
    angular_velocity_world: ArrayLike,
) -> tuple[Array, Array]:
    """The free base in Pinocchio's convention from world-axes quantities.

    Parameters
    ----------
    position : (3,)
        Base link origin, world [m] (the link frame, not its centre of mass).
    rotation : (3, 3)
        Base orientation (base axes to world axes).
    linear_velocity_world : (3,)
        Velocity of the base origin, world axes [m/s].
    angular_velocity_world : (3,)
        World axes [rad/s].

    Returns
    -------
    q_base : (7,)
        ``[x, y, z, qx, qy, qz, qw]``.
    v_base : (6,)
        ``[R^T v, R^T omega]``: linear then angular, base axes (Pinocchio's LOCAL).
    """
    R = np.asarray(rotation, dtype=float)
    q = np.r_[np.asarray(position, dtype=float), _matrix_to_quat_xyzw(R)]
    v = np.r_[
        R.T @ np.asarray(linear_velocity_world, float),
        R.T @ np.asarray(angular_velocity_world, float),
    ]
    return q, v


def base_acceleration_to_pinocchio(
    rotation: ArrayLike,
    v_base: ArrayLike,
    linear_acceleration_world: ArrayLike,
    angular_acceleration_world: ArrayLike,
) -> Array:
    """The base part of Pinocchio's ``a`` from world-axes derivatives.

    ``a_lin = R^T dv_W/dt - omega_b x v_b`` (the derivative of a base-axes vector) and
    ``a_ang = R^T domega_W/dt`` (``omega x omega = 0``).

    Parameters
    ----------
    rotation : (3, 3)
    v_base : (6,)
        The base velocity from :func:`base_to_pinocchio`.
    linear_acceleration_world, angular_acceleration_world : (3,)
        Time derivatives of the world-axes origin velocity [m/s^2] and angular velocity
        [rad/s^2].

    Returns
    -------
    (6,)
    """
    R = np.asarray(rotation, dtype=float)
    vb = np.asarray(v_base, dtype=float)
    lin = R.T @ np.asarray(linear_acceleration_world, float) - np.cross(vb[3:], vb[:3])
    return np.r_[lin, R.T @ np.asarray(angular_acceleration_world, float)]


def base_acceleration_between_states(
    rotation_before: ArrayLike,
    rotation_after: ArrayLike,
    linear_velocity_world: tuple[ArrayLike, ArrayLike],
    angular_velocity_world: tuple[ArrayLike, ArrayLike],
    v_base: ArrayLike,
    dt: float,
) -> Array:
    """The base part of Pinocchio's ``a`` over one step of an engine whose free joint
    integrates the origin's world-axes velocity and the base-axes angular velocity (MuJoCo's
    free joint; Genesis and Newton likewise): ``a_lin = R0^T (v1 - v0) / dt - omega_b x v_b``
    (as :func:`base_acceleration_to_pinocchio`) and ``a_ang = (R1^T w1 - R0^T w0) / dt``, the
    step of the base-axes angular velocity itself.

    Parameters
    ----------
    rotation_before, rotation_after : (3, 3)
        Base orientations ``R0``, ``R1`` (base axes to world axes) before and after the step.
    linear_velocity_world, angular_velocity_world : pair of (3,)
        ``(before, after)``, world axes [m/s, rad/s].
    v_base : (6,)
        The base velocity before the step, from :func:`base_to_pinocchio`.
    dt : float
        The step [s].

    Returns
    -------
    (6,)
        Linear then angular, base axes [m/s^2, rad/s^2].
    """
    R0, R1 = np.asarray(rotation_before, dtype=float), np.asarray(rotation_after, dtype=float)
    v0, v1 = (np.asarray(x, dtype=float) for x in linear_velocity_world)
    w0, w1 = (np.asarray(x, dtype=float) for x in angular_velocity_world)
    vb = np.asarray(v_base, dtype=float)
    a_lin = R0.T @ (v1 - v0) / dt - np.cross(vb[3:], vb[:3])
    alpha = (R1.T @ w1 - R0.T @ w0) / dt
    return np.r_[a_lin, alpha]


def precision_metadata(dtype: Any) -> dict[str, Any]:
    """``{"dtype": "float32", "float_epsilon": 1.19e-07}`` for the engine's number type.

    The checks read ``metadata["dtype"]`` to take their bounds from the engine's precision
    (a float32 engine balances to ~1e-4 N, not to round-off).
    """
    dt = np.dtype(dtype)
    return {"dtype": dt.name, "float_epsilon": float(np.finfo(dt).eps)}


def body_inertias(robot: Robot, link_names: Sequence[str], inertias: Sequence[Any]) -> dict:
    """An engine's link inertias summed per robot body (Pinocchio joint), in the joint frame.

    ``inertias[i]`` is link ``link_names[i]``'s ``pinocchio.Inertia`` in its own link frame.
    """
    import pinocchio as pin

    m = robot.model
    sums: dict[int, Any] = {}
    for name, inertia in zip(link_names, inertias):
        f = m.frames[m.getFrameId(name)]
        j = int(f.parentJoint)
        sums[j] = sums.get(j, pin.Inertia.Zero()) + f.placement.act(inertia)
    return sums


def inertia_mismatches(
    robot: Robot,
    link_names: Sequence[str],
    inertias: Sequence[Any],
    engine: str,
    tolerance: float = 1e-6,
) -> dict[int, str]:
    """The robot bodies whose mass, centre of mass or inertia differ in the engine.

    Links welded together are summed on both sides (Pinocchio merges them into their
    joint's body), so an engine that keeps welded links apart compares equal.

    Returns
    -------
    dict of int to str
        Pinocchio joint index -> a message naming the engine's links and both masses.
    """
    import pinocchio as pin

    m = robot.model
    sums = body_inertias(robot, link_names, inertias)
    members: dict[int, list[str]] = {}
    for name in link_names:
        members.setdefault(int(m.frames[m.getFrameId(name)].parentJoint), []).append(name)
    bad = {}
    for j in range(1, m.njoints):
        expected, got = m.inertias[j], sums.get(j, pin.Inertia.Zero())
        E, G = np.asarray(expected.matrix()), np.asarray(got.matrix())
        if np.abs(G - E).max() > tolerance * max(np.abs(E).max(), 1e-9):
            bad[j] = (
                f"links {members.get(j, [])} ({got.mass:.6g} kg in {engine}, "
                f"{expected.mass:.6g} kg in the robot)"
            )
    return bad


class ContactMap:
    """Engine links, by name, mapped to the declared contacts of a robot.

    A link's contact forces belong to the declared contact on the same moving body of the
    robot: the link is the Pinocchio frame of its name, its body that frame's parent joint,
    and a contact belongs to the body of its frame's parent joint. So links welded to a
    foot (a sole link, merged or not by the engine) count for the foot's contact. Two
    declared contacts on one body cannot be told apart from the engine's contacts and are
    refused when a link of that body can touch.

    Parameters
    ----------
    robot : Robot
    contacts : sequence of Contact
    link_names : sequence of str
        The engine's names of the robot's links, in the engine's own index order.
    engine : str
        For messages.

    Attributes
    ----------
    slots : ndarray of int, shape (len(link_names),)
        Contact index of each link, -1 for a link with no declared contact.
    """

    def __init__(
        self, robot: Robot, contacts: Sequence[Contact], link_names: Sequence[str], engine: str
    ):
        self.robot = robot
        self.contacts = tuple(contacts)
        self.link_names = tuple(link_names)
        names = [c.name for c in self.contacts]
        if len(set(names)) != len(names):
            raise InvalidArgumentError(f"contact names must be unique, got {names}")
        model = robot.model
        owner: dict[int, list[int]] = {}
        for k, c in enumerate(self.contacts):
            owner.setdefault(int(model.frames[robot.frame_id(c.frame)].parentJoint), []).append(k)
        unknown = [n for n in self.link_names if not model.existFrame(n)]
        if unknown:
            raise ModelError(
                f"{engine}: links {unknown} are not frames of robot {robot.name!r}; load the "
                "robot and the simulation from the same file"
            )
        slots = np.full(len(self.link_names), -1, dtype=int)
        for i, n in enumerate(self.link_names):
            joint = int(model.frames[model.getFrameId(n)].parentJoint)
            ks = owner.get(joint, [])
            if len(ks) > 1:
                raise InvalidArgumentError(
                    f"{engine}: contacts {[names[k] for k in ks]} are on the same body of the "
                    f"robot (link {n!r}): their forces cannot be told apart from the engine's "
                    "contacts; declare one contact per body"
                )
            if ks:
                slots[i] = ks[0]
        declared_links = {int(s) for s in slots if s >= 0}
        missing = [names[k] for k in range(len(names)) if k not in declared_links]
        if missing:
            raise ModelError(f"{engine}: contacts {missing} are on no link of the simulated robot")
        self.slots = slots


class ContactSums:
    """Contact forces of one sample summed per declared contact, about the world origin.

    ``force`` (k, 3) [N] and ``moment`` (k, 3) [N m] about the world origin, world axes; the
    moments are moved to each contact frame's origin once for the whole log, from the logged
    ``q`` (:meth:`Trajectory.at_frame_origins`). Forces on links with no declared contact are
    measured in ``undeclared`` (largest norm per link).
    """

    def __init__(self, cmap: ContactMap, undeclared: Array):
        k = len(cmap.contacts)
        self._slots = cmap.slots
        self.force = np.zeros((k, 3))
        self.moment = np.zeros((k, 3))
        self._undeclared = undeclared

    def add(self, link: int, force: ArrayLike, point: ArrayLike, moment: ArrayLike = (0, 0, 0)):
        """Add a force on the robot's link ``link`` (world axes [N]) acting at ``point``
        (world [m]), plus a pure moment (world axes [N m], a torsional friction)."""
        f = np.asarray(force, dtype=float)
        k = self._slots[link]
        if k < 0:
            self._undeclared[link] = max(self._undeclared[link], float(np.linalg.norm(f)))
            return
        self.force[k] += f
        self.moment[k] += np.cross(np.asarray(point, dtype=float), f) + np.asarray(moment, float)

    def wrenches(self) -> Array:
        """(k, 6) ``(f, tau_O)``: about the world origin, world axes."""
        return np.c_[self.force, self.moment]


class SampleLog:
    """Samples in Pinocchio's convention, assembled into a Trajectory at the end.

    Parameters
    ----------
    robot : Robot
    cmap : ContactMap
    engine : str
        Name (and version) of the engine, for messages and ``metadata["simulator"]``.
    """

    def __init__(self, robot: Robot, cmap: ContactMap, engine: str):
        self.robot = robot
        self.cmap = cmap
        self.engine = engine
        self.undeclared = np.zeros(len(cmap.link_names))
        self._rows: dict[str, list[Array]] = {k: [] for k in ("t", "q", "v", "a", "w", "tau")}

    def __len__(self) -> int:
        return len(self._rows["t"])

    def sums(self) -> ContactSums:
        """An empty per-contact sum for the next sample."""
        return ContactSums(self.cmap, self.undeclared)

    def append(
        self,
        t: float,
        q: Array,
        v: Array,
        a: Array,
        sums: ContactSums,
        tau: Array | None = None,
    ) -> None:
        """Add one sample: ``q``, ``v``, ``a`` in Pinocchio's convention, joints in the robot's
        order; the contact sums of the same step."""
        rows = self._rows
        rows["t"].append(np.array(t, dtype=float))
        rows["q"].append(np.asarray(q, dtype=float))
        rows["v"].append(np.asarray(v, dtype=float))
        rows["a"].append(np.asarray(a, dtype=float))
        rows["w"].append(sums.wrenches())
        if tau is not None:
            rows["tau"].append(np.asarray(tau, dtype=float))

    @property
    def undeclared_contact_force(self) -> dict[str, float]:
        """Largest contact force [N] seen so far on each robot link with no declared contact."""
        names = self.cmap.link_names
        return {
            names[i]: float(self.undeclared[i])
            for i in np.flatnonzero(self.undeclared > UNDECLARED_FORCE_TOLERANCE)
        }

    def trajectory(self, metadata: Mapping[str, Any], stacklevel: int = 3) -> Trajectory:
        """The samples as a Trajectory, wrenches about each contact frame's origin.

        Raises
        ------
        LogFormatError
            Nothing was recorded, or the times are not increasing.
        """
        rows = self._rows
        if not rows["t"]:
            raise LogFormatError(
                f"{self.engine} recorder: no sample recorded (call record(...) after each step)"
            )
        undeclared = self.undeclared_contact_force
        if undeclared:
            warnings.warn(
                f"{self.engine}: contacts on robot links without a declared contact (largest "
                f"force per link, N): {undeclared}; the log's contact wrenches miss them",
                WholebodyWarning,
                stacklevel=stacklevel,
            )
        contacts = self.cmap.contacts
        W = np.array(rows["w"])
        N = W.shape[0]
        tau = np.array(rows["tau"]) if len(rows["tau"]) == N else None
        traj = Trajectory.from_arrays(
            np.array(rows["t"]),
            np.array(rows["q"]),
            np.array(rows["v"]),
            a=np.array(rows["a"]),
            tau=tau,
            joint_names=self.robot.joint_names,
            contact_wrenches={c.name: W[:, k] for k, c in enumerate(contacts)},
            contact_points_world={c.name: np.zeros((N, 3)) for c in contacts},
            metadata={"undeclared_contact_force_N": undeclared, **dict(metadata)},
        )
        # Moments about the world origin -> about each contact frame's origin, once.
        return traj.at_frame_origins(self.robot, contacts)
