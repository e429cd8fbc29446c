"""Contact force task: regularise a contact's wrench, or track a reference wrench."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import InvalidArgumentError
from ._base import as_gains, as_weight

Array = NDArray[np.float64]


class ContactForceTask:
    """``weight * sum_k w_k (w_k - w_ref,k)^2`` on one contact's wrench unknowns.

    The wrench is in world axes at the contact frame's origin (``(f, tau)`` (6) for a surface
    contact, ``f`` (3) for a point contact). With a zero reference it regularises the force
    (small wrenches, an even split); with a reference it tracks it. A task of a contact that
    is not active at a tick adds nothing.

    A zero reference also pulls the total normal force below the weight it must carry: keep
    the weight small against the CoM task's (1e-6 of it on a 65-100 kg humanoid costs under a
    millimetre of CoM sag; 1e-5 about 6 mm on Talos), or track ``m g / k`` per contact.

    Parameters
    ----------
    contact : str
        Name of the contact (as given to the controller).
    weight : float
    component_weights : float or array (3,) or (6,)
        Per component weights ``w_k >= 0`` [1/N^2 or 1/(N m)^2 relative]; default ones.
    reference : array (3,) or (6,), optional
        Reference wrench [N, N m]; default zero.
    name : str, optional
    """

    def __init__(
        self,
        contact: str,
        *,
        weight: float = 1e-5,
        component_weights: ArrayLike = 1.0,
        reference: ArrayLike | None = None,
        name: str | None = None,
    ):
        self.contact = str(contact)
        self.name = name or f"{contact}_force"
        self.weight = as_weight(weight, f"task {self.name!r}: weight")
        self._cw = component_weights
        self._weights: dict[int, Array] = {}  # per wrench size, checked once
        self.reference: Array | None = None
        if reference is not None:
            self.set_reference(reference)

    def set_reference(self, wrench: ArrayLike) -> None:
        """Reference wrench (3,) or (6,) [N, N m], world axes at the contact frame's origin
        (its size checked against the contact's at the next update)."""
        ref = np.array(wrench, dtype=float)
        if ref.shape not in ((3,), (6,)) or not np.all(np.isfinite(ref)):
            raise InvalidArgumentError(
                f"task {self.name!r}: reference must be a finite vector of 3 or 6, got {wrench!r}"
            )
        self.reference = ref

    def add_cost(self, P: Array, q: Array, columns: slice) -> None:
        """Add the term to ``x^T P x / 2 + q^T x`` on the contact's ``columns`` of ``x``."""
        self.add_cost_diagonal(np.einsum("ii->i", P), q, columns)

    def _component_weights(self, size: int) -> Array:
        cw = self._weights.get(size)
        if cw is None:
            cw = self._weights[size] = as_gains(
                self._cw, size, f"task {self.name!r}: component_weights"
            )
            cw.setflags(write=False)
        return cw

    def add_cost_diagonal(self, diagonal: Array, q: Array, columns: slice) -> None:
        """:meth:`add_cost` given a writable view of ``P``'s diagonal (the cost is diagonal):
        ``weight * w_k`` on the contact's columns of the diagonal, ``-weight w_k w_ref,k``
        on those of ``q`` (nothing without a reference)."""
        size = columns.stop - columns.start
        weights = self.weight * self._component_weights(size)
        diagonal[columns] += weights
        ref = self.reference
        if ref is None:
            return
        if ref.shape != (size,):
            raise InvalidArgumentError(
                f"task {self.name!r}: reference must be a finite vector of {size} "
                f"(contact {self.contact!r}), got shape {ref.shape}"
            )
        weights *= ref
        q[columns] -= weights
