"""The convention checks of a log, run before any dynamics: the machinery of
:func:`wholebody.conventions.check_conventions`, the types the checks share
(:class:`ConventionCheck`, :class:`ConventionReport`, :class:`Ground`), and each check: the run
over one log (:func:`run_conventions`, which :mod:`wholebody.check` calls with the CoM and
contact origins of its own pass); the velocity check, ``v`` against the manifold derivative of
``q``, with its hypotheses; the contact checks (a loaded contact is still and on the ground);
the joint limits and joint angles logged in degrees. Private; the public names are in
:mod:`wholebody.conventions`.

The per-column statistics work on columns stored as contiguous rows (nv, N), and without
NaN handling when there is no NaN: the same values as numpy's NaN-aware functions.

**Joint limits and degrees.** A log whose joint angles, velocities and accelerations are all in
degrees still has ``v`` equal to ``dq/dt`` (the velocity check passes); the robot it describes
is then folded far beyond its joints' limits, and its contacts seem to move at tens of m/s.
This check flags each sample whose joint is beyond its limits (with the joint), and names the
degrees when reading the angles as degrees puts every joint within them (a failed check).
Joints beyond their limits otherwise pass the check (the balance is not at stake: a simulator
may not enforce a URDF's limits), flagged per sample in its evidence and said as a note beside
the verdict (:func:`wholebody.diagnosis.notes.limit_notes`).

Model: a joint is beyond its limits when its position is outside ``[lower - s, upper + s]``,
``s = LIMIT_SLACK_RAD + LIMIT_SLACK_SHARE * (upper - lower)`` (simulators enforce limits
softly: a few milliradians of penetration are normal). Only one-coordinate joints with finite
limits (``lower < upper``) are checked.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

import numpy as np
from numpy.typing import NDArray

from ..contacts import Contact
from ..errors import InvalidArgumentError, LogFormatError
from ..robot.batch import com_frames_rows, consecutive_differences
from ..robot.core import Robot
from ..spatial import rotation_from_quat_xyzw
from ..trajectory import Trajectory
from .noise import Noise, measure_noise, measure_stamps, sigmas

__all__ = [
    "run_conventions",
    "velocity_check",
    "VELOCITY_RELATIVE_FLOOR",
    "NOISE_SIGMAS",
    "MAX_DISAGREEING_SHARE",
    "Ground",
    "ConventionCheck",
    "ConventionReport",
    "contact_checks",
    "LOAD_SHARE",
    "STILL_SPEED_FRACTION",
    "GROUND_TOLERANCE_FRACTION",
    "MAX_VIOLATION_SHARE",
    "MIN_VIOLATION_TIME",
    "joint_limit_check",
    "limited_joints",
    "LIMIT_SLACK_RAD",
    "LIMIT_SLACK_SHARE",
    "CHECK_NAME",
]


Array = NDArray[np.float64]
P = ParamSpec("P")
T = TypeVar("T")


def quiet_empty_slices(fn: Callable[P, T]) -> Callable[P, T]:
    """Silence numpy's "All-NaN slice" / "Mean of empty slice" warnings inside ``fn``: a log
    whose samples are all flagged has empty statistics, which the results say (NaN, inf)."""

    @functools.wraps(fn)
    def quiet(*args: P.args, **kwargs: P.kwargs) -> T:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return fn(*args, **kwargs)

    return quiet


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
    h = _robot_size(com, height_of, loaded, normal)
    still_speed = STILL_SPEED_FRACTION * math.sqrt(float(np.linalg.norm(robot.gravity_vector)) * h)
    noise, speed, window, speed_noise, height_noise = _position_noise(
        P, t, loaded, normal, still_speed
    )
    speed_tol = still_speed + speed_noise
    height_tol = GROUND_TOLERANCE_FRACTION * h + height_noise
    stated = {
        "load_threshold_N": LOAD_SHARE * robot.weight,
        "robot_size_h_m": h,
        "max_violation_share": MAX_VIOLATION_SHARE,
        "min_violation_time_s": MIN_VIOLATION_TIME,
        "position_noise_m": float(np.max(noise.std, initial=0.0)),
    }
    dt = np.gradient(t) if N > 1 else np.zeros(N)
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
        {**stated, "speed_tolerance_m_s": speed_tol, "speed_noise_m_s": speed_noise}
        | {"speed_window_s": window},
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
        {**stated, "height_tolerance_m": height_tol, "height_noise_m": height_noise, **plane},
        "m",
        "loaded contacts are off the ground plane",
        "is on the ground while loaded",
        "check the contact frames (the sole, not the ankle), the ground height and normal, and "
        "that the base position is in the same world frame as the ground",
        signed=offset,
    )
    return still, on_ground


def _robot_size(com: Array, height_of: Array, loaded: NDArray[np.bool_], normal: Array) -> float:
    """The robot's size [m]: the CoM's median height over its loaded contacts (over the
    lowest contact where none is loaded) along the ``normal``; ``height_of`` (N, k) the
    contacts' heights along it."""
    if loaded.any():
        rows = loaded.any(axis=1)
        feet = np.nanmean(np.where(loaded, height_of, np.nan)[rows], axis=1)
        h = float(np.nanmedian(com[rows] @ normal - feet))
    else:
        h = float(np.nanmedian(com @ normal - np.nanmin(height_of, axis=1)))
    return max(h, 1e-3) if math.isfinite(h) else 1.0


def _position_noise(
    P: Array, t: Array, loaded: NDArray[np.bool_], normal: Array, tolerance: float
) -> tuple[Noise, Array, float, float, float]:
    """The noise of the contacts' positions ``P`` (N, k, 3) [m] (measured,
    :func:`~wholebody.conventions.noise.measure_noise`), their speeds (:func:`_contact_speed`
    against ``tolerance`` [m/s]: speeds, window [s], the speed bound's noise share [m/s]), and
    the height bound's noise share [m]: :func:`~wholebody.conventions.noise.sigmas` over the
    loaded samples times the position noise along the ``normal``."""
    N, k = P.shape[:2]
    steps = np.diff(t)
    step = float(np.nanmedian(steps)) if len(steps) and np.isfinite(steps).any() else 1.0
    noise = measure_noise(P.reshape(N, 3 * k), step)
    n_indep = max(float(loaded.sum()), 1.0)
    speed, window, speed_noise = _contact_speed(P, t, noise, tolerance, n_indep)
    height = float(np.max(np.sqrt((noise.std.reshape(k, 3) ** 2) @ normal**2), initial=0.0))
    return noise, speed, window, speed_noise, sigmas(n_indep) * height


#: A contact's speed is read from its positions over at most this long a window [s] (a
#: sample's neighbours at +-w samples: the noise of the positions shrinks as 1 / w).
MAX_SPEED_WINDOW = 0.1


def _contact_speed(
    P: Array, t: Array, noise: Noise, tolerance: float, independent: float
) -> tuple[Array, float, float]:
    """The contacts' speeds (N, k) [m/s] from their positions ``P`` (N, k, 3) over the
    shortest window ``t[i + w] - t[i - w]`` whose speed noise (from the positions' measured
    noise, :class:`~wholebody.conventions.noise.Noise`, at ``sigmas(independent)``
    standard deviations) is within half the ``tolerance``, at most
    :data:`MAX_SPEED_WINDOW`; that window [s] and that noise [m/s] (the bound's share)."""
    N, k = P.shape[:2]
    if N < 2:
        return np.zeros((N, k)), 0.0, 0.0
    step = noise.dt
    longest = max(1, int(MAX_SPEED_WINDOW / (2 * step)))
    kappa = sigmas(independent)
    w, speed_noise = 1, np.inf
    while True:
        c = noise.autocovariance(np.array([0.0, 2.0 * w]))  # (2, 3k)
        var = 2.0 * (c[0] - c[1]) / (2.0 * w * step) ** 2  # each axis's speed
        speed_noise = kappa * float(np.max(np.sqrt(var.reshape(k, 3).sum(axis=1))))
        if speed_noise <= 0.5 * tolerance or 2 * w > longest:
            break
        w *= 2
    i = np.arange(N)
    hi, lo = np.minimum(i + w, N - 1), np.maximum(i - w, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        speed = np.linalg.norm(P[hi] - P[lo], axis=2) / (t[hi] - t[lo])[:, None]
    return speed, 2.0 * w * step, speed_noise


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


#: Absolute slack beyond a limit [rad or m] (soft limits of simulators).
LIMIT_SLACK_RAD = 0.02


#: ... plus this share of the joint's range.
LIMIT_SLACK_SHARE = 0.01


#: The check's name in :class:`~wholebody.conventions.ConventionReport`.
CHECK_NAME = "joint_positions_within_limits"


_MAX_LISTED = 1000  # per-sample flags kept in the evidence


def limited_joints(robot: Robot) -> list[tuple[str, int, float, float, bool]]:
    """(name, index in q, lower, upper, revolute) of each one-coordinate joint with finite
    limits ``lower < upper``."""
    model = robot.model
    out = []
    for name in robot.joint_names:
        jm = model.joints[model.getJointId(name)]
        if jm.nq != 1:
            continue
        i = jm.idx_q
        lo, hi = float(model.lowerPositionLimit[i]), float(model.upperPositionLimit[i])
        if not (np.isfinite(lo) and np.isfinite(hi)) or not lo < hi or max(abs(lo), abs(hi)) > 1e6:
            continue
        revolute = "Prismatic" not in jm.shortname() and "P" not in jm.shortname()[-2:]
        out.append((name, i, lo, hi, revolute))
    return out


def _beyond(Q: Array, lo: Array, hi: Array) -> NDArray[np.bool_]:
    slack = LIMIT_SLACK_RAD + LIMIT_SLACK_SHARE * (hi - lo)
    with np.errstate(invalid="ignore"):
        return (Q < lo - slack) | (Q > hi + slack)


def joint_limit_check(
    robot: Robot, q: Array, bad: NDArray[np.bool_] | None = None, time: Array | None = None
) -> ConventionCheck:
    """Flag samples whose joints are beyond their URDF limits; name degrees when reading the
    revolute joints' angles as degrees puts every sample within them.

    Parameters
    ----------
    q : ndarray, shape (N, nq)
        Configurations in the robot's layout.
    bad : ndarray of bool, shape (N,), optional
        Samples already flagged (not judged).
    time : ndarray, shape (N,), optional
        [s], for the message.

    Returns
    -------
    ConventionCheck
        ``evidence["flagged"]``: sample -> "joint 'x' at 45 beyond [0, 2.4]" (the first
        1000); ``evidence["joints"]``: per joint, samples beyond and the worst value;
        hypothesis ``"joint_angles_in_degrees"`` when it fits.
    """
    joints = limited_joints(robot)
    N = len(q)
    ok = np.ones(N, dtype=bool) if bad is None else ~np.asarray(bad, dtype=bool)
    stated = {"slack": f"{LIMIT_SLACK_RAD} + {LIMIT_SLACK_SHARE} x range", "checked": len(joints)}
    if not joints or not ok.any():
        return ConventionCheck(CHECK_NAME, True, "no joint limits to check", evidence=stated)
    idx = np.array([j[1] for j in joints])
    lo = np.array([j[2] for j in joints])
    hi = np.array([j[3] for j in joints])
    revolute = np.array([j[4] for j in joints])
    Q = np.where(ok[:, None], q[:, idx], np.nan)
    beyond = _beyond(Q, lo, hi)
    if not beyond.any():
        return ConventionCheck(
            CHECK_NAME,
            True,
            f"every joint within its URDF limits ({len(joints)} joints checked)",
            evidence=stated,
        )
    per_joint: dict[str, Any] = {}
    flagged: dict[int, str] = {}
    for c in np.flatnonzero(beyond.any(axis=0)):
        rows = np.flatnonzero(beyond[:, c])
        worst = int(rows[np.argmax(np.maximum(lo[c] - Q[rows, c], Q[rows, c] - hi[c]))])
        name = joints[c][0]
        per_joint[name] = {
            "samples": int(len(rows)),
            "first": int(rows[0]),
            "worst_sample": worst,
            "worst_value": float(Q[worst, c]),
            "limits": [float(lo[c]), float(hi[c])],
        }
        for r in rows:
            if len(flagged) >= _MAX_LISTED:
                break
            flagged.setdefault(
                int(r), f"joint {name!r} at {Q[r, c]:.4g} beyond [{lo[c]:.4g}, {hi[c]:.4g}]"
            )
    evidence: dict[str, Any] = {**stated, "joints": per_joint, "flagged": flagged}
    rows_beyond = beyond.any(axis=1)
    # Degrees: the revolute joints' angles read as degrees are all within their limits, and
    # the log is far beyond them as it is (a few joints over by a little is not degrees).
    Qd = np.where(revolute, np.radians(Q), Q)
    in_degrees = (
        revolute[beyond.any(axis=0)].all()
        and not _beyond(Qd, lo, hi).any()
        and float(np.nanmax(np.abs(Q[:, revolute]))) > 2 * np.pi
    )
    names = list(per_joint)
    shown = ", ".join(f"{n!r} ({per_joint[n]['samples']} samples)" for n in names[:6])
    more = f" and {len(names) - 6} more" if len(names) > 6 else ""
    first = int(np.flatnonzero(rows_beyond)[0])
    when = f" from {time[first]:.3f} s" if time is not None else f" from sample {first}"
    if in_degrees:
        return ConventionCheck(
            CHECK_NAME,
            False,
            f"joints beyond their URDF limits on {int(rows_beyond.sum())} samples{when}: "
            f"{shown}{more}; every joint is within them with the angles read as degrees",
            "joint angles are in degrees (with v equal to dq/dt, the velocities and "
            "accelerations too); convert q, v and a of the revolute joints to radians",
            ("joint_angles_in_degrees",),
            evidence,
        )
    # Beyond the limits, not degrees: the balance is not at stake (a simulator may not enforce
    # a URDF's limits; a start at the neutral pose may be outside them). The check passes; the
    # samples are flagged in the evidence and said as a note beside the verdict.
    return ConventionCheck(
        CHECK_NAME,
        True,
        f"joints beyond their URDF limits on {int(rows_beyond.sum())} samples{when}: "
        f"{shown}{more} (flagged per sample in the evidence; check the joint order and "
        "offsets against the URDF, or the URDF's limits)",
        "",
        (),
        evidence,
    )


#: A ``v`` column may differ from the derivative of ``q`` by the change of ``v`` between
#: adjacent samples (what any sample-and-difference scheme can be off by), plus this share of
#: the column's velocity scale (90th percentile of ``|v|``): 1 %.
VELOCITY_RELATIVE_FLOOR = 0.01


#: ... plus this many standard deviations of the noise of the derivative of ``q`` (estimated
#: from its second differences).
NOISE_SIGMAS = 4.0


#: A column disagrees when more than this share of its samples is beyond that bound (a few
#: impact samples do not make a disagreement).
MAX_DISAGREEING_SHARE = 0.05


#: The velocity check needs this many samples where ``v`` and ``dq/dt`` are both known; with
#: fewer it says it could not run (it neither passes nor fails the log on them).
MIN_VELOCITY_SAMPLES = 10


_BASE_COLUMNS = ("base_vx", "base_vy", "base_vz", "base_wx", "base_wy", "base_wz")


_DEG = 180.0 / math.pi


_SCALE_MATCH = 0.1  # a fitted scale "is" 180/pi or 1000 within 10 %


@quiet_empty_slices
def run_conventions(
    robot: Robot,
    traj: Trajectory,
    contacts: Sequence[Contact],
    *,
    ground: Ground | float | None = None,
    placements: tuple[Array, Array] | None = None,
    states: tuple[Array, Array, NDArray[np.bool_]] | None = None,
) -> ConventionReport:
    """:func:`wholebody.conventions.check_conventions`, reusing the work the caller already
    did: ``placements`` = (CoM (N, 3), contact frame origins (N, k, 3) in the log's contact
    order), world [m], NaN on samples it did not compute (those are computed here);
    ``states`` = (q (N, nq), v (N, nv), flagged (N,)), ``traj``'s ``q`` and ``v`` in the
    robot's order as :meth:`Robot.check_batch` of ``q`` and ``v`` returns them and the rows it
    flags (the check is then not repeated)."""
    traj = traj.at_frame_origins(robot, contacts)  # wrenches stated about other points
    frames = _contact_frames(traj, contacts)
    if states is None:
        q, v, _, _ = traj.for_robot(robot)
        arrays, flagged, _ = robot.check_batch(q=q, v=v)
        states = (arrays["q"], arrays["v"], flagged)
    q, v = states[0], states[1]
    bad = np.asarray(states[2], dtype=bool)
    if len(traj) < 5:
        raise LogFormatError(
            f"{traj.source}: convention checks need at least 5 samples, the log has {len(traj)}"
        )
    up = -robot.gravity_vector / np.linalg.norm(robot.gravity_vector)
    if isinstance(ground, (int, float)) and not isinstance(ground, bool):
        ground = Ground(float(ground), up)
    elif ground is not None and not isinstance(ground, Ground):
        raise InvalidArgumentError(f"ground must be a Ground, a height [m] or None, got {ground!r}")
    names = list(_BASE_COLUMNS) + list(robot.joint_names)
    velocity = velocity_check(robot, traj.time, q, v, bad, names, _float_epsilon(traj))
    still, on_ground = contact_checks(robot, traj, q, bad, frames, ground, up, placements)
    limits = joint_limit_check(robot, q, bad, traj.time)
    return ConventionReport((velocity, still, on_ground, limits))


def _float_epsilon(traj: Trajectory) -> float:
    """The machine epsilon of the numbers the log was computed in: the recorders of float32
    engines (MJX, MuJoCo Warp, Newton) state it as ``metadata["float_epsilon"]``."""
    value = traj.metadata.get("float_epsilon")
    if isinstance(value, (int, float)) and 0.0 < float(value) < 1e-2:
        return max(float(value), float(np.finfo(float).eps))
    return float(np.finfo(float).eps)


def _contact_frames(traj: Trajectory, contacts: Sequence[Contact]) -> list[str]:
    by_name = {c.name: c for c in contacts}
    undeclared = [n for n in traj.contact_names if n not in by_name]
    if undeclared:
        raise LogFormatError(
            f"{traj.source}: the log has contacts {undeclared} that are not "
            f"declared; declared: {sorted(by_name)}"
        )
    return [by_name[n].frame for n in traj.contact_names]


# --- v against dq/dt ------------------------------------------------------------------------


class _Agreement:
    """Per-column agreement of ``v`` with the manifold derivative ``d`` of ``q``.

    ``share``, ``motion`` and ``fails`` are computed at once; ``median_error`` and ``scale``
    (evidence and hypotheses of a failing check) on first use, from the arrays kept here.
    """

    def __init__(
        self,
        share: Array,
        motion: Array,
        fails: NDArray[np.bool_],
        rows: tuple[Array, Array, Array, Array, NDArray[np.bool_]],
    ):
        self.share = share  # (nv,) share of samples beyond the bound
        self.motion = motion  # (nv,) 90th percentile of |v|
        self.fails = fails  # (nv,)
        self.n_valid = int(rows[4].sum(axis=1).max(initial=0))  # samples with v and dq/dt
        self._rows: tuple[Array, Array, Array, Array, NDArray[np.bool_]] | None = rows
        self._error: Array | None = None
        self._scale: Array | None = None

    @property
    def median_error(self) -> Array:
        """(nv,) median |v - d|."""
        self._evaluate()
        assert self._error is not None
        return self._error

    @property
    def scale(self) -> Array:
        """(nv,) fitted v / d on the moving half of the samples."""
        self._evaluate()
        assert self._scale is not None
        return self._scale

    def _evaluate(self) -> None:
        if self._rows is None:
            return
        vT, dT, abs_d, r, valid = self._rows
        with np.errstate(invalid="ignore"):
            scale = np.full(vT.shape[0], np.nan)
            typical = _row_median(abs_d)  # per column, as nanmedian of that column alone
            moving_all = valid & (abs_d >= typical[:, None]) & (abs_d > 0)
            for j in np.flatnonzero(moving_all.sum(axis=1) >= 3):
                moving = moving_all[j]
                scale[j] = np.median(vT[j, moving] / dT[j, moving])
            self._scale, self._error = scale, _row_median(r, scratch=True)
        self._rows = None


def _row_median(x: Array, *, scratch: bool = False) -> Array:
    """``np.nanmedian(x, axis=1)`` of a C-contiguous (m, N); without NaN, ``np.median`` gives
    the same values several times faster (no per-row NaN removal). ``scratch``: ``x`` may be
    reordered (no copy)."""
    if np.isnan(x).any():
        return np.asarray(np.nanmedian(x, axis=1))
    return np.asarray(np.median(x, axis=1, overwrite_input=scratch))


def _row_percentile(x: Array, p: float, *, scratch: bool = False) -> Array:
    """``np.nanpercentile(x, p, axis=1)`` of a C-contiguous (m, N), likewise."""
    if np.isnan(x).any():
        return np.asarray(np.nanpercentile(x, p, axis=1))
    return np.asarray(np.percentile(x, p, axis=1, overwrite_input=scratch))


def _noise_sigma(x: Array) -> Array:
    """Robust white-noise std of each column from its second differences (var = 6 sigma^2)."""
    if x.shape[0] < 3:
        return np.zeros(x.shape[1])
    return _noise_sigma_rows(np.ascontiguousarray(x.T))


def _noise_sigma_rows(xT: Array) -> Array:
    """:func:`_noise_sigma` of the transposed (m, N) array."""
    if xT.shape[1] < 3:
        return np.zeros(xT.shape[0])
    d2 = xT[:, 2:] - 2 * xT[:, 1:-1] + xT[:, :-2]
    return np.asarray(1.4826 * _row_median(np.abs(d2), scratch=True) / math.sqrt(6.0))


def _velocity_rows(robot: Robot, t: Array, q: Array) -> Array:
    """Velocities from configurations by central differences on the manifold, as
    :func:`wholebody.robot.differentiation.estimate_velocities` (tangents between consecutive
    samples, vectorised: :func:`wholebody.robot.batch.consecutive_differences`), transposed:
    (nv, N), one column of ``v`` per contiguous row."""
    fwd = consecutive_differences(robot, q)
    dt = np.diff(t)
    fwd /= dt
    out = np.empty((robot.nv, q.shape[0]))
    out[:, 0], out[:, -1] = fwd[:, 0], fwd[:, -1]
    # Central: average of the two one-sided differences, weighted for uneven steps.
    w = dt[1:] / (dt[:-1] + dt[1:])
    middle = out[:, 1:-1]
    np.multiply(w, fwd[:, :-1], out=middle)
    middle += (1 - w) * fwd[:, 1:]
    return out


def _velocities(robot: Robot, t: Array, q: Array) -> Array:
    """:func:`_velocity_rows` as (N, nv)."""
    return _velocity_rows(robot, t, q).T


def _agreement_eps(
    robot: Robot,
    t: Array,
    q: Array,
    v: Array,
    bad: NDArray[np.bool_],
    float_eps: float = float(np.finfo(float).eps),
    noise: Array | None = None,
    jitter: float = 0.0,
) -> _Agreement:
    """Per-column agreement of ``v`` with ``dq/dt`` (``docs/conventions-checks.md``):
    ``noise`` (nv,) the std of ``v - dq/dt`` from the noise measured in both (else the white
    noise of ``dq/dt``), ``jitter`` the stamps' [s]."""
    # Columns as contiguous rows (nv, N): the per-column statistics partition rows.
    dT = _velocity_rows(robot, t, q)
    vT = np.ascontiguousarray(v.T)
    if bad.any():
        dT[:, bad] = np.nan
        vT[:, bad] = np.nan
    signed = span = None
    if jitter > 0:  # over a window whose span the stamps' jitter hardly changes
        signed, span = _windowed_residual(robot, t, q, vT, jitter)
        r = np.abs(signed)
    else:
        r = np.subtract(vT, dT)
        np.abs(r, out=r)
    dv = np.diff(vT, axis=1)
    np.abs(dv, out=dv)
    change = np.empty_like(vT)  # the larger adjacent change of v
    change[:, 0] = 0.0
    change[:, 1:] = dv
    np.fmax(change[:, :-1], dv, out=change[:, :-1])
    del dv
    adjacent = change.copy() if signed is not None else change
    abs_d = np.abs(dT)
    with np.errstate(invalid="ignore"):
        motion = np.fmax(_row_percentile(np.abs(vT), 90, scratch=True), _row_percentile(abs_d, 90))
        eps = 1e3 * np.finfo(float).eps * (1.0 + np.nanmax(np.abs(q[:, 7:]), initial=1.0))
        if float_eps > np.finfo(float).eps:  # q and v rounded to a coarser float (float32)
            eps = max(eps, 4.0 * float_eps * (1.0 + np.nanmax(np.abs(q), initial=1.0)))
        sigma = _noise_sigma_rows(dT) if noise is None else noise
        if signed is not None:  # the windowed residual's own noise (it holds no motion)
            sigma = measure_noise(signed.T, float(np.nanmedian(np.diff(t)))).std
        floor = np.fmax(VELOCITY_RELATIVE_FLOOR * motion, NOISE_SIGMAS * sigma)
        change += floor[:, None]
        if span is not None:  # a span whose two stamps each err by the jitter
            relative = math.sqrt(2.0) * jitter / span
            change += NOISE_SIGMAS * np.abs(vT) * relative
        change += eps / float(np.nanmedian(np.diff(t)))
        # The data's own resolution: rounding of q (float32: 6e-8 of a base height of 1 m)
        # divided by the step, and of v itself.
        change += _rounding_bound(q, vT, t)
        over = r > change  # beyond the bound: change + floor + eps / dt
        valid = np.isfinite(r)
        share = over.sum(axis=1) / np.maximum(valid.sum(axis=1), 1)
    fails = share > MAX_DISAGREEING_SHARE
    if signed is not None and span is not None:  # the jitter's allowance is random; a scale is not
        window = float(np.nanmedian(span) / np.nanmedian(np.diff(t)))
        fails |= _scale_error(vT, signed, adjacent, sigma * math.sqrt(window), relative)
    return _Agreement(share, motion, fails, (vT, dT, abs_d, r, valid))


#: With jittering stamps, ``v`` is compared with ``dq/dt`` over windows of up to this many
#: steps each side, the fewest whose span the jitter changes by at most
#: :data:`JITTER_SHARE` (one standard deviation).
MAX_JITTER_STEPS = 16
JITTER_SHARE = 0.01


def _windowed_residual(
    robot: Robot, t: Array, q: Array, vT: Array, jitter: float
) -> tuple[Array, Array]:
    """(nv, N) ``v`` against ``dq/dt`` over the window ``[i - k, i + k]``, signed: the
    trapezoid integral of ``v`` over the stamped steps less the tangents of ``q`` (summed
    consecutive differences on the manifold), over the window's span; and that span (N,)
    [s]. ``k``: the fewest steps (up to :data:`MAX_JITTER_STEPS`) at which the stamps'
    jitter (``sqrt 2 jitter`` on a span) is :data:`JITTER_SHARE` of the span. A stamp's
    error enters only at the window's two ends, so the comparison is unbiased (a ratio of
    jittered steps is not: a central difference over jittered steps is biased by their
    spread) and holds across gaps (a dropped block's step is integrated like any). NaN at
    the log's ends and wherever a window holds a flagged sample."""
    step = float(np.nanmedian(np.diff(t)))
    k = int(
        min(
            MAX_JITTER_STEPS,
            max(1, math.ceil(math.sqrt(2.0) * jitter / (2.0 * JITTER_SHARE * step))),
        )
    )
    dt = np.diff(t)
    per_step = 0.5 * (vT[:, :-1] + vT[:, 1:]) * dt - consecutive_differences(robot, q)
    known = np.isfinite(per_step).all(axis=0) & np.isfinite(dt)
    C = np.concatenate(
        [np.zeros((len(vT), 1)), np.cumsum(np.where(known, per_step, 0.0), axis=1)], axis=1
    )
    T = np.r_[0.0, np.cumsum(np.where(known, dt, 0.0))]
    B = np.r_[0, np.cumsum(~known)]
    N = len(t)
    out = np.full(vT.shape, np.nan)
    span = np.full(N, np.nan)
    i = np.arange(k, N - k)
    ok = B[i + k] == B[i - k]
    span[i] = T[i + k] - T[i - k]
    out[:, i] = np.where(ok, (C[:, i + k] - C[:, i - k]) / span[i], np.nan)
    return out, span


def _scale_error(
    vT: Array, signed: Array, change: Array, sigma: Array, relative: Array
) -> NDArray[np.bool_]:
    """(nv,) columns whose ``v`` is off ``dq/dt`` by a common factor beyond what the stamps'
    jitter, the noise and the motion's discretisation allow: the least-squares slope
    ``s = sum v (v - dq/dt) / sum v^2`` of the signed windowed errors ``signed`` (nv, N)
    against :data:`VELOCITY_RELATIVE_FLOOR`, plus the ``change``-weighted discretisation
    bound (``sum |v| change / sum v^2``, ``change`` the adjacent change of ``v``), plus
    :data:`NOISE_SIGMAS` standard deviations of ``s`` from the jitter (each sample's error
    ``v relative``, ``relative`` (N,) the stamps' sqrt 2 jitter over the window's span) and
    the noise ``sigma`` (nv,) (per independent window). The per-sample jitter allowance
    averages out over a log; a clock running fast, or ``v`` scaled, does not."""
    ok = np.isfinite(signed) & np.isfinite(vT) & np.isfinite(change) & np.isfinite(relative)
    v = np.where(ok, vT, 0.0)
    relative = np.where(np.isfinite(relative), relative, 0.0)
    power = (v * v).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = (v * np.where(ok, signed, 0.0)).sum(axis=1) / power
        var = ((v**4) * relative**2).sum(axis=1) + sigma**2 * power
        allowed = (
            VELOCITY_RELATIVE_FLOOR
            + (np.abs(v) * np.where(ok, change, 0.0)).sum(axis=1) / power
            + NOISE_SIGMAS * np.sqrt(var) / power
        )
    return np.asarray((power > 0) & (np.abs(slope) > allowed))


def _central_steps(t: Array) -> Array:
    """(N,) the span of each sample's difference: ``t[i+1] - t[i-1]`` inside, one step at
    the ends [s]."""
    dt = np.diff(t)
    out = np.empty(len(t))
    if not len(dt):
        return np.full(len(t), np.inf)
    out[1:-1] = dt[:-1] + dt[1:]
    out[0], out[-1] = dt[0], dt[-1]
    return out


def _rounding_bound(q: Array, vT: Array, t: Array) -> Array:
    """(nv, N) bound on ``|v - dq/dt|`` from the storage rounding of ``q``, ``v`` and time:
    a central difference of positions rounded by ``s/2`` each is off by up to ``s / (2 dt)``
    per sample pair (``s`` the step of float32 or float64 at the values' magnitude), base
    translations mixed by the rotation (their largest step), the quaternion's step per
    unit norm for the angular velocity."""
    from ..io.logfiles.fields import is_float32, storage_resolution

    single = is_float32(q) or is_float32(vT)
    step_q = storage_resolution(q, single)  # (N, nq)
    dt = np.diff(t)
    dt_i = np.empty(len(t))
    if len(dt):
        dt_i[1:-1] = 0.5 * (dt[:-1] + dt[1:]) if len(dt) > 1 else dt[0]
        dt_i[0], dt_i[-1] = dt[0], dt[-1]
    else:
        dt_i[:] = np.inf
    nv = vT.shape[0]
    per = np.empty((nv, len(t)))
    per[:3] = np.nanmax(step_q[:, :3], axis=1)
    per[3:6] = 2.0 * np.nanmax(step_q[:, 3:7], axis=1)
    per[6:] = step_q[:, 7 : 7 + nv - 6].T
    # A time step rounded too: the velocity times its relative error (time may be stored in
    # float32 while q and v are not).
    step_t = storage_resolution(t, single or is_float32(t))
    bound = per / dt_i + np.abs(vT) * (step_t / dt_i)
    bound += storage_resolution(vT, single)
    return np.nan_to_num(bound, nan=0.0, posinf=0.0)


def _velocity_noise(
    robot: Robot, t: Array, q: Array, v: Array, bad: NDArray[np.bool_], step: float
) -> Array:
    """(nv,) std of the noise of ``v - dq/dt`` per column: the noise measured in ``v`` and in
    the manifold derivative of ``q`` (:func:`~wholebody.conventions.noise.measure_noise`),
    their white and correlated parts together."""
    if len(t) < 3:
        return np.zeros(v.shape[1])
    d = _velocities(robot, t, q)
    d[bad], vv = np.nan, np.where(bad[:, None], np.nan, v)
    step = step if np.isfinite(step) and step > 0 else 1.0
    return np.asarray(np.hypot(measure_noise(vv, step).std, measure_noise(d, step).std))


def _near(value: float, target: float) -> bool:
    return bool(np.isfinite(value) and abs(value / target - 1.0) < _SCALE_MATCH)


_BASE_HYPOTHESES = {
    "quaternion_wxyz": "the base quaternion is w-x-y-z; reorder it to x-y-z-w "
    "(q[3:7] = q[[4, 5, 6, 3]]), or use wholebody.sim.mujoco.trajectory_from_mujoco for MuJoCo "
    "qpos",
    "base_linear_velocity_in_world": "the base linear velocity is in world axes; express it in "
    "the base frame (v_lin = R^T v_world)",
    "base_angular_velocity_in_world": "the base angular velocity is in world axes; express it "
    "in the base frame (omega = R^T omega_world)",
    # A value already in base axes converted as if it were in world axes (R^T applied once too
    # often; Genesis gives the base angular velocity in base axes): undo with R.
    "base_linear_velocity_rotated_twice": "the base linear velocity was already in base axes "
    "and was converted again as if in world axes; drop that conversion (v_lin = R v_logged)",
    "base_angular_velocity_rotated_twice": "the base angular velocity was already in base axes "
    "and was converted again as if in world axes (as a Genesis logger that treats its base-axes "
    "angular velocity as world); drop that conversion (omega = R omega_logged)",
}


# Hypotheses that exclude each other (one conversion of one part at a time).
_EXCLUSIVE = (
    {"base_linear_velocity_in_world", "base_linear_velocity_rotated_twice"},
    {"base_angular_velocity_in_world", "base_angular_velocity_rotated_twice"},
)


def _fix_base(q: Array, v: Array, names: tuple[str, ...]) -> tuple[Array, Array]:
    q, v = q.copy(), v.copy()
    if "quaternion_wxyz" in names:
        q[:, 3:7] = q[:, [4, 5, 6, 3]]
    R = rotation_from_quat_xyzw(q[:, 3:7])
    if "base_linear_velocity_in_world" in names:
        v[:, :3] = np.einsum("nji,nj->ni", R, v[:, :3])
    if "base_angular_velocity_in_world" in names:
        v[:, 3:6] = np.einsum("nji,nj->ni", R, v[:, 3:6])
    if "base_linear_velocity_rotated_twice" in names:
        v[:, :3] = np.einsum("nij,nj->ni", R, v[:, :3])
    if "base_angular_velocity_rotated_twice" in names:
        v[:, 3:6] = np.einsum("nij,nj->ni", R, v[:, 3:6])
    return q, v


def velocity_check(
    robot: Robot,
    t: Array,
    q: Array,
    v: Array,
    bad: NDArray[np.bool_],
    names: list[str],
    float_eps: float = float(np.finfo(float).eps),
) -> ConventionCheck:
    """``v`` against the manifold derivative of ``q``, column by column (``names``: the nv
    columns); when they disagree, the named hypotheses are tested by correcting the log and
    checking again: time scaled, base conventions, joints in degrees, joint columns
    permuted between ``q`` and ``v``."""
    name = "velocity_matches_configuration"
    dt = float(np.nanmedian(np.diff(t))) if len(t) > 1 else float("nan")
    stamps = measure_stamps(t)
    noise = _velocity_noise(robot, t, q, v, bad, stamps.step)

    def agree(t: Array, q: Array, v: Array) -> _Agreement:
        return _agreement_eps(
            robot, t, q, v, bad, float_eps, noise, stamps.jitter if stamps.jitters else 0.0
        )

    given = agree(t, q, v)
    n_valid = given.n_valid
    if n_valid < MIN_VELOCITY_SAMPLES:
        return ConventionCheck(
            name,
            True,
            f"could not run: {n_valid} samples where v and dq/dt are both known "
            f"(needs {MIN_VELOCITY_SAMPLES})",
            evidence={"ran": False, "valid_samples": n_valid, "dt": dt},
        )
    stated = {
        "bound": "adjacent change of v + max(1 % of the column's 90th-percentile |v|, "
        f"{NOISE_SIGMAS:g} sigmas of the noise measured in v and dq/dt) + the rounding of q "
        f"over dt + {NOISE_SIGMAS:g} sigmas of the stamps' jitter times |v| / step",
        "velocity_noise": float(np.max(noise, initial=0.0)),
        "stamps": stamps.describe(),
        "float_epsilon": float_eps,
        "max_disagreeing_share": MAX_DISAGREEING_SHARE,
        "dt": dt,
    }
    if not given.fails.any():
        worst = int(np.argmax(given.share))
        return ConventionCheck(
            name,
            True,
            f"v matches dq/dt in every column (worst {names[worst]!r}: "
            f"{given.share[worst]:.1%} of samples beyond the bound)",
            evidence={
                **stated,
                "worst_column": names[worst],
                "worst_share": float(given.share[worst]),
            },
        )
    fit = _Fit(agree, t, q, v, given, {**stated, "columns": _column_evidence(given, names)})
    _fit_time_scale(fit)
    fit.current = agree(fit.t, fit.q, fit.v)
    if fit.current.fails[:6].any():
        _fit_base(fit)
    if len(names) > 6 and fit.current.fails[6:].any():
        _fit_degrees(fit, names)
    if len(names) > 7 and fit.current.fails[6:].any():
        _fit_permutation(fit, robot, bad, names)
    return _velocity_finding(name, given, fit, names)


@dataclass
class _Fit:
    """The log as the hypotheses that fit correct it so far (:func:`velocity_check`)."""

    agree: Callable[[Array, Array, Array], _Agreement]
    t: Array
    q: Array
    v: Array
    current: _Agreement  # the agreement of the corrected log
    evidence: dict[str, Any]
    hypotheses: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)


def _fit_time_scale(fit: _Fit) -> None:
    """Time scale: one common v / (dq/dt) on every moving column that disagrees."""
    given = fit.current
    moving = given.fails & (given.motion > 0) & np.isfinite(given.scale)
    if moving.sum() < 2:
        return
    common = float(np.median(given.scale[moving]))
    spread = np.abs(given.scale[moving] / common - 1.0)
    if not (np.all(spread < _SCALE_MATCH) and abs(math.log(abs(common))) > math.log(1.5)):
        return
    trial = fit.agree(fit.t / common, fit.q, fit.v)
    if not (trial.fails & ~given.fails).any() and trial.fails.sum() < given.fails.sum():
        fit.t = fit.t / common
        label = "time_in_milliseconds" if _near(common, 1e3) else "time_scaled"
        fit.hypotheses.append(label)
        fit.evidence["time_scale"] = common
        fit.fixes.append(
            "time is in milliseconds; divide it by 1000"
            if label != "time_scaled"
            else f"time is scaled by {common:.4g}; divide it by that"
        )


def _fit_base(fit: _Fit) -> None:
    """Base: every combination of the base hypotheses; the fewest changes that fit."""
    keys = list(_BASE_HYPOTHESES)
    subsets = [
        tuple(k for b, k in zip(bits, keys, strict=True) if b)
        for bits in np.ndindex(*(2,) * len(keys))
        if any(bits)
    ]
    combos = [c for c in subsets if all(len(pair & set(c)) < 2 for pair in _EXCLUSIVE)]
    for combo in sorted(combos, key=len):
        qb, vb = _fix_base(fit.q, fit.v, combo)
        trial = fit.agree(fit.t, qb, vb)
        if not trial.fails[:6].any():
            fit.q, fit.v, fit.current = qb, vb, trial
            fit.hypotheses += list(combo)
            fit.fixes += [_BASE_HYPOTHESES[k] for k in combo]
            return


def _fit_degrees(fit: _Fit, names: list[str]) -> None:
    """Joints in degrees: per column, by the fitted scale."""
    current = fit.current
    q_try, v_try = fit.q.copy(), fit.v.copy()
    pos_deg, vel_deg = [], []
    for j in np.flatnonzero(current.fails[6:]) + 6:
        if _near(current.scale[j], 1.0 / _DEG):
            q_try[:, j + 1] /= _DEG
            pos_deg.append(names[j])
        elif _near(current.scale[j], _DEG):
            v_try[:, j] /= _DEG
            vel_deg.append(names[j])
    if not (pos_deg or vel_deg):
        return
    trial = fit.agree(fit.t, q_try, v_try)
    if not _improves(trial, current):
        return
    fit.q, fit.v, fit.current = q_try, v_try, trial
    if pos_deg:
        fit.hypotheses.append("joint_positions_in_degrees")
        fit.evidence["joint_positions_in_degrees"] = pos_deg
        fit.fixes.append(f"joint positions {pos_deg} are in degrees; convert to radians")
    if vel_deg:
        fit.hypotheses.append("joint_velocities_in_degrees")
        fit.evidence["joint_velocities_in_degrees"] = vel_deg
        fit.fixes.append(f"joint velocities {vel_deg} are in degrees per second; convert to rad/s")


def _fit_permutation(fit: _Fit, robot: Robot, bad: NDArray[np.bool_], names: list[str]) -> None:
    """Joint columns permuted between ``q`` and ``v``."""
    perm = _joint_permutation(robot, fit.t, fit.q, fit.v, bad)
    if perm is None:
        return
    v_try = fit.v.copy()
    v_try[:, 6 + perm] = fit.v[:, 6:]
    trial = fit.agree(fit.t, fit.q, v_try)
    if not _improves(trial, fit.current):
        return
    fit.v, fit.current = v_try, trial
    moved = [(names[6 + i], names[6 + int(p)]) for i, p in enumerate(perm) if p != i]
    fit.hypotheses.append("joint_columns_permuted")
    fit.evidence["permutation"] = moved
    pairs = ", ".join(f"v column {a!r} holds {b!r}" for a, b in moved[:6])
    fit.fixes.append(
        f"the joint columns of v are in another order than those of q "
        f"({pairs}{', ...' if len(moved) > 6 else ''}); map both by name"
    )


def _velocity_finding(name: str, given: _Agreement, fit: _Fit, names: list[str]) -> ConventionCheck:
    """The failed velocity check: what the named corrections explain, and what is left."""
    hypotheses, current, evidence = fit.hypotheses, fit.current, fit.evidence
    failing = [names[j] for j in np.flatnonzero(given.fails)]
    # The share of the disagreement (samples beyond the bound in the failing columns) the
    # named corrections repair: the finding's explained share.
    before = float(given.share[given.fails].sum())
    after = float(current.share[given.fails].sum()) if hypotheses else before
    evidence["explained"] = max(0.0, 1.0 - after / before) if before > 0 else 0.0
    if hypotheses and not current.fails.any():
        return ConventionCheck(
            name,
            False,
            f"v does not match dq/dt (columns {_short(failing)}); it does after "
            f"correcting: {' + '.join(hypotheses)}",
            "; ".join(fit.fixes),
            tuple(hypotheses),
            evidence,
        )
    left = [names[j] for j in np.flatnonzero(current.fails)]
    evidence["unexplained_columns"] = left
    partial = f" ({' + '.join(hypotheses)} explains the others)" if hypotheses else ""
    return ConventionCheck(
        name,
        False,
        f"v does not match dq/dt (columns {_short(left)}); no known convention "
        f"mistake explains it{partial}",
        "; ".join(fit.fixes + [f"check how v of columns {_short(left)} is computed and logged"]),
        (),
        evidence,
    )


def _improves(trial: _Agreement, current: _Agreement) -> bool:
    """A correction fits when it fixes columns and breaks none that agreed."""
    fixed_some = trial.fails.sum() < current.fails.sum()
    return bool(fixed_some and not (trial.fails & ~current.fails).any())


def _short(names: list[str], n: int = 8) -> str:
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")


def _column_evidence(a: _Agreement, names: list[str]) -> dict[str, dict[str, float]]:
    return {
        names[j]: {
            "share_beyond_bound": float(a.share[j]),
            "median_error": float(a.median_error[j]),
            "fitted_scale_v_over_dq": float(a.scale[j]),
            "velocity_scale": float(a.motion[j]),
        }
        for j in np.flatnonzero(a.fails)
    }


def _joint_permutation(
    robot: Robot, t: Array, q: Array, v: Array, bad: NDArray[np.bool_]
) -> NDArray[np.int_] | None:
    """The permutation ``p`` of joint columns with ``v[:, 6 + i] ~ dq/dt[:, 6 + p[i]]``...

    Found by assignment on the share of samples where the pair disagrees beyond the bound
    of :func:`_agreement`. None when the identity is best.
    """
    from scipy.optimize import linear_sum_assignment

    d = _velocities(robot, t, q)[:, 6:]
    V = v[:, 6:]
    ok = ~bad
    d, V = d[ok], V[ok]
    dv = np.abs(np.diff(V, axis=0))
    change = np.zeros_like(V)
    change[1:] = dv
    change[:-1] = np.maximum(change[:-1], dv)
    motion = np.percentile(np.abs(np.concatenate([V, d])), 90, axis=0)
    # cost[i, k]: v column i against dq/dt column k
    bound = change + VELOCITY_RELATIVE_FLOOR * motion[None, :]  # (n, nj) per v column
    cost = (np.abs(V[:, :, None] - d[:, None, :]) > bound[:, :, None]).mean(axis=0)
    rows, cols = linear_sum_assignment(cost)
    perm = cols[np.argsort(rows)]
    if np.array_equal(perm, np.arange(len(perm))):
        return None
    return np.asarray(perm)
