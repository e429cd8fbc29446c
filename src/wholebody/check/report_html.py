"""A log check as one self-contained HTML page (the ``html`` extra: Plotly).

The page opens offline in any browser: Plotly's script is embedded once, nothing is fetched.
From the top:

- the verdict and its evidence (the figures ``wholebody check --json`` prints, then every other
  scalar of :meth:`Report.summary` that the page does not show elsewhere, so new evidence
  fields appear without a change here);
- the diagnosis: the most likely cause with its fitted values and their standard errors, the
  runner-up, and every tested cause;
- linked time plots (one shared time axis, zoom one and all follow): the force and moment
  residual against the tolerance band, each contact's normal force, friction-cone
  utilisation and CoP margin, the contact schedule as a timeline; flagged samples and samples
  excused from the verdict are shaded, with their reasons on hover and in a table.

Numbers are formatted as in :meth:`Report.format_summary` (three significant digits); each
carries its exact value in a ``data-value`` attribute, and its summary key in ``data-key``.
Long logs are reduced to at most :data:`MAX_POINTS` points per curve, each point the worst
value of its span of samples (largest residual and utilisation, smallest CoP margin).

For many logs (:func:`many_html`) the page starts with the table of checked files, each row
linking to that log's section.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import OutputError, require
from ._report_cells import cell, esc, exact, flatten, lookup, new_fields
from ._report_figure import MAX_POINTS, Reducer, cop_margin, excused, figure, fmt

__all__ = ["report_html", "report_section", "many_html", "anchor", "MAX_POINTS", "cop_margin"]

Array = NDArray[np.float64]


_VERDICT_TEXT = {
    "consistent": "consistent",
    "consistent_except_unreliable": "consistent, except samples with unreliable accelerations",
    "inconsistent": "INCONSISTENT",
    "unchecked": "UNCHECKED (no sample could be checked)",
    "error": "ERROR (the log could not be read)",
}
_VERDICT_CLASS = {
    "consistent": "ok",
    "consistent_except_unreliable": "ok",
    "inconsistent": "bad",
    "error": "bad",
}

# The figures of a ``--json`` row, in its order: (row key, summary path, label, unit).
_ROW_FIGURES = (
    ("samples_in", "samples.in", "samples in", ""),
    ("checked", "samples.checked", "checked", ""),
    ("flagged", "samples.flagged", "flagged", ""),
    ("max_residual_force_N", "residual_force_N.max", "max residual force", "N"),
    ("max_residual_moment_Nm", "residual_moment_Nm.max", "max residual moment", "N m"),
    ("fraction_over_tolerance", "fraction_over_tolerance", "share over tolerance", ""),
    ("cone_violations", "", "cone violations (sample, contact)", ""),
)
# Summary keys the page shows in its own sections; every other one goes to the evidence table.
_SHOWN_ELSEWHERE = {
    "robot",
    "source",
    "consistent",
    "verdict",
    "samples",
    "fraction_over_tolerance",
    "diagnosis",
    "events",
    "flagged_reasons",
    "unreliable_samples",
    "contacts",
    "conventions",
}

# Summary keys folded under "more figures" (known detail); unknown keys stay in view.
_DETAIL = {
    "weight_N",
    "accelerations_estimated",
    "residual_force_N",
    "residual_moment_Nm",
    "residual_force_relative",
    "residual_moment_relative_m",
    "tolerance",
    "n_unreliable",
    "preset",
    "over_tolerance_near_contact_events",
    "n_events",
}

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222}
main{max-width:1400px;margin:0 auto;padding:12px 20px}
h1{font-size:20px;margin:4px 0} h2{font-size:16px;margin:14px 0 6px}
.banner{padding:10px 16px;border-radius:6px;margin:6px 0 10px;font-size:18px;font-weight:600}
.banner.ok{background:#e3f4e6;border:1px solid #59a869}
.banner.bad{background:#fbe4e4;border:1px solid #d05050}
.banner.other{background:#fff3d6;border:1px solid #d6a637}
.top{display:flex;gap:18px;flex-wrap:wrap;align-items:flex-start}
.top>section{flex:1 1 420px;min-width:0}
table{border-collapse:collapse;font-size:13px}
td,th{border-bottom:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.cause{background:#f4f6fb;border-left:4px solid #4a6fd0;padding:6px 10px;margin:4px 0}
.muted{color:#666;font-size:12px}
details{margin:6px 0}
td.ok{color:#2a7a3a} td.bad{color:#b00;font-weight:600} td.other{color:#a07000}
section.log{border-top:3px solid #ccc;margin-top:22px;padding-top:6px}
"""


# --- the sections ----------------------------------------------------------------------------


def _verdict_banner(verdict: str) -> str:
    cls = _VERDICT_CLASS.get(verdict, "other")
    text = _VERDICT_TEXT.get(verdict, verdict.replace("_", " ").upper())
    return (
        f'<div class="banner {cls}">verdict: '
        f'<span class="verdict" data-key="verdict" data-value=\'{esc(exact(verdict))}\'>'
        f"{esc(text)}</span></div>"
    )


def _evidence(summary: Mapping[str, Any]) -> str:
    rows = []
    for key, path, label, unit in _ROW_FIGURES:
        if path:
            try:
                value = lookup(summary, path)
            except (KeyError, TypeError):
                continue
            if (
                key == "fraction_over_tolerance"
                and summary.get("samples", {}).get("checked", 1) == 0
            ):
                value = None
            if isinstance(value, float) and not math.isfinite(value):
                value = None
        else:
            value = sum(int(c.get("violations", 0)) for c in summary.get("contacts", {}).values())
        rows.append(f"<tr><th>{esc(label)}</th>{cell(value, key)}<td>{esc(unit)}</td></tr>")
    for name, c in summary.get("contacts", {}).items():
        for field_, label in (("violations", "cone violations"), ("max_utilisation", "max util.")):
            if field_ in c:
                note = c.get("most_violated") if field_ == "violations" else ""
                rows.append(
                    f"<tr><th>{esc(name)}: {label}</th>"
                    f"{cell(c[field_], f'contacts.{name}.{field_}')}<td>"
                    + (esc(f"mostly {note}") if note else "")
                    + "</td></tr>"
                )
    # Every other scalar of the summary: fields this page does not know (new evidence) first,
    # in the table; the known detail (percentiles, tolerances, preset) folded below it.
    more: list[str] = []
    for top_key, value in summary.items():
        if top_key in _SHOWN_ELSEWHERE:
            continue
        for key, v in flatten(top_key, value):
            row = f"<tr><th>{esc(key.replace('_', ' '))}</th>{cell(v, key)}<td></td></tr>"
            (more if top_key in _DETAIL else rows).append(row)
    return (
        "<section><h2>Evidence</h2><table class='evidence'>"
        + "".join(rows)
        + "</table><details><summary>more figures</summary><table class='evidence'>"
        + "".join(more)
        + "</table></details></section>"
    )


def _param_text(f: Mapping[str, Any]) -> str:
    parts = []
    unc = f.get("uncertainty") or {}
    for name, value in (f.get("parameters") or {}).items():
        if isinstance(value, Mapping) or (
            isinstance(value, (list, tuple)) and len(value) > 8 and name != "hypotheses"
        ):
            continue
        text = f"{name} = {fmt(value)}"
        if name in unc and unc[name] is not None:
            text += f" ± {fmt(unc[name])}"
        parts.append(text)
    return "; ".join(parts)


def _diagnosis(summary: Mapping[str, Any]) -> str:
    findings = list(summary.get("diagnosis") or [])
    if not findings:
        return (
            "<section><h2>Diagnosis</h2><p class='muted'>No cause to diagnose: no sample is "
            "inconsistent.</p></section>"
        )
    best = findings[0]
    parts = [
        "<section><h2>Diagnosis</h2>",
        f"<div class='cause best' data-key='diagnosis.0.cause' "
        f"data-value='{esc(exact(best.get('cause')))}'><b>most likely:</b> "
        f"<span class='message'>{esc(best.get('message', ''))}</span> "
        f"(explains {fmt(100 * float(best.get('explained', 0.0)))} % of the residual)",
    ]
    params = _param_text(best)
    if params:
        parts.append(f"<div class='muted'>fitted: {esc(params)}</div>")
    for alternative in best.get("alternatives") or []:
        parts.append(f"<div>or, equally well: {esc(alternative)}</div>")
    parts.append("</div>")
    runner = next(
        (
            f
            for f in sorted(
                findings[1:], key=lambda f: (-round(float(f.get("explained", 0)), 2), f["cause"])
            )
            if f.get("cause") not in (best.get("cause"), "unexplained")
        ),
        None,
    )
    if runner is not None:
        parts.append(
            f"<div class='cause runner'><b>runner-up:</b> {esc(runner.get('message', ''))} "
            f"(explains {fmt(100 * float(runner.get('explained', 0.0)))} %)</div>"
        )
    rows = []
    for i, f in enumerate(findings):
        rows.append(
            f"<tr><td>{esc(str(f.get('cause', '')).replace('_', ' '))}</td>"
            f"{cell(100 * float(f.get('explained', 0.0)), f'diagnosis.{i}.explained_percent')}"
            f"<td>{esc(_param_text(f))}</td></tr>"
        )
    parts.append(
        f"<details><summary>every tested cause ({len(findings)})</summary><table>"
        "<tr><th>cause</th><th>explained [%]</th><th>fitted values (± one standard error)</th>"
        "</tr>" + "".join(rows) + "</table></details></section>"
    )
    return "".join(parts)


def _conventions(summary: Mapping[str, Any]) -> str:
    checks = summary.get("conventions") or []
    failed = [c for c in checks if not c.get("passed", True)]
    if not checks:
        return ""
    rows = "".join(
        f"<tr><td>{esc(c.get('check'))}</td><td>{'passed' if c.get('passed') else 'FAILED'}"
        f"</td><td>{esc(c.get('message', ''))}"
        + (f"; fix: {esc(c['fix'])}" if c.get("fix") else "")
        + "</td></tr>"
        for c in checks
    )
    return (
        f"<details{' open' if failed else ''}><summary>convention checks: {len(failed)} failed "
        f"of {len(checks)}</summary><table>{rows}</table></details>"
    )


def _reasons_table(report: Any) -> str:
    """Flagged and excused samples, grouped by reason."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, why in report.reasons.items():
        groups.setdefault(("flagged", why), []).append(int(i))
    for name, mask, why_map in excused(report):
        for i in np.flatnonzero(mask)[:100_000]:
            groups.setdefault((name, why_map.get(int(i), "")), []).append(int(i))
    if not groups:
        return ""
    t = report.time
    rows = []
    for (kind, why), idx in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:50]:
        rows.append(
            f"<tr><td>{esc(kind.replace('_', ' '))}</td><td class='num'>{len(idx)}</td>"
            f"<td>{idx[0]}..{idx[-1]} ({t[idx[0]]:.3f}..{t[idx[-1]]:.3f} s)</td>"
            f"<td>{esc(why)}</td></tr>"
        )
    return (
        "<details><summary>flagged and excused samples, by reason</summary><table>"
        "<tr><th>kind</th><th>samples</th><th>range</th><th>reason</th></tr>"
        + "".join(rows)
        + "</table></details>"
    )


def report_section(report: Any, anchor: str = "log") -> str:
    """One log's report as an HTML fragment (no page, no Plotly script).

    Parameters
    ----------
    report : Report
        A check's result (:func:`wholebody.check.analysis.check_trajectory`).
    anchor : str
        The section's ``id`` (unique on the page; the figure's is ``anchor + "-figure"``).

    Raises
    ------
    MissingDependencyError
        Plotly is not installed (``pip install 'wholebody[html]'``).
    """
    fig = figure(report)
    summary = json.loads(report.to_json())
    summary.update(new_fields(report, summary))
    import plotly.io as pio

    plot = pio.to_html(
        fig,
        full_html=False,
        include_plotlyjs=False,
        div_id=f"{anchor}-figure",
        config={"displaylogo": False, "responsive": True},
    )
    return (
        f"<section class='log' id='{esc(anchor)}'>"
        f"<h1>{esc(report.source)}</h1>"
        f"<div class='muted'>{esc(report.robot)}, weight {report.weight:.1f} N, "
        f"{report.n_samples} samples"
        + (", accelerations estimated from v" if report.accelerations_estimated else "")
        + "</div>"
        + _verdict_banner(report.verdict)
        + "<div class='top'>"
        + _diagnosis(summary)
        + _evidence(summary)
        + "</div>"
        + _conventions(summary)
        + _reasons_table(report)
        + "<h2>Over time</h2>"
        + (
            f"<div class='muted'>each point is the worst of {Reducer(report.n_samples).step} "
            "samples</div>"
            if Reducer(report.n_samples).step > 1
            else ""
        )
        + plot
        + "</section>"
    )


def _page(title: str, body: str) -> str:
    offline = require("plotly.offline", "html", "HTML reports")
    script = offline.get_plotlyjs()
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{esc(title)}</title><style>{_CSS}</style>"
        f"<script type='text/javascript'>{script}</script></head>"
        f"<body><main>{body}</main></body></html>\n"
    )


def _write(text: str, path: str | Path | None) -> None:
    if path is None:
        return
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc}") from exc


def report_html(report: Any, path: str | Path | None = None) -> str:
    """One log's check as a self-contained HTML page; written to ``path`` when given.

    Parameters
    ----------
    report : Report
    path : str or Path, optional

    Returns
    -------
    str
        The page (Plotly's script embedded: it opens offline).

    Raises
    ------
    MissingDependencyError
        Plotly is not installed (``pip install 'wholebody[html]'``).
    OutputError
        ``path`` cannot be written.
    """
    text = _page(f"wholebody check: {report.source}", report_section(report))
    _write(text, path)
    return text


def _files_table(rows: Sequence[Mapping[str, Any]], anchors: Sequence[str | None]) -> str:
    head = (
        "<tr><th>log</th><th>verdict</th>"
        + "".join(f"<th>{esc(label)}</th>" for _, _, label, _ in _ROW_FIGURES)
        + "<th>diagnosis or error</th></tr>"
    )
    body = []
    for i, (r, anchor) in enumerate(zip(rows, anchors)):
        name = esc(Path(str(r.get("path", ""))).name)
        link = f"<a href='#{esc(anchor)}'>{name}</a>" if anchor else name
        verdict = str(r.get("verdict"))
        cls = _VERDICT_CLASS.get(verdict, "other")
        cells = "".join(cell(r.get(key), f"rows.{i}.{key}") for key, _, _, _ in _ROW_FIGURES)
        said = r.get("error") or r.get("diagnosis") or ""
        body.append(
            f"<tr class='file' data-path='{esc(r.get('path', ''))}'><td>{link}</td>"
            f"<td class='{cls}' data-key='rows.{i}.verdict' "
            f"data-value='{esc(exact(verdict))}'>{esc(verdict)}</td>"
            f"{cells}<td>{esc(said)}</td></tr>"
        )
    count: dict[str, int] = {}
    for r in rows:
        count[str(r.get("verdict"))] = count.get(str(r.get("verdict")), 0) + 1
    said = ", ".join(f"{n} {v.replace('_', ' ')}" for v, n in sorted(count.items()))
    return (
        f"<h1>{len(rows)} logs checked</h1><div class='muted'>{esc(said)}</div>"
        f"<table class='files'>{head}{''.join(body)}</table>"
    )


def anchor(path: str | Path) -> str:
    """The HTML ``id`` of a log's section on a many-log page (from its path: stable across
    processes, so workers can render sections the page then links to)."""
    import hashlib

    return "log-" + hashlib.sha1(str(path).encode("utf-8", "replace")).hexdigest()[:12]


def many_html(
    rows: Sequence[Mapping[str, Any]],
    path: str | Path | None = None,
    *,
    sections: Sequence[str | None] | None = None,
) -> str:
    """Many logs' checks as one self-contained HTML page: the table of checked files first.

    With one row and its section, the page is that log's report alone (as
    :func:`report_html`).

    Parameters
    ----------
    rows : sequence of dict
        :func:`wholebody.check.many.check_many`'s rows (the keys of
        :data:`wholebody.check.many.ROW_KEYS`).
    path : str or Path, optional
        Written there when given.
    sections : sequence of str or None, optional
        Per row, its log's :func:`report_section` anchored ``anchor(row["path"])``
        (``check_many(..., html=True)`` renders them), or None (a log that could not be
        read); each table row links to its section.

    Returns
    -------
    str

    Raises
    ------
    MissingDependencyError
        Plotly is not installed (``pip install 'wholebody[html]'``).
    OutputError
        ``path`` cannot be written.
    """
    sections = list(sections) if sections is not None else [None] * len(rows)
    if len(rows) == 1 and sections[0]:
        text = _page(f"wholebody check: {rows[0].get('path')}", str(sections[0]))
        _write(text, path)
        return text
    anchors = [anchor(str(r.get("path"))) if s else None for r, s in zip(rows, sections)]
    body = _files_table(rows, anchors) + "".join(s for s in sections if s)
    text = _page(f"wholebody check: {len(rows)} logs", body)
    _write(text, path)
    return text
