"""The result of an identification: the fitted parameters, the corrected model and URDF,
and the reports."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
from numpy.typing import NDArray

from ..errors import InvalidArgumentError, OutputError
from ..robot.core import Robot
from .calibrate import Calibration
from .links import LinkInertia, link_parameters, rewrite_urdf_inertials
from .parameters import Identifiability, ParameterEstimate

__all__ = ["IdentificationResult"]

Array = NDArray[np.float64]


@dataclass
class IdentificationResult:
    """What :func:`fit_inertial_parameters` found.

    Attributes
    ----------
    parameters : list of ParameterEstimate
    identifiability : Identifiability
    noise : dict of str to float
        Estimated noise level of each row group: base ``force`` [N], base ``moment``
        [N m about the base origin], joint ``torque`` [N m].
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
        """Links whose mass or CoM changed: name -> (mass [kg], CoM in link axes [m], inertia
        about the CoM in link axes [kg m^2])."""
        out = {}
        by_name = {lk.name: lk for lk in self.links}
        for name, (m, c, inertia) in self._link_states.items():
            lk = by_name[name]
            if abs(m / lk.mass - 1) > relative_mass or np.abs(c - lk.com).max() > com:
                out[name] = (m, c, inertia)
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
            lines.append(f"{name}: " + ", ".join(parts))
        for name, cal in self.calibration.contacts.items():
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
                lines.append(f"{name} sensor ({cal.axes} axes): " + ", ".join(parts))
        for joint, value in self.calibration.torque_offsets.items():
            if value:
                lines.append(f"{joint} torque offset {value:+.4f} N m")
        return lines

    def format_report(self) -> str:
        """The fit as text: residual before/after, changes, parameters, identifiability."""
        idf = self.identifiability
        lines = [
            f"fit       {self.n_samples} samples from {len(self.sources)} log(s), "
            f"{'all rows (torques)' if self.use_torques else 'floating-base rows (no torques)'}, "
            f"{idf.n_parameters} parameters"
        ]
        units = {"force": "N", "moment": "N m", "torque": "N m"}
        for g in self.residual_rms_before:
            lines.append(
                f"residual  {g:6s} RMS {self.residual_rms_before[g]:.4g} -> "
                f"{self.residual_rms_after[g]:.4g} {units[g]}"
            )
        lines.append(f"rank      {idf.rank} of {idf.n_parameters}, condition {idf.condition:.3g}")
        for d in idf.unobservable:
            lines.append(
                "not excited: "
                + ", ".join(f"{k} ({v:+.2f})" for k, v in d.items())
                + " (the logs cannot see this combination; it stays at the prior)"
            )
        for d in idf.weak:
            lines.append("weakly excited: " + ", ".join(f"{k} ({v:+.2f})" for k, v in d.items()))
        lines.append("changes:" if self.changes() else "changes:  none")
        lines += ["  " + c for c in self.changes()]
        lines.append("parameters (estimate +- standard error; * = not identified by the logs):")
        for p in self.parameters:
            flag = " " if p.identified else "*"
            lines.append(
                f" {flag} {p.name:34s} {p.nominal:+.5g} -> {p.estimate:+.6g} "
                f"+- {p.std_error:.2g} {p.unit}"
                f"  (data share {p.data_share:.3f})"
            )
        return "\n".join(lines)

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
                }
                for p in self.parameters
            ],
            "calibration": self.calibration.to_toml(),
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
