"""Cells and words of the HTML report (:mod:`wholebody.check.report_html`).

Numbers at three significant digits with their units; summary keys as names in words
(:func:`label`: known keys from a table, new ones from their spelling); the diagnosis's
messages with their lists of numbers written out (:func:`words`); each figure with its exact
value and summary key as attributes. Also the report's fields its summary does not carry yet
(:func:`new_fields`).
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["cell", "empty", "esc", "exact", "flatten", "label", "new_fields", "number", "text"]


# --- numbers ---------------------------------------------------------------------------------


def esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def exact(value: Any) -> str:
    """The exact value for ``data-value`` (JSON, as ``--json`` writes it)."""
    return json.dumps(value, default=float)


def number(value: float) -> str:
    """Three significant digits; subnormal values (below 2.2e-308: rounding left-overs of a
    zero) as 0."""
    x = float(value)
    if x != 0.0 and abs(x) < np.finfo(float).tiny:
        return "0"
    return f"{x:.3g}"


def empty(value: Any) -> bool:
    """Nothing to show: None, NaN, an empty text or collection."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return math.isnan(value)
    return isinstance(value, (str, list, tuple, dict)) and len(value) == 0


def text(value: Any, unit: str = "") -> str:
    """A value as a person reads it: numbers at three significant digits with their unit
    (``"%"``, ``"% of m g"``: a share, shown times 100), yes / no, lists joined; "-" when
    empty."""
    if empty(value):
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, float, np.number)):
        if unit.startswith("%"):
            return f"{number(100 * float(value))}\u00a0{unit}"
        if isinstance(value, (int, np.integer)):
            shown = str(int(value))
        else:
            shown = "infinite" if math.isinf(value) else number(float(value))
        return f"{shown}\u00a0{unit}" if unit else shown
    if isinstance(value, Mapping):
        return "; ".join(f"{k.replace('_', ' ')} {text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, (int, float, np.number)) for v in value):
            return f"({', '.join(text(v) for v in value)}) {unit}".strip()
        return "; ".join(text(v) for v in value)
    return words(str(value))


def cell(value: Any, key: str = "", unit: str = "", shown: str | None = None) -> str:
    """A ``<td>`` of ``value`` as :func:`text` writes it (or ``shown``), with its summary key
    and exact value as ``data-key`` and ``data-value``."""
    numeric = isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
    attrs = f' data-key="{esc(key)}"' if key else ""
    attrs += f" data-value='{esc(exact(value))}'"
    cls = ' class="num"' if numeric else ""
    return f"<td{cls}{attrs}>{esc(text(value, unit) if shown is None else shown)}</td>"


# --- words -----------------------------------------------------------------------------------

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
# A list of numbers as numpy or Python prints it: "[ 1.95e+00 -8.34e-01]", "[1.0, 2.0]".
_NUMBERS = re.compile(rf"\[\s*((?:{_NUMBER}[\s,]*)+)\]")
# A list of quoted names: "['left_sole', 'right_sole']"; a list of tuples: "[(0.0, 1.9)]".
_NAMES = re.compile(r"\[((?:\s*'[^']*',?)+)\s*\]")
_TUPLES = re.compile(r"\[((?:\s*\([^()\[\]]*\),?)+)\s*\]")
# A unit in brackets: "f [N]".
_UNIT = re.compile(r"\[([A-Za-z]{1,3}(?: [A-Za-z]{1,3})?)\]")
# A number with more digits than a person reads: "0.30000000000000004", "6.4e+02".
_LONG = re.compile(r"(?<![\w.])[-+]?\d+\.\d{5,}(?:[eE][-+]?\d+)?|(?<![\w.])\d\.\d+[eE][-+]?\d+")


def words(message: str) -> str:
    """A diagnosis message with its lists of numbers as ``(a, b, c)`` at three significant
    digits, lists of names and tuples unbracketed, units in brackets as "in N", long numbers
    shortened and ``+-`` as ±."""

    def numbers(m: re.Match[str]) -> str:
        return "(" + ", ".join(number(float(x)) for x in re.findall(_NUMBER, m.group(1))) + ")"

    out = _NUMBERS.sub(numbers, message)
    out = _NAMES.sub(lambda m: ", ".join(re.findall(r"'([^']*)'", m.group(1))), out)
    out = _TUPLES.sub(lambda m: m.group(1).strip().rstrip(","), out)
    out = _UNIT.sub(r"in \1", out)
    out = _LONG.sub(lambda m: number(float(m.group(0))), out)
    return out.replace("+-", "±")


# Summary keys in words, with their units ("%": a share, shown times 100).
_LABELS: dict[str, tuple[str, str]] = {
    "weight_N": ("weight (m g)", "N"),
    "accelerations_estimated": ("accelerations estimated from v", ""),
    "preset": ("tolerance preset", ""),
    "tolerance.force_relative": ("force tolerance", "% of m g"),
    "tolerance.moment_relative_m": ("moment tolerance relative to m g", "m"),
    "n_unreliable": ("samples with unreliable accelerations", ""),
    "over_tolerance_near_contact_events": ("over-tolerance samples near a contact event", "%"),
    "n_events": ("contact make and break events", ""),
    "evidence.share_checked": ("share of the samples checked", "%"),
    "evidence.share_waived": ("share of the checked samples waived", "%"),
    "evidence.n_waived": ("samples waived (within the error of differentiation)", ""),
    "evidence.n_implausible": ("samples beyond physical magnitudes", ""),
    "evidence.bound_force": ("achieved bound on the residual force (median)", "N"),
    "evidence.bound_moment": ("achieved bound on the residual moment (median)", "N m"),
    "evidence.window_bound_force": ("bound on the window-averaged residual force", "N"),
    "evidence.window_bound_moment": ("bound on the window-averaged residual moment", "N m"),
    "evidence.window_seconds": ("longest window averaged", "s"),
    "evidence.systematic_windows": ("windows with a systematic error", ""),
    "evidence.systematic_ratio": ("largest systematic error beyond its bound", "tolerances"),
    "evidence.n_systematic": ("samples in windows with a systematic error", ""),
    "evidence.resolution_force": ("storage resolution of the force (median)", "N"),
    "evidence.resolution_moment": ("storage resolution of the moment (median)", "N m"),
    "evidence.float32": ("stored in single precision", ""),
    "evidence.min_checked_share": ("least share checked for a verdict", "%"),
    "evidence.max_waived_share": ("largest share waived for a verdict", "%"),
    "evidence.inconclusive_because": ("inconclusive because", ""),
}
_STATS = {"median": "median", "p95": "95th percentile", "max": "largest"}
_RESIDUALS = {
    "residual_force_N": ("residual force", "N"),
    "residual_moment_Nm": ("residual moment", "N m"),
    "residual_force_relative": ("residual force relative to m g", "% of m g"),
    "residual_moment_relative_m": ("residual moment relative to m g", "m"),
}
# Unit suffixes of summary keys, longest first.
_SUFFIXES = (
    ("_Nm", "N m"),
    ("_seconds", "s"),
    ("_N", "N"),
    ("_kg", "kg"),
    ("_m", "m"),
    ("_s", "s"),
)


def label(key: str) -> tuple[str, str]:
    """A dotted summary key as (name in words, unit); a unit starting with ``"%"`` is a share
    (shown times 100). Keys not in the table are read from their
    spelling (``bound_N`` -> ("bound", "N"); ``share_*`` and ``fraction_*`` are shares)."""
    if key in _LABELS:
        return _LABELS[key]
    head, _, tail = key.rpartition(".")
    if head in _RESIDUALS and tail in _STATS:
        what, unit = _RESIDUALS[head]
        return f"{what}, {_STATS[tail]}", unit
    leaf = key.split(".")[-1]
    unit = next((u for s, u in _SUFFIXES if leaf.endswith(s)), "")
    if unit:
        leaf = leaf[: leaf.rfind("_")]
    elif leaf.startswith(("share_", "fraction_")):
        unit = "%"
    parts = key.split(".")[:-1] + [leaf]
    if parts[0] == "evidence" and len(parts) > 1:
        parts = parts[1:]
    return " ".join(parts).replace("_", " "), unit


def flatten(prefix: str, value: Any) -> list[tuple[str, Any]]:
    """Nested dicts of a summary as dotted keys; lists of scalars kept whole."""
    if isinstance(value, Mapping):
        out: list[tuple[str, Any]] = []
        for k, v in value.items():
            out += flatten(f"{prefix}.{k}" if prefix else str(k), v)
        return out
    if isinstance(value, (list, tuple)) and any(isinstance(v, (Mapping, list)) for v in value):
        return [(prefix, f"{len(value)} entries")]
    return [(prefix, value)]


# Report fields the summary carries under other names, or the page shows otherwise.
_KNOWN_FIELDS = {
    "robot",
    "source",
    "weight",
    "force_tolerance",
    "moment_tolerance",
    "accelerations_estimated",
    "cone_tolerance",
    "preset",
    "cone_tolerance_relative",
    "reasons",
    "contact_names",
    "sole_half_sizes",
    "sole_centers",
    "events",
    "diagnosis",
    "conventions",
}


def new_fields(report: Any, summary: Mapping[str, Any]) -> dict[str, Any]:
    """Scalar fields of the report (and mappings of scalars) that its summary lacks: evidence
    added to :class:`Report` shows on the page before its summary learns of it."""
    from dataclasses import fields, is_dataclass

    out: dict[str, Any] = {}
    for f in fields(report) if is_dataclass(report) else ():
        if f.name in _KNOWN_FIELDS or f.name in summary or f.name.startswith("_"):
            continue
        value = getattr(report, f.name, None)
        if isinstance(value, (bool, int, float, str, np.number)):
            out[f.name] = value.item() if isinstance(value, np.number) else value
        elif isinstance(value, Mapping) and all(
            isinstance(v, (bool, int, float, str)) for v in value.values()
        ):
            out[f.name] = dict(value)
    return out
