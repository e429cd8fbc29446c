"""Newton-Euler wrench balance: gravito-inertial and contact wrenches, residuals, CoP, ZMP.

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
(3,) for a :class:`PointContact`, ``(f, tau)`` (6,) for a :class:`SurfaceContact`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .contacts import Contact, SurfaceContact
from .errors import StateError
from .robot import Robot
from .spatial import Wrench, cross

__all__ = [
    "gravito_inertial_wrench",
    "contact_wrench",
    "newton_euler_residual",
    "newton_euler_residuals",
    "Residual",
    "ResidualBatch",
    "centre_of_pressure",
    "cop_in_contact_frame",
    "CentreOfPressure",
    "zmp",
    "joint_reaction_wrenches",
    "stack_contact_wrenches",
    "wrenches_in_log_layout",
    "wrench_sum",
    "newton_euler_residual_arrays",
    "kinematics_batch",
    "residual_from_kinematics",
    "KinematicsBatch",
]

Array = NDArray[np.float64]
#: Known external wrenches (a push measured elsewhere): Wrench values (single samples), or
#: for batches pairs ``(wrenches (N, 6) world axes, points (N, 3) or (3,))``.
ExternalWrenches = Sequence[Any]


# --- stacking -----------------------------------------------------------------------------


def stack_contact_wrenches(contacts: Sequence[Contact], wrenches: Any, n: int | None = None) -> Array:
    """Contact wrenches as one array of shape (N, sum of sizes), in contact order.

    ``wrenches`` is either that array already (or (sum,) for one sample), or a sequence
    aligned with ``contacts`` of arrays (N, 3) / (3,) for point contacts and (N, 6) / (6,) for
    surface contacts, or a mapping from contact name to such arrays.
    """
    sizes = [c.size for c in contacts]
    total = sum(sizes)
    if isinstance(wrenches, dict):
        missing = [c.name for c in contacts if c.name not in wrenches]
        if missing:
            raise StateError(f"no wrench given for contacts {missing}; given: {sorted(wrenches)}")
        wrenches = [wrenches[c.name] for c in contacts]
    if isinstance(wrenches, (list, tuple)):
        if len(wrenches) != len(contacts):
            raise StateError(f"{len(wrenches)} wrenches given for {len(contacts)} contacts")
        parts = []
        for c, w in zip(contacts, wrenches):
            w = np.asarray(w, dtype=float)
            w2 = w.reshape(1, -1) if w.ndim == 1 else w
            if w2.ndim != 2 or w2.shape[1] != c.size:
                kind = "a force (3,)" if c.size == 3 else "a wrench (f, tau) (6,)"
                raise StateError(f"contact {c.name!r} takes {kind} per sample, got shape {w.shape}")
            parts.append(w2)
        lengths = {p.shape[0] for p in parts}
        if len(lengths) > 1:
            raise StateError(f"contact wrenches have different numbers of samples: {sorted(lengths)}")
        stacked = np.concatenate(parts, axis=1) if parts else np.zeros((n or 1, 0))
    else:
        stacked = np.asarray(wrenches, dtype=float)
        if stacked.ndim == 1:
            stacked = stacked.reshape(1, -1)
        if stacked.ndim != 2 or stacked.shape[1] != total:
            raise StateError(
                f"stacked contact wrenches must have shape (N, {total}) for contact sizes {sizes}, "
                f"got {np.shape(wrenches)}"
            )
    if n is not None and stacked.shape[0] != n:
        raise StateError(f"contact wrenches have {stacked.shape[0]} samples, states have {n}")
    return stacked


def wrenches_in_log_layout(contacts: Sequence[Contact], W: Array) -> Array:
    """Stacked contact wrenches (N, sum of sizes) as the log layout (N, k, 6).

    Point contacts' forces get a zero moment about their own point.
    """
    N = W.shape[0]
    out = np.zeros((N, len(contacts), 6))
    col = 0
    for j, c in enumerate(contacts):
        out[:, j, : c.size] = W[:, col : col + c.size]
        col += c.size
    return out


def _external_layout(external: ExternalWrenches, N: int) -> tuple[Array, Array]:
    """Known external wrenches as log-layout arrays: wrenches (N, e, 6), points (N, e, 3)."""
    wrenches, points = np.zeros((N, len(external), 6)), np.zeros((N, len(external), 3))
    for j, item in enumerate(external):
        if isinstance(item, Wrench):
            w, p = item.as_vector(), item.point
        else:
            w, p = (np.asarray(x, dtype=float) for x in item)
        wrenches[:, j] = w
        points[:, j] = p
    return wrenches, points


def wrench_sum(wrenches: Array, points: Array, at: Array) -> tuple[Array, Array]:
    """Total force and moment about ``at`` of wrenches in the log layout (Varignon).

    ``wrenches`` (..., k, 6) world axes, each about its point in ``points`` (..., k, 3);
    ``at`` (..., 3). Returns force (..., 3) [N] and moment (..., 3) [N m].
    """
    f = wrenches[..., :3]
    moment = (wrenches[..., 3:] + cross(points - at[..., None, :], f)).sum(axis=-2)
    return f.sum(axis=-2), moment


def newton_euler_residual_arrays(
    wrenches: Array,
    points: Array,
    com: Array,
    momentum_rate: Array,
    *,
    mass: float,
    gravity: Array,
    at: Array | None = None,
) -> tuple[Array, Array]:
    """The Newton-Euler residual ``r = w_c + w_gi`` of N samples: the one place it is written.

    Every check, estimate and diagnosis in wholebody computes its residual here.

    .. math::

        f_r = \\sum_i f_i + m g - \\dot P, \\qquad
        \\tau_r(A) = \\sum_i \\left(\\tau_i + (p_i - p_A) \\times f_i\\right)
                   - \\dot L_G + (p_G - p_A) \\times (m g - \\dot P)

    Parameters
    ----------
    wrenches : ndarray, shape (N, k, 6)
        ``(f, tau)`` of every wrench acting on the robot from outside (contacts and known
        external wrenches alike), world axes, each about its own point [N, N m].
    points : ndarray, shape (N, k, 3)
        The point each wrench is taken about, world coordinates [m].
    com : ndarray, shape (N, 3)
        Centre of mass ``p_G`` [m].
    momentum_rate : ndarray, shape (N, 6)
        ``(dP/dt, dL_G/dt)`` at the CoM, world axes [N, N m].
    mass : float
        Total mass [kg]; a diagnosis may pass a scaled one.
    gravity : ndarray, shape (3,)
        Gravity acceleration, world axes [m/s^2].
    at : ndarray, shape (N, 3) or (3,), optional
        The point ``p_A`` to take moments about; the CoM by default.

    Returns
    -------
    force : ndarray, shape (N, 3)
        ``f_r``, world axes [N].
    moment : ndarray, shape (N, 3)
        ``tau_r`` about ``at``, world axes [N m].
    """
    f_gi = mass * np.asarray(gravity, dtype=float) - momentum_rate[:, :3]
    if at is None:
        force, moment = wrench_sum(wrenches, points, com)
        return force + f_gi, moment - momentum_rate[:, 3:]
    at = np.broadcast_to(np.asarray(at, dtype=float), com.shape)
    force, moment = wrench_sum(wrenches, points, at)
    return force + f_gi, moment + cross(com - at, f_gi) - momentum_rate[:, 3:]


# --- results ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Residual:
    """Newton-Euler residual of one sample, ``r = w_c + w_gi`` about :attr:`point`.

    Attributes
    ----------
    wrench : Wrench
        The residual wrench (world axes) [N, N m].
    weight : float
        ``m |g|`` [N], the scale of the relative figures.
    """

    wrench: Wrench
    weight: float

    @property
    def point(self) -> Array:
        return self.wrench.point

    @property
    def force(self) -> float:
        """``|f_r|`` [N]."""
        return float(np.linalg.norm(self.wrench.force))

    @property
    def moment(self) -> float:
        """``|tau_r|`` about :attr:`point` [N m]."""
        return float(np.linalg.norm(self.wrench.moment))

    @property
    def force_relative(self) -> float:
        """``|f_r| / (m |g|)``, dimensionless."""
        return self.force / self.weight

    @property
    def moment_relative(self) -> float:
        """``|tau_r| / (m |g|)`` [m]: metres of centre-of-pressure error."""
        return self.moment / self.weight


@dataclass(frozen=True)
class ResidualBatch:
    """Newton-Euler residuals of N samples; bad samples are flagged, not dropped.

    Attributes
    ----------
    force : ndarray, shape (N, 3)
        Residual force, world axes [N]; NaN on flagged rows.
    moment : ndarray, shape (N, 3)
        Residual moment about ``point``, world axes [N m]; NaN on flagged rows.
    point : ndarray, shape (N, 3)
        Where the moments are taken [m] (the CoM by default).
    weight : float
        ``m |g|`` [N].
    flagged : ndarray of bool, shape (N,)
        Samples that could not be checked (non-finite values, bad quaternion).
    reasons : dict of int to str
        Why each flagged sample was flagged.
    """

    force: Array
    moment: Array
    point: Array
    weight: float
    flagged: Array
    reasons: dict[int, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return self.force.shape[0]

    @property
    def force_norm(self) -> Array:
        """``|f_r|`` per sample [N], shape (N,)."""
        return np.linalg.norm(self.force, axis=1)

    @property
    def moment_norm(self) -> Array:
        """``|tau_r|`` per sample [N m], shape (N,)."""
        return np.linalg.norm(self.moment, axis=1)

    @property
    def force_relative(self) -> Array:
        return self.force_norm / self.weight

    @property
    def moment_relative(self) -> Array:
        """Moment residual over weight [m], shape (N,)."""
        return self.moment_norm / self.weight

    @property
    def n_checked(self) -> int:
        return int((~self.flagged).sum())

    def __getitem__(self, i: int) -> Residual:
        return Residual(Wrench(self.force[i], self.moment[i], self.point[i]), self.weight)


# --- single samples -----------------------------------------------------------------------


def gravito_inertial_wrench(
    robot: Robot, q: ArrayLike, v: ArrayLike, a: ArrayLike, *, at: str | ArrayLike = "com"
) -> Wrench:
    """The gravito-inertial wrench ``(m g - dP/dt, -dL_G/dt)`` moved to ``at``.

    Parameters
    ----------
    at : "com", "origin" or array of shape (3,)
        The point to take the moment about: the CoM (default), the world origin, or a point
        in world coordinates [m].

    Returns
    -------
    Wrench
        World axes [N, N m]. The contacts must supply its opposite.
    """
    q, v, a = robot.check_q(q), robot.check_v(v), robot.check_v(a, "a")
    com, rate, _ = robot.centroidal_pass(q, v, a, [])
    w = Wrench(robot.mass * robot.gravity_vector - rate[:3], -rate[3:], com)
    return w.shift_to(_resolve_point(at, com))


def contact_wrench(
    robot: Robot,
    q: ArrayLike,
    contacts: Sequence[Contact],
    wrenches: Any,
    *,
    at: str | ArrayLike = "com",
    external: ExternalWrenches = (),
) -> Wrench:
    """Sum of the contact wrenches (and known external ones) about ``at``.

    Parameters
    ----------
    wrenches : sequence or mapping
        Per contact, world axes at the contact frame origin: (3,) forces for point contacts,
        (6,) ``(f, tau)`` for surface contacts; see :func:`stack_contact_wrenches`.
    at : "com", "origin" or array of shape (3,)
        Point to take moments about.
    external : sequence of Wrench
        Known external wrenches (a push), each carrying its point.
    """
    q = robot.check_q(q)
    W = stack_contact_wrenches(contacts, wrenches, 1)
    _check_finite(W, "contact wrenches")
    com, _, positions = robot.centroidal_pass(
        q, np.zeros(robot.nv), np.zeros(robot.nv), [robot.frame_id(c.frame) for c in contacts]
    )
    point = _resolve_point(at, com)
    ext_w, ext_p = _external_layout(external, 1)
    wrenches = np.concatenate([wrenches_in_log_layout(contacts, W), ext_w], axis=1)[0]
    points = np.concatenate([positions[None], ext_p], axis=1)[0]
    force, moment = wrench_sum(wrenches, points, point)
    return Wrench(force, moment, point)


def newton_euler_residual(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    contacts: Sequence[Contact],
    wrenches: Any,
    *,
    at: str | ArrayLike = "com",
    external: ExternalWrenches = (),
) -> Residual:
    """The Newton-Euler residual ``w_c + w_gi`` of one sample, about ``at``.

    Bad input raises :class:`StateError`; the batch form :func:`newton_euler_residuals`
    flags bad samples instead.
    """
    q, v, a = robot.check_q(q), robot.check_v(v), robot.check_v(a, "a")
    W = stack_contact_wrenches(contacts, wrenches, 1)
    _check_finite(W, "contact wrenches")
    batch = newton_euler_residuals(robot, q[None], v[None], a[None], contacts, W, at=at, external=[
        (e.as_vector(), e.point) if isinstance(e, Wrench) else e for e in external
    ])
    return batch[0]


# --- batches ------------------------------------------------------------------------------


def newton_euler_residuals(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    contacts: Sequence[Contact],
    wrenches: Any,
    *,
    at: str | ArrayLike = "com",
    external: ExternalWrenches = (),
    known_wrenches: Mapping[str, ArrayLike] | None = None,
    workers: int = 1,
    chunk_size: int = 20_000,
) -> ResidualBatch:
    """Newton-Euler residuals of N samples: one Pinocchio pass per sample, algebra batched.

    Parameters
    ----------
    q : array, shape (N, nq)
    v, a : arrays, shape (N, nv)
    contacts : sequence of PointContact or SurfaceContact
    wrenches : array (N, sum of sizes), or per contact (N, 3) / (N, 6)
        World axes at each contact frame's origin [N, N m].
    at : "com", "origin" or array of shape (3,)
        Point to take moments about (per sample for "com").
    external : sequence of (wrenches (N, 6), points (N, 3) or (3,))
        Known external wrenches, world axes, about the given points.
    known_wrenches : mapping of frame name to array (N, 6), optional
        Known external wrenches, world axes, at the named frames' origins (a push measured
        at the torso); their positions come from the same Pinocchio pass.
    workers : int
        Processes sharing the samples, in chunks of ``chunk_size``; the result is identical
        to ``workers=1``, and a chunk that fails flags its samples with the error.

    Returns
    -------
    ResidualBatch
        Samples with non-finite values or a bad quaternion are flagged (NaN residual) and
        listed with the reason; the others are computed.
    """
    if workers > 1:
        return _residuals_in_chunks(robot, q, v, a, contacts, wrenches, at, external, known_wrenches,
                                    workers, chunk_size)
    arrays, bad, reasons = robot.check_batch(q=q, v=v, a=a)
    Q, V, A = arrays["q"], arrays["v"], arrays["a"]
    N = Q.shape[0]
    W = stack_contact_wrenches(contacts, wrenches, N)
    known = {f: np.broadcast_to(np.asarray(w, dtype=float), (N, 6)) for f, w in (known_wrenches or {}).items()}
    for what, arr in [("contact wrenches", W)] + [(f"known wrench on {f!r}", w) for f, w in known.items()]:
        w_bad = ~np.isfinite(arr.reshape(N, -1)).all(axis=1) & ~bad
        for i in np.flatnonzero(w_bad):
            reasons[int(i)] = f"{what} have non-finite values"
        bad = bad | w_bad
    frames = [c.frame for c in contacts] + list(known)
    kin = kinematics_batch(robot, Q, V, A, frames, bad)
    k = len(contacts)
    external = list(external) + [(w, kin.positions[:, k + j]) for j, w in enumerate(known.values())]
    force, moment, point = residual_from_kinematics(robot, contacts, W, kin, at, external)
    force[bad] = np.nan
    moment[bad] = np.nan
    return ResidualBatch(force, moment, point, robot.weight, bad, dict(sorted(reasons.items())))


def _residual_chunk(robot, q, v, a, contacts, W, at, external, known):
    return newton_euler_residuals(robot, q, v, a, contacts, W, at=at, external=external, known_wrenches=known)


def _residuals_in_chunks(robot, q, v, a, contacts, wrenches, at, external, known_wrenches, workers, chunk_size):
    from .parallel import ChunkFailure, Shared, chunk_bounds, run_chunks

    Q, V, A = (np.asarray(x, dtype=float) for x in (q, v, a))
    N = Q.shape[0]
    W = stack_contact_wrenches(contacts, wrenches, N)

    def part(x, s, e):
        x = np.asarray(x, dtype=float)
        return x[s:e] if x.ndim >= 1 and x.shape[0] == N and x.ndim > 1 else x

    chunks = []
    shared = {"q": Q, "v": V, "a": A, "W": W}
    for s, e in chunk_bounds(N, chunk_size):
        ext = [(part(w, s, e), part(p, s, e)) for w, p in external]
        known = {f: part(w, s, e) for f, w in (known_wrenches or {}).items()}
        chunks.append(((s, e), (Shared("q", s, e), Shared("v", s, e), Shared("a", s, e), contacts,
                                Shared("W", s, e), at, ext, known)))
    results = run_chunks(robot, _residual_chunk, chunks, workers, shared=shared)
    force, moment, point = np.full((N, 3), np.nan), np.full((N, 3), np.nan), np.full((N, 3), np.nan)
    flagged = np.zeros(N, dtype=bool)
    reasons: dict[int, str] = {}
    for ((s, e), _), res in zip(chunks, results):
        if isinstance(res, ChunkFailure):
            flagged[s:e] = True
            reasons.update({i: f"chunk {s}..{e - 1} failed: {res.error}" for i in range(s, e)})
            continue
        force[s:e], moment[s:e], point[s:e], flagged[s:e] = res.force, res.moment, res.point, res.flagged
        reasons.update({s + i: why for i, why in res.reasons.items()})
    return ResidualBatch(force, moment, point, robot.weight, flagged, dict(sorted(reasons.items())))


@dataclass(frozen=True)
class KinematicsBatch:
    """What the Pinocchio pass gives per sample (NaN on skipped rows).

    Shapes: ``com`` (N, 3), ``momentum_rate`` (N, 6) ``(dP/dt, dL_G/dt)``, ``positions``
    (N, k, 3) frame origins, ``rotations`` (N, k, 3, 3) or None. World axes, SI units.
    """

    com: Array
    momentum_rate: Array
    positions: Array
    rotations: Array | None


def kinematics_batch(
    robot: Robot, Q: Array, V: Array, A: Array, frames: Sequence[str], skip: Array, *,
    rotations: bool = False, progress: bool = False,
) -> KinematicsBatch:
    """One :meth:`Robot.centroidal_pass` per sample not in ``skip`` (checked arrays)."""
    N = Q.shape[0]
    frame_ids = [robot.frame_id(f) for f in frames]
    com = np.full((N, 3), np.nan)
    rate = np.full((N, 6), np.nan)
    positions = np.full((N, len(frames), 3), np.nan)
    rots = np.full((N, len(frames), 3, 3), np.nan) if rotations else None
    rows: Any = np.flatnonzero(~skip).tolist()
    if progress:
        from ._progress import progress_bar

        rows = progress_bar(rows, desc="checking", total=len(rows))
    for i in rows:
        robot.centroidal_pass(Q[i], V[i], A[i], frame_ids, out=(com[i], rate[i], positions[i]),
                              rotations=None if rots is None else rots[i])
    return KinematicsBatch(com, rate, positions, rots)


def residual_from_kinematics(
    robot: Robot,
    contacts: Sequence[Contact],
    W: Array,
    kin: KinematicsBatch,
    at: str | ArrayLike = "com",
    external: ExternalWrenches = (),
) -> tuple[Array, Array, Array]:
    """Residual force (N, 3), moment (N, 3) about ``at`` and the points (N, 3), from the
    stacked contact wrenches ``W`` and the kinematics of :func:`kinematics_batch` (whose
    first frames are the contacts'), through :func:`newton_euler_residual_arrays`."""
    N = W.shape[0]
    point = np.broadcast_to(_resolve_point(at, kin.com), (N, 3)).copy()
    ext_w, ext_p = _external_layout(external, N)
    wrenches = np.concatenate([wrenches_in_log_layout(contacts, W), ext_w], axis=1)
    points = np.concatenate([kin.positions[:, : len(contacts)], ext_p], axis=1)
    force, moment = newton_euler_residual_arrays(
        wrenches, points, kin.com, kin.momentum_rate, mass=robot.mass, gravity=robot.gravity_vector,
        at=None if isinstance(at, str) and at == "com" else point,
    )
    return force, moment, point


# --- centre of pressure and ZMP -------------------------------------------------------------


@dataclass(frozen=True)
class CentreOfPressure:
    """Centre of pressure of a surface contact.

    Attributes
    ----------
    local : ndarray, shape (2,)
        ``(x, y)`` in the contact frame [m]; NaN when the normal force is not positive.
    world : ndarray, shape (3,)
        The same point in world coordinates [m].
    normal_force : float
        ``f_z`` in the contact frame [N].
    """

    local: Array
    world: Array
    normal_force: float


def cop_in_contact_frame(wrench_local: ArrayLike) -> Array:
    """Centre of pressure ``(-tau_y / f_z, tau_x / f_z)`` of wrenches in a contact frame.

    ``wrench_local`` has shape (..., 6): ``(f, tau)`` about the contact frame's origin in its
    own axes (z normal). Returns (..., 2) [m], NaN where ``f_z <= 0`` (no pressure).
    """
    w = np.asarray(wrench_local, dtype=float)
    fz = w[..., 2:3]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(fz > 0, np.stack([-w[..., 4], w[..., 3]], axis=-1) / fz, np.nan)


def centre_of_pressure(robot: Robot, q: ArrayLike, contact: SurfaceContact, wrench: ArrayLike) -> CentreOfPressure:
    """Centre of pressure of a surface contact's wrench.

    ``wrench`` is ``(f, tau)`` in world axes at the contact frame's origin; in the contact
    frame (z normal) the CoP is ``(-tau_y / f_z, tau_x / f_z)``.
    """
    placement = robot.frame_placement(q, contact.frame)
    w = np.asarray(wrench, dtype=float)
    if w.shape != (6,):
        raise StateError(f"a surface contact wrench must have shape (6,), got {w.shape}")
    R = placement.rotation
    w_local = np.concatenate([R.T @ w[:3], R.T @ w[3:]])
    local = cop_in_contact_frame(w_local)
    world = placement.translation + R @ np.r_[local, 0.0]
    return CentreOfPressure(local, world, float(w_local[2]))


def zmp(wrench: Wrench, *, height: float = 0.0) -> Array:
    """Zero-moment point of a wrench on the horizontal plane ``z = height``.

    The point of the plane about which the wrench's horizontal moment vanishes:
    ``x = -tau_y / f_z``, ``y = tau_x / f_z`` with the moment taken about ``(0, 0, height)``.
    For the contact wrench this is the robot's ZMP (centre of pressure of all contacts on
    flat ground); pass ``-gravito_inertial_wrench(...)`` for the ZMP of the motion.

    Returns
    -------
    ndarray, shape (3,)
        World coordinates [m]; NaN when ``f_z <= 0``.
    """
    w = wrench.shift_to([0.0, 0.0, height])
    fz = w.force[2]
    if fz <= 0:
        return np.full(3, np.nan)
    return np.array([-w.moment[1] / fz, w.moment[0] / fz, height])


# --- joint reaction wrenches ----------------------------------------------------------------


def joint_reaction_wrenches(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    contacts: Sequence[Contact] = (),
    wrenches: Any = (),
    *,
    external: dict[str, Any] | None = None,
) -> dict[str, Wrench]:
    """The wrench each joint transmits from its parent to its child subtree (seed 000).

    Includes what the actuator and the joint structure carry together (the net joint force
    and moment of biomechanics). With a floating base, the entry ``"root_joint"`` is what the
    world would have to apply to the base: zero for consistent contact wrenches.

    Returns
    -------
    dict of str to Wrench
        Joint name -> wrench in world axes about the joint centre [N, N m].
    """
    ext: dict[str, Any] = dict(external or {})
    if contacts:
        W = stack_contact_wrenches(contacts, wrenches, 1)[0]
        col = 0
        for c in contacts:
            w = W[col : col + c.size]
            col += c.size
            w6 = np.r_[w, np.zeros(3)] if c.size == 3 else w
            if c.frame in ext:
                ext[c.frame] = np.asarray(ext[c.frame], dtype=float) + w6
            else:
                ext[c.frame] = w6
    values, centres = robot.joint_wrenches(q, v, a, ext)
    names = [robot.model.names[j] for j in range(1, robot.model.njoints)]
    return {n: Wrench(w[:3], w[3:], p) for n, w, p in zip(names, values, centres)}


# --- helpers --------------------------------------------------------------------------------


def _resolve_point(at: str | ArrayLike, com: Array) -> Array:
    if isinstance(at, str):
        if at == "com":
            return com
        if at == "origin":
            return np.zeros_like(com)
        raise ValueError(f"at must be 'com', 'origin' or a point (3,), got {at!r}")
    p = np.asarray(at, dtype=float)
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise ValueError(f"at must be a finite point of shape (3,), got {at!r}")
    return p


def _check_finite(x: Array, what: str) -> None:
    if not np.all(np.isfinite(x)):
        raise StateError(f"{what} have non-finite values")

