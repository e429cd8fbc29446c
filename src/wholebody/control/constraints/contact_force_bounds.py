"""Friction cones and normal force bounds of the active contacts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ._base import UNBOUNDED, Constraint

if TYPE_CHECKING:
    from .._layout import ControlLayout
    from .._tick import TickKinematics

Array = NDArray[np.float64]


class FrictionCones(Constraint):
    """``G(R) w <= 0``: each surface contact's 16-row wrench cone and each point contact's
    inner friction pyramid, in world axes (:class:`~wholebody.friction.ContactSet` faces at
    the tick's contact frame orientations)."""

    name = "friction_cones"

    def rows(self, kin: TickKinematics, layout: ControlLayout) -> int:
        return layout.contact_set.n_rows if layout.contact_set is not None else 0

    def fill(
        self, kin: TickKinematics, layout: ControlLayout, C: Array, lower: Array, upper: Array
    ) -> None:
        cs = layout.contact_set
        if cs is None:
            return
        # layout.rotations: the contacts' orientations, written by their updates this tick.
        C[:, layout.wrench] = cs.face_matrix(layout.rotations, out=layout.faces)
        lower[:] = -UNBOUNDED
        upper[:] = 0.0


class NormalForceBounds(Constraint):
    """``f_min <= n^T f <= f_max`` per active contact, ``n`` the contact normal in world axes.

    ``f_max`` is the contact's ramped bound (:class:`~wholebody.control.ContactState`): it
    goes to zero before a contact is removed, and rises from zero after one is added.
    """

    name = "normal_force_bounds"

    def rows(self, kin: TickKinematics, layout: ControlLayout) -> int:
        return len(layout.contacts)

    def fill(
        self, kin: TickKinematics, layout: ControlLayout, C: Array, lower: Array, upper: Array
    ) -> None:
        rotations = layout.rotations
        for i, c in enumerate(layout.contacts):
            start = c.columns.start
            if c.point:
                np.matmul(rotations[i], c.normal, out=C[i, start : start + 3])
            else:  # a surface contact's normal is its frame's z axis
                C[i, start : start + 3] = rotations[i, :, 2]
            lower[i], up = c.bounds  # this update's (normal_force_bounds at layout.time)
            upper[i] = min(up, UNBOUNDED)
