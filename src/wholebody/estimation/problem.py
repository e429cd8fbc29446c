"""One sample's estimation problem, to inspect or to hand to another solver:
:func:`build_estimation_problem` assembles it from one Pinocchio pass, and
:meth:`EstimationProblem.solve` solves and verifies it on the route every estimate takes
(:func:`wholebody.estimation._samples.solve_chunk`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import qpsolvers
from numpy.typing import ArrayLike, NDArray

from ..balance.core import Residual
from ..contacts import Contact
from ..friction import ContactSet
from ..robot.core import Robot
from ._samples import Chunk, Pass, cone_margins, solve_chunk, workspace
from .assembly import assemble, column_mask, generalized_torque
from .known import check_active, prepare_known
from .results import ContactEstimate, derived_fields, estimate_status, make_estimate, status_reason
from .solvers import (
    DEFAULT_REGULARIZATION,
    DEFAULT_SOLVER,
    DEFAULT_TOLERANCE,
    QPWorkspace,
    check_solver,
    least_friction_scale,
)

__all__ = ["EstimationProblem", "build_estimation_problem"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class EstimationProblem:
    """An inspectable estimation problem; :meth:`solve` gives a :class:`ContactEstimate`.

    ``qp`` is the :class:`qpsolvers.Problem`: least norm ``x`` subject to the hard equations
    and the cones (hand it to your own controller or solver). ``equations`` / ``target`` are
    the hard equations, ``data_matrix`` / ``data_target`` the mode's raw equations
    (Newton-Euler rows, or ``J_c^T`` and ``M a + h - S^T tau``), ``cones`` the face matrix
    ``G`` (world axes), ``contact_set`` the :class:`ContactSet` that built it.
    ``positions`` (k, 3) are the contact frame origins, ``known`` (e, 6) the known
    external wrenches about ``known_points`` (e, 3), ``momentum_rate`` (6,)
    ``(dP/dt, dL_G/dt)`` at ``com``. ``active`` (k,): contacts allowed to carry a wrench
    (the others are fixed to zero); ``identifiable_by_contact`` (k,): which contacts'
    wrenches the equations determine. ``target_map`` (full dynamics): ``U_r^T`` with
    ``target = U_r^T data_target``.
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
    known_points: Array | None = field(repr=False, default=None)
    active: NDArray[np.bool_] | None = None
    identifiable_by_contact: NDArray[np.bool_] | None = None
    target_map: Array | None = field(repr=False, default=None)
    _cache: dict[Any, Any] = field(init=False, repr=False, compare=False, default_factory=dict)

    def __getstate__(self) -> dict[str, Any]:
        # Pickles and copies carry the problem, not its workspace (made again).
        state = dict(self.__dict__)
        state["_cache"] = {}
        return state

    @property
    def identifiable(self) -> bool:
        """Whether the equations alone determine every active contact's wrench."""
        if self.identifiable_by_contact is None:
            return self.rank == self.equations.shape[1]
        return bool(self.identifiable_by_contact.all())

    def solve(
        self, solver: str | None = None, *, friction_scale: bool = True, **options: Any
    ) -> ContactEstimate:
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
        r, cset = len(self.target), self._contact_set()
        chunk, qp = self._workspace(solver, options)
        active, ident, n_active, cmask, data = self._cache["plan"]
        limit = self.tolerance * self.weight
        z = solve_chunk(
            qp,
            chunk,
            1,
            r,
            [0],
            data,
            partial(_faces, self.cones),
            n_active,
            cmask,
            limit,
            self.regularization,
        )
        x, z = chunk.x[0, :-1].copy(), z[0].copy()  # the chunk is this problem's next solve's
        status, reason, scale = "found", "", None
        if chunk.fallback[0] or not x[0] == x[0]:  # not verified, or nothing came back (NaN)
            eq, violation = self._residuals(x, z)[0], float(z[2 * r :].max())
            if not x[0] == x[0]:
                eq = violation = np.inf
            status = str(estimate_status(eq, violation, limit, True)[()])
            reason = status_reason(status, eq, violation, limit, chunk.why.get(0, ""))
        if status == "infeasible" and friction_scale:
            scale = least_friction_scale(self.ne_matrix, self.ne_target, self._scaled_cones)
        return make_estimate(
            cset,
            x,
            status,
            reason,
            self.mode,
            solver,
            chunk.times[0],
            self.rank,
            ident,
            active,
            scale,
            None,
            partial(self._derived, x, z),
        )

    def _workspace(self, solver: str, options: dict[str, Any]) -> tuple[Chunk, QPWorkspace]:
        """The problem's chunk of one (its rows written once, with what every solve reads
        of the problem: ``_cache["plan"]``) and a QP workspace of ``solver`` with ``options``
        set up on it, kept for the next solve (a fresh one when the options cannot be a
        key)."""
        chunk = self._cache.get("chunk")
        if chunk is None:
            cset = self._contact_set()
            chunk = self._cache["chunk"] = Chunk(1, len(self.target), cset)
            chunk.fill(0, self.equations, self.target, self.cones)
            active = np.ones(len(cset), dtype=bool) if self.active is None else self.active
            masked = not active.all()
            ident = (
                np.full(len(cset), self.identifiable)
                if self.identifiable_by_contact is None
                else self.identifiable_by_contact
            )
            newton_euler = self.data_matrix is self.equations and self.data_target is self.target
            self._cache["plan"] = (
                active,
                np.asarray(ident, dtype=bool),
                [int(active.sum())] if masked else None,
                column_mask(cset, active)[None] if masked else None,
                None if newton_euler else (self.data_matrix[None], self.data_target[None]),
            )
        try:
            key = (solver, tuple(sorted(options.items())))
            qp = self._cache.get(key)
        except TypeError:  # options that are not hashable
            key, qp = None, None
        if qp is None:
            qp = QPWorkspace(solver, self.equations.shape[1], options, fixed=True)
            if key is not None:
                self._cache[key] = qp
        return chunk, qp

    def _residuals(self, x: Array, z: Array) -> tuple[float, float]:
        """The largest residual of the hard equations and of the raw ones of the answer
        ``x``, whose check values are ``z`` (see :class:`~wholebody.estimation._samples.Chunk`)."""
        r = len(self.target)
        data = float(np.abs(self.data_matrix @ x - self.data_target).max(initial=0.0))
        newton_euler = self.data_matrix is self.equations and self.data_target is self.target
        active = self.active
        if newton_euler or (active is not None and not active.any()):  # the raw ones decide
            return data, data
        return float(z[: 2 * r].max(initial=0.0)), data

    def _derived(self, x: Array, z: Array) -> dict[str, Any]:
        """The fields of the estimate ``x`` (check values ``z``) derived at first read."""
        assert self.positions is not None and self.momentum_rate is not None
        assert self.gravity is not None
        k, cset = len(self.contacts), self._contact_set()
        known = np.zeros((1, 0, 6)) if self.known is None else self.known[None]
        kin = Pass(
            self.positions[None],
            self.rotations[None],
            self.com[None],
            self.momentum_rate[None],
            np.zeros((1, 0, 3)) if self.known_points is None else self.known_points[None],
        )
        f, m = kin.residual(self.contacts, x[None], known, self.mass, self.gravity)
        residual = Residual(f[0], m[0], self.com, self.weight)
        equations, data = self._residuals(x, z)
        margins = cone_margins(z, len(self.target), cset)
        return derived_fields(cset, x, self.rotations[:k], residual, equations, data, margins)

    def _contact_set(self) -> ContactSet:
        return self.contact_set if self.contact_set is not None else ContactSet(self.contacts)

    def _scaled_cones(self, scale: float) -> Array:
        cset = self._contact_set()
        scaled = [dataclasses.replace(c, mu=c.mu * scale) for c in self.contacts]
        return ContactSet(scaled, pyramid_faces=cset.pyramid_faces, inner=cset.inner).face_matrix(
            self.rotations
        )


def _faces(G: Array, c: int) -> Array:
    """The face matrix of the problem's one sample (``c`` is 0)."""
    return G


def build_estimation_problem(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    contacts: Sequence[Contact],
    *,
    tau: ArrayLike | None = None,
    external_wrenches: Mapping[str, Any] | None = None,
    active: ArrayLike | None = None,
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
    external_wrenches : mapping, optional
        Known external wrenches (a push), in the library's one vocabulary
        (:data:`wholebody.balance.newton_euler.ExternalWrenches`): ``{frame: wrench}`` with a
        world-axes
        ``(f, tau)`` (6,) or a force (3,) at the frame origin, a :class:`Wrench`, or a pair
        ``(wrench or force, point)`` with the point in world coordinates [m]. They enter as
        data. In full-dynamics mode each name must be a frame of the body the wrench acts on.
    active : array of bool, shape (k,), optional
        Which contacts may carry a wrench; the others are fixed to zero (their columns leave
        the equations). Default: all.
    regularization : float
        ``epsilon`` of the least-squares fallback used to report the closest wrenches of an
        infeasible sample, relative to the mean diagonal of ``A^T A`` (retried larger when
        the backend fails it); the same default as the batch.
    pyramid_faces : int
        Faces of the inner friction pyramid of point contacts.
    tolerance : float
        Verification tolerance relative to ``m |g|``.
    """
    cset = workspace(robot, contacts, pyramid_faces).cset
    q, v, a = robot._check_qva(q, v, a)
    tau_gen = None if tau is None else generalized_torque(robot, tau)
    known = prepare_known(robot, external_wrenches, 1, full=tau_gen is not None)
    mask = check_active(active, contacts, None)
    k = len(contacts)
    frame_ids = [robot.frame_id(c.frame) for c in contacts] + [
        robot.frame_id(f) for f in known.frames
    ]
    kin = robot.contact_pass(q, v, a, frame_ids, jacobians=tau_gen is not None)
    wk, pk = known.sample(0, kin.positions[k:])
    at_origins = known.at_frame_origins(0, kin.positions[k:]) if tau_gen is not None else None
    asm = assemble(
        kin,
        cset,
        tau_gen,
        wk,
        robot.mass,
        robot.gravity_vector,
        known_points=pk,
        known_at_origins=at_origins,
        active=mask,
    )
    n, G = cset.n, asm.cones
    qp = qpsolvers.Problem(
        np.eye(n), np.zeros(n), G, np.zeros(G.shape[0]), asm.equations, asm.target
    )
    return EstimationProblem(
        qp=qp,
        mode="full_dynamics" if tau_gen is not None else "newton_euler",
        contacts=tuple(contacts),
        equations=asm.equations,
        target=asm.target,
        data_matrix=asm.data_matrix,
        data_target=asm.data_target,
        cones=G,
        ne_matrix=asm.ne_matrix,
        ne_target=asm.ne_target,
        com=kin.com,
        rotations=kin.rotations[:k],
        weight=robot.weight,
        rank=asm.rank,
        tolerance=tolerance,
        regularization=regularization,
        contact_set=cset,
        positions=kin.positions[:k],
        known=wk,
        momentum_rate=kin.momentum_rate,
        mass=robot.mass,
        gravity=robot.gravity_vector,
        known_points=pk,
        active=np.ones(k, dtype=bool) if mask is None else mask,
        identifiable_by_contact=asm.identifiable,
        target_map=asm.target_map,
    )
