"""Centre-of-mass task, world axes."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ...robot import ControllerPass
from .._inputs import as_vector
from ._base import ZERO3, AccelerationTask, as_gains, pd_acceleration


class ComTask(AccelerationTask):
    """Track the CoM position, velocity and acceleration (world axes, maskable).

    Jacobian ``J_com = A_G[:3] / m`` and drift ``dP/dt|_{a=0} / m`` from the tick's pass; the
    desired acceleration is ``a_ref + kp (c_ref - c) + kd (v_ref - J_com v)``.

    Parameters
    ----------
    kp, kd : float or array (3,)
        Gains [1/s^2], [1/s].
    weight : float
    mask : array of bool (3,), optional
    name : str
    """

    def __init__(
        self,
        *,
        kp: ArrayLike,
        kd: ArrayLike,
        weight: float = 1.0,
        mask: ArrayLike | None = None,
        name: str = "com",
    ):
        super().__init__(name, 3, weight=weight, mask=mask)
        self.kp, self.kd = as_gains(kp, 3, "kp"), as_gains(kd, 3, "kd")
        self.reference: np.ndarray | None = None
        self.reference_velocity = ZERO3
        self.reference_acceleration = ZERO3
        self.position = np.zeros(3)
        self.velocity = np.zeros(3)
        self._drift_source: np.ndarray | None = None
        self._linear_rate = np.zeros(3)

    def set_reference(
        self,
        position: ArrayLike,
        velocity: ArrayLike | None = None,
        acceleration: ArrayLike | None = None,
    ) -> None:
        """CoM reference [m], its velocity [m/s] and acceleration [m/s^2], world axes."""
        self.reference = as_vector(position, 3, f"task {self.name!r}: position")
        self.reference_velocity = (
            ZERO3 if velocity is None else as_vector(velocity, 3, f"task {self.name!r}: velocity")
        )
        self.reference_acceleration = (
            ZERO3
            if acceleration is None
            else as_vector(acceleration, 3, f"task {self.name!r}: acceleration")
        )
        self._feedforward(ZERO3)

    def update(self, kin: ControllerPass) -> None:
        # The pass's arrays (views of its data): the last update's.
        self.jacobian = kin.com_jacobian
        drift = kin.momentum_drift
        if self._drift_source is not drift:  # a view of the pass's buffer, made once
            self._drift_source, self._linear_rate = drift, drift[:3]
        self.drift = self._linear_rate * (1.0 / kin.mass)
        self.position = position = kin.com
        self.velocity = velocity = kin.com_velocity
        if self.reference is None:
            self.reference = position.copy()
        self.error = error = self.reference - position
        self.desired = pd_acceleration(self.kp, self.kd, error, velocity, self._feedforward(ZERO3))
