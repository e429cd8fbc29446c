"""QP backends for estimation: qpsolvers calls that keep the backend's reason, the robust
fallback for infeasible samples, the per-sample QP workspace, the friction-scale search."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import qpsolvers
from numpy.typing import NDArray
from scipy.optimize import linprog, nnls

from ..errors import SolverError, SolverNotAvailableError

__all__ = [
    "DEFAULT_SOLVER",
    "DEFAULT_TOLERANCE",
    "DEFAULT_REGULARIZATION",
    "check_solver",
    "solve_backend",
    "soft_objective",
    "solve_soft",
    "QPWorkspace",
    "least_friction_scale",
]

Array = NDArray[np.float64]
_clock = time.perf_counter
_daqp: Any = None  # the daqp module, imported at the first solve that uses it
#: The backend used when none is named (installed with wholebody).
DEFAULT_SOLVER = "daqp"
#: Verification tolerance, relative to the weight ``m |g|``: 1e-6 is 0.64 mN on the humanoid.
DEFAULT_TOLERANCE = 1e-6
#: ``epsilon`` of the least-squares fallback, relative to the mean diagonal of ``A^T A``
#: (single and batch alike).
DEFAULT_REGULARIZATION = 1e-5
#: The fallback retries with the regularisation multiplied by these factors until its answer
#: is inside the cones (at 1e-9 the fallback's Hessian has condition ~1e9 and daqp has been
#: seen to declare the always-feasible problem infeasible).
REGULARIZATION_STEPS = (1.0, 1e2, 1e4)
#: Options the fallback (always feasible: ``x = 0`` is inside the cones) gives backends that
#: misreport it: proxqp's infeasibility detection has declared it infeasible.
SOFT_OPTIONS: dict[str, dict[str, Any]] = {"proxqp": {"primal_infeasibility_solving": True}}


def check_solver(solver: str) -> None:
    """Raise :class:`SolverNotAvailableError` unless ``solver`` is an installed backend."""
    if solver not in qpsolvers.available_solvers:
        raise SolverNotAvailableError(
            f"QP solver {solver!r} is not installed; installed: "
            f"{', '.join(qpsolvers.available_solvers)}"
            f" (pip install qpsolvers[{solver}] or the solver's own package)"
        )


def solve_backend(
    problem: qpsolvers.Problem, solver: str, options: dict[str, Any], *, unconfirmed: bool = False
) -> tuple[Array | None, str]:
    """Solve through qpsolvers: ``(x, "")``, or ``(None, reason)`` with the backend's own
    error as ``"TYPE: message"``. Options the backend rejects raise :class:`SolverError`.
    ``unconfirmed``: also return a finite ``x`` the backend did not call a solution (the
    caller verifies it)."""
    try:
        sol = qpsolvers.solve_problem(problem, solver=solver, **options)
    except TypeError as exc:
        if options:
            raise SolverError(
                f"QP solver {solver!r} rejected the options {options}: {exc}"
            ) from exc
        return None, f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # the backend's own error: a failed solve, with its reason
        return None, f"{type(exc).__name__}: {exc}"
    x = sol.x
    if x is None or not (sol.found or unconfirmed):
        return None, f"{solver} found no solution"
    x = np.asarray(x, dtype=float)
    if not math.isfinite(float(x @ x)) or not np.all(np.isfinite(x)):
        return None, f"{solver} returned non-finite values"
    return x, ""


def soft_objective(A: Array, b: Array, regularization: float) -> tuple[Array, Array]:
    """P, q of ``|A x - b|^2 + eps |x|^2`` with ``eps = regularization * trace(A^T A) / n``:
    the closest wrenches when the equations cannot be met inside the cones."""
    n = A.shape[1]
    P = A.T @ A
    P = P + regularization * max(float(np.trace(P)) / n, 1e-12) * np.eye(n)
    return P, -A.T @ b


def _violation(G: Array, row_norms: Array, x: Array) -> float:
    return float(np.max(G @ x / row_norms, initial=0.0))


def solve_soft(
    A: Array,
    b: Array,
    G: Array,
    row_norms: Array,
    solver: str,
    regularization: float,
    limit: float,
    options: dict[str, Any] | None = None,
) -> tuple[Array | None, str]:
    """The closest wrenches inside the cones ``G x <= 0``: least squares on ``A x = b``,
    regularised, retried with a larger regularisation until the answer is inside the cones
    within ``limit``. ``(x, "")`` or ``(last answer or None, reasons)``."""
    opts = {**SOFT_OPTIONS.get(solver, {}), **(options or {})}
    reasons, last = [], None
    for factor in REGULARIZATION_STEPS:
        eps = regularization * factor
        P, q = soft_objective(A, b, eps)
        if solver == "daqp":
            x, why = _daqp_solve(P, q, G)
        else:
            x, why = solve_backend(
                qpsolvers.Problem(P, q, G, np.zeros(G.shape[0])), solver, opts, unconfirmed=True
            )
        if x is not None:
            violation = _violation(G, row_norms, x)
            if violation <= limit and _optimal(P, q, G, row_norms, x, limit):
                return x, ""
            last, why = x, f"not verified (outside the cones by {violation:.3g} or not optimal)"
        reasons.append(f"fallback at regularisation {eps:.0e}: {why}")
    return last, "; ".join(reasons)


def _optimal(P: Array, q: Array, G: Array, row_norms: Array, x: Array, limit: float) -> bool:
    """KKT check of ``min x'Px/2 + q'x, G x <= 0`` at ``x``: multipliers ``z >= 0`` on the
    rows active within ``limit`` with ``P x + q + G^T z = 0``, to 1e-6 of ``|q|`` (NNLS)."""
    gradient = P @ x + q
    active = G @ x / row_norms >= -limit
    scale = max(float(np.linalg.norm(q)), 1e-12)
    if not active.any():
        return float(np.linalg.norm(gradient)) <= 1e-6 * scale
    _, residual = nnls(G[active].T, -gradient)
    return float(residual) <= 1e-6 * scale


def _daqp_solve(P: Array, q: Array, G: Array) -> tuple[Array | None, str]:
    import daqp

    x, _, exitflag, _ = daqp.solve(P, q, G, np.zeros(G.shape[0]))
    x = np.asarray(x)
    if exitflag > 0 and math.isfinite(float(x @ x)):
        return x, ""
    return None, f"daqp exit flag {exitflag}"


class QPWorkspace:
    """The least-norm QP of one sample after another: ``min |x|^2`` under the hard equations
    ``E x = t`` and the cones ``G x <= 0``, given as stacked rows ``[E; G]`` with bounds.

    daqp (the default) is called through its own ``Model``, set up once and updated per
    sample: the structure does not change between samples (only lever arms, rotations and
    right-hand sides do; a change in the number of equation rows sets it up again), and each
    solve starts from the previous sample's working set. Another backend, or daqp with
    ``options``, goes through :func:`solve_backend` (qpsolvers). ``fixed``: every solve has
    the same rows and bounds (one problem solved again): the model set up is solved again.
    """

    def __init__(
        self, solver: str, n: int, options: dict[str, Any] | None = None, *, fixed: bool = False
    ):
        self.solver, self.options, self.fixed = solver, dict(options or {}), fixed
        self.native = solver == "daqp" and not self.options
        self.H, self.f = np.eye(n), np.zeros(n)
        self.model: Any = None
        self.n_eq = -1

    def solve(self, rows: Array, upper: Array, lower: Array, n_eq: int) -> tuple[Array | None, str]:
        """Solve with ``rows`` (m, n) = ``[E; G]`` (the first ``n_eq`` rows are equations
        ``E x = upper[:n_eq]``; ``lower`` equals ``upper`` there and is very negative on the
        cone rows, whose upper bound is 0): ``(x, "")`` or ``(None, reason)``. A non-finite
        ``x`` fails the caller's verification."""
        if not self.native:
            problem = qpsolvers.Problem(
                self.H, self.f, rows[n_eq:], upper[n_eq:], rows[:n_eq], upper[:n_eq]
            )
            return solve_backend(problem, self.solver, self.options)
        model = self.model
        if model is None or n_eq != self.n_eq:
            model = self._setup(rows, upper, lower, n_eq)
            if isinstance(model, str):
                return None, model
        else:
            model.update(None, None, rows, upper, lower)  # A, bupper, blower
        x, _, exitflag, _ = model.solve()
        if exitflag > 0:
            return x, ""
        self.model = None  # a failed solve may leave the workspace in a bad state
        return None, f"daqp exit flag {exitflag}"

    def _setup(self, rows: Array, upper: Array, lower: Array, n_eq: int) -> Any:
        """A new daqp model on these rows (the reason as a string when daqp refuses them)."""
        global _daqp
        if _daqp is None:
            import daqp

            _daqp = daqp
        sense = np.zeros(len(upper), dtype=np.intc)
        sense[:n_eq] = 5  # equality rows
        model, self.model, self.n_eq = _daqp.Model(), None, n_eq
        try:
            if model.setup(self.H, self.f, rows, upper, lower, sense)[0] < 0:
                return "daqp refused the problem"
        except Exception as exc:  # the backend's own error: a failed solve, with its reason
            return f"{type(exc).__name__}: {exc}"
        self.model = model
        return model

    def solve_all(
        self,
        views: Sequence[tuple[Array, Array, Array]],
        samples: Iterable[int],
        n_eq: int,
        X: Array,
        times: Array,
        why: dict[int, str],
    ) -> None:
        """:meth:`solve` for each sample ``c`` of ``samples`` (``views[c]``: its rows and
        bounds, ``n_eq`` equations each): the answer into ``X[c, :n]`` (NaN when none), the
        backend's time into ``times[c]`` [s], its reason into ``why[c]``."""
        n, clock, todo = X.shape[1] - 1, _clock, iter(samples)
        for c in todo:
            model = self.model
            if model is not None and self.native and n_eq == self.n_eq:
                # The per-sample case of solve, on the model set up, until a sample fails.
                update, solve, fixed = model.update, model.solve, self.fixed
                while True:
                    rows, upper, lower = views[c]
                    t0 = clock()
                    if not fixed:
                        update(None, None, rows, upper, lower)  # A, bupper, blower
                    x, _, exitflag, _ = solve()
                    times[c] = clock() - t0
                    if exitflag <= 0:
                        self.model = None  # a failed solve may leave the model in a bad state
                        X[c, :n], why[c] = np.nan, f"daqp exit flag {exitflag}"
                        break
                    X[c, :n] = x
                    c = next(todo, -1)
                    if c < 0:
                        return
                continue
            rows, upper, lower = views[c]
            t0 = clock()
            answer, reason = self.solve(rows, upper, lower, n_eq)
            times[c] = clock() - t0
            if answer is None:
                X[c, :n], why[c] = np.nan, reason
            else:
                X[c, :n] = answer


def _feasible(A: Array, b: Array, G: Array) -> bool:
    """Is {x : A x = b, G x <= 0} non-empty? (an LP, HiGHS)"""
    res = linprog(
        np.zeros(A.shape[1]),
        A_ub=G,
        b_ub=np.zeros(G.shape[0]),
        A_eq=A,
        b_eq=b,
        bounds=[(None, None)] * A.shape[1],
        method="highs",
    )
    return bool(res.status == 0)


def least_friction_scale(
    A: Array, b: Array, cones: Callable[[float], Array], upper: float = 1000.0
) -> float | None:
    """Bisection on a common factor s >= 1 on every mu: least s with ``A x = b`` feasible
    inside ``cones(s)`` (the face matrix with every mu scaled by s).

    Called with the Newton-Euler rows (necessary in both modes). None when even ``upper``
    does not make the sample feasible: friction is not the cause (the CoP would leave the
    soles).
    """
    if not _feasible(A, b, cones(upper)):
        return None
    lo, hi = 1.0, upper
    while hi / lo > 1 + 1e-4:
        mid = math.sqrt(lo * hi)
        if _feasible(A, b, cones(mid)):
            hi = mid
        else:
            lo = mid
    return hi
