"""Standard errors that hold for time-correlated residuals: the sandwich covariance with its
middle ("meat") estimated from batch means over time.

Samples of a log at 1 kHz are strongly correlated (filtered sensors, model errors that persist
over a motion): a covariance that treats them as independent is far too narrow. The scores
``s_t`` (the per-sample gradients of the cost) are summed over contiguous batches of ``b``
samples, long against the scores' integrated autocorrelation time ``tau`` (estimated from the
data, Sokal's automatic window), and the meat is the covariance of the batch sums. Intervals
then use a Student t with (number of batches - 1) degrees of freedom.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = ["batch_means_meat", "integrated_autocorrelation_time", "BATCH_FACTOR"]

Array = NDArray[np.float64]
#: Batch length in integrated autocorrelation times.
BATCH_FACTOR = 10.0
#: Fewest batches aimed at (shorter batches are taken when the logs are short).
MIN_BATCHES = 8


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


def batch_means_meat(scores: list[Array], H_inv: Array) -> tuple[Array, int, int]:
    """The sandwich's meat (p, p) from batch sums of the per-sample scores.

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
    """
    p = H_inv.shape[0]
    total = sum(len(s) for s in scores)
    if total == 0:
        return np.zeros((p, p)), 0, 1
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
        lengths.append(np.diff(bounds))
    S = np.vstack(sums)
    ln = np.concatenate(lengths).astype(float)
    centred = S - ln[:, None] * (S.sum(axis=0) / ln.sum())
    B = len(S)
    meat = centred.T @ centred * (B / max(B - 1, 1))
    return meat, B, batch
