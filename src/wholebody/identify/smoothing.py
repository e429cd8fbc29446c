"""The low-pass that keeps noise out of the regressor: every row of a sample's equation,
regressor and measured wrenches and torques alike, smoothed in time by one zero-phase
Gaussian and decimated.

A log without accelerations gets them by differentiating its velocities, which multiplies
their noise by the sample rate: filtered velocities with 3e-3 rad/s of noise give accelerations
with about 1 rad/s^2 of it. That noise enters the regressor ``Y(q, v, a)``, the side of the
equation least squares takes as exact, and biases the fit (errors in variables: through the
same noisy base acceleration, a link's columns and every other body's share of the measured
wrench move together, and least squares reads that as the link's mass; a Talos torso of 18.4 kg
came out at 48 kg, its CoM 15 cm off). The remedy is the parallel filtering of robot-arm
identification (Gautier and Khalil): each sample's residual ``r_t = F_t x``
(:mod:`~wholebody.identify.features`; zero for the true parameters) is replaced by

.. math::

    \\sum_j h_j r_{t + j} = \\Big(\\sum_j h_j F_{t + j}\\Big) x,
    \\qquad h_j \\propto e^{-(j\\, dt)^2 / (2 \\sigma^2)}, \\quad |j\\, dt| \\le 4 \\sigma

kept at every ``step``-th sample. The same weights multiply every column, the regressor's and
the measurements' (the constant column carries the logged wrenches and torques), so the
smoothed equations hold exactly whenever the samples' equations do: the filter adds no model
error however the motion and the nonlinear regressor behave, and any linear weights would do.
What the Gaussian does is keep the motion (its gain at the motion's bandwidth ``f_m``, read
from the velocities' spectrum, is :data:`KEEP`) and remove the differentiation noise above it:
its gain ``exp(-2 pi^2 sigma^2 f^2) = KEEP^((f / f_m)^2)`` has no ripple, is ``1 / sqrt 2``
at 1.8 ``f_m`` and 1e-3 at 8 ``f_m``. The smoothed equations vary no faster than the motion,
so one sample in :data:`STEP_SIGMAS` ``sigma`` is kept. Samples within ``4 sigma`` of a log's
ends have no full window and are left out. The cost in bandwidth: the fit reads the log through
this low-pass, ``-3 dB`` at ``cutoff = sqrt(ln 2) / (2 pi sigma)`` Hz; what the motion did
faster than that (an impact, a fast swing) informs the fit less, and a log holds about
``2 cutoff T`` independent smoothed samples over its duration ``T``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["Smoothing", "choose_smoothing", "KEEP", "MOTION_SHARE", "STEP_SIGMAS"]

Array = NDArray[np.float64]
#: The velocities' spectrum below the motion's bandwidth holds this share of their power.
MOTION_SHARE = 0.999
#: The filter's gain at the motion's bandwidth.
KEEP = 0.9
#: Samples kept every this many ``sigma``.
STEP_SIGMAS = 2.0
#: The kernel reaches this many ``sigma`` each side.
HALF_WIDTH_SIGMAS = 4.0


@dataclass(frozen=True)
class Smoothing:
    """A zero-phase Gaussian low-pass of standard deviation ``sigma`` [s] in time, at a log's
    ``rate`` [Hz], keeping every ``step``-th sample; ``bandwidth`` [Hz] is the motion's (what
    ``sigma`` was chosen to keep, 0 when given).

    Attributes
    ----------
    sigma : float
        [s]
    rate : float
        Sample rate [Hz] (the median of the log's steps).
    bandwidth : float
        The motion's bandwidth read from the log [Hz].
    """

    sigma: float
    rate: float
    bandwidth: float = 0.0

    @property
    def half(self) -> int:
        """The kernel's half-length [samples]."""
        return max(1, math.ceil(HALF_WIDTH_SIGMAS * self.sigma * self.rate))

    @property
    def step(self) -> int:
        """Samples between two kept ones."""
        return max(1, round(STEP_SIGMAS * self.sigma * self.rate))

    @property
    def cutoff(self) -> float:
        """Frequency [Hz] at which the filter's gain is ``1 / sqrt 2``."""
        return math.sqrt(math.log(2.0)) / (2.0 * math.pi * self.sigma)

    @property
    def kernel(self) -> Array:
        """The weights ``h`` (2 half + 1,), summing to 1."""
        j = np.arange(-self.half, self.half + 1) / (self.sigma * self.rate)
        h = np.exp(-0.5 * j * j)
        return h / h.sum()

    def centres(self, n: int) -> NDArray[np.intp]:
        """The samples kept of a log of ``n`` (their windows inside it)."""
        return np.arange(self.half, n - self.half, self.step, dtype=np.intp)

    def words(self) -> str:
        """What ran, for a report."""
        return (
            f"zero-phase Gaussian low-pass (sigma {1e3 * self.sigma:.3g} ms, -3 dB at "
            f"{self.cutoff:.3g} Hz; motion bandwidth {self.bandwidth:.3g} Hz), one sample in "
            f"{self.step} kept"
        )

    def apply(
        self,
        rows: Callable[[NDArray[np.intp]], tuple[Array, Array]],
        centres: NDArray[np.intp],
        n: int,
        chunk: int,
    ) -> tuple[Array, Array]:
        """The smoothed features at the samples ``centres`` (m,) of a log of ``n``: the
        weighted sums of ``rows(index)``'s first output (features (len(index), ...)), over
        the windows of ``centres``, computed ``chunk`` raw samples at a time (each once);
        its second output (the contact Jacobians) is taken at the centres themselves.
        Returns both, (m, ...) each."""
        h = self.kernel
        half = self.half
        needed = np.unique((centres[:, None] + np.arange(-half, half + 1)).reshape(-1))
        needed = needed[(needed >= 0) & (needed < n)]
        out: Array | None = None
        JT: Array | None = None
        for start in range(0, len(needed), chunk):
            index = needed[start : start + chunk]
            F, J = rows(index)
            if out is None or JT is None:
                out = np.zeros((len(centres),) + F.shape[1:])
                JT = np.empty((len(centres),) + J.shape[1:])
            # The centres whose windows reach this chunk, and their weights on its samples.
            lo = np.searchsorted(centres, index[0] - half, side="left")
            hi = np.searchsorted(centres, index[-1] + half, side="right")
            lag = index[None, :] - centres[lo:hi, None]
            weights = np.where(np.abs(lag) <= half, h[np.clip(lag + half, 0, 2 * half)], 0.0)
            out.reshape(len(centres), -1)[lo:hi] += weights @ F.reshape(len(index), -1)
            own = np.flatnonzero(lag == 0)  # (centre, sample) pairs, row-major
            JT[lo + own // len(index)] = J[own % len(index)]
        assert out is not None and JT is not None
        return out, JT


def choose_smoothing(t: Array, v: Array) -> Smoothing | None:
    """The low-pass for a log with differentiated accelerations, from its velocities ``v``
    (n, nv) at times ``t`` (n,): the motion's bandwidth ``f_m`` is the frequency below which
    :data:`MOTION_SHARE` of the velocities' power lies (Hann-windowed periodogram of each
    column less its mean, summed), and ``sigma`` keeps :data:`KEEP` of the gain there. None
    when the log is too short to hold a window, or its motion reaches half the sample rate
    (independent samples: no smoothing can keep it)."""
    n = len(t)
    if n < 16:
        return None
    rate = 1.0 / float(np.median(np.diff(t)))
    if not (math.isfinite(rate) and rate > 0):
        return None
    x = v - v.mean(axis=0)
    spectrum = np.abs(np.fft.rfft(x * np.hanning(n)[:, None], axis=0)) ** 2
    power = np.cumsum(spectrum.sum(axis=1))
    if power[-1] <= 0:
        return None
    freq = np.fft.rfftfreq(n, 1.0 / rate)
    bandwidth = float(freq[np.searchsorted(power, MOTION_SHARE * power[-1])])
    bandwidth = max(bandwidth, freq[1])
    sigma = math.sqrt(-2.0 * math.log(KEEP)) / (2.0 * math.pi * bandwidth)
    smoothing = Smoothing(sigma, rate, bandwidth)
    if bandwidth >= 0.25 * rate or len(smoothing.centres(n)) < 8:
        return None
    return smoothing
