"""The per-sample loop of batch estimation: one Pinocchio pass and one QP each, verified
vectorised afterwards. Private to :mod:`wholebody.estimation.batch`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..balance.newton_euler import newton_euler_residual_arrays, wrenches_in_log_layout
from ..contacts import Contact
from ..friction import ContactSet
from ..robot.core import Robot
from ._daqp_batch import NewtonEulerDaqp
from .assembly import AssemblyBuffers, assemble, generalized_torque
from .known import KnownWrenches
from .problem import build_estimation_problem
from .results import EstimationBatch, estimate_status, status_reason
from .solvers import (
    BatchSolver,
    least_friction_scale,
    solve_soft,
)

Array = NDArray[np.float64]


@dataclass(frozen=True)
class _Options:
    solver: str
    regularization: float
    pyramid_faces: int
    tolerance: float
    friction_scale: bool
    noise: Any
    confidence: float


def _estimate(
    robot: Robot,
    q: Any,
    v: Any,
    a: Any,
    contacts: Sequence[Contact],
    tau: Any,
    known: KnownWrenches,
    mask: NDArray[np.bool_] | None,
    opt: _Options,
    progress: bool = False,
) -> EstimationBatch:
    solver, regularization = opt.solver, opt.regularization
    arrays: dict[str, Any] = {"q": q, "v": v, "a": a}
    if tau is not None:
        arrays["tau_in"] = tau
    checked, flagged, reasons = robot.check_batch(**arrays)
    bad: NDArray[np.bool_] = np.array(flagged, dtype=bool)
    for i, text in known.nonfinite_rows().items():
        if not bad[i]:
            bad[i] = True
            reasons[i] = text
    Q, V, A = checked["q"], checked["v"], checked["a"]
    N, k, e = Q.shape[0], len(contacts), len(known)
    cset = ContactSet(contacts, pyramid_faces=opt.pyramid_faces)
    n = cset.n
    frame_ids = [robot.frame_id(c.frame) for c in contacts] + [
        robot.frame_id(f) for f in known.frames
    ]
    full = tau is not None
    limit = opt.tolerance * robot.weight
    mass, gravity = robot.mass, robot.gravity_vector
    qp = BatchSolver(solver, n, cset.n_rows)
    buffers = AssemblyBuffers(cset)
    act = np.ones((N, k), dtype=bool) if mask is None else mask
    masked = np.asarray(~act.all(axis=1), dtype=bool)
    cmask = np.repeat(act.astype(float), cset.sizes, axis=1)
    n_active = act.sum(axis=1)
    all_soles = all(size == 6 for size in cset.sizes)

    wrenches = np.full((N, n), np.nan)
    times = np.full(N, np.nan)
    rank = np.full(N, -1, dtype=np.int64)
    ident = np.zeros((N, k), dtype=bool)
    eq_res = np.full(N, np.nan)
    data_res = np.full(N, np.nan)
    fallback = np.zeros(N, dtype=bool)
    why: dict[int, str] = {}
    # What the vectorised verification needs from each sample's pass.
    positions = np.full((N, k + e, 3), np.nan)
    rotations = np.full((N, k, 3, 3), np.nan)
    com = np.full((N, 3), np.nan)
    rate = np.full((N, 6), np.nan)
    known_w = np.zeros((N, e, 6))

    rows = np.flatnonzero(~bad).tolist()
    iterator: Any = rows
    perf_counter = time.perf_counter
    if solver == "daqp" and not full:
        # The fast path (chunked: passes, QP data in numpy, one daqp solve per sample);
        # verification is vectorised after the loop.
        if all_soles:
            rank[~bad] = np.where(n_active[~bad] > 0, 6, 0)
            ident[~bad] = ~act[~bad] | (n_active[~bad] == 1)[:, None]
        pass_positions = np.full((N, len(frame_ids), 3), np.nan)
        NewtonEulerDaqp(
            com, rate, pass_positions, rotations, wrenches, times, rank, ident, fallback, why
        ).run(
            robot, cset, Q, V, A, rows, frame_ids, known, act, masked, cmask, n_active,
            regularization, limit, progress,
        )  # fmt: skip
        positions[:, :k] = pass_positions[:, :k]
        if e:
            known_w[:] = known.wrench
            at_origin = np.isnan(known.point[:, :, 0])
            if known.frames:
                pass_row = np.cumsum(known.framed) - 1
                framed_pos = pass_positions[:, k:][:, np.maximum(pass_row, 0)]
                positions[:, k:] = np.where(at_origin[..., None], framed_pos, known.point)
            else:
                positions[:, k:] = known.point
        iterator = ()
    elif progress:
        from ..parallel import progress_bar

        iterator = progress_bar(rows, desc="estimating", total=len(rows))
    for i in iterator:
        tau_gen = generalized_torque(robot, checked["tau_in"][i]) if full else None
        kin = robot.contact_pass(Q[i], V[i], A[i], frame_ids, jacobians=full)
        positions[i, :k], rotations[i] = kin.positions[:k], kin.rotations[:k]
        com[i], rate[i] = kin.com, kin.momentum_rate
        w, p = known.sample(i, kin.positions[k:])
        known_w[i], positions[i, k:] = w, p
        at_origins = known.at_frame_origins(i, kin.positions[k:]) if full and e else None
        asm = assemble(
            kin,
            cset,
            tau_gen,
            w,
            mass,
            gravity,
            buffers,
            known_points=p,
            known_at_origins=at_origins,
            active=act[i] if masked[i] else None,
        )
        rank[i], ident[i] = asm.rank, asm.identifiable
        t0 = perf_counter()
        x: Array | None
        if n_active[i] == 0:
            x, reason = np.zeros(n), ""
            fallback[i] = float(np.abs(asm.data_target).max()) > limit
        else:
            x, reason = qp.solve_arrays(asm.equations, asm.target, asm.cones)
        if x is not None and full:
            # Full-dynamics verification needs this sample's SVD rows.
            eq_res[i] = np.abs(asm.equations @ x - asm.target).max(initial=0.0)
        if x is None or (full and not eq_res[i] <= limit and n_active[i]):
            fallback[i] = True
            x, soft = solve_soft(
                asm.data_matrix,
                asm.data_target,
                asm.cones,
                cset.row_norms,
                solver,
                regularization,
                limit,
            )
            why[i] = "; ".join(r for r in (reason, soft) if r)
            if x is not None and full:
                eq_res[i] = np.abs(asm.equations @ x - asm.target).max(initial=0.0)
        times[i] = perf_counter() - t0
        if x is None:
            continue
        if masked[i]:
            x = x * cmask[i]
        wrenches[i] = x
        if full:
            data_res[i] = np.abs(asm.data_matrix @ x - asm.data_target).max()
            if n_active[i] == 0:
                eq_res[i] = data_res[i]

    # Verification, vectorised over the samples that came back.
    solved = np.flatnonzero(np.isfinite(wrenches[:, 0]))
    res_f = np.full((N, 3), np.nan)
    res_m = np.full((N, 3), np.nan)
    margins = np.full((N, k), np.nan)
    W = wrenches_in_log_layout(cset.contacts, wrenches[solved])
    if e:
        W = np.concatenate([W, known_w[solved]], axis=1)
    f, m = newton_euler_residual_arrays(
        W, positions[solved], com[solved], rate[solved], mass=mass, gravity=gravity
    )
    res_f[solved] = f
    res_m[solved] = m
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
        reasons[i] = status_reason(
            status[i], float(eq_for_status[i]), float(violation[i]), limit, why.get(i, "")
        )
    ident &= ~bad[:, None]
    identifiable = ident.all(axis=1) & ~bad
    scale = np.full(N, np.nan)
    intervals = None
    if opt.friction_scale or opt.noise is not None:

        def problem(i: int) -> Any:
            return build_estimation_problem(
                robot,
                Q[i],
                V[i],
                A[i],
                contacts,
                tau=None if not full else checked["tau_in"][i],
                external_wrenches=known.mapping(i) if e else None,
                active=act[i],
                regularization=regularization,
                pyramid_faces=opt.pyramid_faces,
                tolerance=opt.tolerance,
            )

        if opt.friction_scale:
            for i in np.flatnonzero(status == "infeasible").tolist():
                p = problem(i)
                s = least_friction_scale(p.ne_matrix, p.ne_target, p._scaled_cones)
                scale[i] = np.nan if s is None else s
        if opt.noise is not None:
            from .uncertainty import batch_intervals

            intervals = batch_intervals(
                robot, problem, Q, V, wrenches, status, cset, opt.noise, opt.confidence
            )
    return EstimationBatch(
        tuple(contacts),
        wrenches,
        status,
        res_f,
        res_m,
        eq_res,
        data_res,
        margins,
        times,
        dict(sorted(reasons.items())),
        "full_dynamics" if full else "newton_euler",
        solver,
        rank,
        identifiable,
        act.copy(),
        ident,
        scale,
        intervals,
    )
