"""Timing causes: contact forces lagging or leading the kinematics by whole steps and by a
fraction of a step, and the notes a consistent log gets when one such parameter removes its
small residual almost entirely (a simulator's contact forces read one step early or late).

The sub-sample lag is fitted on the force stream itself, by cubic (four-point Lagrange)
interpolation, not by a central difference of the forces (the previous estimator's
linearisation, biased by the signal's curvature), by minimising the weighted squared
residual over the lag. Its standard error is the larger of the Gauss-Newton error
(independent samples) and a delete-a-block jackknife over contiguous blocks of samples
(correlated residuals, slow faults), so the stated interval is not too narrow when the
residual left over is smooth. Against accelerations differentiated from ``v``, the half step
by which an integrator's velocity puts a central difference late is corrected (a
semi-implicit Euler ``v`` logged at its step) or reached by the interval.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..spatial import cross
from .core import WEIGHTS, DiagnosisData, Finding, Hypothesis, finding_of, format_value

__all__ = ["force_lag", "lag_notes", "MAX_LAG_SAMPLES", "NOTE_REDUCTION", "JACKKNIFE_BLOCKS"]

Array = NDArray[np.float64]

#: The integer lag search tries up to this many samples each way (the check keeps the wrench
#: rows within 51 samples of each kept sample; the interpolation needs two more).
MAX_LAG_SAMPLES = 48
#: A one-parameter correction of a log within tolerance is a note when it divides the residual
#: score by at least this factor (99 % of it removed).
NOTE_REDUCTION = 100.0
#: ... or, against accelerations differentiated from ``v`` (whose own error stays), at least
#: this share, with an interval that excludes zero.
NOTE_SHARE_ESTIMATED = 0.5
#: A note's lag search reaches this many samples each way.
NOTE_LAG_SAMPLES = 10
#: Residuals below this share of the weight (median force) are numerical round-off: no note.
NOTE_FLOOR = 1e-9
#: The lag's standard error is at least this share of a step: the error of the four-point
#: interpolation of the force stream at a fraction of a step (and the time stamps' round-off).
INTERPOLATION_FLOOR = 1e-3
#: With fewer samples over tolerance, the integer lag is scored on all samples.
MIN_SCORED = 20
#: Blocks of the delete-a-block jackknife of the lag's standard error.
JACKKNIFE_BLOCKS = 10
#: Confidence level of the stated lag interval (two-sided, normal quantile 1.96).
INTERVAL_LEVEL = 0.95
_Z = 1.959963984540054


def _integer_lag(d: DiagnosisData, limit: int) -> tuple[int, float]:
    """The whole-sample shift of the logged wrenches that scores best (0 when none helps)."""
    N = len(d.log_wrenches)
    rows = d.rows
    # A lag shows on every sample: with only a few over tolerance, score on all of them.
    scored = d.training(d.score_rows)
    if len(scored) < MIN_SCORED:
        scored = d.training(d.all_rows)
    best_lag, best_score = 0, d.score(d.base_residual, scored)
    tried = range(-limit, limit + 1)
    if d.train is not None and "integer_lag" in d.cache:  # refit: near the whole log's lag
        whole = d.cache["integer_lag"]
        tried = range(max(whole - 2, -limit), min(whole + 2, limit) + 1)
    for lag in tried:
        if lag == 0:
            continue
        ok = (rows[scored] + lag >= 0) & (rows[scored] + lag < N)
        if d.log_flagged is not None:  # flagged rows hold zeros, not readings
            ok[ok] &= ~d.log_flagged[rows[scored][ok] + lag]
        inside = scored[ok]
        if len(inside) < max(3, len(scored) // 2):
            continue
        W = d.log_wrenches[np.clip(rows + lag, 0, N - 1)]
        s = d.score(d.residual(W), inside)
        if s < best_score:
            best_lag, best_score = lag, s
    if d.train is None:
        d.cache["integer_lag"] = best_lag
    return best_lag, best_score


class _Stream:
    """The force stream interpolated at the kept samples + a lag: four-point (cubic) Lagrange
    interpolation in the sample index, local so that it needs only the rows the lag search
    keeps around each sample (exact for forces cubic in time over four samples)."""

    def __init__(self, d: DiagnosisData) -> None:
        self.d = d
        self.n = len(d.log_wrenches)
        self.dt = d.dt
        self.ok = self.n >= 4 and self.dt > 0

    def _weights(self, u: Array, deriv: int) -> tuple[NDArray[np.intp], Array]:
        i = np.floor(u).astype(np.intp)
        x = u - i  # in [0, 1)
        nodes = np.array([-1.0, 0.0, 1.0, 2.0])
        w = np.empty((len(u), 4))
        for m in range(4):
            others = [nodes[j] for j in range(4) if j != m]
            denom = float(np.prod([nodes[m] - o for o in others]))
            if deriv == 0:
                w[:, m] = np.prod([x - o for o in others], axis=0) / denom
            else:
                a, b, c = (x - o for o in others)
                w[:, m] = (b * c + a * c + a * b) / denom / self.dt
        return i, w

    def wrenches(self, lag: float, deriv: int = 0) -> Array:
        d = self.d
        u = np.clip(d.rows + lag / self.dt, 1.0, self.n - 2.0 - 1e-9)
        i, w = self._weights(u, deriv)
        out = np.zeros((len(u),) + tuple(d.wrenches.shape[1:]))
        for m, off in enumerate((-1, 0, 1, 2)):
            out += w[:, m, None, None] * d.log_wrenches[i + off]
        return out

    def readable(self, lag: float) -> NDArray[np.bool_]:
        """(S,) bool: the kept samples whose four interpolation rows at ``lag`` are within
        the log and not flagged (a flagged row holds zeros, not a reading)."""
        u = self.d.rows + lag / self.dt
        ok = (u >= 1.0) & (u <= self.n - 2.0)
        flagged = self.d.log_flagged
        if flagged is not None and flagged.any():
            i = np.floor(np.clip(u, 1.0, self.n - 2.0)).astype(np.intp)
            for off in (-1, 0, 1, 2):
                ok &= ~flagged[np.clip(i + off, 0, self.n - 1)]
        return np.asarray(ok, dtype=bool)

    def inside(self, rows: NDArray[np.intp], lag: float) -> NDArray[np.intp]:
        return rows[self.readable(lag)[rows]]


def _weighted(r: Array) -> Array:
    return r * WEIGHTS


def _cost(stream: _Stream, lag: float, rows: NDArray[np.intp]) -> float:
    r = stream.d.residual(stream.wrenches(lag))[rows]
    return float(np.nansum(_weighted(r) ** 2))


def _refine(stream: _Stream, lo: float, hi: float, rows: NDArray[np.intp]) -> float:
    """The lag in [lo, hi] of least weighted squared residual: a grid, then golden section."""
    grid = np.linspace(lo, hi, 21)
    costs = [_cost(stream, g, rows) for g in grid]
    i = int(np.argmin(costs))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    g = (np.sqrt(5.0) - 1.0) / 2.0
    c, e = b - g * (b - a), a + g * (b - a)
    fc, fe = _cost(stream, c, rows), _cost(stream, e, rows)
    for _ in range(40):
        if fc < fe:
            b, e, fe = e, c, fc
            c = b - g * (b - a)
            fc = _cost(stream, c, rows)
        else:
            a, c, fc = c, e, fe
            e = a + g * (b - a)
            fe = _cost(stream, e, rows)
    return 0.5 * (a + b)


def _jacobian(stream: _Stream, lag: float) -> Array:
    """d residual / d lag (S, 6): the rate of the wrenches, moved to the CoM."""
    d = stream.d
    dW = stream.wrenches(lag, 1)
    f = dW[..., :3]
    tau = dW[..., 3:] + cross(d.positions - d.com[:, None], f)
    return np.concatenate([f.sum(axis=1), tau.sum(axis=1)], axis=1)


def _standard_error(stream: _Stream, lag: float, rows: NDArray[np.intp]) -> float:
    """max(Gauss-Newton error, delete-a-block jackknife error) of the fitted lag [s]."""
    d = stream.d
    r = _weighted(d.residual(stream.wrenches(lag)))[rows]
    J = _weighted(_jacobian(stream, lag))[rows]
    ok = np.isfinite(r).all(axis=1) & np.isfinite(J).all(axis=1)
    r, J = r[ok], J[ok]
    n = r.size
    jj = float(np.sum(J * J))
    if n < 2 or jj <= 0:
        return float("nan")
    sigma2 = float(np.sum(r * r)) / max(n - 1, 1)
    se_gn = np.sqrt(sigma2 / jj)
    # Jackknife, linearised: leaving block b out moves the lag by -(sum_-b J r) / (sum_-b J J).
    blocks = np.array_split(np.arange(len(r)), min(JACKKNIFE_BLOCKS, len(r)))
    jr_all, jj_all = float(np.sum(J * r)), jj
    estimates = []
    for idx in blocks:
        jr_b = jr_all - float(np.sum(J[idx] * r[idx]))
        jj_b = jj_all - float(np.sum(J[idx] * J[idx]))
        if jj_b > 0:
            estimates.append(-jr_b / jj_b)
    B = len(estimates)
    se_jk = (
        float(np.sqrt((B - 1) / B * np.sum((np.array(estimates) - np.mean(estimates)) ** 2)))
        if B > 1
        else 0.0
    )
    return float(max(se_gn, se_jk, INTERPOLATION_FLOOR * d.dt))


def _fit(d: DiagnosisData, limit: int) -> tuple[float, float, int] | None:
    """(lag [s], standard error [s], whole samples) or None when no shift helps."""
    best_lag, _ = _integer_lag(d, limit)
    if not best_lag:
        return None
    dt = d.dt
    stream = _Stream(d)
    if not stream.ok:
        return best_lag * dt, float("nan"), best_lag
    lo, hi = (best_lag - 1) * dt, (best_lag + 1) * dt
    # The fraction is fitted on every sample: a lag leaves its trace below tolerance too.
    rows = stream.inside(stream.inside(d.training(d.all_rows), lo), hi)
    if len(rows) < 3:
        return best_lag * dt, float("nan"), best_lag
    lag = _refine(stream, lo, hi, rows)
    return lag, _standard_error(stream, lag, rows), best_lag


def semi_implicit_euler(q: Array, v: Array, *, rtol: float = 1e-6) -> bool:
    """Whether ``v`` comes from a semi-implicit (symplectic) Euler integrator logged at its
    step: ``q[n+1] - q[n] = h v[n+1]`` to round-off, for the joint columns (a free-flyer's
    ``q[:, 7:]`` against ``v[:, 6:]``; (N, nq) and (N, nv), one-dof joints only).

    Then ``v[n+1] - v[n] = h a[n]``, and a central difference of ``v`` is the acceleration
    half a step before the sample: a lag fitted against it is half a step short.
    """
    if q.shape[1] - 7 != v.shape[1] - 6 or q.shape[1] <= 7 or len(q) < 4:
        return False
    dq = np.diff(q[:, 7:], axis=0)
    ok = np.isfinite(dq).all(axis=1) & np.isfinite(v[1:, 6:]).all(axis=1)
    ok &= np.isfinite(v[:-1, 6:]).all(axis=1)
    if ok.sum() < 3:
        return False
    dq, after, before = dq[ok], v[1:, 6:][ok], v[:-1, 6:][ok]
    # The step h from the data itself (the log's time may be rounded): the least-squares
    # ratio of dq to the later velocity.
    h = float(np.sum(dq * after) / max(float(np.sum(after * after)), 1e-300))
    if h <= 0:
        return False
    e_after = float(np.median(np.abs(dq - h * after)))
    e_before = float(np.median(np.abs(dq - h * before)))
    scale = float(np.median(np.abs(dq)))
    return bool(scale > 0 and e_after <= rtol * scale and e_before > 100 * e_after)


def _finding(d: DiagnosisData, fitted: float, se: float, whole: int, note: bool) -> Finding:
    dt = d.dt
    stream = _Stream(d)
    n = len(d.log_wrenches)
    if stream.ok:
        W = stream.wrenches(fitted)
        # Forces shifted in from beyond the log's span or from flagged rows: no data
        # there, so no evidence for or against the lag.
        excluded = ~stream.readable(fitted)
    else:
        W = d.log_wrenches[np.clip(d.rows + whole, 0, n - 1)]
        at = d.rows + whole
        excluded = (at < 0) | (at > n - 1)
        if d.log_flagged is not None:
            excluded |= d.log_flagged[np.clip(at, 0, n - 1)]
    # Against accelerations differentiated from v: a semi-implicit Euler integrator's v makes
    # the central difference half a step late (the fit is then half a step short: corrected);
    # an integrator sub-stepping between samples makes it late by up to half a log step (the
    # interval reaches that far up); a measured v makes it unbiased.
    lag, reach, basis = fitted, 0.0, ""
    if d.accelerations_estimated:
        if d.euler_velocities:
            lag = fitted + 0.5 * dt
            basis = (
                "; v is a semi-implicit Euler integrator's at the log's step, so the "
                "accelerations differentiated from it are half a step late: corrected"
            )
        else:
            reach = 0.5 * dt
            basis = (
                "; against accelerations differentiated from v (an integrator's v between "
                "samples can put them up to half a step late: the interval reaches that far up)"
            )
    width = _Z * se if np.isfinite(se) else 0.0
    interval = [lag - width, lag + width + reach]
    word = "lag" if lag > 0 else "lead"
    message = (
        f"the contact forces {word} the kinematics by "
        f"{format_value(abs(lag), se, 'ms', 1e3, 2)} ({lag / dt:+.2f} samples of "
        f"{1e3 * dt:.3g} ms; {100 * INTERVAL_LEVEL:.0f} % interval "
        f"{1e3 * interval[0]:.2f} .. {1e3 * interval[1]:.2f} ms{basis})"
    )
    if abs(abs(lag / dt) - 1.0) < 0.05:
        message += (
            ": read one step before the state (e.g. a simulator's contact results read "
            "before its step)"
            if lag > 0
            else ": read one step after the state (e.g. contact results read after the "
            "simulator's step, the state before it)"
        )
    hypothesis = d.hypothesis(W)
    return finding_of(
        d,
        "time_offset",
        Hypothesis(hypothesis.residual, hypothesis.wrenches, excluded),
        message,
        n_parameters=1,
        uncertainty={"lag_seconds": se},
        lag_samples=whole,
        lag_seconds=lag,
        interval_seconds=interval,
        interval_level=INTERVAL_LEVEL,
        note=note,
    )


def force_lag(d: DiagnosisData) -> list[Finding]:
    """Forces shifted in time against the kinematics: the whole-sample shift, then the
    fraction fitted on the interpolated force stream (positive: the forces lag)."""
    N = len(d.log_wrenches)
    fitted = _fit(d, min(MAX_LAG_SAMPLES, N // 4))
    if fitted is None:
        return []
    return [_finding(d, *fitted, note=False)]


def lag_notes(d: DiagnosisData) -> list[Finding]:
    """Notes for a log within tolerance: a lag of up to :data:`NOTE_LAG_SAMPLES` samples that
    removes at least ``1 - 1 / NOTE_REDUCTION`` of its residual (the residual is then not noise
    but timing), or :data:`NOTE_SHARE_ESTIMATED` of it with an interval that excludes zero
    when the accelerations were differentiated.

    ``d`` is built over the whole log (no sample over tolerance); returns at most one
    ``time_offset`` finding with ``parameters["note"] = True``.
    """
    if len(d.time) < 8 or d.base_score <= 0:
        return []
    f = np.linalg.norm(d.base_residual[:, :3], axis=1)
    if not np.isfinite(d.base_score) or float(np.nanmedian(f)) < NOTE_FLOOR * d.weight:
        return []
    fitted = _fit(d, min(NOTE_LAG_SAMPLES, len(d.log_wrenches) // 4))
    if fitted is None:
        return []
    finding = _finding(d, *fitted, note=True)
    lo, hi = finding.parameters["interval_seconds"]
    # Against differentiated accelerations the differentiation's own error stays: the lag
    # must remove most of the residual and its interval exclude zero.
    needed = NOTE_SHARE_ESTIMATED if d.accelerations_estimated else 1.0 - 1.0 / NOTE_REDUCTION
    if finding.explained < needed or lo <= 0.0 <= hi:
        return []
    return [finding]
