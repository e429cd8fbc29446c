"""What every simulator recorder shares: the :class:`Recorder` base class (the samples, the
contact force met where no contact is declared, the log as a :class:`~wholebody.Trajectory`),
links mapped to declared contacts by name, contact forces summed per contact, masses compared
with the robot's, and the free base converted once to Pinocchio's convention.

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

import dataclasses
import warnings
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..contacts import Contact
from ..errors import (
    InvalidArgumentError,
    LogFormatError,
    ModelError,
    ModelWarning,
    WholebodyWarning,
)
from ..robot import Array, Robot
from ..trajectory import Trajectory

__all__ = [
    "ContactMap",
    "joints_in_robot_order",
    "body_inertias",
    "inertia_mismatches",
    "ContactSums",
    "Recorder",
    "base_to_pinocchio",
    "base_acceleration_to_pinocchio",
    "base_acceleration_between_states",
    "precision_metadata",
    "UNDECLARED_FORCE_TOLERANCE",
    "MASS_TOLERANCE",
    "ROBOT_INERTIAS",
    "robot_for_log",
]

#: The log's metadata key of the bodies whose inertias the recorder repaired (``masses=
#: "repair"``): ``{joint name: [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]}``,
#: Pinocchio's dynamic parameters in the joint frame (SI units).
ROBOT_INERTIAS = "robot_inertias"
#: Force [N] on robot links without a declared contact above which the log is flagged.
UNDECLARED_FORCE_TOLERANCE = 1e-9
#: Relative tolerance on masses, centres of mass and inertias compared at attach time.
MASS_TOLERANCE = 1e-6


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


def joints_in_robot_order(
    robot: Robot, joints: Mapping[str, Any], moving: Callable[[Any], bool], engine: str
) -> list[Any]:
    """An engine's joints (``joints``: name -> the engine's joint) in the robot's joint order.

    Each robot joint must be a joint of the engine for which ``moving`` is true (revolute or
    prismatic), and the engine's robot must have no moving joint the robot lacks.

    Raises
    ------
    ModelError
        Naming the joint missing on either side.
    """
    out = []
    for name in robot.joint_names:
        joint = joints.get(name)
        if joint is None or not moving(joint):
            raise ModelError(
                f"robot joint {name!r} is not a revolute or prismatic joint in {engine}"
            )
        out.append(joint)
    extra = [n for n, j in joints.items() if moving(j) and n not in robot.joint_names]
    if extra:
        raise ModelError(f"{engine} joints {extra} are not joints of robot {robot.name!r}")
    return out


def robot_for_log(robot: Robot, metadata: Mapping[str, Any]) -> Robot:
    """The robot a log recorded with ``masses="repair"`` is checked with: ``robot`` with the
    inertias the recorder repaired (``metadata["robot_inertias"]``), or ``robot`` itself when
    the log records none.

    Raises
    ------
    ModelError
        A recorded body is not a joint of ``robot``, or its parameters are not 10 numbers:
        the log was recorded with another robot.
    """
    import pinocchio as pin

    recorded = metadata.get(ROBOT_INERTIAS)
    if not recorded:
        return robot
    model = robot.model.copy()
    for name, params in dict(recorded).items():
        values = np.asarray(params, dtype=float).ravel() if np.ndim(params) == 1 else None
        if not model.existJointName(str(name)) or values is None or values.shape != (10,):
            raise ModelError(
                f"the log's {ROBOT_INERTIAS} name body {name!r} with {np.size(params)} "
                f"parameters: not a joint of robot {robot.name!r} with 10 dynamic parameters; "
                "check the log with the robot it was recorded with"
            )
        model.inertias[model.getJointId(str(name))] = pin.Inertia.FromDynamicParameters(values)
    return robot.with_model(model)


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


class Recorder:
    """The base of the engine recorders: the samples logged, the contact force met on robot
    parts that carry no declared contact, and the log given as a
    :class:`~wholebody.trajectory.Trajectory`.

    An engine's recorder reads its engine in its own ``record(...)`` and adds each sample in
    Pinocchio's convention (:meth:`_append`, its contact forces summed per declared contact
    by :meth:`_sums`); it names its engine (:attr:`engine`) and gives the metadata of its run
    (:meth:`_metadata`). A recorder that keeps its samples in its engine's convention converts
    them in :meth:`_assemble` instead (MuJoCo's).

    Attributes
    ----------
    robot : Robot
        The robot the log is for (joint order, frames): check the log with it.
    contacts : tuple of Contact
        The declared contacts, in the log's order.
    """

    #: The engine's name, for messages.
    engine = ""
    #: The engine's word for the robot's parts that touch things ("links" or "bodies").
    parts = "links"

    robot: Robot
    contacts: tuple[Contact, ...]

    def _start_log(self, parts: Sequence[str]) -> None:
        """An empty log; ``parts`` names the engine's parts of the robot by index (the largest
        contact force met on each one that carries no declared contact is kept)."""
        self._parts = tuple(parts)
        self._undeclared = np.zeros(len(self._parts))
        self._rows: defaultdict[str, list[Array]] = defaultdict(list)

    def _map_contacts(
        self, robot: Robot, contacts: Sequence[Contact], links: Sequence[str]
    ) -> None:
        """Map the engine's ``links`` (names, in its index order; kept as ``link_names``) to
        the declared contacts (:class:`ContactMap`) and start the log."""
        self.contacts = tuple(contacts)
        self.link_names: list[str] = list(links)
        self._cmap = ContactMap(robot, self.contacts, self.link_names, self.engine)
        self._start_log(self.link_names)

    def _matched_masses(
        self, robot: Robot, inertias: Sequence[Any], masses: str, advice: str
    ) -> Robot:
        """The robot to check the log with, after comparing the engine's link inertias (each
        link's ``pinocchio.Inertia`` in its own frame, in ``link_names`` order) with the
        robot's bodies: the robot itself when they agree (within ``MASS_TOLERANCE``) or for
        ``masses="ignore"``; ``"raise"`` refuses a difference (:class:`ModelError` naming the
        links, then ``advice``); ``"repair"`` warns (ModelWarning) and gives a copy of the
        robot the engine's values on those bodies, listed in :attr:`repairs` and recorded in
        the log (``metadata["robot_inertias"]``, read back by :func:`robot_for_log`)."""
        self.repairs: tuple[str, ...] = ()
        self._inertias: dict[str, list[float]] = {}
        bad = inertia_mismatches(robot, self.link_names, inertias, self.engine, MASS_TOLERANCE)
        if not bad or masses == "ignore":
            return robot
        differ = f"the masses or inertias in {self.engine} differ from the robot's on " + (
            "; ".join(bad.values())
        )
        if masses == "raise":
            raise ModelError(f"{differ}{advice}")
        sums = body_inertias(robot, self.link_names, inertias)
        model = robot.model.copy()
        for j in bad:
            model.inertias[j] = sums[j]
        self.repairs = tuple(bad.values())
        self._inertias = {
            str(model.names[j]): np.asarray(sums[j].toDynamicParameters(), float).tolist()
            for j in bad
        }
        warnings.warn(
            f"{differ}: recorder.robot has {self.engine}'s values; check the log with it",
            ModelWarning,
            stacklevel=3,
        )
        return robot.with_model(model)

    def __len__(self) -> int:
        return len(self._rows["t"])

    @property
    def undeclared_contact_force(self) -> dict[str, float]:
        """Largest contact force [N] met so far on each part of the robot (an engine's link
        or body) that carries no declared contact."""
        parts, force = self._parts, self._undeclared
        return {
            parts[i]: float(force[i]) for i in np.flatnonzero(force > UNDECLARED_FORCE_TOLERANCE)
        }

    def _sums(self) -> ContactSums:
        """An empty per-contact sum for the next sample."""
        return ContactSums(self._cmap, self._undeclared)

    def _append(
        self, t: float, q: Array, v: Array, a: Array, sums: ContactSums, tau: Array | None = None
    ) -> None:
        """Add one sample: ``q``, ``v``, ``a`` in Pinocchio's convention, joints in the robot's
        order; the contact sums of the same step; the joint torques, if the engine gives them."""
        rows = self._rows
        rows["t"].append(np.array(t, dtype=float))
        rows["q"].append(np.asarray(q, dtype=float))
        rows["v"].append(np.asarray(v, dtype=float))
        rows["a"].append(np.asarray(a, dtype=float))
        rows["w"].append(sums.wrenches())
        if tau is not None:
            rows["tau"].append(np.asarray(tau, dtype=float))

    def trajectory(self, metadata: Mapping[str, Any] | None = None) -> Trajectory:
        """The samples logged so far, in wholebody's conventions: joint columns in the robot's
        order, contact wrenches on the robot in world axes at each contact frame's origin.

        The log's metadata is the engine's (its name and version as ``"simulator"``, its time
        step, its precision, ...) with ``metadata`` added, and
        ``"undeclared_contact_force_N"`` (:attr:`undeclared_contact_force`). A warning
        (WholebodyWarning) names the parts of the robot that touched something without a
        declared contact: the Newton-Euler check of such a log cannot balance. A float32
        engine's contact wrenches (``metadata["dtype"] == "float32"``) are rounded to float32,
        the precision they were computed in: the checks' bounds follow it.

        Raises
        ------
        LogFormatError
            Nothing was recorded, or the times are not increasing.
        """
        if not len(self):
            raise LogFormatError(
                f"{type(self).__name__}: no sample recorded (call record(...) at each step)"
            )
        undeclared = self.undeclared_contact_force
        if undeclared:
            warnings.warn(
                f"{self.engine}: contacts on robot {self.parts} without a declared contact "
                f"(largest force on each, N): {undeclared}; the log's contact wrenches miss them",
                WholebodyWarning,
                stacklevel=2,
            )
        meta = {"undeclared_contact_force_N": undeclared, **self._metadata()}
        if getattr(self, "_inertias", None):
            meta[ROBOT_INERTIAS] = self._inertias
        traj = self._assemble({**meta, **dict(metadata or {})})
        if meta.get("dtype") == "float32":
            # A float32 engine's wrenches are stored at its precision: the checks read the
            # storage precision from the values and take their bounds from it.
            W = traj.contact_wrenches.astype(np.float32).astype(np.float64)
            traj = dataclasses.replace(traj, contact_wrenches=W)
        return traj

    def _metadata(self) -> dict[str, Any]:
        """The engine's metadata of the log."""
        return {}

    def _assemble(self, metadata: dict[str, Any]) -> Trajectory:
        """The samples of :meth:`_append` as a Trajectory, wrenches about each contact frame's
        origin."""
        rows = self._rows
        W = np.array(rows["w"])
        N = W.shape[0]
        traj = Trajectory.from_arrays(
            np.array(rows["t"]),
            np.array(rows["q"]),
            np.array(rows["v"]),
            a=np.array(rows["a"]),
            tau=np.array(rows["tau"]) if len(rows["tau"]) == N else None,
            joint_names=self.robot.joint_names,
            contact_wrenches={c.name: W[:, k] for k, c in enumerate(self.contacts)},
            contact_points_world={c.name: np.zeros((N, 3)) for c in self.contacts},
            metadata=metadata,
        )
        # Moments about the world origin -> about each contact frame's origin, once.
        return traj.at_frame_origins(self.robot, self.contacts)
