"""The time plots of the HTML report (:mod:`wholebody.check.report_html`): one Plotly figure of
six linked rows over a shared time axis, with flagged and excused samples shaded."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import require

__all__ = ["MAX_POINTS", "Reducer", "cop_margin", "excused", "figure", "fmt", "merged", "spans"]

Array = NDArray[np.float64]

#: Points per curve at most; longer logs are reduced span by span to the worst value.
MAX_POINTS = 4000
# Utilisation drawn above this is drawn at it, marked, with the true value on hover.
_UTILISATION_TOP = 2.0
# Exact zeros cannot be drawn on a log scale.
_LOG_FLOOR = 1e-17
# Shaded spans per kind at most; closer spans are merged beyond that.
_MAX_SPANS = 300


def fmt(value: Any) -> str:
    """A number as the text report writes it (three significant digits), else its text."""
    if value is None:
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.3g}"
    if isinstance(value, (list, tuple)) and all(
        isinstance(v, (int, float, np.number)) for v in value
    ):
        shown = ", ".join(fmt(v) for v in list(value)[:8])
        return f"[{shown}{', ...' if len(value) > 8 else ''}]"
    return str(value)


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


def as_list(x: Array) -> Array:
    """Finite values kept, the rest NaN (a gap in the curve); an array, which Plotly takes
    without checking each value (lists of 4000 floats take it seconds)."""
    out = np.array(x, dtype=float)
    out[~np.isfinite(out)] = np.nan
    return out


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


def _span_reason(reasons: Mapping[int, str], a: int, b: int, default: str) -> str:
    said: dict[str, int] = {}
    for i in range(a, min(b, a + 2000) + 1):
        if i in reasons:
            said[reasons[i]] = said.get(reasons[i], 0) + 1
    if not said:
        return default
    common = sorted(said.items(), key=lambda kv: -kv[1])
    text = common[0][0]
    return text + (f" (and {len(common) - 1} other reasons)" if len(common) > 1 else "")


# --- the figure ------------------------------------------------------------------------------


def figure(report: Any) -> Any:
    require("plotly", "html", "HTML reports")
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    names = list(report.contact_names)
    k = len(names)
    t_all = np.asarray(report.time, dtype=float)
    red = Reducer(len(t_all))
    t = as_list(red.first(t_all))
    titles = (
        "residual force / m g (tolerance dashed)",
        "residual moment / m g [m] (tolerance dashed)",
        "normal force [N]",
        f"friction utilisation |f_t| / (mu f_n) (above {_UTILISATION_TOP:g}: drawn at "
        f"{_UTILISATION_TOP:g}, marked)",
        "CoP margin inside the sole [m] (negative: outside)",
        "contact schedule (normal force above 2 % of m g)",
    )
    fig = make_subplots(
        rows=6,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.035,
        subplot_titles=titles,
        row_heights=[0.2, 0.2, 0.16, 0.16, 0.16, 0.12],
    )
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
    weight = float(report.weight)
    for row, values, tol, label in (
        (1, report.force_norm, report.force_tolerance, "|force| / m g"),
        (2, report.moment_norm, report.moment_tolerance, "|moment| / m g [m]"),
    ):
        y = red.max(np.maximum(np.asarray(values) / weight, _LOG_FLOOR))
        fig.add_trace(
            go.Scattergl(x=t, y=as_list(y), name=label, mode="lines", line={"color": "#333"}),
            row=row,
            col=1,
        )
        fig.add_hline(y=tol, line={"dash": "dash", "color": "#c00", "width": 1}, row=row, col=1)
        fig.update_yaxes(type="log", row=row, col=1, exponentformat="power")
    util = np.asarray(report.utilisation, dtype=float)
    margin = cop_margin(report)
    normal = np.asarray(report.normal_force, dtype=float)
    closed = np.asarray(report.contact_closed, dtype=bool)
    finite_util = util[np.isfinite(util)]
    over_top = np.isinf(util) | (util > _UTILISATION_TOP)
    # The axis always reaches the largest value drawn (clipped values at the top).
    top = (
        _UTILISATION_TOP
        if over_top.any()
        else (float(finite_util.max()) if finite_util.size else 1.0)
    )
    for j, name in enumerate(names):
        color = palette[j % len(palette)]
        common = {"legendgroup": name, "line": {"color": color}}
        fig.add_trace(
            go.Scattergl(
                x=t, y=as_list(red.first(normal[:, j])), name=name, mode="lines", **common
            ),
            row=3,
            col=1,
        )
        u = red.max(np.where(np.isnan(util[:, j]), np.nan, util[:, j]))
        fig.add_trace(
            go.Scattergl(
                x=t,
                y=as_list(np.minimum(u, _UTILISATION_TOP)),
                customdata=[("inf" if v == math.inf else fmt(v)) for v in u],
                hovertemplate="%{customdata}",
                name=name,
                mode="lines",
                showlegend=False,
                **common,
            ),
            row=4,
            col=1,
        )
        clipped = red.max(over_top[:, j].astype(float)) > 0
        if clipped.any():
            fig.add_trace(
                go.Scattergl(
                    x=t[clipped],
                    y=[_UTILISATION_TOP] * int(clipped.sum()),
                    name=f"{name}: above {_UTILISATION_TOP:g} (inf: pulling)",
                    mode="markers",
                    marker={"symbol": "triangle-up", "color": color, "size": 6},
                    legendgroup=name,
                ),
                row=4,
                col=1,
            )
        if np.isfinite(margin[:, j]).any():
            fig.add_trace(
                go.Scattergl(
                    x=t,
                    y=as_list(red.min(margin[:, j])),
                    name=name,
                    mode="lines",
                    showlegend=False,
                    **common,
                ),
                row=5,
                col=1,
            )
        on = red.max(closed[:, j].astype(float)) > 0
        fig.add_trace(
            go.Scattergl(
                x=t,
                y=np.where(on, float(j), np.nan),
                name=name,
                mode="lines",
                line={"color": color, "width": 10},
                showlegend=False,
                legendgroup=name,
                hoverinfo="x+name",
            ),
            row=6,
            col=1,
        )
    fig.add_hline(y=1.0, line={"dash": "dash", "color": "#c00", "width": 1}, row=4, col=1)
    fig.add_hline(y=0.0, line={"dash": "dash", "color": "#c00", "width": 1}, row=5, col=1)
    fig.update_yaxes(range=[0, max(1.1, 1.08 * top)], row=4, col=1)
    fig.update_yaxes(tickvals=list(range(k)), ticktext=names, range=[-0.6, k - 0.4], row=6, col=1)
    fig.update_xaxes(title_text="time [s]", row=6, col=1)
    _shade(fig, go, report, t_all)
    fig.update_layout(
        height=1150,
        margin={"l": 70, "r": 20, "t": 70, "b": 40},
        hovermode="x unified",
        legend={"orientation": "h", "y": 1.025, "yanchor": "bottom", "x": 0},
        template="plotly_white",
    )
    return fig


def _shade(fig: Any, go: Any, report: Any, t: Array) -> None:
    """Shade flagged samples (grey), over-tolerance (red), and excused samples (amber), with
    their reasons on hover (an invisible marker at the top of the residual plot)."""
    n = len(t)
    if not n:
        return
    finite = np.isfinite(t)
    if not finite.any():
        return
    dt = float(np.nanmedian(np.diff(t[finite]))) if finite.sum() > 1 else 0.0
    dt = dt if math.isfinite(dt) else 0.0
    kinds: list[tuple[str, NDArray[np.bool_], Mapping[int, str], str, str]] = [
        ("flagged", np.asarray(report.flagged, bool), report.reasons, "#888", "flagged"),
        (
            "over tolerance",
            np.asarray(report.inconsistent_samples, bool),
            {},
            "#d62728",
            "over tolerance",
        ),
    ]
    for name, mask, why in excused(report):
        kinds.append((name, mask, why, "#e0a000", f"{name.replace('_', ' ')}"))
    for label, mask, reasons, color, default in kinds:
        opacity = 0.08 if label == "over tolerance" else 0.2
        runs = merged(spans(mask & finite), _MAX_SPANS)
        if not runs:
            continue
        xs, texts = [], []
        for a, b in runs:
            x0, x1 = float(t[a]) - dt / 2, float(t[b]) + dt / 2
            fig.add_shape(
                type="rect",
                xref="x",
                yref="paper",
                x0=x0,
                x1=x1,
                y0=0,
                y1=1,
                fillcolor=color,
                opacity=opacity,
                line={"width": 0},
                layer="below",
            )
            xs.append((x0 + x1) / 2)
            what = _span_reason(reasons, a, b, default)
            texts.append(f"{label}: samples {a}..{b} ({t[a]:.3f}..{t[b]:.3f} s): {what}")
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=[1.0] * len(xs),
                yaxis="y",
                mode="markers",
                marker={"color": color, "size": 7, "symbol": "square"},
                name=f"{label} ({int(mask.sum())} samples, shaded)",
                hovertext=texts,
                hoverinfo="text",
            ),
            row=1,
            col=1,
        )
