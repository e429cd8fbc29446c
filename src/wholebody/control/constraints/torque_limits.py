"""Joint torque limits on the torques the QP's solution implies."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import InvalidArgumentError
from ._base import Constraint

if TYPE_CHECKING:
    from ...robot import ControllerPass
    from .._layout import ControlLayout

Array = NDArray[np.float64]


class TorqueLimits(Constraint):
    """``-tau_max <= tau = S (M a + h - J_c^T w) <= tau_max`` for the limited joints.

    Parameters
    ----------
    limits : array (nv - 6,)
        ``tau_max`` [N m or N]; entries >= 1e10 or infinite (URDF's "no limit") are dropped.
    """

    name = "torque_limits"
    #: Rarely active on a standing or walking humanoid: left out of the QP while the
    #: solution without them meets them (the same solution; see :class:`Constraint`).
    lazy = True

    def __init__(self, limits: ArrayLike):
        lim = np.asarray(limits, dtype=float)
        if lim.ndim != 1 or np.any(np.isnan(lim)) or np.any(lim <= 0):
            raise InvalidArgumentError(
                f"torque limits must be a vector of positive torques [N m], got {lim.tolist()}"
            )
        self.limits = lim
        self._limited = np.flatnonzero(lim < 1e10)
        self._rows: slice | NDArray[np.intp] = 6 + self._limited
        if len(self._limited) == len(lim):  # all limited: slices, no fancy indexing per tick
            self._rows = slice(6, 6 + len(lim))
        self._tau_max = lim[self._limited]

    def rows(self, kin: ControllerPass, layout: ControlLayout) -> int:
        if self.limits.shape != (kin.nv - 6,):
            raise InvalidArgumentError(
                f"torque limits must have shape ({kin.nv - 6},), got {self.limits.shape}"
            )
        return len(self._limited)

    def fill(
        self, kin: ControllerPass, layout: ControlLayout, C: Array, lower: Array, upper: Array
    ) -> None:
        rows, nv = self._rows, kin.nv
        C[:, :nv] = kin.mass_matrix[rows]
        if layout.n > nv:
            np.negative(layout.jacobian[:, rows].T, out=C[:, nv:])
        h = kin.nonlinear_effects[rows]
        np.subtract(self._tau_max, h, out=upper)
        np.negative(self._tau_max, out=lower)
        lower -= h

    def satisfied(
        self,
        kin: ControllerPass,
        layout: ControlLayout,
        x: Array,
        torque: Array,
        *,
        margin: bool = False,
    ) -> bool:
        """``|tau| <= tau_max`` on the limited joints (``(1 - 1e-6) tau_max`` with margin)."""
        tau = np.abs(torque if isinstance(self._rows, slice) else torque[self._limited])
        tau -= self._tau_max * (1.0 - 1e-6) if margin else self._tau_max
        return bool(np.maximum.reduce(tau) <= 0.0)
