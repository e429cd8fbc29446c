"""A log's wrench lag, estimated before the fit: the time ``delta`` by which the contact
wrenches trail the motion (``w_log(t) = w_true(t - delta)``).

On the floating-base rows, the residual of each candidate ``delta`` (the wrenches read at
``t + delta``) is taken after projecting out a few nuisance directions: a constant 6D offset
per contact, a scale of the whole robot's mass and the mass and first moment of the base body
(where a CoM error anywhere shows in quasi-static motion) and, for a targeted fit (at most
:data:`MAX_OWN_COLUMNS` parameters), the fit's own inertial parameters, so that neither a
sensor offset nor a mass error can pose as a lag. Every link's inertial parameters would be
too many: their dynamic columns absorb most of what a lag changes. The fit then estimates the
lags again with its fitted model, and refits when they moved. The residual is minimised
over whole-sample shifts within ``+- max_lag`` and refined by a parabola through the best
three. Its standard error is a delete-a-block jackknife over contiguous blocks of the log;
the fit applies a lag only when the log tells it from zero (a sub-sample shift read from noise
moves that log's sensor offsets by the wrenches' rate of change times the shift).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numpy.typing import NDArray

from ..robot.batch import regressor_frames_rows
from .problem import PreparedLog, Problem

#: The fit's own inertial parameters join the nuisance up to this many (a targeted fit).
MAX_OWN_COLUMNS = 24
_BLOCK = 512  # samples per regressor pass
#: Contiguous blocks of the delete-a-block jackknife of the lag's standard error.
JACKKNIFE_BLOCKS = 10
__all__ = ["lag_and_error", "shift_wrenches", "BaseRows", "JACKKNIFE_BLOCKS"]

Array = NDArray[np.float64]


def _interpolate(t: Array, W: Array, at: Array) -> Array:
    """``W`` (n, ...) linearly interpolated at times ``at`` (inside ``t``'s span)."""
    flat = W.reshape(len(W), -1)
    out = np.empty((len(at), flat.shape[1]))
    for c in range(flat.shape[1]):
        out[:, c] = np.interp(at, t, flat[:, c])
    return out.reshape((len(at),) + W.shape[1:])


@dataclasses.dataclass(frozen=True)
class BaseRows:
    """The base rows of a log's samples inside the lag window, from one regressor pass:
    kept between readings of the same log's lag with other parameters.

    Attributes
    ----------
    Y : ndarray, shape (n, 6, 10 (njoints - 1))
        Regressor rows [N or N m per unit of parameter].
    G : ndarray, shape (n, k, 6, 6)
        Base rows of each contact's ``J^T`` (world-aligned, at the contact frame's origin).
    offsets : ndarray, shape (n, 6, 6 k)
        How each contact's constant 6D offset in its own axes enters the base rows.
    external : ndarray, shape (n, 6)
        The base rows' share of the logged external wrenches (zeros without).
    """

    Y: Array
    G: Array
    offsets: Array
    external: Array

    @staticmethod
    def nbytes(problem: Problem, log: PreparedLog) -> int:
        """Memory [bytes] the base rows of ``log`` take (its whole length, a bound)."""
        k = len(problem.contacts)
        per_sample = 6 * (10 * (problem.robot.model.njoints - 1) + 6 * k + 6 * k + 1)
        return 8 * len(log.q) * per_sample


def _base_rows(problem: Problem, log: PreparedLog, inside: NDArray[np.intp]) -> BaseRows:
    """The regressor pass of :class:`BaseRows` over the samples ``inside``, in blocks of
    :data:`_BLOCK` samples (the pass's own memory bounded by a block)."""
    robot = problem.robot
    k = len(problem.contacts)
    fids = [robot.frame_id(c.frame) for c in problem.contacts]
    ext = [robot.frame_id(f) for f in log.ext_frames] if log.E is not None else []
    n = len(inside)
    Y = np.empty((n, 6, 10 * (robot.model.njoints - 1)))
    G = np.empty((n, k, 6, 6))
    offsets = np.empty((n, 6, 6 * k))
    external = np.zeros((n, 6))
    for b in range(0, n, _BLOCK):
        block = inside[b : b + _BLOCK]
        Yb, Jb, Rb = regressor_frames_rows(
            robot, log.q, log.v, log.a, block, fids + ext, dofs=6, n_rotations=k
        )
        rows = slice(b, b + len(block))
        Y[rows] = Yb
        G[rows] = np.swapaxes(Jb[:, :k], 2, 3)
        for c in range(k):
            Gc, R = G[rows, c], Rb[:, c]
            offsets[rows, :, 6 * c : 6 * c + 3] = Gc[:, :, :3] @ R
            offsets[rows, :, 6 * c + 3 : 6 * c + 6] = Gc[:, :, 3:] @ R
        if log.E is not None:
            for e in range(len(ext)):
                Je_T = np.swapaxes(Jb[:, k + e], 1, 2)
                external[rows] += (Je_T @ log.E[block, e][:, :, None])[:, :, 0]
    return BaseRows(Y, G, offsets, external)


def lag_and_error(
    problem: Problem,
    log: PreparedLog,
    max_lag: float,
    theta: Array | None = None,
    rows: list[BaseRows] | None = None,
) -> tuple[float, float, str]:
    """The lag [s] of ``log``'s contact wrenches behind its motion, within ``+- max_lag``, with
    the model of the parameters ``theta`` (default: the URDF); its standard error [s], a
    delete-a-block jackknife over :data:`JACKKNIFE_BLOCKS` contiguous blocks of the log (each
    block's share of the cost at every shift; the lag minimising the others'), so that
    residuals correlated in time widen it; and why the log tells no lag, in words for a report
    (then ``(0, inf, why)``; ``why`` is empty when a lag was read).

    ``rows``: a holder of the log's :class:`BaseRows` between readings: empty, the pass's
    rows are put in it; holding them, they are used (the same log, another ``theta``)."""
    why = _unreadable(log, max_lag)
    if why:
        return 0.0, math.inf, why
    t = np.asarray(log.t)
    dt = float(np.median(np.diff(t)))
    inside = np.flatnonzero((t >= t[0] + max_lag) & (t <= t[-1] - max_lag))
    W = log.W[:, log.contact_order]
    pi0 = problem.pi_full(np.zeros(problem.p) if theta is None else theta)[0]
    n, k = len(inside), len(problem.contacts)
    if rows:
        base = rows[0]
    else:
        base = _base_rows(problem, log, inside)
        if rows is not None:
            rows.append(base)
    G = base.G  # base rows of J^T per contact
    model_rows = base.Y @ pi0
    y = model_rows - base.external
    # Nuisance: whole-robot mass scale, base body mass and first moment, and the fit's own
    # inertial parameters when they are few (a targeted fit).
    own = problem.n_inertial <= MAX_OWN_COLUMNS
    x0, D0 = problem.x_and_derivative(np.zeros(problem.p) if theta is None else theta)
    Dp = D0[: problem.n_pi, : problem.n_inertial]
    n_mass = 5 + (problem.n_inertial if own else 0)
    N = np.empty((n, 6, n_mass + 6 * k))
    N[:, :, 0] = model_rows  # the whole robot's mass scale
    N[:, :, 1:5] = base.Y[:, :, 0:4]
    if own:
        N[:, :, 5:n_mass] = base.Y[:, :, problem.used] @ Dp
    N[:, :, n_mass:] = base.offsets

    def residual(delta: float) -> Array:
        Wd = _interpolate(t, W, t[inside] + delta)
        return y - np.einsum("nkrs,nks->nr", G, Wd)

    # Rows weighted by each group's scale (force, moment), then the unknowns projected out.
    Nf = N.reshape(-1, N.shape[2])
    U = _basis(Nf)
    r0 = residual(0.0).reshape(-1)
    r0 = (r0 - U @ (U.T @ r0)).reshape(n, 6)
    weight = np.ones(6)
    for sl in (slice(0, 3), slice(3, 6)):
        rms = float(np.sqrt(np.mean(r0[:, sl] ** 2)))
        weight[sl] = 1.0 / max(rms, 1e-12)
    Nw = (N * weight[None, :, None]).reshape(-1, N.shape[2])
    U = _basis(Nw)

    def per_sample(delta: float) -> Array:
        r = (residual(delta) * weight).reshape(-1)
        r = r - U @ (U.T @ r)
        return np.sum(r.reshape(n, 6) ** 2, axis=1)

    # Whole-sample shifts only: interpolating noisy wrenches between samples smooths the
    # noise and so favours half-sample shifts. The minimum is refined by a parabola through
    # the three best neighbouring shifts.
    steps = int(max_lag / dt)
    grid: Array = np.arange(-steps, steps + 1, dtype=float) * dt
    blocks = np.array_split(np.arange(n), min(JACKKNIFE_BLOCKS, n))
    costs: Array = np.array(
        [[c[idx].sum() for idx in blocks] for c in map(per_sample, grid)], dtype=float
    )  # (shifts, blocks)
    values: Array = costs.sum(axis=1)
    # A flat cost (to rounding) does not tell one shift from another: no lag is claimed.
    if values.max() - values.min() <= 1e-9 * max(float(values.max()), 1e-300):
        return (
            0.0,
            math.inf,
            "the fit's cost is the same at every shift tried (the motion tells none apart)",
        )
    lag = _vertex(grid, values, dt)
    j = int(np.argmin(values))
    # A refined lag is kept only where the residual agrees: between unrelated samples (a log
    # of independent states) the cost is no parabola.
    if lag != grid[j] and float(per_sample(lag).sum()) > values[j]:
        lag = float(grid[j])
    B = len(blocks)  # at least 10 (as many as samples inside)
    others = np.array([_vertex(grid, values - costs[:, b], dt) for b in range(B)])
    se = math.sqrt((B - 1) / B * float(np.sum((others - others.mean()) ** 2)))
    return lag, se, ""


def _unreadable(log: PreparedLog, max_lag: float) -> str:
    """Why ``log`` cannot tell a lag within ``+- max_lag`` before any fit, in words for a
    report (empty when it may)."""
    t = log.t
    if t is None:
        return "the log has no time stamps"
    if len(t) < 20:
        return f"{len(t)} samples, fewer than 20"
    dt = float(np.median(np.diff(t)))
    inside = np.count_nonzero((t >= t[0] + max_lag) & (t <= t[-1] - max_lag))
    if dt <= 0:
        return "its time stamps do not increase"
    if inside < 10:
        return (
            f"{inside} samples more than the largest lag tried ({1e3 * max_lag:.0f} ms) "
            "from either end, fewer than 10"
        )
    W = log.W[:, log.contact_order]
    # Wrenches constant over time (a log of one held posture): every shift reads the same
    # values, so the log says nothing about a lag.
    if np.ptp(W, axis=0).max(initial=0.0) <= 1e-9 * max(float(np.abs(W).max(initial=0.0)), 1e-300):
        return "its contact wrenches never change"
    return ""


def _vertex(grid: Array, values: Array, dt: float) -> float:
    """The minimum of ``values`` on ``grid`` (spacing ``dt``), refined by the parabola through
    it and its two neighbours."""
    j = int(np.argmin(values))
    if 0 < j < len(grid) - 1:
        a, b, c = values[j - 1], values[j], values[j + 1]
        curvature = a - 2 * b + c
        if curvature > 0:
            return float(grid[j] + 0.5 * dt * (a - c) / curvature)
    return float(grid[j])


def _basis(N: Array) -> Array:
    """Orthonormal basis of the column space of ``N``."""
    if N.shape[1] == 0:
        return np.zeros((N.shape[0], 0))
    U, s, _ = np.linalg.svd(N, full_matrices=False)
    keep = s > 1e-10 * max(float(s[0]) if len(s) else 0.0, 1e-300)
    return U[:, keep]


def shift_wrenches(log: PreparedLog, lag: float) -> PreparedLog:
    """``log`` with its contact wrenches read ``lag`` later (``w(t + lag)``, interpolated);
    samples whose shifted time falls outside the log are left out."""
    if lag == 0.0 or log.t is None:
        return log
    t = log.t
    ok = (t + lag >= t[0]) & (t + lag <= t[-1])
    W = _interpolate(t, log.W, t[ok] + lag)
    return dataclasses.replace(
        log,
        q=log.q[ok],
        v=log.v[ok],
        a=log.a[ok],
        tau=None if log.tau is None else log.tau[ok],
        W=W,
        E=None if log.E is None else log.E[ok],
        t=t[ok],
        n_bad=log.n_bad + int((~ok).sum()),
    )
