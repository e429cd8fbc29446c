"""The noise of a log, measured from the log itself, and the measured preset's filter and
bounds.

**Per signal** (:func:`signal_noise`): ``q`` (base position [m], base orientation [rad],
joints [rad]), ``v`` (base linear [m/s], base angular [rad/s], joints [rad/s]), the contact
wrenches (force [N], moment [N m]), ``tau`` [N m] and the time stamps, each with its white
part, its correlated part and that part's correlation time
(:func:`wholebody.conventions.noise.measure_noise`; stamps:
:func:`wholebody.conventions.noise.measure_stamps`). Reported in the evidence of every check.

**The measured preset's filter** (:func:`choose_cutoff`, :func:`gaussian_kernel`): a
zero-phase Gaussian low-pass (a symmetric FIR, no overshoot) on the residual, whose cutoff
is where the
spectra of the base's velocity and of the total contact force (the motion's bandwidth in
the balance) meet their measured noise: for each, the highest frequency at which a
component's spectral density is :data:`SIGNAL_TO_NOISE` times its noise's; the lower of the
two, within [:data:`MIN_CUTOFF`, the Nyquist frequency over :data:`MAX_CUTOFF_SHARE`]. The
filter is linear: on the residual it is the same filter on every signal of the balance (each
wrench, the momentum rate, whose filtered accelerations are the derivative of the filtered
``v``), so the filtered balance holds where the log's holds; it costs bandwidth (events
shorter than about ``1 / (2 cutoff)`` are spread over that time), not consistency.

**The residual's noise** (:class:`ResidualNoise`): with logged accelerations, measured on
the residual itself (it holds no motion); with differentiated accelerations, on the
centroidal momentum ``h = A_G v`` (differentiated by central differences) and on the total
external wrench at the CoM. Each is measured (white and correlated parts, per component)
and carried through the filter, and through the means over ``M`` samples of the
systematic-error test, exactly (the noise's autocovariance against the kernel's). A
profile's ``[sensors]`` noise (``force_noise``, ``moment_noise``) is a floor on the wrench
part, at every averaging scale (its correlation is unknown: it is not assumed to average
out). The tolerance at scale ``M`` is
:func:`~wholebody.conventions.noise.level_sigmas` standard deviations: the level that the
filtered (and averaged) noise crosses anywhere in the log with probability
:data:`~wholebody.conventions.noise.FALSE_ALARM` (Rice's formula, from the noise's
correlation at one sample; coverage tested over seeds in ``tests/test_noise.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..conventions.noise import Noise, Stamps, level_sigmas, measure_noise
from ..identify.smoothing import Smoothing
from ..robot.core import Robot
from ..trajectory import Trajectory

__all__ = [
    "SignalNoise",
    "signal_noise",
    "ResidualNoise",
    "residual_noise",
    "choose_cutoff",
    "gaussian_kernel",
    "MIN_CUTOFF",
    "MAX_CUTOFF_SHARE",
    "SIGNAL_TO_NOISE",
    "NOISE_SAMPLES",
]

Array = NDArray[np.float64]

#: The lowest cutoff of the measured preset's filter [Hz].
MIN_CUTOFF = 1.0

#: The cutoff is at most the Nyquist frequency over this.
MAX_CUTOFF_SHARE = 5.0

#: The motion's bandwidth ends where the force's spectral density falls below this many
#: times its noise's.
SIGNAL_TO_NOISE = 10.0

#: The noise is measured on the log's first this many samples.
NOISE_SAMPLES = 50_000

# The groups of the per-signal report: (signal, label, unit).
_GROUPS = (
    ("q", "base position", "m"),
    ("q", "base orientation", "rad"),
    ("q", "joints", "rad"),
    ("v", "base linear", "m/s"),
    ("v", "base angular", "rad/s"),
    ("v", "joints", "rad/s"),
    ("wrenches", "force", "N"),
    ("wrenches", "moment", "N m"),
    ("tau", "joints", "N m"),
)


def gaussian_kernel(cutoff: float, dt: float) -> Array:
    """The zero-phase Gaussian low-pass at ``cutoff`` [Hz] (its -3 dB frequency) for a step
    ``dt`` [s]: weights over +-4 standard deviations, summing to 1 (identification's filter,
    :class:`~wholebody.identify.smoothing.Smoothing`, at that cutoff)."""
    sigma = math.sqrt(math.log(2.0)) / (2.0 * math.pi * cutoff)  # [s]
    return Smoothing(sigma, 1.0 / dt).kernel


def choose_cutoff(force: Array, noise: Noise, dt: float) -> float:
    """The filter's cutoff [Hz] (module docstring) from the total contact force (N, 3) [N]
    and its measured noise."""
    from scipy.signal import welch

    nyquist = 0.5 / dt
    top = nyquist / MAX_CUTOFF_SHARE
    x = np.asarray(force, dtype=float)
    x = x[np.isfinite(x).all(axis=1)]
    if len(x) < 64:
        return top
    f, S = welch(x, fs=1.0 / dt, nperseg=min(len(x), 256), axis=0, average="median")
    floor = noise.psd(f)
    with np.errstate(invalid="ignore", divide="ignore"):
        above = S > SIGNAL_TO_NOISE * floor
    cut = MIN_CUTOFF
    for j in range(x.shape[1]):
        rows = np.flatnonzero(above[:, j])
        if len(rows):
            cut = max(cut, float(f[rows[-1]]))
    return float(min(cut, top))


@dataclass(frozen=True)
class SignalNoise:
    """The noise of a log's signals (module docstring), per group of columns, and its stamps.

    Attributes
    ----------
    groups : dict of str to Noise
        ``"q: joints"``, ``"v: base linear"``, ``"wrenches: force"``, ... (present signals
        only), each the measured noise of its columns.
    units : dict of str to str
    stamps : Stamps
    cutoff : float or None
        The measured preset's filter cutoff [Hz] (None: no filter ran).
    kernel : ndarray or None
        That filter's weights.
    """

    groups: dict[str, Noise]
    units: dict[str, str]
    stamps: Stamps
    cutoff: float | None = None
    kernel: Array | None = field(default=None, repr=False)

    def lines(self) -> list[str]:
        """The noise in words, one line per signal."""
        by_signal: dict[str, list[str]] = {}
        for key, n in self.groups.items():
            signal, label = key.split(": ")
            unit = self.units[key]
            w = float(np.max(n.white, initial=0.0))
            c = float(np.max(n.correlated, initial=0.0))
            text = f"{label} {w:.2g}"
            if c > 0:
                tau = float(np.max(n.correlation_seconds, initial=0.0))
                text += f" + {c:.2g} correlated over {1e3 * tau:.3g} ms"
            by_signal.setdefault(signal, []).append(f"{text} {unit}")
        return [f"{s}: {', '.join(parts)}" for s, parts in by_signal.items()]

    def filter_line(self) -> str | None:
        """Which filter ran and what it costs, in words (None without one)."""
        if self.cutoff is None or self.kernel is None:
            return None
        half = (len(self.kernel) - 1) // 2
        return (
            f"the residual (every wrench and the momentum rate alike) through a zero-phase "
            f"Gaussian low-pass at {self.cutoff:.3g} Hz (-3 dB; +-{half} samples): events "
            f"shorter than {_seconds(0.5 / self.cutoff)} are spread over that time"
        )

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            key: {**n.as_dict(), "unit": self.units[key]} for key, n in self.groups.items()
        }
        out["stamps"] = self.stamps.as_dict()
        out["filter_cutoff_hz"] = self.cutoff
        out["filter_samples"] = None if self.kernel is None else int(len(self.kernel))
        return out


def _seconds(s: float) -> str:
    return f"{1e3 * s:.3g} ms" if s < 1 else f"{s:.3g} s"


def signal_noise(robot: Robot, part: Trajectory, stamps: Stamps, filtered: bool) -> SignalNoise:
    """The noise of each signal of ``part`` (a log's first samples), and with ``filtered``
    the measured preset's filter chosen from it."""
    dt = stamps.step if np.isfinite(stamps.step) and stamps.step > 0 else 1.0
    q, v, _, tau = part.for_robot(robot)
    columns: dict[str, Array] = {
        "q: base position": q[:, :3],
        # Small rotations turn the quaternion's vector part by half their angle.
        "q: base orientation": 2.0 * q[:, 3:6],
        "q: joints": q[:, 7:],
        "v: base linear": v[:, :3],
        "v: base angular": v[:, 3:6],
        "v: joints": v[:, 6:],
    }
    W = part.contact_wrenches
    if W.shape[1]:
        columns["wrenches: force"] = W[..., :3].reshape(len(W), -1)
        columns["wrenches: moment"] = W[..., 3:].reshape(len(W), -1)
    if tau is not None:
        columns["tau: joints"] = tau
    units = {f"{s}: {label}": unit for s, label, unit in _GROUPS}
    groups = {k: measure_noise(x, dt) for k, x in columns.items() if x.shape[1]}
    out = SignalNoise(groups, {k: units[k] for k in groups}, stamps)
    if not filtered:
        return out
    # The motion's bandwidth in the balance: where the base's velocity and the total contact
    # force meet their noise (the lower of the two: above it one of them is noise).
    cutoff = choose_cutoff(v[:, :6], measure_noise(v[:, :6], dt), dt)
    if W.shape[1]:
        total = W[..., :3].sum(axis=1)
        cutoff = min(cutoff, choose_cutoff(total, measure_noise(total, dt), dt))
    return SignalNoise(out.groups, out.units, stamps, cutoff, gaussian_kernel(cutoff, dt))


@dataclass(frozen=True)
class ResidualNoise:
    """The noise of the residual (module docstring), through the measured preset's filter
    (or none: ``kernel`` ``[1.0]``).

    Attributes
    ----------
    kernel : ndarray
        The filter's weights.
    dt : float
        The step [s].
    direct : Noise or None
        Measured on the residual itself (6 components) [N, N m]: with logged accelerations
        it holds no motion, only noise and faults that do not look like noise.
    rate : Noise or None
        Of the centroidal momentum ``h = A_G v`` (6 components) [N s, N m s], differentiated
        by central differences (with differentiated accelerations; their noise is the
        derivative's, which a measure on the residual would mistake for the low frequencies').
    wrench : Noise or None
        Of the total external wrench at the CoM (6 components) [N, N m], with ``rate``.
    floor : (float, float)
        The profile's stated force and moment noise over all contacts (std per axis) [N],
        [N m]: a floor on the noise at every scale (its correlation is unknown: it is not
        assumed to average out).
    """

    kernel: Array
    dt: float
    direct: Noise | None = None
    rate: Noise | None = None
    wrench: Noise | None = None
    floor: tuple[float, float] = (0.0, 0.0)

    @classmethod
    def of_residual(cls, residual: Array, kernel: Array | None, dt: float) -> ResidualNoise:
        """Measured on the residual (N, 6) [N, N m] (NaN where not checked)."""
        k = np.ones(1) if kernel is None else kernel
        return cls(k, dt, direct=measure_noise(residual, dt))

    def std(
        self, means: int = 1, kernel: Array | None = None, edge: bool = False
    ) -> tuple[float, float]:
        """Std of the norm of the filtered residual's noise, force [N] and moment [N m],
        averaged over ``means`` samples (root sum of the components' variances); ``kernel``
        other filter weights than the preset's (``[1.0]``: none), with ``edge`` the weights at
        a sample where they are cut (the log's ends, a gap), the first on the segment's first
        sample."""
        var = np.sum([n.filtered_std(h, means) ** 2 for n, h in self._parts(kernel, edge)], axis=0)
        var[:3] = np.maximum(var[:3], self.floor[0] ** 2)
        var[3:] = np.maximum(var[3:], self.floor[1] ** 2)
        return float(np.sqrt(var[:3].sum())), float(np.sqrt(var[3:].sum()))

    def _parts(self, kernel: Array | None, edge: bool = False) -> list[tuple[Noise, Array]]:
        """The measured noises and the filters they pass (:meth:`std`)."""
        k = self.kernel if kernel is None else kernel
        if self.direct is not None:
            return [(self.direct, k)]
        assert self.rate is not None and self.wrench is not None
        if not edge:
            rate_kernel = np.convolve(k, np.array([1.0, 0.0, -1.0]) / (2 * self.dt))
        else:  # central differences, the first one-sided: (-3 v0 + 4 v1 - v2) / (2 dt)
            n = len(k)
            rate_kernel = np.zeros(n + 1)
            rate_kernel[2:] += k[1:]
            rate_kernel[: n - 1] -= k[1:]
            rate_kernel[:3] += k[0] * np.array([-3.0, 4.0, -1.0])
            rate_kernel /= 2 * self.dt
        return [(self.rate, rate_kernel), (self.wrench, k)]

    def crossing_rate(self, means: int = 1, kernel: Array | None = None) -> float:
        """The filtered (and averaged) noise's ``sqrt(2 (1 - rho_1))``, the largest over its
        parts and components (:func:`~wholebody.conventions.noise.level_sigmas`)."""
        rho = [n.filtered_correlation(h, means) for n, h in self._parts(kernel)]
        return float(np.sqrt(2.0 * np.clip(1.0 - np.min(np.concatenate(rho)), 0.0, 2.0)))

    def edge_scales(self) -> Array:
        """(L + 1, 2): at ``d`` samples from a segment's first (or last) sample, the std of
        the filtered residual's noise over its std inside, force and moment (the kernel is
        cut there, the first difference one-sided: ``L`` the kernel's half-width)."""
        h = self.kernel
        L = len(h) // 2
        inside = np.array(self.std())
        out = np.ones((L + 1, 2))
        for d in range(L + 1):
            w = h[L - d :]
            with np.errstate(invalid="ignore", divide="ignore"):
                out[d] = np.array(self.std(kernel=w / w.sum(), edge=True)) / inside
        return np.asarray(np.where(np.isfinite(out), np.maximum(out, 1.0), 1.0))

    def tolerance(self, means: int, n: int, kernel: Array | None = None) -> tuple[float, float]:
        """The tolerance of a mean over ``means`` samples [N], [N m] in a log of ``n``
        samples: :func:`~wholebody.conventions.noise.level_sigmas` (the level the noise
        crosses anywhere in the log with probability
        :data:`~wholebody.conventions.noise.FALSE_ALARM`) times the noise's std
        (``kernel``: as :meth:`std`)."""
        k = level_sigmas(n, self.crossing_rate(means, kernel))
        f, m = self.std(means, kernel)
        return k * f, k * m


def residual_noise(
    robot: Robot, part: Trajectory, contacts: list[Any], kernel: Array, dt: float
) -> ResidualNoise:
    """:class:`ResidualNoise` of a log with differentiated accelerations, measured on
    ``part`` (consecutive samples of the log): the centroidal momentum and the total
    external wrench at the CoM, from one Pinocchio pass per sample."""
    from ..robot.batch import centroidal_map_rows

    part = part.at_frame_origins(robot, contacts)
    q, v, _, _ = part.for_robot(robot)
    arrays, bad, _ = robot.check_batch(q=q, v=v)
    rows = np.flatnonzero(~bad)
    by_name = {c.name: c for c in contacts}
    frames = [by_name[n].frame for n in part.contact_names] + list(part.external_frames)
    W = part.contact_wrenches
    if part.external_wrenches is not None:
        W = np.concatenate([W, part.external_wrenches], axis=1)
    N = len(part)
    Ag, G, P = centroidal_map_rows(robot, arrays["q"], rows, [robot.frame_id(f) for f in frames])
    momentum, total = np.full((N, 6), np.nan), np.full((N, 6), np.nan)
    momentum[rows] = np.einsum("nij,nj->ni", Ag, arrays["v"][rows])
    f = W[rows, :, :3]
    total[rows, :3] = f.sum(axis=1)
    total[rows, 3:] = (W[rows, :, 3:] + np.cross(P - G[:, None], f)).sum(axis=1)
    return ResidualNoise(
        kernel, dt, rate=measure_noise(momentum, dt), wrench=measure_noise(total, dt)
    )
