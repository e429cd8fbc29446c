"""Wrenches at stated points moved to their frames' origins, over a whole log at once.

Private to :meth:`wholebody.trajectory.Trajectory.at_frame_origins`. A wrench ``(f, tau_P)``
about a point P, world axes, is the wrench ``(f, tau_O)`` about the frame origin O with

.. math::

    \\tau_O = \\tau_P + (p_P - p_O) \\times f

(Varignon, DESIGN section 3); a point force ``f_i`` at ``p_i`` adds ``(f_i, (p_i - p_O)
\\times f_i)`` to its contact's wrench. Frame placements come from one batch pass,
:meth:`wholebody.Robot.frame_placements`; the algebra is numpy over all samples.

A force that is exactly zero is moved without its point (its lever arm is not read), so a
point left undefined (NaN) while nothing acts there, as simulators and CoP-referenced logs do
when a foot is in the air, gives a finite wrench. A NaN point under a non-zero force gives a
NaN wrench on that sample only, which the checks flag like any non-finite sample.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .errors import ContactNotFoundError, InvalidArgumentError
from .robot.core import Robot
from .spatial import cross

Array = NDArray[np.float64]


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


def placements(robot: Robot, q: Array, frames: Sequence[str]) -> tuple[Array, Array]:
    """Origins (N, n, 3) and rotations (N, n, 3, 3) of ``frames`` over ``q`` (N, nq), NaN
    on samples that fail the state checks (:meth:`Robot.frame_placements`)."""
    if not frames:
        N = q.shape[0]
        return np.zeros((N, 0, 3)), np.zeros((N, 0, 3, 3))
    return robot.frame_placements(q, list(frames))


def at_frame_origins(traj: Any, robot: Robot, contacts: Any) -> Any:
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
    origins, rotations = placements(robot, q, names)
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


class TrajectoryPoints:
    """The wrenches-at-stated-points part of :class:`wholebody.trajectory.Trajectory`
    (its fields are declared there)."""

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
    ) -> Any:
        """The same log with every wrench about its frame's origin and the point fields
        cleared; ``self`` when there is nothing to convert (:attr:`has_points` is False).

        One batch pass of frame kinematics over the whole log
        (:meth:`wholebody.Robot.frame_placements`, only the frames that need it), then
        numpy over all samples, world axes:

        .. math::

            \\\\tau_O = \\tau_P + (p_P - p_O) \\times f, \\qquad
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
        return at_frame_origins(self, robot, contacts)
