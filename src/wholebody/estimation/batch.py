"""Batch estimation: one Pinocchio pass and one small QP per sample, verified vectorised."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..contacts import Contact
from ..errors import InvalidArgumentError
from ..robot.core import Robot
from ._samples import _estimate, _Options
from .known import KnownWrenches, check_active, prepare_known
from .results import EstimationBatch
from .solvers import (
    DEFAULT_REGULARIZATION,
    DEFAULT_SOLVER,
    DEFAULT_TOLERANCE,
    check_solver,
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
    external_wrenches: Mapping[str, Any] | None = None,
    active: ArrayLike | None = None,
    known_wrenches: Mapping[str, Any] | None = None,
    solver: str | None = None,
    regularization: float = DEFAULT_REGULARIZATION,
    pyramid_faces: int = 4,
    tolerance: float = DEFAULT_TOLERANCE,
    progress: bool = False,
    workers: int = 1,
    chunk_size: int = 10_000,
    friction_scale: bool = False,
    intervals: bool = False,
    noise: Any = None,
    confidence: float = 0.95,
) -> EstimationBatch:
    """Estimate N samples: one Pinocchio pass and one small QP each.

    With the default backend (daqp) the solver is called through its own API, set up once and
    updated per sample, which keeps qpsolvers' per-call Python overhead (30-40 us) out of the
    loop. Other backends go through qpsolvers. Arguments as in
    :func:`build_estimation_problem`, with ``q`` (N, nq), ``v``, ``a`` (N, nv) and ``tau``
    (N, nv - 6) or (N, nv). Statuses, ranks and reasons as in :class:`ContactEstimate`
    (infeasible samples come back with the closest wrenches inside the cones).

    Parameters
    ----------
    external_wrenches : mapping, optional
        Known external wrenches (:data:`wholebody.balance.newton_euler.ExternalWrenches`), per
        sample
        (N, 6) / (N, 3) or constant, or ``(forces or wrenches, points)`` pairs with points
        (N, 3) or (3,) world [m] (a push at a point). Samples where one is non-finite are
        flagged.
    active : array of bool, shape (N, k) or (k,), optional
        Per sample and contact, whether the contact may carry a wrench (a contact schedule,
        :attr:`wholebody.schedule.ContactSchedule.active`); inactive ones are fixed to zero.
    known_wrenches : mapping, deprecated
        Use ``external_wrenches``.
    workers, chunk_size : int
        ``workers`` processes share the samples in chunks of ``chunk_size``; the result is
        identical to ``workers=1`` and a failing chunk marks its samples ``"failed"`` with
        the error.
    friction_scale : bool
        Also search the least friction scale of infeasible samples (a few LPs each).
    intervals : bool
        Also compute :class:`wholebody.estimation.uncertainty.WrenchIntervals` from ``noise`` (a
        :class:`wholebody.estimation.uncertainty.NoiseLevels`) at ``confidence``: per sample a
        linearisation and, for splits that are not identifiable, a few LPs (milliseconds per
        sample; the default leaves batch speed unchanged).
    """
    solver = solver or DEFAULT_SOLVER
    check_solver(solver)
    Q = np.asarray(q, dtype=float)
    if Q.ndim != 2:
        raise InvalidArgumentError(f"q must have shape (N, {robot.nq}), got {Q.shape}")
    if workers < 1:
        raise InvalidArgumentError(f"workers must be at least 1, got {workers}")
    if intervals and noise is None:
        raise InvalidArgumentError(
            "intervals=True needs noise=NoiseLevels(...): the stated noise of a (or v) and tau"
        )
    N = Q.shape[0]
    known = prepare_known(
        robot,
        external_wrenches,
        known_wrenches,
        N,
        full=tau is not None,
        stacklevel=3,
        finite=False,
    )
    mask = check_active(active, contacts, N)
    options = _Options(
        solver,
        regularization,
        pyramid_faces,
        tolerance,
        friction_scale,
        noise if intervals else None,
        confidence,
    )
    if workers > 1:
        return _estimate_in_chunks(
            robot, Q, v, a, contacts, tau, known, mask, options, workers, chunk_size
        )
    return _estimate(robot, Q, v, a, contacts, tau, known, mask, options, progress)


def _estimate_chunk(
    robot, q, v, a, contacts, tau, names, wrench, point, frames, framed, mask, options
):
    known = KnownWrenches(names, wrench, point, frames, framed)
    return _estimate(robot, q, v, a, contacts, tau, known, mask, options)


_FIELDS = (
    "wrenches",
    "status",
    "residual_force",
    "residual_moment",
    "equations_residual",
    "data_residual",
    "cone_margin",
    "solve_time",
    "rank",
    "identifiable",
    "active",
    "identifiable_by_contact",
    "min_friction_scale",
)


def _estimate_in_chunks(
    robot, Q, v, a, contacts, tau, known, mask, options, workers, chunk_size
) -> EstimationBatch:
    from ..parallel import ChunkFailure, Shared, chunk_bounds, run_chunks

    V, A = (np.asarray(x, dtype=float) for x in (v, a))
    T = None if tau is None else np.asarray(tau, dtype=float)
    N, k, n = Q.shape[0], len(contacts), sum(c.size for c in contacts)
    act = np.ones((N, k), dtype=bool) if mask is None else mask
    shared = {"q": Q, "v": V, "a": A, "tau": T, "w": known.wrench, "p": known.point, "act": act}
    chunks = [
        (
            (s, e),
            (
                Shared("q", s, e),
                Shared("v", s, e),
                Shared("a", s, e),
                contacts,
                None if T is None else Shared("tau", s, e),
                known.names,
                Shared("w", s, e),
                Shared("p", s, e),
                known.frames,
                known.framed,
                Shared("act", s, e),
                options,
            ),
        )
        for s, e in chunk_bounds(N, chunk_size)
    ]
    results = run_chunks(robot, _estimate_chunk, chunks, workers, shared=shared)
    parts: dict[str, list[Any]] = {name: [] for name in _FIELDS}
    interval_parts: list[Any] = []
    reasons: dict[int, str] = {}
    for ((s, e), _), res in zip(chunks, results, strict=True):
        if isinstance(res, ChunkFailure):
            m = e - s
            failed = np.empty(m, dtype=object)
            failed[:] = "failed"
            nan = {
                "wrenches": np.full((m, n), np.nan),
                "status": failed,
                "residual_force": np.full((m, 3), np.nan),
                "residual_moment": np.full((m, 3), np.nan),
                "cone_margin": np.full((m, k), np.nan),
                "rank": np.full(m, -1),
                "identifiable": np.zeros(m, dtype=bool),
                "active": act[s:e],
                "identifiable_by_contact": np.zeros((m, k), dtype=bool),
            }
            for name in parts:
                parts[name].append(nan.get(name, np.full(m, np.nan)))
            reasons.update({i: f"chunk {s}..{e - 1} failed: {res.error}" for i in range(s, e)})
            interval_parts.append((m, None))
            continue
        for name in parts:
            parts[name].append(getattr(res, name))
        interval_parts.append((e - s, res.intervals))
        reasons.update({s + i: why for i, why in res.reasons.items()})
    merged = {name: np.concatenate(values) for name, values in parts.items()}
    status = np.empty(N, dtype=object)
    status[:] = [str(s) for s in merged.pop("status")]
    intervals = None
    if options.noise is not None:
        from .uncertainty import WrenchIntervals

        intervals = WrenchIntervals.concatenate(interval_parts, tuple(contacts), options.confidence)
    return EstimationBatch(
        tuple(contacts),
        merged["wrenches"],
        status,
        merged["residual_force"],
        merged["residual_moment"],
        merged["equations_residual"],
        merged["data_residual"],
        merged["cone_margin"],
        merged["solve_time"],
        dict(sorted(reasons.items())),
        "full_dynamics" if T is not None else "newton_euler",
        options.solver,
        merged["rank"],
        merged["identifiable"],
        merged["active"],
        merged["identifiable_by_contact"],
        merged["min_friction_scale"],
        intervals,
    )
