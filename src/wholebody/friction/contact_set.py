"""A set of contacts and their cones, built once: stacked face matrices in world axes updated
in place, generators, the Newton-Euler matrix, and the vectorised check of logged wrenches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided
from numpy.typing import ArrayLike, NDArray

from ..balance.cop import cop_in_contact_frame
from ..contacts import Contact, PointContact, SurfaceContact
from ..errors import InvalidArgumentError
from .cones import (
    CWC_ROW_NAMES,
    PULLING,
    SLIPPING,
    VIOLATION_NAMES,
    contact_wrench_cone,
    exact_cone_values,
    friction_pyramid,
    in_world_axes,
    normal_rotation,
    pyramid_edges,
    wrench_cone_generators,
    wrench_cone_margin,
)

__all__ = ["ContactSet", "ConeEvaluation", "cone_matrix"]

Array = NDArray[np.float64]
IntArray = NDArray[np.int16]
BoolArray = NDArray[np.bool_]


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
        K_parts, _offset, j = [], 0, 0
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
        """Block-diagonal face matrix ``G`` in world axes, ``G x <= 0`` inside, (n_rows, n).

        Parameters
        ----------
        rotations : array, shape (k, 3, 3)
            Each contact frame's orientation (world from contact, ``oMf.rotation``).
        out : ndarray, shape (n_rows, n), optional
            A C-contiguous float buffer to write into; passing the same buffer again updates
            only the blocks (a few microseconds).
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


def cone_matrix(
    contacts: Sequence[Contact], rotations: ArrayLike, *, pyramid_faces: int = 4
) -> Array:
    """Block-diagonal face matrix ``G`` of all contacts in world axes: ``G x <= 0`` inside.

    A one-off :meth:`ContactSet.face_matrix`: point contacts use the inner pyramid with
    ``pyramid_faces`` faces around their normal, soles the 16-row contact wrench cone;
    ``rotations`` (k, 3, 3) world from contact. Build a :class:`ContactSet` once to update
    it per sample in a few microseconds.
    """
    return ContactSet(contacts, pyramid_faces=pyramid_faces).face_matrix(rotations)
