"""Cells of the HTML report (:mod:`wholebody.check.report_html`): numbers as the text report
writes them, with their exact value and summary key as attributes; the report's fields its
summary does not carry yet."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from ._report_figure import fmt

__all__ = ["cell", "esc", "exact", "flatten", "lookup", "new_fields", "shown"]


# --- formatting ------------------------------------------------------------------------------


def esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def exact(value: Any) -> str:
    """The exact value for ``data-value`` (JSON, as ``--json`` writes it)."""
    return json.dumps(value, default=float)


def shown(key: str, value: Any) -> str:
    """A figure as the text report shows it (a share of samples as a percentage)."""
    if key.endswith("fraction_over_tolerance") and isinstance(value, (int, float)):
        return f"{100 * value:.2f} %"
    return fmt(value)


def cell(value: Any, key: str = "") -> str:
    numeric = isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
    attrs = f' data-key="{esc(key)}"' if key else ""
    attrs += f" data-value='{esc(exact(value))}'"
    cls = ' class="num"' if numeric else ""
    title = f' title="{esc(repr(value))}"' if numeric else ""
    return f"<td{cls}{attrs}{title}>{esc(shown(key, value))}</td>"


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


def lookup(summary: Mapping[str, Any], path: str) -> Any:
    value: Any = summary
    for part in path.split("."):
        value = value[part]
    return value


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
