"""The friction cones of one contact and of a set of contacts (:class:`ContactSet`); see
:mod:`wholebody.friction`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided
from numpy.typing import ArrayLike, NDArray

from ..balance.cop import cop_in_contact_frame
from ..contacts import Contact, PointContact, SurfaceContact
from ..errors import ContactError, InvalidArgumentError
from ..spatial import skew

__all__ = [
    "ContactSet",
    "ConeEvaluation",
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
        A[:, :3] -= A[:, 3:] @ skew(c)
    return A


def _center(center: ArrayLike) -> Array:
    """``(c_x, c_y, 0)`` from a sole centre ``(c_x, c_y)`` [m]."""
    c = np.asarray(center, dtype=float)
    if c.shape != (2,) or not np.all(np.isfinite(c)):
        raise ContactError(f"center must be 2 finite numbers (c_x, c_y) [m], got {center!r}")
    return np.array([c[0], c[1], 0.0])


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


IntArray = NDArray[np.int16]


# --- a set of contacts ----------------------------------------------------------------------


@dataclass(frozen=True)
class ConeEvaluation:
    """Cone check of N samples of k contacts (:meth:`ContactSet.check`), arrays (N, k).

    Attributes
    ----------
    names : tuple of str
        The contacts, in order (k).
    margin : ndarray, shape (N, k)
        How far inside: point contacts ``mu f_n - |f_t|`` [N] (exact Coulomb cone about
        their normal); soles, the distance to the nearest wrench-cone face with rows
        normalised (mixes N and N m). Negative outside, NaN for a NaN wrench.
    utilisation : ndarray, shape (N, k)
        ``|f_t| / (mu f_n)`` in the contact frame; ``inf`` when ``f_n <= 0`` and
        ``f_t != 0``, 0 for a zero force.
    normal_force : ndarray, shape (N, k)
        ``f_n`` [N] along the contact normal.
    worst : ndarray of int16, shape (N, k)
        The least satisfied face, as an index into :data:`VIOLATION_NAMES`: a sole's
        wrench-cone row (0-15); for point contacts :data:`PULLING` (16) when ``f_n < 0``,
        else :data:`SLIPPING` (17).
    cop : ndarray, shape (N, k, 2)
        Centre of pressure of soles in their own frame [m]; NaN for point contacts and
        where ``f_z <= 0``.
    tol : float
        The tolerance of :attr:`violated` [N or N m].
    violated : ndarray of int16, shape (N, k)
        ``worst`` where ``margin < -tol``, else -1.
    """

    names: tuple[str, ...]
    margin: Array
    utilisation: Array
    normal_force: Array
    worst: IntArray
    cop: Array
    tol: float
    violated: IntArray

    def inside(self, tol: float | None = None) -> BoolArray:
        """``margin >= -tol`` (default: the tolerance of the check), False for NaN, (N, k)."""
        t = self.tol if tol is None else float(tol)
        with np.errstate(invalid="ignore"):
            return self.margin >= -t

    def violation_names(self) -> list[list[str]]:
        """Per sample, ``"contact: reason"`` of each violated contact."""
        return [
            [f"{self.names[j]}: {VIOLATION_NAMES[code]}" for j, code in enumerate(row) if code >= 0]
            for row in self.violated
        ]


class ContactSet:
    """The friction cones of a list of contacts, built once and used everywhere.

    Unknowns ``x`` (length :attr:`n`) are the contact wrenches stacked in contact order,
    world axes at each contact frame's origin: a force (3) per :class:`PointContact`, a
    wrench ``(f, tau)`` (6) per :class:`SurfaceContact`. Point contacts get the inner (or
    outer) ``pyramid_faces``-face pyramid about their normal, soles the 16-row wrench cone.

    Parameters
    ----------
    contacts : sequence of PointContact or SurfaceContact
    pyramid_faces : int, keyword-only
        Faces of the point contacts' pyramids (>= 3).
    inner : bool, keyword-only
        Inscribed pyramids (a force they accept is inside the exact cone) or circumscribed.

    Attributes
    ----------
    contacts, names, sizes : tuples, one entry per contact
    n : int
        Number of unknowns.
    n_rows : int
        Number of face rows.
    cols, rows : tuples of slice
        Each contact's columns of ``x`` and rows of the face matrix.
    row_names : tuple of str
        What each face row says when violated, e.g.
        ``"left_sole: slip along +x (f_x > mu f_z)"``.
    local_faces : tuple of ndarray
        Each contact's face matrix in its contact frame's axes, (16, 6) or (k, 3).
    row_norms : ndarray, shape (n_rows,)
        Euclidean norms of the face rows (rotation leaves them unchanged).
    """

    def __init__(self, contacts: Sequence[Contact], *, pyramid_faces: int = 4, inner: bool = True):
        self.contacts = tuple(contacts)
        if not self.contacts:
            raise InvalidArgumentError("a contact set needs at least one contact")
        for c in self.contacts:
            if not isinstance(c, (PointContact, SurfaceContact)):
                raise InvalidArgumentError(
                    f"contacts must be PointContact or SurfaceContact, got {type(c).__name__}"
                )
        self.names = tuple(c.name for c in self.contacts)
        self.sizes = tuple(c.size for c in self.contacts)
        self.pyramid_faces, self.inner = int(pyramid_faces), bool(inner)
        local, gens, names = [], [], []
        for c in self.contacts:
            if isinstance(c, SurfaceContact):
                sole = (c.half_length, c.half_width, c.mu, c.center)
                local.append(contact_wrench_cone(*sole))
                gens.append(wrench_cone_generators(*sole))
                names += [f"{c.name}: {r}" for r in CWC_ROW_NAMES]
            else:
                N = normal_rotation(c.normal)
                pyramid = friction_pyramid(c.mu, self.pyramid_faces, inner=inner)
                local.append(in_world_axes(pyramid, N))
                gens.append(N @ pyramid_edges(c.mu, self.pyramid_faces, inner))
                names += [
                    f"{c.name}: slip along {360 * i / self.pyramid_faces:g} deg about the "
                    f"normal (pyramid face {i})"
                    for i in range(self.pyramid_faces)
                ]
        self.local_faces, self._local_generators = tuple(local), tuple(gens)
        self.row_names = tuple(names)
        cols, rows, col, row = [], [], 0, 0
        for c, L in zip(self.contacts, local, strict=True):
            cols.append(slice(col, col + c.size))
            rows.append(slice(row, row + L.shape[0]))
            col, row = col + c.size, row + L.shape[0]
        self.cols, self.rows, self.n, self.n_rows = tuple(cols), tuple(rows), col, row
        self.row_norms = np.concatenate([np.linalg.norm(L, axis=1) for L in local])
        self._row_starts = np.array([r.start for r in rows])
        self._local_norms = [np.linalg.norm(L, axis=1) for L in local]
        # Runs of consecutive contacts of the same kind, each written into a strided view of
        # the face matrix. The blocks are linear in the rotations' entries: one product
        # K @ R.ravel() gives every block (rows (j, r, p, c) <- entries R[j, c, i]).
        self._runs: list[tuple[int, int, tuple[int, ...]]] = []
        K_parts, j = [], 0
        while j < len(local):
            end = j + 1
            while end < len(local) and local[end].shape == local[j].shape:
                end += 1
            parts = local[j].shape[1] // 3
            for i in range(j, end):
                Li = local[i].reshape(len(local[i]), parts, 3)
                K = np.zeros((len(Li), parts, 3, len(local), 3, 3))
                for axis in range(3):
                    K[:, :, axis, i, axis, :] = Li
                K_parts.append(K.reshape(-1, 9 * len(local)))
            self._runs.append((j, end, (end - j, len(local[j]), parts, 3)))
            j = end
        self._K = np.vstack(K_parts)
        self._values = np.empty(self._K.shape[0])
        self._out: Array | None = None
        self._views: list[tuple[Array, Array]] = []
        # Flat indices in a (6, n) Newton-Euler matrix of the entries (0,1) (0,2) (1,0)
        # (1,2) (2,0) (2,1) of each contact's skew(d) block (rows 3-5).
        pairs = [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
        self._skew_flat = np.array([(3 + r) * self.n + s.start + c for s in cols for r, c in pairs])

    def __len__(self) -> int:
        return len(self.contacts)

    def __repr__(self) -> str:
        return f"ContactSet({list(self.names)}, n={self.n}, n_rows={self.n_rows})"

    def _rotations(self, rotations: ArrayLike, lead: tuple[int, ...] = ()) -> Array:
        R = np.asarray(rotations, dtype=float)
        if R.shape[len(lead) :] != (len(self), 3, 3) or R.shape[: len(lead)] != lead:
            want = (*lead, len(self), 3, 3)
            raise InvalidArgumentError(
                f"rotations must have shape {want} (one world-from-contact rotation per contact "
                f"{list(self.names)}), got {R.shape}"
            )
        return R

    def _make_views(self, out: Array) -> list[tuple[Array, Array]]:
        views, s, at = [], out.itemsize, 0
        for a, _, shape in self._runs:
            m, rows, parts, _ = shape
            start = self.rows[a].start * self.n + self.cols[a].start
            step = rows * self.n + parts * 3
            view = as_strided(
                out.reshape(-1)[start:],
                shape=shape,
                strides=(step * s, self.n * s, 3 * s, s),
                writeable=True,
            )
            size = m * rows * parts * 3
            views.append((view, self._values[at : at + size].reshape(shape)))
            at += size
        return views

    def face_matrix(self, rotations: ArrayLike, out: Array | None = None) -> Array:
        """Block-diagonal face matrix ``G`` in world axes, ``G x <= 0`` inside, (n_rows, n): point
        contacts' inner (or outer) pyramids about their normal, soles' 16-row wrench cones.

        Parameters
        ----------
        rotations : array, shape (k, 3, 3)
            Each contact frame's orientation (world from contact, ``oMf.rotation``).
        out : ndarray, shape (n_rows, n), optional
            A C-contiguous float buffer to write into; passing the same buffer again updates
            only the blocks.
        """
        R = self._rotations(rotations)
        if out is None or out is not self._out:
            if out is None:
                out = np.zeros((self.n_rows, self.n))
            elif (
                out.shape != (self.n_rows, self.n)
                or out.dtype != np.float64
                or not out.flags.c_contiguous
            ):
                raise InvalidArgumentError(
                    f"out must be a C-contiguous float64 array of shape {(self.n_rows, self.n)}, "
                    f"got {out.dtype} {out.shape}"
                )
            else:
                out[...] = 0.0
            self._out, self._views = out, self._make_views(out)
        np.dot(self._K, R.reshape(-1), out=self._values)
        for view, values in self._views:
            view[...] = values
        return out

    def generators(self, rotations: ArrayLike) -> Array:
        """Span form in world axes, shape (n, n_generators): the cones are
        ``{V lambda : lambda >= 0}`` (block-diagonal; pyramid edges for point contacts, the
        16 corner-edge wrenches for soles, see :func:`wrench_cone_generators`)."""
        R = self._rotations(rotations)
        blocks = []
        for g, Rj in zip(self._local_generators, R, strict=True):
            blocks.append(Rj @ g if g.shape[0] == 3 else np.vstack([Rj @ g[:3], Rj @ g[3:]]))
        V = np.zeros((self.n, sum(b.shape[1] for b in blocks)))
        col = 0
        for b, cols in zip(blocks, self.cols, strict=True):
            V[cols, col : col + b.shape[1]] = b
            col += b.shape[1]
        return V

    def newton_euler_matrix(
        self, positions: ArrayLike, point: ArrayLike, out: Array | None = None
    ) -> Array:
        """``A_ne`` with ``A_ne x`` = total contact wrench about ``point``, shape (6, n).

        The linear-operator form of :func:`wholebody.balance.wrench_sum`: world axes,
        ``positions`` (k, 3) the contact frame origins [m], ``point`` (3,) [m]. ``out``
        (6, n), when given, must hold a previous result: only the lever-arm blocks change.
        """
        if out is None:
            out = np.zeros((6, self.n))
            for c, cols in zip(self.contacts, self.cols, strict=True):
                out[:3, cols.start : cols.start + 3] = np.eye(3)
                if c.size == 6:
                    out[3:, cols.start + 3 : cols.stop] = np.eye(3)
        d = np.asarray(positions, dtype=float) - point  # (k, 3) lever arms
        out.flat[self._skew_flat] = (d @ _SKEW_ENTRIES).ravel()
        return out

    def linear_margins(
        self, x: ArrayLike, *, faces: ArrayLike | None = None, rotations: ArrayLike | None = None
    ) -> Array:
        """Per contact, the distance to the nearest linear face (normalised rows; negative
        outside) of stacked wrenches ``x`` (..., n): the check of a QP's answer against the
        faces it used. Give ``faces`` (the face matrix, (n_rows, n) or (..., n_rows, n)) or
        ``rotations`` ((k, 3, 3) or (..., k, 3, 3)). Returns (..., k) [N or N m]."""
        X = np.asarray(x, dtype=float)
        if (faces is None) == (rotations is None):
            raise InvalidArgumentError("give exactly one of faces= and rotations=")
        if X.shape[-1:] != (self.n,):
            raise InvalidArgumentError(f"x must have shape (..., {self.n}), got {X.shape}")
        if faces is not None:
            values = np.einsum("...rn,...n->...r", np.asarray(faces, dtype=float), X)
        else:
            R = np.asarray(rotations, dtype=float)
            R = self._rotations(R, R.shape[:-3])
            parts = []
            for j, (cols, L) in enumerate(zip(self.cols, self.local_faces, strict=True)):
                Rj = R[..., j, :, :]
                local = np.concatenate(
                    [
                        np.einsum("...ji,...j->...i", Rj, X[..., cols][..., p : p + 3])
                        for p in range(0, cols.stop - cols.start, 3)
                    ],
                    axis=-1,
                )
                parts.append(local @ L.T)
            values = np.concatenate(parts, axis=-1)
        return -np.maximum.reduceat(values / self.row_norms, self._row_starts, axis=-1)

    def check(
        self, wrenches: ArrayLike, rotations: ArrayLike, *, tol: float = 0.0
    ) -> ConeEvaluation:
        """Check logged wrenches against the exact cones, vectorised over samples.

        Parameters
        ----------
        wrenches : array, shape (N, k, 6)
            The log layout: ``(f, tau)`` per contact, world axes at the contact frame's
            origin [N, N m] (point contacts use the force part).
        rotations : array, shape (N, k, 3, 3)
            Contact frame orientations (world from contact).
        tol : float
            Margin below ``-tol`` counts as violated (:attr:`ConeEvaluation.violated`).

        Returns
        -------
        ConeEvaluation
            Point contacts: the exact Coulomb cone about their normal; soles: the
            16-row wrench cone (margins to normalised rows) and their CoP.
        """
        W = np.asarray(wrenches, dtype=float)
        if W.ndim != 3 or W.shape[1:] != (len(self), 6):
            raise InvalidArgumentError(
                f"wrenches must have shape (N, {len(self)}, 6) (the log layout), got {W.shape}"
            )
        R = self._rotations(rotations, W.shape[:1])
        N, k = W.shape[:2]
        local_f = np.einsum("nkji,nkj->nki", R, W[..., :3])
        local_t = np.einsum("nkji,nkj->nki", R, W[..., 3:])
        margin, util, normal = (np.empty((N, k)) for _ in range(3))
        worst = np.empty((N, k), dtype=np.int16)
        cop = np.full((N, k, 2), np.nan)
        for j, c in enumerate(self.contacts):
            fl = local_f[:, j]
            if isinstance(c, SurfaceContact):
                _, util[:, j], normal[:, j] = exact_cone_values(fl, c.mu, _Z)
                w = np.concatenate([fl, local_t[:, j]], axis=1)
                margin[:, j], worst[:, j] = wrench_cone_margin(
                    w, self.local_faces[j], self._local_norms[j]
                )
                # A sole pulled off the ground violates every row: name the cause, not a row.
                worst[:, j] = np.where(normal[:, j] < 0, PULLING, worst[:, j])
                cop[:, j] = cop_in_contact_frame(w)
            else:
                margin[:, j], util[:, j], normal[:, j] = exact_cone_values(fl, c.mu, c.normal)
                worst[:, j] = np.where(normal[:, j] < 0, PULLING, SLIPPING)
        with np.errstate(invalid="ignore"):
            violated = np.where(margin < -tol, worst, -1).astype(np.int16)
        return ConeEvaluation(self.names, margin, util, normal, worst, cop, float(tol), violated)


_Z = np.array([0.0, 0.0, 1.0])


# skew(d) = [[0, -d2, d1], [d2, 0, -d0], [-d1, d0, 0]]: its entries (0,1) (0,2) (1,0)
# (1,2) (2,0) (2,1) are d @ _SKEW_ENTRIES.
_SKEW_ENTRIES = np.array(
    [[0, 0, 0, -1, 0, 1], [0, 1, 0, 0, -1, 0], [-1, 0, 1, 0, 0, 0]], dtype=float
)
