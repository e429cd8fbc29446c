"""Batch checks of logs: are the contact wrenches consistent with the motion and friction?

:func:`check_trajectory` runs one Pinocchio pass per sample and everything else in numpy:
the Newton-Euler residual about the CoM, each contact's friction-cone margin (with the name of
the violated inequality), utilisation and centre of pressure, flags per sample, a summary and,
when residuals are large, a diagnosis (:mod:`wholebody.diagnosis`). The result is a
:class:`Report`, which writes JSON, CSV, a pandas DataFrame and figures.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._optional import require
from .balance import kinematics_batch
from .contacts import Contact, SurfaceContact
from .diagnosis import MAX_SAMPLES, DiagnosisData, Finding, diagnose
from .errors import InvalidArgumentError, LogFormatError
from .friction import VIOLATION_NAMES, ContactSet
from .newton_euler import (
    MAX_WRENCH_RELATIVE,
    beyond_physical_magnitude,
    newton_euler_residual_arrays,
    wrench_sum,
)
from .parallel import ChunkFailure, Shared, chunk_bounds, run_chunks
from .robot import Robot
from .trajectory import Trajectory

__all__ = ["Report", "check_trajectory", "estimate_trajectory", "validate_tolerances",
           "DEFAULT_FORCE_TOLERANCE", "DEFAULT_MOMENT_TOLERANCE", "DEFAULT_CONE_TOLERANCE"]

Array = NDArray[np.float64]
#: A sample is consistent when its residual force is below this share of the weight...
DEFAULT_FORCE_TOLERANCE = 0.01
#: ...and its residual moment over the weight below this length [m] (1 cm of CoP error).
DEFAULT_MOMENT_TOLERANCE = 0.01
#: Cone margins below -this share of the weight count as violations. Simulators place contact
#: points a fraction of a millimetre outside a tilted sole (penetration): 1e-4 m g is 0.06 N.
DEFAULT_CONE_TOLERANCE = 1e-4
#: Names of violated inequalities: the 16 rows of the contact wrench cone, then point contacts'.
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
    """

    robot: str
    source: str
    time: Array
    residual_force: Array
    residual_moment: Array
    flagged: Array
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
    def over_tolerance(self) -> Array:
        with np.errstate(invalid="ignore"):
            return ~self.flagged & ((self.force_norm > self.force_tolerance * self.weight)
                                    | (self.moment_norm > self.moment_tolerance * self.weight))

    @property
    def cone_violation(self) -> Array:
        """(N, k) bool: outside the cone by more than ``cone_tolerance`` m g."""
        with np.errstate(invalid="ignore"):
            return self.cone_margin < -self.cone_tolerance * self.weight

    @property
    def consistent(self) -> bool:
        """At least one sample checked, none over tolerance and no cone violated."""
        return self.verdict == "consistent"

    @property
    def verdict(self) -> str:
        """``"consistent"``, ``"inconsistent"``, or ``"unchecked"`` when no sample could be
        checked (every sample flagged): no evidence is no verdict."""
        if self.n_checked == 0:
            return "unchecked"
        if self.over_tolerance.any() or self.cone_violation.any():
            return "inconsistent"
        return "consistent"

    # --- summary --------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        ok = ~self.flagged

        def stats(x: Array) -> dict[str, float]:
            x = x[ok]
            if not len(x):
                return {"median": float("nan"), "p95": float("nan"), "max": float("nan")}
            return {"median": float(np.median(x)), "p95": float(np.percentile(x, 95)), "max": float(np.max(x))}

        contacts = {}
        for j, name in enumerate(self.contact_names):
            viol = self.cone_violation[:, j]
            rows = self.violated_row[viol, j]
            common = max(set(rows), key=list(rows).count) if len(rows) else ""
            contacts[name] = {
                "violations": int(viol.sum()),
                "fraction_violated": float(viol.sum() / max(self.n_checked, 1)),
                "most_violated": common,
                "max_utilisation": float(np.nanmax(self.utilisation[:, j])) if ok.any() else float("nan"),
            }
        over = self.over_tolerance
        near_events = self._near_events(over)
        return {
            "robot": self.robot,
            "source": self.source,
            "consistent": self.consistent,
            "verdict": self.verdict,
            "samples": {"in": self.n_samples, "checked": self.n_checked, "flagged": int(self.flagged.sum())},
            "weight_N": self.weight,
            "accelerations_estimated": self.accelerations_estimated,
            "residual_force_N": stats(self.force_norm),
            "residual_moment_Nm": stats(self.moment_norm),
            "residual_force_relative": stats(self.force_norm / self.weight),
            "residual_moment_relative_m": stats(self.moment_norm / self.weight),
            "tolerance": {"force_relative": self.force_tolerance, "moment_relative_m": self.moment_tolerance},
            "fraction_over_tolerance": float(over.sum() / max(self.n_checked, 1)),
            "over_tolerance_near_contact_events": near_events,
            "contacts": contacts,
            "n_events": len(self.events),
            "events": [{"time": t, "contact": c, "event": e} for t, c, e in self.events[:200]],
            "flagged_reasons": {str(k): v for k, v in list(self.reasons.items())[:50]},
            "diagnosis": [{"cause": f.cause, "explained": f.explained, "message": f.message,
                           "parameters": f.parameters, "uncertainty": f.uncertainty,
                           "alternatives": f.alternatives} for f in self.diagnosis],
        }

    def _near_events(self, over: Array, window: float = 0.02) -> float:
        """Share of the over-tolerance samples within ``window`` s of a make/break event."""
        if not over.any() or not self.events:
            return 0.0
        return float(_near(self.time[over], np.array([e[0] for e in self.events]), window).mean())

    def format_summary(self) -> str:
        """The summary as a few lines of text (what the CLI prints)."""
        s = self.summary()
        f, m = s["residual_force_N"], s["residual_moment_Nm"]
        lines = [
            f"log       {self.source}  ({self.robot}, weight {self.weight:.1f} N)",
            f"samples   {s['samples']['in']} in = {s['samples']['checked']} checked + "
            f"{s['samples']['flagged']} flagged"
            + ("   (accelerations estimated from v)" if self.accelerations_estimated else ""),
            f"residual  force  median {f['median']:.3g} N, p95 {f['p95']:.3g} N, max {f['max']:.3g} N",
            f"          moment median {m['median']:.3g} N m, p95 {m['p95']:.3g} N m, max {m['max']:.3g} N m",
            f"over tolerance ({100 * self.force_tolerance:g} % m g, {100 * self.moment_tolerance:g} cm): "
            f"{100 * s['fraction_over_tolerance']:.2f} % of samples",
        ]
        if s["over_tolerance_near_contact_events"] and s["fraction_over_tolerance"]:
            lines.append(f"          {100 * s['over_tolerance_near_contact_events']:.0f} % of those within 20 ms "
                         "of a contact make/break")
        for name, c in s["contacts"].items():
            lines.append(f"contact   {name}: {c['violations']} cone violations"
                         + (f" (mostly: {c['most_violated']})" if c["most_violated"] else "")
                         + f", max utilisation {c['max_utilisation']:.2f}")
        for k, (i, why) in enumerate(self.reasons.items()):
            if k == 5:
                lines.append(f"          ... {len(self.reasons) - 5} more flagged samples")
                break
            lines.append(f"flagged   sample {i}: {why}")
        if self.diagnosis:
            best = self.diagnosis[0]
            lines.append(f"diagnosis {best.message} (explains {100 * best.explained:.0f} % of the residual)")
            for alternative in best.alternatives:
                lines.append(f"          or: {alternative}")
            others, seen = [], {best.cause}
            for f in sorted(self.diagnosis[1:], key=lambda f: -f.explained):
                if f.cause not in seen and f.cause != "unexplained":
                    seen.add(f.cause)
                    others.append(f"{f.cause.replace('_', ' ')} {100 * f.explained:.0f} %")
            if others:
                lines.append(f"          also tested: {', '.join(others[:6])}" + (", ..." if len(others) > 6 else ""))
        lines.append("verdict   " + {"consistent": "consistent", "inconsistent": "INCONSISTENT",
                                     "unchecked": "UNCHECKED (no sample could be checked)"}[self.verdict])
        return "\n".join(lines)

    # --- output -----------------------------------------------------------------------------

    def columns(self) -> dict[str, Array]:
        """Per-sample columns (name -> (N,) array) for CSV and DataFrames."""
        cols: dict[str, Array] = {
            "time": self.time, "flagged": self.flagged.astype(float),
            "over_tolerance": self.over_tolerance.astype(float),
            "residual_fx": self.residual_force[:, 0], "residual_fy": self.residual_force[:, 1],
            "residual_fz": self.residual_force[:, 2], "residual_tx": self.residual_moment[:, 0],
            "residual_ty": self.residual_moment[:, 1], "residual_tz": self.residual_moment[:, 2],
            "residual_force": self.force_norm, "residual_moment": self.moment_norm,
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
        pd = require("pandas", "parquet", "DataFrames")
        df = pd.DataFrame(self.columns())
        for j, name in enumerate(self.contact_names):
            df[f"{name}:violated"] = self.violated_row[:, j]
        return df

    def plot(self, path: str | Path | None = None) -> Any:
        """Residuals over time, friction utilisation and CoP in the soles (``plot`` extra)."""
        from .plots import plot_report

        return plot_report(self, path)


# --- the check ------------------------------------------------------------------------------


def validate_tolerances(**tolerances: float) -> None:
    """Raise :class:`InvalidArgumentError` unless every tolerance is a finite number >= 0."""
    for name, value in tolerances.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise InvalidArgumentError(f"{name} must be a number, got {type(value).__name__} {value!r}")
        if not (math.isfinite(value) and value >= 0):
            raise InvalidArgumentError(f"{name} must be a finite number >= 0, got {value!r}")


def _contacts_for_log(traj: Trajectory, contacts: Sequence[Contact]) -> list[Contact]:
    names = [c.name for c in contacts]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InvalidArgumentError(f"contact names must be unique; declared twice: {duplicated}")
    by_name = {c.name: c for c in contacts}
    undeclared = [n for n in traj.contact_names if n not in by_name]
    if undeclared:
        raise LogFormatError(
            f"{traj.source}: the log has contacts {undeclared} that are not declared; declare each "
            f"(frame, type, friction); declared: {sorted(by_name)}"
        )
    absent = [n for n in by_name if n not in traj.contact_names]
    if absent:
        raise LogFormatError(f"{traj.source}: declared contacts {absent} have no wrenches in the log; "
                             f"logged: {list(traj.contact_names)}")
    return [by_name[n] for n in traj.contact_names]


def check_trajectory(
    robot: Robot,
    traj: Trajectory,
    contacts: Sequence[Contact],
    *,
    force_tolerance: float = DEFAULT_FORCE_TOLERANCE,
    moment_tolerance: float = DEFAULT_MOMENT_TOLERANCE,
    cone_tolerance: float = DEFAULT_CONE_TOLERANCE,
    savgol: tuple[int, int] | None = None,
    diagnose_causes: bool = True,
    workers: int = 1,
    chunk_size: int = 50_000,
    progress: bool = False,
) -> Report:
    """Check a log's contact wrenches against its motion and the friction cones.

    Parameters
    ----------
    robot : Robot
        Floating-base robot; the log's joints are mapped to it by name.
    traj : Trajectory
    contacts : sequence of Contact
        One per contact of the log, matched by name (friction and geometry).
    force_tolerance : float
        Residual force tolerance, relative to the weight.
    moment_tolerance : float
        Residual moment tolerance over the weight [m].
    cone_tolerance : float
        Cone margin below which a contact counts as violating, relative to the weight.
    savgol : (window, order), optional
        Smoothing of estimated accelerations (only when the log has none).
    diagnose_causes : bool
        Run :func:`wholebody.diagnosis.diagnose` when some samples are over tolerance.
    workers : int
        Processes for the per-sample work (one Pinocchio pass each); results are identical
        to ``workers=1``. A chunk that fails flags its samples with the error.
    chunk_size : int
        Samples per chunk: memory beyond the loaded log grows with it, not with the log.
    progress : bool
        A progress bar (tqdm) over the samples (``workers=1``).
    """
    validate_tolerances(force_tolerance=force_tolerance, moment_tolerance=moment_tolerance,
                        cone_tolerance=cone_tolerance)
    if workers < 1:
        raise InvalidArgumentError(f"workers must be at least 1, got {workers}")
    contacts = _contacts_for_log(traj, contacts)
    if traj.a is None:
        traj = traj.with_accelerations(robot, savgol=savgol)
    q, v, a, _ = traj.for_robot(robot)
    arrays, bad, reasons = robot.check_batch(q=q, v=v, a=a)
    N = len(traj)
    W = traj.contact_wrenches
    E = traj.external_wrenches
    # Sample-level problems are flagged before any algebra: non-finite values, and wrenches
    # beyond physical magnitudes (a diverged simulation; they would also overflow).
    checks = [("time has non-finite values", ~np.isfinite(traj.time))]
    for label, arr in [("contact wrenches", W)] + ([] if E is None else [("external wrenches", E)]):
        checks.append((f"{label} have non-finite values", ~np.isfinite(arr).reshape(N, -1).all(axis=1)))
        checks.append((f"{label} are beyond physical magnitudes (> {MAX_WRENCH_RELATIVE:g} m g, a diverged "
                       "simulation or wrong units)", beyond_physical_magnitude(arr, robot.weight)))
    for why, rows in checks:
        for i in np.flatnonzero(rows & ~bad):
            reasons[int(i)] = why
        bad = bad | rows

    k, e = len(contacts), len(traj.external_frames)
    parents = [robot.model.names[robot.model.frames[robot.frame_id(c.frame)].parentJoint] for c in contacts]
    frames = [c.frame for c in contacts] + list(traj.external_frames) + parents
    # Valid samples whose kinematics the diagnosis keeps (at most MAX_SAMPLES, evenly spread).
    valid = np.flatnonzero(~bad)
    keep = valid if len(valid) <= MAX_SAMPLES else valid[np.linspace(0, len(valid) - 1, MAX_SAMPLES).astype(int)]

    # One chunk at a time (bounded memory), on one or several processes.
    chunks = []
    shared = {"q": arrays["q"], "v": arrays["v"], "a": arrays["a"], "W": W, "E": E, "bad": bad}
    for start, stop in chunk_bounds(N, chunk_size):
        kept = keep[(keep >= start) & (keep < stop)] - start
        part = {name: Shared(name, start, stop) for name in shared}
        chunks.append(((start, stop), (contacts, part["q"], part["v"], part["a"], part["W"],
                                       None if E is None else part["E"], part["bad"], frames, e, kept,
                                       cone_tolerance, progress and workers == 1)))
    results = run_chunks(robot, _check_chunk, chunks, workers, shared=shared)
    out = _ChunkOutput.empty(N, k, len(keep))
    offset = 0
    for ((start, stop), args), res in zip(chunks, results):
        n_keep = len(args[9])
        if isinstance(res, ChunkFailure):
            for i in range(start, stop):
                if not bad[i]:
                    reasons[i] = f"chunk {start}..{stop - 1} failed: {res.error}"
            bad[start:stop] = True
        else:
            out.write(res, start, stop, offset)
        offset += n_keep
    reasons = dict(sorted(reasons.items()))
    for field_ in ("r_f", "r_m", "margin", "util", "normal", "cop"):
        getattr(out, field_)[bad] = np.nan

    events = _contact_events(traj.time, out.normal, [c.name for c in contacts], robot.weight, bad)
    report = Report(
        robot=robot.name, source=traj.source, time=traj.time, residual_force=out.r_f, residual_moment=out.r_m,
        flagged=bad, reasons=reasons, weight=robot.weight, force_tolerance=force_tolerance,
        moment_tolerance=moment_tolerance, contact_names=[c.name for c in contacts], cone_margin=out.margin,
        violated_row=np.array(("",) + VIOLATION_NAMES, dtype=object)[out.violated + 1], utilisation=out.util, normal_force=out.normal, cop=out.cop,
        accelerations_estimated=traj.accelerations_estimated, cone_tolerance=cone_tolerance, events=events,
        sole_half_sizes={c.name: (c.half_length, c.half_width) for c in contacts if isinstance(c, SurfaceContact)},
    )
    if diagnose_causes and report.over_tolerance.any():
        edge = _estimate_artifacts(report)
        if edge is not None:
            report.diagnosis = [edge]
            return report
        ok = ~bad[keep]
        rows = keep[ok]
        log_wrenches = np.where(bad[:, None, None], 0.0, W)
        report.diagnosis = diagnose(DiagnosisData(
            weight=robot.weight, mass=robot.mass, gravity=robot.gravity_vector, time=traj.time[rows],
            wrenches=log_wrenches[rows], positions=out.keep_positions[ok], rotations=out.keep_rotations[ok],
            joint_centres=out.keep_joints[ok], com=out.keep_com[ok], momentum_rate=out.keep_rate[ok],
            external=out.keep_ext[ok], names=[c.name for c in contacts], over=report.over_tolerance[rows],
            log_wrenches=log_wrenches, rows=rows, log_time=traj.time,
            tolerance=(force_tolerance * robot.weight, moment_tolerance * robot.weight),
        ))
    return report


@dataclass
class _ChunkOutput:
    """Per-sample results of a log (or of one chunk), and the kinematics kept for diagnosis."""

    r_f: Array
    r_m: Array
    ext: Array
    margin: Array
    util: Array
    normal: Array
    cop: Array
    violated: Array
    keep_positions: Array
    keep_rotations: Array
    keep_joints: Array
    keep_com: Array
    keep_rate: Array
    keep_ext: Array

    @classmethod
    def empty(cls, n: int, k: int, n_keep: int) -> _ChunkOutput:
        nan = np.nan
        return cls(np.full((n, 3), nan), np.full((n, 3), nan), np.full((n, 6), nan), np.full((n, k), nan),
                   np.full((n, k), nan), np.full((n, k), nan), np.full((n, k, 2), nan),
                   np.full((n, k), -1, dtype=np.int16), np.full((n_keep, k, 3), nan),
                   np.full((n_keep, k, 3, 3), nan), np.full((n_keep, k, 3), nan),
                   np.full((n_keep, 3), nan), np.full((n_keep, 6), nan), np.full((n_keep, 6), nan))

    def write(self, part: _ChunkOutput, start: int, stop: int, offset: int) -> None:
        for name in ("r_f", "r_m", "ext", "margin", "util", "normal", "cop", "violated"):
            getattr(self, name)[start:stop] = getattr(part, name)
        m = len(part.keep_com)
        for name in ("keep_positions", "keep_rotations", "keep_joints", "keep_com", "keep_rate", "keep_ext"):
            getattr(self, name)[offset : offset + m] = getattr(part, name)


def _check_chunk(
    robot: Robot, contacts: list[Contact], Q: Array, V: Array, A: Array, W: Array, E: Array | None, skip: Array,
    frames: list[str], e: int, keep: Array, cone_tolerance: float, progress: bool,
) -> _ChunkOutput:
    """Everything :func:`check_trajectory` computes for one chunk of samples."""
    N, k = len(Q), len(contacts)
    kin = kinematics_batch(robot, Q, V, A, frames, skip, rotations=True, progress=progress)
    P = kin.positions[:, :k]
    R = kin.rotations[:, :k]
    com = kin.com
    # Contacts and known external wrenches, each about its own frame origin, in one layout.
    wrenches = W if E is None else np.concatenate([W, E], axis=1)
    points = kin.positions[:, : k + e]
    r_f, r_m = newton_euler_residual_arrays(wrenches, points, com, kin.momentum_rate, mass=robot.mass,
                                           gravity=robot.gravity_vector)
    if E is None:
        ext = np.zeros((N, 6))
    else:  # about the CoM, for the diagnosis
        ext = np.concatenate(wrench_sum(E, kin.positions[:, k : k + e], com), axis=1)

    # Friction, per contact, in its own frame: the one cone home.
    cones = ContactSet(contacts).check(W, R, tol=cone_tolerance * robot.weight)
    margin, util, normal, cop, violated = (cones.margin, cones.utilisation, cones.normal_force, cones.cop,
                                           cones.violated)
    parents = kin.positions[:, k + e :]
    return _ChunkOutput(r_f, r_m, ext, margin, util, normal, cop, violated, P[keep], R[keep], parents[keep],
                        com[keep], kin.momentum_rate[keep], ext[keep])


def _estimate_artifacts(report: Report, edge_samples: int = 10, window: float = 0.02) -> Finding | None:
    """With accelerations differentiated from v, residual at the log's ends and at contact
    make/break (impacts) is expected: say so instead of blaming the forces."""
    if not report.accelerations_estimated:
        return None
    over = np.flatnonzero(report.over_tolerance)
    N = report.n_samples
    at_ends = (over < edge_samples) | (over >= N - edge_samples)
    times = np.array([e[0] for e in report.events])
    near = _near(report.time[over], times, window)
    explained = at_ends | near
    if explained.mean() < 0.8:
        return None
    where = []
    if at_ends.any():
        where.append(f"the log's first/last {edge_samples} samples")
    if near.any():
        where.append(f"within {1e3 * window:.0f} ms of contact make/break")
    t = report.time[over[explained]]
    return Finding(
        "acceleration_estimate", float(explained.mean()),
        f"the residual is over tolerance only at {' and '.join(where)} (t = {t.min():.3f} .. {t.max():.3f} s), "
        "where accelerations differentiated from v are unreliable; log accelerations or smooth (savgol)",
        {"samples": over[explained].tolist()[:100]},
    )


def _near(t: Array, events: Array, window: float) -> Array:
    """For each time in ``t``, is an event within ``window``? (sorted search, O(n log m))"""
    if not len(events):
        return np.zeros(len(t), dtype=bool)
    events = np.sort(events)
    i = np.clip(np.searchsorted(events, t), 1, len(events) - 1) if len(events) > 1 else np.zeros(len(t), int)
    nearest = np.minimum(np.abs(t - events[i]), np.abs(t - events[np.maximum(i - 1, 0)]))
    return nearest <= window


MAX_EVENTS = 10_000  # per contact: a noisy log can chatter at every sample


def _contact_events(time: Array, normal: Array, names: list[str], weight: float, bad: Array) -> list:
    """(time, contact, "make" | "break") where the normal force crosses 2 % of the weight
    (the first :data:`MAX_EVENTS` of each contact)."""
    events = []
    threshold = CONTACT_THRESHOLD * weight
    for j, name in enumerate(names):
        closed = np.where(bad, np.nan, normal[:, j]) > threshold
        change = np.flatnonzero(closed[1:] != closed[:-1])[:MAX_EVENTS]
        for i in change:
            events.append((float(time[i + 1]), name, "make" if closed[i + 1] else "break"))
    return sorted(events)


def estimate_trajectory(
    robot: Robot,
    traj: Trajectory,
    contacts: Sequence[Contact],
    *,
    use_torques: bool = True,
    solver: str | None = None,
    progress: bool = False,
) -> Trajectory:
    """Estimate the contact wrenches of a log by QP; returns a copy with them beside the log's.

    The estimates are stored as contacts named ``"<name>:estimated"`` (so a check or a plot
    can compare them with the logged ones). Full-dynamics mode when the log has joint torques
    and ``use_torques``, else Newton-Euler mode. Statuses go to ``metadata["estimation_status"]``.
    """
    from .estimation import estimate_contact_wrenches_batch

    contacts = list(contacts)
    if traj.a is None:
        traj = traj.with_accelerations(robot)
    q, v, a, tau = traj.for_robot(robot)
    batch = estimate_contact_wrenches_batch(robot, q, v, a, contacts, tau=tau if use_torques else None,
                                            solver=solver, progress=progress)
    N = len(traj)
    est = np.zeros((N, len(contacts), 6))
    for j, c in enumerate(contacts):
        est[:, j, : c.size] = batch.wrench(c.name)
    status_counts = batch.status_counts()
    return replace(
        traj,
        contact_names=traj.contact_names + tuple(f"{c.name}:estimated" for c in contacts),
        contact_wrenches=np.concatenate([traj.contact_wrenches, est], axis=1),
        metadata={**traj.metadata, "estimation_mode": batch.mode, "estimation_status": status_counts},
    )


