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
    rotations : ndarray, shape (k, 3, 3)
        The contacts' orientations (world from contact) of the last update.
    faces : ndarray
        The buffer of the cone rows (rows, wrench columns).
    jacobian : ndarray, shape (r, nv)
        The active contacts' Jacobians stacked in column order (world-aligned; r = number of
        wrench unknowns), of the last update; each contact's ``jacobian`` is a view of its
        rows, and likewise for the vectors below.
    drift, error, desired : ndarray, shape (r,)
        Their ``dJ/dt v``, errors to the held placements and desired accelerations
        ``kp e - kd J v``.
    kp, kd : ndarray, shape (r,)
        Their gains, per row.
    rhs : ndarray, shape (r,)
        ``desired - drift``: the right-hand side of ``J_c a = rhs`` (of the rigid contacts'
        rows: a view of the QP's bounds of those rows where every contact is rigid).
    bias : ndarray, shape (nv,)
        ``b = h - sum_e J_e^T w_e``: the nonlinear effects less the generalized forces of
        the update's measured external wrenches, the ``b`` of ``M a + b = S^T tau + J_c^T w``.
    """

    nv: int
    n: int
    acc: slice
    wrench: slice
    contacts: list[ContactState]
    contact_set: ContactSet | None
    time: float = 0.0
    rotations: Array = field(default_factory=lambda: np.zeros((0, 3, 3)))
    faces: Array = field(default_factory=lambda: np.zeros((0, 0)))
    jacobian: Array = field(default_factory=lambda: np.zeros((0, 0)))
    drift: Array = field(default_factory=lambda: np.zeros(0))
    error: Array = field(default_factory=lambda: np.zeros(0))
    kp: Array = field(default_factory=lambda: np.zeros(0))
    kd: Array = field(default_factory=lambda: np.zeros(0))
    desired: Array = field(default_factory=lambda: np.zeros(0))
    rhs: Array = field(default_factory=lambda: np.zeros(0))
    bias: Array = field(default_factory=lambda: np.zeros(0))
