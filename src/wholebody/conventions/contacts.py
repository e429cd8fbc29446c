"""The contact checks of :func:`wholebody.conventions.check_conventions`, and the types the
checks share: a loaded contact is still and on the ground. Public through
:mod:`wholebody.conventions`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidArgumentError
from ..robot.batch import com_frames_rows
from ..robot.core import Robot
from ..trajectory import Trajectory

__all__ = [
    "Ground",
    "ConventionCheck",
    "ConventionReport",
    "contact_checks",
    "LOAD_SHARE",
    "STILL_SPEED_FRACTION",
    "GROUND_TOLERANCE_FRACTION",
    "MAX_VIOLATION_SHARE",
    "MIN_VIOLATION_TIME",
]

Array = NDArray[np.float64]

#: A contact is loaded when its normal force exceeds this share of the weight.
LOAD_SHARE = 0.1
#: A loaded contact is still when its frame origin moves slower than this fraction of the
#: robot's pendulum speed ``sqrt(g h)`` (``h``: CoM height above the loaded contacts):
#: 0.05 sqrt(9.81 * 0.75) = 0.14 m/s for the shipped humanoid; a swinging foot moves at
#: 0.3 m/s and more, a foot creeping on MuJoCo's soft contacts at 0.01-0.04 m/s.
STILL_SPEED_FRACTION = 0.05
#: A loaded contact is on the ground when its frame origin is within this fraction of ``h``
#: of the plane: 15 mm at h = 0.75 m (soft contacts sink ~1-5 mm; a foot rolling on an edge
#: at 10 % load lifts its centre ~5 mm; a wrong sole frame is off by centimetres).
GROUND_TOLERANCE_FRACTION = 0.02
#: A contact check fails when its violating samples are more than this share of the
#: contact's loaded samples ...
MAX_VIOLATION_SHARE = 0.02
#: ... and last at least this long in total [s] (an impact settles within a few ms).
MIN_VIOLATION_TIME = 0.02


@dataclass(frozen=True)
class Ground:
    """A ground plane: the points ``p`` with ``normal . (p - (0, 0, height)) = 0``.

    Parameters
    ----------
    height : float
        Height of the plane's point above the world origin, along world z [m].
    normal : array of shape (3,)
        Upward normal, world axes; normalised here. Default ``(0, 0, 1)``.
    """

    height: float = 0.0
    normal: Array = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))

    def __post_init__(self) -> None:
        h = float(self.height)
        n = np.asarray(self.normal, dtype=float)
        if not math.isfinite(h):
            raise InvalidArgumentError(f"ground height must be finite, got {self.height!r}")
        if n.shape != (3,) or not np.all(np.isfinite(n)) or np.linalg.norm(n) < 1e-9:
            raise InvalidArgumentError(
                f"ground normal must be a non-zero finite 3-vector, got {self.normal!r}"
            )
        object.__setattr__(self, "height", h)
        object.__setattr__(self, "normal", n / np.linalg.norm(n))

    def distance(self, points: Array) -> Array:
        """Signed distance of points (..., 3) [m] above the plane, along the normal [m]."""
        return (points - np.array([0.0, 0.0, self.height])) @ self.normal


@dataclass(frozen=True)
class ConventionCheck:
    """The result of one named check.

    Attributes
    ----------
    name : str
        ``"velocity_matches_configuration"``, ``"loaded_contacts_still"`` or
        ``"loaded_contacts_on_ground"``.
    passed : bool
    message : str
        What was found, in words, with the key numbers.
    fix : str
        What to change in the log (empty when passed).
    hypotheses : tuple of str
        The named mistakes whose correction makes the check pass, e.g.
        ``("quaternion_wxyz", "base_linear_velocity_in_world")``; empty when the check
        passed or when no hypothesis fits.
    evidence : dict
        The numbers: per-column statistics, worst samples and values, thresholds.
    """

    name: str
    passed: bool
    message: str
    fix: str = ""
    hypotheses: tuple[str, ...] = ()
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ConventionReport:
    """All convention checks of one log.

    Attributes
    ----------
    all_checks : tuple of ConventionCheck
        Every check run, in order.
    """

    all_checks: tuple[ConventionCheck, ...]

    @property
    def findings(self) -> tuple[ConventionCheck, ...]:
        """The checks that failed."""
        return tuple(c for c in self.all_checks if not c.passed)

    @property
    def passed(self) -> bool:
        """True when every check passed."""
        return not self.findings

    def __getitem__(self, name: str) -> ConventionCheck:
        for c in self.all_checks:
            if c.name == name:
                return c
        raise KeyError(f"no check {name!r}; checks: {[c.name for c in self.all_checks]}")

    def format_summary(self) -> str:
        """One line per check; failed checks with their fix."""
        lines = []
        for c in self.all_checks:
            lines.append(f"{'ok  ' if c.passed else 'FAIL'} {c.name}: {c.message}")
            if not c.passed and c.fix:
                lines.append(f"     fix: {c.fix}")
        return "\n".join(lines)


def contact_checks(
    robot: Robot,
    traj: Trajectory,
    q: Array,
    bad: NDArray[np.bool_],
    frames: list[str],
    ground: Ground | None,
    up: Array,
    placements: tuple[Array, Array] | None = None,
) -> tuple[ConventionCheck, ConventionCheck]:
    """The checks ``loaded_contacts_still`` and ``loaded_contacts_on_ground``.

    ``placements``: (CoM (N, 3), contact frame origins (N, k, 3)), world [m], from a pass the
    caller made (NaN where it made none); the missing samples are placed here.
    """
    N, k = len(traj), len(frames)
    fids = [robot.frame_id(f) for f in frames]
    if placements is None:
        P = np.full((N, k, 3), np.nan)
        com = np.full((N, 3), np.nan)
        todo = ~bad
    else:
        com = np.where(bad[:, None], np.nan, placements[0])
        P = np.where(bad[:, None, None], np.nan, placements[1])
        todo = ~bad & ~(np.isfinite(com).all(axis=1) & np.isfinite(P).all(axis=(1, 2)))
    com_frames_rows(robot, q, np.flatnonzero(todo).tolist(), fids, com, P)
    t = traj.time
    normal = ground.normal if ground is not None else up
    W = traj.contact_wrenches
    with np.errstate(invalid="ignore"):
        fn = W[:, :, :3] @ normal
        loaded = (fn > LOAD_SHARE * robot.weight) & ~bad[:, None]
    height_of = P @ normal  # (N, k) along the normal
    if loaded.any():
        rows = loaded.any(axis=1)
        feet = np.nanmean(np.where(loaded, height_of, np.nan)[rows], axis=1)
        h = float(np.nanmedian(com[rows] @ normal - feet))
    else:
        h = float(np.nanmedian(com @ normal - np.nanmin(height_of, axis=1)))
    h = max(h, 1e-3) if math.isfinite(h) else 1.0
    g = float(np.linalg.norm(robot.gravity_vector))
    speed_tol = STILL_SPEED_FRACTION * math.sqrt(g * h)
    height_tol = GROUND_TOLERANCE_FRACTION * h
    stated = {
        "load_threshold_N": LOAD_SHARE * robot.weight,
        "robot_size_h_m": h,
        "max_violation_share": MAX_VIOLATION_SHARE,
        "min_violation_time_s": MIN_VIOLATION_TIME,
    }
    dt = np.gradient(t)

    speed = np.linalg.norm(np.gradient(P, t, axis=0), axis=2) if N > 1 else np.zeros((N, k))
    if ground is not None:
        offset = ground.distance(P)
        plane = {
            "ground_height_m": ground.height,
            "ground_normal": ground.normal.tolist(),
            "ground": "declared",
        }
    else:
        level = float(np.nanmedian(height_of[loaded])) if loaded.any() else 0.0
        offset = height_of - level
        plane = {
            "ground_height_m": level,
            "ground_normal": normal.tolist(),
            "ground": "estimated: median height of the loaded contacts",
        }
    still = _contact_verdict(
        "loaded_contacts_still",
        traj.contact_names,
        loaded,
        speed,
        speed_tol,
        t,
        dt,
        {**stated, "speed_tolerance_m_s": speed_tol},
        "m/s",
        "loaded contacts move",
        "is still while loaded",
        "check that each wrench is logged with its own contact (names not swapped), that forces "
        "and motion share one clock (no time lag), that a lifted contact's force is zero "
        "(no stale force), and the contact frames; a real slip shows here too",
    )
    on_ground = _contact_verdict(
        "loaded_contacts_on_ground",
        traj.contact_names,
        loaded,
        np.abs(offset),
        height_tol,
        t,
        dt,
        {**stated, "height_tolerance_m": height_tol, **plane},
        "m",
        "loaded contacts are off the ground plane",
        "is on the ground while loaded",
        "check the contact frames (the sole, not the ankle), the ground height and normal, and "
        "that the base position is in the same world frame as the ground",
        signed=offset,
    )
    return still, on_ground


def _contact_verdict(
    name: str,
    contact_names: tuple[str, ...],
    loaded: NDArray[np.bool_],
    value: Array,
    tol: float,
    t: Array,
    dt: Array,
    stated: dict[str, Any],
    unit: str,
    bad_words: str,
    good_words: str,
    fix: str,
    signed: Array | None = None,
) -> ConventionCheck:
    per_contact: dict[str, Any] = {}
    failing = []
    with np.errstate(invalid="ignore"):
        over = loaded & (value > tol)
    for c, cname in enumerate(contact_names):
        n_loaded = int(loaded[:, c].sum())
        idx = np.flatnonzero(over[:, c])
        share = len(idx) / max(n_loaded, 1)
        duration = float(dt[idx].sum())
        fails = share > MAX_VIOLATION_SHARE and duration >= MIN_VIOLATION_TIME
        worst = idx[np.argsort(-value[idx, c])][:5]
        shown = signed if signed is not None else value
        loaded_values = value[loaded[:, c], c]
        per_contact[cname] = {
            "loaded_samples": n_loaded,
            "violating_samples": len(idx),
            "violating_share": share,
            "violating_time_s": duration,
            "max_loaded": float(np.nanmax(loaded_values)) if n_loaded else 0.0,
            "worst": [(int(i), float(t[i]), float(shown[i, c])) for i in worst],
        }
        if fails:
            failing.append(cname)
    evidence = {**stated, "contacts": per_contact, "unit": unit}
    if not failing:
        return ConventionCheck(
            name,
            True,
            f"every contact {good_words} (tolerance {tol:.3g} {unit})",
            evidence=evidence,
        )
    parts = []
    for cname in failing:
        e = per_contact[cname]
        i, ti, val = e["worst"][0]
        parts.append(
            f"{cname!r} for {e['violating_time_s']:.3g} s ({e['violating_share']:.0%} of "
            f"its loaded samples), worst {val:.3g} {unit} at t = {ti:.4g} s (sample {i})"
        )
    message = f"{bad_words} (tolerance {tol:.3g} {unit}): " + "; ".join(parts)
    return ConventionCheck(name, False, message, fix, (), evidence)
