"""Joint torque task: track reference torques, or keep the torques small."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import InvalidArgumentError
from ...robot import ControllerPass
from .._inputs import as_vector
from ._base import WrenchTask

if TYPE_CHECKING:
    from .._layout import ControlLayout

Array = NDArray[np.float64]


class TorqueTask(WrenchTask):
    """Track the joint torques that the solution implies (actuated joints, ``nv - 6``).

    ``tau = S (M a + b - J_c^T w)`` with ``b = h - sum_e J_e^T w_e`` (the measured external
    wrenches of the update, if any): the task's Jacobian is ``[S M, -S J_c^T]`` over
    ``x = (a, w)``, its drift ``S b`` and its desired value ``tau_ref``; the cost is
    ``weight * || mask (tau - tau_ref) ||^2`` [N^2 m^2].

    Parameters
    ----------
    reference : array (nv - 6,), optional
        ``tau_ref`` [N m or N]; default zero (small torques).
    weight : float
    mask : array of bool (nv - 6,), optional
        Joints that count; default all.
    name : str
    """

    def __init__(
        self,
        *,
        reference: ArrayLike | None = None,
        weight: float = 1.0,
        mask: ArrayLike | None = None,
        name: str = "torque",
    ):
        super().__init__(name, 0, weight=weight)
        self._given_mask = None if mask is None else np.asarray(mask)
        self.reference: Array | None = None
        if reference is not None:
            self.set_reference(reference)
        self._layout: ControlLayout | None = None

    def set_reference(self, torque: ArrayLike) -> None:
        """``tau_ref`` [N m or N], (nv - 6,) (its size checked against the robot's when the
        task is bound)."""
        tau = as_vector(torque, self.size or None, f"task {self.name!r}: reference")
        self.reference = tau
        if self.size:
            self.desired = tau

    def bind(self, layout: ControlLayout) -> None:
        nu = layout.nv - 6
        if self.reference is not None and self.reference.shape != (nu,):
            raise InvalidArgumentError(
                f"task {self.name!r}: reference must be a vector of {nu}, got shape "
                f"{self.reference.shape}"
            )
        self._resize(nu, layout.n)
        if self._given_mask is not None:
            self.set_mask(self._given_mask)
            self._given_mask = None
        if self.reference is not None:
            self.desired = self.reference
        self._layout = layout

    def update(self, kin: ControllerPass) -> None:
        layout = self._layout
        if layout is None:
            return
        nv = layout.nv
        J = self.jacobian
        J[:, :nv] = kin.mass_matrix[6:]
        np.negative(layout.jacobian[:, 6:].T, out=J[:, nv:])
        self.drift = layout.bias[6:]
