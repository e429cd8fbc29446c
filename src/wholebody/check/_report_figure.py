"""The time plots of the HTML report (:mod:`wholebody.check.report_html`) as data for the
page's script (``report_assets/report.js``, drawn with uPlot): six linked plots (a seventh,
last, with the joint rows of a log with torques) over a shared time axis, with flagged and
excused samples shaded and explained on hover.

:func:`figure` gives a JSON-ready dict::

    {"t": [...], "step": int,
     "plots": [{"title": str, "log": bool, "lines": [y, ...], "range": [lo, hi] | None,
                "ticks": [name, ...] | None, "height": px,
                "series": [{"label": str, "color": str, "y": [...], "width": px,
                            "points": bool, "exact": [...] | None}, ...]}, ...],
     "shades": [{"label": str, "color": str, "alpha": float, "count": int,
                 "spans": [[t0, t1, text], ...]}, ...]}

``y`` holds None where there is nothing to draw; ``exact`` (utilisation only, when clipped)
the value shown on hover where the curve is drawn at the top of its axis (None: no normal
force, so no utilisation).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["MAX_POINTS", "Reducer", "cop_margin", "excused", "figure", "figure_json", "spans"]

Array = NDArray[np.float64]

#: Points per curve at most; longer logs are reduced span by span to the worst value.
MAX_POINTS = 4000
# Utilisation drawn above this is drawn at it, marked, with the true value on hover.
_UTILISATION_TOP = 2.0
# Exact zeros cannot be drawn on a log scale.
_LOG_FLOOR = 1e-17
# Shaded spans per kind at most; closer spans are merged beyond that.
_MAX_SPANS = 300
# Significant digits of the plotted values (the hover shows three).
_DIGITS = 4
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")


# --- per-sample series -----------------------------------------------------------------------


def cop_margin(report: Any) -> Array:
    """(N, k) distance of each surface contact's CoP inside its sole rectangle [m].

    ``min(half_length - |x - cx|, half_width - |y - cy|)`` in the contact frame: positive
    inside, negative outside, NaN for point contacts and samples without a CoP.
    """
    k = len(report.contact_names)
    out = np.full((report.n_samples, k), np.nan)
    for j, name in enumerate(report.contact_names):
        if name not in report.sole_half_sizes:
            continue
        X, Y = report.sole_half_sizes[name]
        cx, cy = report.sole_centers.get(name, (0.0, 0.0))
        cop = report.cop[:, j]
        with np.errstate(invalid="ignore"):
            out[:, j] = np.minimum(X - np.abs(cop[:, 0] - cx), Y - np.abs(cop[:, 1] - cy))
    return out


def spans(mask: NDArray[np.bool_]) -> list[tuple[int, int]]:
    """Runs of True as (first, last) sample indices."""
    m = np.concatenate([[False], np.asarray(mask, dtype=bool), [False]])
    edges = np.flatnonzero(m[1:] != m[:-1])
    return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2])]


def merged(spans: list[tuple[int, int]], limit: int) -> list[tuple[int, int]]:
    """At most ``limit`` spans: the closest neighbours merged first."""
    spans = list(spans)
    while len(spans) > limit:
        gaps = np.array([spans[i + 1][0] - spans[i][1] for i in range(len(spans) - 1)])
        cut = np.sort(gaps)[len(spans) - limit - 1]
        out = [spans[0]]
        for s in spans[1:]:
            if s[0] - out[-1][1] <= cut:
                out[-1] = (out[-1][0], s[1])
            else:
                out.append(s)
        spans = out
    return spans


class Reducer:
    """Spans of samples for curves of at most :data:`MAX_POINTS` points."""

    def __init__(self, n: int, limit: int = MAX_POINTS) -> None:
        self.step = max(1, math.ceil(n / limit))
        self.starts = np.arange(0, n, self.step)

    def _apply(self, x: Array, how: str) -> Array:
        if self.step == 1:
            return np.asarray(x, dtype=float)
        if how == "first":
            return np.asarray(x, dtype=float)[self.starts]
        # fmax / fmin skip NaN: a span is NaN only when all of it is.
        fn = np.fmax if how == "max" else np.fmin
        return np.asarray(fn.reduceat(np.asarray(x, dtype=float), self.starts), dtype=float)

    def max(self, x: Array) -> Array:
        return self._apply(x, "max")

    def min(self, x: Array) -> Array:
        return self._apply(x, "min")

    def first(self, x: Array) -> Array:
        return self._apply(x, "first")


def excused(report: Any) -> list[tuple[str, NDArray[np.bool_], dict[int, str]]]:
    """Per-sample masks to shade beside ``flagged``: every other (N,) bool field of the report
    (``unreliable``, waived samples, ...), with its reasons when the report holds them."""
    from dataclasses import fields, is_dataclass

    out = []
    names = [f.name for f in fields(report)] if is_dataclass(report) else []
    for name in names:
        if name in ("flagged",):
            continue
        value = getattr(report, name, None)
        if (
            isinstance(value, np.ndarray)
            and value.dtype == bool
            and value.shape == (report.n_samples,)
            and value.any()
        ):
            why: dict[int, str] = {}
            for candidate in (f"{name}_reasons", f"{name.rstrip('d')}_reasons"):
                got = getattr(report, candidate, None)
                if isinstance(got, Mapping):
                    why = {int(k): str(v) for k, v in got.items()}
                    break
            out.append((name, value, why))
    return out


def _span_reason(reasons: Mapping[int, str], a: int, b: int) -> str:
    """The most common reason of samples ``a`` to ``b`` ("" when none is held)."""
    said: dict[str, int] = {}
    for i in range(a, min(b, a + 2000) + 1):
        if i in reasons:
            said[reasons[i]] = said.get(reasons[i], 0) + 1
    if not said:
        return ""
    common = sorted(said.items(), key=lambda kv: -kv[1])
    text = common[0][0]
    return text + (f" (and {len(common) - 1} other reasons)" if len(common) > 1 else "")


# --- the figure ------------------------------------------------------------------------------


def _series(label: str, y: Array, color: str, **extra: Any) -> dict[str, Any]:
    return {"label": label, "color": color, "y": y, **extra}


def _residual_plots(report: Any, red: Reducer) -> list[dict[str, Any]]:
    weight = float(report.weight)
    return [
        {
            "title": f"{title} / m g{unit}, log scale (tolerance dashed)",
            "log": True,
            "lines": [float(tol)],
            "series": [
                _series(
                    f"|{title.split()[1]}| / m g",
                    red.max(np.maximum(np.asarray(values) / weight, _LOG_FLOOR)),
                    "#333",
                )
            ],
        }
        for title, unit, values, tol in (
            ("residual force", "", report.force_norm, report.force_tolerance),
            ("residual moment", " in m", report.moment_norm, report.moment_tolerance),
        )
    ]


def _contact_plots(report: Any, red: Reducer) -> list[dict[str, Any]]:
    """Normal force, utilisation (clipped at :data:`_UTILISATION_TOP`, marked), CoP margin
    and the contact schedule, one curve per contact."""
    names = list(report.contact_names)
    util = np.asarray(report.utilisation, dtype=float)
    margin = cop_margin(report)
    normal = np.asarray(report.normal_force, dtype=float)
    closed = np.asarray(report.contact_closed, dtype=bool)
    over_top = np.isinf(util) | (util > _UTILISATION_TOP)
    finite = util[np.isfinite(util)]
    # The axis always reaches the largest value drawn (clipped values at the top).
    top = _UTILISATION_TOP if over_top.any() else (float(finite.max()) if finite.size else 1.0)
    force, friction, cop, schedule = [], [], [], []
    for j, name in enumerate(names):
        color = _PALETTE[j % len(_PALETTE)]
        force.append(_series(name, red.first(normal[:, j]), color))
        u = red.max(util[:, j])
        clipped = red.max(over_top[:, j].astype(float)) > 0
        exact = np.where(np.isinf(u), np.nan, u) if clipped.any() else None
        friction.append(_series(name, np.minimum(u, _UTILISATION_TOP), color, exact=exact))
        if clipped.any():
            friction.append(
                _series(
                    f"{name} above {_UTILISATION_TOP:g}",
                    np.where(clipped, _UTILISATION_TOP, np.nan),
                    color,
                    points=True,
                    exact=exact,
                )
            )
        if np.isfinite(margin[:, j]).any():
            cop.append(_series(name, red.min(margin[:, j]), color))
        on = red.max(closed[:, j].astype(float)) > 0
        schedule.append(_series(name, np.where(on, float(j), np.nan), color, width=8))
    plots: list[dict[str, Any]] = [
        {"title": "normal force in N", "series": force},
        {
            "title": f"friction utilisation |f_t| / (mu f_n) (dashed: the cone's edge; above "
            f"{_UTILISATION_TOP:g}: drawn at {_UTILISATION_TOP:g}, marked; without normal force: "
            "n/a, not applicable)",
            "lines": [1.0],
            "range": [0.0, max(1.1, 1.08 * top)],
            "series": friction,
        },
        {
            "title": "CoP margin inside the sole in m (negative: outside)",
            "lines": [0.0],
            "series": cop,
        },
        {
            "title": "contact schedule (normal force above 2 % of m g)",
            "range": [-0.6, len(names) - 0.4],
            "ticks": names,
            "height": 80 + 30 * len(names),
            "series": schedule,
        },
    ]
    return [p for p in plots if p["series"]]


def _joint_plots(report: Any, red: Reducer) -> list[dict[str, Any]]:
    """The joint rows of the (at most) three worst joints, over their tolerances."""
    names = list(report.joint_names)
    if not names:
        return []
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.abs(np.asarray(report.joint_residual, dtype=float)) / report.joint_tolerance
    worst = np.argsort([-np.nanmax(c, initial=0.0) for c in ratio.T])[:3]
    series = [
        _series(
            names[j],
            red.max(np.maximum(ratio[:, j], _LOG_FLOOR)),
            _PALETTE[c % len(_PALETTE)],
        )
        for c, j in enumerate(worst)
        if np.isfinite(ratio[:, j]).any()
    ]
    title = "worst joint rows |r_j| / tolerance_j, log scale (tolerance dashed)"
    return [{"title": title, "log": True, "lines": [1.0], "series": series}] if series else []


def figure(report: Any) -> dict[str, Any]:
    """The plots of ``report`` as data (see the module docstring); arrays as numpy arrays."""
    t_all = np.asarray(report.time, dtype=float)
    red = Reducer(len(t_all))
    return {
        "t": red.first(t_all),
        "step": red.step,
        "plots": _residual_plots(report, red)
        + _contact_plots(report, red)
        + _joint_plots(report, red),
        "shades": _shades(report, t_all),
    }


def _shades(report: Any, t: Array) -> list[dict[str, Any]]:
    """Flagged samples (grey), over tolerance (red), excused samples (amber): their runs of
    samples as time spans, with their reasons."""
    finite = np.isfinite(t)
    if not finite.any():
        return []
    dt = float(np.nanmedian(np.diff(t[finite]))) if finite.sum() > 1 else 0.0
    dt = dt if math.isfinite(dt) else 0.0
    kinds: list[tuple[str, NDArray[np.bool_], Mapping[int, str], str]] = [
        ("flagged", np.asarray(report.flagged, bool), report.reasons, "#888"),
        ("over tolerance", np.asarray(report.inconsistent_samples, bool), {}, "#d62728"),
    ]
    kinds += [(name.replace("_", " "), mask, why, "#e0a000") for name, mask, why in excused(report)]
    out = []
    for label, mask, reasons, color in kinds:
        runs = merged(spans(mask & finite), _MAX_SPANS)
        if not runs:
            continue
        out.append(
            {
                "label": label,
                "color": color,
                "alpha": 0.08 if label == "over tolerance" else 0.2,
                "count": int(mask.sum()),
                "spans": [
                    [
                        float(t[a]) - dt / 2,
                        float(t[b]) + dt / 2,
                        f"{label}: samples {a} to {b} ({t[a]:.3f} to {t[b]:.3f} s)"
                        + (f": {why}" if (why := _span_reason(reasons, a, b)) else ""),
                    ]
                    for a, b in runs
                ],
            }
        )
    return out


def _numbers(x: Array, digits: int | None) -> str:
    """A JSON list: ``digits`` significant digits (all, when None), null where not finite."""
    form = "{!r}" if digits is None else f"{{:.{digits}g}}"
    return (
        "["
        + ",".join(form.format(float(v)) if math.isfinite(v) else "null" for v in x.tolist())
        + "]"
    )


def figure_json(fig: Mapping[str, Any]) -> str:
    """:func:`figure`'s dict as compact JSON, safe inside ``<script>``: times exact, values at
    :data:`_DIGITS` significant digits."""

    def encode(value: Any, key: str = "") -> str:
        if isinstance(value, np.ndarray):
            return _numbers(value, None if key == "t" else _DIGITS)
        if isinstance(value, Mapping):
            return "{" + ",".join(f"{json.dumps(k)}:{encode(v, k)}" for k, v in value.items()) + "}"
        if isinstance(value, (list, tuple)):
            return "[" + ",".join(encode(v) for v in value) + "]"
        return json.dumps(value, allow_nan=False)

    return encode(fig).replace("</", "<\\/")
