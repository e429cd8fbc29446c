"""Where contacts are against the ground: per sample and contact, the height of its lowest
point along the ground normal, its tilt against the normal and where its centre of pressure
is on it (:func:`sole_placement`); the geometry the placement check
(:mod:`wholebody.conventions.placement`) and its causes
(:mod:`wholebody.diagnosis.causes_placement`) read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..contacts import Contact, SurfaceContact

if TYPE_CHECKING:
    from ..conventions import Ground

__all__ = ["TILT_TOLERANCE", "ROLL_SHARE", "Soles", "SolePlacement", "sole_placement"]

Array = NDArray[np.float64]

#: A loaded sole is tilted beyond this angle against the ground normal [rad] (2 degrees: a
#: sole on soft contacts or a rubber pad settles within a fraction of a degree) ...
TILT_TOLERANCE = 0.035

#: ... with its centre of pressure more than this share of its span above its lowest point
#: (a quarter: a sole rolling on an edge carries its load on that edge).
ROLL_SHARE = 0.25


@dataclass(frozen=True)
class Soles:
    """What the placement formula needs of the contacts, fixed for a log.

    Attributes
    ----------
    normals : ndarray, shape (k, 3)
        Each contact's ground normal, world axes (unit; upward).
    corners : ndarray, shape (k, 4, 3)
        Sole corners in each contact's frame [m] (point contacts: the origin, four times).
    axes : ndarray, shape (k, 3)
        The contact's own normal in its frame (a sole's z axis).
    surface : ndarray of bool, shape (k,)
    level : ndarray, shape (k,)
        The declared ground plane's elevation along each contact's normal [m] (NaN: not
        declared, estimated from the loaded contacts).
    up : ndarray, shape (3,)
        Against gravity (unit).
    """

    normals: Array
    corners: Array
    axes: Array
    surface: NDArray[np.bool_]
    level: Array
    up: Array

    @classmethod
    def of(cls, contacts: Sequence[Contact], ground: Ground | None, gravity: Array) -> Soles:
        """The contacts' soles; normals from each contact's ``ground_normal``, else the
        declared ground's, else against gravity."""
        up = -np.asarray(gravity, dtype=float) / max(float(np.linalg.norm(gravity)), 1e-300)
        k = len(contacts)
        normals, corners, axes = np.empty((k, 3)), np.zeros((k, 4, 3)), np.empty((k, 3))
        level = np.full(k, np.nan)
        for j, c in enumerate(contacts):
            n = c.ground_normal if c.ground_normal is not None else None
            n = n if n is not None else (ground.normal if ground is not None else up)
            normals[j] = n
            if ground is not None:
                level[j] = float(np.array([0.0, 0.0, ground.height]) @ n)
            if isinstance(c, SurfaceContact):
                cx, cy = c.center
                X, Y = c.half_length, c.half_width
                corners[j] = [[cx + sx * X, cy + sy * Y, 0.0] for sx in (1, -1) for sy in (1, -1)]
                axes[j] = (0.0, 0.0, 1.0)
            else:
                axes[j] = c.normal
        surface = np.array([isinstance(c, SurfaceContact) for c in contacts], dtype=bool)
        return cls(normals, corners, axes, surface, level, up)


@dataclass
class SolePlacement:
    """Per sample and contact (n, k): ``low`` the elevation of the lowest point along the
    ground normal [m] (its height once the ground's level is taken off), ``lift`` the centre
    of pressure above it [m] and ``span`` the sole's highest corner above its lowest [m]
    (NaN for point contacts or without normal force), ``tilt`` [rad], ``normal_force`` along
    the ground normal [N]."""

    low: Array
    lift: Array
    span: Array
    tilt: Array
    normal_force: Array


def sole_placement(
    soles: Soles, positions: Array, rotations: Array, wrenches: Array
) -> SolePlacement:
    """The placement of each contact (:class:`SolePlacement`) from its frame's placement.

    Parameters
    ----------
    soles : Soles
    positions : ndarray, shape (n, k, 3)
        Contact frame origins, world [m].
    rotations : ndarray, shape (n, k, 3, 3)
        World from contact frame.
    wrenches : ndarray, shape (n, k, 6)
        Contact wrenches, world axes at the frame origins [N, N m].
    """
    n_up = soles.normals  # (k, 3)
    # Elevation of the corners along each contact's normal: (p + R c) . n.
    Rn = np.einsum("nkab,ka->nkb", rotations, n_up)  # R^T n: the normal in the contact frame
    base = np.einsum("nka,ka->nk", positions, n_up)
    corner = base[..., None] + np.einsum("kca,nka->nkc", soles.corners, Rn)
    low = corner.min(axis=-1)
    span = np.where(soles.surface, corner.max(axis=-1) - low, np.nan)
    cos = np.einsum("nka,ka->nk", Rn, soles.axes)
    tilt = np.arccos(np.clip(cos, -1.0, 1.0))
    # The centre of pressure in the sole's plane, from the wrench in the sole's axes.
    RT = np.swapaxes(rotations, -1, -2)
    f = np.einsum("nkab,nkb->nka", RT, wrenches[..., :3])
    m = np.einsum("nkab,nkb->nka", RT, wrenches[..., 3:])
    with np.errstate(divide="ignore", invalid="ignore"):
        cop = np.stack([-m[..., 1] / f[..., 2], m[..., 0] / f[..., 2]], axis=-1)
    cop_up = base + np.einsum("nka,nka->nk", cop, Rn[..., :2])
    lift = np.where(soles.surface, cop_up - low, np.nan)
    normal_force = np.einsum("nka,ka->nk", wrenches[..., :3], n_up)
    return SolePlacement(low, lift, span, tilt, normal_force)
