"""Contact force task: regularise a contact's wrench, or track a reference wrench."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import InvalidArgumentError
from ...robot import ControllerPass
from .._inputs import as_vector
from ._base import WrenchTask, as_gains

if TYPE_CHECKING:
    from .._layout import ControlLayout

Array = NDArray[np.float64]


class ContactForceTask(WrenchTask):
    """``weight * sum_k w_k (w_k - w_ref,k)^2`` on one contact's wrench unknowns.

    The wrench is in world axes at the contact frame's origin (``(f, tau)`` (6) for a surface
    contact, ``f`` (3) for a point contact). With a zero reference it regularises the force
    (small wrenches, an even split); with a reference it tracks it. A task of a contact that
    is not active at a tick has no rows (adds nothing). Its Jacobian selects the contact's
    columns of ``x``; the rows of zero component weight do not count.

    A zero reference also pulls the total normal force below the weight it must carry: keep
    the weight small against the CoM task's (1e-6 of it on a 65-100 kg humanoid costs under a
    millimetre of CoM sag; 1e-5 about 6 mm on Talos), or track ``m g / k`` per contact.

    Parameters
    ----------
    contact : str
        Name of the contact (as given to the controller, which refuses a task of a contact
        it does not know).
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
        super().__init__(name or f"{contact}_force", 0, weight=weight)
        self._cw = component_weights
        self._weights = np.zeros(0)  # the component weights checked for the bound size
        self._columns = slice(0, 0)
        self._cost_weights, self._cost_version = np.zeros(0), -1
        self.reference: Array | None = None
        if reference is not None:
            self.set_reference(reference)

    def set_reference(self, wrench: ArrayLike) -> None:
        """Reference wrench (3,) or (6,) [N, N m], world axes at the contact frame's origin
        (its size checked against the contact's when the task is bound)."""
        ref = as_vector(wrench, None, f"task {self.name!r}: reference")
        if ref.shape not in ((3,), (6,)):
            raise InvalidArgumentError(
                f"task {self.name!r}: reference must be a vector of 3 or 6, got shape {ref.shape}"
            )
        if self.size and ref.shape != (self.size,):
            raise InvalidArgumentError(
                f"task {self.name!r}: reference must be a vector of {self.size} "
                f"(contact {self.contact!r}), got shape {ref.shape}"
            )
        self.reference = ref

    def bind(self, layout: ControlLayout) -> None:
        state = next((s for s in layout.contacts if s.name == self.contact), None)
        size = 0 if state is None else state.size
        if size and self.reference is not None and self.reference.shape != (size,):
            raise InvalidArgumentError(
                f"task {self.name!r}: reference must be a vector of {size} "
                f"(contact {self.contact!r}), got shape {self.reference.shape}"
            )
        self._columns = slice(0, 0) if state is None else state.columns
        if size:
            self._weights = as_gains(self._cw, size, f"task {self.name!r}: component_weights")
        self._resize(size, layout.n)
        if size:
            self.jacobian[:, self._columns] = np.eye(size)
            self.set_mask(self._weights > 0)

    def _rescale(self) -> None:
        # sqrt(weight * w_k) per component row.
        super()._rescale()
        if self._weights.shape == self._row_scale.shape:
            self._row_scale *= np.sqrt(self._weights)

    def update(self, kin: ControllerPass) -> None:
        if self.size:
            self.desired = self.reference if self.reference is not None else self.drift

    def add_cost_diagonal(self, diagonal: Array, q: Array) -> None:
        """Add the cost to ``x^T P x / 2 + q^T x`` given a writable view of ``P``'s diagonal
        (the cost is diagonal): ``weight * w_k`` on the contact's columns of the diagonal,
        ``-weight w_k w_ref,k`` on those of ``q`` (nothing without a reference)."""
        if not self.size:
            return
        if self._cost_version != self._scale_version:
            self._cost_weights = np.square(self._row_scale)
            self._cost_version = self._scale_version
        columns = self._columns
        diagonal[columns] += self._cost_weights
        ref = self.reference
        if ref is not None:
            q[columns] -= self._cost_weights * ref
