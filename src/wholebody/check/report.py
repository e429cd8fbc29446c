"""The result of a log check: per-sample arrays, a verdict with its evidence, a summary,
and writers (JSON, CSV, DataFrame, figures, HTML); and the evidence behind the verdict
(below).

The verdict has five values:

``"consistent"``
    Enough samples checked (:attr:`Evidence.min_checked_share`), every checked sample
    balances within tolerance and respects its friction cones, no systematic error shows in
    the window-averaged residual, and the log passed the convention checks.
``"consistent_except_unreliable"``
    The same, except samples over tolerance where the accelerations were differentiated from
    ``v`` and the expected error of that differentiation (impacts, the log's ends, noise)
    covers the residual; they are listed (:attr:`Report.unreliable`), and they are at most
    :attr:`Evidence.max_waived_share` of the checked samples. Exit code 0.
``"inconsistent"``
    Some sample is over tolerance beyond its bound, the window-averaged residual shows a
    systematic error beyond tolerance plus its bound, a cone is violated, a convention check
    failed, or samples hold values beyond physical magnitudes; the diagnosis says why.
``"inconclusive"``
    Nothing inconsistent was found, but the evidence is too thin to call the log consistent:
    too small a share checked, too many samples waived, or an achieved bound wider than the
    tolerance (:attr:`Report.evidence` says which). Exit code 5.
``"unchecked"``
    No sample could be checked: no evidence, no verdict.

The evidence behind a verdict: how much of the log was checked, how tight the check was,
whether the residual carries a systematic error that no single sample shows, which streams
were held (flagged before the verdict), and where a wrench left its cone.

The figures land in :attr:`Report.evidence` and the model is explained in
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
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..diagnosis.core import Finding
from ..io.logfiles.fields import storage_resolution

__all__ = ["Report", "VERDICTS", "CONTACT_THRESHOLD", "Evidence"]


Array = NDArray[np.float64]


#: Default minimum share of the log's samples that must be checked (not flagged) for a
#: verdict other than "inconclusive".
MIN_CHECKED_SHARE = 0.5


#: Default largest share of the checked samples that may be waived (over tolerance, within
#: the expected error of differentiation) for a verdict other than "inconclusive".
MAX_WAIVED_SHARE = 0.1


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
) -> BiasTest:
    """Window-averaged residuals against their bounds (module docstring).

    ``r_f``, ``r_m`` (N, 3) residuals [N], [N m] (NaN where flagged); ``e_f``, ``e_m`` (N,)
    per-sample expected errors (needed at :func:`window_edges`; ``inf`` where unknown);
    ``wrench`` (N, 6) the total external wrench at the CoM (NaN where unknown): a window's
    mean is also off by half the wrench's change across it (the accelerations at its two
    ends, held or sampled, weigh half a sample each); ``bad`` (N,) flagged. Returns the
    samples of windows over tolerance plus bound.
    """
    n = len(time)
    systematic = np.zeros(n, dtype=bool)
    nan = float("nan")
    if n < 2 * MIN_WINDOW:
        return BiasTest(systematic, 0, nan, nan, nan, nan, 1)
    step = _step(n)
    valid = ~bad & np.isfinite(r_f).all(axis=1) & np.isfinite(r_m).all(axis=1)
    zero = np.zeros(3)
    cf = np.vstack([zero, np.cumsum(np.where(valid[:, None], r_f, 0.0), axis=0)])
    cm = np.vstack([zero, np.cumsum(np.where(valid[:, None], r_m, 0.0), axis=0)])
    cbad = np.concatenate([[0], np.cumsum(~valid)])
    windows, ratio = 0, -np.inf
    last = (nan, nan, nan)
    M = step
    smoothing = 1
    marking = 0  # the scale whose centred windows mark the systematic samples
    first_hit: list[tuple[int, int]] = []  # significant windows of the smallest such scale

    def level(a: NDArray[np.intp], b: NDArray[np.intp]) -> tuple[Array, Array]:
        """The change of the wrench across windows ``[a, b)``: the larger of
        ``W[b-1] - W[a-1]`` and ``W[b] - W[a]`` (indices clipped to the log)."""
        out = []
        for i, j in ((a - 1, b - 1), (a, b)):
            d = wrench[np.clip(j, 0, n - 1)] - wrench[np.clip(i, 0, n - 1)]
            out.append((np.linalg.norm(d[:, :3], axis=1), np.linalg.norm(d[:, 3:], axis=1)))
        return np.fmax(out[0][0], out[1][0]), np.fmax(out[0][1], out[1][1])

    def ratios(mean_f: Array, mean_m: Array, bf: Array, bm: Array) -> Array:
        with np.errstate(invalid="ignore", divide="ignore"):
            rf = (mean_f - bf) / tol_f if tol_f > 0 else np.where(mean_f > bf, np.inf, 0.0)
            rm = (mean_m - bm) / tol_m if tol_m > 0 else np.where(mean_m > bm, np.inf, 0.0)
        return np.asarray(np.fmax(rf, rm))

    while M <= max(n // 2, step):
        a = np.arange(0, n - M + 1, step)
        b = a + M  # exclusive
        clean = (cbad[b] - cbad[a]) == 0
        a, b = a[clean], b[clean]
        if len(a):
            mean_f = np.linalg.norm(cf[b] - cf[a], axis=1) / M
            mean_m = np.linalg.norm(cm[b] - cm[a], axis=1) / M
            lf, lm = level(a, b)
            with np.errstate(invalid="ignore"):
                bf = (e_f[a] + e_f[b - 1] + lf) / M
                bm = (e_m[a] + e_m[b - 1] + lm) / M
            rho = ratios(mean_f, mean_m, bf, bm)
            known = np.isfinite(bf) & np.isfinite(bm)
            over = known & (rho > 1)
            if known.any():
                ratio = max(ratio, float(np.max(rho[known])))
                last = (
                    float(np.median(bf[known])),
                    float(np.median(bm[known])),
                    float(np.median(time[b[known] - 1] - time[a[known]])),
                )
                # The smallest window whose bound is within a tenth of the tolerance: the
                # diagnosis averages its residuals over it.
                if smoothing == 1 and last[0] <= 0.1 * tol_f and last[1] <= 0.1 * tol_m:
                    smoothing = M
                # The smallest window whose bound is within the tolerance: the resolution at
                # which single stretches of the log are judged (and marked).
                if not marking and last[0] <= tol_f and last[1] <= tol_m:
                    marking = M
            if over.any() and not first_hit:
                first_hit = list(zip(a[over].tolist(), b[over].tolist()))
            windows += int(over.sum())
        M *= 2
    if smoothing == 1 and np.isfinite(last[0]):
        smoothing = M // 2  # the longest window tested when none reached a tenth
    if windows:
        # Samples whose centred window at the marking scale is beyond tolerance plus bound.
        M = marking or M // 2
        i = np.arange(n)
        lo = np.clip(i - M // 2, 0, n - M)
        hi = lo + M
        clean = (cbad[hi] - cbad[lo]) == 0
        mean_f = np.linalg.norm(cf[hi] - cf[lo], axis=1) / M
        mean_m = np.linalg.norm(cm[hi] - cm[lo], axis=1) / M
        lf, lm = level(lo, hi)
        with np.errstate(invalid="ignore"):
            rho = ratios(
                mean_f, mean_m, (e_f[lo] + e_f[hi - 1] + lf) / M, (e_m[lo] + e_m[hi - 1] + lm) / M
            )
        systematic = clean & np.isfinite(rho) & (rho > 1)
        if not systematic.any():  # seen at longer windows only: all of the first ones
            for s, e in first_hit:
                systematic[s:e] = True
    return BiasTest(
        systematic & valid,
        windows,
        ratio if np.isfinite(ratio) else nan,
        last[0],
        last[1],
        last[2],
        smoothing,
    )


# --- the verdict's words --------------------------------------------------------------------


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


def evidence_lines(report: Any) -> list[str]:
    """The evidence figures of a :class:`~wholebody.check.report.Report` in words (share checked,
    bounds, the systematic test)."""
    ev = report.evidence
    n = max(report.n_samples, 1)
    lines = [
        f"evidence  {100 * report.n_checked / n:.1f} % of samples checked, "
        f"{100 * int(report.unreliable.sum()) / max(report.n_checked, 1):.1f} % of those "
        f"waived; achieved bound (median) {ev.bound_force:.3g} N, {ev.bound_moment:.3g} N m"
        + (" (float32 log)" if ev.float32 else "")
    ]
    if np.isfinite(ev.window_seconds):
        lines.append(
            f"          averaged over {ev.window_seconds:.3g} s windows: bound "
            f"{ev.window_bound_force:.3g} N, {ev.window_bound_moment:.3g} N m; "
            + (
                f"a systematic error in {ev.systematic_windows} windows "
                f"({int(report.systematic.sum())} samples, up to "
                f"{ev.systematic_ratio:.3g} x the tolerance beyond the bound)"
                if ev.systematic_windows
                else "no systematic error"
            )
        )
    if ev.n_implausible:
        lines.append(
            f"          {ev.n_implausible} samples hold values beyond physical magnitudes: "
            "the log is inconsistent (a diverged simulation or wrong units)"
        )
    return lines


#: A reading repeated (bit for bit, not zeros) this many samples in a row may be held.
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


#: The values of :attr:`Report.verdict`.
VERDICTS = (
    "consistent",
    "consistent_except_unreliable",
    "inconsistent",
    "inconclusive",
    "unchecked",
)


#: Normal force below this share of the weight: the contact is open (for make/break events).
CONTACT_THRESHOLD = 0.02


@dataclass
class Report:
    """What :func:`check_trajectory` found, per sample and in summary.

    Per-sample arrays have N rows (NaN on flagged samples). Contact arrays have one column
    per contact, in ``contact_names`` order.

    Attributes
    ----------
    time : (N,) [s]
    residual_force, residual_moment : (N, 3)
        ``w_c + w_gi`` about the CoM, world axes [N], [N m].
    flagged : (N,) bool
        Samples that could not be checked; ``reasons`` says why.
    over_tolerance : (N,) bool
        Residual force above ``force_tolerance`` or moment above ``moment_tolerance``.
    cone_margin : (N, k)
        Distance inside the friction cone (negative outside) [N or N m].
    violated_row : (N, k) str
        The violated inequality of each contact ('' when inside).
    utilisation : (N, k)
        ``|f_t| / (mu f_n)`` in the contact frame.
    normal_force : (N, k) [N]
    cop : (N, k, 2)
        Centre of pressure in each surface contact's frame [m] (NaN for point contacts).
    sole_half_sizes : dict of str to (float, float)
        Surface contacts' half-length and half-width [m] (for the CoP figures).
    events : list of (time, contact, "make" | "break")
        Where a contact's normal force crosses 2 % of the weight (the first 10,000 per contact).
    diagnosis : list of Finding
        Ranked causes when the log is inconsistent; empty for a consistent log.
    unreliable : (N,) bool
        Samples over tolerance whose residual the expected error of differentiated
        accelerations covers (only when accelerations were estimated).
    conventions : ConventionReport or None
        The convention checks run before dynamics (``wholebody.conventions``).
    preset : str
        The tolerance preset used (``"simulation"`` or ``"measured"``).
    cone_tolerance_relative : float
        Cone slack relative to each contact's own normal force.
    sole_centers : dict of str to (float, float)
        Surface contacts' rectangle centres in their frames [m] (``SurfaceContact.center``;
        (0, 0) for a sole centred on its frame).
    notes : list of Finding
        On a log within tolerance: one-parameter corrections that remove almost all of its
        small residual (a force stream one step late), said beside the verdict, which they
        do not change (:mod:`wholebody.diagnosis.notes`).
    systematic : (N,) bool
        Samples of windows whose averaged residual exceeds tolerance plus its bound: a
        systematic error (gain, mass, offset, lag) that single samples within their
        differentiation error hide.
    implausible : (N,) bool
        Flagged samples with values beyond physical magnitudes (they make the log
        inconsistent).
    bound_force, bound_moment : (N,)
        The per-sample bound on the residual's error the check achieved [N], [N m]:
        differentiation (when ``a`` was estimated) and storage resolution (``inf`` where not
        computed).
    evidence : Evidence
        Share checked, share waived, achieved bounds, the systematic-error test, thresholds.
    """

    robot: str
    source: str
    time: Array
    residual_force: Array
    residual_moment: Array
    flagged: NDArray[np.bool_]
    reasons: dict[int, str]
    weight: float
    force_tolerance: float
    moment_tolerance: float
    contact_names: list[str]
    cone_margin: Array
    violated_row: Array
    utilisation: Array
    normal_force: Array
    cop: Array
    accelerations_estimated: bool
    cone_tolerance: float = 1e-4
    sole_half_sizes: dict[str, tuple[float, float]] = field(default_factory=dict)
    events: list[tuple[float, str, str]] = field(default_factory=list)
    diagnosis: list[Finding] = field(default_factory=list)
    unreliable: Any = None
    conventions: Any = None
    preset: str = "simulation"
    cone_tolerance_relative: float = 0.0
    sole_centers: dict[str, tuple[float, float]] = field(default_factory=dict)
    notes: list[Finding] = field(default_factory=list)
    systematic: Any = None
    implausible: Any = None
    bound_force: Any = None
    bound_moment: Any = None
    evidence: Any = None

    def __post_init__(self) -> None:
        n = len(self.time)
        if self.unreliable is None:
            self.unreliable = np.zeros(n, dtype=bool)
        if self.systematic is None:
            self.systematic = np.zeros(n, dtype=bool)
        if self.implausible is None:
            self.implausible = np.zeros(n, dtype=bool)
        if self.bound_force is None:
            self.bound_force = np.zeros(n)
        if self.bound_moment is None:
            self.bound_moment = np.zeros(n)
        if self.evidence is None:
            checked = int((~self.flagged).sum())
            self.evidence = Evidence(
                n_samples=n,
                n_checked=checked,
                n_waived=int(self.unreliable.sum()),
                share_checked=checked / max(n, 1),
                share_waived=int(self.unreliable.sum()) / max(checked, 1),
            )

    # --- per sample ---------------------------------------------------------------------

    @property
    def n_samples(self) -> int:
        return len(self.time)

    @property
    def n_checked(self) -> int:
        return int((~self.flagged).sum())

    @property
    def force_norm(self) -> Array:
        return np.linalg.norm(self.residual_force, axis=1)

    @property
    def moment_norm(self) -> Array:
        return np.linalg.norm(self.residual_moment, axis=1)

    @property
    def over_tolerance(self) -> NDArray[np.bool_]:
        """(N,) bool: checked samples whose residual force or moment is over tolerance."""
        with np.errstate(invalid="ignore"):
            return ~self.flagged & (
                (self.force_norm > self.force_tolerance * self.weight)
                | (self.moment_norm > self.moment_tolerance * self.weight)
            )

    @property
    def inconsistent_samples(self) -> NDArray[np.bool_]:
        """(N,) bool: over tolerance and not covered by the differentiation error, or part
        of a window with a systematic error (:attr:`systematic`)."""
        return (self.over_tolerance & ~self.unreliable) | (self.systematic & ~self.flagged)

    @property
    def cone_violation(self) -> NDArray[np.bool_]:
        """(N, k) bool: outside the cone by more than ``cone_tolerance`` m g plus
        ``cone_tolerance_relative`` times the contact's normal force."""
        with np.errstate(invalid="ignore"):
            slack = self.cone_tolerance * self.weight + self.cone_tolerance_relative * np.abs(
                self.normal_force
            )
            return self.cone_margin < -slack

    @property
    def contact_closed(self) -> NDArray[np.bool_]:
        """(N, k) bool: normal force above :data:`CONTACT_THRESHOLD` of the weight (the test
        of ``events``; False on flagged samples)."""
        with np.errstate(invalid="ignore"):
            return self.normal_force > CONTACT_THRESHOLD * self.weight

    @property
    def conventions_passed(self) -> bool:
        return self.conventions is None or bool(self.conventions.passed)

    @property
    def consistent(self) -> bool:
        """True for the verdicts ``"consistent"`` and ``"consistent_except_unreliable"``."""
        return self.verdict in ("consistent", "consistent_except_unreliable")

    @property
    def verdict(self) -> str:
        """One of :data:`VERDICTS` (see the module docstring)."""
        if self.n_checked == 0 and not self.implausible.any():
            return "unchecked"
        if (
            not self.conventions_passed
            or self.implausible.any()
            or self.inconsistent_samples.any()
            or self.cone_violation.any()
        ):
            return "inconsistent"
        if self.inconclusive_because():
            return "inconclusive"
        if self.over_tolerance.any():
            return "consistent_except_unreliable"
        return "consistent"

    def inconclusive_because(self) -> list[str]:
        """Why the evidence is too thin for "consistent" (empty when it is not), in words."""
        return inconclusive_reasons(self)

    # --- summary --------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        ok = ~self.flagged

        def stats(x: Array) -> dict[str, float]:
            x = x[ok]
            if not len(x):
                return {"median": float("nan"), "p95": float("nan"), "max": float("nan")}
            return {
                "median": float(np.median(x)),
                "p95": float(np.percentile(x, 95)),
                "max": float(np.max(x)),
            }

        contacts = {}
        for j, name in enumerate(self.contact_names):
            viol = self.cone_violation[:, j]
            rows = self.violated_row[viol, j]
            common = max(set(rows), key=list(rows).count) if len(rows) else ""
            contacts[name] = {
                "violations": int(viol.sum()),
                "fraction_violated": float(viol.sum() / max(self.n_checked, 1)),
                "most_violated": common,
                "max_utilisation": float(np.nanmax(self.utilisation[:, j]))
                if ok.any()
                else float("nan"),
            }
        over = self.over_tolerance
        near_events = self._near_events(over)
        return {
            "robot": self.robot,
            "source": self.source,
            "consistent": self.consistent,
            "verdict": self.verdict,
            "samples": {
                "in": self.n_samples,
                "checked": self.n_checked,
                "flagged": int(self.flagged.sum()),
            },
            "weight_N": self.weight,
            "accelerations_estimated": self.accelerations_estimated,
            "residual_force_N": stats(self.force_norm),
            "residual_moment_Nm": stats(self.moment_norm),
            "residual_force_relative": stats(self.force_norm / self.weight),
            "residual_moment_relative_m": stats(self.moment_norm / self.weight),
            "tolerance": {
                "force_relative": self.force_tolerance,
                "moment_relative_m": self.moment_tolerance,
            },
            "fraction_over_tolerance": float(over.sum() / max(self.n_checked, 1)),
            "unreliable_samples": np.flatnonzero(self.unreliable)[:200].tolist(),
            "n_unreliable": int(self.unreliable.sum()),
            "evidence": {
                **self.evidence.as_dict(),
                "inconclusive_because": self.inconclusive_because(),
                "n_systematic": int(self.systematic.sum()),
            },
            "conventions": None
            if self.conventions is None
            else [
                {
                    "check": c.name,
                    "passed": c.passed,
                    "message": c.message,
                    "fix": c.fix,
                    "hypotheses": list(c.hypotheses),
                }
                for c in self.conventions.all_checks
            ],
            "preset": self.preset,
            "over_tolerance_near_contact_events": near_events,
            "contacts": contacts,
            "n_events": len(self.events),
            "events": [{"time": t, "contact": c, "event": e} for t, c, e in self.events[:200]],
            "flagged_reasons": {str(k): v for k, v in list(self.reasons.items())[:50]},
            "diagnosis": [
                {
                    "cause": f.cause,
                    "explained": f.explained,
                    "n_parameters": f.n_parameters,
                    "criterion": f.criterion,
                    "message": f.message,
                    "parameters": f.parameters,
                    "uncertainty": f.uncertainty,
                    "alternatives": f.alternatives,
                }
                for f in self.diagnosis
            ],
            "notes": [
                {
                    "cause": f.cause,
                    "explained": f.explained,
                    "message": f.message,
                    "parameters": f.parameters,
                    "uncertainty": f.uncertainty,
                }
                for f in self.notes
            ],
        }

    def _near_events(self, over: NDArray[np.bool_], window: float = 0.02) -> float:
        """Share of the over-tolerance samples within ``window`` s of a make/break event."""
        if not over.any() or not self.events:
            return 0.0
        return float(_near(self.time[over], np.array([e[0] for e in self.events]), window).mean())

    def format_summary(self) -> str:
        """The summary as a few lines of text (what the CLI prints)."""
        s = self.summary()
        f, m = s["residual_force_N"], s["residual_moment_Nm"]
        estimated = self.accelerations_estimated
        lines = [
            f"log       {self.source}  ({self.robot}, weight {self.weight:.1f} N)",
            f"samples   {s['samples']['in']} in = {s['samples']['checked']} checked + "
            f"{s['samples']['flagged']} flagged"
            + ("   (accelerations estimated from v)" if estimated else ""),
            f"residual  force  median {f['median']:.3g} N, p95 {f['p95']:.3g} N, "
            f"max {f['max']:.3g} N",
            f"          moment median {m['median']:.3g} N m, p95 {m['p95']:.3g} N m, "
            f"max {m['max']:.3g} N m",
            f"over tolerance ({100 * self.force_tolerance:g} % m g, "
            f"{100 * self.moment_tolerance:g} cm): "
            f"{100 * s['fraction_over_tolerance']:.2f} % of samples",
        ]
        if s["over_tolerance_near_contact_events"] and s["fraction_over_tolerance"]:
            lines.append(
                f"          {100 * s['over_tolerance_near_contact_events']:.0f} % of those "
                "within 20 ms of a contact make/break"
            )
        for name, c in s["contacts"].items():
            lines.append(
                f"contact   {name}: {c['violations']} cone violations"
                + (f" (mostly: {c['most_violated']})" if c["most_violated"] else "")
                + f", max utilisation {c['max_utilisation']:.2f}"
            )
        for k, (i, why) in enumerate(self.reasons.items()):
            if k == 5:
                lines.append(f"          ... {len(self.reasons) - 5} more flagged samples")
                break
            lines.append(f"flagged   sample {i}: {why}")
        # The cone line is not a tested cause: said on its own line, after them.
        ranked = [f for f in self.diagnosis if f.cause != "cone_violation"]
        if ranked:
            best = ranked[0]
            of = (
                "of the samples that failed the check"
                if best.cause.startswith("convention:")
                else "of the residual"
            )
            lines.append(f"diagnosis {best.message} (explains {100 * best.explained:.0f} % {of})")
            runner = next((f for f in ranked[1:] if f.cause == best.runner_up), None)
            if runner is not None:
                lines.append(
                    f"          runner-up: {runner.cause.replace('_', ' ')} (explains "
                    f"{100 * runner.explained:.0f} %)"
                    + (
                        f", {best.margin:.3g} behind on the evidence criterion"
                        if np.isfinite(best.margin)
                        else ""
                    )
                )
            for alternative in best.alternatives:
                lines.append(f"          or: {alternative}")
            others, seen = [], {best.cause}
            for f in sorted(ranked[1:], key=lambda f: (-round(f.explained, 2), f.cause)):
                if f.cause not in seen and f.cause != "unexplained":
                    seen.add(f.cause)
                    others.append(f"{f.cause.replace('_', ' ')} {100 * f.explained:.0f} %")
            if others:
                lines.append(
                    f"          also tested: {', '.join(others[:6])}"
                    + (", ..." if len(others) > 6 else "")
                )
        for f in self.diagnosis:
            if f.cause == "cone_violation":
                lines.append(f"cone      {f.message}")
        for note in self.notes:
            lines.append(
                f"note      {note.message}"
                + (
                    f" (removes {100 * note.explained:.4g} % of the residual, which is within "
                    "tolerance)"
                    if note.explained > 0
                    else ""
                )
            )
        if self.conventions is not None:
            for check in self.conventions.findings:
                lines.append(
                    f"convention {check.name}: {check.message}"
                    + (f"; fix: {check.fix}" if check.fix else "")
                )
        lines += evidence_lines(self)
        n_unreliable = int(self.unreliable.sum())
        verdict = self.verdict
        if verdict == "consistent_except_unreliable":
            t = self.time[self.unreliable]
            lines.append(
                f"verdict   consistent, except {n_unreliable} samples "
                f"({t.min():.3f} .. {t.max():.3f} s) whose differentiated accelerations are "
                "unreliable (impacts, the log's ends)"
            )
        elif verdict == "inconclusive":
            lines.append("verdict   INCONCLUSIVE: " + "; ".join(self.inconclusive_because()))
        else:
            lines.append(
                "verdict   "
                + {
                    "consistent": "consistent",
                    "inconsistent": "INCONSISTENT",
                    "unchecked": "UNCHECKED (no sample could be checked)",
                }[verdict]
            )
        return "\n".join(lines)

    # --- output -----------------------------------------------------------------------------

    def columns(self) -> dict[str, Array]:
        """Per-sample columns (name -> (N,) array) for CSV and DataFrames."""
        cols: dict[str, Array] = {
            "time": self.time,
            "flagged": self.flagged.astype(float),
            "over_tolerance": self.over_tolerance.astype(float),
            "residual_fx": self.residual_force[:, 0],
            "residual_fy": self.residual_force[:, 1],
            "residual_fz": self.residual_force[:, 2],
            "residual_tx": self.residual_moment[:, 0],
            "residual_ty": self.residual_moment[:, 1],
            "residual_tz": self.residual_moment[:, 2],
            "residual_force": self.force_norm,
            "residual_moment": self.moment_norm,
            "bound_force": np.asarray(self.bound_force, dtype=float),
            "bound_moment": np.asarray(self.bound_moment, dtype=float),
            "waived": np.asarray(self.unreliable, dtype=float),
            "systematic": np.asarray(self.systematic, dtype=float),
        }
        for j, name in enumerate(self.contact_names):
            cols[f"{name}:normal_force"] = self.normal_force[:, j]
            cols[f"{name}:cone_margin"] = self.cone_margin[:, j]
            cols[f"{name}:utilisation"] = self.utilisation[:, j]
            cols[f"{name}:cop_x"] = self.cop[:, j, 0]
            cols[f"{name}:cop_y"] = self.cop[:, j, 1]
        return cols

    def to_json(self, path: str | Path | None = None) -> str:
        """The summary as JSON; written to ``path`` when given."""
        text = json.dumps(self.summary(), indent=2, default=float)
        if path is not None:
            Path(path).write_text(text)
        return text

    def to_csv(self, path: str | Path) -> None:
        """Per-sample columns as CSV (plus one column of violated inequalities per contact)."""
        cols = self.columns()
        header = list(cols) + [f"{n}:violated" for n in self.contact_names]
        with open(path, "w") as f:
            f.write(",".join(header) + "\n")
            for i in range(self.n_samples):
                values = [f"{cols[c][i]:.10g}" for c in cols]
                values += [f'"{self.violated_row[i, j]}"' for j in range(len(self.contact_names))]
                f.write(",".join(values) + "\n")

    def to_dataframe(self) -> Any:
        """Per-sample columns as a pandas DataFrame (needs pandas)."""
        from ..errors import require

        pd = require("pandas", "parquet", "DataFrames")
        df = pd.DataFrame(self.columns())
        for j, name in enumerate(self.contact_names):
            df[f"{name}:violated"] = self.violated_row[:, j]
        return df

    def to_html(self, path: str | Path | None = None) -> str:
        """The report as one self-contained HTML page that opens offline; written to
        ``path`` when given (:func:`wholebody.check.report_html.report_html`)."""
        from .report_html import report_html

        return report_html(self, path)

    def plot(self, path: str | Path | None = None) -> Any:
        """Residuals over time, friction utilisation and CoP in the soles (``plot`` extra)."""
        from .plots import plot_report

        return plot_report(self, path)


# --- the check ------------------------------------------------------------------------------


def _near(t: Array, events: Array, window: float) -> Array:
    """For each time in ``t``, is an event within ``window``? (sorted search, O(n log m))"""
    if not len(events):
        return np.zeros(len(t), dtype=bool)
    events = np.sort(events)
    i = (
        np.clip(np.searchsorted(events, t), 1, len(events) - 1)
        if len(events) > 1
        else np.zeros(len(t), int)
    )
    nearest = np.minimum(np.abs(t - events[i]), np.abs(t - events[np.maximum(i - 1, 0)]))
    return nearest <= window
