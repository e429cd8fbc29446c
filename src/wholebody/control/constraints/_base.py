"""The base of the controller's constraints: rows ``lower <= C x <= upper`` over ``x = (a, w)``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from ...robot import ControllerPass
    from .._layout import ControlLayout

Array = NDArray[np.float64]

#: The bound that stands for "none" on one side of a row (daqp's infinity).
UNBOUNDED = 1e30


class Constraint:
    """Inequality rows ``lower <= C x <= upper`` refreshed at each tick.

    Subclasses give the number of rows of a contact layout (:meth:`rows`) and write them
    (:meth:`fill`) into views of the controller's stacked buffers, from the tick's one pass.

    Attributes
    ----------
    name : str
    """

    name = "constraint"

    def rows(self, kin: ControllerPass, layout: ControlLayout) -> int:  # pragma: no cover
        """Number of rows for this layout of active contacts."""
        raise NotImplementedError

    def fill(
        self, kin: ControllerPass, layout: ControlLayout, C: Array, lower: Array, upper: Array
    ) -> None:  # pragma: no cover
        """Write the rows: ``C`` (rows, n) (zeroed), ``lower`` and ``upper`` (rows,)."""
        raise NotImplementedError
