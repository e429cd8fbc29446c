"""The cone formulas: exact Coulomb cone, k-face pyramids, the closed-form contact wrench
cone of rectangles and its generators; the single-contact checks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..contacts import PointContact, SurfaceContact
from ..errors import ContactError, InvalidArgumentError

__all__ = [
    "ConeCheck",
    "check_friction_cone",
    "friction_pyramid",
    "contact_wrench_cone",
    "CWC_ROW_NAMES",
    "VIOLATION_NAMES",
    "PULLING",
    "SLIPPING",
    "wrench_cone_generators",
    "WrenchConeCheck",
    "check_wrench_cone",
    "in_world_axes",
    "normal_rotation",
    "point_contact_pyramid",
    "exact_cone_values",
    "wrench_cone_margin",
    "pyramid_edges",
]

Array = NDArray[np.float64]
BoolArray = NDArray[np.bool_]


def normal_rotation(normal: ArrayLike) -> Array:
    """A rotation whose z axis is ``normal`` (x, y completing a right-handed frame)."""
    n = np.asarray(normal, dtype=float)
    n = n / np.linalg.norm(n)
    helper = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, n)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(n, x), n])


# --- the two formulas every check uses ------------------------------------------------------


def exact_cone_values(f: Array, mu: float, normal: Array) -> tuple[Array, Array, Array]:
    """Margin ``mu f_n - |f_t|`` [N], utilisation and ``f_n`` of forces (..., 3) about a unit
    ``normal`` in the same axes: the one place the exact Coulomb cone is written."""
    fn = f @ normal
    ft = np.linalg.norm(f - fn[..., None] * normal, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(fn > 0, ft / (mu * fn), np.where(ft > 0, np.inf, 0.0))
    return mu * fn - ft, util, fn


def wrench_cone_margin(
    w_local: Array, A: Array, row_norms: Array
) -> tuple[Array, NDArray[np.intp]]:
    """Distance of wrenches (N, 6) in the contact frame to the nearest face of ``A`` (rows
    normalised; positive inside) and the index of that face: the one place it is written.
    NaN wrenches give a NaN margin."""
    values = w_local @ A.T / row_norms
    worst = np.argmax(np.nan_to_num(values, nan=-np.inf), axis=-1)
    return -np.take_along_axis(values, worst[..., None], axis=-1)[..., 0], worst


# --- point contacts -----------------------------------------------------------------------


@dataclass(frozen=True)
class ConeCheck:
    """Exact Coulomb-cone check of forces, shape (N,) each.

    Attributes
    ----------
    inside : ndarray of bool
        ``f_n >= -tol`` and ``mu f_n - |f_t| >= -tol``.
    margin : ndarray
        ``mu f_n - |f_t|`` [N]: positive inside, negative outside.
    utilisation : ndarray
        ``|f_t| / (mu f_n)``; ``inf`` when ``f_n <= 0`` and ``f_t != 0``, 0 for a zero force.
    normal_force : ndarray
        ``f_n`` [N].
    """

    inside: BoolArray
    margin: Array
    utilisation: Array
    normal_force: Array


def check_friction_cone(
    forces: ArrayLike, mu: float, normal: ArrayLike = (0.0, 0.0, 1.0), *, tol: float = 1e-9
) -> ConeCheck:
    """Exact Coulomb friction-cone check (the formula of :meth:`ContactSet.check`).

    Parameters
    ----------
    forces : array, shape (3,) or (N, 3)
        Forces in the same axes as ``normal`` [N].
    mu : float
        Friction coefficient.
    normal : array, shape (3,)
        Contact normal pointing into the body that receives the force.
    tol : float
        Slack [N] allowed on both inequalities, for rounding.

    Examples
    --------
    Two forces against a floor with ``mu = 0.5``: the first inside the cone, the second
    sliding (tangential 5 N over a normal 1 N).

    >>> from wholebody.friction import check_friction_cone
    >>> check = check_friction_cone([[1.0, 0.0, 10.0], [5.0, 0.0, 1.0]], mu=0.5)
    >>> check.inside
    array([ True, False])
    >>> check.margin  # mu f_n - |f_t| [N]
    array([ 4. , -4.5])
    """
    f = np.atleast_2d(np.asarray(forces, dtype=float))
    n = np.asarray(normal, dtype=float)
    margin, util, fn = exact_cone_values(f, mu, n / np.linalg.norm(n))
    return ConeCheck((fn >= -tol) & (margin >= -tol), margin, util, fn)


def friction_pyramid(mu: float, k: int = 4, *, inner: bool = True) -> Array:
    """Face matrix of a k-face friction pyramid in the contact frame (z normal), shape (k, 3).

    ``A f <= 0`` inside. Faces are ``cos(phi_i) f_x + sin(phi_i) f_y <= r mu f_z`` with
    ``phi_i = 2 pi i / k`` and ``r = cos(pi / k)`` for the inner (inscribed) pyramid, ``r = 1``
    for the outer (circumscribed) one. For ``k = 4`` the inner pyramid is
    ``|f_x|, |f_y| <= mu / sqrt(2) f_z``. The faces imply ``f_z >= 0``.
    """
    if k < 3:
        raise ContactError(f"a friction pyramid needs at least 3 faces, got k={k}")
    if not mu > 0:
        raise ContactError(f"mu must be positive, got {mu}")
    phi = 2 * np.pi * np.arange(k) / k
    r = np.cos(np.pi / k) if inner else 1.0
    A = np.column_stack([np.cos(phi), np.sin(phi), -r * mu * np.ones(k)])
    A[np.abs(A) < 1e-15] = 0.0
    return A


def pyramid_edges(mu: float, k: int, inner: bool) -> Array:
    """Edges of :func:`friction_pyramid` as columns, shape (3, k), contact frame (z normal):
    ``(rho cos theta_i, rho sin theta_i, 1)`` with ``theta_i = 2 pi (i + 1/2) / k`` and
    ``rho = mu`` (inner) or ``mu / cos(pi / k)`` (outer)."""
    theta = 2 * np.pi * (np.arange(k) + 0.5) / k
    rho = mu if inner else mu / np.cos(np.pi / k)
    return np.vstack([rho * np.cos(theta), rho * np.sin(theta), np.ones(k)])


# --- rectangular surface contacts -------------------------------------------------------------

#: What each of the 16 rows of :func:`contact_wrench_cone` says when it is violated.
CWC_ROW_NAMES = (
    "slip along +x (f_x > mu f_z)",
    "slip along -x (f_x < -mu f_z)",
    "slip along +y (f_y > mu f_z)",
    "slip along -y (f_y < -mu f_z)",
    "CoP outside the sole along +y (tau_x > Y f_z)",
    "CoP outside the sole along -y (tau_x < -Y f_z)",
    "CoP outside the sole along -x (tau_y > X f_z)",
    "CoP outside the sole along +x (tau_y < -X f_z)",
    "yaw torque too low (tau_z < tau_min), row ++",
    "yaw torque too low (tau_z < tau_min), row +-",
    "yaw torque too low (tau_z < tau_min), row -+",
    "yaw torque too low (tau_z < tau_min), row --",
    "yaw torque too high (tau_z > tau_max), row ++",
    "yaw torque too high (tau_z > tau_max), row +-",
    "yaw torque too high (tau_z > tau_max), row -+",
    "yaw torque too high (tau_z > tau_max), row --",
)
#: Codes of :attr:`ConeEvaluation.worst`: 0-15 the wrench-cone rows, then the point contacts'.
VIOLATION_NAMES = (*CWC_ROW_NAMES, "pulling (negative normal force)", "slipping (|f_t| > mu f_n)")
#: Code of a point contact pulled (``f_n < 0``) and of one slipping (``|f_t| > mu f_n``).
PULLING, SLIPPING = len(CWC_ROW_NAMES), len(CWC_ROW_NAMES) + 1


def contact_wrench_cone(
    half_length: float, half_width: float, mu: float, center: ArrayLike = (0.0, 0.0)
) -> Array:
    """The closed-form contact wrench cone of a rectangle, shape (16, 6), contact frame.

    Rows ``A w <= 0`` on the wrench ``w = (f, tau)`` at the rectangle's centre, in the contact
    frame (z normal, x along the half-length ``X``, y along the half-width ``Y``):

    .. math::

        |f_x| \\le \\mu f_z, \\quad |f_y| \\le \\mu f_z, \\quad
        |\\tau_x| \\le Y f_z, \\quad |\\tau_y| \\le X f_z, \\quad
        \\tau_{min} \\le \\tau_z \\le \\tau_{max}

    with ``tau_min = -mu (X + Y) f_z + |Y f_x - mu tau_x| + |X f_y - mu tau_y|`` and
    ``tau_max = mu (X + Y) f_z - |Y f_x + mu tau_x| - |X f_y + mu tau_y|`` (Caron, Pham and
    Nakamura, ICRA 2015). Row meanings are in :data:`CWC_ROW_NAMES`.

    An asymmetric sole, a rectangle centred at ``center = (c_x, c_y)`` in the contact frame
    (not at its origin), gets the rows on the wrench about the **contact frame's origin**
    ``w_O = (f, tau_O)``: the moment about the centre is ``tau_C = tau_O - c x f`` with
    ``c = (c_x, c_y, 0)``, so ``A_O = [A_f - A_tau [c]_x, A_tau]`` (still 16 linear rows;
    ``[c]_x`` the cross-product matrix). With the default ``(0, 0)`` the two are the same.
    """
    X, Y = float(half_length), float(half_width)
    if not (X > 0 and Y > 0 and mu > 0):
        raise ContactError(f"half_length, half_width and mu must be positive, got {X}, {Y}, {mu}")
    rows = [
        [1, 0, -mu, 0, 0, 0],
        [-1, 0, -mu, 0, 0, 0],
        [0, 1, -mu, 0, 0, 0],
        [0, -1, -mu, 0, 0, 0],
        [0, 0, -Y, 1, 0, 0],
        [0, 0, -Y, -1, 0, 0],
        [0, 0, -X, 0, 1, 0],
        [0, 0, -X, 0, -1, 0],
    ]
    signs = [(1, 1), (1, -1), (-1, 1), (-1, -1)]
    # tau_min <= tau_z:  s1 (Y f_x - mu tau_x) + s2 (X f_y - mu tau_y) - mu (X + Y) f_z - tau_z <= 0
    for s1, s2 in signs:
        rows.append([s1 * Y, s2 * X, -mu * (X + Y), -s1 * mu, -s2 * mu, -1])
    # tau_z <= tau_max:  s1 (Y f_x + mu tau_x) + s2 (X f_y + mu tau_y) - mu (X + Y) f_z + tau_z <= 0
    for s1, s2 in signs:
        rows.append([s1 * Y, s2 * X, -mu * (X + Y), s1 * mu, s2 * mu, 1])
    A = np.array(rows, dtype=float)
    c = _center(center)
    if c[0] or c[1]:
        A[:, :3] -= A[:, 3:] @ _skew(c)
    return A


def _center(center: ArrayLike) -> Array:
    """``(c_x, c_y, 0)`` from a sole centre ``(c_x, c_y)`` [m]."""
    c = np.asarray(center, dtype=float)
    if c.shape != (2,) or not np.all(np.isfinite(c)):
        raise ContactError(f"center must be 2 finite numbers (c_x, c_y) [m], got {center!r}")
    return np.array([c[0], c[1], 0.0])


def _skew(c: Array) -> Array:
    return np.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]])


def wrench_cone_generators(
    half_length: float, half_width: float, mu: float, center: ArrayLike = (0.0, 0.0)
) -> Array:
    """Span form of the same cone: 16 generator wrenches as columns, shape (6, 16).

    Each is a pyramid edge ``(±mu, ±mu, 1)`` at one corner (the rectangle centred at
    ``center`` in the contact frame), as a wrench about the contact frame's origin; the cone
    is ``{G lambda : lambda >= 0}``.
    """
    X, Y = float(half_length), float(half_width)
    c = _center(center)
    corners = [(X, Y), (-X, Y), (-X, -Y), (X, -Y)]
    edges = [(mu, mu), (mu, -mu), (-mu, mu), (-mu, -mu)]
    cols = []
    for cx, cy in corners:
        p = np.array([cx, cy, 0.0]) + c
        for ex, ey in edges:
            e = np.array([ex, ey, 1.0])
            cols.append(np.r_[e, np.cross(p, e)])
    return np.array(cols).T


@dataclass(frozen=True)
class WrenchConeCheck:
    """Membership of wrenches in a contact wrench cone, per sample (N,).

    Attributes
    ----------
    inside : ndarray of bool
    margin : ndarray
        ``min_i -(A_i w) / |A_i|``: the distance to the nearest face plane in wrench space,
        positive inside (mixes N and N m as the rows do).
    worst_row : ndarray of int
        Index of the most violated (or least satisfied) row.
    """

    inside: BoolArray
    margin: Array
    worst_row: NDArray[np.intp]

    def violations(self) -> list[str]:
        """The name of the worst row of every sample that is outside."""
        pairs = zip(self.worst_row, self.inside, strict=True)
        return [CWC_ROW_NAMES[r] for r, ok in pairs if not ok]


def check_wrench_cone(
    contact: SurfaceContact, wrenches_local: ArrayLike, *, tol: float = 1e-9
) -> WrenchConeCheck:
    """Check wrenches (6,) or (N, 6) about the contact frame's origin (the sole's centre
    unless it has a ``center`` offset), in the contact frame's axes, against its wrench cone
    (the formula of :meth:`ContactSet.check`)."""
    A = contact_wrench_cone(contact.half_length, contact.half_width, contact.mu, contact.center)
    w = np.atleast_2d(np.asarray(wrenches_local, dtype=float))
    margin, worst = wrench_cone_margin(w, A, np.linalg.norm(A, axis=1))
    return WrenchConeCheck(margin >= -tol, margin, worst)


def in_world_axes(A_local: Array, rotation: ArrayLike) -> Array:
    """Face matrix in world axes from one in the contact frame's axes.

    ``rotation`` is the contact frame's orientation in the world (``oMf.rotation``); a
    3-column matrix acts on forces, a 6-column one on wrenches ``(f, tau)``.
    """
    R = np.asarray(rotation, dtype=float)
    if A_local.shape[1] == 3:
        return A_local @ R.T
    if A_local.shape[1] == 6:
        return np.hstack([A_local[:, :3] @ R.T, A_local[:, 3:] @ R.T])
    raise InvalidArgumentError(f"a face matrix has 3 or 6 columns, got {A_local.shape[1]}")


def point_contact_pyramid(contact: PointContact, k: int = 4, *, inner: bool = True) -> Array:
    """Face matrix of a point contact's pyramid in its frame's axes (any normal), shape (k, 3)."""
    A = friction_pyramid(contact.mu, k, inner=inner)
    return in_world_axes(A, normal_rotation(contact.normal))
