"""What an estimate says: the wrenches, the evidence that they are right, and one status.

The statuses, single and batch alike (plain Python strings):

``"found"``
    Verified: finite, the hard equations met and the cones respected within
    ``tolerance * m |g|``.
``"infeasible"``
    No wrenches inside the cones meet the equations; the closest ones (least squares on the
    raw equations, inside the cones) come back, verified inside the cones.
``"failed"``
    Nothing verified came back; ``reason`` says why (the backend's own error as
    ``"TYPE: message"``, or what the answer got wrong).
``"flagged"`` (batches only)
    The sample's input is unusable (non-finite, zero quaternion); not solved.

Whether the split between contacts is determined is separate from the status: ``rank``,
``identifiable`` and ``split_from_regularization`` (a Newton-Euler-mode split is always the
least-norm one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..balance import Residual
from ..contacts import Contact
from ..errors import ContactNotFoundError

__all__ = ["ContactEstimate", "EstimationBatch", "estimate_status", "status_reason", "STATUSES"]

Array = NDArray[np.float64]
#: Every status an estimate can have.
STATUSES = ("found", "infeasible", "failed", "flagged")


def estimate_status(
    equations_residual: ArrayLike, cone_violation: ArrayLike, limit: float, fallback: ArrayLike
) -> NDArray[np.object_]:
    """The status of solved samples, vectorised: the one place statuses are decided.

    Parameters
    ----------
    equations_residual : array, shape (N,)
        Largest violation of the hard equations [N or N m]; NaN or inf when nothing came back.
    cone_violation : array, shape (N,)
        Largest distance outside the cones (normalised rows; <= 0 inside) [N or N m].
    limit : float
        ``tolerance * m |g|`` [N].
    fallback : array of bool, shape (N,)
        Whether the answer is the closest-inside-the-cones fallback (the least-norm solve
        gave nothing verified).

    Returns
    -------
    ndarray of object (Python str), shape (N,)
        ``"found"`` (inside, equations met, not the fallback), ``"infeasible"`` (the fallback,
        inside, equations not met), else ``"failed"`` (including a fallback that meets the
        equations: the problem was feasible and the backend failed it).
    """
    eq = np.asarray(equations_residual, dtype=float)
    with np.errstate(invalid="ignore"):
        inside = np.asarray(cone_violation, dtype=float) <= limit
        meets = eq <= limit
    fb = np.asarray(fallback, dtype=bool)
    status = np.full(eq.shape, "failed", dtype=object)
    status[inside & meets & ~fb] = "found"
    status[inside & ~meets & fb] = "infeasible"
    return status


def status_reason(status: str, equations_residual: float, cone_violation: float, limit: float,
                  backend: str = "") -> str:
    """Why a sample has its status, in words ("" for ``"found"``); ``backend`` is what the
    backend said (its exception as ``"TYPE: message"``, or that it found no solution)."""
    if status == "found":
        return ""
    if status == "infeasible":
        return (f"no wrenches inside the cones meet the equations: the closest miss them by "
                f"{equations_residual:.3g} (limit {limit:.3g})")
    if not math.isfinite(equations_residual):
        return f"no solution came back: {backend or 'the backend gave nothing'}"
    if not cone_violation <= limit:
        return f"the answer leaves the cones by {cone_violation:.3g} (limit {limit:.3g})" + (
            f"; {backend}" if backend else "")
    return f"the problem is feasible but the backend failed it: {backend or 'no reason given'}"


@dataclass(frozen=True)
class ContactEstimate:
    """Estimated contact wrenches of one sample, with the evidence that they are right.

    Attributes
    ----------
    status : {"found", "infeasible", "failed"}
        See :mod:`wholebody.estimation.results`.
    wrenches : dict of str to ndarray
        Contact name -> (3,) force or (6,) wrench ``(f, tau)``, world axes at the contact
        frame's origin [N, N m]. NaN when nothing usable came back.
    wrenches_local : dict of str to ndarray
        The same in each contact frame's axes.
    centres_of_pressure : dict of str to ndarray
        Surface contact name -> ``(x, y)`` in its frame [m] (NaN if ``f_z <= 0``).
    newton_euler_residual : Residual
        ``w_c + w_gi`` of the estimate (and the known wrenches) about the CoM.
    equations_residual : float
        Largest violation of the hard equations (Newton-Euler rows, or the least-squares
        conditions of full-dynamics mode) [N or N m]; part of the verification.
    data_residual : float
        Largest misfit of the mode's raw equations ``|A x - b|`` (full dynamics: how far
        measured torques and model disagree; zero for consistent data) [N or N m].
    cone_margins : dict of str to float
        Per contact, distance to the nearest linear cone face, rows normalised (negative
        outside) [N or N m].
    mode, solver, solve_time
        ``"newton_euler"`` or ``"full_dynamics"``; the backend; its wall time [s].
    rank : int
        Rank of the mode's equation matrix (6 at most in Newton-Euler mode).
    identifiable : bool
        Whether the equations alone determine every contact's wrench.
    min_friction_scale : float or None
        For an infeasible sample, the least factor on every ``mu`` that makes it feasible
        (None when not computed or when no factor up to 1000 does).
    x : ndarray
        The stacked solution.
    friction : dict of str to float
        Each contact's ``mu``.
    reason : str
        Why the status is not ``"found"`` ("" when it is).
    """

    status: str
    wrenches: dict[str, Array]
    wrenches_local: dict[str, Array]
    centres_of_pressure: dict[str, Array]
    newton_euler_residual: Residual
    equations_residual: float
    data_residual: float
    cone_margins: dict[str, float]
    mode: str
    solver: str
    solve_time: float
    rank: int
    identifiable: bool
    min_friction_scale: float | None
    x: Array
    friction: dict[str, float] = field(default_factory=dict)
    reason: str = ""

    @property
    def found(self) -> bool:
        """``status == "found"``."""
        return self.status == "found"

    @property
    def min_friction_coefficients(self) -> dict[str, float] | None:
        """Per contact, ``mu * min_friction_scale``: the friction that would make an infeasible
        sample feasible (None when not computed or when friction cannot)."""
        if self.min_friction_scale is None:
            return None
        return {name: mu * self.min_friction_scale for name, mu in self.friction.items()}

    @property
    def split_from_regularization(self) -> bool:
        """True when the split between contacts comes from the least-norm regularisation."""
        return not self.identifiable

    def summary(self) -> str:
        """A few lines for a terminal: status, residual, each wrench and its margin."""
        how = "identifiable" if self.identifiable else "split from regularisation"
        lines = [
            f"status {self.status} ({self.mode}, {self.solver}, {1e6 * self.solve_time:.0f} us); "
            f"rank {self.rank}, {how}",
            f"Newton-Euler residual {self.newton_euler_residual.force_norm:.2e} N, "
            f"{self.newton_euler_residual.moment_norm:.2e} N m",
        ]
        if self.reason:
            lines.insert(1, f"reason: {self.reason}")
        for name, w in self.wrenches.items():
            lines.append(f"  {name}: {np.array2string(w, precision=2, suppress_small=True)}"
                         f"  margin {self.cone_margins[name]:.3g}")
        if self.min_friction_scale is not None:
            lines.append(f"feasible with every mu scaled by {self.min_friction_scale:.3f}")
        return "\n".join(lines)


@dataclass(frozen=True)
class EstimationBatch:
    """Estimates of N samples, with the same vocabulary as :class:`ContactEstimate`.

    Flagged samples (bad input) are NaN and have a reason; so have failed ones.

    Attributes
    ----------
    contacts : tuple of Contact
    wrenches : ndarray, shape (N, n)
        Stacked estimates, world axes at the contact origins (contact order) [N, N m].
    status : ndarray of object (Python str), shape (N,)
        ``"found"``, ``"infeasible"``, ``"failed"`` or ``"flagged"``.
    residual_force, residual_moment : ndarray, shape (N,)
        ``|f_r|`` [N] and ``|tau_r|`` [N m] of the Newton-Euler residual of the estimates
        (and known wrenches) about the CoM.
    equations_residual : ndarray, shape (N,)
        Largest violation of the hard equations (see :class:`ContactEstimate`).
    data_residual : ndarray, shape (N,)
        Largest misfit of the mode's raw equations.
    cone_margin : ndarray, shape (N, n_contacts)
        Per contact, distance to the nearest linear cone face (negative outside).
    solve_time : ndarray, shape (N,)
        Backend time per sample [s].
    reasons : dict of int to str
        Why each flagged or failed sample is so.
    mode, solver : str
    rank : ndarray of int, shape (N,)
        Rank of each sample's equations (-1 where flagged).
    identifiable : ndarray of bool, shape (N,)
        Whether the equations alone determine every contact's wrench.
    """

    contacts: tuple[Contact, ...]
    wrenches: Array
    status: NDArray[np.object_]
    residual_force: Array
    residual_moment: Array
    equations_residual: Array
    data_residual: Array
    cone_margin: Array
    solve_time: Array
    reasons: dict[int, str]
    mode: str
    solver: str
    rank: NDArray[np.int64]
    identifiable: NDArray[np.bool_]

    def __len__(self) -> int:
        return int(self.wrenches.shape[0])

    def wrench(self, name: str) -> Array:
        """The estimates of one contact, shape (N, 3) or (N, 6), world axes at its origin."""
        col = 0
        for c in self.contacts:
            if c.name == name:
                return self.wrenches[:, col : col + c.size]
            col += c.size
        raise ContactNotFoundError(name, [c.name for c in self.contacts])

    @property
    def found(self) -> NDArray[np.bool_]:
        """``status == "found"``, shape (N,)."""
        return np.asarray(self.status == "found", dtype=bool)

    @property
    def split_from_regularization(self) -> NDArray[np.bool_]:
        """Per sample, whether the split between contacts came from the regularisation
        (False where flagged)."""
        return ~self.identifiable & (self.rank >= 0)

    def status_counts(self) -> dict[str, int]:
        """How many samples have each status (plain Python strings, in :data:`STATUSES`
        order)."""
        return {s: int(np.count_nonzero(self.status == s)) for s in STATUSES
                if np.any(self.status == s)}
