"""Why is a log inconsistent? Test likely causes against the Newton-Euler residual.

Each hypothesis corrects the log in one way (flip a sign, move the moments' point, swap two
contacts, shift the forces in time, rescale the mass, move the CoM) and recomputes the
residual with the kinematics already computed (pure numpy, no new Pinocchio pass). A cause is
named when its correction explains most of the residual; if none does, the residual itself is
characterised as a missing force (a contact not logged, or an unmeasured push): constant or a
pulse, with its time window, size and line of action.

The score of a residual is ``median(|f_r|) / (m g) + median(|tau_r|) / (m g L)`` over the
samples over tolerance, with ``L = 0.1 m`` (a foot's size), so that moment errors count as CoP
errors of 10 cm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .balance import newton_euler_residual_arrays
from .spatial import cross

__all__ = ["Finding", "diagnose", "EXPLAINED_THRESHOLD"]

Array = NDArray[np.float64]
LENGTH_SCALE = 0.1  # [m]
#: A correction must remove this share of the residual score to be named a cause.
EXPLAINED_THRESHOLD = 0.8
MAX_MASS_ERROR = 0.3  # mass-scale fits beyond +-30 % are not plausible
MAX_LAG_SAMPLES = 50
MAX_SAMPLES = 4000


@dataclass(frozen=True)
class Finding:
    """One tested cause of an inconsistent log.

    Attributes
    ----------
    cause : str
        Short identifier: ``"sign_flip"``, ``"wrong_point"``, ``"swapped_contacts"``,
        ``"time_offset"``, ``"mass_error"``, ``"com_offset"``, ``"missing_force"``.
    explained : float
        Share of the residual score the correction removes (1 = all of it).
    message : str
        The cause and its evidence, in words.
    parameters : dict
        The fitted values (lag in seconds, mass scale, CoM offset in metres, ...).
    """

    cause: str
    explained: float
    message: str
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Context:
    weight: float
    mass: float
    gravity: Array
    time: Array
    W: Array  # (N, k, 6) contact wrenches, world axes at the contact origins
    P: Array  # (N, k, 3) contact origins
    J: Array  # (N, k, 3) parent-joint centres of the contacts
    com: Array  # (N, 3)
    rate: Array  # (N, 6)
    external: Array  # (N, 6) known external wrench about the CoM
    names: list[str]
    rows: Array  # samples considered (valid)

    def residual(self, W: Array | None = None, P: Array | None = None, gi_scale: float = 1.0,
                 com_shift: Array | None = None) -> tuple[Array, Array]:
        """The residual under a hypothesis: other wrenches or points, the gravito-inertial
        wrench scaled (a mass error), or the CoM moved by ``com_shift`` (moments about it)."""
        W = self.W if W is None else W
        P = self.P if P is None else P
        com = self.com if com_shift is None else self.com + com_shift
        r_f, r_m = newton_euler_residual_arrays(W, P, com, gi_scale * self.rate, mass=gi_scale * self.mass,
                                                gravity=self.gravity)
        ext_moment = self.external[:, 3:]
        if com_shift is not None:
            ext_moment = ext_moment - cross(com_shift, self.external[:, :3])
        return r_f + self.external[:, :3], r_m + ext_moment

    def score(self, r_f: Array, r_m: Array) -> float:
        rows = self.rows
        return float(np.median(np.linalg.norm(r_f[rows], axis=1)) / self.weight
                     + np.median(np.linalg.norm(r_m[rows], axis=1)) / (self.weight * LENGTH_SCALE))


def diagnose(
    *, weight: float, mass: float, gravity: Array, time: Array, wrenches: Array, rows: Array,
    positions: Array, joint_centres: Array, com: Array, momentum_rate: Array, external_at_com: Array,
    names: list[str], over_tolerance: Array,
) -> list[Finding]:
    """Rank likely causes of the residual; the first finding is the best-supported one.

    ``time`` (N,), ``wrenches`` (N, k, 6) and ``over_tolerance`` (N,) cover the whole log;
    the kinematics (``positions`` and ``joint_centres`` (S, k, 3), ``com`` (S, 3),
    ``momentum_rate`` and ``external_at_com`` (S, 6)) only the valid samples ``rows`` (S,)
    on which hypotheses are scored (at most :data:`MAX_SAMPLES`, evenly spread; the lag search
    reads the full wrench array around them). Returns an empty list when no sample is over
    tolerance.
    """
    if not over_tolerance.any() or not len(rows):
        return []
    full_time, full_W, S = time, wrenches, np.asarray(rows)
    # Scores use the samples over tolerance: a fault confined to part of the log is judged
    # where it is, not diluted by the clean rest.
    over_S = over_tolerance[S]
    ctx = _Context(weight, mass, gravity, time[S], wrenches[S], positions, joint_centres, com,
                   momentum_rate, external_at_com, names, np.flatnonzero(over_S) if over_S.any() else np.arange(len(S)))
    time, over_tolerance = time[S], over_S
    rows = ctx.rows
    r_f, r_m = ctx.residual()
    base = ctx.score(r_f, r_m)
    if base == 0:
        return []
    findings: list[Finding] = []

    def add(cause: str, score: float, message: str, **params: Any) -> None:
        findings.append(Finding(cause, float(max(0.0, 1 - score / base)), message, params))

    k = len(names)
    # Reaction vs action: all contacts, then each one.
    add("sign_flip", ctx.score(*ctx.residual(W=-ctx.W)),
        "contact wrenches have the wrong sign (the force on the ground logged instead of the "
        "force on the robot)", contacts=list(names))
    if k > 1:
        for j, name in enumerate(names):
            W = ctx.W.copy()
            W[:, j] *= -1
            add("sign_flip", ctx.score(*ctx.residual(W=W)), f"contact {name!r} has the wrong sign", contacts=[name])
    # Moments about the wrong point: the world origin, or the contact's parent joint.
    W = ctx.W.copy()
    W[..., 3:] -= np.cross(ctx.P, ctx.W[..., :3])
    add("wrong_point", ctx.score(*ctx.residual(W=W)),
        "contact moments are about the world origin, not about the contact points", point="world origin")
    W = ctx.W.copy()
    W[..., 3:] += np.cross(ctx.J - ctx.P, ctx.W[..., :3])
    add("wrong_point", ctx.score(*ctx.residual(W=W)),
        "contact moments are about the contacts' parent joints (e.g. the ankles), not about the contact points",
        point="parent joint")
    # Swapped contacts.
    for a in range(k):
        for b in range(a + 1, k):
            W = ctx.W.copy()
            W[:, [a, b]] = W[:, [b, a]]
            add("swapped_contacts", ctx.score(*ctx.residual(W=W)),
                f"the wrenches of {names[a]!r} and {names[b]!r} are swapped", contacts=[names[a], names[b]])
    # Time offset between forces and kinematics: W'[i] = W[i + lag] in the full log.
    N = len(full_W)
    best_lag, best_score = 0, base
    for lag in range(-min(MAX_LAG_SAMPLES, N // 4), min(MAX_LAG_SAMPLES, N // 4) + 1):
        if lag == 0:
            continue
        W = full_W[np.clip(S + lag, 0, N - 1)]
        keep = rows[(S[rows] + lag >= 0) & (S[rows] + lag < N)]
        sub = _Context(**{**ctx.__dict__, "rows": keep})
        s = sub.score(*ctx.residual(W=W))
        if s < best_score:
            best_lag, best_score = lag, s
    if best_lag:
        dt = float(np.median(np.diff(full_time)))
        add("time_offset", best_score,
            f"the forces lag the kinematics by {best_lag} samples ({best_lag * dt * 1e3:.1f} ms)",
            lag_samples=best_lag, lag_seconds=best_lag * dt)
    # Mass error: the true gravito-inertial wrench is s times the model's.
    f_gi = ctx.mass * ctx.gravity - ctx.rate[:, :3]
    g6 = np.concatenate([f_gi, -ctx.rate[:, 3:] / LENGTH_SCALE], axis=1)[rows]
    r6 = np.concatenate([r_f, r_m / LENGTH_SCALE], axis=1)[rows]
    beta = -float(np.sum(r6 * g6) / max(np.sum(g6 * g6), 1e-300))
    if abs(beta) <= MAX_MASS_ERROR:
        add("mass_error", ctx.score(*ctx.residual(gi_scale=1 + beta)),
            f"the robot's mass (and inertia) is off by {100 * beta:+.1f} % "
            f"({ctx.mass * (1 + beta):.2f} kg would balance the forces)", mass_scale=1 + beta)
    # CoM offset: moments r_m = dc x f_c, a linear fit for dc.
    f_c = ctx.W[..., :3].sum(axis=1)[rows]
    A = np.concatenate([-_skew_batch(f_c)], axis=0).reshape(-1, 3)  # dc x f = -skew(f) dc
    dc = np.linalg.lstsq(A, r_m[rows].reshape(-1), rcond=None)[0]
    add("com_offset", ctx.score(*ctx.residual(com_shift=dc)),
        f"the CoM is off by {np.array2string(dc * 1e3, precision=1)} mm (world axes)", com_offset=dc.tolist())
    findings.sort(key=lambda f: -f.explained)
    if findings[0].explained < EXPLAINED_THRESHOLD:
        findings.insert(0, _missing_force(ctx, r_f, r_m, over_tolerance))
    return findings[:4]


def _skew_batch(v: Array) -> Array:
    z = np.zeros(len(v))
    return np.stack([
        np.stack([z, -v[:, 2], v[:, 1]], axis=1),
        np.stack([v[:, 2], z, -v[:, 0]], axis=1),
        np.stack([-v[:, 1], v[:, 0], z], axis=1),
    ], axis=1)


def _missing_force(ctx: _Context, r_f: Array, r_m: Array, over: Array) -> Finding:
    """The residual read as a force that the log lacks: when, how big, and where it acts."""
    idx = np.flatnonzero(over)
    t = ctx.time
    f_missing = -r_f[idx]  # the force that would close the balance
    m_missing = -r_m[idx]
    f_mean = f_missing.mean(axis=0)
    duration = t[-1] - t[0] if len(t) > 1 else 0.0
    span = t[idx[-1]] - t[idx[0]] if len(idx) else 0.0
    share = len(idx) / max(len(over), 1)  # of the (valid) samples considered
    # Line of action of the mean missing wrench about the CoM: closest point to the CoM.
    m_mean = m_missing.mean(axis=0)
    point = ctx.com[idx].mean(axis=0) + np.cross(f_mean, m_mean) / max(f_mean @ f_mean, 1e-300)
    if share > 0.5:
        kind = "constant"
        what = "a contact or constant force is missing from the log"
    else:
        kind = "pulse"
        what = f"an external force is missing from the log between {t[idx[0]]:.3f} s and {t[idx[-1]]:.3f} s"
    message = (f"{what}: about {np.array2string(f_mean, precision=1)} N (world axes), "
               f"acting along a line through {np.array2string(point, precision=3)} m")
    return Finding("missing_force", 1.0, message, {
        "kind": kind, "start": float(t[idx[0]]), "end": float(t[idx[-1]]), "mean_force": f_mean.tolist(),
        "point_on_line": point.tolist(), "share_of_samples": share, "span_seconds": float(span),
        "duration": float(duration),
    })
