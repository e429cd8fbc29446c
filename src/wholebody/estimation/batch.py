"""Batch estimation: one Pinocchio pass and one small QP per sample, verified vectorised."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..contacts import Contact
from ..friction import ContactSet
from ..newton_euler import newton_euler_residual_arrays, wrenches_in_log_layout
from ..robot import Robot
from .problem import AssemblyBuffers, assemble, generalized_torque
from .results import EstimationBatch, estimate_status, status_reason
from .solvers import (
    DEFAULT_REGULARIZATION,
    DEFAULT_SOLVER,
    DEFAULT_TOLERANCE,
    BatchSolver,
    check_solver,
    solve_soft,
)

__all__ = ["estimate_contact_wrenches_batch"]

Array = NDArray[np.float64]


def estimate_contact_wrenches_batch(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    contacts: Sequence[Contact],
    *,
    tau: ArrayLike | None = None,
    solver: str | None = None,
    regularization: float = DEFAULT_REGULARIZATION,
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
    (N, nv - 6) or (N, nv). Statuses, ranks and reasons as in :class:`ContactEstimate`
    (infeasible samples come back with the closest wrenches inside the cones); the
    friction-scale search of single estimates is not run here. ``workers`` processes share
    the samples in chunks of ``chunk_size``; the result is identical to ``workers=1`` and a
    failing chunk marks its samples ``"failed"`` with the error.
    """
    solver = solver or DEFAULT_SOLVER
    check_solver(solver)
    if workers > 1:
        return _estimate_in_chunks(robot, q, v, a, contacts, tau, solver, regularization,
                                   pyramid_faces, tolerance, workers, chunk_size)
    arrays = {"q": q, "v": v, "a": a}
    if tau is not None:
        arrays["tau_in"] = tau
    checked, flagged, reasons = robot.check_batch(**arrays)
    bad = np.asarray(flagged, dtype=bool)
    Q, V, A = checked["q"], checked["v"], checked["a"]
    N, k = Q.shape[0], len(contacts)
    cset = ContactSet(contacts, pyramid_faces=pyramid_faces)
    n = cset.n
    frame_ids = [robot.frame_id(c.frame) for c in contacts]
    full = tau is not None
    limit = tolerance * robot.weight
    mass, gravity = robot.mass, robot.gravity_vector
    qp = BatchSolver(solver, n, cset.n_rows)
    buffers = AssemblyBuffers(cset)

    wrenches = np.full((N, n), np.nan)
    times = np.full(N, np.nan)
    rank = np.full(N, -1, dtype=np.int64)
    eq_res = np.full(N, np.nan)
    data_res = np.full(N, np.nan)
    fallback = np.zeros(N, dtype=bool)
    why: dict[int, str] = {}
    # What the vectorised verification needs from each sample's pass.
    positions = np.full((N, k, 3), np.nan)
    rotations = np.full((N, k, 3, 3), np.nan)
    com = np.full((N, 3), np.nan)
    rate = np.full((N, 6), np.nan)

    rows = np.flatnonzero(~bad).tolist()
    iterator: Any = rows
    if progress:
        from .._progress import progress_bar

        iterator = progress_bar(rows, desc="estimating", total=len(rows))
    perf_counter = time.perf_counter
    if solver == "daqp" and not full:
        # The fast path: the pass writes straight into daqp's buffers (equation rows, then
        # the cone rows updated in place), verification is vectorised after the loop.
        qp.buffers(6)
        E, G, target = qp.A_all[:6], qp.A_all[6:], qp.upper[:6]
        E[...] = cset.newton_euler_matrix(np.zeros((k, 3)), np.zeros(3))
        weight_force = mass * gravity
        rank[~bad] = min(6, n)
        for i in iterator:
            kin = robot.contact_pass(Q[i], V[i], A[i], frame_ids, jacobians=False)
            positions[i], rotations[i] = kin.positions, kin.rotations
            com[i], rate[i] = kin.com, kin.momentum_rate
            cset.newton_euler_matrix(kin.positions, kin.com, out=E)
            cset.face_matrix(kin.rotations, out=G)
            np.subtract(kin.momentum_rate[:3], weight_force, out=target[:3])
            target[3:] = kin.momentum_rate[3:]
            t0 = perf_counter()
            x, reason = qp.solve()
            if x is None:
                fallback[i] = True
                x, soft = solve_soft(E.copy(), target.copy(), G.copy(), cset.row_norms, solver,
                                     regularization, limit)
                why[i] = "; ".join(r for r in (reason, soft) if r)
            times[i] = perf_counter() - t0
            if x is not None:
                wrenches[i] = x
        iterator = ()
    empty = np.zeros((0, 6))
    for i in iterator:
        tau_gen = generalized_torque(robot, checked["tau_in"][i]) if full else None
        kin = robot.contact_pass(Q[i], V[i], A[i], frame_ids, jacobians=full)
        positions[i], rotations[i] = kin.positions, kin.rotations
        com[i], rate[i] = kin.com, kin.momentum_rate
        asm = assemble(kin, cset, tau_gen, empty, mass, gravity, buffers)
        rank[i] = asm.rank
        t0 = perf_counter()
        x, reason = qp.solve_arrays(asm.equations, asm.target, asm.cones)
        if x is not None and full:
            # Full-dynamics verification needs this sample's SVD rows.
            eq_res[i] = np.abs(asm.equations @ x - asm.target).max(initial=0.0)
        if x is None or (full and not eq_res[i] <= limit):
            fallback[i] = True
            x, soft = solve_soft(asm.data_matrix, asm.data_target, asm.cones, cset.row_norms,
                                 solver, regularization, limit)
            why[i] = "; ".join(r for r in (reason, soft) if r)
            if x is not None and full:
                eq_res[i] = np.abs(asm.equations @ x - asm.target).max(initial=0.0)
        times[i] = perf_counter() - t0
        if x is None:
            continue
        wrenches[i] = x
        if full:
            data_res[i] = np.abs(asm.data_matrix @ x - asm.data_target).max()

    # Verification, vectorised over the samples that came back.
    solved = np.flatnonzero(np.isfinite(wrenches[:, 0]))
    res_f = np.full(N, np.nan)
    res_m = np.full(N, np.nan)
    margins = np.full((N, k), np.nan)
    W = wrenches_in_log_layout(cset.contacts, wrenches[solved])
    f, m = newton_euler_residual_arrays(W, positions[solved], com[solved], rate[solved],
                                        mass=mass, gravity=gravity)
    res_f[solved] = np.linalg.norm(f, axis=1)
    res_m[solved] = np.linalg.norm(m, axis=1)
    if not full:  # the hard equations are the Newton-Euler rows
        eq_res[solved] = np.maximum(np.abs(f).max(axis=1), np.abs(m).max(axis=1))
        data_res = eq_res.copy()
    margins[solved] = cset.linear_margins(wrenches[solved], rotations=rotations[solved])
    violation = np.full(N, np.inf)
    violation[solved] = -margins[solved].min(axis=1)
    eq_for_status = np.where(np.isfinite(wrenches[:, 0]), eq_res, np.inf)
    status = estimate_status(eq_for_status, violation, limit, fallback)
    status[bad] = "flagged"
    for i in np.flatnonzero(~bad & (status != "found")).tolist():
        reasons[i] = status_reason(status[i], float(eq_for_status[i]), float(violation[i]), limit,
                                   why.get(i, ""))
    identifiable = (rank == n) & ~bad
    return EstimationBatch(
        tuple(contacts), wrenches, status, res_f, res_m, eq_res, data_res, margins, times,
        dict(sorted(reasons.items())), "full_dynamics" if full else "newton_euler", solver,
        rank, identifiable,
    )


def _estimate_chunk(robot, q, v, a, contacts, tau, solver, regularization, pyramid_faces,
                    tolerance):
    return estimate_contact_wrenches_batch(robot, q, v, a, contacts, tau=tau, solver=solver,
                                           regularization=regularization,
                                           pyramid_faces=pyramid_faces, tolerance=tolerance)


_FIELDS = ("wrenches", "status", "residual_force", "residual_moment", "equations_residual",
           "data_residual", "cone_margin", "solve_time", "rank", "identifiable")


def _estimate_in_chunks(robot, q, v, a, contacts, tau, solver, regularization, pyramid_faces,
                        tolerance, workers, chunk_size) -> EstimationBatch:
    from ..parallel import ChunkFailure, Shared, chunk_bounds, run_chunks

    Q, V, A = (np.asarray(x, dtype=float) for x in (q, v, a))
    T = None if tau is None else np.asarray(tau, dtype=float)
    N, k, n = Q.shape[0], len(contacts), sum(c.size for c in contacts)
    shared = {"q": Q, "v": V, "a": A, "tau": T}
    chunks = [((s, e), (Shared("q", s, e), Shared("v", s, e), Shared("a", s, e), contacts,
                        None if T is None else Shared("tau", s, e), solver, regularization,
                        pyramid_faces, tolerance))
              for s, e in chunk_bounds(N, chunk_size)]
    results = run_chunks(robot, _estimate_chunk, chunks, workers, shared=shared)
    parts: dict[str, list[Any]] = {name: [] for name in _FIELDS}
    reasons: dict[int, str] = {}
    for ((s, e), _), res in zip(chunks, results, strict=True):
        if isinstance(res, ChunkFailure):
            m = e - s
            failed = np.empty(m, dtype=object)
            failed[:] = "failed"
            nan = {"wrenches": np.full((m, n), np.nan), "status": failed,
                   "cone_margin": np.full((m, k), np.nan), "rank": np.full(m, -1),
                   "identifiable": np.zeros(m, dtype=bool)}
            for name in parts:
                parts[name].append(nan.get(name, np.full(m, np.nan)))
            reasons.update({i: f"chunk {s}..{e - 1} failed: {res.error}" for i in range(s, e)})
            continue
        for name in parts:
            parts[name].append(getattr(res, name))
        reasons.update({s + i: why for i, why in res.reasons.items()})
    merged = {name: np.concatenate(values) for name, values in parts.items()}
    status = np.empty(N, dtype=object)
    status[:] = [str(s) for s in merged.pop("status")]
    return EstimationBatch(
        tuple(contacts), merged["wrenches"], status, merged["residual_force"],
        merged["residual_moment"], merged["equations_residual"], merged["data_residual"],
        merged["cone_margin"], merged["solve_time"], dict(sorted(reasons.items())),
        "full_dynamics" if T is not None else "newton_euler", solver, merged["rank"],
        merged["identifiable"])
