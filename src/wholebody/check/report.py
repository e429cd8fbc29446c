"""The result of a log check: per-sample arrays and the verdict with its evidence.

The verdict has five values:

``"consistent"``
    Enough samples checked (:attr:`.Evidence.min_checked_share`), every checked sample
    balances within tolerance and respects its friction cones, its joint rows agree with the
    logged torques within each joint's tolerance (a log with torques), no systematic error
    shows in the window-averaged residual, the loaded contacts are on the ground and not
    tilted (:mod:`wholebody.conventions.placement`), and the log passed the convention checks.
``"consistent_except_unreliable"``
    The same, except samples over tolerance where the accelerations were differentiated from
    ``v`` and the expected error of that differentiation (impacts, the log's ends, noise)
    covers the residual; they are listed (:attr:`Report.unreliable`), and they are at most
    :attr:`.Evidence.max_waived_share` of the checked samples. Exit code 0.
``"inconsistent"``
    Some sample is over tolerance beyond its bound, the window-averaged residual shows a
    systematic error beyond tolerance plus its bound, a joint row is over its tolerance, a
    cone is violated, a loaded contact is off the ground or tilted, a convention check
    failed, or samples hold values beyond physical magnitudes; :attr:`Report.failed` says
    which, the diagnosis says why.
``"inconclusive"``
    Nothing inconsistent was found, but the evidence is too thin to call the log consistent:
    too small a share checked, too many samples waived, or an achieved bound wider than the
    tolerance (:attr:`Report.evidence` says which). Exit code 5.
``"unchecked"``
    No sample could be checked: no evidence, no verdict.

The evidence behind it (share checked, bounds, the systematic-error test, held streams, cone
findings) is :mod:`wholebody.check.evidence`; the report in words and tables (summary, JSON,
text, CSV) is :mod:`wholebody.check.report_text`, beside it, and the figures and the HTML page
are :mod:`wholebody.check.plots` and :mod:`wholebody.check.report_html`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..diagnosis.core import Finding
from .evidence import Evidence, inconclusive_reasons
from .report_text import columns, format_summary, summary, write_csv

__all__ = ["Report", "VERDICTS", "CONTACT_THRESHOLD"]


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
        The tolerance preset that applied (``"physical"``, ``"simulation"`` or
        ``"measured"``; :meth:`wholebody.check.CheckOptions.for_log`).
    tolerance_basis : str
        What the tolerances rest on, in words (the engine's floor and why, the physical
        defaults, or the noise measured in the log).
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
    joint_names : list of str
        The joint rows' columns (the robot's joints; empty when the log has no torques).
    joint_residual : (N, nj)
        The joint rows' residual ``(M a + h - sum J^T w)_j - tau_j`` [N m, or N for a
        prismatic joint] (:mod:`wholebody.balance.joint_rows`); NaN where not checked.
    joint_tolerance : (nj,)
        Each joint row's tolerance [N m or N], derived from the wrench tolerances.
    joint_weights : (nj, 2)
        How a wrench error reaches each joint row
        (:func:`wholebody.balance.joint_rows.joint_weights`): a row's expected error is
        ``w_m bound_moment + w_f bound_force``.
    joints_not_checked : dict of str to str
        Joints whose rows are not checked (everywhere or somewhere), and why.
    placement : PlacementCheck or None
        Where the loaded contacts are: heights above the ground, tilts, the contacts named
        (:func:`wholebody.conventions.placement.placement_check`).
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
    preset: str = "physical"
    tolerance_basis: str = ""
    cone_tolerance_relative: float = 0.0
    sole_centers: dict[str, tuple[float, float]] = field(default_factory=dict)
    notes: list[Finding] = field(default_factory=list)
    systematic: Any = None
    implausible: Any = None
    bound_force: Any = None
    bound_moment: Any = None
    evidence: Any = None
    joint_names: list[str] = field(default_factory=list)
    joint_residual: Any = None
    joint_tolerance: Any = None
    joint_weights: Any = None
    joints_not_checked: dict[str, str] = field(default_factory=dict)
    placement: Any = None

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
        if self.joint_residual is None:
            self.joint_residual = np.zeros((n, len(self.joint_names)))
        if self.joint_tolerance is None:
            self.joint_tolerance = np.full(len(self.joint_names), np.inf)
        if self.joint_weights is None:
            self.joint_weights = np.zeros((len(self.joint_names), 2))
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
    def joint_over(self) -> NDArray[np.bool_]:
        """(N, nj) bool: checked samples whose joint row is over its tolerance."""
        with np.errstate(invalid="ignore"):
            return ~self.flagged[:, None] & (np.abs(self.joint_residual) > self.joint_tolerance)

    @property
    def joint_waived(self) -> NDArray[np.bool_]:
        """(N, nj) bool: joint rows over tolerance on a sample whose wrench balance is waived
        (:attr:`unreliable`), within their tolerance plus the same expected error carried to
        the joint, ``w_m bound_moment + w_f bound_force`` (:attr:`joint_weights`)."""
        w = np.asarray(self.joint_weights, dtype=float)
        bound = np.outer(self.bound_moment, w[:, 0]) + np.outer(self.bound_force, w[:, 1])
        with np.errstate(invalid="ignore"):
            within = np.abs(self.joint_residual) <= self.joint_tolerance + bound
        return self.joint_over & self.unreliable[:, None] & within

    @property
    def joint_inconsistent(self) -> NDArray[np.bool_]:
        """(N,) bool: a joint row over tolerance and not waived (:attr:`joint_waived`)."""
        return np.asarray((self.joint_over & ~self.joint_waived).any(axis=1))

    @property
    def placement_failed(self) -> bool:
        """A loaded contact off the ground or tilted (:attr:`placement`)."""
        return self.placement is not None and bool(self.placement.failing)

    @property
    def failed(self) -> list[str]:
        """What the verdict found inconsistent, in words' keys: ``"wrench_balance"``,
        ``"joint_rows"``, ``"friction_cones"``, ``"contact_placement"``, ``"conventions"``,
        ``"implausible_values"`` (empty for a consistent log)."""
        parts = (
            ("wrench_balance", self.inconsistent_samples.any()),
            ("joint_rows", self.joint_inconsistent.any()),
            ("friction_cones", self.cone_violation.any()),
            ("contact_placement", self.placement_failed),
            ("conventions", not self.conventions_passed),
            ("implausible_values", self.implausible.any()),
        )
        return [name for name, failed in parts if failed]

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
        if self.failed:
            return "inconsistent"
        if self.inconclusive_because():
            return "inconclusive"
        if self.over_tolerance.any() or self.joint_over.any():
            return "consistent_except_unreliable"
        return "consistent"

    def inconclusive_because(self) -> list[str]:
        """Why the evidence is too thin for "consistent" (empty when it is not), in words."""
        return inconclusive_reasons(self)

    # --- in words and tables (report_text) ------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """The figures, verdict, evidence, findings and notes as a JSON-ready dict."""
        return summary(self)

    def format_summary(self) -> str:
        """The summary as a few lines of text (what the CLI prints)."""
        return format_summary(self)

    def columns(self) -> dict[str, Array]:
        """Per-sample columns (name -> (N,) array) for CSV and DataFrames."""
        return columns(self)

    def to_json(self, path: str | Path | None = None) -> str:
        """The summary as JSON; written to ``path`` when given."""
        text = json.dumps(self.summary(), indent=2, default=float)
        if path is not None:
            Path(path).write_text(text)
        return text

    def to_csv(self, path: str | Path) -> None:
        """Per-sample columns as CSV (plus one column of violated inequalities per contact)."""
        write_csv(self, path)

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
