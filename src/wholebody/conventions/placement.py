"""Where loaded contacts are: each loaded contact's height above the ground and, for a surface
contact, its tilt against the ground normal, per sample (``docs/diagnosis.md``, "Contact
placement").

A loaded contact pushes on the ground where it touches it. For a sole that is where its
lowest point is: all of it when the sole is flat on the ground, the edge it turns on when it
rolls (heel strike, toe off). From the contact frame's placement (the check's own pass) and
the logged wrench, per sample and contact:

- ``height``: the signed distance of the contact's lowest point (a sole's lowest corner, a
  point contact's origin) above the ground plane, along the ground normal [m];
- ``tilt``: the angle between the contact's normal (a sole's z axis, a point contact's
  normal) and the ground normal [rad];
- ``lift``: how far above the sole's lowest point its centre of pressure is [m], against the
  sole's ``span`` (its highest corner above its lowest): a sole rolling on an edge carries
  its load there (``lift`` near 0); a sole the model tilts while the load stays inside it
  does not.

A loaded contact (normal force above :data:`~wholebody.conventions.LOAD_SHARE` of the
weight) is

- **off the ground** where ``|height|`` exceeds the ground tolerance
  (:data:`~wholebody.conventions.GROUND_TOLERANCE_FRACTION` of the CoM's height above the
  loaded contacts, as the convention check ``loaded_contacts_on_ground``);
- **tilted** where ``tilt`` exceeds :data:`TILT_TOLERANCE` and ``lift`` exceeds
  :data:`ROLL_SHARE` of ``span`` (its load is not on the edge it would roll on).

A contact is named when such samples are more than
:data:`~wholebody.conventions.MAX_VIOLATION_SHARE` of its loaded samples and last
:data:`~wholebody.conventions.MIN_VIOLATION_TIME` in all (an impact settles in a few ms).

The ground is the one declared (``CheckOptions.ground``, and a contact's ``ground_normal``);
without a declaration, the plane normal to gravity through the median height of the loaded
contacts (a common offset of every contact cannot be seen then).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..contacts import Contact, SurfaceContact
from ._core import (
    GROUND_TOLERANCE_FRACTION,
    LOAD_SHARE,
    MAX_VIOLATION_SHARE,
    MIN_VIOLATION_TIME,
    Ground,
    quiet_empty_slices,
)

__all__ = [
    "TILT_TOLERANCE",
    "ROLL_SHARE",
    "Soles",
    "SolePlacement",
    "sole_placement",
    "PlacementCheck",
    "placement_check",
]

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


@dataclass
class PlacementCheck:
    """The placement of a log's loaded contacts (:func:`placement_check`).

    Attributes
    ----------
    height : ndarray, shape (N, k)
        Lowest point above the ground [m] (NaN where not placed).
    tilt : ndarray, shape (N, k)
        Against the ground normal [rad].
    loaded, off_ground, tilted : ndarray of bool, shape (N, k)
    failing : list of str
        The contacts named (off the ground or tilted, beyond the shares and times above).
    evidence : dict
        Per contact: loaded samples, samples off the ground and tilted, the worst height and
        tilt with their times; the tolerances and the ground.
    """

    height: Array
    tilt: Array
    loaded: NDArray[np.bool_]
    off_ground: NDArray[np.bool_]
    tilted: NDArray[np.bool_]
    failing: list[str]
    evidence: dict[str, Any]

    @property
    def violated(self) -> NDArray[np.bool_]:
        """(N, k): off the ground or tilted, on a named contact."""
        return (self.off_ground | self.tilted) & np.isin(
            np.arange(self.height.shape[1]), self.evidence["failing_index"]
        )


@quiet_empty_slices
def placement_check(
    soles: Soles,
    placed: SolePlacement,
    com_up: Array,
    time: Array,
    names: Sequence[str],
    weight: float,
) -> PlacementCheck:
    """Heights, tilts and the named contacts of a log (module docstring).

    ``placed`` (N, k) over the log (NaN where not placed); ``com_up`` (N,) the CoM's elevation
    along gravity's upward direction [m]; ``time`` (N,) [s]."""
    with np.errstate(invalid="ignore"):
        loaded = placed.normal_force > LOAD_SHARE * weight
    estimated = np.isnan(soles.level)
    level = soles.level.copy()
    if estimated.any():  # the plane through the loaded contacts' median height
        low = np.where(loaded[:, estimated], placed.low[:, estimated], np.nan)
        level[estimated] = float(np.nanmedian(low)) if np.isfinite(low).any() else 0.0
    height = placed.low - level
    feet = np.nanmean(np.where(loaded, placed.low, np.nan), axis=1) if loaded.any() else None
    h = float(np.nanmedian(com_up - feet)) if feet is not None and np.isfinite(feet).any() else 1.0
    height_tol = GROUND_TOLERANCE_FRACTION * (max(h, 1e-3) if math.isfinite(h) else 1.0)
    with np.errstate(invalid="ignore"):
        off = loaded & (np.abs(height) > height_tol)
        tilted = loaded & (placed.tilt > TILT_TOLERANCE) & (placed.lift > ROLL_SHARE * placed.span)
    dt = np.gradient(time) if len(time) > 1 else np.zeros(len(time))
    contacts, failing, index = {}, [], []
    for j, name in enumerate(names):
        n_loaded = int(loaded[:, j].sum())
        e: dict[str, Any] = {"loaded_samples": n_loaded}
        for what, mask, value in (("off_ground", off, height), ("tilted", tilted, placed.tilt)):
            idx = np.flatnonzero(mask[:, j])
            share, seconds = len(idx) / max(n_loaded, 1), float(dt[idx].sum())
            worst = int(idx[np.argmax(np.abs(value[idx, j]))]) if len(idx) else -1
            e[what] = {
                "samples": len(idx),
                "share": share,
                "seconds": seconds,
                "worst": None if worst < 0 else (worst, float(time[worst]), float(value[worst, j])),
                "fails": share > MAX_VIOLATION_SHARE and seconds >= MIN_VIOLATION_TIME,
            }
        if e["off_ground"]["fails"] or e["tilted"]["fails"]:
            failing.append(name)
            index.append(j)
        contacts[name] = e
    evidence = {
        "height_tolerance_m": height_tol,
        "tilt_tolerance_rad": TILT_TOLERANCE,
        "roll_share": ROLL_SHARE,
        "ground": "declared"
        if not estimated.any()
        else "estimated: median height of the loaded contacts",
        "ground_level_m": level.tolist(),
        "contacts": contacts,
        "failing_index": index,
    }
    tilt = np.where(soles.surface, placed.tilt, np.nan)
    return PlacementCheck(height, tilt, loaded, off, tilted, failing, evidence)
