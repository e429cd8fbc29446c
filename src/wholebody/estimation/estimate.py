"""One call for one sample or N: :func:`estimate_contact_wrenches`.

``q`` of shape (nq,) estimates one sample (bad input raises a typed error) and returns a
:class:`~wholebody.estimation.results.ContactEstimate`; ``q`` of shape (N, nq) estimates N
(a bad sample is flagged with a reason and NaN results, the others are estimated) and
returns an :class:`~wholebody.estimation.results.EstimationBatch`; ``is_batch`` says which,
as :class:`wholebody.balance.Residual` does. A (1, nq) row is a batch of one.

Both go the one route (:mod:`wholebody.estimation._samples`), one sample as a chunk of one:
per sample one Pinocchio pass, the QP (see :mod:`wholebody.estimation`), one solve on a QP
workspace set up once and updated per sample (daqp through its own API, started from the
previous sample's working set; another backend through qpsolvers), and the answer verified
(equations and cones within ``tolerance * m |g|``). An answer not verified gives way to the
closest wrenches inside the cones, which decide between ``"infeasible"`` and ``"failed"``.
For one sample the fields derived from a found answer (wrenches per contact, centres of
pressure, residual, margins) are computed at first read; for N they are computed over all
samples at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..balance.core import Residual
from ..contacts import Contact
from ..errors import InvalidArgumentError
from ..robot.core import Robot
from ._samples import Chunk, Options, Pass, Workspace, cone_margins, workspace
from .assembly import generalized_torque
from .known import KnownWrenches, check_active, prepare_known
from .problem import EstimationProblem, build_estimation_problem
from .results import (
    ContactEstimate,
    EstimationBatch,
    derived_fields,
    estimate_status,
    make_estimate,
    status_reason,
)
from .solvers import (
    DEFAULT_REGULARIZATION,
    DEFAULT_SOLVER,
    DEFAULT_TOLERANCE,
    check_solver,
    least_friction_scale,
)

__all__ = ["estimate_contact_wrenches"]

Array = NDArray[np.float64]


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
    solver: str | None = None,
    regularization: float = DEFAULT_REGULARIZATION,
    pyramid_faces: int = 4,
    tolerance: float = DEFAULT_TOLERANCE,
    friction_scale: bool | None = None,
    noise: Any = None,
    confidence: float = 0.95,
    workers: int = 1,
    chunk_size: int = 10_000,
    progress: bool = False,
) -> ContactEstimate | EstimationBatch:
    """Estimate the contact wrenches of one sample, or of N, by quadratic programming.

    Parameters
    ----------
    q, v, a : arrays of shape (nq,), (nv,), (nv,), or (N, nq), (N, nv), (N, nv)
        One state or N (see the module's text).
    contacts : sequence of PointContact or SurfaceContact
        The contacts whose wrenches are unknown (names unique).
    tau : array of shape (nv - 6,) or (nv,), or (N, ...), optional
        Measured joint torques [N m]: the ``"full_dynamics"`` mode; without, Newton-Euler.
    external_wrenches : mapping, optional
        Known external wrenches (a push) as data, in the library's one vocabulary
        (:data:`wholebody.balance.newton_euler.ExternalWrenches`), per sample (N, 6) / (N, 3)
        or constant. In full-dynamics mode each name must be a frame of the body it acts on.
    active : array of bool, shape (k,), or (N, k), optional
        Which contacts may carry a wrench (a schedule:
        :attr:`wholebody.schedule.ContactSchedule.active`); the others are fixed to zero.
    solver : str, optional
        A qpsolvers backend; default :data:`~wholebody.estimation.DEFAULT_SOLVER`.
    regularization, tolerance : float
        ``epsilon`` of the closest-wrenches fallback (relative to the mean diagonal of
        ``A^T A``), and the verification tolerance (relative to ``m |g|``).
    pyramid_faces : int
        Faces of the inner friction pyramid of point contacts.
    friction_scale : bool, optional
        For infeasible samples, also the least factor on every ``mu`` that makes them
        feasible (a few linear programs each). Default: for one sample yes, for N no.
    noise, confidence : NoiseLevels, float, optional
        Also the wrench intervals at ``confidence`` (:mod:`~wholebody.estimation.uncertainty`).
    workers, chunk_size, progress
        N samples: ``workers`` processes share them in chunks of ``chunk_size`` (the result
        equals ``workers=1``; a failing chunk marks its samples ``"failed"``); a progress bar.

    Examples
    --------
    A humanoid standing still on two feet, once and over three samples: each foot carries
    half the weight (world axes, at the sole's origin, [N]).

    >>> import numpy as np, wholebody
    >>> from wholebody.contacts import SurfaceContact
    >>> from wholebody.estimation import estimate_contact_wrenches
    >>> robot = wholebody.load("humanoid")
    >>> feet = [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.7)
    ...         for f in ("left_sole", "right_sole")]
    >>> q, zero = robot.neutral(), np.zeros(robot.nv)
    >>> one = estimate_contact_wrenches(robot, q, zero, zero, feet)
    >>> one.is_batch, one.status, np.round(one.wrenches["left_sole"][2], 1)
    (False, 'found', np.float64(322.3))
    >>> Q, Z = np.tile(q, (3, 1)), np.zeros((3, robot.nv))
    >>> many = estimate_contact_wrenches(robot, Q, Z, Z, feet)
    >>> many.is_batch, list(many.status), np.round(many.wrench("left_sole")[:, 2], 1)
    (True, ['found', 'found', 'found'], array([322.3, 322.3, 322.3]))
    """
    single = (q.ndim if type(q) is np.ndarray else np.ndim(q)) == 1
    scale = single if friction_scale is None else bool(friction_scale)
    if solver is not None:
        check_solver(solver)
    opt = Options(
        solver or DEFAULT_SOLVER, regularization, pyramid_faces, tolerance, scale, noise, confidence
    )
    if single:
        return _one(robot, q, v, a, contacts, tau, external_wrenches, active, opt)
    Q = np.asarray(q, dtype=float)
    if Q.ndim != 2:
        raise InvalidArgumentError(f"q must have shape (N, {robot.nq}), got {Q.shape}")
    if workers < 1:
        raise InvalidArgumentError(f"workers must be at least 1, got {workers}")
    known = prepare_known(robot, external_wrenches, Q.shape[0], full=tau is not None, finite=False)
    mask = check_active(active, contacts, Q.shape[0])
    if workers > 1:
        from ._chunks import estimate_in_chunks

        return estimate_in_chunks(
            estimate_batch, robot, Q, v, a, contacts, tau, known, mask, opt, workers, chunk_size
        )
    return estimate_batch(robot, Q, v, a, contacts, tau, known, mask, opt, progress)


def _one(
    robot: Robot,
    q: Any,
    v: Any,
    a: Any,
    contacts: Sequence[Contact],
    tau: Any,
    external_wrenches: Any,
    active: Any,
    opt: Options,
) -> ContactEstimate:
    """One sample: the route with N = 1 (bad input raises). A verified least-norm answer is
    found; the fields derived from it are computed at first read."""
    ws = workspace(robot, contacts, opt.pyramid_faces)
    q, v, a = robot._check_qva(q, v, a)
    T = None if tau is None else generalized_torque(robot, tau)[None]
    known = prepare_known(robot, external_wrenches, 1, full=T is not None)
    mask = check_active(active, contacts, None)
    act = None if mask is None else mask[None]
    if T is None:
        chunk = ws.start(robot, known, act, 1, opt)
        ws.newton_euler(chunk, [q], [v], [a], 0, 1, [0])
    else:
        chunk = next(ws.full_dynamics(robot, [q], [v], [a], T, known, act, [0], opt))[0]
    x = chunk.x[0, :-1].copy()
    full = (float(chunk.equations[0]), float(chunk.data[0])) if T is not None else None
    kept = chunk.keep(), chunk.z[:1].copy(), chunk.top
    derive = partial(_derived_one, robot, ws, x, kept, known.wrench, full)
    status, reason, scale, intervals = "found", "", None, None
    if chunk.fallback[0] or not x[0] == x[0]:  # not verified, or nothing came back (NaN)
        derived = derive()
        eq, violation = derived["equations_residual"], -min(derived["cone_margins"].values())
        if not x[0] == x[0]:
            eq = violation = np.inf
        limit = opt.tolerance * robot.weight
        status = str(estimate_status(eq, violation, limit, True)[()])
        reason = status_reason(status, eq, violation, limit, chunk.why.get(0, ""))
    if (status == "infeasible" and opt.friction_scale) or opt.noise is not None:
        problem = problems(robot, [q], [v], [a], contacts, T, known, act, opt)(0)
        if status == "infeasible" and opt.friction_scale:
            scale = least_friction_scale(
                problem.ne_matrix, problem.ne_target, problem._scaled_cones
            )
        if opt.noise is not None:
            from .uncertainty import wrench_intervals

            intervals = wrench_intervals(
                robot, problem, x, q, v, opt.noise, confidence=opt.confidence
            )
    return make_estimate(
        ws.cset,
        x,
        status,
        reason,
        "newton_euler" if T is None else "full_dynamics",
        opt.solver,
        chunk.times[0],
        chunk.rank[0],
        chunk.ident[0],
        mask,
        scale,
        intervals,
        derive,
    )


def _derived_one(
    robot: Robot,
    ws: Workspace,
    x: Array,
    kept: Any,
    known: Array,
    full: tuple[float, float] | None,
) -> dict[str, Any]:
    """The fields of one sample's estimate derived at first read, with the batch's algebra
    on N = 1 (the residual, the margins). ``kept``: the sample's pass (or the inputs and
    rotations of the row products, which hold it), its check values (1, checks) and the
    chunk's ``top``; ``full``: the residuals of the hard and of the raw equations in
    full-dynamics mode."""
    cset, (kin, z, top) = ws.cset, kept
    kin = kin if isinstance(kin, Pass) else ws.inputs_pass(*kin)
    f, m = kin.residual(cset.contacts, x[None], known, robot.mass, robot.gravity_vector)
    residual = Residual(f[0], m[0], kin.com[0], robot.weight)
    # The hard equations of Newton-Euler mode are the Newton-Euler rows: their residual.
    equations = data = float(max(np.abs(f).max(), np.abs(m).max()))
    if full is not None:
        equations, data = full
    R = kin.rotations[0, : len(cset)]
    return derived_fields(cset, x, R, residual, equations, data, cone_margins(z, top, cset)[0])


def route(
    ws: Workspace,
    robot: Robot,
    Q: Any,
    V: Any,
    A: Any,
    T: Array | None,
    known: KnownWrenches,
    act: NDArray[np.bool_] | None,
    good: Sequence[int],
    opt: Options,
    progress: bool = False,
) -> Iterator[tuple[Chunk, int, int, list[int]]]:
    """The samples ``good`` (sorted) of N checked ones (``Q``, ``V``, ``A``: their rows), in
    the mode ``T`` (generalized torques (N, nv)) picks, chunk by chunk: see
    :meth:`Workspace.newton_euler_chunks`. ``act`` (N, k): the contacts that may carry a wrench
    (None: all)."""
    if T is None:
        return ws.newton_euler_chunks(robot, Q, V, A, known, act, good, opt, progress)
    return ws.full_dynamics(robot, Q, V, A, T, known, act, good, opt, progress)


def problems(
    robot: Robot,
    Q: Any,
    V: Any,
    A: Any,
    contacts: Sequence[Contact],
    T: Array | None,
    known: KnownWrenches,
    act: NDArray[np.bool_] | None,
    opt: Options,
) -> Callable[[int], EstimationProblem]:
    """``problem(i)``: sample ``i``'s :class:`EstimationProblem` (the friction-scale search
    and the intervals need it)."""

    def problem(i: int) -> EstimationProblem:
        return build_estimation_problem(
            robot,
            Q[i],
            V[i],
            A[i],
            contacts,
            tau=None if T is None else T[i],
            external_wrenches=known.mapping(i) if len(known) else None,
            active=None if act is None else act[i],
            regularization=opt.regularization,
            pyramid_faces=opt.pyramid_faces,
            tolerance=opt.tolerance,
        )

    return problem


def estimate_batch(
    robot: Robot,
    Q: Array,
    v: ArrayLike,
    a: ArrayLike,
    contacts: Sequence[Contact],
    tau: ArrayLike | None,
    known: KnownWrenches,
    mask: NDArray[np.bool_] | None,
    opt: Options,
    progress: bool = False,
) -> EstimationBatch:
    """N samples (``known`` and ``mask`` already parsed): bad samples flagged, the others
    estimated, then verified and explained over all samples at once."""
    arrays: dict[str, Any] = {"q": Q, "v": v, "a": a}
    if tau is not None:
        arrays["tau_in"] = tau
    checked, flagged, reasons = robot.check_batch(**arrays)
    bad = np.array(flagged, dtype=bool)
    for i, text in known.nonfinite_rows().items():
        if not bad[i]:
            bad[i], reasons[i] = True, text
    Q, V, A = checked["q"], checked["v"], checked["a"]
    N, k = Q.shape[0], len(contacts)
    ws = workspace(robot, contacts, opt.pyramid_faces)
    good = np.flatnonzero(~bad).tolist()
    T = None
    if tau is not None:
        T = np.zeros((N, robot.nv))
        for i in good:
            T[i] = generalized_torque(robot, checked["tau_in"][i])
    act = None if mask is None or mask.all() else mask
    n, f = ws.cset.n, k + len(known.frames)
    X = np.full((N, n), np.nan)
    fallback, (times, equations, data) = np.zeros(N, dtype=bool), np.full((3, N), np.nan)
    rank, ident = np.full(N, -1, dtype=np.int64), np.zeros((N, k), dtype=bool)
    kin, why = Pass.empty(N, f, len(known)), {}
    margins = np.full((N, k), np.nan)
    for chunk, s, e, samples in route(ws, robot, Q, V, A, T, known, act, good, opt, progress):
        rows = slice(s, e) if len(samples) == e - s else s + np.array(samples, dtype=np.intp)
        part = slice(None, e - s) if isinstance(rows, slice) else samples
        X[rows], fallback[rows], times[rows] = (
            chunk.x[part, :n],
            chunk.fallback[part],
            chunk.times[part],
        )
        equations[rows], data[rows] = chunk.equations[part], chunk.data[part]
        rank[rows], ident[rows] = chunk.rank[part], chunk.ident[part]
        margins[rows] = cone_margins(chunk.z[part], chunk.top, ws.cset)
        pass_ = chunk.kin  # the residual reads these (the margins came from the chunk)
        kin.positions[rows], kin.com[rows] = pass_.positions[part], pass_.com[part]
        kin.rate[rows], kin.known_points[rows] = pass_.rate[part], pass_.known_points[part]
        why.update({s + c: reason for c, reason in chunk.why.items()})
    solved = np.flatnonzero(np.isfinite(X[:, 0]))
    res_f, res_m = np.full((N, 3), np.nan), np.full((N, 3), np.nan)
    if len(solved):
        some = kin if len(solved) == N else kin.rows(solved)
        W = known.wrench[solved] if len(known) else np.zeros((len(solved), 0, 6))
        res_f[solved], res_m[solved] = some.residual(
            contacts, X[solved], W, robot.mass, robot.gravity_vector
        )
    margins[~np.isfinite(X[:, 0])] = np.nan
    if T is None:  # the hard equations are the Newton-Euler rows: their residual
        equations[:] = data[:] = np.maximum(np.abs(res_f).max(axis=1), np.abs(res_m).max(axis=1))
    found = np.isfinite(X[:, 0])
    eq = np.where(found, equations, np.inf)
    violation = np.where(found, -margins.min(axis=1), np.inf)
    limit = opt.tolerance * robot.weight
    status = estimate_status(eq, violation, limit, fallback)
    status[bad] = "flagged"
    for i in np.flatnonzero(~bad & (status != "found")).tolist():
        reasons[i] = status_reason(
            status[i], float(eq[i]), float(violation[i]), limit, why.get(i, "")
        )
    scale, intervals = _explain(robot, Q, V, A, contacts, T, known, act, opt, X, status, ws)
    return EstimationBatch(
        tuple(contacts),
        X,
        status,
        res_f,
        res_m,
        equations,
        data,
        margins,
        times,
        dict(sorted(reasons.items())),
        "newton_euler" if T is None else "full_dynamics",
        opt.solver,
        rank,
        ident.all(axis=1) & ~bad,
        np.ones((N, k), dtype=bool) if mask is None else mask.copy(),
        ident,
        scale,
        intervals,
    )


def _explain(
    robot: Robot,
    Q: Array,
    V: Array,
    A: Array,
    contacts: Sequence[Contact],
    T: Array | None,
    known: KnownWrenches,
    act: NDArray[np.bool_] | None,
    opt: Options,
    X: Array,
    status: NDArray[np.object_],
    ws: Workspace,
) -> tuple[Array, Any]:
    """Per sample, the least friction scale of infeasible samples and the intervals, when
    asked for (NaN and None otherwise)."""
    scale = np.full(len(Q), np.nan)
    intervals = None
    if opt.friction_scale or opt.noise is not None:
        problem = problems(robot, Q, V, A, contacts, T, known, act, opt)
        if opt.friction_scale:
            for i in np.flatnonzero(status == "infeasible").tolist():
                p = problem(i)
                s = least_friction_scale(p.ne_matrix, p.ne_target, p._scaled_cones)
                scale[i] = np.nan if s is None else s
        if opt.noise is not None:
            from .uncertainty import batch_intervals

            intervals = batch_intervals(
                robot, problem, Q, V, X, status, ws.cset, opt.noise, opt.confidence
            )
    return scale, intervals
