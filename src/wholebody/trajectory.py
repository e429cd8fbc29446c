"""Trajectory: a log of a robot's motion and contact wrenches, in wholebody's conventions.

Canonical convention (DESIGN section 2): ``q``, ``v``, ``a`` in Pinocchio's layout with a free
flyer (base quaternion x-y-z-w; base velocity in the base frame); joint columns in the order
of ``joint_names`` (mapped to a robot **by name** by :meth:`Trajectory.for_robot`); contact
wrenches ``(f, tau)`` in world axes at each contact frame's origin [N, N m]; SI units.
Other conventions are converted by the named constructors (:meth:`from_mujoco`).
The file format is documented in ``docs/log-format.md``.

Wrenches may also be given about other points (``docs/log-format.md``, Wrenches at stated
points): a point fixed in each contact frame (``contact_points_local``, e.g. the ankle) or per
sample in the world (``contact_points_world``, e.g. a CoP), point forces with their positions
(``point_forces``), and the points of the external wrenches (a push). The checks and the
estimation move them all to the frame origins once, with batch frame kinematics
(:meth:`Trajectory.at_frame_origins`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._trajectory_arrays import (
    _active_table,
    _float_array,
    _wrench_table,
    check_point_fields,
    point_arrays,
)
from ._wrench_points import TrajectoryPoints
from .errors import LogFormatError, StateError, WholebodyDeprecationWarning
from .io.logfiles import LogFields, open_fields, write_fields
from .io.logfiles.fields import as_bool_array, check_names, check_time_increasing
from .robot.core import Robot

if TYPE_CHECKING:
    from .robot.differentiation import estimate_accelerations, estimate_velocities
    from .schedule import ContactSchedule

__all__ = ["Trajectory", "LogFormatError", "estimate_velocities", "estimate_accelerations"]

Array = NDArray[np.float64]
Bools = NDArray[np.bool_]
BASE_NQ, BASE_NV = 7, 6


@dataclass(frozen=True)
class Trajectory(TrajectoryPoints):
    """A sampled motion with its contact wrenches (see the module docstring for conventions).

    Attributes
    ----------
    time : ndarray, shape (N,)
        Sample times [s].
    q : ndarray, shape (N, 7 + nj)
        Base pose (position, quaternion x-y-z-w) and joint positions in ``joint_names`` order.
    v : ndarray, shape (N, 6 + nj)
        Base twist in the base frame, then joint velocities.
    a : ndarray, shape (N, 6 + nj) or None
        Accelerations, same layout; None when the log has none (see :meth:`with_accelerations`).
    tau : ndarray, shape (N, nj) or None
        Joint torques [N m].
    joint_names : tuple of str
        Names of the joint columns.
    contact_names : tuple of str
        Names of the contacts (matched to :class:`Contact` names when checking).
    contact_wrenches : ndarray, shape (N, k, 6)
        ``(f, tau)`` world axes at each contact frame's origin; point contacts have tau = 0.
    external_frames : tuple of str
        Frames where known external wrenches act (a push).
    external_wrenches : ndarray, shape (N, e, 6) or None
        World axes at those frames' origins.
    accelerations_estimated : bool
        True when ``a`` was computed from ``v`` rather than logged.
    metadata : dict
        Free-form (robot name, source, units note).
    source : str
        Where the trajectory came from (a path), for messages.
    contact_active : ndarray of bool, shape (N, k), or None
        The contact schedule: per sample and contact (``contact_names`` order), whether the
        contact is active (touching, may carry a wrench). None when unknown; a log with no
        contacts has none (an (N, 0) mask becomes None). Integers 0 / 1 are converted.
        :meth:`schedule` gives it as a :class:`~wholebody.schedule.ContactSchedule`.
    contact_points_local : ndarray, shape (k, 3), or None
        When given, each contact wrench's moment is about this point instead of the contact
        frame's origin: a point fixed in the contact frame (contact-frame coordinates [m],
        e.g. the ankle). Finite. Exclusive with ``contact_points_world``.
    contact_points_world : ndarray, shape (N, k, 3), or None
        When given, each contact wrench's moment is about this point, per sample (world
        coordinates [m], e.g. the measured CoP). NaN is allowed where the force is zero.
    point_forces : ndarray, shape (N, m, 3), or None
        Point forces on the robot, world axes [N], each part of the contact
        ``point_force_contacts[j]``: the contact's total wrench is ``contact_wrenches`` plus
        these forces at their positions.
    point_force_positions : ndarray, shape (N, m, 3), or None
        Where each point force acts, world coordinates [m] (NaN allowed where the force is
        zero).
    point_force_contacts : tuple of str, length m
        The contact (one of ``contact_names``; repeats allowed) of each point force.
    external_points_local : ndarray, shape (e, 3), or None
        The point each external wrench's moment is about, fixed in its frame [m] (a push
        at a point of a link). Exclusive with ``external_points_world``.
    external_points_world : ndarray, shape (N, e, 3), or None
        The same per sample, world coordinates [m].

    The point fields are converted away, once over the whole log, by
    :meth:`at_frame_origins` (the checks and the estimation call it); :attr:`has_points`
    says whether there is anything to convert.
    """

    time: Array
    q: Array
    v: Array
    a: Array | None
    tau: Array | None
    joint_names: tuple[str, ...]
    contact_names: tuple[str, ...]
    contact_wrenches: Array
    external_frames: tuple[str, ...] = ()
    external_wrenches: Array | None = None
    accelerations_estimated: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str = "arrays"
    contact_active: Bools | None = None
    contact_points_local: Array | None = None
    contact_points_world: Array | None = None
    point_forces: Array | None = None
    point_force_positions: Array | None = None
    point_force_contacts: tuple[str, ...] = ()
    external_points_local: Array | None = None
    external_points_world: Array | None = None

    def __post_init__(self) -> None:
        src = self.source
        t = _float_array(self.time, "time", 1, src)
        N = t.shape[0]
        if N == 0:
            raise LogFormatError(f"{src}: the log has no samples")
        for name in ("joint_names", "contact_names", "external_frames"):
            object.__setattr__(self, name, check_names(getattr(self, name), name, src))
        nj = len(self.joint_names)
        expect = {"q": (N, BASE_NQ + nj), "v": (N, BASE_NV + nj)}
        for name, shape in expect.items():
            arr = _float_array(getattr(self, name), name, 2, src)
            if arr.shape != shape:
                raise LogFormatError(
                    f"{src}: field {name!r} must have shape {shape} (N "
                    f"samples, base + {nj} joints), got {arr.shape}"
                )
            object.__setattr__(self, name, arr)
        for name, shape in (("a", (N, BASE_NV + nj)), ("tau", (N, nj))):
            value = getattr(self, name)
            if value is not None:
                arr = _float_array(value, name, 2, src)
                if arr.shape != shape:
                    raise LogFormatError(
                        f"{src}: field {name!r} must have shape {shape}, got {arr.shape}"
                    )
                object.__setattr__(self, name, arr)
        W = _float_array(self.contact_wrenches, "contact_wrenches", 3, src)
        if W.shape != (N, len(self.contact_names), 6):
            raise LogFormatError(
                f"{src}: field 'contact_wrenches' must have shape "
                f"{(N, len(self.contact_names), 6)}, got {W.shape}"
            )
        object.__setattr__(self, "contact_wrenches", W)
        if self.external_wrenches is not None:
            E = _float_array(self.external_wrenches, "external_wrenches", 3, src)
            if E.shape != (N, len(self.external_frames), 6):
                raise LogFormatError(
                    f"{src}: field 'external_wrenches' must have shape "
                    f"{(N, len(self.external_frames), 6)}, got {E.shape}"
                )
            object.__setattr__(self, "external_wrenches", E)
        elif self.external_frames:
            raise LogFormatError(
                f"{src}: external_frames {list(self.external_frames)} are "
                "given without external_wrenches"
            )
        if self.contact_active is not None:
            mask = as_bool_array(self.contact_active, "contact_active", src)
            if mask.shape != (N, len(self.contact_names)):
                raise LogFormatError(
                    f"{src}: field 'contact_active' must have shape "
                    f"{(N, len(self.contact_names))} (N samples, contacts "
                    f"{list(self.contact_names)}), got {mask.shape}"
                )
            object.__setattr__(self, "contact_active", mask if mask.shape[1] else None)
        if not isinstance(self.accelerations_estimated, (bool, np.bool_)):
            raise LogFormatError(
                f"{src}: accelerations_estimated must be True or False, got "
                f"{self.accelerations_estimated!r}"
            )
        if not isinstance(self.metadata, dict):
            raise LogFormatError(
                f"{src}: metadata must be a dict, got {type(self.metadata).__name__}"
            )
        object.__setattr__(self, "time", t)
        check_time_increasing(t, src)
        self._check_points(N)

    def _check_points(self, N: int) -> None:
        check_point_fields(self, N)

    def __len__(self) -> int:
        return self.time.shape[0]

    # --- constructors -------------------------------------------------------------------

    @classmethod
    def from_arrays(
        cls,
        time: ArrayLike,
        q: ArrayLike,
        v: ArrayLike,
        *,
        joint_names: Sequence[str],
        contact_wrenches: Mapping[str, ArrayLike],
        a: ArrayLike | None = None,
        tau: ArrayLike | None = None,
        external_wrenches: Mapping[str, ArrayLike] | None = None,
        metadata: Mapping[str, Any] | None = None,
        contact_active: Mapping[str, ArrayLike] | ArrayLike | None = None,
        contact_points_local: Mapping[str, ArrayLike] | None = None,
        contact_points_world: Mapping[str, ArrayLike] | None = None,
        point_forces: Mapping[str, ArrayLike] | None = None,
        point_force_positions: Mapping[str, ArrayLike] | None = None,
        external_points_local: Mapping[str, ArrayLike] | None = None,
        external_points_world: Mapping[str, ArrayLike] | None = None,
    ) -> Trajectory:
        """From arrays in wholebody's conventions.

        ``contact_wrenches`` maps contact names to (N, 6) wrenches or (N, 3) forces (world
        axes at the contact frame origin, or at the stated points below);
        ``external_wrenches`` maps frame names to (N, 6) wrenches or (N, 3) forces.
        ``contact_active`` (the contact schedule) maps every contact name to an (N,) bool
        mask, or is an (N, k) bool array in ``contact_wrenches``' order; 0 / 1 integers are
        accepted.

        Wrenches at stated points (all optional; see the class attributes):

        - ``contact_points_local``: {contact: (3,)} point fixed in the contact frame that the
          contact's moment is about [m] (contacts not named: the frame origin);
        - ``contact_points_world``: {contact: (N, 3)} the same per sample, world [m], for
          every contact;
        - ``point_forces`` and ``point_force_positions``: {contact: (N, 3) or (N, n, 3)}
          forces (world axes [N]) and where they act (world [m]), added to that contact's
          wrench (give its ``contact_wrenches`` entry as zeros when the point forces are
          all of it);
        - ``external_points_local`` / ``external_points_world``: {frame: (3,)} or
          {frame: (N, 3)}, the points of the external wrenches; with them an external
          wrench may be an (N, 3) force (a push at that point).

        Raises
        ------
        LogFormatError
            An argument that is not a mapping, a name that is not a contact (or external
            frame), a wrong shape; the message names the argument.
        """
        if np.ndim(time) != 1:
            raise LogFormatError(f"arrays: time must have shape (N,), got {np.shape(time)}")
        N = np.shape(time)[0]
        names, W = _wrench_table(contact_wrenches, "contact_wrenches", N, allow_forces=True)
        ext_frames, E, points = point_arrays(
            N,
            names,
            external_wrenches,
            contact_points_local=contact_points_local,
            contact_points_world=contact_points_world,
            point_forces=point_forces,
            point_force_positions=point_force_positions,
            external_points_local=external_points_local,
            external_points_world=external_points_world,
        )
        active = None if contact_active is None else _active_table(contact_active, names, N)
        # The arrays are checked and converted by __post_init__.
        return cls(
            cast(Array, time),
            cast(Array, q),
            cast(Array, v),
            cast(Array | None, a),
            cast(Array | None, tau),
            tuple(joint_names),
            names,
            W,
            ext_frames,
            E,
            False,
            dict(metadata or {}),
            contact_active=active,
            **points,
        )

    @classmethod
    def from_mujoco(
        cls,
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
        """From MuJoCo arrays of a free-floating robot with hinge/slide joints.

        ``qpos`` (N, 7 + nj): free joint ``[x, y, z, qw, qx, qy, qz]`` then joints in
        ``joint_names`` order; ``qvel`` / ``qacc`` (N, 6 + nj): free joint linear velocity in
        world axes and angular velocity in body axes, then joints. Converted by
        :func:`wholebody.sim.mujoco.free_base_to_pinocchio`. Contact wrenches must already
        be per contact in world axes at the contact frame origins, on the robot
        (:func:`wholebody.sim.mujoco.contact_wrenches_on_bodies` gives that from
        ``mj_contactForce``, which acts from geom1 on geom2 in the contact frame).
        ``contact_active`` is the contact schedule, as in :meth:`from_arrays` (for instance
        which contacts MuJoCo's contact list touches at each sample).
        """
        from .sim.mujoco import free_base_to_pinocchio

        q, v, a = free_base_to_pinocchio(qpos, qvel, qacc)
        traj = cls.from_arrays(
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
        return traj

    @classmethod
    def load(cls, path: str | Path) -> Trajectory:
        """Read a log: ``.npz`` or ``.csv`` (core), ``.parquet`` or ``.h5`` (extras).

        The format follows the suffix (``docs/log-format.md``). Only the fields a
        ``Trajectory`` holds are read. To read a long log in pieces, use
        :func:`wholebody.io.open_log`.

        Raises
        ------
        LogFileError
            The path is missing, a directory, or unreadable.
        LogFormatError
            The file is not a valid log; the message names the file and the field.
        """
        with closing(open_fields(path)) as reader:
            return cls.from_fields(reader.read())

    @classmethod
    def from_fields(cls, fields: LogFields) -> Trajectory:
        """From the fields a log file holds (:class:`wholebody.io.logfiles.LogFields`)."""
        return cls(**fields.as_kwargs())

    def to_fields(self) -> LogFields:
        """The fields written to a log file (:class:`wholebody.io.logfiles.LogFields`)."""
        return LogFields(
            time=self.time,
            q=self.q,
            v=self.v,
            a=self.a,
            tau=self.tau,
            joint_names=self.joint_names,
            contact_names=self.contact_names,
            contact_wrenches=self.contact_wrenches,
            external_frames=self.external_frames,
            external_wrenches=self.external_wrenches,
            accelerations_estimated=bool(self.accelerations_estimated),
            metadata=dict(self.metadata),
            source=self.source,
            contact_active=self.contact_active,
            contact_points_local=self.contact_points_local,
            contact_points_world=self.contact_points_world,
            point_forces=self.point_forces,
            point_force_positions=self.point_force_positions,
            point_force_contacts=self.point_force_contacts,
            external_points_local=self.external_points_local,
            external_points_world=self.external_points_world,
        )

    def save(self, path: str | Path) -> None:
        """Write a log; the format follows the suffix (see :meth:`load`).

        The file is written beside its target and renamed into place, so a failed write
        leaves no partial file.

        Raises
        ------
        OutputError
            The path is a directory, its folder is read-only, or a parent is a regular file.
        LogFormatError
            Unknown suffix, or metadata that JSON cannot represent.
        """
        write_fields(self.to_fields(), path)

    # --- derived -----------------------------------------------------------------------------

    def with_accelerations(
        self, robot: Robot | None = None, *, savgol: tuple[int, int] | None = None
    ) -> Trajectory:
        """A copy with accelerations estimated from ``v`` (central differences), flagged as such.

        ``savgol=(window, polyorder)`` smooths with a Savitzky-Golay filter (scipy) instead.
        ``robot`` is not needed (deprecated: ``v``'s coordinates are differentiated directly).
        """
        if robot is not None:
            warnings.warn(
                "with_accelerations(robot) is deprecated: the robot is not needed; "
                "call with_accelerations()",
                WholebodyDeprecationWarning,
                stacklevel=2,
            )
        from .robot.differentiation import estimate_accelerations

        a = estimate_accelerations(self.time, self.v, savgol=savgol)
        return replace(self, a=a, accelerations_estimated=True)

    def for_robot(self, robot: Robot) -> tuple[Array, Array, Array | None, Array | None]:
        """``q``, ``v``, ``a``, ``tau`` with joint columns in ``robot``'s order (mapped by name).

        Raises
        ------
        LogFormatError
            A joint of the log that the robot lacks, or a robot joint the log lacks.
        """
        if not robot.has_floating_base:
            raise StateError("logs describe floating-base robots; this robot has a fixed base")
        robot_joints = robot.joint_names
        unknown = [j for j in self.joint_names if j not in set(robot_joints)]
        if unknown:
            raise LogFormatError(
                f"{self.source}: joints {unknown} are not joints of robot {robot.name!r}"
            )
        missing = [j for j in robot_joints if j not in set(self.joint_names)]
        if missing:
            raise LogFormatError(
                f"{self.source}: the log has no columns for joints {missing} "
                f"of robot {robot.name!r}"
            )
        m = robot.model
        if any(m.joints[robot.joint_id(j)].nq != 1 for j in robot_joints):
            raise LogFormatError("logs support robots whose joints each have one coordinate")
        col = {name: i for i, name in enumerate(self.joint_names)}
        order = np.array([col[j] for j in robot_joints], dtype=int)
        if np.array_equal(order, np.arange(len(order))):
            return self.q, self.v, self.a, self.tau
        q = np.concatenate([self.q[:, :BASE_NQ], self.q[:, BASE_NQ + order]], axis=1)
        v = np.concatenate([self.v[:, :BASE_NV], self.v[:, BASE_NV + order]], axis=1)
        a = (
            None
            if self.a is None
            else np.concatenate([self.a[:, :BASE_NV], self.a[:, BASE_NV + order]], axis=1)
        )
        tau = None if self.tau is None else self.tau[:, order]
        return q, v, a, tau

    def schedule(self) -> ContactSchedule | None:
        """The logged contact schedule (method ``"logged"``, confidence 1), or None.

        Returns
        -------
        ContactSchedule or None
            ``active`` (N, k) in ``contact_names`` order and ``time`` [s]; None when the
            trajectory has no ``contact_active``.
        """
        if self.contact_active is None:
            return None
        from .schedule import ContactSchedule

        return ContactSchedule.from_active(
            self.contact_names, self.time, self.contact_active.copy(), method="logged"
        )

    def select(self, samples: slice | ArrayLike) -> Trajectory:
        """A copy with only the given samples (a slice, indices or an (N,) bool mask) of every
        per-sample field (``time``, ``q``, ``v``, ``a``, ``tau``, wrenches,
        ``contact_active``, the per-sample points and point forces); names, metadata and the
        points fixed in frames kept."""
        idx = samples if isinstance(samples, slice) else np.asarray(samples)

        def cut(x: Any) -> Any:
            return None if x is None else x[idx]

        return replace(
            self,
            time=self.time[idx],
            q=self.q[idx],
            v=self.v[idx],
            a=cut(self.a),
            tau=cut(self.tau),
            contact_wrenches=self.contact_wrenches[idx],
            external_wrenches=cut(self.external_wrenches),
            contact_active=cut(self.contact_active),
            contact_points_world=cut(self.contact_points_world),
            point_forces=cut(self.point_forces),
            point_force_positions=cut(self.point_force_positions),
            external_points_world=cut(self.external_points_world),
        )

    def contact_wrench(self, name: str) -> Array:
        """The (N, 6) wrenches of one contact."""
        try:
            return self.contact_wrenches[:, self.contact_names.index(name)]
        except ValueError:
            raise LogFormatError(
                f"{self.source}: no contact {name!r}; contacts: {list(self.contact_names)}"
            ) from None


def __getattr__(name: str) -> Any:
    # The differentiation of :mod:`wholebody.robot.differentiation`, public here too, imported
    # on first use (PEP 562): a log that has its accelerations never needs it.
    if name in ("estimate_velocities", "estimate_accelerations"):
        from .robot import differentiation

        value = getattr(differentiation, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
