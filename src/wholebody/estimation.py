"""Contact-wrench estimation by quadratic programming: build the problem, then solve it.

Unknowns ``x``: the contact wrenches stacked in contact order, world axes at each contact
frame's origin (3 per :class:`PointContact`, 6 per :class:`SurfaceContact`), inside their
friction cones ``G x <= 0`` (inner k-face pyramids for points, the closed-form wrench cone
for soles; see :mod:`wholebody.friction`).

Two modes:

``"newton_euler"`` (no joint torques known)
    The six Newton-Euler equations ``A_ne x = b_ne`` (about the CoM) hold exactly, and the
    split between contacts is the one of least norm:

    .. math::  \\min_x \\|x\\|^2 \\quad \\text{s.t.} \\quad A_{ne} x = b_{ne}, \\; G x \\le 0

    The total wrench is determined by the motion; the split comes from the regularisation,
    and the result says so (``split_from_regularization``).

``"full_dynamics"`` (measured joint torques ``tau``)
    All nv equations of motion ``J_c^T x = b = M a + h - S^T tau - sum_e J_e^T w_e`` in the
    least-squares sense. With the thin SVD ``J_c^T = U diag(s) V^T`` restricted to its rank
    r, every least-squares solution satisfies ``diag(s) V^T x = U^T b`` (r rows); among them
    the QP takes the one of least norm:

    .. math::  \\min_x \\|x\\|^2 \\quad \\text{s.t.} \\quad \\mathrm{diag}(s) V^T x = U^T b, \\; G x \\le 0

    When ``r = n`` (full column rank) each contact's wrench is identifiable and the answer is
    the least-squares one; otherwise the split in the null space is the least-norm one. The
    rank is reported; the answer is unique, so every backend gives the same one.

A solution is ``found`` only once verified: finite, equations met and cones respected within
``tolerance * m |g|`` (backends have been seen to report success with NaN or wrong answers).
When the hard problem has no solution, the closest wrenches inside the cones (least squares
on the raw equations, lightly regularised) are returned with status ``"infeasible"`` and,
for single samples, the least friction scale that would make the sample feasible; a backend
that fails a feasible problem gives ``"failed"``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import qpsolvers
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import linprog

from .balance import Residual, cop_in_contact_frame
from .contacts import Contact, SurfaceContact
from .errors import SolverNotAvailableError, StateError
from .friction import contact_wrench_cone, friction_pyramid, in_world_axes, normal_rotation
from .robot import ContactPass, Robot
from .spatial import Wrench

__all__ = [
    "EstimationProblem",
    "ContactEstimate",
    "EstimationBatch",
    "build_estimation_problem",
    "estimate_contact_wrenches",
    "estimate_contact_wrenches_batch",
    "cone_matrix",
    "SolverNotAvailableError",
    "DEFAULT_SOLVER",
]

Array = NDArray[np.float64]
DEFAULT_SOLVER = "daqp"
#: Verification tolerance, relative to the weight ``m |g|``: 1e-6 is 0.64 mN on the humanoid.
DEFAULT_TOLERANCE = 1e-6


def _check_solver(solver: str) -> None:
    if solver not in qpsolvers.available_solvers:
        raise SolverNotAvailableError(
            f"QP solver {solver!r} is not installed; installed: {', '.join(qpsolvers.available_solvers)}"
            f" (pip install qpsolvers[{solver}] or the solver's own package)"
        )


# --- assembly -------------------------------------------------------------------------------


_I3 = np.eye(3)
#: Singular values of J_c^T below this fraction of the largest count as zero (rank).
_RANK_RTOL = 1e-9
# skew(d) = [[0, -d2, d1], [d2, 0, -d0], [-d1, d0, 0]]: its entries (0,1) (0,2) (1,0)
# (1,2) (2,0) (2,1) are d @ _SKEW_ENTRIES.
_SKEW_ENTRIES = np.array(
    [[0, 0, 0, -1, 0, 1], [0, 1, 0, 0, -1, 0], [-1, 0, 1, 0, 0, 0]], dtype=float
)


class _ContactSet:
    """Static work on a list of contacts, done once: columns, local cone faces, row norms."""

    def __init__(self, contacts: Sequence[Contact], pyramid_faces: int = 4):
        self.contacts = tuple(contacts)
        self.n = sum(c.size for c in contacts)
        self.local = []
        for c in contacts:
            if isinstance(c, SurfaceContact):
                self.local.append(contact_wrench_cone(c.half_length, c.half_width, c.mu))
            else:
                self.local.append(in_world_axes(friction_pyramid(c.mu, pyramid_faces), normal_rotation(c.normal)))
        self.cols, self.rows = [], []
        col = row = 0
        for c, L in zip(contacts, self.local):
            self.cols.append(slice(col, col + c.size))
            self.rows.append(slice(row, row + L.shape[0]))
            col += c.size
            row += L.shape[0]
        self.n_rows = row
        # Rotating a face matrix block by block keeps its row norms.
        self.row_norms = np.concatenate([np.linalg.norm(L, axis=1) for L in self.local])
        self.row_starts = np.array([r.start for r in self.rows])
        # Per contact, its local face matrix's 3-column blocks stacked vertically: one
        # batched product rotates every contact's blocks, one scatter puts them in G.
        stacked, flat = [], []
        for L, rows, cols in zip(self.local, self.rows, self.cols):
            parts = L.shape[1] // 3
            stacked.append(np.vstack([L[:, 3 * j : 3 * j + 3] for j in range(parts)]))
            r = np.arange(rows.start, rows.stop)
            flat.append(np.concatenate(
                [(r[:, None] * self.n + cols.start + 3 * j + np.arange(3)).ravel() for j in range(parts)]
            ))
        self._stacked_list = stacked
        self._uniform = len({b.shape for b in stacked}) == 1
        self._stacked = np.array(stacked) if self._uniform else None
        self._flat = np.concatenate(flat)
        # Flat indices in a (6, n) Newton-Euler matrix of the skew(d) entries
        # (0,1) (0,2) (1,0) (1,2) (2,0) (2,1) of each contact's force block (rows 3-5).
        pairs = [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
        self._skew_flat = np.array(
            [(3 + r) * self.n + cols.start + c for cols in self.cols for r, c in pairs]
        )

    def cones(self, rotations: Array, out: Array | None = None) -> Array:
        """Block-diagonal face matrix in world axes, ``G x <= 0`` inside.

        ``out`` (rows, n), when given, must hold a previous result (zeros off the blocks).
        """
        G = np.zeros((self.n_rows, self.n)) if out is None else out
        R_T = np.asarray(rotations).transpose(0, 2, 1)
        if self._uniform:
            rotated = np.matmul(self._stacked, R_T).ravel()
        else:
            rotated = np.concatenate([(B @ RT).ravel() for B, RT in zip(self._stacked_list, R_T)])
        G.flat[self._flat] = rotated
        return G

    def newton_euler_matrix(self, positions: Array, point: Array, out: Array | None = None) -> Array:
        """``A_ne`` with ``A_ne x`` = total contact wrench about ``point``, shape (6, n).

        ``out`` (6, n), when given, must hold a previous result: only the lever-arm blocks
        change between samples.
        """
        if out is None:
            out = np.zeros((6, self.n))
            for c, cols in zip(self.contacts, self.cols):
                out[:3, cols.start : cols.start + 3] = _I3
                if c.size == 6:
                    out[3:, cols.start + 3 : cols.stop] = _I3
        d = np.asarray(positions, dtype=float) - point  # (k, 3) lever arms
        # The six off-diagonal entries of every skew(d_i) block, in one product and one scatter.
        out.flat[self._skew_flat] = (d @ _SKEW_ENTRIES).ravel()
        return out

    def margins(self, G: Array, x: Array) -> Array:
        """Per contact, the distance to the nearest face (negative outside), shape (k,)."""
        values = G @ x / self.row_norms
        return -np.maximum.reduceat(values, self.row_starts)


def cone_matrix(contacts: Sequence[Contact], rotations: Array, *, pyramid_faces: int = 4) -> Array:
    """Block-diagonal face matrix ``G`` of all contacts in world axes: ``G x <= 0`` inside.

    Point contacts use the inner (inscribed) pyramid with ``pyramid_faces`` faces around their
    normal; surface contacts the 16-row contact wrench cone.
    """
    return _ContactSet(contacts, pyramid_faces).cones(rotations)


class _AssemblyBuffers:
    """Arrays reused across the samples of a batch (their zero pattern never changes)."""

    def __init__(self, cset: _ContactSet):
        self.ne = cset.newton_euler_matrix(np.zeros((len(cset.contacts), 3)), np.zeros(3))
        self.cones = np.zeros((cset.n_rows, cset.n))


@dataclass(slots=True)
class _Assembly:
    """One sample's QP data.

    ``equations x = target`` are the hard constraints: the six Newton-Euler rows, or in
    full-dynamics mode the least-squares conditions ``diag(s) V^T x = U^T b`` of the
    thin SVD ``J_c^T = U diag(s) V^T`` restricted to its rank (every least-squares
    solution meets them; among those the QP takes the one of least norm).
    ``data_matrix x ~ data_target`` are the mode's raw equations.
    """

    equations: Array
    target: Array
    cones: Array
    ne_matrix: Array
    ne_target: Array
    data_matrix: Array
    data_target: Array
    rank: int


def _assemble(
    robot: Robot,
    kin: ContactPass,
    cset: _ContactSet,
    tau_generalized: Array | None,
    known: list[Array],
    mass: float,
    gravity: Array,
    buffers: _AssemblyBuffers | None = None,
) -> _Assembly:
    k = len(cset.contacts)
    com = kin.com
    ne_A = cset.newton_euler_matrix(kin.positions[:k], com, None if buffers is None else buffers.ne)
    # The contacts must supply -w_gi = (dP/dt - m g, dL_G/dt) about the CoM, less what the
    # known external wrenches already supply.
    ne_b = kin.momentum_rate.copy()
    ne_b[:3] -= mass * gravity
    for j, w in enumerate(known):
        p = kin.positions[k + j]
        ne_b[:3] -= w[:3]
        ne_b[3:] -= w[3:] + np.cross(p - com, w[:3])
    G = cset.cones(kin.rotations[:k], None if buffers is None else buffers.cones)
    if tau_generalized is None:
        # Newton-Euler rows are independent whenever the contacts can carry any wrench.
        return _Assembly(ne_A, ne_b, G, ne_A, ne_b, ne_A, ne_b, min(6, cset.n))
    J = kin.jacobians
    A = np.hstack([J[i, : c.size].T for i, c in enumerate(cset.contacts)])
    b = kin.inverse_dynamics - tau_generalized
    for j, w in enumerate(known):
        b -= J[k + j].T @ w
    U, sv, Vt = np.linalg.svd(A, full_matrices=False)
    rank = int(np.sum(sv > sv[0] * _RANK_RTOL)) if sv.size and sv[0] > 0 else 0
    return _Assembly(sv[:rank, None] * Vt[:rank], U[:, :rank].T @ b, G, ne_A, ne_b, A, b, rank)


def _soft_objective(asm: Any, regularization: float) -> tuple[Array, Array]:
    """P, q of ``|data_matrix x - data_target|^2 + eps |x|^2``: the closest wrenches when the
    equations cannot be met inside the cones (a diagnosis of infeasible samples)."""
    A, b = asm.data_matrix, asm.data_target
    n = A.shape[1]
    P = A.T @ A
    P = P + regularization * max(float(np.trace(P)) / n, 1e-12) * np.eye(n)
    return P, -A.T @ b


# --- results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContactEstimate:
    """Estimated contact wrenches of one sample, with the evidence that they are right.

    Attributes
    ----------
    status : {"found", "infeasible", "failed"}
    wrenches : dict of str to ndarray
        Contact name -> (3,) force or (6,) wrench ``(f, tau)``, world axes at the contact
        frame's origin [N, N m]. NaN when nothing usable came back.
    wrenches_local : dict of str to ndarray
        The same in each contact frame's axes.
    centres_of_pressure : dict of str to ndarray
        Surface contact name -> ``(x, y)`` in its frame [m] (NaN if ``f_z <= 0``).
    newton_euler_residual : Residual
        ``w_c + w_gi`` of the estimate about the CoM.
    equations_residual : float
        Largest violation of the hard equations (Newton-Euler rows, or the least-squares
        conditions of full-dynamics mode) [N or N m]; part of the verification.
    data_residual : float
        Largest misfit of the mode's raw equations ``|A x - b|`` (full dynamics: how far
        measured torques and model disagree; zero for consistent data) [N or N m].
    cone_margins : dict of str to float
        Per contact, distance to the nearest cone face (negative outside) [N or N m].
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

    @property
    def found(self) -> bool:
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
        lines = [
            f"status {self.status} ({self.mode}, {self.solver}, {1e6 * self.solve_time:.0f} us); "
            f"rank {self.rank}, {'identifiable' if self.identifiable else 'split from regularisation'}",
            f"Newton-Euler residual {self.newton_euler_residual.force_norm:.2e} N, "
            f"{self.newton_euler_residual.moment_norm:.2e} N m",
        ]
        for name, w in self.wrenches.items():
            lines.append(f"  {name}: {np.array2string(w, precision=2, suppress_small=True)}"
                         f"  margin {self.cone_margins[name]:.3g}")
        if self.min_friction_scale is not None:
            lines.append(f"feasible with every mu scaled by {self.min_friction_scale:.3f}")
        return "\n".join(lines)


# --- the problem ------------------------------------------------------------------------------


def _status(eq_res: float, cone_violation: float, limit: float, fallback: bool) -> str:
    """Verified statuses. ``fallback``: the least-norm solve failed and ``x`` is the closest
    answer inside the cones; if that answer meets the equations, the problem was feasible and
    the backend failed it."""
    if cone_violation > limit:
        return "failed"
    if eq_res <= limit:
        return "failed" if fallback else "found"
    return "infeasible" if fallback else "failed"


@dataclass(frozen=True)
class EstimationProblem:
    """An inspectable estimation problem; :meth:`solve` gives a :class:`ContactEstimate`.

    ``qp`` is the :class:`qpsolvers.Problem`: least norm ``x`` subject to the hard equations
    and the cones (hand it to your own controller or solver). ``equations`` / ``target`` are
    the hard equations, ``data_matrix`` / ``data_target`` the mode's raw equations
    (Newton-Euler rows, or ``J_c^T`` and ``M a + h - S^T tau``), ``cones`` the face matrix
    ``G`` (world axes).
    """

    qp: qpsolvers.Problem
    mode: str
    contacts: tuple[Contact, ...]
    equations: Array
    target: Array
    data_matrix: Array
    data_target: Array
    cones: Array
    ne_matrix: Array
    ne_target: Array
    com: Array
    rotations: Array
    weight: float
    rank: int
    tolerance: float
    regularization: float
    _rebuild: Any = field(repr=False, default=None)

    @property
    def identifiable(self) -> bool:
        return self.rank == self.equations.shape[1]

    def solve(self, solver: str | None = None, *, friction_scale: bool = True, **options: Any) -> ContactEstimate:
        """Solve with ``solver`` (default :data:`DEFAULT_SOLVER`) and verify the result.

        When the hard problem has no solution, the closest wrenches inside the cones (least
        squares on the raw equations) are returned with status ``"infeasible"``.
        ``friction_scale``: for an infeasible sample, find the least factor on all friction
        coefficients that makes it feasible (a few linear programs).
        """
        solver = solver or DEFAULT_SOLVER
        _check_solver(solver)
        t0 = time.perf_counter()
        x = _solve_with(self.qp, solver, options)
        fallback = x is None
        if fallback:
            # No least-norm solution: either there is none (the cones cannot meet the
            # equations) or the backend failed. The closest wrenches inside the cones tell.
            P, q = _soft_objective(self, self.regularization)
            x = _solve_with(qpsolvers.Problem(P, q, self.cones, np.zeros(self.cones.shape[0])), solver, options)
        elapsed = time.perf_counter() - t0
        n = self.equations.shape[1]
        if x is None:
            x, eq_res, data_res, status = np.full(n, np.nan), np.inf, np.inf, "failed"
        else:
            eq_res = float(np.abs(self.equations @ x - self.target).max(initial=0.0))
            data_res = float(np.abs(self.data_matrix @ x - self.data_target).max(initial=0.0))
            status = _status(eq_res, self._violation(x), self.tolerance * self.weight, fallback)
        scale = None
        if status == "infeasible" and friction_scale and self._rebuild is not None:
            scale = _least_friction_scale(self)
        return _make_estimate(self, x, status, solver, elapsed, eq_res, data_res, scale)

    def _violation(self, x: Array) -> float:
        return float(np.max(self.cones @ x / np.linalg.norm(self.cones, axis=1), initial=0.0))


def _solve_with(problem: qpsolvers.Problem, solver: str, options: dict[str, Any]) -> Array | None:
    try:
        sol = qpsolvers.solve_problem(problem, solver=solver, **options)
    except Exception:  # a backend's own error is a failed solve, reported as such
        return None
    x = sol.x
    if not sol.found or x is None or not np.all(np.isfinite(x)):
        return None
    return np.asarray(x, dtype=float)


def _feasible(A: Array, b: Array, G: Array) -> bool:
    """Is {x : A x = b, G x <= 0} non-empty? (an LP, HiGHS)"""
    res = linprog(np.zeros(A.shape[1]), A_ub=G, b_ub=np.zeros(G.shape[0]), A_eq=A, b_eq=b,
                  bounds=[(None, None)] * A.shape[1], method="highs")
    return res.status == 0


def _least_friction_scale(problem: EstimationProblem, upper: float = 1000.0) -> float | None:
    """Bisection on a common factor s >= 1 on every mu: least s with a feasible sample.

    Uses the Newton-Euler rows (necessary in both modes). None when even ``upper`` does not
    make the sample feasible: friction is not the cause (the CoP would leave the soles).
    """
    A, b = problem.ne_matrix, problem.ne_target
    if not _feasible(A, b, problem._rebuild(upper)):
        return None
    lo, hi = 1.0, upper
    while hi / lo > 1 + 1e-4:
        mid = np.sqrt(lo * hi)
        if _feasible(A, b, problem._rebuild(mid)):
            hi = mid
        else:
            lo = mid
    return hi


def _make_estimate(problem, x, status, solver, elapsed, eq_res, data_res, scale) -> ContactEstimate:
    wrenches, local, cops = {}, {}, {}
    col = 0
    for c, R in zip(problem.contacts, problem.rotations):
        w = x[col : col + c.size]
        wrenches[c.name] = w.copy()
        loc = np.r_[R.T @ w[:3], R.T @ w[3:]] if c.size == 6 else R.T @ w
        local[c.name] = loc
        if c.size == 6:
            cops[c.name] = cop_in_contact_frame(loc)
        col += c.size
    # Margins per contact: distance to the nearest face of its own rows of G.
    values = problem.cones @ x / np.linalg.norm(problem.cones, axis=1)
    margins, col = {}, 0
    for c in problem.contacts:
        rows = np.flatnonzero(np.any(problem.cones[:, col : col + c.size] != 0, axis=1))
        margins[c.name] = float(-values[rows].max())
        col += c.size
    r = problem.ne_matrix @ x - problem.ne_target
    residual = Residual.from_wrench(Wrench(r[:3], r[3:], problem.com), problem.weight)
    return ContactEstimate(
        status=status, wrenches=wrenches, wrenches_local=local, centres_of_pressure=cops,
        newton_euler_residual=residual, equations_residual=eq_res, data_residual=data_res,
        cone_margins=margins, mode=problem.mode, solver=solver, solve_time=elapsed,
        rank=problem.rank, identifiable=problem.identifiable, min_friction_scale=scale, x=x,
        friction={c.name: c.mu for c in problem.contacts},
    )


def _generalized_torque(robot: Robot, tau: ArrayLike) -> Array:
    tau = np.asarray(tau, dtype=float)
    n_base = 6 if robot.has_floating_base else 0
    if tau.shape == (robot.nv - n_base,):
        tau = np.concatenate([np.zeros(n_base), tau])
    elif tau.shape != (robot.nv,):
        raise StateError(f"tau must have shape ({robot.nv - n_base},) (joints) or ({robot.nv},), got {tau.shape}")
    if not np.all(np.isfinite(tau)):
        raise StateError("tau has non-finite values")
    return tau


def _known_vectors(items: list[Any], kin: ContactPass, k: int) -> list[Array]:
    out = []
    for j, (frame, w) in enumerate(items):
        if isinstance(w, Wrench):
            out.append(w.shift_to(kin.positions[k + j]).as_vector())
        else:
            w = np.asarray(w, dtype=float)
            w = np.r_[w, np.zeros(3)] if w.shape == (3,) else w
            if w.shape != (6,) or not np.all(np.isfinite(w)):
                raise StateError(f"known wrench on frame {frame!r} must be a finite (6,) or (3,) vector")
            out.append(w)
    return out


def build_estimation_problem(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    contacts: Sequence[Contact],
    *,
    tau: ArrayLike | None = None,
    known_wrenches: Mapping[str, Any] | None = None,
    regularization: float = 1e-9,
    pyramid_faces: int = 4,
    tolerance: float = DEFAULT_TOLERANCE,
) -> EstimationProblem:
    """Build the estimation QP of one sample.

    Parameters
    ----------
    q, v, a : arrays, shapes (nq,), (nv,), (nv,)
    contacts : sequence of PointContact or SurfaceContact
    tau : array, shape (nv - 6,) or (nv,), optional
        Measured joint torques [N m]: full-dynamics mode. Without: Newton-Euler mode.
    known_wrenches : mapping of frame name to wrench, optional
        External wrenches known from elsewhere (a push): world-axes ``(f, tau)`` (6,) or
        force (3,) at the frame origin, or :class:`Wrench`. They enter as data.
    regularization : float
        ``epsilon`` of the least-squares fallback used to report the closest wrenches of an
        infeasible sample, relative to the mean diagonal of ``A^T A``.
    pyramid_faces : int
        Faces of the inner friction pyramid of point contacts.
    tolerance : float
        Verification tolerance relative to ``m |g|``.
    """
    if not contacts:
        raise StateError("estimation needs at least one contact")
    names = [c.name for c in contacts]
    if len(set(names)) != len(names):
        raise StateError(f"contact names must be unique, got {names}")
    q, v, a = robot.check_q(q), robot.check_v(v), robot.check_v(a, "a")
    tau_gen = None if tau is None else _generalized_torque(robot, tau)
    known_items = list(dict(known_wrenches or {}).items())
    frame_ids = [robot.frame_id(c.frame) for c in contacts] + [robot.frame_id(f) for f, _ in known_items]
    kin = robot.contact_pass(q, v, a, frame_ids, jacobians=tau_gen is not None)
    known = _known_vectors(known_items, kin, len(contacts))
    cset = _ContactSet(contacts, pyramid_faces)
    asm = _assemble(robot, kin, cset, tau_gen, known, robot.mass, robot.gravity_vector)
    n, G = cset.n, asm.cones
    qp = qpsolvers.Problem(np.eye(n), np.zeros(n), G, np.zeros(G.shape[0]), asm.equations, asm.target)
    rotations = kin.rotations[: len(contacts)]

    def rebuild(scale: float) -> Array:
        scaled = [dataclasses.replace(c, mu=c.mu * scale) for c in contacts]
        return _ContactSet(scaled, pyramid_faces).cones(rotations)

    return EstimationProblem(
        qp=qp, mode="full_dynamics" if tau_gen is not None else "newton_euler",
        contacts=tuple(contacts), equations=asm.equations, target=asm.target,
        data_matrix=asm.data_matrix, data_target=asm.data_target, cones=G,
        ne_matrix=asm.ne_matrix, ne_target=asm.ne_target, com=kin.com, rotations=rotations,
        weight=robot.weight, rank=asm.rank, tolerance=tolerance, regularization=regularization,
        _rebuild=rebuild,
    )


def estimate_contact_wrenches(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    contacts: Sequence[Contact],
    *,
    tau: ArrayLike | None = None,
    known_wrenches: Mapping[str, Any] | None = None,
    solver: str | None = None,
    **kwargs: Any,
) -> ContactEstimate:
    """Estimate one sample's contact wrenches: :func:`build_estimation_problem` then solve.

    ``solver`` is any installed qpsolvers backend (default :data:`DEFAULT_SOLVER`); other
    keyword arguments go to :func:`build_estimation_problem`.
    """
    problem = build_estimation_problem(robot, q, v, a, contacts, tau=tau, known_wrenches=known_wrenches, **kwargs)
    return problem.solve(solver)


# --- batches ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class EstimationBatch:
    """Estimates of N samples. Flagged samples (bad input) are NaN and listed with a reason.

    Attributes
    ----------
    wrenches : ndarray, shape (N, n)
        Stacked estimates, world axes at the contact origins (contact order).
    status : ndarray of str, shape (N,)
        ``"found"``, ``"infeasible"``, ``"failed"`` or ``"flagged"``.
    residual_force, residual_moment : ndarray, shape (N,)
        Newton-Euler residual of the estimates about the CoM [N], [N m].
    equations_residual : ndarray, shape (N,)
        Largest violation of the hard equations (see :class:`ContactEstimate`).
    data_residual : ndarray, shape (N,)
        Largest misfit of the mode's raw equations.
    cone_margin : ndarray, shape (N, n_contacts)
    solve_time : ndarray, shape (N,)
        Backend time per sample [s].
    reasons : dict of int to str
    """

    contacts: tuple[Contact, ...]
    wrenches: Array
    status: Array
    residual_force: Array
    residual_moment: Array
    equations_residual: Array
    data_residual: Array
    cone_margin: Array
    solve_time: Array
    reasons: dict[int, str]
    mode: str
    solver: str

    def __len__(self) -> int:
        return self.wrenches.shape[0]

    def wrench(self, name: str) -> Array:
        """The estimates of one contact, shape (N, 3) or (N, 6)."""
        col = 0
        for c in self.contacts:
            if c.name == name:
                return self.wrenches[:, col : col + c.size]
            col += c.size
        raise KeyError(f"no contact {name!r}; contacts: {[c.name for c in self.contacts]}")

    @property
    def found(self) -> Array:
        return self.status == "found"


def estimate_contact_wrenches_batch(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    contacts: Sequence[Contact],
    *,
    tau: ArrayLike | None = None,
    solver: str | None = None,
    regularization: float = 1e-5,
    pyramid_faces: int = 4,
    tolerance: float = DEFAULT_TOLERANCE,
    progress: bool = False,
    workers: int = 1,
    chunk_size: int = 10_000,
) -> EstimationBatch:
    """Estimate N samples: one Pinocchio pass and one small QP each.

    With the default backend (daqp) the solver is called through its own API, set up once and
    updated per sample, which keeps qpsolvers' per-call Python overhead (30-40 us) out of the
    loop. Other backends go through qpsolvers. Arguments as in
    :func:`build_estimation_problem`, with ``q`` (N, nq), ``v``, ``a`` (N, nv) and ``tau``
    (N, nv - 6) or (N, nv). Infeasible samples are statuses (with the closest wrenches
    inside the cones); the friction-scale search of single estimates is not run here.
    ``workers`` processes share the samples in chunks of ``chunk_size``; the result is
    identical to ``workers=1`` and a failing chunk marks its samples ``"failed"`` with the error.
    """
    solver = solver or DEFAULT_SOLVER
    _check_solver(solver)
    if workers > 1:
        return _estimate_in_chunks(robot, q, v, a, contacts, tau, solver, regularization, pyramid_faces,
                                   tolerance, workers, chunk_size)
    arrays = {"q": q, "v": v, "a": a}
    if tau is not None:
        arrays["tau_in"] = tau
    arrays, bad, reasons = robot.check_batch(**arrays)
    Q, V, A = arrays["q"], arrays["v"], arrays["a"]
    N = Q.shape[0]
    n = sum(c.size for c in contacts)
    k = len(contacts)
    frame_ids = [robot.frame_id(c.frame) for c in contacts]
    full = tau is not None
    wrenches = np.full((N, n), np.nan)
    status = np.full(N, "flagged", dtype=object)
    res_f = np.full(N, np.nan)
    res_m = np.full(N, np.nan)
    eq_res = np.full(N, np.nan)
    margins = np.full((N, k), np.nan)
    times = np.full(N, np.nan)
    limit = tolerance * robot.weight
    mass, gravity = robot.mass, robot.gravity_vector
    cset = _ContactSet(contacts, pyramid_faces)
    qp = _BatchSolver(solver, cset, regularization)
    buffers = _AssemblyBuffers(cset)
    rows = np.flatnonzero(~bad).tolist()
    iterator: Any = rows
    if progress:
        from ._progress import progress_bar

        iterator = progress_bar(rows, desc="estimating", total=len(rows))
    # Per sample only what needs that sample's matrices; the rest is vectorised afterwards.
    ne_values = np.full((N, 6), np.nan)
    cone_values = np.full((N, cset.n_rows), np.nan)
    data_res = np.full(N, np.nan)
    solved = np.zeros(N, dtype=bool)
    fallback = np.zeros(N, dtype=bool)
    perf_counter = time.perf_counter
    for i in iterator:
        tau_gen = _generalized_torque(robot, arrays["tau_in"][i]) if full else None
        kin = robot.contact_pass(Q[i], V[i], A[i], frame_ids, jacobians=full)
        asm = _assemble(robot, kin, cset, tau_gen, [], mass, gravity, buffers)
        t0 = perf_counter()
        x, fallback[i] = qp.solve(asm)
        times[i] = perf_counter() - t0
        if x is None:
            status[i] = "failed"
            continue
        solved[i] = True
        wrenches[i] = x
        eq = asm.equations @ x - asm.target
        eq_res[i] = np.abs(eq).max(initial=0.0)
        ne_values[i] = eq if not full else asm.ne_matrix @ x - asm.ne_target
        if full:
            data_res[i] = np.abs(asm.data_matrix @ x - asm.data_target).max()
        cone_values[i] = asm.cones @ x
    if not full:
        data_res = eq_res.copy()
    margins[solved] = -np.maximum.reduceat(cone_values[solved] / cset.row_norms, cset.row_starts, axis=1)
    res_f[solved] = np.linalg.norm(ne_values[solved, :3], axis=1)
    res_m[solved] = np.linalg.norm(ne_values[solved, 3:], axis=1)
    violation = np.full(N, np.inf)
    violation[solved] = -margins[solved].min(axis=1)
    inside, meets = violation <= limit, eq_res <= limit
    status[solved] = "failed"  # as _status: the verified cases below
    status[solved & inside & meets & ~fallback] = "found"
    status[solved & inside & ~meets & fallback] = "infeasible"
    return EstimationBatch(
        tuple(contacts), wrenches, status.astype(str), res_f, res_m, eq_res, data_res, margins, times,
        dict(sorted(reasons.items())), "full_dynamics" if full else "newton_euler", solver,
    )


def _estimate_chunk(robot, q, v, a, contacts, tau, solver, regularization, pyramid_faces, tolerance):
    return estimate_contact_wrenches_batch(robot, q, v, a, contacts, tau=tau, solver=solver,
                                           regularization=regularization, pyramid_faces=pyramid_faces,
                                           tolerance=tolerance)


def _estimate_in_chunks(robot, q, v, a, contacts, tau, solver, regularization, pyramid_faces, tolerance,
                        workers, chunk_size) -> EstimationBatch:
    from .parallel import ChunkFailure, Shared, chunk_bounds, run_chunks

    Q, V, A = (np.asarray(x, dtype=float) for x in (q, v, a))
    T = None if tau is None else np.asarray(tau, dtype=float)
    N, k, n = Q.shape[0], len(contacts), sum(c.size for c in contacts)
    shared = {"q": Q, "v": V, "a": A, "tau": T}
    chunks = [((s, e), (Shared("q", s, e), Shared("v", s, e), Shared("a", s, e), contacts,
                        None if T is None else Shared("tau", s, e), solver, regularization, pyramid_faces, tolerance))
              for s, e in chunk_bounds(N, chunk_size)]
    results = run_chunks(robot, _estimate_chunk, chunks, workers, shared=shared)
    parts = {name: [] for name in ("wrenches", "status", "residual_force", "residual_moment", "equations_residual",
                                   "data_residual", "cone_margin", "solve_time")}
    reasons: dict[int, str] = {}
    for ((s, e), _), res in zip(chunks, results):
        if isinstance(res, ChunkFailure):
            m = e - s
            nan = {"wrenches": np.full((m, n), np.nan), "status": np.full(m, "failed"),
                   "cone_margin": np.full((m, k), np.nan)}
            for name in parts:
                parts[name].append(nan.get(name, np.full(m, np.nan)))
            reasons.update({i: f"chunk {s}..{e - 1} failed: {res.error}" for i in range(s, e)})
            continue
        for name in parts:
            parts[name].append(getattr(res, name))
        reasons.update({s + i: why for i, why in res.reasons.items()})
    merged = {name: np.concatenate(values) for name, values in parts.items()}
    return EstimationBatch(tuple(contacts), merged["wrenches"], merged["status"].astype(str),
                           merged["residual_force"], merged["residual_moment"], merged["equations_residual"],
                           merged["data_residual"], merged["cone_margin"], merged["solve_time"],
                           dict(sorted(reasons.items())), "full_dynamics" if T is not None else "newton_euler",
                           solver)


class _BatchSolver:
    """Solves one sample's QP after another: least norm under the hard equations and the
    cones, falling back to least squares inside the cones when that has no solution.

    daqp is called through its own ``Model``, set up once and updated per sample (the
    problem's structure does not change between samples: only lever arms, rotations and
    right-hand sides do; in full-dynamics mode a change of rank sets it up again). It starts
    each solve from the previous sample's working set. Measured here: 5 us per solve against
    12 us for ``daqp.solve`` from scratch and 16 us for ``daqp.solve`` warm-started with the
    previous solution. Other backends go through qpsolvers.
    """

    def __init__(self, solver: str, cset: _ContactSet, regularization: float):
        self.solver = solver
        self.cset = cset
        self.regularization = regularization
        self.model: Any = None
        self.m_eq = -1
        self.H, self.f = np.eye(cset.n), np.zeros(cset.n)

    def _buffers(self, m: int) -> None:
        rows = m + self.cset.n_rows
        self.A_all = np.zeros((rows, self.cset.n))
        self.upper = np.zeros(rows)
        self.lower = np.full(rows, -1e30)
        self.sense = np.zeros(rows, dtype=np.int32)
        self.sense[:m] = 5  # equality rows
        self.m_eq = m
        self.model = None

    def solve(self, asm: _Assembly) -> tuple[Array | None, bool]:
        """The solution and whether it came from the least-squares fallback."""
        x = self._hard(asm)
        if x is not None:
            return x, False
        return self._soft(asm), True

    def _hard(self, asm: _Assembly) -> Array | None:
        G = asm.cones
        if self.solver != "daqp":
            problem = qpsolvers.Problem(self.H, self.f, G, np.zeros(G.shape[0]), asm.equations, asm.target)
            return _solve_with(problem, self.solver, {})
        m = asm.equations.shape[0]
        if m != self.m_eq:
            self._buffers(m)
        self.A_all[:m] = asm.equations
        self.A_all[m:] = G
        self.upper[:m] = self.lower[:m] = asm.target
        if self.model is None:
            import daqp

            self.model = daqp.Model()
            self.model.setup(self.H, self.f, self.A_all, self.upper, self.lower, self.sense)
        else:
            self.model.update(A=self.A_all, bupper=self.upper, blower=self.lower)
        x, _, exitflag, _ = self.model.solve()
        x = np.asarray(x)
        if exitflag > 0 and math.isfinite(x @ x):
            return x
        self.model = None  # a failed solve may leave the workspace in a bad state
        return None

    def _soft(self, asm: _Assembly) -> Array | None:
        P, q = _soft_objective(asm, self.regularization)
        G = asm.cones
        if self.solver == "daqp":
            import daqp

            x, _, exitflag, _ = daqp.solve(P, q, G, np.zeros(G.shape[0]))
            x = np.asarray(x)
            return x if exitflag > 0 and math.isfinite(x @ x) else None
        return _solve_with(qpsolvers.Problem(P, q, G, np.zeros(G.shape[0])), self.solver, {})
