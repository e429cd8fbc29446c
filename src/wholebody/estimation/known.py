"""Known external wrenches and active-contact masks for estimation, in the library's one
vocabulary (``external_wrenches``, see :data:`wholebody.balance.newton_euler.ExternalWrenches`), and
which contacts' wrenches the equations determine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..balance.newton_euler import parse_external_wrenches
from ..contacts import Contact
from ..errors import InvalidArgumentError, StateError
from ..robot.core import Robot
from ..spatial import cross

__all__ = [
    "KnownWrenches",
    "prepare_known",
    "NO_KNOWN",
    "check_active",
    "identifiable_contacts",
    "IDENTIFIABLE_TOL",
]

Array = NDArray[np.float64]
#: A contact is identifiable when the null space of the equations has no component larger
#: than this (in the projector's entries) on its columns.
IDENTIFIABLE_TOL = 1e-6


@dataclass(frozen=True)
class KnownWrenches:
    """Known external wrenches of N samples, ready for the per-sample assembly.

    Attributes
    ----------
    names : tuple of str
        Frame names or labels, in the order given.
    wrench : ndarray, shape (N, e, 6)
        ``(f, tau)`` world axes [N, N m], about ``point`` or, where that is NaN, about the
        named frame's origin.
    point : ndarray, shape (N, e, 3)
        World coordinates [m]; NaN where the wrench is taken at the frame origin.
    frames : tuple of str
        The names that are frames of the robot, in order: the estimation pass places them
        (after the contacts).
    framed : ndarray of bool, shape (e,)
        Whether each entry names a frame.
    """

    names: tuple[str, ...]
    wrench: Array
    point: Array
    frames: tuple[str, ...]
    framed: NDArray[np.bool_]

    def __len__(self) -> int:
        return len(self.names)

    @property
    def frame_positions_index(self) -> NDArray[np.intp]:
        """For each entry, its row among :attr:`frames` (0 for entries that are not frames)."""
        return np.maximum(np.cumsum(self.framed) - 1, 0)

    def mapping(self, i: int) -> dict[str, Any]:
        """Sample ``i`` as an ``external_wrenches`` mapping (pairs where a point is given)."""
        out: dict[str, Any] = {}
        for j, name in enumerate(self.names):
            w, p = self.wrench[i, j], self.point[i, j]
            out[name] = w.copy() if np.isnan(p[0]) else (w.copy(), p.copy())
        return out

    def nonfinite_rows(self) -> dict[int, str]:
        """Samples whose known wrenches or points are non-finite, with the reason."""
        out: dict[int, str] = {}
        for j, name in enumerate(self.names):
            bad = ~np.isfinite(self.wrench[:, j]).all(axis=1)
            if not self.framed[j]:
                bad |= ~np.isfinite(self.point[:, j]).all(axis=1)
            for i in np.flatnonzero(bad).tolist():
                out.setdefault(i, f"external wrench {name!r} has non-finite values")
        return out

    def sample(self, i: int, frame_positions: Array) -> tuple[Array, Array]:
        """Sample ``i``: wrenches (e, 6) and the points they are about (e, 3), world.

        ``frame_positions`` (len(frames), 3) are the framed entries' origins from the pass.
        A wrench given at a point on a framed entry stays about that point.
        """
        if not self.names:
            return np.zeros((0, 6)), np.zeros((0, 3))
        points = self.point[i].copy()
        at_origin = np.isnan(points[:, 0])
        if at_origin.any():
            points[at_origin] = frame_positions[self.frame_positions_index[at_origin]]
        return self.wrench[i], points

    def at_frame_origins(self, i: int, frame_positions: Array) -> Array:
        """Sample ``i``'s wrenches shifted to their frames' origins (e, 6) (every entry must
        name a frame: full-dynamics mode needs the body each acts on)."""
        w, points = self.sample(i, frame_positions)
        out = w.copy()
        out[:, 3:] += cross(points - frame_positions, w[:, :3])
        return out


#: No known external wrenches, for any number of samples (arrays of zero size).
NO_KNOWN = KnownWrenches((), np.zeros((0, 0, 6)), np.zeros((0, 0, 3)), (), np.zeros(0, dtype=bool))


def prepare_known(
    robot: Robot,
    external_wrenches: Mapping[str, Any] | None,
    N: int,
    *,
    full: bool,
    finite: bool = True,
) -> KnownWrenches:
    """Parse ``external_wrenches`` for N samples (:data:`NO_KNOWN` when None).

    Raises
    ------
    InvalidArgumentError
        Not a mapping, or (full-dynamics mode) a label that is not a frame: the generalized
        force of a wrench depends on the body it acts on.
    StateError
        Bad shapes, or non-finite values (when ``finite``; a batch flags those samples).
    """
    if external_wrenches is None:
        return NO_KNOWN
    items = parse_external_wrenches(external_wrenches, N)
    frame_names = set(robot.frame_names)
    e = len(items)
    wrench = np.zeros((N, e, 6))
    point = np.full((N, e, 3), np.nan)
    framed = np.zeros(e, dtype=bool)
    for j, item in enumerate(items):
        framed[j] = item.name in frame_names
        if not framed[j]:
            if item.point is None:
                robot.frame_id(item.name)  # raises FrameNotFoundError with the frames
            if full:
                raise InvalidArgumentError(
                    f"external wrench {item.name!r} is given at a point but is not a frame of "
                    "the robot: full-dynamics estimation needs the body it acts on; name it "
                    "by a frame of that body"
                )
        wrench[:, j] = item.wrench
        if item.point is not None:
            point[:, j] = item.point
    if finite and not np.all(np.isfinite(wrench)):
        bad = [items[j].name for j in range(e) if not np.isfinite(wrench[:, j]).all()]
        raise StateError(f"external wrenches {bad} have non-finite values")
    return KnownWrenches(
        tuple(i.name for i in items),
        wrench,
        point,
        tuple(i.name for i, f in zip(items, framed, strict=True) if f),
        framed,
    )


def check_active(
    active: ArrayLike | None, contacts: Sequence[Contact], N: int | None
) -> NDArray[np.bool_] | None:
    """The active mask as bool (k,) (``N`` None) or (N, k); None stays None."""
    if active is None:
        return None
    mask = np.asarray(active)
    k = len(contacts)
    want = (k,) if N is None else (N, k)
    if N is not None and mask.shape == (k,):
        mask = np.broadcast_to(mask, want)
    if mask.shape != want:
        names = [c.name for c in contacts]
        raise InvalidArgumentError(
            f"active must be a bool array of shape {want} (one column per contact {names}), "
            f"got shape {mask.shape}"
        )
    if mask.dtype != np.bool_:
        if not np.isin(mask, (0, 1)).all():
            raise InvalidArgumentError(
                "active must hold booleans (True: the contact may carry "
                "a wrench; False: its wrench is zero)"
            )
        mask = mask.astype(bool)
    return np.ascontiguousarray(mask, dtype=bool)


def identifiable_contacts(
    row_basis: Array, cols: Sequence[slice], active: NDArray[np.bool_] | None = None
) -> NDArray[np.bool_]:
    """Which contacts' wrenches the equations determine.

    Parameters
    ----------
    row_basis : ndarray, shape (r, n)
        Orthonormal basis of the equation matrix's row space (``V_r^T`` of its SVD), columns
        of inactive contacts zero.
    cols : sequence of slice
        Each contact's columns.
    active : ndarray of bool, shape (k,), optional

    Returns
    -------
    ndarray of bool, shape (k,)
        Contact ``j`` is identifiable when the null-space projector ``I - V_r V_r^T``
        vanishes on its columns (no motion of its wrench leaves the equations unchanged).
        Inactive contacts are fixed to zero: identifiable.
    """
    out = np.ones(len(cols), dtype=bool)
    for j, c in enumerate(cols):
        if active is not None and not active[j]:
            continue
        block = row_basis[:, c]
        proj = np.eye(c.stop - c.start) - block.T @ block
        out[j] = float(np.abs(proj).max()) <= IDENTIFIABLE_TOL
    return out


def row_basis(matrix: Array, rtol: float) -> tuple[Array, int]:
    """``V_r^T`` (r, n) and the rank r of ``matrix`` (singular values above ``rtol`` times the
    largest)."""
    if matrix.size == 0:
        return np.zeros((0, matrix.shape[1])), 0
    _, sv, Vt = np.linalg.svd(matrix, full_matrices=False)
    rank = int(np.sum(sv > sv[0] * rtol)) if sv.size and sv[0] > 0 else 0
    return Vt[:rank], rank
