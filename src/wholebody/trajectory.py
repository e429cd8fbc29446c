"""Trajectory: a log of a robot's motion and contact wrenches, in wholebody's conventions.

Canonical convention (DESIGN section 2): ``q``, ``v``, ``a`` in Pinocchio's layout with a free
flyer (base quaternion x-y-z-w; base velocity in the base frame); joint columns in the order
of ``joint_names`` (mapped to a robot **by name** by :meth:`Trajectory.for_robot`); contact
wrenches ``(f, tau)`` in world axes at each contact frame's origin [N, N m]; SI units.
Other conventions are converted where they are known: MuJoCo's by
:func:`wholebody.sim.mujoco.trajectory_from_mujoco`, files' and recordings' by :mod:`wholebody.io`.
The file format is documented in ``docs/log-format.md``.

Wrenches may also be given about other points (``docs/log-format.md``, Wrenches at stated
points): a point fixed in each contact frame (``contact_points_local``, e.g. the ankle) or per
sample in the world (``contact_points_world``, e.g. a CoP), point forces with their positions
(``point_forces``), and the points of the external wrenches (a push). The checks and the
estimation move them all to the frame origins once, with batch frame kinematics
(:meth:`Trajectory.at_frame_origins`). Every problem with the arrays or mappings given raises
:class:`LogFormatError` naming the argument or field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import (
    ContactNotFoundError,
    InvalidArgumentError,
    LogFormatError,
    StateError,
)
from .io.logfiles import LogFields, open_fields, write_fields
from .io.logfiles.fields import (
    BASE_NQ,
    BASE_NV,
    as_bool_array,
    as_float_array,
    as_mapping,
    check_labels,
    check_names,
    check_time_increasing,
    points_by_name,
)
from .robot.core import Robot
from .spatial import cross

__all__ = ["Trajectory"]


Array = NDArray[np.float64]


def _float_array(x: Any, name: str, ndim: int, source: str) -> Array:
    arr = as_float_array(x, name, source)
    if arr.ndim != ndim:
        raise LogFormatError(
            f"{source}: field {name!r} must have {ndim} dimensions, got shape {arr.shape}"
        )
    return arr


def _wrench_table(
    wrenches: Any, what: str, N: int, allow_forces: bool
) -> tuple[tuple[str, ...], Array]:
    """Names and an (N, k, 6) array from a mapping {name: (N, 6) or (N, 3) array}."""
    names = tuple(as_mapping(wrenches, f"arrays: {what}", "(N, 6) array"))
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise LogFormatError(f"arrays: {what} names must be strings, got {bad[0]!r}")
    W = np.zeros((N, len(names), 6))
    widths = (3, 6) if allow_forces else (6,)
    for k, name in enumerate(names):
        w = as_float_array(wrenches[name], f"{what}[{name!r}]", "arrays")
        if w.ndim != 2 or w.shape[0] != N or w.shape[1] not in widths:
            allowed = " or ".join(f"({N}, {n})" for n in widths)
            raise LogFormatError(
                f"arrays: {what} {name!r} must have shape {allowed}, got {w.shape}"
            )
        W[:, k, : w.shape[1]] = w
    return names, W


def _unknown_names(given: Mapping[str, Any], names: tuple[str, ...], what: str, of: str) -> None:
    unknown = [n for n in given if n not in names]
    if unknown:
        raise LogFormatError(
            f"arrays: {what} names {unknown[0]!r}, which is not one of the {of} {list(names)}"
        )


def _world_points(value: Any, names: tuple[str, ...], N: int, what: str, of: str) -> Array | None:
    """An (N, k, 3) array from {name: (N, 3) points}, one entry per name."""
    if value is None:
        return None
    value = as_mapping(value, f"arrays: {what}", "(N, 3) points [m]")
    _unknown_names(value, names, what, of)
    missing = [n for n in names if n not in value]
    if missing:
        raise LogFormatError(
            f"arrays: {what} must give the points of every one of the {of} {list(names)}; "
            f"missing {missing} (use the frame origin's own position, or "
            f"{what.replace('world', 'local')} for points fixed in the frames)"
        )
    out = np.zeros((N, len(names), 3))
    for j, name in enumerate(names):
        p = as_float_array(value[name], f"{what}[{name!r}]", "arrays")
        if p.shape != (N, 3):
            raise LogFormatError(f"arrays: {what} {name!r} must have shape ({N}, 3), got {p.shape}")
        out[:, j] = p
    return out


def _point_force_table(
    forces: Any, positions: Any, names: tuple[str, ...], N: int
) -> tuple[Array | None, Array | None, tuple[str, ...]]:
    """(N, m, 3) forces and positions and the m owners from {contact: (N, 3) or (N, n, 3)}."""
    if forces is None and positions is None:
        return None, None, ()
    if forces is None or positions is None:
        given, other = (
            ("point_forces", "point_force_positions")
            if positions is None
            else ("point_force_positions", "point_forces")
        )
        raise LogFormatError(f"arrays: {given} needs {other} (a position for every force)")
    forces = as_mapping(forces, "arrays: point_forces", "(N, 3) or (N, n, 3) forces [N]")
    positions = as_mapping(
        positions, "arrays: point_force_positions", "(N, 3) or (N, n, 3) points [m]"
    )
    _unknown_names(forces, names, "point_forces", "contacts")
    if set(forces) != set(positions):
        raise LogFormatError(
            f"arrays: point_forces and point_force_positions must name the same contacts; "
            f"point_forces {list(forces)}, point_force_positions {list(positions)}"
        )
    F, P, owners = [], [], []
    for name in forces:
        arrays = []
        for what, table in (("point_forces", forces), ("point_force_positions", positions)):
            x = as_float_array(table[name], f"{what}[{name!r}]", "arrays")
            if x.ndim == 2:
                x = x[:, None, :]
            if x.ndim != 3 or x.shape[0] != N or x.shape[2] != 3:
                raise LogFormatError(
                    f"arrays: {what} {name!r} must have shape ({N}, 3) or ({N}, n, 3), "
                    f"got {np.shape(table[name])}"
                )
            arrays.append(x)
        if arrays[0].shape != arrays[1].shape:
            raise LogFormatError(
                f"arrays: point_forces {name!r} has shape {arrays[0].shape} but "
                f"point_force_positions {name!r} has {arrays[1].shape}"
            )
        F.append(arrays[0])
        P.append(arrays[1])
        owners += [name] * arrays[0].shape[1]
    return np.concatenate(F, axis=1), np.concatenate(P, axis=1), tuple(owners)


def _active_table(active: Any, names: tuple[str, ...], N: int) -> Any:
    """An (N, k) mask in ``names`` order from a mapping {contact: (N,) mask} or an array."""
    if not isinstance(active, Mapping):
        return active  # checked by Trajectory.__post_init__
    unknown = [n for n in active if n not in names]
    missing = [n for n in names if n not in active]
    if unknown or missing:
        raise LogFormatError(
            f"arrays: contact_active must have one (N,) mask per contact "
            f"{list(names)}; unknown {unknown}, missing {missing}"
        )
    columns = []
    for name in names:
        col = as_bool_array(active[name], f"contact_active[{name!r}]", "arrays")
        if col.shape != (N,):
            raise LogFormatError(
                f"arrays: contact_active {name!r} must have shape ({N},), got {col.shape}"
            )
        columns.append(col)
    return np.stack(columns, axis=1) if columns else np.zeros((N, 0), dtype=bool)


def _check_point_fields(self: Any, N: int) -> None:
    """Validate and convert the point fields of a Trajectory ``self`` (shapes, names,
    finiteness of the fixed points); an empty set of point forces becomes None."""
    src = self.source
    pairs = (
        ("contact_points_local", "contact_points_world", self.contact_names, "contacts"),
        ("external_points_local", "external_points_world", self.external_frames, "frames"),
    )
    for local_name, world_name, names, of in pairs:
        local, world = getattr(self, local_name), getattr(self, world_name)
        if local is not None and world is not None:
            raise LogFormatError(f"{src}: give {local_name!r} or {world_name!r}, not both")
        if local_name == "external_points_local" and self.external_wrenches is None:
            given = local_name if local is not None else world_name
            if local is not None or world is not None:
                raise LogFormatError(f"{src}: field {given!r} is given without external_wrenches")
        k = len(names)
        if local is not None:
            arr = _float_array(local, local_name, 2, src)
            if arr.shape != (k, 3):
                raise LogFormatError(
                    f"{src}: field {local_name!r} must have shape {(k, 3)} (a point per "
                    f"one of the {of} {list(names)}, in its frame [m]), got {arr.shape}"
                )
            if not np.isfinite(arr).all():
                j = int(np.flatnonzero(~np.isfinite(arr).all(axis=1))[0])
                raise LogFormatError(
                    f"{src}: field {local_name!r}: the point of {names[j]!r} is "
                    f"{arr[j].tolist()}; points fixed in a frame must be finite [m]"
                )
            object.__setattr__(self, local_name, arr if k else None)
        if world is not None:
            arr = _float_array(world, world_name, 3, src)
            if arr.shape != (N, k, 3):
                raise LogFormatError(
                    f"{src}: field {world_name!r} must have shape {(N, k, 3)} (N samples, "
                    f"a point per one of the {of} {list(names)}, world [m]), got {arr.shape}"
                )
            object.__setattr__(self, world_name, arr if k else None)
    owners = check_labels(self.point_force_contacts, "point_force_contacts", src)
    object.__setattr__(self, "point_force_contacts", owners)
    F, P = self.point_forces, self.point_force_positions
    if F is None and P is None:
        if owners:
            raise LogFormatError(
                f"{src}: field 'point_force_contacts' is given without 'point_forces' "
                "and 'point_force_positions'"
            )
        return
    if F is None or P is None:
        given, other = (
            ("point_forces", "point_force_positions")
            if P is None
            else ("point_force_positions", "point_forces")
        )
        raise LogFormatError(f"{src}: field {given!r} is given without {other!r}")
    unknown = [c for c in owners if c not in self.contact_names]
    if unknown:
        raise LogFormatError(
            f"{src}: field 'point_force_contacts' names {unknown[0]!r}, which is not a "
            f"contact; contacts: {list(self.contact_names)}"
        )
    m = len(owners)
    for name, value in (("point_forces", F), ("point_force_positions", P)):
        arr = _float_array(value, name, 3, src)
        if arr.shape != (N, m, 3):
            raise LogFormatError(
                f"{src}: field {name!r} must have shape {(N, m, 3)} (N samples, one per "
                f"entry of point_force_contacts), got {arr.shape}"
            )
        object.__setattr__(self, name, arr if m else None)
    if not m:
        object.__setattr__(self, "point_force_contacts", ())


def _point_arrays(
    N: int, names: tuple[str, ...], external_wrenches: Any, **points: Any
) -> tuple[tuple[str, ...], Array | None, dict[str, Any]]:
    """For ``Trajectory.from_arrays``: the external frames and (N, e, 6) wrenches, and the
    point fields as ``Trajectory`` keyword arguments, from the mappings given."""
    ext_frames: tuple[str, ...] = ()
    E = None
    if external_wrenches is not None and (
        not isinstance(external_wrenches, Mapping) or external_wrenches
    ):
        # A bare force (N, 3) is a push at a stated point: only with the points.
        at_points = (
            points["external_points_local"] is not None
            or points["external_points_world"] is not None
        )
        ext_frames, E = _wrench_table(
            external_wrenches, "external_wrenches", N, allow_forces=at_points
        )
    F, P, owners = _point_force_table(
        points["point_forces"], points["point_force_positions"], names, N
    )
    out: dict[str, Any] = {
        "point_forces": F,
        "point_force_positions": P,
        "point_force_contacts": owners,
    }
    for key, table, of in (
        ("contact_points", names, "contacts"),
        ("external_points", ext_frames, "external frames"),
    ):
        local = points[f"{key}_local"]
        out[f"{key}_local"] = (
            None
            if local is None
            else points_by_name(local, table, f"arrays: {key}_local", "arrays", f"{key}_local", of)
        )
        out[f"{key}_world"] = _world_points(points[f"{key}_world"], table, N, f"{key}_world", of)
    return ext_frames, E, out


def lever_moment(arm: Array, force: Array) -> Array:
    """``arm x force`` (..., 3), zero where ``force`` is exactly zero (whatever ``arm``)."""
    moment = cross(arm, force)
    zero = ~np.any(force != 0.0, axis=-1)
    if zero.any():
        moment[zero] = 0.0
    return moment


def shift_to_origins(
    wrenches: Array,
    origins: Array,
    rotations: Array | None,
    points_local: Array | None,
    points_world: Array | None,
) -> Array:
    """Wrenches (N, k, 6) about stated points moved to the frame origins (a new array).

    Parameters
    ----------
    wrenches : ndarray, shape (N, k, 6)
        ``(f, tau_P)`` world axes, about the points [N, N m].
    origins : ndarray, shape (N, k, 3)
        Frame origins, world [m].
    rotations : ndarray, shape (N, k, 3, 3), or None
        World-from-frame rotations (needed with ``points_local``).
    points_local : ndarray, shape (k, 3), or None
        Points fixed in each frame, frame coordinates [m].
    points_world : ndarray, shape (N, k, 3), or None
        Points per sample, world [m].
    """
    out = np.array(wrenches, dtype=float, copy=True)
    if points_local is not None:
        assert rotations is not None
        arm = np.einsum("nkij,kj->nki", rotations, points_local)
    elif points_world is not None:
        arm = points_world - origins
    else:
        return out
    out[..., 3:] += lever_moment(arm, out[..., :3])
    return out


def add_point_forces(
    wrenches: Array,
    origins: Array,
    forces: Array,
    positions: Array,
    owner: Sequence[int],
) -> None:
    """Add point forces (N, m, 3) at ``positions`` (N, m, 3) to the wrenches (N, k, 6) of
    their contacts ``owner[j]`` about those contacts' origins (N, k, 3), in place."""
    for j, c in enumerate(owner):
        f = forces[:, j]
        wrenches[:, c, :3] += f
        wrenches[:, c, 3:] += lever_moment(positions[:, j] - origins[:, c], f)


def _at_frame_origins(traj: Any, robot: Robot, contacts: Any) -> Any:
    """:meth:`Trajectory.at_frame_origins` of a trajectory that has points."""
    k, e = len(traj.contact_names), len(traj.external_frames)
    owner = [traj.contact_names.index(c) for c in traj.point_force_contacts]
    # Only the frames whose wrenches move: a contact with a non-zero fixed point, world
    # points or point forces; an external frame with points.
    need_c = np.zeros(k, dtype=bool)
    if traj.contact_points_local is not None:
        need_c |= np.any(traj.contact_points_local != 0.0, axis=1)
    if traj.contact_points_world is not None:
        need_c[:] = True
    need_c[owner] = True
    need_e = np.full(e, traj.external_points_world is not None) | (
        np.any(traj.external_points_local != 0.0, axis=1)
        if traj.external_points_local is not None
        else False
    )
    cj, ej = np.flatnonzero(need_c), np.flatnonzero(need_e)
    frames = _contact_frames(contacts, [traj.contact_names[j] for j in cj])
    q = traj.for_robot(robot)[0]
    names = frames + [traj.external_frames[j] for j in ej]
    if names:
        origins, rotations = robot.placements(q, names)[:2]
    else:
        origins, rotations = np.zeros((len(q), 0, 3)), np.zeros((len(q), 0, 3, 3))
    N, n = len(traj), len(cj)
    Oc = np.zeros((N, k, 3))
    Rc = np.zeros((N, k, 3, 3))
    Oc[:, cj], Rc[:, cj] = origins[:, :n], rotations[:, :n]
    W = traj.contact_wrenches
    if need_c.any():
        W = shift_to_origins(W, Oc, Rc, traj.contact_points_local, traj.contact_points_world)
        if traj.point_forces is not None and traj.point_force_positions is not None:
            add_point_forces(W, Oc, traj.point_forces, traj.point_force_positions, owner)
    E = traj.external_wrenches
    if E is not None and need_e.any():
        Oe = np.zeros((N, e, 3))
        Re = np.zeros((N, e, 3, 3))
        Oe[:, ej], Re[:, ej] = origins[:, n:], rotations[:, n:]
        E = shift_to_origins(E, Oe, Re, traj.external_points_local, traj.external_points_world)
    return replace(
        traj,
        contact_wrenches=W,
        external_wrenches=E,
        contact_points_local=None,
        contact_points_world=None,
        point_forces=None,
        point_force_positions=None,
        point_force_contacts=(),
        external_points_local=None,
        external_points_world=None,
    )


def _contact_frames(contacts: Any, needed: list[str]) -> list[str]:
    """The frames of the contacts ``needed``, from ``contacts`` (see
    :meth:`at_frame_origins`)."""
    if contacts is None:
        return list(needed)
    if isinstance(contacts, Mapping):
        table = dict(contacts)
    else:
        try:
            table = {c.name: c.frame for c in contacts}
        except (AttributeError, TypeError):
            raise InvalidArgumentError(
                "contacts must be a sequence of Contact or a mapping {contact name: frame "
                f"name}}, got {type(contacts).__name__}"
            ) from None
    missing = [n for n in needed if n not in table]
    if missing:
        raise ContactNotFoundError(missing[0], list(table))
    return [table[n] for n in needed]


@dataclass(frozen=True)
class Trajectory(LogFields):
    """A sampled motion with its contact wrenches: the fields of
    :class:`~wholebody.io.logfiles.LogFields` (their shapes, frames and units are listed
    there), checked and converted at construction (see the module docstring for the
    conventions). Wrenches given about stated points are moved to the frame origins, once
    over the whole log, by :meth:`at_frame_origins` (the checks and the estimation call it).
    """

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
        _check_point_fields(self, N)

    def __len__(self) -> int:
        return self.time.shape[0]

    @property
    def has_points(self) -> bool:
        """Whether some wrench is given about a stated point (a point field is set), so that
        :meth:`at_frame_origins` has something to convert."""
        return any(
            getattr(self, name) is not None
            for name in (
                "contact_points_local",
                "contact_points_world",
                "point_forces",
                "external_points_local",
                "external_points_world",
            )
        )

    def at_frame_origins(
        self,
        robot: Robot,
        contacts: Sequence[Any] | Mapping[str, str] | None = None,
    ) -> Trajectory:
        """The same log with every wrench about its frame's origin and the point fields
        cleared; ``self`` when there is nothing to convert (:attr:`has_points` is False).

        One batch pass of frame kinematics over the whole log
        (:meth:`wholebody.Robot.placements`, only the frames that need it), then
        numpy over all samples, world axes:

        .. math::

            \\tau_O = \\tau_P + (p_P - p_O) \\times f, \\qquad
            w_c \\mathrel{+}= \\left(f_i,\\; (p_i - p_O) \\times f_i\\right)

        for a wrench ``(f, tau_P)`` about a stated point P (fixed in the frame:
        ``p_P - p_O = R p_local``; or per sample in the world) and for each point force
        ``f_i`` at ``p_i`` of contact ``c``, with ``O`` the frame's origin. A force that is
        exactly zero is moved without reading its point, so a NaN point where nothing acts
        gives a finite wrench; a NaN point under a non-zero force makes that sample's wrench
        NaN, which the checks flag (like any non-finite sample). Samples whose ``q`` fails
        the state checks get NaN wrenches where a shift was needed.

        Parameters
        ----------
        robot : Robot
            Floating-base robot; the log's joints are mapped to it by name.
        contacts : sequence of Contact, or mapping {contact name: frame name}, optional
            The frame of each contact of the log (by name). Default: each contact name is
            a robot frame. External wrenches are about their ``external_frames``.

        Returns
        -------
        Trajectory
            ``contact_wrenches`` (N, k, 6) and ``external_wrenches`` (N, e, 6), world axes
            about each frame's origin [N, N m]; no point fields.

        Raises
        ------
        ContactNotFoundError
            A contact that needs converting and has no frame in ``contacts``.
        FrameNotFoundError
            A frame the robot lacks.
        LogFormatError
            Joints of the log and the robot that do not match (as :meth:`for_robot`).
        """
        if not self.has_points:
            return self
        return cast(Trajectory, _at_frame_origins(self, robot, contacts))

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
        ext_frames, E, points = _point_arrays(
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
    def from_fields(cls, fields_: LogFields) -> Trajectory:
        """From the fields a log file holds (:class:`wholebody.io.logfiles.LogFields`)."""
        return cls(**{f.name: getattr(fields_, f.name) for f in fields(LogFields)})

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
        write_fields(self, path)

    # --- derived -----------------------------------------------------------------------------

    def with_accelerations(self, *, savgol: tuple[int, int] | None = None) -> Trajectory:
        """A copy with accelerations estimated from ``v`` (central differences), flagged as such.

        ``savgol=(window, polyorder)`` smooths with a Savitzky-Golay filter (scipy) instead.
        """
        from .robot.differentiation import estimate_accelerations  # a log with ``a`` needs none

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
