"""The Newton-Euler residual over arrays: the one home of the wrench-balance algebra.

Every check, estimate and diagnosis computes its residual with
:func:`newton_euler_residual_arrays` on the **log layout**: wrenches of shape (N, k, 6), ``(f,
tau)`` in world axes, each about its own point (N, k, 3). Contacts and known external wrenches
are entries of the same layout. The single-sample and batch API is in :mod:`wholebody.balance`.
The arithmetic itself is written once, component by component, in :func:`residual_parts` and
:func:`wrench_sum_parts` (below): on columns of shape (N,) for a batch, on Python floats for
one sample (the single calls), the same operations in the same order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..contacts import Contact
from ..errors import InvalidArgumentError, StateError
from ..robot import real_array
from ..spatial import Wrench

__all__ = [
    "stack_contact_wrenches",
    "wrenches_in_log_layout",
    "wrench_sum",
    "newton_euler_residual_arrays",
    "ExternalWrenches",
    "ExternalWrench",
    "parse_external_wrenches",
    "MAX_WRENCH_RELATIVE",
    "beyond_physical_magnitude",
    "check_sample_wrenches",
    "Residual",
]


def wrench_sum_parts(wrenches: Any, points: Any, at: Any) -> tuple[Any, ...] | None:
    """Varignon's sum, component by component: the one place it is written.

    ``wrenches`` is a sequence of k 6-sequences ``(f, tau)``, ``points`` of k 3-sequences,
    ``at`` a 3-sequence. Every component is either a Python float (one sample: no array
    machinery at all) or an array of one common shape (a batch, e.g. (N,)): the same
    arithmetic, in the same order, serves both. Returns ``(f_x, f_y, f_z, tau_x, tau_y,
    tau_z)``, the total force and the moment about ``at``; None when k = 0.
    """
    ax, ay, az = at
    first, fx, fy, fz, tx, ty, tz = True, *((None,) * 6)
    for (f1, f2, f3, t1, t2, t3), (p1, p2, p3) in zip(wrenches, points, strict=True):
        l1, l2, l3 = p1 - ax, p2 - ay, p3 - az  # lever arm p_i - p_A
        m1 = t1 + (l2 * f3 - l3 * f2)  # tau_i + (p_i - p_A) x f_i
        m2 = t2 + (l3 * f1 - l1 * f3)
        m3 = t3 + (l1 * f2 - l2 * f1)
        if first:  # new objects only (never += : batch components are views of the input)
            first, fx, fy, fz, tx, ty, tz = False, f1, f2, f3, m1, m2, m3
        else:
            fx, fy, fz = fx + f1, fy + f2, fz + f3
            tx, ty, tz = tx + m1, ty + m2, tz + m3
    return None if first else (fx, fy, fz, tx, ty, tz)


def residual_parts(
    wrenches: Any, points: Any, com: Any, rate: Any, mg: Any, at: Any | None
) -> tuple[tuple[Any, Any, Any], tuple[Any, Any, Any]]:
    """The Newton-Euler residual, component by component: the one place it is written.

    Components as in :func:`wrench_sum_parts` (floats for one sample, arrays for a batch);
    ``rate`` is the 6 components of ``(dP/dt, dL_G/dt)``, ``mg`` the 3 of ``m g``, ``at``
    None for the CoM. Returns the force and moment components of ``w_c + w_gi`` about ``at``.
    """
    about = com if at is None else at
    parts = wrench_sum_parts(wrenches, points, about)
    if parts is None:
        parts = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    fx, fy, fz, tx, ty, tz = parts
    g1, g2, g3 = mg[0] - rate[0], mg[1] - rate[1], mg[2] - rate[2]  # f_gi = m g - dP/dt
    force = (fx + g1, fy + g2, fz + g3)
    if at is None:
        return force, (tx - rate[3], ty - rate[4], tz - rate[5])
    l1, l2, l3 = com[0] - at[0], com[1] - at[1], com[2] - at[2]  # p_G - p_A
    return force, (
        tx + (l2 * g3 - l3 * g2) - rate[3],
        ty + (l3 * g1 - l1 * g3) - rate[4],
        tz + (l1 * g2 - l2 * g1) - rate[5],
    )


Array = NDArray[np.float64]


# --- stacking -----------------------------------------------------------------------------


def stack_contact_wrenches(
    contacts: Sequence[Contact], wrenches: Any, n: int | None = None
) -> Array:
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
        for c, w in zip(contacts, wrenches, strict=True):
            w = real_array(w, f"the wrench of contact {c.name!r}")
            w2 = w.reshape(1, -1) if w.ndim == 1 else w
            if w2.ndim != 2 or w2.shape[1] != c.size:
                kind = "a force (3,)" if c.size == 3 else "a wrench (f, tau) (6,)"
                raise StateError(f"contact {c.name!r} takes {kind} per sample, got shape {w.shape}")
            parts.append(w2)
        lengths = {p.shape[0] for p in parts}
        if len(lengths) > 1:
            raise StateError(
                f"contact wrenches have different numbers of samples: {sorted(lengths)}"
            )
        stacked = np.concatenate(parts, axis=1) if parts else np.zeros((n or 1, 0))
    else:
        stacked = real_array(wrenches, "contact wrenches")
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


def _columns(x: Array, n: int) -> list[Array]:
    """The last-axis components of ``x`` (..., n) as n views (..., ) (no copies)."""
    return [x[..., c] for c in range(n)]


def _batch_parts(wrenches: Array, points: Array) -> tuple[list[list[Array]], list[list[Array]]]:
    k = wrenches.shape[-2]
    return (
        [_columns(wrenches[..., j, :], 6) for j in range(k)],
        [_columns(points[..., j, :], 3) for j in range(k)],
    )


def wrench_sum(wrenches: Array, points: Array, at: Array) -> tuple[Array, Array]:
    """Total force and moment about ``at`` of wrenches in the log layout (Varignon).

    ``wrenches`` (..., k, 6) world axes, each about its point in ``points`` (..., k, 3);
    ``at`` (..., 3). Returns force (..., 3) [N] and moment (..., 3) [N m]. One sample
    (``wrenches`` of shape (k, 6), ``at`` (3,)) is summed on Python floats, a batch on
    arrays: the same arithmetic (:func:`wrench_sum_parts`).
    """
    wrenches = np.asarray(wrenches, dtype=float)
    points = np.asarray(points, dtype=float)
    at = np.asarray(at, dtype=float)
    if wrenches.ndim == 2 and points.ndim == 2 and at.ndim == 1:  # one sample
        parts = wrench_sum_parts(wrenches.tolist(), points.tolist(), at.tolist())
        if parts is None:
            return np.zeros(3), np.zeros(3)
        return np.array(parts[:3]), np.array(parts[3:])
    lead = np.broadcast_shapes(wrenches.shape[:-2], points.shape[:-2], at.shape[:-1])
    W, P = _batch_parts(wrenches, points)
    parts = wrench_sum_parts(W, P, _columns(at, 3))
    if parts is None:
        return np.zeros(lead + (3,)), np.zeros(lead + (3,))
    full = [np.broadcast_to(x, lead) for x in parts]
    return np.stack(full[:3], axis=-1), np.stack(full[3:], axis=-1)


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
    wrenches : ndarray, shape (N, k, 6), or (k, 6) for one sample
        ``(f, tau)`` of every wrench acting on the robot from outside (contacts and known
        external wrenches alike), world axes, each about its own point [N, N m].
    points : ndarray, shape (N, k, 3), or (k, 3)
        The point each wrench is taken about, world coordinates [m].
    com : ndarray, shape (N, 3), or (3,)
        Centre of mass ``p_G`` [m].
    momentum_rate : ndarray, shape (N, 6), or (6,)
        ``(dP/dt, dL_G/dt)`` at the CoM, world axes [N, N m].
    mass : float
        Total mass [kg]; a diagnosis may pass a scaled one.
    gravity : ndarray, shape (3,)
        Gravity acceleration, world axes [m/s^2].
    at : ndarray, shape (N, 3) or (3,), optional
        The point ``p_A`` to take moments about; the CoM by default.

    Returns
    -------
    force : ndarray, shape (N, 3), or (3,)
        ``f_r``, world axes [N].
    moment : ndarray, shape (N, 3), or (3,)
        ``tau_r`` about ``at``, world axes [N m].

    Notes
    -----
    One sample runs :func:`residual_parts` on Python floats, a batch on arrays of shape (N,).
    """
    gx, gy, gz = np.asarray(gravity, dtype=float).tolist()
    mg = [mass * gx, mass * gy, mass * gz]  # Python floats: the same products as numpy's
    if wrenches.ndim == 2:  # one sample
        force, moment = residual_parts(
            wrenches.tolist(),
            points.tolist(),
            com.tolist(),
            momentum_rate.tolist(),
            mg,
            None if at is None else np.asarray(at, dtype=float).tolist(),
        )
        return np.array(force), np.array(moment)
    W, P = _batch_parts(wrenches, points)
    A = None
    if at is not None:
        A = _columns(np.broadcast_to(np.asarray(at, dtype=float), com.shape), 3)
    force, moment = residual_parts(W, P, _columns(com, 3), _columns(momentum_rate, 6), mg, A)
    return np.stack(force, axis=-1), np.stack(moment, axis=-1)


# --- external wrenches ------------------------------------------------------------------------

#: Known external wrenches (a push measured elsewhere), by name. Each value is, in world axes:
#: a wrench ``(f, tau)`` (6,) or (N, 6), or a force (3,) or (N, 3), about the origin of the
#: frame the name gives; or a :class:`Wrench` (one sample), or a pair ``(wrench or force,
#: point)`` with the point (3,) or (N, 3) in world coordinates, and then the name is a label.
ExternalWrenches = Mapping[str, Any]


@dataclass(frozen=True)
class ExternalWrench:
    """One known external wrench of N samples, parsed by :func:`parse_external_wrenches`.

    Attributes
    ----------
    name : str
        A frame name (when ``point`` is None) or a label.
    wrench : ndarray, shape (N, 6)
        ``(f, tau)`` world axes [N, N m], about ``point`` or the frame origin.
    point : ndarray, shape (N, 3), or None
        World coordinates [m]; None for the named frame's origin (placed by the caller's
        Pinocchio pass).
    """

    name: str
    wrench: Array
    point: Array | None


def _as_wrench_rows(value: Any, N: int, name: str) -> Array:
    w = real_array(value, f"external wrench {name!r}")
    if w.shape in ((3,), (N, 3)):
        w = np.concatenate([np.broadcast_to(w, (N, 3)), np.zeros((N, 3))], axis=1)
    elif w.shape in ((6,), (N, 6)):
        w = np.broadcast_to(w, (N, 6))
    else:
        raise StateError(
            f"external wrench {name!r} must have shape (6,) (f, tau) or (3,) (a force), or "
            f"({N}, 6) / ({N}, 3) per sample, got {w.shape}"
        )
    return w


def parse_external_wrenches(
    external_wrenches: ExternalWrenches | None, N: int
) -> list[ExternalWrench]:
    """Parse known external wrenches.

    Parameters
    ----------
    external_wrenches : mapping, optional
        See :data:`ExternalWrenches`.
    N : int
        Number of samples; constant values are broadcast.

    Returns
    -------
    list of ExternalWrench
        In the mapping's order.
    """
    if external_wrenches is not None and not isinstance(external_wrenches, Mapping):
        raise InvalidArgumentError(
            "external_wrenches must be a mapping {frame or label: wrench}, got "
            f"{type(external_wrenches).__name__}"
        )
    items = []
    for name, value in (external_wrenches or {}).items():
        if not isinstance(name, str):
            raise InvalidArgumentError(f"external wrench keys are frame names (str), got {name!r}")
        if isinstance(value, Wrench):
            items.append(
                ExternalWrench(
                    name,
                    np.broadcast_to(value.as_vector(), (N, 6)),
                    np.broadcast_to(value.point, (N, 3)),
                )
            )
        elif isinstance(value, tuple):
            if len(value) != 2:
                raise StateError(
                    f"external wrench {name!r}: a pair (wrench, point) has 2 items, got "
                    f"{len(value)}"
                )
            point = np.asarray(value[1], dtype=float)
            if point.shape not in ((3,), (N, 3)):
                raise StateError(
                    f"external wrench {name!r}: point must have shape (3,) or ({N}, 3), got "
                    f"{point.shape}"
                )
            items.append(
                ExternalWrench(
                    name, _as_wrench_rows(value[0], N, name), np.broadcast_to(point, (N, 3))
                )
            )
        else:
            items.append(ExternalWrench(name, _as_wrench_rows(value, N, name), None))
    return items


# --- physical limits --------------------------------------------------------------------------

#: Wrenches beyond this many times the weight (forces, [N]) or the weight times one metre
#: (moments, [N m]) are not physical: a diverged simulation or a unit error. Samples that
#: carry one are flagged before any algebra (which could overflow).
MAX_WRENCH_RELATIVE = 1e3


def beyond_physical_magnitude(wrenches: Array, weight: float) -> NDArray[np.bool_]:
    """Samples whose wrenches exceed :data:`MAX_WRENCH_RELATIVE` times the weight.

    ``wrenches`` has shape (N, k, 6) (or (N, m)); NaN entries do not count. Returns (N,).
    """
    limit = MAX_WRENCH_RELATIVE * weight
    with np.errstate(invalid="ignore"):
        beyond = (np.abs(wrenches.reshape(wrenches.shape[0], -1)) > limit).any(axis=1)
    return np.asarray(beyond, dtype=bool)


def check_sample_wrenches(wrenches: Array, what: str, weight: float) -> None:
    """Raise :class:`StateError` when one sample's wrenches are non-finite or beyond
    :data:`MAX_WRENCH_RELATIVE` times the weight (``what`` names them in the message)."""
    limit = MAX_WRENCH_RELATIVE * weight
    flat = wrenches.ravel()
    if flat @ flat <= limit * limit:  # False for NaN, inf and anything large: one product
        return
    if not np.isfinite(flat).all():
        raise StateError(f"{what} have non-finite values")
    biggest = float(np.abs(flat).max(initial=0.0))
    if biggest > limit:
        raise StateError(
            f"{what} reach {biggest:.3g} N (or N m), beyond any physical magnitude "
            f"(limit {MAX_WRENCH_RELATIVE:g} m g = {limit:.3g} N): a diverged simulation or "
            "wrong units?"
        )


# --- results ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Residual:
    """Newton-Euler residual ``r = w_c + w_gi`` of one sample or of N samples.

    The same type for one sample and for a batch (like SciPy's ``Rotation``): for one sample
    the vectors have shape (3,) and the norms are floats; for N samples they have shape
    (N, 3) and (N,), and bad samples are flagged (NaN), never dropped.

    Attributes
    ----------
    force : ndarray, shape (3,) or (N, 3)
        Residual force ``f_r``, world axes [N].
    moment : ndarray, shape (3,) or (N, 3)
        Residual moment about :attr:`point`, world axes [N m].
    point : ndarray, shape (3,) or (N, 3)
        Where the moments are taken, world coordinates [m] (the CoM by default).
    weight : float
        ``m |g|`` [N], the scale of the relative figures.
    flagged : bool or ndarray of bool, shape (N,)
        Samples that could not be checked (non-finite values, bad quaternion, magnitudes
        beyond physical limits); always False for a single sample (bad input raises).
    reasons : dict of int to str
        Why each flagged sample was flagged.
    """

    force: Array
    moment: Array
    point: Array
    weight: float
    flagged: Any = False
    reasons: dict[int, str] = field(default_factory=dict)

    @classmethod
    def _one(cls, force: Array, moment: Array, point: Array, weight: float) -> Residual:
        """One sample's residual from the library's own float arrays of shape (3,), without
        the generated ``__init__`` (the same fields: not flagged, no reasons)."""
        r = object.__new__(cls)
        r.__dict__.update(
            force=force, moment=moment, point=point, weight=weight, flagged=False, reasons={}
        )
        return r

    @property
    def is_batch(self) -> bool:
        """True for N samples, False for one."""
        return self.force.ndim == 2

    def __len__(self) -> int:
        if not self.is_batch:
            raise TypeError("a single-sample Residual has no length")
        return self.force.shape[0]

    def __getitem__(self, i: int) -> Residual:
        """Sample ``i`` of a batch, as a single-sample residual."""
        if not self.is_batch:
            raise TypeError("a single-sample Residual cannot be indexed")
        return Residual(self.force[i], self.moment[i], self.point[i], self.weight)

    @property
    def wrench(self) -> Wrench:
        """The residual wrench of a single sample (world axes, about :attr:`point`)."""
        if self.is_batch:
            raise TypeError("use residual[i].wrench for one sample of a batch")
        return Wrench(self.force, self.moment, self.point)

    @property
    def force_norm(self) -> Any:
        """``|f_r|`` [N]: a float, or shape (N,)."""
        n = np.sqrt(np.einsum("...i,...i->...", self.force, self.force))
        return float(n) if n.ndim == 0 else n

    @property
    def moment_norm(self) -> Any:
        """``|tau_r|`` about :attr:`point` [N m]: a float, or shape (N,)."""
        n = np.sqrt(np.einsum("...i,...i->...", self.moment, self.moment))
        return float(n) if n.ndim == 0 else n

    @property
    def force_relative(self) -> Any:
        """``|f_r| / (m |g|)``, dimensionless: a float, or shape (N,)."""
        return self.force_norm / self.weight

    @property
    def moment_relative(self) -> Any:
        """``|tau_r| / (m |g|)`` [m]: metres of centre-of-pressure error; float or (N,)."""
        return self.moment_norm / self.weight

    @property
    def n_checked(self) -> int:
        """Samples that were checked (not flagged)."""
        return int(np.sum(~np.asarray(self.flagged)))
