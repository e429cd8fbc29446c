"""The evidence behind a verdict: how much of the log was checked, how tight the check was,
whether the residual carries a systematic error that no single sample shows, which streams
were held (flagged before the verdict), and where a wrench left its cone.

The figures land in :attr:`~wholebody.check.Report.evidence` and the model is explained in
``docs/diagnosis.md`` ("Evidence").

**Share checked.** A sample is checked when it is not flagged; it is *waived* when its
residual is over tolerance but within tolerance plus the expected error of differentiated
accelerations (:func:`wholebody.conventions.expected_residual_error`).

**Achieved bound.** The per-sample bound on the residual's error that the check achieved:
the expected error of differentiation (jumps, noise of ``v``, the log's ends) where
accelerations were differentiated, plus the storage resolution of the logged values
(:func:`storage_resolution`: float32 logs round at 6e-8 relative). Its median over the
checked samples is reported, for force [N] and moment [N m].

**Systematic error (bias).** Differentiation noise does not survive averaging: the mean of
central differences over ``M`` consecutive samples telescopes to the difference of ``v`` at
the window's two ends, so the residual averaged over a window has error at most
``(E_first + E_last + |Delta W|) / M`` (``E`` the per-sample expected error, which holds its
noise at :data:`~wholebody.conventions.NOISE_SIGMAS` standard deviations at each end, and
``Delta W`` the change of the total external wrench across the window: the accelerations at
the two ends weigh half a sample each), while a gain,
a mass error, an offset or a lag averages to itself. Windows of ``M`` = 4, 8, 16, ... samples
(up to half the log), sliding by the smallest, are tested: a window whose mean residual
exceeds the tolerance plus its bound is a systematic error, and its samples are
inconsistent (the diagnosis runs on them) even when every single sample is waived.

**Held and stale streams** (:func:`held_rows`), found before the verdict: a contact whose
reading repeats one value, bit for bit, while the balance needs it to change carries no
evidence about the motion. Its samples are flagged with the reason and the verdict rests on
the rest (a topic that ended before the others, held by a resampler, is never read as a
missing force).

**Cone findings** (:func:`cone_finding`): a diagnosis line for friction-cone and CoP
violations: which contact, which inequality, how far (the CoP's distance beyond the sole's
edge in millimetres, or the cone margin in newtons), and when. A log whose balance is within
tolerance but whose wrench leaves a cone is inconsistent; the diagnosis says where and by how
much.

**Placement findings** (:func:`placement_finding`): a line for loaded contacts that the model
puts off the ground or tilted (:mod:`wholebody.conventions.placement`): which contact, how
far or how much, for how long, and when; the diagnosis fits what in the configuration
explains it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..contacts import Contact
from ..conventions.noise import segments_between_gaps
from ..diagnosis.core import Finding
from ..io.logfiles.fields import storage_resolution
from ..robot.core import Robot
from .sources import Differentiation, Source, low_pass, read_part

__all__ = [
    "Evidence",
    "BiasTest",
    "bias_test",
    "residual_resolution",
    "held_rows",
    "cone_finding",
    "placement_finding",
    "EVIDENCE_LINES",
    "MIN_CHECKED_SHARE",
    "MAX_WAIVED_SHARE",
]

Array = NDArray[np.float64]

#: Default minimum share of the log's samples that must be checked (not flagged) for a
#: verdict other than "inconclusive".
MIN_CHECKED_SHARE = 0.5


#: Default largest share of the checked samples that may be waived (over tolerance, within
#: the expected error of differentiation) for a verdict other than "inconclusive".
MAX_WAIVED_SHARE = 0.1


#: Findings that are evidence, not tested causes (said on their own lines, after the ranked
#: causes), and the word that heads their line.
EVIDENCE_LINES = {"cone_violation": "cone", "contact_placement": "placement"}


#: The smallest window of the systematic-error test [samples].
MIN_WINDOW = 4


#: At most this many window starts per scale (longer logs slide by more than the smallest
#: window: the test's cost does not grow with the log beyond it).
MAX_WINDOW_STARTS = 20_000


@dataclass
class Evidence:
    """What a check's verdict rests on (see the module docstring).

    Attributes
    ----------
    n_samples, n_checked, n_waived : int
        Samples in the log (window), not flagged, and over tolerance but within the expected
        error of differentiation.
    share_checked, share_waived : float
        ``n_checked / n_samples`` and ``n_waived / n_checked``.
    n_implausible : int
        Flagged samples whose values are beyond physical magnitudes (a diverged simulation,
        wrong units): evidence of an inconsistent log, not samples to drop.
    bound_force, bound_moment : float
        Median over the checked samples of the per-sample bound on the residual's error [N],
        [N m] (differentiation and storage resolution).
    window_bound_force, window_bound_moment : float
        Median bound of the residual averaged over the longest windows tested [N], [N m]
        (NaN when accelerations were logged: no averaging needed).
    window_seconds : float
        Duration of the longest windows tested [s] (NaN when not tested).
    systematic_windows : int
        Windows whose mean residual exceeds tolerance plus bound.
    systematic_ratio : float
        The largest ``(|mean residual| - bound) / tolerance`` over the windows (force or
        moment); above 1 is a systematic error (NaN when not tested).
    resolution_force, resolution_moment : float
        Median storage-resolution part of the bound [N], [N m].
    float32 : bool
        Whether the log's values are stored in single precision (detected from the data).
    min_checked_share, max_waived_share : float
        The thresholds used.
    inconclusive_because : list of str
        Why the verdict is "inconclusive" (empty otherwise).
    noise : dict
        The noise measured in the log, per signal (white and correlated parts, correlation
        time), its stamps (step, jitter, gaps, bad stamps) and the measured preset's filter
        (:class:`wholebody.check.noise.SignalNoise`).
    noise_lines : list of str
        The same in words.
    filter : str or None
        Which filter ran on the balance's signals and what it costs (measured preset).
    """

    n_samples: int = 0
    n_checked: int = 0
    n_waived: int = 0
    n_implausible: int = 0
    share_checked: float = float("nan")
    share_waived: float = 0.0
    bound_force: float = 0.0
    bound_moment: float = 0.0
    window_bound_force: float = float("nan")
    window_bound_moment: float = float("nan")
    window_seconds: float = float("nan")
    systematic_windows: int = 0
    systematic_ratio: float = float("nan")
    resolution_force: float = 0.0
    resolution_moment: float = 0.0
    float32: bool = False
    min_checked_share: float = MIN_CHECKED_SHARE
    max_waived_share: float = MAX_WAIVED_SHARE
    inconclusive_because: list[str] = field(default_factory=list)
    noise: dict[str, Any] = field(default_factory=dict)
    noise_lines: list[str] = field(default_factory=list)
    filter: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The figures as a JSON-ready dict."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def residual_resolution(
    wrenches: Array, rate_scale: Array, single: bool, weight: float
) -> tuple[Array, Array]:
    """Per-sample bound [N], [N m] on the residual from rounding the stored values: each
    wrench component's step, and the momentum rate's (``rate_scale`` (N,) its magnitude
    [N], with the weight) at the storage precision."""
    W = np.nan_to_num(np.asarray(wrenches, dtype=np.float64).reshape(len(wrenches), -1, 6))
    with np.errstate(over="ignore", invalid="ignore"):
        step = storage_resolution(W, single)
        eps = float(np.finfo(np.float32 if single else np.float64).eps)
        f = np.abs(step[..., :3]).sum(axis=(1, 2)) + eps * (rate_scale + weight)
        m = np.abs(step[..., 3:]).sum(axis=(1, 2))
    return f, m


@dataclass
class BiasTest:
    """The systematic-error test (module docstring): the samples of significant windows,
    and the figures for :class:`Evidence`."""

    systematic: NDArray[np.bool_]
    windows: int
    ratio: float
    bound_force: float
    bound_moment: float
    seconds: float
    smoothing: int


def window_edges(n: int) -> NDArray[np.intp]:
    """The samples whose expected error the bias test reads (the windows' first and last)."""
    step = _step(n)
    starts = np.arange(0, n, step)
    return np.unique(np.clip(np.concatenate([starts, starts - 1, [n - 1]]), 0, n - 1))


def _step(n: int) -> int:
    return max(MIN_WINDOW, int(math.ceil(n / MAX_WINDOW_STARTS)))


def bias_test(
    time: Array,
    r_f: Array,
    r_m: Array,
    e_f: Array,
    e_m: Array,
    wrench: Array,
    bad: NDArray[np.bool_],
    tol_f: float,
    tol_m: float,
    tolerance_at: Callable[[int], tuple[float, float]] | None = None,
    noise_scale: Array | None = None,
) -> BiasTest:
    """Window-averaged residuals against their bounds (module docstring).

    ``r_f``, ``r_m`` (N, 3) residuals [N], [N m] (NaN where flagged); ``e_f``, ``e_m`` (N,)
    per-sample expected errors (needed at :func:`window_edges`; ``inf`` where unknown);
    ``wrench`` (N, 6) the total external wrench at the CoM (NaN where unknown): a window's
    mean is also off by half the wrench's change across it (the accelerations at its two
    ends, held or sampled, weigh half a sample each); ``bad`` (N,) flagged; ``tol_f``,
    ``tol_m`` the tolerances [N], [N m], or ``tolerance_at(M)`` those of a mean over ``M``
    samples (the measured preset's: the noise of such a mean), scaled per window by the
    larger ``noise_scale`` (N,) of its two ends (where the filter's kernel is cut, its noise
    is larger). Returns the samples of windows over tolerance plus bound.
    """
    n = len(time)
    nan = float("nan")
    if n < 2 * MIN_WINDOW:
        return BiasTest(np.zeros(n, dtype=bool), 0, nan, nan, nan, nan, 1)
    valid = ~bad & np.isfinite(r_f).all(axis=1) & np.isfinite(r_m).all(axis=1)
    w = _Windows.of(r_f, r_m, e_f, e_m, wrench, valid, tol_f, tol_m, tolerance_at, noise_scale)
    scan = _scan(w, time, _step(n))
    systematic = _marked(w, scan) if scan.windows else np.zeros(n, dtype=bool)
    return BiasTest(
        systematic & valid,
        scan.windows,
        scan.ratio if np.isfinite(scan.ratio) else nan,
        scan.last[0],
        scan.last[1],
        scan.last[2],
        scan.smoothing,
    )


@dataclass(frozen=True)
class _Windows:
    """The arithmetic of :func:`bias_test`: means of the residual over windows ``[a, b)`` of
    ``M`` samples (from cumulative sums, flagged samples as zeros) and their bounds."""

    cf: Array  # (N + 1, 3) cumulative residual force [N]
    cm: Array  # (N + 1, 3) cumulative residual moment [N m]
    cbad: NDArray[np.intp]  # (N + 1,) cumulative count of invalid samples
    e_f: Array
    e_m: Array
    wrench: Array
    tol_f: float
    tol_m: float
    tolerance_at: Callable[[int], tuple[float, float]] | None = None
    noise_scale: Array | None = None

    @classmethod
    def of(
        cls,
        r_f: Array,
        r_m: Array,
        e_f: Array,
        e_m: Array,
        wrench: Array,
        valid: NDArray[np.bool_],
        tol_f: float,
        tol_m: float,
        tolerance_at: Callable[[int], tuple[float, float]] | None = None,
        noise_scale: Array | None = None,
    ) -> _Windows:
        zero = np.zeros(3)
        cf = np.vstack([zero, np.cumsum(np.where(valid[:, None], r_f, 0.0), axis=0)])
        cm = np.vstack([zero, np.cumsum(np.where(valid[:, None], r_m, 0.0), axis=0)])
        cbad = np.concatenate([[0], np.cumsum(~valid)])
        return cls(cf, cm, cbad, e_f, e_m, wrench, tol_f, tol_m, tolerance_at, noise_scale)

    def tolerance(self, M: int) -> tuple[float, float]:
        """The tolerances [N], [N m] of a mean over ``M`` samples."""
        return (self.tol_f, self.tol_m) if self.tolerance_at is None else self.tolerance_at(M)

    @property
    def n(self) -> int:
        return len(self.wrench)

    def clean(self, a: NDArray[np.intp], b: NDArray[np.intp]) -> NDArray[np.bool_]:
        """Windows with no invalid sample."""
        return np.asarray((self.cbad[b] - self.cbad[a]) == 0)

    def means(self, a: NDArray[np.intp], b: NDArray[np.intp], M: int) -> tuple[Array, Array]:
        """Norms of the mean residual force and moment over each window."""
        mean_f = np.linalg.norm(self.cf[b] - self.cf[a], axis=1) / M
        mean_m = np.linalg.norm(self.cm[b] - self.cm[a], axis=1) / M
        return mean_f, mean_m

    def level(self, a: NDArray[np.intp], b: NDArray[np.intp]) -> tuple[Array, Array]:
        """The change of the wrench across windows ``[a, b)``: the larger of
        ``W[b-1] - W[a-1]`` and ``W[b] - W[a]`` (indices clipped to the log)."""
        n, out = self.n, []
        for i, j in ((a - 1, b - 1), (a, b)):
            d = self.wrench[np.clip(j, 0, n - 1)] - self.wrench[np.clip(i, 0, n - 1)]
            out.append((np.linalg.norm(d[:, :3], axis=1), np.linalg.norm(d[:, 3:], axis=1)))
        return np.fmax(out[0][0], out[1][0]), np.fmax(out[0][1], out[1][1])

    def bounds(self, a: NDArray[np.intp], b: NDArray[np.intp], M: int) -> tuple[Array, Array]:
        """The bound of each window's mean: its end samples' expected errors and the
        wrench's change across it, over ``M``."""
        lf, lm = self.level(a, b)
        with np.errstate(invalid="ignore"):
            bf = (self.e_f[a] + self.e_f[b - 1] + lf) / M
            bm = (self.e_m[a] + self.e_m[b - 1] + lm) / M
        return bf, bm

    def ratios(
        self,
        mean_f: Array,
        mean_m: Array,
        bf: Array,
        bm: Array,
        a: NDArray[np.intp],
        b: NDArray[np.intp],
    ) -> Array:
        """``(mean - bound) / tolerance`` of windows ``[a, b)`` (the tolerance of a mean over
        their ``M`` samples, scaled by :attr:`noise_scale`), the larger of force and moment."""
        f, m = self.tolerance(int(b[0] - a[0]) if len(a) else 1)
        scale = np.ones(len(a))
        if self.noise_scale is not None:
            scale = np.fmax(self.noise_scale[a], self.noise_scale[b - 1])
        tol_f, tol_m = f * scale, m * scale
        with np.errstate(invalid="ignore", divide="ignore"):
            rf = np.where(tol_f > 0, (mean_f - bf) / tol_f, np.where(mean_f > bf, np.inf, 0.0))
            rm = np.where(tol_m > 0, (mean_m - bm) / tol_m, np.where(mean_m > bm, np.inf, 0.0))
        return np.asarray(np.fmax(rf, rm))


@dataclass
class _Scan:
    """What the windows of every scale showed (:func:`_scan`)."""

    windows: int = 0  # windows over tolerance plus bound
    ratio: float = -np.inf  # the largest ratio of a window with a known bound
    last: tuple[float, float, float] = (math.nan, math.nan, math.nan)  # bounds, seconds
    smoothing: int = 1  # the smallest window whose bound is within a tenth of the tolerance
    marking: int = 0  # the smallest window whose bound is within the tolerance
    first_hit: list[tuple[int, int]] = field(default_factory=list)
    end: int = 0  # the first scale not tested


def _scan(w: _Windows, time: Array, step: int) -> _Scan:
    """Windows of ``M`` = ``step``, 2 ``step``, ... samples (up to half the log), sliding
    by ``step``: their means against tolerance plus bound."""
    n, s = w.n, _Scan()
    M = step
    while M <= max(n // 2, step):
        a = np.arange(0, n - M + 1, step)
        b = a + M  # exclusive
        clean = w.clean(a, b)
        a, b = a[clean], b[clean]
        if len(a):
            mean_f, mean_m = w.means(a, b, M)
            bf, bm = w.bounds(a, b, M)
            rho = w.ratios(mean_f, mean_m, bf, bm, a, b)
            known = np.isfinite(bf) & np.isfinite(bm)
            over = known & (rho > 1)
            if known.any():
                s.ratio = max(s.ratio, float(np.max(rho[known])))
                s.last = (
                    float(np.median(bf[known])),
                    float(np.median(bm[known])),
                    float(np.median(time[b[known] - 1] - time[a[known]])),
                )
                # The smallest window whose bound (and the noise left in its mean, with a
                # tolerance per scale) is within a tenth of the tolerance: the diagnosis
                # averages its residuals over it.
                noise_f, noise_m = w.tolerance(M) if w.tolerance_at is not None else (0, 0)
                if (
                    s.smoothing == 1
                    and s.last[0] + noise_f <= 0.1 * w.tol_f
                    and s.last[1] + noise_m <= 0.1 * w.tol_m
                ):
                    s.smoothing = M
                # The smallest window whose bound is within the tolerance: the resolution at
                # which single stretches of the log are judged (and marked).
                if not s.marking and s.last[0] <= w.tol_f and s.last[1] <= w.tol_m:
                    s.marking = M
            if over.any() and not s.first_hit:
                s.first_hit = list(zip(a[over].tolist(), b[over].tolist()))
            s.windows += int(over.sum())
        M *= 2
    if s.smoothing == 1 and np.isfinite(s.last[0]):
        s.smoothing = M // 2  # the longest window tested when none reached a tenth
    s.end = M
    return s


def _marked(w: _Windows, scan: _Scan) -> NDArray[np.bool_]:
    """Samples whose centred window at the marking scale is beyond tolerance plus bound (all
    of the first significant windows when only longer windows show the error)."""
    n = w.n
    M = scan.marking or scan.end // 2
    i = np.arange(n)
    lo = np.clip(i - M // 2, 0, n - M)
    hi = lo + M
    clean = w.clean(lo, hi)
    mean_f, mean_m = w.means(lo, hi, M)
    rho = w.ratios(mean_f, mean_m, *w.bounds(lo, hi, M), lo, hi)
    systematic = clean & np.isfinite(rho) & (rho > 1)
    if not systematic.any():  # seen at longer windows only: all of the first ones
        for s, e in scan.first_hit:
            systematic[s:e] = True
    return systematic


# --- the verdict's evidence in words ---------------------------------------------------------


def inconclusive_reasons(report: Any) -> list[str]:
    """Why the evidence of a :class:`~wholebody.check.report.Report` is too thin for "consistent"
    (empty when it is not), in words."""
    ev = report.evidence
    why = []
    share = report.n_checked / max(report.n_samples, 1)
    if share < ev.min_checked_share:
        why.append(
            f"only {100 * share:.1f} % of the samples checked "
            f"(minimum {100 * ev.min_checked_share:g} %)"
        )
    waived = int(report.unreliable.sum()) / max(report.n_checked, 1)
    if waived > ev.max_waived_share:
        why.append(
            f"{100 * waived:.1f} % of the checked samples waived: over tolerance but within "
            f"the expected error of differentiated accelerations (maximum "
            f"{100 * ev.max_waived_share:g} %)"
        )
    w = report.weight
    for label, bound, tol, unit in (
        ("force", ev.bound_force, report.force_tolerance * w, "N"),
        ("moment", ev.bound_moment, report.moment_tolerance * w, "N m"),
    ):
        if np.isfinite(bound) and bound > tol:
            why.append(
                f"the achieved bound on the residual {label} ({bound:.3g} {unit}, median) "
                f"is wider than the tolerance ({tol:.3g} {unit})"
            )
    return why


MIN_HELD_SAMPLES = 5


#: The share of the force tolerance the residual must change by over a hold (below it, a
#: hold changes nothing the verdict sees; the notes of a consistent log still list it).
FLOOR = 0.1


#: How many standard errors of its noise the residual's change over a hold must exceed.
NOISE_FACTOR = 4.0


def repeats(wrenches: Array, previous: Array | None) -> NDArray[np.bool_]:
    """Per sample and contact: the reading equals the previous sample's bit for bit and is
    not all zeros (a foot in the air reads zeros, not a hold).

    Parameters
    ----------
    wrenches : ndarray, shape (n, k, 6)
        A block of logged contact wrenches.
    previous : ndarray, shape (k, 6), or None
        The sample before the block (None: the log's first block).

    Returns
    -------
    ndarray of bool, shape (n, k)
    """
    W = np.asarray(wrenches)
    before = np.concatenate([W[:1] if previous is None else previous[None], W[:-1]])
    same = (W == before).all(axis=-1) & (np.abs(W).max(axis=-1) > 0)
    if previous is None and len(same):
        same[0] = False
    return np.asarray(same, dtype=bool)


def _runs(mask: NDArray[np.bool_]) -> list[tuple[int, int]]:
    edges = np.diff(np.r_[0, mask.astype(np.int8), 0])
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), strict=True))


def held_rows(
    same: NDArray[np.bool_],
    residual: Array,
    time: Array,
    names: list[str],
    tolerance: float,
) -> dict[int, str]:
    """Samples of held readings: runs of at least :data:`MIN_HELD_SAMPLES` repeats in which
    the residual force changes by more than ``FLOOR`` times ``tolerance`` plus its noise
    (the mean over the run's last quarter against its first, beyond ``NOISE_FACTOR``
    standard errors): the balance needs the reading to change and it does not.

    Parameters
    ----------
    same : ndarray of bool, shape (N, k)
        :func:`repeats` over the log.
    residual : ndarray, shape (N, 3)
        Residual force per sample, world [N] (NaN where not checked).
    time : ndarray, shape (N,)
        Sample times [s].
    names : list of str
        Contact names (k).
    tolerance : float
        Force tolerance [N].

    Returns
    -------
    dict
        Log row -> reason.
    """
    out: dict[int, str] = {}
    for j, name in enumerate(names):
        for a, b in _runs(same[:, j]):
            if b - a < MIN_HELD_SAMPLES:
                continue
            r = residual[a:b]
            r = r[np.isfinite(r).all(axis=1)]
            if len(r) < 4:
                continue
            h = max(2, len(r) // 4)
            first, last = r[:h], r[-h:]
            change = float(np.linalg.norm(last.mean(axis=0) - first.mean(axis=0)))
            noise = float(np.sqrt((first.var(axis=0) / h + last.var(axis=0) / h).sum()))
            if not change > FLOOR * tolerance + NOISE_FACTOR * noise:
                continue
            why = (
                f"contact {name!r} holds its reading of {float(time[a - 1]):.4f} s while the "
                "balance needs it to change (a held or stale stream: not evidence)"
            )
            for i in range(a, b):
                out.setdefault(i, why)
    return out


def held_note(held: dict[int, str], time: Array) -> Finding:
    """The note that says which samples :func:`held_rows` flagged (``parameters["flagged"]``:
    log row -> reason; ``windows``: per run its reason, first and last time, samples)."""
    rows = np.array(sorted(held))
    breaks = np.flatnonzero(
        (np.diff(rows) != 1)
        | (
            np.array([held[int(i)] for i in rows[1:]])
            != np.array([held[int(i)] for i in rows[:-1]])
        )
    )
    starts = np.r_[0, breaks + 1]
    stops = np.r_[breaks + 1, len(rows)]
    windows = [
        {
            "reason": held[int(rows[a])],
            "start": float(time[rows[a]]),
            "end": float(time[rows[b - 1]]),
            "samples": int(b - a),
        }
        for a, b in zip(starts, stops, strict=True)
    ]
    text = "; ".join(
        f"{w['start']:.3f} .. {w['end']:.3f} s ({w['samples']} samples): {w['reason']}"
        for w in windows[:4]
    )
    more = f" (+{len(windows) - 4} more)" if len(windows) > 4 else ""
    return Finding(
        "held_stream",
        0.0,
        f"{len(rows)} samples flagged, their readings held: {text}{more}; the verdict rests "
        "on the other samples",
        {"flagged": dict(held), "windows": windows, "note": True},
    )


def cone_finding(report: object) -> Finding | None:
    """The ``cone_violation`` finding of a report with violated cones (None without).

    ``parameters["contacts"]``: per contact the samples violated, the most violated
    inequality, the largest CoP excursion beyond the sole [m] (NaN for point contacts or
    slips), the least cone margin [N or N m], and the windows (first, last time [s]).
    """
    viol: NDArray[np.bool_] = report.cone_violation  # type: ignore[attr-defined]
    if not viol.any():
        return None
    time: Array = report.time  # type: ignore[attr-defined]
    names: list[str] = report.contact_names  # type: ignore[attr-defined]
    halves: dict[str, tuple[float, float]] = report.sole_half_sizes  # type: ignore[attr-defined]
    centres = report.sole_centers  # type: ignore[attr-defined]
    cop: Array = report.cop  # type: ignore[attr-defined]
    margin: Array = report.cone_margin  # type: ignore[attr-defined]
    rows_named = report.violated_row  # type: ignore[attr-defined]
    out: dict[str, dict[str, object]] = {}
    parts = []
    for j, name in enumerate(names):
        v = viol[:, j]
        if not v.any():
            continue
        kinds = list(rows_named[v, j])
        common = max(set(kinds), key=kinds.count)
        beyond = float("nan")
        if name in halves and cop.ndim == 3:
            X, Y = halves[name]
            c = np.asarray(centres.get(name, (0.0, 0.0)), dtype=float)
            p = cop[v, j] - c
            with np.errstate(invalid="ignore"):
                excess = np.maximum(np.abs(p[:, 0]) - X, np.abs(p[:, 1]) - Y)
            if np.isfinite(excess).any() and np.nanmax(excess) > 0:
                beyond = float(np.nanmax(excess))
        windows = [(float(time[a]), float(time[b - 1])) for a, b in _runs(v)]
        out[name] = {
            "samples": int(v.sum()),
            "most_violated": common,
            "cop_beyond_sole": beyond,
            "min_margin": float(np.nanmin(margin[v, j])),
            "windows": windows,
        }
        when = ", ".join(f"{a:.3f} .. {b:.3f} s" for a, b in windows[:3])
        more = f" (+{len(windows) - 3} more)" if len(windows) > 3 else ""
        # The margin's unit follows the inequality: a moment row (the CoP) in N m, else N.
        of_kind = np.asarray(rows_named[:, j] == common) & v
        unit = "N m" if "CoP" in common else "N"
        far = (
            f"the CoP up to {1e3 * beyond:.3g} mm beyond the sole's edge"
            if np.isfinite(beyond)
            else f"up to {-float(np.nanmin(margin[of_kind, j])):.3g} {unit} outside the cone"
        )
        parts.append(f"{name!r}: {int(v.sum())} samples, {common}; {far}; at {when}{more}")
    return Finding(
        "cone_violation",
        0.0,
        "contact wrenches outside their cone: " + "; ".join(parts),
        {"contacts": out},
    )


def placement_finding(report: Any) -> Finding | None:
    """The ``contact_placement`` finding of a report whose loaded contacts the model puts off
    the ground or tilted (None without): per named contact how far (largest height [m], tilt
    [rad]), the samples, and the windows (first, last time [s])."""
    p = report.placement
    if p is None or not p.failing:
        return None
    time: Array = report.time
    parts: list[str] = []
    out: dict[str, dict[str, Any]] = {}
    for j, name in enumerate(report.contact_names):
        if name not in p.failing:
            continue
        e = p.evidence["contacts"][name]
        said = []
        for what, mask in (("off_ground", p.off_ground[:, j]), ("tilted", p.tilted[:, j])):
            ev = e[what]
            if not ev["fails"]:
                continue
            i, t, value = ev["worst"]
            windows = [(float(time[a]), float(time[b - 1])) for a, b in _runs(mask)]
            when = ", ".join(f"{a:.3f} .. {b:.3f} s" for a, b in windows[:3])
            far = (
                f"{1e3 * value:+.3g} mm off the ground"
                if what == "off_ground"
                else f"tilted {np.degrees(value):.3g} deg against the ground normal with its "
                "load inside the sole (not on the edge it would roll on)"
            )
            said.append(
                f"{far} (worst at t = {t:.4g} s, sample {i}; {ev['samples']} loaded samples, "
                f"{ev['share']:.0%}, at {when})"
            )
            out.setdefault(name, {})[what] = {**ev, "windows": windows}
        parts.append(f"{name!r} " + "; ".join(said))
    tol = p.evidence
    return Finding(
        "contact_placement",
        0.0,
        "loaded contacts placed where they cannot carry their load: "
        + "; ".join(parts)
        + f" (tolerances {1e3 * tol['height_tolerance_m']:.3g} mm, "
        f"{np.degrees(tol['tilt_tolerance_rad']):.3g} deg; ground {tol['ground']})",
        {"contacts": out},
    )


def differentiation_bounds(
    robot: Robot,
    source: Source,
    bounds: list[tuple[int, int]],
    contacts: Sequence[Contact],
    report: Any,
    need: NDArray[np.bool_],
    diff: Differentiation | None = None,
    kernel: Array | None = None,
) -> tuple[Array, Array, Array, Array, Array]:
    """The expected error of differentiated accelerations [N], [N m] at the samples
    ``need`` (``inf`` elsewhere), chunk by chunk with the neighbours the differences use;
    then the same with the slow noise model (for averages over windows), and the total
    external wrench at the CoM (N, 6) (NaN where not computed).

    With the measured preset's filter (``kernel``), the noise is the tolerance's
    (:mod:`wholebody.check.noise`): the bounds are the differentiation's error filtered like
    the residual (:func:`_filtered_bounds`), and the total wrench filtered too."""
    from ..conventions import expected_residual_error

    if kernel is not None:
        gap = math.inf if diff is None else diff.gap
        return _filtered_bounds(robot, source, bounds, contacts, report, need, kernel, gap)
    e_f = np.full(report.n_samples, np.inf)
    e_m = np.full(report.n_samples, np.inf)
    s_f = np.full(report.n_samples, np.inf)
    s_m = np.full(report.n_samples, np.inf)
    total = np.full((report.n_samples, 6), np.nan)
    for start, stop in bounds:
        idx = np.flatnonzero(need[start:stop]) + start
        if not len(idx):
            continue
        part, off = read_part(source, start, stop, None, margin=2)
        lo = start - off
        expected = expected_residual_error(
            robot,
            part,
            contacts,
            force_tolerance=report.force_tolerance,
            moment_tolerance=report.moment_tolerance,
            samples=idx - lo,
        )
        e_f[idx], e_m[idx] = expected.force_error[idx - lo], expected.moment_error[idx - lo]
        assert expected.slow_force_error is not None and expected.slow_moment_error is not None
        s_f[idx] = expected.slow_force_error[idx - lo]
        s_m[idx] = expected.slow_moment_error[idx - lo]
        assert expected.total_wrench is not None
        # The differences read the neighbours: their wrenches are known too.
        near = np.unique(np.clip(np.concatenate([idx - 1, idx, idx + 1]), start, stop - 1))
        total[near] = expected.total_wrench[near - lo]
    return e_f, e_m, s_f, s_m, total


def implausible_rows(reasons: dict[int, str], n: int) -> NDArray[np.bool_]:
    """Samples flagged for values beyond physical magnitudes (evidence of a bad log)."""
    rows = np.zeros(n, dtype=bool)
    for i, why in reasons.items():
        if "physical magnitude" in why:
            rows[i] = True
    return rows


def evidence_of(report: Any, bias: Any, single: bool, res_f: Array, res_m: Array) -> Evidence:
    """The figures of :class:`Evidence` for a report."""
    ok = ~report.flagged
    n_checked = int(ok.sum())
    n_waived = int(report.unreliable.sum())

    def median(x: Array) -> float:
        x = x[ok & np.isfinite(x)]
        return float(np.median(x)) if len(x) else float("nan")

    ev = Evidence(
        n_samples=report.n_samples,
        n_checked=n_checked,
        n_waived=n_waived,
        n_implausible=int(report.implausible.sum()),
        share_checked=n_checked / max(report.n_samples, 1),
        share_waived=n_waived / max(n_checked, 1),
        bound_force=median(report.bound_force),
        bound_moment=median(report.bound_moment),
        resolution_force=median(res_f),
        resolution_moment=median(res_m),
        float32=single,
    )
    if bias is not None:
        ev.window_bound_force = bias.bound_force
        ev.window_bound_moment = bias.bound_moment
        ev.window_seconds = bias.seconds
        ev.systematic_windows = bias.windows
        ev.systematic_ratio = bias.ratio
    return ev


def _filtered_bounds(
    robot: Robot,
    source: Source,
    bounds: list[tuple[int, int]],
    contacts: Sequence[Contact],
    report: Any,
    need: NDArray[np.bool_],
    kernel: Array,
    gap: float,
) -> tuple[Array, Array, Array, Array, Array]:
    """:func:`differentiation_bounds` under the measured preset's filter ``kernel``."""
    from ..conventions import expected_residual_error

    N = report.n_samples
    e = np.full((N, 2), np.inf)
    total = np.full((N, 6), np.nan)
    for start, stop in bounds:
        idx = np.flatnonzero(need[start:stop]) + start
        if not len(idx):
            continue
        part, off = read_part(source, start, stop, None, margin=len(kernel) // 2 + 2)
        lo = start - off
        expected = expected_residual_error(
            robot,
            part,
            contacts,
            force_tolerance=report.force_tolerance,
            moment_tolerance=report.moment_tolerance,
        )
        W = expected.total_wrench
        assert W is not None
        rows = np.isfinite(W).all(axis=1)
        rows &= np.isfinite(expected.force_parts["jump"] + expected.moment_parts["jump"])
        segments = segments_between_gaps(part.time, gap)
        # The filtered residual's error: a central difference is the mean of the momentum
        # rate over two steps, the wrench is sampled: between a smooth wrench's mean and its
        # sample, (W[i-1] - 2 W[i] + W[i+1]) / 4; a simulator's step holds the acceleration
        # over the step after it, (W[i-1] - W[i]) / 2; each filtered (they cancel mostly),
        # the larger counts. A jump between samples adds at most half of it at the filter's
        # largest weight; the log's ends their one-sided stencil's error, filtered.
        curve, hold = np.zeros_like(W), np.zeros_like(W)
        curve[1:-1] = 0.25 * (W[:-2] - 2.0 * W[1:-1] + W[2:])
        hold[1:] = 0.5 * (W[:-1] - W[1:])
        bound = np.zeros((len(W), 2))
        for x in (curve, hold):
            smooth = low_pass(x, kernel, rows, segments)
            norms = [np.linalg.norm(smooth[:, :3], axis=1), np.linalg.norm(smooth[:, 3:], axis=1)]
            bound = np.fmax(bound, np.stack(norms, axis=1))
        jump = np.stack([expected.force_parts["jump"], expected.moment_parts["jump"]], axis=1)
        edge = np.stack([expected.force_parts["edge"], expected.moment_parts["edge"]], axis=1)
        bound += float(kernel.max()) * jump + low_pass(edge, kernel, rows, segments)
        e[idx] = bound[idx - lo]
        near = np.arange(start, stop)
        total[near] = low_pass(W, kernel, rows, segments)[near - lo]
    e = np.where(np.isfinite(e), e, np.inf)
    return e[:, 0], e[:, 1], e[:, 0].copy(), e[:, 1].copy(), total
