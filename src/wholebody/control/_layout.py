"""The columns of the controller's unknowns ``x = (a, w)`` for one set of active contacts."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..friction import ContactSet
from ._contact_state import ContactState

__all__ = ["ControlLayout"]

Array = NDArray[np.float64]


@dataclass
class ControlLayout:
    """The columns of ``x = (a, w)`` for the current set of active contacts.

    Attributes
    ----------
    nv, n : int
        Velocity dimension and number of unknowns.
    acc, wrench : slice
        Columns of ``a`` and of all wrenches.
    contacts : list of ContactState
        Active contacts (ramping ones included), in column order.
    contact_set : ContactSet or None
        Their cones (None without contacts).
    time : float
        Time of the last update [s].
    """

    nv: int
    n: int
    acc: slice
    wrench: slice
    contacts: list[ContactState]
    contact_set: ContactSet | None
    time: float = 0.0
    #: Buffers of the cone rows: contact orientations (k, 3, 3), faces (rows, wrench columns).
    rotations: Array = field(default_factory=lambda: np.zeros((0, 3, 3)))
    faces: Array = field(default_factory=lambda: np.zeros((0, 0)))
