"""The result of a log check: per-sample arrays, a verdict with its evidence, a summary,
and writers (JSON, CSV, DataFrame, figures, HTML).

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
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..diagnosis import Finding
from ._verdict import Evidence, evidence_lines, inconclusive_reasons

__all__ = ["Report", "VERDICTS", "CONTACT_THRESHOLD", "Evidence"]

Array = NDArray[np.float64]
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
        from .._optional import require

        pd = require("pandas", "parquet", "DataFrames")
        df = pd.DataFrame(self.columns())
        for j, name in enumerate(self.contact_names):
            df[f"{name}:violated"] = self.violated_row[:, j]
        return df

    def to_html(self, path: str | Path | None = None) -> str:
        """The report as one self-contained HTML page (``html`` extra: Plotly); written to
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
