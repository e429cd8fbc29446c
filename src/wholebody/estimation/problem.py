"""One sample's estimation problem: assembly from one Pinocchio pass, the inspectable
:class:`EstimationProblem`, and its verified solution."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import qpsolvers
from numpy.typing import ArrayLike, NDArray

from ..balance import Residual
from ..contacts import Contact
from ..cop import cop_in_contact_frame
from ..errors import StateError
from ..friction import ContactSet
from ..newton_euler import newton_euler_residual_arrays, wrench_sum
from ..robot import ContactPass, Robot
from ..spatial import Wrench
from .results import ContactEstimate, estimate_status, status_reason
from .solvers import (
    DEFAULT_REGULARIZATION,
    DEFAULT_SOLVER,
    DEFAULT_TOLERANCE,
    check_solver,
    least_friction_scale,
    solve_backend,
    solve_soft,
)

__all__ = [
    "EstimationProblem",
    "build_estimation_problem",
    "estimate_contact_wrenches",
    "Assembly",
    "AssemblyBuffers",
    "assemble",
    "generalized_torque",
]

Array = NDArray[np.float64]
#: Singular values of J_c^T below this fraction of the largest count as zero (rank).
RANK_RTOL = 1e-9


class AssemblyBuffers:
    """Arrays reused across the samples of a batch (their zero pattern never changes)."""

    def __init__(self, cset: ContactSet):
        self.ne = cset.newton_euler_matrix(np.zeros((len(cset), 3)), np.zeros(3))
        self.cones = np.zeros((cset.n_rows, cset.n))


@dataclass(slots=True)
class Assembly:
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


def assemble(kin: ContactPass, cset: ContactSet, tau_generalized: Array | None,
             known: Array, mass: float, gravity: Array,
             buffers: AssemblyBuffers | None = None) -> Assembly:
    """The QP data of one sample from its pass (contacts first, then known wrenches'
    frames); ``known`` (e, 6) world axes at their frame origins."""
    k = len(cset)
    com = kin.com
    ne_A = cset.newton_euler_matrix(kin.positions[:k], com, None if buffers is None else buffers.ne)
    # The contacts must supply -w_gi = (dP/dt - m g, dL_G/dt) about the CoM, less what the
    # known external wrenches already supply (their sum about the CoM: balance's algebra).
    ne_b = kin.momentum_rate.copy()
    ne_b[:3] -= mass * gravity
    if len(known):
        f, m = wrench_sum(known, kin.positions[k:], com)
        ne_b[:3] -= f
        ne_b[3:] -= m
    G = cset.face_matrix(kin.rotations[:k], None if buffers is None else buffers.cones)
    if tau_generalized is None:
        # Newton-Euler rows are independent whenever the contacts can carry any wrench.
        return Assembly(ne_A, ne_b, G, ne_A, ne_b, ne_A, ne_b, min(6, cset.n))
    J, rnea = kin.jacobians, kin.inverse_dynamics
    if J is None or rnea is None:
        raise StateError("full-dynamics assembly needs a pass with Jacobians and inverse dynamics")
    A = np.hstack([J[i, : c.size].T for i, c in enumerate(cset.contacts)])
    b = rnea - tau_generalized
    for j, w in enumerate(known):
        b -= J[k + j].T @ w
    U, sv, Vt = np.linalg.svd(A, full_matrices=False)
    rank = int(np.sum(sv > sv[0] * RANK_RTOL)) if sv.size and sv[0] > 0 else 0
    return Assembly(sv[:rank, None] * Vt[:rank], U[:, :rank].T @ b, G, ne_A, ne_b, A, b, rank)


@dataclass(frozen=True)
class EstimationProblem:
    """An inspectable estimation problem; :meth:`solve` gives a :class:`ContactEstimate`.

    ``qp`` is the :class:`qpsolvers.Problem`: least norm ``x`` subject to the hard equations
    and the cones (hand it to your own controller or solver). ``equations`` / ``target`` are
    the hard equations, ``data_matrix`` / ``data_target`` the mode's raw equations
    (Newton-Euler rows, or ``J_c^T`` and ``M a + h - S^T tau``), ``cones`` the face matrix
    ``G`` (world axes), ``contact_set`` the :class:`ContactSet` that built it.
    ``positions`` (k + e, 3) are the contact and known-wrench frame origins, ``known``
    (e, 6) the known wrenches, ``momentum_rate`` (6,) ``(dP/dt, dL_G/dt)`` at ``com``.
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
    contact_set: ContactSet | None = field(repr=False, default=None)
    positions: Array | None = field(repr=False, default=None)
    known: Array | None = field(repr=False, default=None)
    momentum_rate: Array | None = field(repr=False, default=None)
    mass: float = 0.0
    gravity: Array | None = field(repr=False, default=None)

    @property
    def identifiable(self) -> bool:
        """Whether the equations alone determine every contact's wrench (full column rank)."""
        return self.rank == self.equations.shape[1]

    def solve(self, solver: str | None = None, *, friction_scale: bool = True,
              **options: Any) -> ContactEstimate:
        """Solve with ``solver`` (default :data:`DEFAULT_SOLVER`) and verify the result.

        When the least-norm solve gives nothing verified, the closest wrenches inside the
        cones (least squares on the raw equations) decide: they miss the equations ->
        ``"infeasible"``; they meet them -> ``"failed"`` (the backend failed a feasible
        problem). ``friction_scale``: for an infeasible sample, find the least factor on all
        friction coefficients that makes it feasible (a few linear programs). ``options`` go
        to the backend; options it rejects raise :class:`SolverError`.
        """
        solver = solver or DEFAULT_SOLVER
        check_solver(solver)
        limit = self.tolerance * self.weight
        t0 = time.perf_counter()
        x, why = solve_backend(self.qp, solver, options)
        fallback = False
        if x is not None:
            eq_res, violation = self._verify(x)
            if not (eq_res <= limit and violation <= limit):
                why = (f"{solver}'s least-norm answer misses the equations by {eq_res:.3g} "
                       f"or the cones by {violation:.3g}")
                x = None
        if x is None:
            fallback = True
            cset = self._contact_set()
            x, soft_why = solve_soft(self.data_matrix, self.data_target, self.cones, cset.row_norms,
                                     solver, self.regularization, limit, options)
            why = "; ".join(r for r in (why, soft_why) if r)
        elapsed = time.perf_counter() - t0
        n = self.equations.shape[1]
        if x is None:
            x, eq_res, violation, data_res = np.full(n, np.nan), np.inf, np.inf, np.inf
        else:
            eq_res, violation = self._verify(x)
            data_res = float(np.abs(self.data_matrix @ x - self.data_target).max(initial=0.0))
        status = str(estimate_status([eq_res], [violation], limit, [fallback])[0])
        reason = status_reason(status, eq_res, violation, limit, why)
        scale = None
        if status == "infeasible" and friction_scale:
            scale = least_friction_scale(self.ne_matrix, self.ne_target, self._scaled_cones)
        return _make_estimate(self, x, status, reason, solver, elapsed, eq_res, data_res, scale)

    def _contact_set(self) -> ContactSet:
        return self.contact_set if self.contact_set is not None else ContactSet(self.contacts)

    def _verify(self, x: Array) -> tuple[float, float]:
        eq_res = float(np.abs(self.equations @ x - self.target).max(initial=0.0))
        violation = float(-self._contact_set().linear_margins(x, faces=self.cones).min())
        return eq_res, violation

    def _scaled_cones(self, scale: float) -> Array:
        cset = self._contact_set()
        scaled = [dataclasses.replace(c, mu=c.mu * scale) for c in self.contacts]
        return ContactSet(scaled, pyramid_faces=cset.pyramid_faces, inner=cset.inner).face_matrix(
            self.rotations)


def _make_estimate(problem: EstimationProblem, x: Array, status: str, reason: str, solver: str,
                   elapsed: float, eq_res: float, data_res: float,
                   scale: float | None) -> ContactEstimate:
    cset = problem._contact_set()
    wrenches, local, cops = {}, {}, {}
    for c, R, cols in zip(problem.contacts, problem.rotations, cset.cols, strict=True):
        w = x[cols]
        wrenches[c.name] = w.copy()
        loc = np.r_[R.T @ w[:3], R.T @ w[3:]] if c.size == 6 else R.T @ w
        local[c.name] = loc
        if c.size == 6:
            cops[c.name] = cop_in_contact_frame(loc)
    margins = cset.linear_margins(x, faces=problem.cones)
    k = len(problem.contacts)
    W = np.zeros((1, k + (0 if problem.known is None else len(problem.known)), 6))
    for j, cols in enumerate(cset.cols):
        W[0, j, : cols.stop - cols.start] = x[cols]
    if problem.known is not None and len(problem.known):
        W[0, k:] = problem.known
    assert problem.positions is not None and problem.momentum_rate is not None
    assert problem.gravity is not None
    f, m = newton_euler_residual_arrays(W, problem.positions[None], problem.com[None],
                                        problem.momentum_rate[None], mass=problem.mass,
                                        gravity=problem.gravity)
    residual = Residual(f[0], m[0], problem.com, problem.weight)
    return ContactEstimate(
        status=status, wrenches=wrenches, wrenches_local=local, centres_of_pressure=cops,
        newton_euler_residual=residual, equations_residual=eq_res, data_residual=data_res,
        cone_margins={c.name: float(v) for c, v in zip(problem.contacts, margins, strict=True)},
        mode=problem.mode, solver=solver, solve_time=elapsed, rank=problem.rank,
        identifiable=problem.identifiable, min_friction_scale=scale, x=x,
        friction={c.name: c.mu for c in problem.contacts}, reason=reason,
    )


def generalized_torque(robot: Robot, tau: ArrayLike) -> Array:
    """Joint torques (nv - 6,) or (nv,) as generalized forces (nv,) (zeros on the base)."""
    tau = np.asarray(tau, dtype=float)
    n_base = 6 if robot.has_floating_base else 0
    if tau.shape == (robot.nv - n_base,):
        tau = np.concatenate([np.zeros(n_base), tau])
    elif tau.shape != (robot.nv,):
        raise StateError(f"tau must have shape ({robot.nv - n_base},) (joints) or ({robot.nv},), "
                         f"got {tau.shape}")
    if not np.all(np.isfinite(tau)):
        raise StateError("tau has non-finite values")
    return tau


def _known_vectors(items: list[Any], kin: ContactPass, k: int) -> Array:
    out = np.zeros((len(items), 6))
    for j, (frame, w) in enumerate(items):
        if isinstance(w, Wrench):
            out[j] = w.shift_to(kin.positions[k + j]).as_vector()
        else:
            w = np.asarray(w, dtype=float)
            w = np.r_[w, np.zeros(3)] if w.shape == (3,) else w
            if w.shape != (6,) or not np.all(np.isfinite(w)):
                raise StateError(
                    f"known wrench on frame {frame!r} must be a finite (6,) or (3,) vector")
            out[j] = w
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
    regularization: float = DEFAULT_REGULARIZATION,
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
        infeasible sample, relative to the mean diagonal of ``A^T A`` (retried larger when
        the backend fails it); the same default as the batch.
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
    tau_gen = None if tau is None else generalized_torque(robot, tau)
    known_items = list(dict(known_wrenches or {}).items())
    frame_ids = ([robot.frame_id(c.frame) for c in contacts]
                 + [robot.frame_id(f) for f, _ in known_items])
    kin = robot.contact_pass(q, v, a, frame_ids, jacobians=tau_gen is not None)
    known = _known_vectors(known_items, kin, len(contacts))
    cset = ContactSet(contacts, pyramid_faces=pyramid_faces)
    asm = assemble(kin, cset, tau_gen, known, robot.mass, robot.gravity_vector)
    n, G = cset.n, asm.cones
    qp = qpsolvers.Problem(np.eye(n), np.zeros(n), G, np.zeros(G.shape[0]), asm.equations,
                           asm.target)
    return EstimationProblem(
        qp=qp, mode="full_dynamics" if tau_gen is not None else "newton_euler",
        contacts=tuple(contacts), equations=asm.equations, target=asm.target,
        data_matrix=asm.data_matrix, data_target=asm.data_target, cones=G,
        ne_matrix=asm.ne_matrix, ne_target=asm.ne_target, com=kin.com,
        rotations=kin.rotations[: len(contacts)], weight=robot.weight, rank=asm.rank,
        tolerance=tolerance, regularization=regularization, contact_set=cset,
        positions=kin.positions, known=known, momentum_rate=kin.momentum_rate,
        mass=robot.mass, gravity=robot.gravity_vector,
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
    problem = build_estimation_problem(robot, q, v, a, contacts, tau=tau,
                                       known_wrenches=known_wrenches, **kwargs)
    return problem.solve(solver)
