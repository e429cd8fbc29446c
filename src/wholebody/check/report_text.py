"""A check's :class:`~wholebody.check.Report` in words and tables: its summary (a dict, the
JSON), the lines the command line prints, and the per-sample columns (CSV, DataFrame)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..diagnosis.core import Finding
from .evidence import EVIDENCE_LINES

if TYPE_CHECKING:
    from .report import Report

__all__ = ["summary", "format_summary", "evidence_lines", "columns", "write_csv"]

Array = NDArray[np.float64]


# --- the summary (JSON) ----------------------------------------------------------------------


def summary(report: Report) -> dict[str, Any]:
    """The report's figures, verdict, evidence, findings and notes as a JSON-ready dict."""
    ok = ~report.flagged

    def stats(x: Array) -> dict[str, float]:
        x = x[ok]
        if not len(x):
            return {"median": float("nan"), "p95": float("nan"), "max": float("nan")}
        return {
            "median": float(np.median(x)),
            "p95": float(np.percentile(x, 95)),
            "max": float(np.max(x)),
        }

    contacts = _contact_summary(report)
    over = report.over_tolerance
    return {
        "robot": report.robot,
        "source": report.source,
        "consistent": report.consistent,
        "verdict": report.verdict,
        "failed": report.failed,
        "samples": {
            "in": report.n_samples,
            "checked": report.n_checked,
            "flagged": int(report.flagged.sum()),
        },
        "weight_N": report.weight,
        "accelerations_estimated": report.accelerations_estimated,
        "residual_force_N": stats(report.force_norm),
        "residual_moment_Nm": stats(report.moment_norm),
        "residual_force_relative": stats(report.force_norm / report.weight),
        "residual_moment_relative_m": stats(report.moment_norm / report.weight),
        "tolerance": {
            "force_relative": report.force_tolerance,
            "moment_relative_m": report.moment_tolerance,
        },
        "fraction_over_tolerance": float(over.sum() / max(report.n_checked, 1)),
        "unreliable_samples": np.flatnonzero(report.unreliable)[:200].tolist(),
        "n_unreliable": int(report.unreliable.sum()),
        "evidence": {
            **report.evidence.as_dict(),
            "inconclusive_because": report.inconclusive_because(),
            "n_systematic": int(report.systematic.sum()),
        },
        "conventions": None
        if report.conventions is None
        else [
            {
                "check": c.name,
                "passed": c.passed,
                "message": c.message,
                "fix": c.fix,
                "hypotheses": list(c.hypotheses),
            }
            for c in report.conventions.all_checks
        ],
        "preset": report.preset,
        "tolerance_basis": report.tolerance_basis,
        "over_tolerance_near_contact_events": _near_events(report, over),
        "contacts": contacts,
        "joint_rows": joint_rows_summary(report),
        "contact_placement": placement_summary(report),
        "n_events": len(report.events),
        "events": [{"time": t, "contact": c, "event": e} for t, c, e in report.events[:200]],
        "flagged_reasons": {str(k): v for k, v in list(report.reasons.items())[:50]},
        "diagnosis": [_finding(f) for f in report.diagnosis],
        "ranking": ranking_dict(report),
        "notes": [
            {
                "cause": f.cause,
                "explained": f.explained,
                "message": f.message,
                "parameters": f.parameters,
                "uncertainty": f.uncertainty,
            }
            for f in report.notes
        ],
    }


def _contact_summary(report: Report) -> dict[str, dict[str, Any]]:
    """Per contact: cone violations, the most violated inequality, the largest utilisation."""
    ok = ~report.flagged
    contacts = {}
    for j, name in enumerate(report.contact_names):
        viol = report.cone_violation[:, j]
        rows = report.violated_row[viol, j]
        common = max(set(rows), key=list(rows).count) if len(rows) else ""
        # Utilisation |f_t| / (mu f_n) has no value without a positive normal force.
        util = report.utilisation[ok, j]
        finite = np.isfinite(util)
        contacts[name] = {
            "violations": int(viol.sum()),
            "fraction_violated": float(viol.sum() / max(report.n_checked, 1)),
            "most_violated": common,
            "max_utilisation": float(util[finite].max()) if finite.any() else None,
            "samples_without_normal_force": int((~finite).sum()),
        }
    return contacts


def _g(x: float) -> str:
    """Three significant digits; a value under 1e-300 (a denormal left by round-off) is 0."""
    return "0" if abs(x) < 1e-300 else f"{x:.3g}"


def _utilisation_words(c: dict[str, Any]) -> str:
    """``max utilisation 0.24`` and the samples where it has no value, in words."""
    top, without = c["max_utilisation"], c["samples_without_normal_force"]
    if top is None:
        return f"utilisation n/a (no positive normal force in its {without} checked samples)"
    words = f"max utilisation {top:.2f}"
    return words + (f" (n/a in {without} samples without normal force)" if without else "")


def ranking_dict(report: Report) -> dict[str, Any] | None:
    """The diagnosis' one ranking (named cause, runner-up, margin, ties, every cause tested in
    order) as JSON; ``None`` without a diagnosis."""
    best = next((f for f in report.diagnosis if f.ranking is not None), None)
    return None if best is None else best.ranking.to_dict()


#: The worst joints the summary lists.
WORST_JOINTS = 5


def joint_rows_summary(report: Report) -> dict[str, Any] | None:
    """The joint rows (None when the log has no torques): how many are checked, the ones not
    checked and why, each checked joint's evidence (``joints``, robot order: its largest
    residual [N m or N], when, its tolerance, their ratio, the samples over it and not
    waived) and the worst joints by that ratio."""
    if not report.joint_names:
        return None
    r, tol = np.abs(report.joint_residual), report.joint_tolerance
    over = report.joint_over & ~report.joint_waived
    checked = [j for j in report.joint_names if j not in report.joints_not_checked]
    rows: list[dict[str, Any]] = []
    for j, name in enumerate(report.joint_names):
        col = r[:, j]
        if not np.isfinite(col).any():
            continue
        i = int(np.nanargmax(col))
        rows.append(
            {
                "joint": name,
                "max_abs_residual": float(col[i]),
                "tolerance": float(tol[j]),
                "ratio": float(col[i] / tol[j]) if tol[j] > 0 else float("inf"),
                "time": float(report.time[i]),
                "samples_over": int(over[:, j].sum()),
            }
        )
    joints = {row["joint"]: {k: v for k, v in row.items() if k != "joint"} for row in rows}
    rows.sort(key=lambda x: -float(x["ratio"]))
    return {
        "joints_checked": len(checked),
        "not_checked": dict(report.joints_not_checked),
        "samples_over": int(over.any(axis=1).sum()),
        "tolerance_min": float(np.min(tol)) if len(tol) else float("nan"),
        "tolerance_max": float(np.max(tol)) if len(tol) else float("nan"),
        "joints": joints,
        "worst": rows[:WORST_JOINTS],
    }


def placement_summary(report: Report) -> dict[str, Any] | None:
    """Where the loaded contacts are: per contact the largest height off the ground and tilt
    while loaded, the samples off the ground and tilted, whether it is named."""
    p = report.placement
    if p is None:
        return None
    ev = p.evidence
    contacts = {}
    for j, name in enumerate(report.contact_names):
        e, loaded = ev["contacts"][name], p.loaded[:, j]
        h, t = np.abs(p.height[loaded, j]), p.tilt[loaded, j]
        contacts[name] = {
            "named": name in p.failing,
            "loaded_samples": e["loaded_samples"],
            "max_height_m": float(np.nanmax(h)) if np.isfinite(h).any() else float("nan"),
            "max_tilt_rad": float(np.nanmax(t)) if np.isfinite(t).any() else float("nan"),
            "off_ground_samples": e["off_ground"]["samples"],
            "tilted_samples": e["tilted"]["samples"],
        }
    return {
        "height_tolerance_m": ev["height_tolerance_m"],
        "tilt_tolerance_rad": ev["tilt_tolerance_rad"],
        "ground": ev["ground"],
        "contacts": contacts,
    }


def _finding(f: Finding) -> dict[str, Any]:
    return {
        "cause": f.cause,
        "explained": f.explained,
        "n_parameters": f.n_parameters,
        "criterion": f.criterion,
        "message": f.message,
        "parameters": f.parameters,
        "uncertainty": f.uncertainty,
        "alternatives": f.alternatives,
    }


def _near_events(report: Report, over: NDArray[np.bool_], window: float = 0.02) -> float:
    """Share of the over-tolerance samples within ``window`` s of a make/break event."""
    if not over.any() or not report.events:
        return 0.0
    events = np.sort(np.array([e[0] for e in report.events]))
    t = report.time[over]
    i = (
        np.clip(np.searchsorted(events, t), 1, len(events) - 1)
        if len(events) > 1
        else np.zeros(len(t), int)
    )
    nearest = np.minimum(np.abs(t - events[i]), np.abs(t - events[np.maximum(i - 1, 0)]))
    return float((nearest <= window).mean())


# --- the text the command line prints ----------------------------------------------------------


def format_summary(report: Report) -> str:
    """The summary as a few lines of text (what the CLI prints)."""
    s = summary(report)
    lines = _figure_lines(report, s)
    for name, c in s["contacts"].items():
        lines.append(
            f"contact   {name}: {c['violations']} cone violations"
            + (f" (mostly: {c['most_violated']})" if c["most_violated"] else "")
            + f", {_utilisation_words(c)}"
        )
    for k, (i, why) in enumerate(report.reasons.items()):
        if k == 5:
            lines.append(f"          ... {len(report.reasons) - 5} more flagged samples")
            break
        lines.append(f"flagged   sample {i}: {why}")
    lines += _joint_lines(s["joint_rows"])
    lines += _diagnosis_lines(report)
    # The evidence lines are not tested causes: said on their own lines, after them.
    for f in report.diagnosis:
        if f.cause in EVIDENCE_LINES:
            lines.append(f"{EVIDENCE_LINES[f.cause]:<9} {f.message}")
    for note in report.notes:
        lines.append(
            f"note      {note.message}"
            + (
                f" (removes {100 * note.explained:.4g} % of the residual, which is within "
                "tolerance)"
                if note.explained > 0
                else ""
            )
        )
    if report.conventions is not None:
        for check in report.conventions.findings:
            lines.append(
                f"convention {check.name}: {check.message}"
                + (f"; fix: {check.fix}" if check.fix else "")
            )
    lines += evidence_lines(report)
    lines.append(_verdict_line(report))
    return "\n".join(lines)


def _figure_lines(report: Report, s: dict[str, Any]) -> list[str]:
    """The log, its samples, the residual's figures and the share over tolerance."""
    f, m = s["residual_force_N"], s["residual_moment_Nm"]
    lines = [
        f"log       {report.source}  ({report.robot}, weight {report.weight:.1f} N)",
        f"samples   {s['samples']['in']} in = {s['samples']['checked']} checked + "
        f"{s['samples']['flagged']} flagged"
        + ("   (accelerations estimated from v)" if report.accelerations_estimated else ""),
        f"residual  force  median {_g(f['median'])} N, p95 {_g(f['p95'])} N, max {_g(f['max'])} N",
        f"          moment median {_g(m['median'])} N m, p95 {_g(m['p95'])} N m, "
        f"max {_g(m['max'])} N m",
        f"over tolerance ({100 * report.force_tolerance:g} % m g, "
        f"{100 * report.moment_tolerance:g} cm): "
        f"{100 * s['fraction_over_tolerance']:.2f} % of samples",
    ]
    if report.tolerance_basis:
        lines.append(f"tolerance {report.tolerance_basis}")
    if s["over_tolerance_near_contact_events"] and s["fraction_over_tolerance"]:
        lines.append(
            f"          {100 * s['over_tolerance_near_contact_events']:.0f} % of those "
            "within 20 ms of a contact make/break"
        )
    return lines


def _joint_lines(rows: dict[str, Any] | None) -> list[str]:
    """The joint rows: how many checked, the worst ones, those not checked."""
    if rows is None:
        return []
    worst = ", ".join(
        f"{w['joint']} {w['max_abs_residual']:.3g} ({w['ratio']:.2g} x tol"
        + (f", {w['samples_over']} samples over" if w["samples_over"] else "")
        + ")"
        for w in rows["worst"][:3]
    )
    lines = [
        f"joints    {rows['joints_checked']} rows checked against the logged torques "
        f"(tolerance {rows['tolerance_min']:.3g} .. {rows['tolerance_max']:.3g} N m); "
        f"largest [N m]: {worst or 'none'}"
    ]
    if rows["not_checked"]:
        said = "; ".join(f"{j}: {why}" for j, why in list(rows["not_checked"].items())[:4])
        more = len(rows["not_checked"]) - 4
        lines.append(f"          not checked: {said}" + (f" (+{more} more)" if more > 0 else ""))
    return lines


def _diagnosis_lines(report: Report) -> list[str]:
    """The best-ranked cause, its runner-up and alternatives, the others tested."""
    ranked = [f for f in report.diagnosis if f.cause not in EVIDENCE_LINES]
    if not ranked:
        return []
    best = ranked[0]
    of = (
        "of the samples that failed the check"
        if best.cause.startswith("convention:")
        else "of the residual"
    )
    lines = [f"diagnosis {best.message} (explains {100 * best.explained:.0f} % {of})"]
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
    # In the ranking's order (the evidence criterion), the one text, JSON and page share.
    others, seen = [], {best.cause}
    for f in ranked[1:]:
        if f.cause not in seen and f.cause != "unexplained":
            seen.add(f.cause)
            others.append(f"{f.cause.replace('_', ' ')} {100 * f.explained:.0f} %")
    if others:
        lines.append(
            f"          also tested: {', '.join(others[:6])}" + (", ..." if len(others) > 6 else "")
        )
    return lines


def evidence_lines(report: Report) -> list[str]:
    """The evidence figures of a report in words (share checked, bounds, the systematic
    test)."""
    ev = report.evidence
    n = max(report.n_samples, 1)
    lines = [
        f"evidence  {100 * report.n_checked / n:.1f} % of samples checked, "
        f"{100 * int(report.unreliable.sum()) / max(report.n_checked, 1):.1f} % of those "
        f"waived; achieved bound (median) {_g(ev.bound_force)} N, {_g(ev.bound_moment)} N m"
        + (" (float32 log)" if ev.float32 else "")
    ]
    if np.isfinite(ev.window_seconds):
        lines.append(
            f"          averaged over {_g(ev.window_seconds)} s windows: bound "
            f"{_g(ev.window_bound_force)} N, {_g(ev.window_bound_moment)} N m; "
            + (
                f"a systematic error in {ev.systematic_windows} windows "
                f"({int(report.systematic.sum())} samples, up to "
                f"{_g(ev.systematic_ratio)} x the tolerance beyond the bound)"
                if ev.systematic_windows
                else "no systematic error"
            )
        )
    lines += [f"noise     {line}" for line in ev.noise_lines[:1]]
    lines += [f"          {line}" for line in ev.noise_lines[1:]]
    if ev.noise.get("stamps"):
        lines.append(f"time      {_stamps_line(ev.noise['stamps'])}")
    if ev.filter:
        lines.append(f"filter    {ev.filter}")
    if ev.n_implausible:
        lines.append(
            f"          {ev.n_implausible} samples hold values beyond physical magnitudes: "
            "the log is inconsistent (a diverged simulation or wrong units)"
        )
    return lines


#: What the verdict rests on, in words (:attr:`Report.failed`).
FAILED_WORDS = {
    "wrench_balance": "wrench balance",
    "joint_rows": "joint rows",
    "friction_cones": "friction cones",
    "contact_placement": "contact placement",
    "conventions": "convention checks",
    "implausible_values": "values beyond physical magnitudes",
}


def _stamps_line(stamps: dict[str, Any]) -> str:
    """The stamps' evidence in words (:meth:`wholebody.conventions.noise.Stamps.describe`)."""
    from ..conventions.noise import Stamps

    gaps = [(g["sample"], g["time"], g["length_s"]) for g in stamps["gaps"]]
    return Stamps(
        stamps["step_s"],
        stamps["jitter_s"],
        gaps,
        stamps["duplicated"],
        stamps["backwards"],
        stamps["not_finite"],
    ).describe()


def _verdict_line(report: Report) -> str:
    verdict = report.verdict
    if verdict == "inconsistent":
        return "verdict   INCONSISTENT: " + ", ".join(FAILED_WORDS[f] for f in report.failed)
    if verdict == "consistent_except_unreliable":
        t = report.time[report.unreliable]
        return (
            f"verdict   consistent, except {int(report.unreliable.sum())} samples "
            f"({t.min():.3f} .. {t.max():.3f} s) whose differentiated accelerations are "
            "unreliable (impacts, the log's ends)"
        )
    if verdict == "inconclusive":
        return "verdict   INCONCLUSIVE: " + "; ".join(report.inconclusive_because())
    rows = f" and {len(report.joint_names) - len(report.joints_not_checked)} joint rows"
    shown = {
        "consistent": "consistent (wrench balance" + (rows if report.joint_names else "") + ")",
        "inconsistent": "INCONSISTENT",
        "unchecked": "UNCHECKED (no sample could be checked)",
    }
    return "verdict   " + shown[verdict]


# --- per-sample columns (CSV, DataFrame) -------------------------------------------------------


def columns(report: Report) -> dict[str, Array]:
    """Per-sample columns (name -> (N,) array) for CSV and DataFrames."""
    cols: dict[str, Array] = {
        "time": report.time,
        "flagged": report.flagged.astype(float),
        "over_tolerance": report.over_tolerance.astype(float),
        "residual_fx": report.residual_force[:, 0],
        "residual_fy": report.residual_force[:, 1],
        "residual_fz": report.residual_force[:, 2],
        "residual_tx": report.residual_moment[:, 0],
        "residual_ty": report.residual_moment[:, 1],
        "residual_tz": report.residual_moment[:, 2],
        "residual_force": report.force_norm,
        "residual_moment": report.moment_norm,
        "bound_force": np.asarray(report.bound_force, dtype=float),
        "bound_moment": np.asarray(report.bound_moment, dtype=float),
        "waived": np.asarray(report.unreliable, dtype=float),
        "systematic": np.asarray(report.systematic, dtype=float),
    }
    for j, name in enumerate(report.contact_names):
        cols[f"{name}:normal_force"] = report.normal_force[:, j]
        cols[f"{name}:cone_margin"] = report.cone_margin[:, j]
        cols[f"{name}:utilisation"] = report.utilisation[:, j]
        cols[f"{name}:cop_x"] = report.cop[:, j, 0]
        cols[f"{name}:cop_y"] = report.cop[:, j, 1]
    return cols


def write_csv(report: Report, path: str | Path) -> None:
    """Per-sample columns as CSV (plus one column of violated inequalities per contact)."""
    cols = columns(report)
    header = list(cols) + [f"{n}:violated" for n in report.contact_names]
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for i in range(report.n_samples):
            values = [f"{cols[c][i]:.10g}" for c in cols]
            values += [f'"{report.violated_row[i, j]}"' for j in range(len(report.contact_names))]
            f.write(",".join(values) + "\n")
