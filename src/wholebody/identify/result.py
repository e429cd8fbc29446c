"""The result of an identification: the fitted parameters, the corrected model and URDF,
and the reports."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
from numpy.typing import NDArray

from ..errors import InvalidArgumentError, OutputError
from ..io.calibration import Calibration
from ..robot.core import Robot
from ..robot.mjcf_writer import MjcfCorrection, write_corrected_mjcf
from .links import LinkInertia, link_parameters, rewrite_urdf_inertials
from .parameters import Identifiability, ParameterEstimate
from .smoothing import Smoothing

__all__ = ["IdentificationResult", "CrossValidation", "REPORT_LEVEL"]

Array = NDArray[np.float64]
#: Directions of each kind listed in the text report (all are in ``to_dict``).
_SHOWN = 8
#: Units of the row groups' residuals.
_UNITS = {"force": "N", "moment": "N m", "torque": "N m"}
#: Level of the intervals printed by :meth:`IdentificationResult.format_report`.
REPORT_LEVEL = 0.95
#: A fit is worse than the URDF when its held-out excess cost is beyond this many standard
#: deviations of the difference's noise (one-sided 95 %).
WORSE_QUANTILE = 1.6448536269514722


@dataclass(frozen=True)
class CrossValidation:
    """Prediction of held-out time windows: the fit (its parameters fitted on the other
    windows) against the URDF (its sensor parameters, if any, fitted on the same windows).

    Attributes
    ----------
    n_folds : int
        Time windows per log, each held out in turn.
    rms_nominal, rms_fitted : dict of str to float
        Held-out RMS of each row group (``force`` [N], ``moment`` [N m], ``torque`` [N m]),
        from the residuals of the held-out samples themselves.
    cost_nominal, cost_fitted : float
        Held-out sum of the samples' whitened squared residuals (each sample's rows weighed
        by its noise covariance, see :mod:`wholebody.identify.noise`).
    fold_costs_nominal, fold_costs_fitted : list of float
        The same per held-out window.
    cost_resolution : float
        The arithmetic resolution of the difference of those costs: each residual entry is
        computed to within 64 eps times the sum of the magnitudes of the terms that cancel in
        it; differences below it are ties (both models balance the held-out samples to
        round-off).
    difference_std : float
        Standard deviation of that difference from the held-out samples' own spread (its
        per-sample values' variance and integrated autocorrelation time, per log): a fit that
        predicts as well as the URDF within the noise differs from it by about this much.
    """

    n_folds: int
    rms_nominal: dict[str, float]
    rms_fitted: dict[str, float]
    cost_nominal: float
    cost_fitted: float
    fold_costs_nominal: list[float] = field(default_factory=list)
    fold_costs_fitted: list[float] = field(default_factory=list)
    cost_resolution: float = 0.0
    difference_std: float = 0.0

    @property
    def margin(self) -> float:
        """How much higher than the URDF's the fit's held-out cost may be and still not count
        as worse: the arithmetic resolution plus the one-sided 95 % quantile of the
        difference's noise (:attr:`difference_std`)."""
        return self.cost_resolution + WORSE_QUANTILE * self.difference_std

    @property
    def better(self) -> bool:
        """The fit predicts the held-out windows at least as well as the URDF: its held-out
        cost is not above the URDF's by more than :attr:`margin` (a difference the arithmetic
        cannot resolve, or one within the noise of the held-out samples, is no evidence that
        the fit is worse; anything beyond it is)."""
        return self.cost_fitted - self.cost_nominal <= self.margin


@dataclass
class IdentificationResult:
    """What :func:`fit_inertial_parameters` found.

    Attributes
    ----------
    parameters : list of ParameterEstimate
    identifiability : Identifiability
    noise : dict of str to float
        Residual level of each row group after the fit (RMS per row, for the degrees of
        freedom used): base ``force`` [N], base ``moment`` [N m about the base origin], joint
        ``torque`` [N m].
    noise_model : dict of str to float
        The noise the fit weighs the rows by (:mod:`wholebody.identify.noise`), as standard
        deviations: ``CONTACT force`` [N] and ``CONTACT moment`` [N m] per axis of each
        contact's wrench, and each row group's equation error (``force rows`` ...; ``torque
        rows`` includes the torques' own noise).
    noise_lag_one : float
        The residuals' lag-1 autocorrelation the fit removed in time (0: samples independent).
    residual_rms_before, residual_rms_after : dict of str to float
        RMS of each row group's residual with the URDF (and uncalibrated sensors), and
        after the fit.
    residual_before, residual_after : dict of str to ndarray, shape (N_total,)
        Per-sample norms of each group's residual rows (base frame), the logs one after the
        other (samples flagged as unusable are left out).
    calibration : Calibration
        The fitted sensor calibration (identity when no sensor parameter was fitted).
    n_samples : int
        Samples used (over all logs).
    use_torques : bool
    calibrations : dict of str to Calibration
        Each log's calibration (by the log's file stem): shared sensor parameters and the
        log's own; ``calibration`` is the first log's.
    lags : dict of str to float
        Each log's wrench lag behind the motion [s] applied in the fit (when asked): the
        estimate when it is beyond 1.96 standard errors, else 0.
    lag_estimates : dict of str to (float, float)
        Each log's lag estimate and its standard error [s] (delete-a-block jackknife).
    lag_notes : dict of str to str
        For each log whose lag could not be read (infinite standard error), why.
    cross_validation : CrossValidation or None
        Held-out prediction against the URDF (None: too few samples to hold any out).
    batch_length, n_batches : int
        Samples per batch of the standard errors (long against the scores' autocorrelation
        time) and the number of batches (the intervals' t has ``n_batches - 1`` degrees of
        freedom).
    inconsistent_urdf_links : list of str
        Fitted links whose URDF inertia is not a real rigid body (pseudo-inertia not positive
        definite); their fit starts from the nearest consistent one.
    blas_threads : str
        The BLAS thread count the fit ran with, in words.
    inseparable : list of dict of str to float
        Combinations of parameters the data alone cannot separate (the regressor's null
        space with each parameter's column equilibrated, whatever the prior's scales), each
        as parameter name -> component (the largest).
    inseparable_share : dict of str to float
        Each parameter's share in that null space (0: the data determine it alone).
    held_for_offsets : dict of str to str
        Links kept at the URDF because they carry a contact whose sensor offsets are fitted
        (their mass and CoM trade with the offsets): link name -> contact name.
    held_directions : list of (str, str, str)
        Directions of other links' mass and CoM kept at the URDF because a fitted offset
        imitates them while the sensor's body is still (:mod:`wholebody.identify.stance`):
        (link, contact, the link's parameters in it, e.g. ``"mass with CoM z"``).
    smoothing : dict of str to (Smoothing, int)
        The logs read through a low-pass (:mod:`wholebody.identify.smoothing`: their
        accelerations differentiated, or ``smoothing=True``), by name: the filter and the
        number of smoothed samples fitted.
    """

    robot: Robot
    links: list[LinkInertia]
    parameters: list[ParameterEstimate]
    identifiability: Identifiability
    noise: dict[str, float]
    residual_rms_before: dict[str, float]
    residual_rms_after: dict[str, float]
    residual_before: dict[str, Array]
    residual_after: dict[str, Array]
    calibration: Calibration
    n_samples: int
    use_torques: bool
    sources: list[str]
    covariance: Array
    _link_states: dict[str, tuple[float, Array, Array]] = field(repr=False, default_factory=dict)
    _theta: Array = field(repr=False, default_factory=lambda: np.zeros(0))
    calibrations: dict[str, Calibration] = field(default_factory=dict)
    lags: dict[str, float] = field(default_factory=dict)
    cross_validation: CrossValidation | None = None
    batch_length: int = 1
    n_batches: int = 0
    inconsistent_urdf_links: list[str] = field(default_factory=list)
    blas_threads: str = ""
    inseparable: list[dict[str, float]] = field(default_factory=list)
    inseparable_share: dict[str, float] = field(default_factory=dict)
    held_for_offsets: dict[str, str] = field(default_factory=dict)
    noise_model: dict[str, float] = field(default_factory=dict)
    noise_lag_one: float = 0.0
    lag_estimates: dict[str, tuple[float, float]] = field(default_factory=dict)
    lag_notes: dict[str, str] = field(default_factory=dict)
    held_directions: list[tuple[str, str, str]] = field(default_factory=list)
    smoothing: dict[str, tuple[Smoothing, int]] = field(default_factory=dict)

    @property
    def recommended(self) -> bool:
        """False when the fitted model predicts held-out data worse than the URDF."""
        return self.cross_validation is None or self.cross_validation.better

    def __getitem__(self, name: str) -> ParameterEstimate:
        for p in self.parameters:
            if p.name == name:
                return p
        raise InvalidArgumentError(
            f"no parameter {name!r}; parameters: {[p.name for p in self.parameters]}"
        )

    # --- the corrected model -------------------------------------------------------------

    def changed_links(
        self, *, relative_mass: float = 1e-9, com: float = 1e-9
    ) -> dict[str, tuple[float, Array, Array]]:
        """Links whose mass, CoM or inertia changed: name -> (mass [kg], CoM in link axes [m],
        inertia about the CoM in link axes [kg m^2])."""
        out = {}
        by_name = {lk.name: lk for lk in self.links}
        for name, (m, c, inertia) in self._link_states.items():
            lk = by_name[name]
            scale = max(float(np.abs(lk.inertia_com).max()), 1e-300)
            if (
                abs(m / lk.mass - 1) > relative_mass
                or np.abs(c - lk.com).max() > com
                or np.abs(inertia - lk.inertia_com).max() > relative_mass * scale
            ):
                out[name] = (m, c, inertia)
        return out

    def physically_consistent(self) -> dict[str, float]:
        """Each fitted link's smallest eigenvalue of its pseudo-inertia about the CoM
        (``diag(Sigma_C, m)``, [kg m^2] and [kg]): positive for a real rigid body."""
        out = {}
        for name, (m, _, inertia) in self._link_states.items():
            sig = 0.5 * np.trace(inertia) * np.eye(3) - inertia
            out[name] = float(min(np.linalg.eigvalsh(sig).min(), m))
        return out

    def corrected_robot(self) -> Robot:
        """A new :class:`Robot` with the fitted inertias (the model is copied)."""
        model = self.robot.model.copy()
        pis = {j: model.inertias[j].toDynamicParameters() for j in range(1, model.njoints)}
        by_name = {lk.name: lk for lk in self.links}
        for name, (m, c, inertia) in self._link_states.items():
            lk = by_name[name]
            pis[lk.joint] = pis[lk.joint] + lk.transform @ (
                link_parameters(m, c, inertia) - link_parameters(lk.mass, lk.com, lk.inertia_com)
            )
        for j, p in pis.items():
            model.inertias[j] = pin.Inertia.FromDynamicParameters(p)
        return Robot(model, name=self.robot.name, source=None)

    def corrected_urdf(self, urdf: str | Path | None = None) -> str:
        """The URDF text with only the changed links' ``<inertial>`` elements rewritten."""
        path = urdf if urdf is not None else self.robot.source
        if path is None or not str(path).endswith(".urdf"):
            raise InvalidArgumentError(
                f"robot {self.robot.name!r} was not loaded from a URDF file; pass urdf="
            )
        text = Path(path).read_text()
        by_name = {lk.name: lk for lk in self.links}
        changes = {}
        for name, (m, c, inertia) in self.changed_links().items():
            R = pin.rpy.rpyToMatrix(*by_name[name].rpy)
            changes[name] = (m, c, R.T @ inertia @ R)
        return rewrite_urdf_inertials(text, changes)

    def write_urdf(self, path: str | Path, *, urdf: str | Path | None = None) -> None:
        """Write :meth:`corrected_urdf` to ``path``."""
        try:
            Path(path).write_text(self.corrected_urdf(urdf))
        except OSError as exc:
            raise OutputError(f"cannot write the corrected URDF {path}: {exc}") from exc

    def write_mjcf(self, path: str | Path) -> MjcfCorrection:
        """Write a copy of the robot's MJCF with the fitted inertias to ``path``: each changed
        link's ``<inertial>`` (includes inlined; see :mod:`wholebody.robot.mjcf_writer`, which
        says which MJCF body takes a link's change and which links it refuses by name)."""
        return write_corrected_mjcf(self.robot, self.corrected_robot(), path)

    # --- reports -----------------------------------------------------------------------------

    def changes(self) -> list[str]:
        """A readable list: ``"torso: mass 18.00 -> 18.90 kg (+5.0 %), CoM x +30.0 mm"``,
        one line per changed link, then the sensor calibration."""
        lines = []
        by_name = {lk.name: lk for lk in self.links}
        for name, (m, c, _) in self.changed_links(relative_mass=1e-6, com=1e-6).items():
            lk = by_name[name]
            parts = []
            if abs(m / lk.mass - 1) > 1e-6:
                parts.append(f"mass {lk.mass:.2f} -> {m:.2f} kg ({100 * (m / lk.mass - 1):+.1f} %)")
            shift = c - lk.com
            moved = [
                f"{ax} {1e3 * d:+.1f} mm"
                for ax, d in zip("xyz", shift, strict=True)
                if abs(d) > 1e-6
            ]
            if moved:
                parts.append("CoM " + ", ".join(moved))
            _, _, inertia = self._link_states[name]
            change = np.abs(inertia - lk.inertia_com).max()
            if change > 1e-6 * max(float(np.abs(lk.inertia_com).max()), 1e-300):
                principal = np.linalg.eigvalsh(inertia)
                before = np.linalg.eigvalsh(lk.inertia_com)
                parts.append(
                    "principal inertia ["
                    + ", ".join(f"{a:.4g}" for a in before)
                    + "] -> ["
                    + ", ".join(f"{a:.4g}" for a in principal)
                    + "] kg m^2"
                )
            lines.append(f"{name}: " + ", ".join(parts))
        many = any(":" in p.name for p in self.parameters)  # per-log sensor parameters
        per_log = self.calibrations if many else {"": self.calibration}
        for log, calibration in per_log.items():
            lines += self._sensor_changes(calibration, f"{log}: " if many else "")
        return lines

    def _sensor_changes(self, calibration: Calibration, prefix: str) -> list[str]:
        lines = []
        for name, cal in calibration.contacts.items():
            parts = []
            if np.any(cal.force_offset):
                parts.append(
                    "force offset [" + ", ".join(f"{x:+.3f}" for x in cal.force_offset) + "] N"
                )
            if np.any(cal.moment_offset):
                parts.append(
                    "moment offset [" + ", ".join(f"{x:+.4f}" for x in cal.moment_offset) + "] N m"
                )
            if cal.gain:
                parts.append(f"gain {100 * cal.gain:+.2f} %")
            if np.any(cal.rotation):
                parts.append(
                    "rotation [" + ", ".join(f"{1e3 * x:+.2f}" for x in cal.rotation) + "] mrad"
                )
            if parts:
                lines.append(f"{prefix}{name} sensor ({cal.axes} axes): " + ", ".join(parts))
        for joint, value in calibration.torque_offsets.items():
            if value:
                lines.append(f"{prefix}{joint} torque offset {value:+.4f} N m")
        return lines

    def identified_summary(self) -> list[str]:
        """In words, per link and sensor: which quantities the logs determine and which stay
        at the URDF (or the uncalibrated sensor), and the combinations only determined
        together."""
        idf = self.identifiability
        lines = [
            f"the logs determine {idf.rank} independent combinations (base parameters) of "
            f"the {idf.n_parameters} fitted parameters"
        ]
        short = {
            "mass": "mass",
            "com": "CoM ",
            "inertia": "inertia ",
            "force_offset": "force offset ",
            "moment_offset": "moment offset ",
            "gain": "gain",
            "rotation": "rotation ",
            "torque_offset": "torque offset",
        }
        targets: dict[str, tuple[list[str], list[str]]] = {}
        for p in self.parameters:
            what = short.get(p.kind, p.kind)
            if p.kind in ("com", "force_offset", "moment_offset", "rotation"):
                what += p.name[-1]
            elif p.kind == "inertia":
                what += p.name.rsplit("_", 1)[-1]
            head = p.name.split(":", 1)[0] + ":" if ":" in p.name else ""
            yes, no = targets.setdefault(head + p.target, ([], []))
            (yes if p.identified else no).append(what)
        for target, (yes, no) in targets.items():
            if not no:
                lines.append(f"  {target}: {', '.join(yes)}: identified")
            elif not yes:
                lines.append(f"  {target}: not identified, kept at the prior (URDF)")
            else:
                lines.append(
                    f"  {target}: {', '.join(yes)}: identified; {', '.join(no)}: "
                    "not identified, kept at the prior (URDF)"
                )
        directions = self.inseparable or idf.unobservable
        identified = {p.name for p in self.parameters if p.identified}
        for d in directions[:_SHOWN]:
            names = list(d)
            # Directions are in the fit's coordinates (an inertia's are log-scale coordinates
            # of its second moment): one whose members are all determined as reported
            # quantities says nothing more.
            if len(names) >= 2 and not set(names) <= identified:
                lines.append(
                    "  only determined together (or not at all): "
                    + " vs ".join(names)
                    + ": kept at the prior"
                )
        for link, contact in self.held_for_offsets.items():
            lines.append(
                f"  {link}: mass and CoM kept at the URDF: they carry the {contact} sensor, "
                "whose fitted offsets explain the same readings (name the link to fit it)"
            )
        imitated: dict[tuple[str, str], list[str]] = {}
        for link, contact, words in self.held_directions:
            imitated.setdefault((link, contact), []).append(words)
        for (link, contact), parts in imitated.items():
            lines.append(
                f"  {link}: {'; '.join(parts)} kept at the URDF: a {contact} offset has the "
                "same effect on every row while that sensor's body is still (name the link "
                "to fit it)"
            )
        share = self.inseparable_share
        masses = [
            p.name for p in self.parameters if p.kind == "mass" and share.get(p.name, 0) > 0.01
        ]
        offsets = [
            p.name
            for p in self.parameters
            if p.kind == "force_offset" and share.get(p.name, 0) > 0.01
        ]
        if masses and offsets:
            lines.append(
                "  weight/offset trade-off: "
                + ", ".join(masses)
                + " and the force offsets "
                + ", ".join(offsets[:6])
                + (" ..." if len(offsets) > 6 else "")
                + " cannot be separated by these logs (the weight and the offsets explain the "
                "same readings): kept at the prior; move the robot (vertical accelerations, "
                "other postures), use joint torques, or give the offsets"
            )
        return lines

    def format_report(self) -> str:
        """The fit as text: residual before/after, changes, parameters, identifiability."""
        lines = [
            f"fit       {self.n_samples} samples from {len(self.sources)} log(s), "
            f"{'all rows (torques)' if self.use_torques else 'floating-base rows (no torques)'}, "
            f"{self.identifiability.n_parameters} parameters"
        ]
        for g in self.residual_rms_before:
            lines.append(
                f"residual  {g:6s} RMS {self.residual_rms_before[g]:.4g} -> "
                f"{self.residual_rms_after[g]:.4g} {_UNITS[g]}"
            )
        for log, (smoothing, kept) in self.smoothing.items():
            lines.append(
                f"smoothed  {log}: {smoothing.words()}, applied alike to the regressor and to "
                f"the measured wrenches and torques: {kept} smoothed samples fitted"
            )
        lines += self._held_out_lines() + self._lag_lines()
        if self.inconsistent_urdf_links:
            lines.append(
                "URDF      not a real rigid body (pseudo-inertia not positive definite): "
                + ", ".join(self.inconsistent_urdf_links)
                + "; fitted from the nearest consistent inertia"
            )
        consistent = self.physically_consistent()
        bad = [n for n, v in consistent.items() if not v > 0]
        lines.append(
            f"physics   {len(consistent) - len(bad)} of {len(consistent)} fitted links "
            "physically consistent (positive-definite pseudo-inertia)"
            + (f"; NOT: {', '.join(bad)}" if bad else "")
        )
        lines += self._identifiability_lines()
        lines.append("changes:" if self.changes() else "changes:  none")
        lines += ["  " + c for c in self.changes()]
        lines.append("identified:")
        lines += self.identified_summary()
        lines += self._parameter_lines()
        return "\n".join(lines)

    def _held_out_lines(self) -> list[str]:
        """The cross-validation against the URDF, and its verdict."""
        cv = self.cross_validation
        if cv is None:
            return []
        lines = [
            f"held out  {cv.n_folds} time windows of each log, each predicted by a fit to "
            "the others:"
        ]
        for g in cv.rms_nominal:
            lines.append(
                f"          {g:6s} RMS URDF {cv.rms_nominal[g]:.4g} -> fitted "
                f"{cv.rms_fitted[g]:.4g} {_UNITS[g]}"
            )
        difference = cv.cost_fitted - cv.cost_nominal
        if not cv.better:
            verdict = (
                "WORSE than the URDF: not recommended (the model the fit assumes does not "
                "explain these logs, or they are too short for what it fits; check them "
                "first)"
            )
        elif abs(difference) <= cv.cost_resolution:
            verdict = "the same as the URDF to round-off"
        elif difference < 0:
            verdict = "better than the URDF"
        else:
            verdict = "as good as the URDF (the difference is within the noise)"
        lines.append(
            f"          noise-weighted cost URDF {cv.cost_nominal:.6g} -> fitted "
            f"{cv.cost_fitted:.6g} (difference {difference:+.3g}, noise "
            f"{cv.difference_std:.2g}): {verdict}"
        )
        return lines

    def _lag_lines(self) -> list[str]:
        """Each log's lag: applied, read but not told from 0, or not read (and why)."""
        lines = []
        for log, lag in self.lags.items():
            read, se = self.lag_estimates.get(log, (lag, math.nan))
            if lag:
                lines.append(
                    f"lag       {log}: wrenches {1e3 * lag:+.2f} +- {1e3 * 1.96 * se:.2g} ms "
                    "behind the motion (95 %, floating-base rows, read with the fitted model; "
                    "the log is fitted shifted back)"
                )
            elif math.isfinite(se):
                lines.append(
                    f"lag       {log}: {1e3 * read:+.2f} +- {1e3 * 1.96 * se:.2g} ms (95 %), not "
                    "told from 0: the log is fitted as timed"
                )
            else:
                why = self.lag_notes.get(log, "the reason was not recorded")
                lines.append(f"lag       {log}: none read: {why}")
        return lines

    def _identifiability_lines(self) -> list[str]:
        """The rank, what the logs do not excite and what they excite weakly."""
        idf = self.identifiability
        lines = [f"rank      {idf.rank} of {idf.n_parameters}, condition {idf.condition:.3g}"]
        if idf.rank < idf.n_parameters:
            unseen = [p.name for p in self.parameters if p.data_share == 0.0]
            lines.append(
                f"excitation the logs excite {idf.rank} of {idf.n_parameters} parameter "
                f"combinations; {len(unseen)} parameters are not excited at all and keep their "
                "URDF (or uncalibrated) value"
                + (
                    ": " + ", ".join(unseen[:12]) + (" ..." if len(unseen) > 12 else "")
                    if unseen
                    else ""
                )
            )
        for d in idf.unobservable[:_SHOWN]:
            lines.append(
                "not excited: "
                + ", ".join(f"{k} ({v:+.2f})" for k, v in d.items())
                + " (the logs cannot see this combination; it stays at the prior"
                + (
                    "; inertia_* here: the fit's log-scale coordinates of the second moment"
                    if any(".inertia_" in k for k in d)
                    else ""
                )
                + ")"
            )
        if len(idf.unobservable) > _SHOWN:
            lines.append(f"not excited: ... and {len(idf.unobservable) - _SHOWN} more (fit.json)")
        for d in idf.weak[:_SHOWN]:
            lines.append("weakly excited: " + ", ".join(f"{k} ({v:+.2f})" for k, v in d.items()))
        if len(idf.weak) > _SHOWN:
            lines.append(f"weakly excited: ... and {len(idf.weak) - _SHOWN} more (fit.json)")
        return lines

    def _parameter_lines(self) -> list[str]:
        """Every parameter: nominal -> estimate, with its interval where the logs identify it."""
        level = REPORT_LEVEL
        dofs = sorted({round(p.dof) for p in self.parameters if p.identified}) or [0]
        span = f"{dofs[0]}" if len(dofs) == 1 else f"{dofs[0]} to {dofs[-1]}"
        lines = [
            f"parameters (estimate +- half-width of the {100 * level:.0f} % interval, Student t "
            f"with {span} degrees of freedom: {self.n_batches} batches of "
            f"{self.batch_length} samples, prewhitened, for time-correlated residuals; a "
            "log's own parameters count that log's batches; * = not identified by the logs):"
        ]
        for p in self.parameters:
            if not p.identified:
                # The data do not determine it: an interval from the data alone would be as
                # narrow as the directions the logs do see, not an uncertainty of this value.
                lines.append(
                    f" * {p.name:34s} {p.nominal:+.5g} -> {p.estimate:+.6g} {p.unit}  "
                    f"(not identified: held by the URDF prior, +- {p.prior_std:.2g} {p.unit} "
                    "one prior standard deviation; no data interval)"
                )
                continue
            lo, hi = p.interval(level)
            half = 0.5 * (hi - lo)
            lines.append(
                f"   {p.name:34s} {p.nominal:+.5g} -> {p.estimate:+.6g} "
                f"+- {half:.2g} {p.unit}"
                f"  (data share {p.data_share:.3f})"
            )
        return lines

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        idf = self.identifiability
        return {
            "robot": self.robot.name,
            "sources": self.sources,
            "samples": self.n_samples,
            "use_torques": self.use_torques,
            "residual_rms_before": self.residual_rms_before,
            "residual_rms_after": self.residual_rms_after,
            "noise": self.noise,
            "noise_model": self.noise_model,
            "noise_lag_one": self.noise_lag_one,
            "changes": self.changes(),
            "changed_links": sorted(self.changed_links()),
            "identifiability": {
                "rank": idf.rank,
                "n_parameters": idf.n_parameters,
                "condition": idf.condition,
                "unobservable": idf.unobservable,
                "weak": idf.weak,
            },
            "parameters": [
                {
                    "name": p.name,
                    "kind": p.kind,
                    "target": p.target,
                    "unit": p.unit,
                    "nominal": p.nominal,
                    "estimate": p.estimate,
                    "std_error": p.std_error,
                    "prior_std": p.prior_std,
                    "data_share": p.data_share,
                    "identified": p.identified,
                    "interval": list(p.interval(REPORT_LEVEL)),
                    "dof": p.dof,
                    "resolution": p.resolution,
                }
                for p in self.parameters
            ],
            "calibration": self.calibration.to_toml(),
            "calibrations": {k: c.to_toml() for k, c in self.calibrations.items()},
            "smoothing": {
                log: {
                    "sigma_s": f.sigma,
                    "cutoff_hz": f.cutoff,
                    "motion_bandwidth_hz": f.bandwidth,
                    "step": f.step,
                    "samples": kept,
                }
                for log, (f, kept) in self.smoothing.items()
            },
            "lags": self.lags,
            "lag_estimates": {k: list(v) for k, v in self.lag_estimates.items()},
            "lag_notes": dict(self.lag_notes),
            "cross_validation": None
            if self.cross_validation is None
            else {
                "n_folds": self.cross_validation.n_folds,
                "rms_nominal": self.cross_validation.rms_nominal,
                "rms_fitted": self.cross_validation.rms_fitted,
                "cost_nominal": self.cross_validation.cost_nominal,
                "cost_fitted": self.cross_validation.cost_fitted,
                "cost_resolution": self.cross_validation.cost_resolution,
                "difference_std": self.cross_validation.difference_std,
                "better": self.cross_validation.better,
            },
            "recommended": self.recommended,
            "inseparable": self.inseparable,
            "held_for_offsets": self.held_for_offsets,
            "held_directions": [list(d) for d in self.held_directions],
            "interval_level": REPORT_LEVEL,
            "batches": {"n": self.n_batches, "length": self.batch_length},
            "physically_consistent": self.physically_consistent(),
        }

    def to_json(self, path: str | Path | None = None) -> str:
        """:meth:`to_dict` as JSON; written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=2, default=float)
        if path is not None:
            try:
                Path(path).write_text(text)
            except OSError as exc:
                raise OutputError(f"cannot write {path}: {exc}") from exc
        return text
