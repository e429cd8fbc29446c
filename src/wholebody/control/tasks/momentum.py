"""Centroidal momentum tasks: angular and linear momentum, world axes at the CoM."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ...robot import ControllerPass
from .._inputs import as_vector
from ._base import AccelerationTask, as_gains


class _MomentumTask(AccelerationTask):
    _rows = slice(0, 3)

    def __init__(self, name: str, *, kd: ArrayLike, weight: float, mask: ArrayLike | None):
        super().__init__(name, 3, weight=weight, mask=mask)
        self.kd = as_gains(kd, 3, "kd")
        self.reference = np.zeros(3)
        self.reference_rate = np.zeros(3)
        self.momentum = np.zeros(3)
        self._source: np.ndarray | None = None  # the pass's arrays whose views are kept
        self._drift_source: np.ndarray | None = None
        self._views: tuple[np.ndarray, np.ndarray, np.ndarray] = (self.jacobian,) * 3

    def set_reference(self, momentum: ArrayLike, rate: ArrayLike | None = None) -> None:
        """Reference momentum (3,) and its rate (3,), world axes (default zero rate)."""
        self.reference = as_vector(momentum, 3, f"task {self.name!r}: momentum")
        self.reference_rate = (
            np.zeros(3) if rate is None else as_vector(rate, 3, f"task {self.name!r}: rate")
        )

    def update(self, kin: ControllerPass) -> None:
        # Views of the pass's buffers (the last update's values), made again only when the
        # pass's arrays are new ones.
        if self._source is not kin.momentum_matrix or self._drift_source is not kin.momentum_drift:
            rows = self._rows
            self._source, self._drift_source = kin.momentum_matrix, kin.momentum_drift
            self._views = kin.momentum_matrix[rows], kin.momentum_drift[rows], kin.momentum[rows]
        self.jacobian, self.drift, momentum = self._views
        self.momentum = momentum
        self.error = error = self.reference - momentum
        desired = self.kd * error
        desired += self.reference_rate
        self.desired = desired


class AngularMomentumTask(_MomentumTask):
    """Track the centroidal angular momentum ``L_G`` [kg m^2/s] (world axes at the CoM).

    ``dL_G/dt = A_G[3:] a + drift``; desired rate ``dL_ref/dt + kd (L_ref - L_G)``
    (``kd`` [1/s]; the default reference, zero, damps the momentum).

    Parameters
    ----------
    kd : float or array (3,)
    weight : float
    mask : array of bool (3,), optional
    name : str
    """

    _rows = slice(3, 6)

    def __init__(
        self,
        *,
        kd: ArrayLike,
        weight: float = 1.0,
        mask: ArrayLike | None = None,
        name: str = "angular_momentum",
    ):
        super().__init__(name, kd=kd, weight=weight, mask=mask)


class LinearMomentumTask(_MomentumTask):
    """Track the linear momentum ``P = m dc/dt`` [kg m/s] (world axes).

    ``dP/dt = A_G[:3] a + drift``; desired rate ``dP_ref/dt + kd (P_ref - P)``.

    Parameters
    ----------
    kd : float or array (3,)
    weight : float
    mask : array of bool (3,), optional
    name : str
    """

    _rows = slice(0, 3)

    def __init__(
        self,
        *,
        kd: ArrayLike,
        weight: float = 1.0,
        mask: ArrayLike | None = None,
        name: str = "linear_momentum",
    ):
        super().__init__(name, kd=kd, weight=weight, mask=mask)
