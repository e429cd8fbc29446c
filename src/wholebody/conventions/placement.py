"""Where loaded contacts are: each loaded contact's height above the ground and, for a surface
contact, its tilt against the ground normal, per sample (``docs/diagnosis.md``, "Contact
placement").

A loaded contact pushes on the ground where it touches it. For a sole that is where its
lowest point is: all of it when the sole is flat on the ground, the edge it turns on when it
rolls (heel strike, toe off). From the contact frame's placement (the check's own pass) and
the logged wrench, per sample and contact
(:func:`wholebody.balance.placement.sole_placement`):

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
- **tilted** where ``tilt`` exceeds :data:`~wholebody.balance.placement.TILT_TOLERANCE` and
  ``lift`` exceeds :data:`~wholebody.balance.placement.ROLL_SHARE` of ``span`` (its load is
  not on the edge it would roll on).

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

from ..balance.placement import ROLL_SHARE, TILT_TOLERANCE, SolePlacement, Soles
from ._core import (
    GROUND_TOLERANCE_FRACTION,
    LOAD_SHARE,
    MAX_VIOLATION_SHARE,
    MIN_VIOLATION_TIME,
    quiet_empty_slices,
)

__all__ = ["PlacementCheck", "placement_check"]

Array = NDArray[np.float64]


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
