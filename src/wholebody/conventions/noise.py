"""Noise measured from a log itself: per column, a white part and a part correlated in time.

A logged signal is motion plus noise. Fourth differences at lag ``k`` samples,

.. math::

    \\Delta^4_k x_i = x_{i+4k} - 4 x_{i+3k} + 6 x_{i+2k} - 4 x_{i+k} + x_i ,

remove any motion of degree three; what is left of a smooth motion grows as ``k^8`` in
variance, while noise does not grow beyond its correlation time. For noise made of a white
part (std ``s_w``) and a first-order correlated part (std ``s_c``, autocorrelation
``exp(-|L| / tau)`` over ``L`` samples: an AR(1), a first-order filter),

.. math::

    E[(\\Delta^4_k x)^2] = 70 s_w^2 + s_c^2 (70 - 112 r_k + 56 r_{2k} - 16 r_{3k} + 2 r_{4k})
                          + A k^8, \\qquad r_L = e^{-L / \\tau} .

The mean squares at lags :data:`LAGS` (values beyond :data:`TRIM` robust deviations left out:
an impact is not noise) are fitted by non-negative least squares (relative errors) for each
``tau`` of a grid; the best fit gives ``s_w``, ``s_c`` and ``tau``. Lags beyond the first one
where the motion dominates are then left out and the fit is repeated. Noise correlated over
much longer than the largest lag grows like motion: it is motion as far as the log can tell.

:func:`measure_noise` returns a :class:`Noise` (per column), which also gives the noise's
spectral density (:meth:`Noise.psd`), the std of a filtered noise (:meth:`Noise.filtered_std`)
and of its means over windows.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Noise",
    "measure_noise",
    "Stamps",
    "measure_stamps",
    "sigmas",
    "level_sigmas",
    "LAGS",
    "TRIM",
    "GAP_STEPS",
    "segments_between_gaps",
    "FALSE_ALARM",
    "MIN_SIGMAS",
]

Array = NDArray[np.float64]

#: Lags [samples] of the fourth differences the noise is measured from.
LAGS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)

#: Fourth differences beyond this many robust standard deviations are left out.
TRIM = 8.0

#: Correlation times [samples] tried (0: white only).
_TAUS = np.r_[0.0, np.geomspace(0.5, float(LAGS[-1]), 22)]

#: A lag is dominated by motion when its motion term exceeds this many times the noise's.
_MOTION_DOMINATES = 4.0

_MIN_VALUES = 32  # fourth differences a lag needs

#: Family-wise probability that the noise alone puts some sample or window of a clean log
#: beyond a noise-derived bound.
FALSE_ALARM = 1e-3

#: The least number of standard deviations of a noise-derived bound.
MIN_SIGMAS = 4.0


def level_sigmas(n: float, rate: float, p: float = FALSE_ALARM) -> float:
    """Standard deviations of a bound that a stationary Gaussian noise crosses (either way)
    somewhere in ``n`` consecutive samples with probability ``p``: Rice's formula for the
    expected number of crossings, ``n rate / pi exp(-k^2 / 2) = p``, ``rate`` the noise's
    ``sqrt(2 (1 - rho_1))`` (``rho_1`` its correlation at one sample:
    :meth:`Noise.filtered_correlation`); at least :data:`MIN_SIGMAS` with the default ``p``
    and at least the single sample's two-sided quantile at ``p``."""
    from scipy.special import ndtri

    single = float(-ndtri(p / 2))
    crossings = max(float(n), 1.0) * max(float(rate), 0.0) / math.pi / p
    k = math.sqrt(2.0 * math.log(crossings)) if crossings > 1.0 else 0.0
    return max(k, single, MIN_SIGMAS if p >= FALSE_ALARM else 0.0)


def sigmas(independent: float) -> float:
    """Standard deviations of a bound that holds over ``independent`` independent samples
    or windows of Gaussian noise: the two-sided quantile at ``FALSE_ALARM / independent``,
    at least :data:`MIN_SIGMAS` (4.0 up to 16 independent values, 4.9 at 1,000, 5.3 at
    10,000)."""
    from scipy.special import ndtri

    p = FALSE_ALARM / max(float(independent), 1.0)
    return max(MIN_SIGMAS, float(-ndtri(p / 2)))


@dataclass(frozen=True)
class Noise:
    """Measured noise of the columns of a signal (:func:`measure_noise`).

    Attributes
    ----------
    white : ndarray, shape (m,)
        Std of the white part, in the signal's unit.
    correlated : ndarray, shape (m,)
        Std of the part correlated in time (first order), in the signal's unit.
    correlation : ndarray, shape (m,)
        Its correlation time [samples] (0 where there is none).
    dt : float
        The sampling step [s] the spectral densities are stated for.
    """

    white: Array
    correlated: Array
    correlation: Array
    dt: float
    smooth: NDArray[np.bool_] | None = None

    @classmethod
    def zero(cls, m: int, dt: float = 1.0) -> Noise:
        """No noise on ``m`` columns."""
        z = np.zeros(m)
        return cls(z, z.copy(), z.copy(), dt, np.zeros(m, dtype=bool))

    @property
    def std(self) -> Array:
        """(m,) std of one sample's noise: the white and the correlated parts together."""
        return np.asarray(np.hypot(self.white, self.correlated))

    @property
    def correlation_seconds(self) -> Array:
        """(m,) the correlation time [s]."""
        return np.asarray(self.correlation * self.dt)

    def autocovariance(self, lags: Array) -> Array:
        """(len(lags), m) the noise's autocovariance at integer ``lags`` [samples]."""
        L = np.abs(np.asarray(lags, dtype=float))[:, None]
        smooth = np.zeros(len(self.white)) if self.smooth is None else self.smooth
        with np.errstate(divide="ignore", invalid="ignore"):
            x = L / self.correlation
            r = np.where(self.correlation > 0, (1.0 + smooth * x) * np.exp(-x), 0.0)
        return np.asarray(self.white**2 * (L == 0) + self.correlated**2 * r)

    def psd(self, f: Array) -> Array:
        """(len(f), m) one-sided power spectral density [unit^2 / Hz] at ``f`` [Hz] of the
        sampled noise: ``2 dt sum_L c(L) cos(2 pi f L dt)``."""
        span = int(np.ceil(30 * max(float(np.max(self.correlation, initial=0.0)), 1.0)))
        L = np.arange(-span, span + 1, dtype=float)
        c = self.autocovariance(L)  # (lags, m)
        w = 2 * np.pi * np.asarray(f, dtype=float)[:, None] * self.dt
        return np.asarray(2 * self.dt * (np.cos(w * L[None, :]) @ c))

    def filtered_std(self, kernel: Array, means: int = 1) -> Array:
        """(m,) std of the noise filtered by ``kernel`` (an FIR, applied by convolution), then
        averaged over ``means`` consecutive samples."""
        h = np.asarray(kernel, dtype=float)
        if means > 1:
            h = np.convolve(h, np.full(means, 1.0 / means))
        r = np.correlate(h, h, mode="full")  # (2 len - 1,) at lags -(len-1) .. len-1
        lags = np.arange(-(len(h) - 1), len(h), dtype=float)
        var = r @ self.autocovariance(lags)  # sum_ij h_i h_j c(i - j)
        return np.asarray(np.sqrt(np.maximum(var, 0.0)))

    def filtered_correlation(self, kernel: Array, means: int = 1) -> Array:
        """(m,) the correlation at one sample of the noise filtered by ``kernel`` and averaged
        over ``means`` samples (:meth:`filtered_std`), 1 where there is no noise."""
        h = np.asarray(kernel, dtype=float)
        if means > 1:
            h = np.convolve(h, np.full(means, 1.0 / means))
        r = np.correlate(h, h, mode="full")
        lags = np.arange(-(len(h) - 1), len(h), dtype=float)
        var = r @ self.autocovariance(lags)
        one = r @ self.autocovariance(lags + 1.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(np.where(var > 0, one / var, 1.0))

    def as_dict(self, names: list[str] | None = None) -> dict[str, object]:
        """JSON-ready figures (per column when ``names`` is given, else their largest)."""
        if names is None:
            return {
                "white": float(np.max(self.white, initial=0.0)),
                "correlated": float(np.max(self.correlated, initial=0.0)),
                "correlation_s": float(np.max(self.correlation_seconds, initial=0.0)),
            }
        return {
            n: {
                "white": float(w),
                "correlated": float(c),
                "correlation_s": float(tau * self.dt),
            }
            for n, w, c, tau in zip(names, self.white, self.correlated, self.correlation)
        }


def _fourth_difference_power(x: Array, k: int) -> Array:
    """(m,) mean square of the fourth differences at lag ``k`` of each column, the values
    beyond :data:`TRIM` robust deviations (and NaN) left out."""
    d = x[4 * k :] - 4 * x[3 * k : -k] + 6 * x[2 * k : -2 * k] - 4 * x[k : -3 * k] + x[: -4 * k]
    a = np.abs(d)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column measures nothing
        scale = 1.4826 * np.nanmedian(a, axis=0)
        keep = np.isfinite(a) & ((a <= TRIM * scale) | (scale == 0))
        return np.asarray(np.where(keep, d * d, 0.0).sum(axis=0) / np.maximum(keep.sum(axis=0), 1))


def _basis(k: Array, tau: float, smooth: bool) -> Array:
    """(len(k), 3) the model's columns at lags ``k``: white, correlated, motion."""
    if tau > 0:
        r = [(1.0 + smooth * j * k / tau) * np.exp(-j * k / tau) for j in (1, 2, 3, 4)]
        corr = 70 - 112 * r[0] + 56 * r[1] - 16 * r[2] + 2 * r[3]
    else:
        corr = np.zeros_like(k)
    return np.c_[np.full_like(k, 70.0), corr, k**8]


def _fit(k: Array, S: Array) -> tuple[tuple[float, bool], Array, float]:
    """The best ((tau, smooth), coefficients, residual) over the grid of correlation times
    and the two shapes."""
    from scipy.optimize import nnls

    w = 1.0 / S
    best: tuple[tuple[float, bool], Array, float] | None = None
    for tau in _TAUS:
        for smooth in (False, True) if tau > 0 else (False,):
            A = _basis(k, float(tau), smooth)
            coef, res = nnls(A * w[:, None], S * w)
            if best is None or res < best[2] * (1 - 1e-6):
                best = ((float(tau), smooth), coef, float(res))
    assert best is not None
    return best


def measure_noise(x: Array, dt: float = 1.0) -> Noise:
    """The noise of each column of ``x`` (module docstring): white and correlated parts.

    Parameters
    ----------
    x : ndarray, shape (N,) or (N, m)
        Uniformly sampled signal (NaN where unknown), any unit.
    dt : float
        Its sampling step [s] (for the spectral densities and correlation times in seconds).

    Returns
    -------
    Noise
        Per column: ``white``, ``correlated`` (stds, in ``x``'s unit), ``correlation``
        [samples]. Columns with too few samples (fewer than ``4 + 32``) measure no noise.
    """
    X = np.asarray(x, dtype=np.float64)
    X = X[:, None] if X.ndim == 1 else X
    N, m = X.shape
    lags = [k for k in LAGS if N - 4 * k >= _MIN_VALUES]
    out = Noise.zero(m, float(dt))
    if not lags:
        return out
    S = np.stack([_fourth_difference_power(X, k) for k in lags])  # (lags, m)
    k = np.asarray(lags, dtype=float)
    for j in range(m):
        s = S[:, j]
        if not np.all(np.isfinite(s)) or s.max() <= 0:
            continue
        s = np.maximum(s, s.max() * 1e-30)
        (tau, smooth), coef, _ = _fit(k, s)
        basis = _basis(k, tau, smooth)
        noise = basis[:, :2] @ coef[:2]
        motion = basis[:, 2] * coef[2]
        ruled = np.flatnonzero(motion > _MOTION_DOMINATES * noise)
        if len(ruled) and 2 <= ruled[0] < len(k) - 1:  # leave out the lags motion rules
            n = int(ruled[0]) + 1
            (tau, smooth), coef, _ = _fit(k[:n], s[:n])
        out.white[j] = math.sqrt(coef[0])
        out.correlated[j] = math.sqrt(coef[1]) if tau > 0 else 0.0
        out.correlation[j] = tau if out.correlated[j] > 0 else 0.0
        assert out.smooth is not None
        out.smooth[j] = smooth and out.correlated[j] > 0
    return out


@dataclass(frozen=True)
class Stamps:
    """What a log's time stamps show (:func:`measure_stamps`).

    Attributes
    ----------
    step : float
        Median step between consecutive stamps [s].
    jitter : float
        Std of each stamp's own noise about a regular clock [s] (robust, from the stamps'
        second differences: ``var = 6 jitter^2``).
    gaps : list of (int, float, float)
        Per gap (a step beyond :data:`GAP_STEPS` median steps and the jitter): the sample after
        it, its time [s] and its length [s].
    duplicated : list of int
        Samples whose stamp equals the previous one.
    backwards : list of int
        Samples whose stamp is before the previous finite one.
    not_finite : list of int
        Samples whose stamp is NaN or infinite.
    """

    step: float
    jitter: float
    gaps: list[tuple[int, float, float]]
    duplicated: list[int]
    backwards: list[int]
    not_finite: list[int]

    @property
    def gap(self) -> float:
        """A step longer than this [s] is a gap (:data:`GAP_STEPS` steps and six jitters)."""
        return GAP_STEPS * self.step + 6.0 * self.jitter if np.isfinite(self.step) else math.inf

    @property
    def jitters(self) -> bool:
        """Whether the stamps jitter (by more than a thousandth of the step)."""
        return bool(self.jitter > 1e-3 * self.step)

    @property
    def bad(self) -> list[int]:
        """Samples whose stamp cannot be used: not finite, duplicated or going backwards."""
        return sorted(set(self.duplicated) | set(self.backwards) | set(self.not_finite))

    def describe(self) -> str:
        """The stamps in words ("step 2 ms, stamps jitter by 0.25 ms; ...")."""
        parts = [f"step {_ms(self.step)}"]
        if self.jitters:
            parts.append(
                f"stamps jitter by {_ms(self.jitter)} ({100 * self.jitter / self.step:.3g} % "
                "of the step)"
            )
        if self.gaps:
            longest = max(self.gaps, key=lambda g: g[2])
            parts.append(
                f"{len(self.gaps)} gap{'s' if len(self.gaps) > 1 else ''} (longest "
                f"{_ms(longest[2])} before sample {longest[0]}, t = {longest[1]:.4g} s)"
            )
        for label, rows in (
            ("duplicated", self.duplicated),
            ("going backwards", self.backwards),
            ("not finite", self.not_finite),
        ):
            if rows:
                shown = ", ".join(str(i) for i in rows[:5]) + (" ..." if len(rows) > 5 else "")
                parts.append(
                    f"{len(rows)} stamp{'s' if len(rows) > 1 else ''} {label} "
                    f"(sample{'s' if len(rows) > 1 else ''} {shown})"
                )
        return "; ".join(parts)

    def as_dict(self) -> dict[str, object]:
        return {
            "step_s": self.step,
            "jitter_s": self.jitter,
            "gaps": [{"sample": i, "time": t, "length_s": g} for i, t, g in self.gaps[:50]],
            "n_gaps": len(self.gaps),
            "duplicated": self.duplicated[:50],
            "backwards": self.backwards[:50],
            "not_finite": self.not_finite[:50],
        }


#: A step longer than this many median steps (and the jitter) is a gap: samples dropped.
GAP_STEPS = 1.5


def _ms(seconds: float) -> str:
    return f"{1e3 * seconds:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def measure_stamps(time: Array) -> Stamps:
    """The step, jitter, gaps and bad stamps of a log's time stamps (:class:`Stamps`).

    The jitter is the robust std of the stamps' second differences over ``sqrt(6)``, over
    steps that are neither gaps nor bad stamps: a clock sampling regularly and stamping with
    independent errors of std ``s`` gives ``s``; a regular clock gives 0.
    """
    t = np.asarray(time, dtype=np.float64)
    n = len(t)
    finite = np.isfinite(t)
    not_finite = np.flatnonzero(~finite).tolist()
    # Going backwards or repeating: against the running maximum of the finite stamps before.
    tf = np.where(finite, t, -np.inf)
    before = np.r_[-np.inf, np.maximum.accumulate(tf)[:-1]] if n else tf
    backwards = np.flatnonzero(finite & (t < before)).tolist()
    duplicated = np.flatnonzero(finite & (t == before)).tolist()
    good = finite.copy()
    good[backwards + duplicated] = False
    tg, ig = t[good], np.flatnonzero(good)
    steps = np.diff(tg)
    if not len(steps):
        return Stamps(float("nan"), 0.0, [], duplicated, backwards, not_finite)
    adjacent = np.diff(ig) == 1
    step = float(np.median(steps[adjacent])) if adjacent.any() else float(np.median(steps))
    d2 = np.diff(steps)[adjacent[1:] & adjacent[:-1]]
    jitter = float(1.4826 * np.median(np.abs(d2)) / math.sqrt(6.0)) if len(d2) else 0.0
    # A step over skipped (bad) stamps spans that many steps.
    long = np.flatnonzero(steps > np.diff(ig) * GAP_STEPS * step + 6.0 * jitter)
    gaps = [(int(ig[i + 1]), float(tg[i + 1]), float(steps[i])) for i in long]
    return Stamps(step, jitter, gaps, duplicated, backwards, not_finite)


def segments_between_gaps(t: Array, gap: float) -> list[tuple[int, int]]:
    """``[lo, hi)`` runs of samples between the gaps (steps beyond ``gap`` seconds) and the
    stamps that are not finite (each alone)."""
    steps = np.diff(t)
    with np.errstate(invalid="ignore"):
        cuts = np.flatnonzero((steps > gap) | ~np.isfinite(steps)) + 1
    edges = np.r_[0, cuts, len(t)]
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]
