"""QP backends for estimation: qpsolvers calls that keep the backend's reason, the robust
fallback for infeasible samples, daqp's per-sample batch solver, the friction-scale search."""

from __future__ import annotations

import math
from collections.abc import Callable
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
    "BatchSolver",
    "least_friction_scale",
]

Array = NDArray[np.float64]
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


class BatchSolver:
    """Solves one sample's least-norm QP after another: ``min |x|^2`` under the hard
    equations ``E x = t`` and the cones ``G x <= 0``.

    daqp is called through its own ``Model``, set up once and updated per sample (the
    problem's structure does not change between samples: only lever arms, rotations and
    right-hand sides do; in full-dynamics mode a change of rank sets it up again). It starts
    each solve from the previous sample's working set. Other backends go through qpsolvers.
    Callers write the sample into :attr:`A_all` (equation rows then cone rows) and
    :attr:`upper` (the targets) before :meth:`solve`, or use :meth:`solve_arrays`.
    """

    def __init__(self, solver: str, n: int, n_rows: int):
        self.solver = solver
        self.n, self.n_rows = n, n_rows
        self.model: Any = None
        self.m_eq = -1
        self.H, self.f = np.eye(n), np.zeros(n)
        self.buffers(0)

    def buffers(self, m: int) -> None:
        """Set up for ``m`` equation rows (a new model at the next solve)."""
        rows = m + self.n_rows
        self.A_all = np.zeros((rows, self.n))
        self.upper = np.zeros(rows)
        self.lower = np.full(rows, -1e30)
        self.sense = np.zeros(rows, dtype=np.int32)
        self.sense[:m] = 5  # equality rows
        self.m_eq = m
        self.model = None

    def solve_arrays(self, E: Array, t: Array, G: Array) -> tuple[Array | None, str]:
        """Solve with these equations and cones; ``(x, "")`` or ``(None, reason)``."""
        if self.solver != "daqp":
            problem = qpsolvers.Problem(self.H, self.f, G, np.zeros(G.shape[0]), E, t)
            return solve_backend(problem, self.solver, {})
        m = E.shape[0]
        if m != self.m_eq:
            self.buffers(m)
        self.A_all[:m] = E
        self.A_all[m:] = G
        self.upper[:m] = t
        return self.solve()

    def solve(self) -> tuple[Array | None, str]:
        """daqp on the rows already in :attr:`A_all` / :attr:`upper`."""
        m = self.m_eq
        self.lower[:m] = self.upper[:m]
        if self.model is None:
            import daqp

            self.model = daqp.Model()
            self.model.setup(self.H, self.f, self.A_all, self.upper, self.lower, self.sense)
        else:
            self.model.update(A=self.A_all, bupper=self.upper, blower=self.lower)
        x, _, exitflag, _ = self.model.solve()
        x = np.asarray(x)
        if exitflag > 0 and math.isfinite(float(x @ x)):
            return x, ""
        self.model = None  # a failed solve may leave the workspace in a bad state
        return None, f"daqp exit flag {exitflag}"


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
