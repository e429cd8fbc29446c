"""Divergent component of motion (capture point) task, world axes."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ...errors import InvalidArgumentError
from ...robot import ControllerPass
from .._inputs import as_vector
from ._base import ZERO3, AccelerationTask, as_gains


class DcmTask(AccelerationTask):
    """Drive the divergent component of motion to a reference (Englsberger et al. 2015).

    The DCM ``xi = c + dc/dt / omega`` (world axes, [m]), ``omega = sqrt(g / z0)`` for a CoM
    at height ``z0`` over the ground; its horizontal part is the instantaneous capture point
    (Pratt et al. 2006). Its rate ``dxi/dt = dc/dt + d^2c/dt^2 / omega`` is the task:
    Jacobian ``J_com / omega``, drift ``dc/dt + (dJ_com/dt v) / omega``, and the desired rate
    ``dxi_ref/dt + gain (xi_ref - xi)``, under which the DCM error decays as
    ``exp(-gain t)`` (the CoM follows the DCM, ``d(c - xi)/dt = -omega (c - xi)``).

    Parameters
    ----------
    omega : float
        ``sqrt(g / z0)`` [1/s] (> 0).
    gain : float or array (3,)
        [1/s] (>= 0).
    weight : float
    mask : array of bool (3,), optional
        Axes that count; mask ``z`` to leave the height to a CoM task.
    name : str

    Attributes
    ----------
    dcm : ndarray (3,)
        ``xi`` of the last update [m].
    reference, reference_velocity : ndarray (3,)
        ``xi_ref`` (default the DCM at the first update) [m] and its rate [m/s].
    """

    def __init__(
        self,
        *,
        omega: float,
        gain: ArrayLike,
        weight: float = 1.0,
        mask: ArrayLike | None = None,
        name: str = "dcm",
    ):
        super().__init__(name, 3, weight=weight, mask=mask)
        self.omega = float(omega)
        if not (np.isfinite(self.omega) and self.omega > 0):
            raise InvalidArgumentError(
                f"task {self.name!r}: omega must be > 0 [1/s], got {omega!r}"
            )
        self.gain = as_gains(gain, 3, "gain")
        self.reference: np.ndarray | None = None
        self.reference_velocity = ZERO3
        self.dcm = np.zeros(3)
        self._drift_source: np.ndarray | None = None
        self._linear_rate = np.zeros(3)

    def set_reference(self, dcm: ArrayLike, velocity: ArrayLike | None = None) -> None:
        """``xi_ref`` (3,) [m] and its rate (3,) [m/s] (default zero), world axes."""
        self.reference = as_vector(dcm, 3, f"task {self.name!r}: reference")
        self.reference_velocity = (
            ZERO3 if velocity is None else as_vector(velocity, 3, f"task {self.name!r}: velocity")
        )

    def update(self, kin: ControllerPass) -> None:
        inv = 1.0 / self.omega
        drift = kin.momentum_drift
        if self._drift_source is not drift:  # a view of the pass's buffer, made once
            self._drift_source, self._linear_rate = drift, drift[:3]
        self.jacobian = kin.com_jacobian * inv
        velocity = kin.com_velocity
        self.drift = self._linear_rate * (inv / kin.mass)
        self.drift += velocity
        self.dcm = dcm = velocity * inv
        dcm += kin.com
        if self.reference is None:
            self.reference = dcm.copy()
        self.error = error = self.reference - dcm
        desired = self.gain * error
        if self.reference_velocity is not ZERO3:
            desired += self.reference_velocity
        self.desired = desired
