"""Standard errors that hold for time-correlated residuals: the sandwich covariance with its
middle ("meat") estimated from prewhitened batch means over time.

Samples of a log at 1 kHz are strongly correlated (filtered sensors, model errors that persist
over a motion): a covariance that treats them as independent is far too narrow. The scores
``s_t`` (the per-sample gradients of the cost) are first prewhitened (Andrews, Monahan 1992):
each component's lag-1 autoregression ``rho_k`` (pooled over the logs, within +-0.97) is
removed, ``u_t = s_t - rho s_{t-1}``, which leaves a series with a short correlation time.
``u`` is summed over contiguous batches of ``b`` samples, long against its integrated
autocorrelation time ``tau`` (estimated from the data, Sokal's automatic window), and the
meat is the covariance of the batch sums, recoloured: ``sum_t u_t = (1 - rho) sum_t s_t`` up to
the ends, so the long-run covariance of ``s`` is that of ``u`` divided by
``(1 - rho_j)(1 - rho_k)`` whatever ``rho`` was chosen (the choice decides only how short the
batches can be, so how many there are: with AR(1) noise of coefficient 0.9 on 1.5 s at 1 kHz,
some 70 batches per log instead of 2 or 3). Intervals then use a Student t with (number of
batches - 1) degrees of freedom.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = ["batch_means_meat", "integrated_autocorrelation_time", "BATCH_FACTOR", "PREWHITEN"]

Array = NDArray[np.float64]
#: Batch length in integrated autocorrelation times.
BATCH_FACTOR = 10.0
#: Fewest batches aimed at (shorter batches are taken when the logs are short).
MIN_BATCHES = 8
#: Prewhiten the scores by their lag-1 autoregression before the batch means.
PREWHITEN = True
#: Largest lag-1 coefficient removed (Andrews, Monahan 1992 cap theirs at 0.97): the
#: recolouring divides by ``(1 - rho)^2``.
MAX_RHO = 0.97


def lag_one_coefficients(scores: list[Array]) -> Array:
    """Each column's lag-1 autoregression coefficient (p,), pooled over the series (least
    squares of ``s_t`` on ``s_{t-1}`` within each series), within ``+-`` :data:`MAX_RHO`."""
    p = scores[0].shape[1] if scores else 0
    num, den = np.zeros(p), np.zeros(p)
    for s in scores:
        if len(s) >= 2:
            num += np.einsum("ij,ij->j", s[1:], s[:-1])
            den += np.einsum("ij,ij->j", s[:-1], s[:-1])
    rho = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
    return np.clip(rho, -MAX_RHO, MAX_RHO)


def integrated_autocorrelation_time(z: Array) -> Array:
    """Integrated autocorrelation time ``1 + 2 sum rho(l)`` of each column of ``z`` (n, k),
    with Sokal's automatic window (the smallest ``M >= 5 tau(M)``); 1 for white noise."""
    n = len(z)
    if n < 4:
        return np.ones(z.shape[1])
    zc = z - z.mean(axis=0)
    size = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(zc, size, axis=0)
    acov = np.fft.irfft(f * np.conj(f), size, axis=0)[:n]
    var = acov[0]
    ok = var > 1e-300 * max(float(var.max(initial=0.0)), 1e-300)
    rho = np.zeros_like(acov)
    rho[:, ok] = acov[:, ok] / var[ok]
    tau_cum = 1 + 2 * np.cumsum(rho[1:], axis=0)  # tau(M) for M = 1..n-1
    M = np.arange(1, n)
    out = np.ones(z.shape[1])
    for k in np.flatnonzero(ok):
        stop = np.flatnonzero(M >= 5 * tau_cum[:, k])
        m = int(stop[0]) if len(stop) else len(M) - 1
        out[k] = max(float(tau_cum[m, k]), 1.0)
    return out


def batch_means_meat(scores: list[Array], H_inv: Array) -> tuple[Array, int, int, Array]:
    """The sandwich's meat (p, p) from batch sums of the prewhitened per-sample scores.

    Batch sums are centred within each log (at the fitted parameters a parameter of one log
    only, a sensor offset of that log, has its scores sum to about zero over that log, so its
    batches there have one degree of freedom fewer; a shared parameter's per-log means are
    sampling noise too) and each log's part scaled by ``b_l / (b_l - 1)``. A parameter's
    degrees of freedom are the sum of ``b_l - 1`` over the logs its scores live in, combined
    (``1 / dof = 1 / dof_batches + 1 / dof_noise``, relative variances adding) with half the
    independent samples those logs hold for its score, ``sum n_l / (2 tau_k)``,
    ``tau_k = (1 + rho_k) / (1 - rho_k)``: the lag-1 coefficient ``rho_k`` its score was
    prewhitened by is itself estimated, and the recolouring ``1 / (1 - rho_k)^2`` with it
    (an AR(1) coefficient's error, ``sqrt((1 - rho^2) / n)``, relative to ``1 - rho``); the
    correlation the residuals were whitened by in the fit only weighs the samples, which the
    sandwich allows for whatever the weights.

    Parameters
    ----------
    scores : list of ndarray, shape (n_l, p)
        Per-sample scores of each log, in time order (batches never span two logs).
    H_inv : ndarray, shape (p, p)
        Inverse information: the autocorrelation time is that of the influence
        ``H_inv s_t`` of each parameter (the largest).

    Returns
    -------
    meat : ndarray, shape (p, p)
    n_batches : int
    batch_length : int
        Samples per batch.
    dof : ndarray, shape (p,)
        Degrees of freedom of each parameter's variance.
    """
    p = H_inv.shape[0]
    total = sum(len(s) for s in scores)
    if total == 0:
        return np.zeros((p, p)), 0, 1, np.ones(p)
    rho = lag_one_coefficients(scores) if PREWHITEN else np.zeros(p)
    # Each score's prewhitening coefficient, estimated: its uncertainty (none without).
    tau_rho = (1.0 + rho) / (1.0 - rho) if PREWHITEN else np.full(p, np.inf)
    scores = [np.vstack([s[:1], s[1:] - rho * s[:-1]]) if len(s) else s for s in scores]
    tau = 1.0
    for s in scores:
        if len(s) >= 8:
            influence = s @ H_inv
            var = influence.var(axis=0)
            cols = var > 1e-12 * max(float(var.max(initial=0.0)), 1e-300)
            if cols.any():
                tau = max(tau, float(integrated_autocorrelation_time(influence[:, cols]).max()))
    batch = max(1, math.ceil(BATCH_FACTOR * tau))
    batch = min(batch, max(1, total // MIN_BATCHES))
    sums, lengths = [], []
    for s in scores:
        n = len(s)
        if n == 0:
            continue
        k = max(1, n // batch)
        bounds = np.linspace(0, n, k + 1).astype(int)
        csum = np.vstack([np.zeros((1, p)), np.cumsum(s, axis=0)])
        sums.append(csum[bounds[1:]] - csum[bounds[:-1]])
        lengths.append(np.diff(bounds).astype(float))
    S = np.vstack(sums)
    ln = np.concatenate(lengths)
    B = len(S)
    rate = S.sum(axis=0) / ln.sum()
    meat = np.zeros((p, p))
    dof = np.zeros(p)
    independent = np.zeros(p)
    for S_l, ln_l in zip(sums, lengths, strict=True):
        b = len(S_l)
        active = np.abs(S_l).max(axis=0) > 0
        independent += active * (ln_l.sum() / (2.0 * np.maximum(tau_rho, 1.0)))
        if b >= 2:
            centred = S_l - ln_l[:, None] * (S_l.sum(axis=0) / ln_l.sum())
            meat += centred.T @ centred * (b / (b - 1))
            dof += active * (b - 1)
        else:  # one batch: no spread within the log; centred by the overall rate
            centred = S_l - ln_l[:, None] * rate
            meat += centred.T @ centred
    if not dof.any():  # every log one batch: the batches of all logs together
        centred = S - ln[:, None] * rate
        meat = centred.T @ centred * (B / max(B - 1, 1))
        dof[:] = B - 1
    dof[dof == 0] = max(B - 1, 1)
    independent[independent == 0] = np.inf
    dof = 1.0 / (1.0 / dof + 1.0 / independent)
    restore = 1.0 / (1.0 - rho)
    return meat * np.outer(restore, restore), B, batch, dof
