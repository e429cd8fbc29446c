"""One sample's estimation problem: assembly from one Pinocchio pass, the inspectable
:class:`EstimationProblem`, and its verified solution."""

from __future__ import annotations

import collections
import dataclasses
import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import qpsolvers
from numpy.typing import ArrayLike, NDArray

from ..contacts import Contact
from ..errors import StateError
from ..friction import ContactSet
from ..robot.core import Robot
from . import _single
from ._estimate_paths import fast_setup, found_estimate, make_estimate, solve_fast
from .assembly import (
    assemble,
    column_mask,
    generalized_torque,
)
from .known import (
    check_active,
    prepare_known,
)
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
]

Array = NDArray[np.float64]
_daqp: Any = None  # the daqp module, imported at the first solve that uses it
_clock = time.perf_counter
#: Keyword arguments the one-sample fast path takes (``regularization`` only shapes the
#: fallback of the full path, which it leaves to).
_FAST_KEYWORDS = frozenset({"pyramid_faces", "tolerance", "regularization"})


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
    _cache: dict[str, Any] = field(init=False, repr=False, compare=False, default_factory=dict)

    def __getstate__(self) -> dict[str, Any]:
        # Pickles and copies carry the problem, not the solver workspace (made again).
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
        if solver == "daqp" and not options:
            fast = self._cache.get("fast")
            if fast is None:
                fast = self._cache["fast"] = self._fast_setup()
            if fast:
                t0 = _clock()
                x = self._solve_daqp_fast(fast)
                if x is not None:  # verified found: the rest is derived at first read
                    return self._found_estimate(fast, x, solver, _clock() - t0)
        limit = self.tolerance * self.weight
        t0 = time.perf_counter()
        if solver == "daqp" and not options:
            x, why = self._solve_daqp()
        else:
            x, why = solve_backend(self.qp, solver, options)
        fallback = False
        margins: Array | None = None
        if x is not None:
            eq_res, margins = self._verify(x)
            violation = float(-margins.min())
            if not (eq_res <= limit and violation <= limit):
                why = (
                    f"{solver}'s least-norm answer misses the equations by {eq_res:.3g} "
                    f"or the cones by {violation:.3g}"
                )
                x, margins = None, None
        if x is None:
            fallback = True
            cset = self._contact_set()
            x, soft_why = solve_soft(
                self.data_matrix,
                self.data_target,
                self.cones,
                cset.row_norms,
                solver,
                self.regularization,
                limit,
                options,
            )
            why = "; ".join(r for r in (why, soft_why) if r)
        elapsed = time.perf_counter() - t0
        n = self.equations.shape[1]
        if x is not None and self.active is not None and not self.active.all():
            x, margins = x * column_mask(self._contact_set(), self.active), None
        if x is None:
            x, eq_res, violation, data_res = np.full(n, np.nan), np.inf, np.inf, np.inf
        else:
            if margins is None:
                eq_res, margins = self._verify(x)
                violation = float(-margins.min())
            if self.data_matrix is self.equations and self.data_target is self.target:
                data_res = eq_res  # Newton-Euler mode: the hard equations are the data
            else:
                data_res = float(np.abs(self.data_matrix @ x - self.data_target).max(initial=0.0))
        status = str(estimate_status(eq_res, violation, limit, fallback)[()])
        reason = status_reason(status, eq_res, violation, limit, why)
        scale = None
        if status == "infeasible" and friction_scale:
            scale = least_friction_scale(self.ne_matrix, self.ne_target, self._scaled_cones)
        return make_estimate(
            self, x, status, reason, solver, elapsed, eq_res, data_res, scale, margins
        )

    def _solve_daqp(self) -> tuple[Array | None, str]:
        """daqp called directly, on the rows qpsolvers would give it (cones then equations,
        stacked once per problem): the same call, without qpsolvers' per-call assembly."""
        H, f, rows, upper, lower, sense = self._solve_daqp_arrays()
        try:
            x, _, exitflag, _ = _daqp.solve(H, f, rows, upper, lower, sense.copy())
        except Exception as exc:  # the backend's own error: a failed solve, with its reason
            return None, f"{type(exc).__name__}: {exc}"
        if exitflag <= 0:
            return None, "daqp found no solution"
        x = np.asarray(x, dtype=float)
        if not math.isfinite(float(x @ x)):  # finite x @ x: every entry finite
            return None, "daqp returned non-finite values"
        return x, ""

    def _solve_daqp_arrays(self) -> tuple[Any, ...]:
        """daqp's arrays for this problem (made once): H, f, rows, upper, lower, sense."""
        global _daqp
        if _daqp is None:
            import daqp

            _daqp = daqp
        if "daqp" not in self._cache:
            G, E = self.cones, self.equations
            m_in = G.shape[0]
            rows = np.concatenate([G, E])
            upper = np.concatenate([np.zeros(m_in), self.target])
            sense = np.zeros(len(upper), dtype=np.intc)
            sense[m_in:] = 5
            P, q = self.qp.P, self.qp.q
            lower = np.full(len(upper), -1e30)
            stacked = (np.asarray(P, dtype=float), q, rows, upper, lower, sense)
            self._cache["daqp"] = stacked
        return self._cache["daqp"]

    def _fast_setup(self) -> tuple[Any, ...]:
        """See :func:`wholebody.estimation._estimate_paths.fast_setup` (made once)."""
        arrays = self._solve_daqp_arrays()
        return fast_setup(self, arrays, _daqp)

    #: daqp on the problem's workspace with a sufficient check (see :func:`solve_fast`).
    _solve_daqp_fast = staticmethod(solve_fast)

    def _found_estimate(
        self, fast: tuple[Any, ...], x: Array, solver: str, elapsed: float
    ) -> ContactEstimate:
        return found_estimate(self, fast, x, solver, elapsed)

    def _contact_set(self) -> ContactSet:
        return self.contact_set if self.contact_set is not None else ContactSet(self.contacts)

    def _verify(self, x: Array) -> tuple[float, Array]:
        """The largest equation residual and the per-contact cone margins of ``x``."""
        eq_res = float(np.abs(self.equations @ x - self.target).max(initial=0.0))
        return eq_res, self._contact_set().linear_margins(x, faces=self.cones)

    def _scaled_cones(self, scale: float) -> Array:
        cset = self._contact_set()
        scaled = [dataclasses.replace(c, mu=c.mu * scale) for c in self.contacts]
        return ContactSet(scaled, pyramid_faces=cset.pyramid_faces, inner=cset.inner).face_matrix(
            self.rotations
        )


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
    known_wrenches : mapping, deprecated
        Use ``external_wrenches`` (a :class:`WholebodyDeprecationWarning`).
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
    q, v, a = robot._check_qva(q, v, a)
    tau_gen = None if tau is None else generalized_torque(robot, tau)
    known = prepare_known(
        robot, external_wrenches, known_wrenches, 1, full=tau_gen is not None, stacklevel=4
    )
    mask = check_active(active, contacts, None)
    k = len(contacts)
    frame_ids = [robot.frame_id(c.frame) for c in contacts] + [
        robot.frame_id(f) for f in known.frames
    ]
    kin = robot.contact_pass(q, v, a, frame_ids, jacobians=tau_gen is not None)
    wk, pk = known.sample(0, kin.positions[k:])
    at_origins = known.at_frame_origins(0, kin.positions[k:]) if tau_gen is not None else None
    cset = _contact_set(contacts, pyramid_faces)
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


# Contact sets already built, per thread (a ContactSet keeps scratch buffers), by value of
# the contacts: building one (cone faces, generators) was most of a single-sample estimate.
_CONTACT_SETS = threading.local()
_CONTACT_SETS_KEPT = 32


def _frozen(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.shape, x.tobytes())
    return x


def _contact_set(contacts: Sequence[Contact], pyramid_faces: int) -> ContactSet:
    """``ContactSet(contacts, pyramid_faces=...)``, built once per thread and set of contacts
    (compared by value, so a changed contact gets a new set)."""
    if not all(dataclasses.is_dataclass(c) for c in contacts):
        return ContactSet(contacts, pyramid_faces=pyramid_faces)  # it says what is wrong
    key = (
        pyramid_faces,
        tuple(
            (type(c), tuple(_frozen(getattr(c, f.name)) for f in dataclasses.fields(c)))
            for c in contacts
        ),
    )
    cache = getattr(_CONTACT_SETS, "cache", None)
    if cache is None:
        cache = _CONTACT_SETS.cache = collections.OrderedDict()
    cset = cache.get(key)
    if cset is None:
        cset = cache[key] = ContactSet(contacts, pyramid_faces=pyramid_faces)
        if len(cache) > _CONTACT_SETS_KEPT:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return cset


def estimate_contact_wrenches(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    contacts: Sequence[Contact],
    *,
    tau: ArrayLike | None = None,
    external_wrenches: Mapping[str, Any] | None = None,
    active: ArrayLike | None = None,
    known_wrenches: Mapping[str, Any] | None = None,
    solver: str | None = None,
    noise: Any = None,
    confidence: float = 0.95,
    **kwargs: Any,
) -> ContactEstimate:
    """Estimate one sample's contact wrenches: :func:`build_estimation_problem` then solve.

    The one-sample path of :func:`wholebody.estimation.estimate_contact_wrenches`, which
    also takes N samples (kept under this path for earlier releases).

    Newton-Euler mode with the default backend (no ``tau``, known wrenches, ``active`` or
    ``noise``) runs on daqp's own API, with buffers and a workspace kept per robot and set
    of contacts (per thread), and verifies the answer as the full path does; the fields
    derived from the solution (wrenches per contact, centres of pressure, residual,
    margins) are computed at first read. A sample it does not verify as found (infeasible,
    a backend failure) is built and solved in full, with the fallback and its reason.

    ``solver`` is any installed qpsolvers backend (default :data:`DEFAULT_SOLVER`);
    ``external_wrenches``, ``active`` and other keyword arguments go to
    :func:`build_estimation_problem`. ``noise`` (a
    :class:`wholebody.estimation.uncertainty.NoiseLevels`):
    also compute :attr:`ContactEstimate.intervals` at ``confidence``.

    Examples
    --------
    A humanoid standing still on two feet: each foot carries half the weight (world axes,
    at the sole's origin, [N]) and the estimate balances the motion.

    >>> import numpy as np, wholebody
    >>> from wholebody.contacts import SurfaceContact
    >>> from wholebody.estimation import estimate_contact_wrenches
    >>> robot = wholebody.load("humanoid")
    >>> feet = [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.7)
    ...         for f in ("left_sole", "right_sole")]
    >>> zero = np.zeros(robot.nv)
    >>> est = estimate_contact_wrenches(robot, robot.neutral(), zero, zero, feet)
    >>> est.status
    'found'
    >>> np.round(est.wrenches["left_sole"][:3], 1)
    array([  0. ,   0. , 322.3])
    >>> bool(np.abs(est.newton_euler_residual.force).max() < 1e-6)
    True
    """
    if tau is None and active is None and noise is None:
        fast = _fast_one(
            robot, q, v, a, contacts, external_wrenches, known_wrenches, solver, kwargs
        )
        if fast is not None:
            return fast
    if known_wrenches:
        # Warn here, at the caller's line (build_estimation_problem would point at this one).
        external_wrenches = {**_deprecated_known(known_wrenches), **(external_wrenches or {})}
    problem = build_estimation_problem(
        robot,
        q,
        v,
        a,
        contacts,
        tau=tau,
        external_wrenches=external_wrenches,
        active=active,
        **kwargs,
    )
    estimate = problem.solve(solver)
    if noise is None:
        return estimate
    from .uncertainty import wrench_intervals

    intervals = wrench_intervals(robot, problem, estimate, q, v, noise, confidence=confidence)
    return dataclasses.replace(estimate, intervals=intervals)


def _fast_one(
    robot: Robot,
    q: Any,
    v: Any,
    a: Any,
    contacts: Sequence[Contact],
    external_wrenches: Any,
    known_wrenches: Any,
    solver: str | None,
    kwargs: dict[str, Any],
) -> ContactEstimate | None:
    """The one-sample fast path (Newton-Euler mode, daqp on a workspace kept per robot and
    contact set, :mod:`wholebody.estimation._single`) when the call is one it takes (no
    joint torques, known wrenches, active mask or noise: the callers test those); None ->
    the full path (also for every sample it does not verify as found)."""
    if (
        external_wrenches
        or known_wrenches
        or not (solver is None or solver == "daqp")
        or DEFAULT_SOLVER != "daqp"
        or not kwargs.keys() <= _FAST_KEYWORDS
    ):
        return None
    return _single.estimate_one(
        robot,
        q,
        v,
        a,
        contacts,
        kwargs.get("pyramid_faces", 4),
        kwargs.get("tolerance", DEFAULT_TOLERANCE),
    )


def _deprecated_known(known_wrenches: Mapping[str, Any]) -> dict[str, Any]:
    import warnings

    from ..errors import WholebodyDeprecationWarning

    warnings.warn(
        "'known_wrenches' is deprecated; pass external_wrenches={frame: wrench} instead",
        WholebodyDeprecationWarning,
        stacklevel=3,
    )
    return dict(known_wrenches)
