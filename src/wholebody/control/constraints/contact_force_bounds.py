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

    def __init__(self) -> None:
        # Per layout: the contacts' normals (k, 3, 1) and where row i's three entries are.
        self._layout: ControlLayout | None = None
        self._normals = np.zeros((0, 3, 1))
        self._at = np.zeros(0, dtype=np.intp)

    def fill(
        self, kin: TickKinematics, layout: ControlLayout, C: Array, lower: Array, upper: Array
    ) -> None:
        contacts = layout.contacts
        if layout is not self._layout:
            self._layout = layout
            self._normals = np.array([c.normal for c in contacts], dtype=float).reshape(-1, 3, 1)
            self._at = np.array(
                [
                    i * layout.n + c.columns.start + j
                    for i, c in enumerate(contacts)
                    for j in range(3)
                ],
                dtype=np.intp,
            )
        # World normals of every contact at once, into their rows' force columns.
        np.put(C, self._at, np.matmul(layout.rotations, self._normals))
        for i, c in enumerate(contacts):
            lower[i], up = c.bounds  # this update's (normal_force_bounds at layout.time)
            upper[i] = min(up, UNBOUNDED)
