"""How sure an estimate is: intervals for estimated contact wrenches.

Two sources of doubt, combined per wrench component:

Noise (linearised)
    Where the active cone faces do not change, the least-norm estimate is linear in the
    equations' right-hand side ``t``: with ``K = [E; G_act]`` (the hard equations and the
    cone rows the answer lies on, active contacts' columns only),

    .. math::  \\delta x = K^+_{[:, :m]} \\, \\delta t, \\qquad
               \\Sigma_x = L \\Sigma_t L^T

    ``t`` depends on the measured accelerations (Newton-Euler mode: ``t = A_G a + ...``
    with the centroidal map ``A_G``; full-dynamics mode: ``b = M a + h - S^T tau`` and
    ``t = U_r^T b``) and on the joint torques. The stated noise levels
    (:class:`NoiseLevels`, independent, zero-mean) give ``Sigma_t``; the interval is
    ``x +- z sigma`` with ``z`` the two-sided normal quantile of ``confidence``. Noise of
    ``v`` enters through differentiated accelerations (:meth:`NoiseLevels.from_velocity_noise`);
    its direct effect through the Coriolis terms is neglected.
Split (exact, for contacts the equations do not determine)
    The range of each component over every split that meets the equations inside the
    cones: two linear programs per component (minimise and maximise it subject to
    ``E x = t``, ``G x <= 0``, inactive contacts zero). The interval then covers that range,
    widened by the noise.

So a user reads "left_sole f_z 120-330 N" (:meth:`WrenchIntervals.describe`) instead of
one number.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import linprog

from ..contacts import Contact
from ..errors import ContactNotFoundError, InvalidArgumentError
from ..robot.core import Robot

__all__ = ["NoiseLevels", "WrenchIntervals", "wrench_intervals", "batch_intervals", "COMPONENTS"]

Array = NDArray[np.float64]
#: Names of a wrench's components, force first (a point contact has the first three).
COMPONENTS = ("f_x", "f_y", "f_z", "tau_x", "tau_y", "tau_z")
#: A cone row counts as active when the answer is within this fraction of the weight of it.
ACTIVE_ROW_TOL = 1e-7


@dataclass(frozen=True)
class NoiseLevels:
    """Stated noise of the measurements: standard deviations, independent, zero-mean.

    Attributes
    ----------
    acceleration : float or array, shape (nv,)
        Of each component of ``a`` (base linear, base angular in the base frame, joints)
        [m/s^2, rad/s^2].
    torque : float or array, shape (nv - 6,)
        Of each joint torque [N m] (full-dynamics mode).
    """

    acceleration: Any = 0.0
    torque: Any = 0.0

    @classmethod
    def from_velocity_noise(cls, velocity: Any, timestep: float, torque: Any = 0.0) -> NoiseLevels:
        """Noise of accelerations differentiated from velocities by central differences:
        ``a_i = (v_{i+1} - v_{i-1}) / (2 dt)`` gives ``sigma_a = sigma_v / (sqrt(2) dt)``.

        ``velocity`` [m/s, rad/s] (scalar or (nv,)), ``timestep`` [s].
        """
        if not timestep > 0:
            raise InvalidArgumentError(f"timestep must be positive [s], got {timestep}")
        return cls(np.asarray(velocity, dtype=float) / (math.sqrt(2.0) * timestep), torque)

    def sigmas(self, robot: Robot) -> tuple[Array, Array]:
        """(nv,) of ``a`` and (nv,) of the generalized torques (zero on the base)."""
        nv = robot.nv
        n_base = 6 if robot.has_floating_base else 0
        sa = np.broadcast_to(np.asarray(self.acceleration, dtype=float), (nv,)).copy()
        st = np.asarray(self.torque, dtype=float)
        try:
            st = np.r_[np.zeros(n_base), np.broadcast_to(st, (nv - n_base,))]
        except ValueError:
            raise InvalidArgumentError(
                f"noise torque must be a scalar or shape ({nv - n_base},), got {st.shape}"
            ) from None
        if (
            np.any(sa < 0)
            or np.any(st < 0)
            or not (np.isfinite(sa).all() and np.isfinite(st).all())
        ):
            raise InvalidArgumentError("noise levels must be finite and non-negative")
        return sa, st


@dataclass(frozen=True)
class WrenchIntervals:
    """Intervals of estimated wrench components, one sample (n,) or a batch (N, n).

    Columns follow the stacked unknowns: each contact's ``(f, tau)`` (or ``f``), world axes
    at its frame origin [N, N m].

    Attributes
    ----------
    contacts : tuple of Contact
    estimate : ndarray, shape (..., n)
        The estimate the intervals are about.
    std : ndarray, shape (..., n)
        Linearised standard deviation from the stated noise [N, N m].
    split_lower, split_upper : ndarrays, shape (..., n)
        Range of each component over the splits that meet the equations inside the cones,
        for contacts the equations do not determine (NaN for the others).
    lower, upper : ndarrays, shape (..., n)
        The interval: the split range (or the estimate) widened by ``z * std``.
    confidence : float
        Two-sided level of the noise part (``z`` its normal quantile).
    """

    contacts: tuple[Contact, ...]
    estimate: Array
    std: Array
    split_lower: Array
    split_upper: Array
    lower: Array
    upper: Array
    confidence: float

    def _cols(self, name: str) -> slice:
        col = 0
        for c in self.contacts:
            if c.name == name:
                return slice(col, col + c.size)
            col += c.size
        raise ContactNotFoundError(name, [c.name for c in self.contacts])

    def contact(self, name: str) -> tuple[Array, Array]:
        """``(lower, upper)`` of one contact, shapes (..., 3) or (..., 6)."""
        cols = self._cols(name)
        return self.lower[..., cols], self.upper[..., cols]

    def contains(self, wrenches: ArrayLike) -> NDArray[np.bool_]:
        """Whether each component of ``wrenches`` (..., n) lies in its interval."""
        w = np.asarray(wrenches, dtype=float)
        return (self.lower <= w) & (w <= self.upper)

    def describe(self, name: str, component: str = "f_z", sample: int | None = None) -> str:
        """One line, e.g. ``"left_sole f_z 120-330 N (estimate 225 N)"``."""
        cols = self._cols(name)
        if component not in COMPONENTS[: cols.stop - cols.start]:
            raise InvalidArgumentError(
                f"component must be one of {COMPONENTS[: cols.stop - cols.start]}, "
                f"got {component!r}"
            )
        j = cols.start + COMPONENTS.index(component)
        index: Any = (j,) if sample is None else (sample, j)
        if self.lower.ndim == 2 and sample is None:
            raise InvalidArgumentError("a batch needs sample=i")
        unit = "N" if component.startswith("f") else "N m"
        lo, hi, x = self.lower[index], self.upper[index], self.estimate[index]
        return f"{name} {component} {lo:.4g}-{hi:.4g} {unit} (estimate {x:.4g} {unit})"

    def summary(self) -> str:
        """The normal-force line of every contact (one sample)."""
        if self.lower.ndim != 1:
            return f"intervals of {self.lower.shape[0]} samples at {self.confidence:.3g}"
        return "\n".join(f"  {self.describe(c.name, 'f_z')}" for c in self.contacts)

    @staticmethod
    def concatenate(
        parts: Sequence[tuple[int, WrenchIntervals | None]],
        contacts: tuple[Contact, ...],
        confidence: float,
    ) -> WrenchIntervals:
        """Batch intervals of consecutive chunks ``(length, intervals or None)``."""
        n = sum(c.size for c in contacts)
        fields = ("estimate", "std", "split_lower", "split_upper", "lower", "upper")
        arrays: dict[str, list[Array]] = {f: [] for f in fields}
        for length, part in parts:
            for f in fields:
                arrays[f].append(np.full((length, n), np.nan) if part is None else getattr(part, f))
        merged = [np.concatenate(arrays[f]) for f in fields]
        return WrenchIntervals(
            contacts, merged[0], merged[1], merged[2], merged[3], merged[4], merged[5], confidence
        )


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise InvalidArgumentError(f"confidence must be in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def _target_sensitivity(
    robot: Robot, problem: Any, q: Array, v: Array, sa: Array, st: Array
) -> Array:
    """Covariance of the hard target ``t`` (m, m) from the noise of ``a`` and ``tau``."""
    nv = robot.nv
    if problem.mode == "full_dynamics":
        # b = rnea(q, v, a) - S^T tau - ...: db = M da - d tau_gen; t = U_r^T b.
        M = robot.mass_matrix(q)
        cov_b = (M * sa**2) @ M.T + np.diag(st**2)
        T = problem.target_map
        return T @ cov_b @ T.T
    # t = (dP/dt, dL_G/dt) - m g - known: the momentum rate is affine in a.
    zero = np.zeros(nv)
    base = robot.centroidal_momentum_rate(q, v, zero)
    Ag = np.empty((6, nv))
    for i in range(nv):
        if sa[i] == 0.0:
            Ag[:, i] = 0.0
            continue
        e = zero.copy()
        e[i] = 1.0
        Ag[:, i] = robot.centroidal_momentum_rate(q, v, e) - base
    return (Ag * sa**2) @ Ag.T


def _intervals_one(
    robot: Robot,
    problem: Any,
    x: Array,
    q: Array,
    v: Array,
    noise: NoiseLevels,
    z: float,
    split_ranges: bool,
) -> tuple[Array, Array, Array]:
    n = x.size
    nan = np.full(n, np.nan)
    if not np.all(np.isfinite(x)):
        return nan, nan.copy(), nan.copy()
    cset = problem._contact_set()
    act = problem.active if problem.active is not None else np.ones(len(cset), dtype=bool)
    cols = np.repeat(act, cset.sizes)
    E, t, G = problem.equations, problem.target, problem.cones
    rows_act = np.zeros(G.shape[0], dtype=bool)
    for j, r in enumerate(cset.rows):
        rows_act[r] = act[j]
    on_face = (G @ x / cset.row_norms >= -ACTIVE_ROW_TOL * problem.weight) & rows_act
    K = np.vstack([E[:, cols], G[on_face][:, cols]])
    L = np.zeros((n, E.shape[0]))
    L[cols] = np.linalg.pinv(K)[:, : E.shape[0]]
    sa, st = noise.sigmas(robot)
    cov_t = _target_sensitivity(robot, problem, q, v, sa, st)
    std = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", L, cov_t, L), 0.0))
    lo, hi = nan.copy(), nan.copy()
    ident = (
        problem.identifiable_by_contact
        if problem.identifiable_by_contact is not None
        else np.full(len(cset), problem.identifiable)
    )
    if split_ranges and not ident.all():
        bounds = [(None, None) if c else (0.0, 0.0) for c in cols]
        for j, c in enumerate(cset.cols):
            if ident[j]:
                continue
            for col in range(c.start, c.stop):
                for sign, out in ((1.0, lo), (-1.0, hi)):
                    cost = np.zeros(n)
                    cost[col] = sign
                    res = linprog(
                        cost,
                        A_ub=G,
                        b_ub=np.zeros(G.shape[0]),
                        A_eq=E,
                        b_eq=t,
                        bounds=bounds,
                        method="highs",
                    )
                    if res.status == 0:
                        out[col] = res.x[col]
    has = np.isfinite(lo) & np.isfinite(hi)
    lower = np.where(has, np.minimum(lo, x), x) - z * std
    upper = np.where(has, np.maximum(hi, x), x) + z * std
    return std, np.stack([lo, hi]), np.stack([lower, upper])


def wrench_intervals(
    robot: Robot,
    problem: Any,
    estimate: Any,
    q: ArrayLike,
    v: ArrayLike,
    noise: NoiseLevels,
    *,
    confidence: float = 0.95,
    split_ranges: bool = True,
) -> WrenchIntervals:
    """Intervals of one estimate (see the module's text for the method).

    Parameters
    ----------
    problem : EstimationProblem
        The problem the estimate solved.
    estimate : ContactEstimate or ndarray, shape (n,)
    q : array, shape (nq,)
    v : array, shape (nv,)
    noise : NoiseLevels
    confidence : float
        Two-sided level of the noise part.
    split_ranges : bool
        Also the exact range of splits for contacts the equations do not determine
        (2 LPs per component).
    """
    x = np.asarray(getattr(estimate, "x", estimate), dtype=float)
    z = _z(confidence)
    std, split, bounds = _intervals_one(
        robot, problem, x, *robot._check_qv(q, v), noise, z, split_ranges
    )
    return WrenchIntervals(
        problem.contacts, x, std, split[0], split[1], bounds[0], bounds[1], confidence
    )


def batch_intervals(
    robot: Robot,
    problem: Callable[[int], Any],
    Q: Array,
    V: Array,
    wrenches: Array,
    status: NDArray[np.object_],
    cset: Any,
    noise: NoiseLevels,
    confidence: float,
) -> WrenchIntervals:
    """Intervals of a batch: ``problem(i)`` rebuilds sample i's problem; samples whose
    status is ``"found"`` or ``"infeasible"`` get intervals, the others NaN."""
    z = _z(confidence)
    N, n = wrenches.shape
    std = np.full((N, n), np.nan)
    split = np.full((2, N, n), np.nan)
    bounds = np.full((2, N, n), np.nan)
    for i in np.flatnonzero((status == "found") | (status == "infeasible")).tolist():
        s, sp, b = _intervals_one(robot, problem(i), wrenches[i], Q[i], V[i], noise, z, True)
        std[i], split[:, i], bounds[:, i] = s, sp, b
    return WrenchIntervals(
        tuple(cset.contacts),
        wrenches.copy(),
        std,
        split[0],
        split[1],
        bounds[0],
        bounds[1],
        confidence,
    )
