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

    A *lazy* constraint's rows are left out of the QP while its solution without them meets
    them (:meth:`satisfied`; for a convex QP that solution is then the optimum with them
    too: the answer is the same); otherwise the QP is solved again with them, and with them
    from then on until none of its rows is near its bound.

    Attributes
    ----------
    name : str
    lazy : bool
        Whether the rows may be left out as above (class default False; a soft constraint
        is never left out).
    priority : int
        0: hard; 1, 2, ...: soft, its rows' violation a cost of that priority level (set by
        :meth:`~wholebody.control.WholeBodyController.add_constraint`).
    weight : float
        A soft constraint's cost per unit of violation of each row (its slack).
    """

    name = "constraint"
    lazy = False
    priority = 0
    weight = 1.0

    def rows(self, kin: ControllerPass, layout: ControlLayout) -> int:  # pragma: no cover
        """Number of rows for this layout of active contacts."""
        raise NotImplementedError

    def fill(
        self, kin: ControllerPass, layout: ControlLayout, C: Array, lower: Array, upper: Array
    ) -> None:  # pragma: no cover
        """Write the rows: ``C`` (rows, n) (zeroed), ``lower`` and ``upper`` (rows,)."""
        raise NotImplementedError

    def satisfied(
        self,
        kin: ControllerPass,
        layout: ControlLayout,
        x: Array,
        torque: Array,
        *,
        margin: bool = False,
    ) -> bool:
        """Whether ``x`` (n,) (whose joint torques are ``torque``) meets these rows; with
        ``margin``, whether it meets them with none near its bound (``1e-6`` relative).

        The default writes the rows (:meth:`fill`) and checks ``lower <= C x <= upper``.
        """
        k = self.rows(kin, layout)
        C, lower, upper = np.zeros((k, layout.n)), np.empty(k), np.empty(k)
        self.fill(kin, layout, C, lower, upper)
        cx = C @ x
        if margin:
            lower = lower + 1e-6 * np.maximum(1.0, np.abs(lower))
            upper = upper - 1e-6 * np.maximum(1.0, np.abs(upper))
        return bool((cx >= lower).all() and (cx <= upper).all())
