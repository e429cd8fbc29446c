"""How a solved estimation problem becomes a :class:`ContactEstimate`: the fields derived
from the solution (eagerly, or at first read after a verified fast solve), and the fast
path on daqp's workspace set up once with the problem. The helpers of
:meth:`wholebody.estimation.EstimationProblem.solve`."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..balance.cop import cop_in_contact_frame
from ..balance.core import Residual
from ..balance.newton_euler import newton_euler_residual_arrays
from .results import ContactEstimate

__all__ = ["fast_setup", "solve_fast", "found_estimate", "derived_fields", "make_estimate"]

Array = NDArray[np.float64]
#: An :class:`wholebody.estimation.EstimationProblem` (not imported: it imports this module).
Problem = Any


def fast_setup(problem: Problem, daqp_arrays: tuple[Any, ...], daqp: Any) -> tuple[Any, ...]:
    """What :func:`solve_fast` needs, made once per problem: daqp's workspace (a
    ``daqp.Model`` set up with ``daqp_arrays``, the rows the full path gives ``daqp.solve``),
    and the check rows ``S = [G / |g_r|; E; -E]`` (stored transposed) with offsets
    ``c = [0; t; -t]``, so that ``max(S x - c) <= limit / 2`` says every cone margin and
    every equation residual is within half the limit. Empty when some contacts are
    inactive (their columns are zeroed after the solve: the full path decides)."""
    if problem.active is not None and not problem.active.all():
        return ()
    G, E, t = problem.cones, problem.equations, problem.target
    cset = problem._contact_set()
    S = np.concatenate([G / cset.row_norms[:, None], E, -E])
    offsets = np.concatenate([np.zeros(G.shape[0]), t, -t])
    names = [c.name for c in problem.contacts]
    ident = (
        np.full(len(names), problem.identifiable)
        if problem.identifiable_by_contact is None
        else problem.identifiable_by_contact
    )
    plain = {  # the fields of a found estimate that do not depend on x
        "status": "found",
        "mode": problem.mode,
        "rank": problem.rank,
        "identifiable": problem.identifiable,
        "min_friction_scale": None,
        "reason": "",
        "intervals": None,
    }
    per_estimate = (  # dictionaries: each estimate gets its own copy
        {c.name: c.mu for c in problem.contacts},
        dict.fromkeys(names, True),
        dict(zip(names, np.asarray(ident, bool).tolist(), strict=True)),
    )
    half = 0.5 * problem.tolerance * problem.weight
    H, f, rows, upper, lower, sense = daqp_arrays
    model = daqp.Model()  # the workspace, set up once with the problem
    try:
        ok = model.setup(H, f, rows, upper, lower, sense.copy())[0] > 0
    except Exception:  # the full path solves and reports the backend's reason
        ok = False
    if not ok:
        return ()
    return (model, np.ascontiguousarray(S.T), offsets, half, plain, per_estimate)


def solve_fast(fast: tuple[Any, ...]) -> Array | None:
    """daqp on its set-up workspace (no setup per solve: the problem is prebuilt; the
    answer agrees with a one-shot ``daqp.solve`` to rounding, ~1e-14 relative), and a
    sufficient check of its answer: every cone margin and equation residual within half the
    limit (one product; NaN fails it). None when that does not hold, and the full path
    (``daqp.solve``, the exact verification, the fallback) decides: a found estimate from
    here is found there too."""
    model, ST, c, half = fast[:4]
    try:
        x, _, exitflag, _ = model.solve()  # a new array each solve
    except Exception:  # the full path solves again and reports the backend's reason
        return None
    if exitflag <= 0:
        return None
    z = x.dot(ST)  # S x
    z -= c
    if not z[z.argmax()] <= half:  # argmax finds a NaN first: False for NaN too
        return None
    return x


def found_estimate(
    problem: Problem, fast: tuple[Any, ...], x: Array, solver: str, elapsed: float
) -> ContactEstimate:
    """The estimate of a fast, verified solve: its wrenches, residuals and margins are
    computed at first read, from a copy of ``x`` (as :func:`make_estimate` would)."""
    plain, (friction, active, ident) = fast[4], fast[5]
    kept = x.copy()
    fields = plain.copy()
    fields["solver"] = solver
    fields["solve_time"] = elapsed
    fields["x"] = x
    fields["friction"] = friction.copy()
    fields["active"] = active.copy()
    fields["identifiable_by_contact"] = ident.copy()
    return ContactEstimate._derived_later(
        lambda: derived_fields(problem, kept, None, None, None), fields
    )


def derived_fields(
    problem: Problem,
    x: Array,
    eq_res: float | None,
    data_res: float | None,
    margins: Array | None,
) -> dict[str, Any]:
    """The fields of a :class:`ContactEstimate` that follow from ``x`` and the problem:
    wrenches (world and contact axes), centres of pressure, the Newton-Euler residual, cone
    margins, and the equation and data residuals (computed here when None)."""
    cset = problem._contact_set()
    wrenches, local, cops = {}, {}, {}
    k = len(problem.contacts)
    e = 0 if problem.known is None else len(problem.known)
    W = np.zeros((k + e, 6))
    if "block_rotations" not in problem._cache:  # each 3-vector of x with its rotation
        sizes = [c.size // 3 for c in problem.contacts]
        problem._cache["block_rotations"] = np.repeat(problem.rotations, sizes, axis=0)
    # R^T w of every 3-block at once (w^T R), in the layout of x
    x_local = np.matmul(x.reshape(-1, 1, 3), problem._cache["block_rotations"]).ravel()
    for j, (c, cols) in enumerate(zip(problem.contacts, cset.cols, strict=True)):
        w = x[cols]
        wrenches[c.name] = w.copy()
        W[j, : c.size] = w
        local[c.name] = loc = x_local[cols]
        if c.size == 6:
            cops[c.name] = cop_in_contact_frame(loc)
    if eq_res is None or margins is None:
        eq_res, margins = problem._verify(x)
    if data_res is None:
        if problem.data_matrix is problem.equations and problem.data_target is problem.target:
            data_res = eq_res  # Newton-Euler mode: the hard equations are the data
        else:
            data_res = float(np.abs(problem.data_matrix @ x - problem.data_target).max(initial=0.0))
    assert problem.positions is not None and problem.momentum_rate is not None
    assert problem.gravity is not None
    points = problem.positions[:k]
    if e:
        assert problem.known is not None and problem.known_points is not None
        W[k:] = problem.known
        points = np.concatenate([points, problem.known_points])
    f, m = newton_euler_residual_arrays(
        W,
        points,
        problem.com,
        problem.momentum_rate,
        mass=problem.mass,
        gravity=problem.gravity,
    )
    names = [c.name for c in problem.contacts]
    return {
        "wrenches": wrenches,
        "wrenches_local": local,
        "centres_of_pressure": cops,
        "newton_euler_residual": Residual(f, m, problem.com, problem.weight),
        "equations_residual": eq_res,
        "data_residual": data_res,
        "cone_margins": dict(zip(names, margins.tolist(), strict=True)),
    }


def make_estimate(
    problem: Problem,
    x: Array,
    status: str,
    reason: str,
    solver: str,
    elapsed: float,
    eq_res: float,
    data_res: float,
    scale: float | None,
    margins: Array | None = None,
) -> ContactEstimate:
    k = len(problem.contacts)
    if margins is None:
        margins = problem._contact_set().linear_margins(x, faces=problem.cones)
    names = [c.name for c in problem.contacts]
    active = np.ones(k, dtype=bool) if problem.active is None else problem.active
    identifiable = problem.identifiable
    ident = (
        np.full(k, identifiable)
        if problem.identifiable_by_contact is None
        else problem.identifiable_by_contact
    )
    return ContactEstimate(
        status=status,
        **derived_fields(problem, x, eq_res, data_res, margins),
        mode=problem.mode,
        solver=solver,
        solve_time=elapsed,
        rank=problem.rank,
        identifiable=identifiable,
        min_friction_scale=scale,
        x=x,
        friction={c.name: c.mu for c in problem.contacts},
        reason=reason,
        active=dict(zip(names, active.tolist(), strict=True)),
        identifiable_by_contact=dict(zip(names, np.asarray(ident, bool).tolist(), strict=True)),
    )
