"""Friction cones and normal force bounds of the active contacts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ._base import UNBOUNDED, Constraint

if TYPE_CHECKING:
    from ...robot import ControllerPass
    from .._layout import ControlLayout

Array = NDArray[np.float64]


class FrictionCones(Constraint):
    """``G(R) w <= 0``: each surface contact's 16-row wrench cone and each point contact's
    inner friction pyramid, in world axes (:class:`~wholebody.friction.ContactSet` faces at
    the tick's contact frame orientations)."""

    name = "friction_cones"

    def __init__(self) -> None:
        self._C: Array | None = None
        self._bounds: tuple[Array, Array] | None = None
        self._wrench_columns = np.zeros((0, 0))

    def rows(self, kin: ControllerPass, layout: ControlLayout) -> int:
        return layout.contact_set.n_rows if layout.contact_set is not None else 0

    def fill(
        self, kin: ControllerPass, layout: ControlLayout, C: Array, lower: Array, upper: Array
    ) -> None:
        cs = layout.contact_set
        if cs is None:
            return
        if self._C is not C:  # the wrench columns' view of these rows, made once per rows
            self._C, self._wrench_columns = C, C[:, layout.wrench]
        # layout.rotations: the contacts' orientations, written by their updates this tick.
        self._wrench_columns[...] = cs.face_matrix(layout.rotations, out=layout.faces)
        bounds = self._bounds
        if bounds is None or bounds[0] is not lower or bounds[1] is not upper:
            # Constant bounds: written once per rows buffers (nothing else writes them).
            lower[:] = -UNBOUNDED
            upper[:] = 0.0
            self._bounds = lower, upper


class NormalForceBounds(Constraint):
    """``f_min <= n^T f <= f_max`` per active contact, ``n`` the contact normal in world axes.

    ``f_max`` is the contact's ramped bound (:class:`~wholebody.control.ContactState`): it
    goes to zero before a contact is removed, and rises from zero after one is added.
    """

    name = "normal_force_bounds"

    def __init__(self) -> None:
        self._C: Array | None = None
        self._layout: ControlLayout | None = None
        self._items: list[tuple] = []

    def rows(self, kin: ControllerPass, layout: ControlLayout) -> int:
        return len(layout.contacts)

    def fill(
        self, kin: ControllerPass, layout: ControlLayout, C: Array, lower: Array, upper: Array
    ) -> None:
        if self._C is not C or self._layout is not layout:
            # Per contact: its row's force entries and its rotation (views made once).
            rotations = layout.rotations
            self._C, self._layout = C, layout
            self._items = [
                (c, C[i, c.columns.start : c.columns.start + 3], rotations[i], rotations[i, :, 2])
                for i, c in enumerate(layout.contacts)
            ]
        for i, (c, row, R, z) in enumerate(self._items):
            if c.point:
                R.dot(c.normal, out=row)
            else:  # a surface contact's normal is its frame's z axis
                row[...] = z
            lower[i], up = c.bounds  # this update's (normal_force_bounds at layout.time)
            upper[i] = min(up, UNBOUNDED)
