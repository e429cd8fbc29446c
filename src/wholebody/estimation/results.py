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

Whether the split between contacts is determined is separate from the status (a found
estimate meets its equations): ``rank``, ``identifiable`` (all active contacts),
``identifiable_by_contact`` (which contacts' wrenches the equations determine: the null
space of the equation matrix has no component on their columns) and
``split_from_regularization`` / ``split_from_regularization_by_contact`` (the least-norm
split of the others). :attr:`ContactEstimate.detailed_status` folds both into one word:
``"underdetermined"`` for a found estimate whose split came from the regularisation.
Inactive contacts (``active`` False) are fixed to zero and count as identifiable.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..balance.cop import cop_in_contact_frame
from ..balance.core import Residual
from ..contacts import Contact
from ..errors import ContactNotFoundError
from ..friction import ContactSet

__all__ = [
    "ContactEstimate",
    "EstimationBatch",
    "estimate_status",
    "status_reason",
    "make_estimate",
    "derived_fields",
    "STATUSES",
    "DETAILED_STATUSES",
]

Array = NDArray[np.float64]
#: Every status an estimate can have.
STATUSES = ("found", "infeasible", "failed", "flagged")
#: Every value of ``detailed_status``: the statuses, with ``"underdetermined"`` for a found
#: estimate whose split between contacts came from the regularisation.
DETAILED_STATUSES = ("found", "underdetermined", "infeasible", "failed", "flagged")


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
        (shape () when ``equations_residual`` and ``cone_violation`` are Python floats: one
        sample) ``"found"`` (inside, equations met, not the fallback), ``"infeasible"``
        (the fallback, inside, equations not met), else ``"failed"`` (including a fallback
        that meets the equations: the problem was feasible and the backend failed it).
    """
    if type(equations_residual) is float and type(cone_violation) is float:
        # one sample (Python floats): the same rule without arrays, a 0-d result
        inside, meets = cone_violation <= limit, equations_residual <= limit
        one = "failed"
        if inside and meets and not fallback:
            one = "found"
        elif inside and not meets and fallback:
            one = "infeasible"
        return np.array(one, dtype=object)
    eq = np.asarray(equations_residual, dtype=float)
    with np.errstate(invalid="ignore"):
        inside = np.asarray(cone_violation, dtype=float) <= limit
        meets = eq <= limit
    fb = np.asarray(fallback, dtype=bool)
    status = np.full(eq.shape, "failed", dtype=object)
    status[inside & meets & ~fb] = "found"
    status[inside & ~meets & fb] = "infeasible"
    return status


def status_reason(
    status: str, equations_residual: float, cone_violation: float, limit: float, backend: str = ""
) -> str:
    """Why a sample has its status, in words ("" for ``"found"``); ``backend`` is what the
    backend said (its exception as ``"TYPE: message"``, or that it found no solution)."""
    if status == "found":
        return ""
    if status == "infeasible":
        return (
            f"no wrenches inside the cones meet the equations: the closest miss them by "
            f"{equations_residual:.3g} (limit {limit:.3g})"
        )
    if not math.isfinite(equations_residual):
        return f"no solution came back: {backend or 'the backend gave nothing'}"
    if not cone_violation <= limit:
        return f"the answer leaves the cones by {cone_violation:.3g} (limit {limit:.3g})" + (
            f"; {backend}" if backend else ""
        )
    return f"the problem is feasible but the backend failed it: {backend or 'no reason given'}"


def derived_fields(
    cset: ContactSet,
    x: Array,
    rotations: Array,
    residual: Residual,
    equations: float,
    data: float,
    margins: Array,
) -> dict[str, Any]:
    """The fields of a :class:`ContactEstimate` that follow from its answer ``x`` (n,):
    wrenches per contact (world axes and, with ``rotations`` (k, 3, 3) world from contact,
    each contact's axes), centres of pressure, and the residuals and margins given."""
    blocks = np.repeat(rotations[: len(cset)], [size // 3 for size in cset.sizes], axis=0)
    x_local = np.matmul(x.reshape(-1, 1, 3), blocks).ravel()  # R^T w of every 3-block
    wrenches, local, cops = {}, {}, {}
    for c, cols in zip(cset.contacts, cset.cols, strict=True):
        wrenches[c.name] = x[cols].copy()
        local[c.name] = loc = x_local[cols]
        if c.size == 6:
            cops[c.name] = cop_in_contact_frame(loc)
    return {
        "wrenches": wrenches,
        "wrenches_local": local,
        "centres_of_pressure": cops,
        "newton_euler_residual": residual,
        "equations_residual": equations,
        "data_residual": data,
        "cone_margins": dict(zip(cset.names, margins.tolist(), strict=True)),
    }


def make_estimate(
    cset: ContactSet,
    x: Array,
    status: str,
    reason: str,
    mode: str,
    solver: str,
    solve_time: float,
    rank: int,
    identifiable: NDArray[np.bool_],
    active: NDArray[np.bool_] | None,
    scale: float | None,
    intervals: Any,
    derive: Callable[[], dict[str, Any]],
) -> ContactEstimate:
    """A :class:`ContactEstimate` whose fields of :func:`derived_fields` ``derive()`` gives
    at their first read (the wrenches alone are read from ``x``, which the estimate keeps
    while its ``x`` is a copy the caller may change). ``identifiable`` and ``active`` (k,)
    per contact (``active`` None: all)."""
    names = cset.names
    ident = identifiable.tolist()
    estimate = object.__new__(ContactEstimate)
    estimate.__dict__.update(
        {
            "status": status,
            "mode": mode,
            "solver": solver,
            "solve_time": float(solve_time),
            "rank": int(rank),
            "identifiable": all(ident),
            "min_friction_scale": scale,
            "x": x.copy(),
            "friction": {c.name: c.mu for c in cset.contacts},
            "reason": reason,
            "active": dict.fromkeys(names, True)
            if active is None
            else dict(zip(names, active.tolist(), strict=True)),
            "identifiable_by_contact": dict.fromkeys(names, True)
            if all(ident)
            else dict(zip(names, ident, strict=True)),
            "intervals": intervals,
            "_x": x,
            "_cset": cset,
            "_derive": derive,
        }
    )
    return estimate


class _Derived:
    """A field of :class:`ContactEstimate` computed at first read (all such fields at once,
    from the answer and the pass the estimate keeps), then kept. Set like any other field;
    the dataclass sees a field without a default."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            raise AttributeError(self.name)  # no class-level default: the field is required
        values = obj.__dict__
        try:
            return values[self.name]
        except KeyError:
            cset = values.get("_cset")
            if self.name == "wrenches" and cset is not None:
                # The wrenches are slices of x: no need to derive the rest (the recipe later
                # gives the same values).
                x = values["_x"]
                values["wrenches"] = wrenches = {
                    name: x[cols].copy() for name, cols in zip(cset.names, cset.cols, strict=True)
                }
                return wrenches
            _derive_now(values)
            return values[self.name]

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.name] = value


def _derive_now(values: dict[str, Any]) -> None:
    """Fill a :class:`ContactEstimate`'s derived fields from its recipe, if it still has one
    (values first, then the recipe goes: a concurrent reader finds one or the other)."""
    derive = values.get("_derive")
    if derive is not None:
        derived = derive()
        if "wrenches" in values:  # read before from x (the same values): keep that object
            derived.pop("wrenches", None)
        values.update(derived)
        values.pop("_derive", None)


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
        Whether the equations alone determine every active contact's wrench.
    min_friction_scale : float or None
        For an infeasible sample, the least factor on every ``mu`` that makes it feasible
        (None when not computed or when no factor up to 1000 does).
    x : ndarray
        The stacked solution.
    friction : dict of str to float
        Each contact's ``mu``.
    reason : str
        Why the status is not ``"found"`` ("" when it is).
    active : dict of str to bool
        Whether each contact was allowed to carry a wrench (inactive ones are zero).
    identifiable_by_contact : dict of str to bool
        Whether the equations determine each contact's wrench (inactive: True).
    intervals : WrenchIntervals or None
        Per component, the range consistent with the stated noise (and, for contacts whose
        split is not identifiable, with the cones); see :mod:`wholebody.estimation.uncertainty`.
    """

    status: str
    # Derived from x and the problem: after a fast solve, computed at first read (the values
    # an eager computation gives). Type checkers see plain fields.
    if TYPE_CHECKING:
        wrenches: dict[str, Array]
        wrenches_local: dict[str, Array]
        centres_of_pressure: dict[str, Array]
        newton_euler_residual: Residual
        equations_residual: float
        data_residual: float
        cone_margins: dict[str, float]
    else:
        wrenches: dict[str, Array] = _Derived()
        wrenches_local: dict[str, Array] = _Derived()
        centres_of_pressure: dict[str, Array] = _Derived()
        newton_euler_residual: Residual = _Derived()
        equations_residual: float = _Derived()
        data_residual: float = _Derived()
        cone_margins: dict[str, float] = _Derived()
    mode: str
    solver: str
    solve_time: float
    rank: int
    identifiable: bool
    min_friction_scale: float | None
    x: Array
    friction: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    active: dict[str, bool] = field(default_factory=dict)
    identifiable_by_contact: dict[str, bool] = field(default_factory=dict)
    intervals: Any = None

    def __getstate__(self) -> dict[str, Any]:
        _derive_now(self.__dict__)  # pickles and copies carry values, not the recipe
        state = dict(self.__dict__)
        state.pop("_cset", None)  # the contacts' cones: not data
        state.pop("_x", None)
        return state

    @property
    def is_batch(self) -> bool:
        """False: one sample (an :class:`EstimationBatch` holds N)."""
        return False

    @property
    def found(self) -> bool:
        """``status == "found"``."""
        return self.status == "found"

    @property
    def split_from_regularization_by_contact(self) -> dict[str, bool]:
        """Per contact, whether its wrench came from the least-norm split (active and not
        identifiable)."""
        return {
            n: self.active.get(n, True) and not ok for n, ok in self.identifiable_by_contact.items()
        }

    @property
    def detailed_status(self) -> str:
        """``status``, with ``"underdetermined"`` for a found estimate whose split came from
        the regularisation (see :data:`DETAILED_STATUSES`)."""
        if self.status == "found" and self.split_from_regularization:
            return "underdetermined"
        return self.status

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
        if self.active and not all(self.active.values()):
            how += "; inactive: " + ", ".join(n for n, a in self.active.items() if not a)
        lines = [
            f"status {self.status} ({self.mode}, {self.solver}, {1e6 * self.solve_time:.0f} us); "
            f"rank {self.rank}, {how}",
            f"Newton-Euler residual {self.newton_euler_residual.force_norm:.2e} N, "
            f"{self.newton_euler_residual.moment_norm:.2e} N m",
        ]
        if self.reason:
            lines.insert(1, f"reason: {self.reason}")
        for name, w in self.wrenches.items():
            lines.append(
                f"  {name}: {np.array2string(w, precision=2, suppress_small=True)}"
                f"  margin {self.cone_margins[name]:.3g}"
            )
        if self.min_friction_scale is not None:
            lines.append(f"feasible with every mu scaled by {self.min_friction_scale:.3f}")
        if self.intervals is not None:
            lines.append(self.intervals.summary())
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
    residual_force, residual_moment : ndarray, shape (N, 3)
        The Newton-Euler residual of the estimates (and known wrenches) about the CoM, world
        axes [N], [N m] (vectors, as everywhere; the norms are ``residual_force_norm`` and
        ``residual_moment_norm``).
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
        Whether the equations alone determine every active contact's wrench (False where
        flagged).
    active : ndarray of bool, shape (N, k)
        Whether each contact was allowed to carry a wrench (inactive ones are zero).
    identifiable_by_contact : ndarray of bool, shape (N, k)
        Whether the equations determine each contact's wrench (inactive: True; False where
        flagged).
    min_friction_scale : ndarray, shape (N,)
        For infeasible samples when asked for (``friction_scale=True``), the least factor on
        every ``mu`` that makes the sample feasible; NaN elsewhere.
    intervals : WrenchIntervals or None
        With ``intervals=True``: per sample and component, the range consistent with the
        stated noise and the cones (arrays of shape (N, n)).
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
    active: NDArray[np.bool_] | None = None
    identifiable_by_contact: NDArray[np.bool_] | None = None
    min_friction_scale: Array | None = None
    intervals: Any = None

    def __len__(self) -> int:
        return int(self.wrenches.shape[0])

    @property
    def is_batch(self) -> bool:
        """True: N samples (a :class:`ContactEstimate` holds one)."""
        return True

    @property
    def residual_force_norm(self) -> Array:
        """``|f_r|`` per sample [N], shape (N,)."""
        return np.linalg.norm(self.residual_force, axis=1)

    @property
    def residual_moment_norm(self) -> Array:
        """``|tau_r|`` about the CoM per sample [N m], shape (N,)."""
        return np.linalg.norm(self.residual_moment, axis=1)

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

    @property
    def split_from_regularization_by_contact(self) -> NDArray[np.bool_]:
        """(N, k): active, not identifiable, not flagged."""
        assert self.active is not None and self.identifiable_by_contact is not None
        return self.active & ~self.identifiable_by_contact & (self.rank >= 0)[:, None]

    @property
    def detailed_status(self) -> NDArray[np.object_]:
        """(N,) ``status`` with ``"underdetermined"`` for found samples whose split came from
        the regularisation (plain Python strings, see :data:`DETAILED_STATUSES`)."""
        out = self.status.copy()
        out[(self.status == "found") & self.split_from_regularization] = "underdetermined"
        return out

    def with_flagged(self, samples: ArrayLike, reason: str) -> EstimationBatch:
        """A copy with ``samples`` (indices) flagged for ``reason``: what the caller knows
        is wrong with them beyond the states (a time stamp that is not finite), with NaN
        results as every flagged sample has."""
        rows = np.asarray(samples, dtype=np.intp)
        if not rows.size:
            return self
        arrays = {
            name: getattr(self, name).copy()
            for name in (
                "wrenches",
                "residual_force",
                "residual_moment",
                "equations_residual",
                "data_residual",
                "cone_margin",
                "solve_time",
            )
        }
        for x in arrays.values():
            x[rows] = np.nan
        status, rank, ident = self.status.copy(), self.rank.copy(), self.identifiable.copy()
        status[rows], rank[rows], ident[rows] = "flagged", -1, False
        by_contact = self.identifiable_by_contact
        if by_contact is not None:
            by_contact = by_contact.copy()
            by_contact[rows] = False
        reasons = self.reasons | dict.fromkeys(rows.tolist(), reason)
        return replace(
            self,
            **arrays,
            status=status,
            rank=rank,
            identifiable=ident,
            identifiable_by_contact=by_contact,
            reasons=dict(sorted(reasons.items())),
        )

    def status_counts(self, detailed: bool = False) -> dict[str, int]:
        """How many samples have each status (plain Python strings, in :data:`STATUSES`
        order; ``detailed``: of :attr:`detailed_status`)."""
        status, names = (
            (self.detailed_status, DETAILED_STATUSES) if detailed else (self.status, STATUSES)
        )
        return {s: int(np.count_nonzero(status == s)) for s in names if np.any(status == s)}
