"""Newton-Euler wrench balance: gravito-inertial and contact wrenches, residuals.

For a floating-base robot at every instant (seed 002), about any point P:

.. math::

    w_c(P) + w_{gi}(P) = 0, \\qquad
    f_{gi} = m g - \\dot P, \\quad \\tau_{gi}(G) = -\\dot L_G

where ``w_c`` sums the contact (and known external) wrenches, ``G`` is the CoM, ``m g`` the
weight and ``(dP/dt, dL_G/dt)`` the rate of the centroidal momentum. The **residual** is
``r(P) = w_c(P) + w_gi(P)``: zero for a consistent sample. Its force part does not depend on
P; its moment part does (Varignon), and is zero about every point when zero about one with
zero force.

Contact wrenches are given per contact in world axes at the contact frame's origin: a force
(3,) for a :class:`PointContact`, ``(f, tau)`` (6,) for a :class:`SurfaceContact`. The algebra
is :mod:`wholebody.balance.newton_euler`'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..contacts import Contact
from ..errors import InvalidArgumentError, StateError
from ..robot import real_array
from ..robot.batch import com_frames_rows
from ..robot.core import Robot
from ..spatial import Wrench, cross
from ._kinematics import _batch_points, _resolve_point, kinematics_batch
from .newton_euler import (
    MAX_WRENCH_RELATIVE,
    ExternalWrench,
    ExternalWrenches,
    Residual,
    beyond_physical_magnitude,
    check_sample_wrenches,
    newton_euler_residual_arrays,
    parse_external_wrenches,
    residual_parts,
    stack_contact_wrenches,
    wrench_sum_parts,
    wrenches_in_log_layout,
)

__all__ = ["gravito_inertial_wrench", "contact_wrench", "newton_euler_residual"]

Array = NDArray[np.float64]
_F64 = np.dtype(np.float64)


# --- single samples -----------------------------------------------------------------------


def gravito_inertial_wrench(
    robot: Robot, q: ArrayLike, v: ArrayLike, a: ArrayLike, *, at: str | ArrayLike = "com"
) -> Wrench:
    """The gravito-inertial wrench ``(m g - dP/dt, -dL_G/dt)`` moved to ``at``.

    Parameters
    ----------
    robot : Robot
    q : array, shape (nq,)
    v, a : arrays, shape (nv,)
        Velocity and acceleration (base parts in the base frame).
    at : "com", "origin" or array of shape (3,)
        The point to take the moment about: the CoM (default), the world origin, or a point
        in world coordinates [m].

    Returns
    -------
    Wrench
        World axes [N, N m]. The contacts must supply its opposite.
    """
    q, v, a = robot._check_qva(q, v, a)
    c, rate, _ = robot._centroidal_sample(q, v, a, ())
    com, w_gi = np.array(c), np.subtract(robot._mg6, rate)  # (m g - dP/dt, -dL_G/dt)
    force, moment = w_gi[:3], w_gi[3:]
    if isinstance(at, str) and at == "com":
        return Wrench._from_checked(force, moment, com)
    point = _resolve_point(at, com)
    return Wrench._from_checked(force, moment + cross(com - point, force), point)


def _sample_layout(
    robot: Robot,
    contacts: Sequence[Contact],
    wrenches: Any,
    external: list[ExternalWrench],
    weight: float,
) -> tuple[list[list[float]], list[int], list[list[float]]]:
    """One sample's wrenches as k + e rows ``(f, tau)`` of Python floats (a point contact's
    moment is 0; checked: finite, within :data:`MAX_WRENCH_RELATIVE` m g), the frames to place
    (the contacts', then those of external wrenches at frame origins), and the points given
    with external wrenches."""
    limit = MAX_WRENCH_RELATIVE * weight
    if isinstance(wrenches, (list, tuple)) and len(wrenches) == len(contacts):
        rows: list[list[float]] = []
        small = True  # every row's norm within the limit (False for NaN and inf too)
        for c, w in zip(contacts, wrenches):
            size = c.size
            if type(w) is not np.ndarray or w.dtype is not _F64:
                w = real_array(w, f"the wrench of contact {c.name!r}")
            if w.shape != (size,):
                kind = "a force (3,)" if size == 3 else "a wrench (f, tau) (6,)"
                raise StateError(f"contact {c.name!r} takes {kind} per sample, got shape {w.shape}")
            row = w.tolist()
            small = small and math.hypot(*row) <= limit
            rows.append(row if size == 6 else row + [0.0, 0.0, 0.0])
    else:
        W = stack_contact_wrenches(contacts, wrenches, 1)
        rows = wrenches_in_log_layout(contacts, W)[0].tolist()
        small = all(math.hypot(*row) <= limit for row in rows)
    if not small:  # the full check says what is wrong (or passes: a norm beyond, no entry)
        check_sample_wrenches(np.array(rows), "contact wrenches", weight)
    ids = robot._frame_ids
    try:  # the frames' ids; frame_id names an unknown frame
        frames = [ids[c.frame] for c in contacts]
    except (KeyError, TypeError):
        frames = [robot.frame_id(c.frame) for c in contacts]
    if not external:
        return rows, frames, []
    for e in external:
        check_sample_wrenches(e.wrench, f"external wrench {e.name!r}", weight)
        rows.append(e.wrench[0].tolist())
    frames += [robot.frame_id(e.name) for e in external if e.point is None]
    return rows, frames, [e.point[0].tolist() for e in external if e.point is not None]


def _sample_points(
    contacts: Sequence[Contact],
    external: list[ExternalWrench],
    positions: list[list[float]],
    given: list[list[float]],
) -> list[list[float]]:
    """Points of the sample layout: contact origins, then each external wrench's point."""
    if not external:
        return positions
    k = len(contacts)
    points, placed, taken = positions[:k], k, 0
    for e in external:
        if e.point is None:
            points.append(positions[placed])
            placed += 1
        else:
            points.append(given[taken])
            taken += 1
    return points


def contact_wrench(
    robot: Robot,
    q: ArrayLike,
    contacts: Sequence[Contact],
    wrenches: Any,
    *,
    at: str | ArrayLike = "com",
    external_wrenches: ExternalWrenches | None = None,
) -> Wrench:
    """Sum of the contact wrenches (and known external ones) about ``at``.

    Parameters
    ----------
    robot : Robot
    q : array, shape (nq,)
    contacts : sequence of PointContact or SurfaceContact
    wrenches : sequence, mapping or array
        Per contact, world axes at the contact frame origin: (3,) forces for point contacts,
        (6,) ``(f, tau)`` for surface contacts; see :func:`stack_contact_wrenches`.
    at : "com", "origin" or array of shape (3,)
        Point to take moments about.
    external_wrenches : mapping, optional
        Known external wrenches (a push), see :data:`ExternalWrenches`.

    Returns
    -------
    Wrench
        World axes, about ``at`` [N, N m].
    """
    q = robot._check_q(q)
    ext = parse_external_wrenches(external_wrenches, 1) if external_wrenches else []
    rows, frames, given = _sample_layout(robot, contacts, wrenches, ext, robot._weight)
    # Positions only: the CoM and the frames' origins, without the momentum work of a pass.
    c, P = np.empty((1, 3)), np.empty((1, len(frames), 3))
    com_frames_rows(robot, q[None], [0], frames, c, P)
    com, positions = c[0].tolist(), P[0].tolist()
    if isinstance(at, str) and at == "com":
        point, about = np.array(com), com
    else:
        point = _resolve_point(at, np.array(com))
        about = point.tolist()
    parts = wrench_sum_parts(rows, _sample_points(contacts, ext, positions, given), about)
    if parts is None:
        return Wrench._from_checked(np.zeros(3), np.zeros(3), point)
    return Wrench._from_checked(np.array(parts[:3]), np.array(parts[3:]), point)


def newton_euler_residual(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    contacts: Sequence[Contact],
    wrenches: Any,
    *,
    at: str | ArrayLike = "com",
    external_wrenches: ExternalWrenches | None = None,
    workers: int = 1,
    chunk_size: int = 20_000,
) -> Residual:
    """The Newton-Euler residual ``w_c + w_gi`` of one sample or of N, about ``at``.

    One call for both, like SciPy's ``Rotation``: ``q`` of shape (nq,) is one sample (bad
    input raises), ``q`` of shape (N, nq) is N samples (bad samples flagged with a reason,
    never dropped). The :class:`Residual` says which it holds (:attr:`Residual.is_batch`).

    Parameters
    ----------
    robot : Robot
    q : array, shape (nq,) or (N, nq)
    v, a : arrays, shape (nv,) or (N, nv)
    contacts : sequence of PointContact or SurfaceContact
    wrenches : sequence, mapping or array
        Per contact, world axes at the contact frame's origin [N, N m]
        (see :func:`stack_contact_wrenches`).
    at : "com", "origin" or array of shape (3,)
        Point to take moments about.
    external_wrenches : mapping, optional
        Known external wrenches (a push), see :data:`ExternalWrenches`; for N samples, values
        per sample (N, 6) / (N, 3) or constant.
    workers : int
        N samples only: processes sharing the samples, in chunks of ``chunk_size``; the
        result is identical to ``workers=1``, and a chunk that fails flags its samples with
        the error.
    chunk_size : int
        N samples only: samples per chunk.

    Returns
    -------
    Residual
        Force and moment of shape (3,), or (N, 3) for N samples, world axes [N, N m].

    Raises
    ------
    StateError
        Bad input for one sample (N samples flag bad samples instead).

    Notes
    -----
    The formula is :func:`~wholebody.balance.newton_euler.newton_euler_residual_arrays`', run on
    Python floats for one sample: the same numbers as the batch form.

    Examples
    --------
    With no contact wrench, a robot at rest leaves its weight unbalanced: the residual force
    is ``m g`` (world z up, [N]) and the moment about the CoM is zero.

    >>> import numpy as np, wholebody
    >>> from wholebody.balance import newton_euler_residual
    >>> from wholebody.contacts import SurfaceContact
    >>> robot = wholebody.load("humanoid")
    >>> feet = [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.7)
    ...         for f in ("left_sole", "right_sole")]
    >>> zero_v = np.zeros(robot.nv)
    >>> r = newton_euler_residual(robot, robot.neutral(), zero_v, zero_v, feet,
    ...                           [np.zeros(6), np.zeros(6)])
    >>> np.round(r.force, 1)
    array([   0. ,    0. , -644.5])
    >>> bool(np.allclose(r.moment, 0.0))
    True
    """
    # N samples: one Pinocchio pass per sample, the algebra batched; bad samples flagged.
    if (q.ndim if type(q) is np.ndarray else np.ndim(q)) == 2:
        Q = np.asarray(q, dtype=float)
        ext = parse_external_wrenches(external_wrenches, Q.shape[0])
        if workers < 1:
            raise InvalidArgumentError(f"workers must be at least 1, got {workers}")
        if workers > 1:
            return _residuals_in_chunks(
                robot, Q, v, a, contacts, wrenches, at, ext, workers, chunk_size
            )
        return _residuals(robot, Q, v, a, contacts, wrenches, at, ext)
    q, v, a = robot._check_qva(q, v, a)
    ext = parse_external_wrenches(external_wrenches, 1) if external_wrenches else []
    weight = robot._weight
    rows, frames, given = _sample_layout(robot, contacts, wrenches, ext, weight)
    com, rate, positions = robot._centroidal_sample(q, v, a, frames)
    if isinstance(at, str) and at == "com":
        point, about = np.array(com), None
    else:
        point = _resolve_point(at, np.array(com))
        about = point.tolist()
    points = _sample_points(contacts, ext, positions, given) if ext else positions
    force, moment = residual_parts(rows, points, com, rate, robot._mg, about)
    return Residual._one(np.array(force), np.array(moment), point, weight)


# --- batches ------------------------------------------------------------------------------


def _residuals(
    robot: Robot,
    q: Any,
    v: Any,
    a: Any,
    contacts: Sequence[Contact],
    wrenches: Any,
    at: str | ArrayLike,
    ext: list[ExternalWrench],
) -> Residual:
    arrays, bad, reasons = robot.check_batch(q=q, v=v, a=a)
    Q, V, A = arrays["q"], arrays["v"], arrays["a"]
    N = Q.shape[0]
    layout = wrenches_in_log_layout(contacts, stack_contact_wrenches(contacts, wrenches, N))
    if ext:
        layout = np.concatenate([layout, np.stack([e.wrench for e in ext], axis=1)], axis=1)
    groups = [("contact wrenches have", slice(0, len(contacts)))]
    groups += [
        (f"external wrench {e.name!r} has", slice(len(contacts) + j, len(contacts) + j + 1))
        for j, e in enumerate(ext)
    ]
    for what, cols in groups:
        part = layout[:, cols]
        for rows, why in (
            (~np.isfinite(part).reshape(N, -1).all(axis=1), "non-finite values"),
            (
                beyond_physical_magnitude(part, robot.weight),
                f"values beyond physical magnitudes (> {MAX_WRENCH_RELATIVE:g} m g)",
            ),
        ):
            for i in np.flatnonzero(rows & ~bad):
                reasons[int(i)] = f"{what} {why}"
            bad = bad | rows
    frames = [c.frame for c in contacts] + [e.name for e in ext if e.point is None]
    kin = kinematics_batch(robot, Q, V, A, frames, bad)
    points = _batch_points(contacts, ext, kin.positions)
    point = np.broadcast_to(_resolve_point(at, kin.com), (N, 3)).copy()
    with np.errstate(invalid="ignore"):
        force, moment = newton_euler_residual_arrays(
            np.where(bad[:, None, None], 0.0, layout),
            points,
            kin.com,
            kin.momentum_rate,
            mass=robot.mass,
            gravity=robot.gravity_vector,
            at=point,
        )
    force[bad] = np.nan
    moment[bad] = np.nan
    return Residual(force, moment, point, robot.weight, bad, dict(sorted(reasons.items())))


def _residuals_in_chunks(
    robot: Robot,
    Q: Array,
    v: Any,
    a: Any,
    contacts: Sequence[Contact],
    wrenches: Any,
    at: Any,
    ext: list[ExternalWrench],
    workers: int,
    chunk_size: int,
) -> Residual:
    from ..parallel import ChunkFailure, Shared, chunk_bounds, run_chunks

    V, A = np.asarray(v, dtype=float), np.asarray(a, dtype=float)
    N = Q.shape[0]
    W = stack_contact_wrenches(contacts, wrenches, N)
    chunks = []
    shared = {"q": Q, "v": V, "a": A, "W": W}
    for s, e in chunk_bounds(N, chunk_size):
        part = [
            ExternalWrench(x.name, x.wrench[s:e], None if x.point is None else x.point[s:e])
            for x in ext
        ]
        args = (*(Shared(k, s, e) for k in "qva"), contacts, Shared("W", s, e), at, part)
        chunks.append(((s, e), args))
    results = run_chunks(robot, _residuals, chunks, workers, shared=shared)
    force, moment, point = (np.full((N, 3), np.nan) for _ in range(3))
    flagged = np.zeros(N, dtype=bool)
    reasons: dict[int, str] = {}
    for ((s, e), _), res in zip(chunks, results, strict=True):
        if isinstance(res, ChunkFailure):
            flagged[s:e] = True
            reasons.update({i: f"chunk {s}..{e - 1} failed: {res.error}" for i in range(s, e)})
            continue
        force[s:e], moment[s:e], point[s:e], flagged[s:e] = (
            res.force,
            res.moment,
            res.point,
            res.flagged,
        )
        reasons.update({s + i: why for i, why in res.reasons.items()})
    return Residual(force, moment, point, robot.weight, flagged, dict(sorted(reasons.items())))
