"""A log check as one self-contained HTML page that opens offline, at once.

The words come first and paint before any plotting code loads; the plotting library (uPlot,
MIT, vendored in ``report_assets/``, about 50 kB) and the page's script come last, and draw
the plots once the page has painted. Nothing is fetched. From the top:

- the verdict with its one-line reason;
- the diagnosis: the most likely cause in words, the runner-up (the one the terminal names),
  and every tested cause sorted by the evidence criterion, with its fitted values in words;
- the evidence: the figures ``wholebody check --json`` prints, each contact's cone violations
  and friction utilisation, the evidence behind the verdict, then every other figure of
  :meth:`Report.summary` (new evidence fields appear without a change here), names in
  words, with units, empty fields left out;
- linked time plots (one shared time axis: zoom one and all follow): the force and moment
  residual against the tolerance, each contact's normal force, friction utilisation and CoP
  margin, the contact schedule; flagged samples and samples excused from the verdict are
  shaded, with their reasons on hover and in a table.

Numbers have three significant digits; each figure carries its exact value in a
``data-value`` attribute, and its summary key in ``data-key``. Long logs are reduced to at
most :data:`MAX_POINTS` points per curve, each point the worst value of its span of samples
(largest residual and utilisation, smallest CoP margin).

For many logs (:func:`many_html`) the page starts with the table of checked files, each row
linking to that log's section.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import OutputError
from ._report_cells import cell, empty, esc, exact, flatten, label, new_fields, number, words
from ._report_figure import MAX_POINTS, Reducer, cop_margin, excused, figure, figure_json
from .evidence import EVIDENCE_LINES

__all__ = ["report_html", "report_section", "many_html", "anchor", "MAX_POINTS", "cop_margin"]

_ASSETS = Path(__file__).with_name("report_assets")

_VERDICT_TEXT = {
    "consistent": "consistent",
    "consistent_except_unreliable": "consistent, except samples with unreliable accelerations",
    "inconsistent": "INCONSISTENT",
    "inconclusive": "INCONCLUSIVE",
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
    ("samples_in", "samples.in", "samples in the log", ""),
    ("checked", "samples.checked", "samples checked", ""),
    ("flagged", "samples.flagged", "samples flagged (not checked)", ""),
    ("max_residual_force_N", "residual_force_N.max", "largest residual force", "N"),
    ("max_residual_moment_Nm", "residual_moment_Nm.max", "largest residual moment", "N m"),
    ("fraction_over_tolerance", "fraction_over_tolerance", "checked samples over tolerance", "%"),
    ("cone_violations", "", "cone violations (samples times contacts)", ""),
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
    "notes",
    "events",
    "flagged_reasons",
    "unreliable_samples",
    "contacts",
    "conventions",
    "joint_rows",
    "failed",
}
# Evidence the page shows elsewhere: the samples (first rows), why inconclusive (the banner).
_EVIDENCE_ELSEWHERE = {"evidence.n_samples", "evidence.n_checked", "evidence.inconclusive_because"}

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
main{max-width:1400px;margin:0 auto;padding:12px 12px}
h1{font-size:20px;margin:4px 0;overflow-wrap:anywhere} h2{font-size:16px;margin:14px 0 6px}
h3{font-size:13px;font-weight:600;margin:10px 0 2px}
.banner{padding:10px 16px;border-radius:6px;margin:6px 0 10px;font-size:18px;font-weight:600}
.banner .reason{font-size:14px;font-weight:400;margin-top:2px}
.banner.ok{background:#e3f4e6;border:1px solid #59a869}
.banner.bad{background:#fbe4e4;border:1px solid #d05050}
.banner.other{background:#fff3d6;border:1px solid #d6a637}
.top{display:flex;gap:18px;flex-wrap:wrap;align-items:flex-start}
.top>section{flex:1 1 420px;min-width:0}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:13px}
td,th{border-bottom:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top;
overflow-wrap:break-word}
td.num,.evidence td{text-align:right;font-variant-numeric:tabular-nums}
.evidence th{min-width:12em}
.cause{background:#f4f6fb;border-left:4px solid #4a6fd0;padding:6px 10px;margin:4px 0;
overflow-wrap:anywhere}
.muted{color:#666;font-size:12px}
details{margin:6px 0}
td.ok{color:#2a7a3a} td.bad{color:#b00;font-weight:600} td.other{color:#a07000}
section.log{border-top:3px solid #ccc;margin-top:22px;padding-top:6px}
.plots{min-height:40px} .plot .uplot{width:100%} .u-legend{font-size:12px}
.u-legend .u-value{display:inline-block;min-width:5.5em;text-align:left;white-space:nowrap}
.tip{position:absolute;display:none;z-index:10;max-width:min(360px,90%);white-space:pre-line;
background:#fff;border:1px solid #999;padding:2px 6px;font-size:12px;pointer-events:none}
"""


# --- the verdict and its reason --------------------------------------------------------------


def _reason(report: Any, summary: Mapping[str, Any]) -> str:
    """The verdict's reason, in one line."""
    verdict = summary["verdict"]
    checked, flagged = report.n_checked, int(np.asarray(report.flagged).sum())
    if verdict == "unchecked":
        common = max(
            set(report.reasons.values()), key=list(report.reasons.values()).count, default=""
        )
        return f"every one of the {report.n_samples} samples is flagged" + (
            f" (mostly: {words(common)})" if common else ""
        )
    if verdict == "inconclusive":
        return "; ".join(words(w) for w in report.inconclusive_because())
    not_checked = f"; {flagged} flagged samples not checked" if flagged else ""
    if verdict == "consistent":
        return (
            f"all {checked} checked samples within tolerance ({100 * report.force_tolerance:g} % "
            f"of m g, {100 * report.moment_tolerance:g} cm) and inside their friction cones"
            + (", their joint rows within each joint's tolerance" if report.joint_names else "")
            + not_checked
        )
    if verdict == "consistent_except_unreliable":
        t = report.time[report.unreliable]
        return (
            f"within tolerance, except {int(report.unreliable.sum())} samples ({t.min():.3f} to "
            f"{t.max():.3f} s) whose differentiated accelerations are unreliable (impacts, the "
            "log's ends)" + not_checked
        )
    said = [
        f"convention check '{c['check'].replace('_', ' ')}' failed"
        for c in summary.get("conventions") or []
        if not c.get("passed", True)
    ]
    if report.evidence.n_implausible:
        said.append(f"{report.evidence.n_implausible} samples beyond physical magnitudes")
    over = int((report.over_tolerance & ~report.unreliable).sum())
    if over:
        said.append(
            f"{over} of {checked} checked samples over tolerance (residual force up to "
            f"{number(summary['residual_force_N']['max'])} N, "
            f"{number(100 * summary['residual_force_relative']['max'])} % of m g)"
        )
    if report.evidence.systematic_windows:
        said.append(
            f"a systematic error in the residual averaged over "
            f"{report.evidence.systematic_windows} windows ({int(report.systematic.sum())} samples)"
        )
    said += _joint_and_placement_reasons(summary)
    for name, c in summary.get("contacts", {}).items():
        if c.get("violations"):
            said.append(
                f"'{name}' outside its friction cone in {c['violations']} samples"
                + (f", mostly {c['most_violated']}" if c.get("most_violated") else "")
            )
    ranked = [f for f in report.diagnosis if f.cause not in EVIDENCE_LINES]
    if ranked:
        said.append(f"most likely: {words(ranked[0].message)}")
    return "; ".join(said)


def _joint_and_placement_reasons(summary: Mapping[str, Any]) -> list[str]:
    """The joint rows over tolerance and the misplaced contacts, in words."""
    said = []
    rows = summary.get("joint_rows") or {}
    if rows.get("samples_over"):
        worst = [w for w in rows["worst"] if w["samples_over"]]
        said.append(
            f"joint rows over tolerance in {rows['samples_over']} samples ("
            + ", ".join(
                f"{w['joint']} up to {number(w['max_abs_residual'])} N m, "
                f"{number(w['ratio'])} x its tolerance"
                for w in worst[:3]
            )
            + ")"
        )
    placed = summary.get("contact_placement") or {}
    for name, c in placed.get("contacts", {}).items():
        if c.get("named"):
            said.append(f"'{name}' loaded while off the ground or tilted")
    return said


def _banner(report: Any, summary: Mapping[str, Any]) -> str:
    verdict = str(summary["verdict"])
    cls = _VERDICT_CLASS.get(verdict, "other")
    shown = _VERDICT_TEXT.get(verdict, verdict.replace("_", " ").upper())
    return (
        f'<div class="banner {cls}" elementtiming="verdict">verdict: '
        f'<span class="verdict" data-key="verdict" data-value=\'{esc(exact(verdict))}\'>'
        f"{esc(shown)}</span><div class='reason'>{esc(_reason(report, summary))}</div></div>"
    )


# --- the evidence ----------------------------------------------------------------------------


def _table(cls: str, rows: str) -> str:
    """A table in a box of its own width: wider than the page, it scrolls inside the box."""
    return f"<div class='scroll'><table class='{cls}'>{rows}</table></div>"


def _row(name: str, value: Any, key: str, unit: str = "", shown: str | None = None) -> str:
    return f"<tr><th>{esc(name)}</th>{cell(value, key, unit, shown)}</tr>"


def _contact_rows(report: Any, summary: Mapping[str, Any]) -> list[str]:
    """Per contact: cone violations (and the inequality most violated), the largest friction
    utilisation where the contact carries a normal force (not applicable elsewhere)."""
    rows = []
    util = np.asarray(report.utilisation, dtype=float)
    for j, (name, c) in enumerate(summary.get("contacts", {}).items()):
        key = f"contacts.{name}"
        said = str(c.get("violations", 0)) + (
            f", mostly {c['most_violated']}" if c.get("most_violated") else ""
        )
        rows.append(
            _row(f"{name}: cone violations", c.get("violations"), key + ".violations", shown=said)
        )
        finite = util[np.isfinite(util[:, j]), j]
        unloaded = int(np.isinf(util[:, j]).sum())
        if finite.size:
            said = number(finite.max()) + (
                f" (not applicable in {unloaded} samples without normal force)" if unloaded else ""
            )
        elif unloaded:
            said = "not applicable (no normal force)"
        else:
            continue
        rows.append(
            _row(
                f"{name}: largest friction utilisation",
                c.get("max_utilisation"),
                key + ".max_utilisation",
                shown=said,
            )
        )
    return rows


def _evidence(report: Any, summary: Mapping[str, Any]) -> str:
    rows = []
    for key, path, name, unit in _ROW_FIGURES:
        if path:
            value: Any = summary
            for part in path.split("."):
                value = value.get(part) if isinstance(value, Mapping) else None
            if key == "fraction_over_tolerance" and not report.n_checked:
                value = None
        else:
            value = sum(int(c.get("violations", 0)) for c in summary.get("contacts", {}).values())
        if not empty(value):
            rows.append(_row(name, value, key, unit))
    rows += _contact_rows(report, summary)
    # Every other figure of the summary: fields this page does not know (new evidence) in the
    # table; the known detail (percentiles, tolerances, preset) folded below it.
    more: list[str] = []
    for top_key, value in summary.items():
        if top_key in _SHOWN_ELSEWHERE:
            continue
        for key, v in flatten(top_key, value):
            if empty(v) or key in _EVIDENCE_ELSEWHERE:
                continue
            name, unit = label(key)
            (more if top_key in _DETAIL else rows).append(_row(name, v, key, unit))
    return (
        "<section><h2>Evidence</h2>"
        + _table("evidence", "".join(rows))
        + "<details><summary>more figures</summary>"
        + _table("evidence", "".join(more))
        + "</details></section>"
    )


# --- the diagnosis ---------------------------------------------------------------------------


def _explains(f: Any, what: str = "of the residual") -> str:
    return f"explains {number(100 * float(f.explained))} % {what}"


def _diagnosis(report: Any) -> str:
    """The most likely cause, the runner-up the terminal names, every tested cause ranked by
    the evidence criterion (lower is better), the cone and placement findings and the
    notes."""
    ranked = [f for f in report.diagnosis if f.cause not in EVIDENCE_LINES]
    cones = [f for f in report.diagnosis if f.cause in EVIDENCE_LINES]
    parts = ["<section><h2>Diagnosis</h2>"]
    if not ranked:
        parts.append("<p class='muted'>No cause to diagnose: no sample is inconsistent.</p>")
    else:
        best = ranked[0]
        what = (
            "of the samples that failed the check"
            if best.cause.startswith("convention:")
            else "of the residual"
        )
        parts.append(
            f"<div class='cause best' data-key='diagnosis.0.cause' "
            f"data-value='{esc(exact(best.cause))}'><b>most likely:</b> "
            f"<span class='message'>{esc(words(best.message))}</span> ({_explains(best, what)})"
            + "".join(f"<div>or, equally well: {esc(words(a))}</div>" for a in best.alternatives)
            + "</div>"
        )
        runner = next((f for f in ranked[1:] if f.cause == best.runner_up), None)
        if runner is not None:
            behind = (
                f", {number(best.margin)} behind on the evidence criterion"
                if math.isfinite(best.margin)
                else ""
            )
            parts.append(
                f"<div class='cause runner' data-key='diagnosis.runner_up' "
                f"data-value='{esc(exact(runner.cause))}'><b>runner-up:</b> "
                f"<span class='message'>{esc(words(runner.message))}</span> "
                f"({_explains(runner)}{behind})</div>"
            )
        parts.append(_causes_table(ranked))
    heads = {"cone_violation": "friction cones", "contact_placement": "placement"}
    parts += [
        f"<div class='cause cone'><b>{heads[f.cause]}:</b> {esc(words(f.message))}</div>"
        for f in cones
    ]
    parts += [
        f"<div class='cause note'><b>note:</b> {esc(words(f.message))}"
        + (
            f" (removes {number(100 * f.explained)} % of the residual, which is within tolerance)"
            if f.explained > 0
            else ""
        )
        + "</div>"
        for f in report.notes
    ]
    return "".join(parts) + "</section>"


def _causes_table(ranked: Sequence[Any]) -> str:
    order = sorted(
        range(len(ranked)),
        key=lambda i: (not math.isfinite(ranked[i].criterion), ranked[i].criterion, i),
    )
    best = ranked[order[0]].criterion
    rows = []
    for rank, i in enumerate(order):
        f = ranked[i]
        gap = f.criterion - best
        rows.append(
            f"<tr><td>{esc(f.cause.replace('_', ' '))}: {esc(words(f.message))}</td>"
            + cell(
                100 * float(f.explained),
                f"diagnosis.{i}.explained_percent",
                shown=f"{number(100 * float(f.explained))} %",
            )
            + cell(
                None if rank == 0 or not math.isfinite(gap) else float(gap),
                f"diagnosis.{i}.behind",
                shown="best" if rank == 0 else (number(gap) if math.isfinite(gap) else "-"),
            )
            + "</tr>"
        )
    return (
        f"<details><summary>every tested cause ({len(ranked)}), most likely first</summary>"
        + _table(
            "causes",
            "<tr><th>cause and its fitted values</th><th>explains</th>"
            "<th>behind the most likely on the evidence criterion</th></tr>" + "".join(rows),
        )
        + "</details>"
    )


# --- conventions and flagged samples ---------------------------------------------------------


def _joints(summary: Mapping[str, Any]) -> str:
    """The joint rows: the worst joints (largest residual against tolerance) and the joints
    not checked, with why."""
    rows = summary.get("joint_rows")
    if not rows:
        return ""
    body = "".join(
        f"<tr><td>{esc(w['joint'])}</td>"
        + cell(w["max_abs_residual"], f"joint_rows.worst.{i}.max_abs_residual", "N m")
        + cell(w["tolerance"], f"joint_rows.worst.{i}.tolerance", "N m")
        + cell(w["ratio"], f"joint_rows.worst.{i}.ratio")
        + cell(w["samples_over"], f"joint_rows.worst.{i}.samples_over")
        + cell(w["time"], f"joint_rows.worst.{i}.time", "s")
        + "</tr>"
        for i, w in enumerate(rows["worst"])
    )
    body += "".join(
        f"<tr><td>{esc(j)}</td><td colspan='5'>not checked: {esc(words(why))}</td></tr>"
        for j, why in rows["not_checked"].items()
    )
    over = rows["samples_over"]
    return (
        f"<details{' open' if over else ''}><summary>joint rows: {rows['joints_checked']} "
        f"checked, {over} samples over tolerance; the worst</summary>"
        + _table(
            "joints",
            "<tr><th>joint</th><th>largest residual</th><th>tolerance</th><th>ratio</th>"
            "<th>samples over</th><th>at</th></tr>" + body,
        )
        + "</details>"
    )


def _conventions(summary: Mapping[str, Any]) -> str:
    checks = summary.get("conventions") or []
    failed = [c for c in checks if not c.get("passed", True)]
    if not checks:
        return ""
    rows = "".join(
        f"<tr><td>{esc(str(c.get('check')).replace('_', ' '))}</td>"
        f"<td>{'passed' if c.get('passed') else 'FAILED'}</td>"
        f"<td>{esc(words(c.get('message', '')))}"
        + (f"; fix: {esc(words(c['fix']))}" if c.get("fix") else "")
        + "</td></tr>"
        for c in checks
    )
    return (
        f"<details{' open' if failed else ''}><summary>convention checks: {len(failed)} failed "
        f"of {len(checks)}</summary>{_table('conventions', rows)}</details>"
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
            f"<td>{idx[0]} to {idx[-1]} ({t[idx[0]]:.3f} to {t[idx[-1]]:.3f} s)</td>"
            f"<td>{esc(words(why))}</td></tr>"
        )
    return (
        "<details><summary>flagged and excused samples, by reason</summary>"
        + _table(
            "reasons",
            "<tr><th>kind</th><th>samples</th><th>from sample to sample</th><th>reason</th></tr>"
            + "".join(rows),
        )
        + "</details>"
    )


# --- the section and the page ----------------------------------------------------------------


def report_section(report: Any, anchor: str = "log") -> str:
    """One log's report as an HTML fragment (no page, no plotting script).

    Parameters
    ----------
    report : Report
        A check's result (:func:`wholebody.check.analysis.check_trajectory`).
    anchor : str
        The section's ``id`` (unique on the page; the plots' is ``anchor + "-figure"``, their
        data's ``anchor + "-data"``).
    """
    summary = json.loads(report.to_json())
    summary.update(new_fields(report, summary))
    step = Reducer(report.n_samples).step
    return (
        f"<section class='log' id='{esc(anchor)}'>"
        f"<h1>{esc(report.source)}</h1>"
        f"<div class='muted'>{esc(report.robot)}, weight {report.weight:.1f} N, "
        f"{report.n_samples} samples"
        + (", accelerations estimated from v" if report.accelerations_estimated else "")
        + "</div>"
        + _banner(report, summary)
        + "<div class='top'>"
        + _diagnosis(report)
        + _evidence(report, summary)
        + "</div>"
        + _joints(summary)
        + _conventions(summary)
        + _reasons_table(report)
        + "<h2>Over time</h2><div class='muted'>drag across a plot to zoom all of them, "
        "double-click to zoom out"
        + (f"; each point is the worst of {step} samples" if step > 1 else "")
        + "</div>"
        + f"<div class='plots' id='{esc(anchor)}-figure' data-data='{esc(anchor)}-data'></div>"
        + f"<script type='application/json' id='{esc(anchor)}-data'>"
        + figure_json(figure(report))
        + "</script></section>"
    )


@cache
def _asset(name: str) -> str:
    return (_ASSETS / name).read_text(encoding="utf-8")


def _page(title: str, body: str) -> str:
    """The page: styles first, the words, then uPlot and the script that draws the plots."""
    licence = _asset("LICENSE.uPlot").replace("*/", "* /")
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{esc(title)}</title><style>{_CSS}{_asset('uPlot.min.css')}</style></head>"
        f"<body><main>{body}</main>"
        f"<script>/* uPlot 1.6.32, https://github.com/leeoniya/uPlot\n{licence}*/\n"
        f"{_asset('uPlot.iife.min.js')}</script>"
        f"<script>{_asset('report.js')}</script></body></html>\n"
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
        The page (its plotting script embedded: it opens offline).

    Raises
    ------
    OutputError
        ``path`` cannot be written.
    """
    page = _page(f"wholebody check: {report.source}", report_section(report))
    _write(page, path)
    return page


def _files_table(rows: Sequence[Mapping[str, Any]], anchors: Sequence[str | None]) -> str:
    head = (
        "<tr><th>log</th><th>verdict</th>"
        + "".join(
            f"<th>{esc(name)}" + (f" ({esc(unit)})" if unit not in ("", "%") else "") + "</th>"
            for _, _, name, unit in _ROW_FIGURES
        )
        + "<th>diagnosis or error</th></tr>"
    )
    body = []
    for i, (r, anchor) in enumerate(zip(rows, anchors)):
        name = esc(Path(str(r.get("path", ""))).name)
        link = f"<a href='#{esc(anchor)}'>{name}</a>" if anchor else name
        verdict = str(r.get("verdict"))
        cls = _VERDICT_CLASS.get(verdict, "other")
        cells = "".join(
            cell(r.get(key), f"rows.{i}.{key}", "%" if unit == "%" else "")
            for key, _, _, unit in _ROW_FIGURES
        )
        said = r.get("error") or r.get("diagnosis") or ""
        body.append(
            f"<tr class='file' data-path='{esc(r.get('path', ''))}'><td>{link}</td>"
            f"<td class='{cls}' data-key='rows.{i}.verdict' "
            f"data-value='{esc(exact(verdict))}'>{esc(verdict.replace('_', ' '))}</td>"
            f"{cells}<td>{esc(words(str(said)))}</td></tr>"
        )
    count: dict[str, int] = {}
    for r in rows:
        count[str(r.get("verdict"))] = count.get(str(r.get("verdict")), 0) + 1
    said = ", ".join(f"{n} {v.replace('_', ' ')}" for v, n in sorted(count.items()))
    return f"<h1>{len(rows)} logs checked</h1><div class='muted'>{esc(said)}</div>" + _table(
        "files", head + "".join(body)
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
    OutputError
        ``path`` cannot be written.
    """
    sections = list(sections) if sections is not None else [None] * len(rows)
    if len(rows) == 1 and sections[0]:
        page = _page(f"wholebody check: {rows[0].get('path')}", str(sections[0]))
        _write(page, path)
        return page
    anchors = [anchor(str(r.get("path"))) if s else None for r, s in zip(rows, sections)]
    body = _files_table(rows, anchors) + "".join(s for s in sections if s)
    page = _page(f"wholebody check: {len(rows)} logs", body)
    _write(page, path)
    return page
