"""N samples shared between worker processes in chunks (``workers=`` of
:func:`wholebody.estimation.estimate_contact_wrenches`): each chunk goes the one route (the
function ``estimate`` given, :func:`wholebody.estimation.estimate.estimate_batch`), and the
chunks' results are put back together; a failing chunk marks its samples ``"failed"``."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from .known import NO_KNOWN, KnownWrenches
from .results import EstimationBatch

__all__ = ["estimate_in_chunks"]


def _estimate_chunk(
    estimate, robot, q, v, a, contacts, tau, names, wrench, point, frames, framed, mask, options
):
    if names:
        known = KnownWrenches(names, wrench, point, frames, framed)
    else:
        known = NO_KNOWN
    return estimate(robot, q, v, a, contacts, tau, known, mask, options)


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


def estimate_in_chunks(
    estimate, robot, Q, v, a, contacts, tau, known, mask, options, workers, chunk_size
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
    results = run_chunks(robot, partial(_estimate_chunk, estimate), chunks, workers, shared=shared)
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
