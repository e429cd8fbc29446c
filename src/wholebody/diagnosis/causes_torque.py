"""Torque causes: why the joint rows of a log with torques disagree with its torques
(:mod:`wholebody.balance.joint_rows`), per joint.

The joint rows give, per kept sample and joint, the torque the motion and the logged wrenches
need, ``T_j = (M a + h - sum J^T w)_j``, and the logged ``tau_j``; the residual is
``r_j = T_j - tau_j``. Each cause corrects the logged torques of the joints it fits and is
judged on the same rows (family ``"torque"``): the score of a residual is the median, over
the samples with a joint row over tolerance, of the largest ``|r_j| / tol_j``; a cause
explains ``1 - score(corrected) / score(logged)`` of it, less the share of samples within
tolerance that it takes beyond.

=====================  =================================================  ===============
cause                  the logged torque of joint ``j`` is                 fitted, per joint
=====================  =================================================  ===============
``torque_sign``        ``-T_j``                                           nothing
``torque_gain``        ``T_j / k_j`` (a gear ratio, units)                ``k_j``
``torque_offset``      ``T_j + c_j``                                      ``c_j`` [N m]
``torque_viscous``     ``T_j + b_j v_j`` (what friction takes)            ``b_j`` [N m s/rad]
``torque_coulomb``     ``T_j + c_j sign(v_j)``                            ``c_j`` [N m]
``torque_lag``         ``T_j(t - L)`` for every joint (a late stream)     ``L`` [s], one
``torque_order``       ``T_i`` of another joint ``i`` (columns permuted)  nothing
=====================  =================================================  ===============

A joint is corrected by a cause when the correction removes at least
:data:`JOINT_EXPLAINED` of that joint's own score; the cause's finding names those joints
with their values and one standard error each. The fits of the per-joint causes and of the
lag are made again on all held-out windows but one (:mod:`.ranking`) and scored on that one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .core import DiagnosisData, Finding, format_value
from .ranking import Family, held_out_windows

__all__ = ["JointRows", "TORQUE_CAUSES", "torque_shares", "JOINT_EXPLAINED"]

Array = NDArray[np.float64]

#: A correction fixes a joint when it removes this share of the joint's own score.
JOINT_EXPLAINED = 0.8
#: The lag search tries up to this many samples each way (within the rows the check keeps).
MAX_TORQUE_LAG = 48
#: With fewer samples over tolerance, the lag is fitted on all samples.
MIN_SCORED = 20
#: Blocks of the delete-a-block jackknife of the per-joint values' standard errors.
JACKKNIFE_BLOCKS = 10
#: A fit's samples beyond this many robust standard deviations of its residual are left out.
OUTLIER_SIGMAS = 5.0


@dataclass
class JointRows:
    """The joint rows at the diagnosis' kept samples (S of them, nj joints, robot order).

    Attributes
    ----------
    names : list of str
    tolerance : ndarray, shape (nj,)
        Each row's tolerance [N m or N].
    residual : ndarray, shape (S, nj)
        ``T - tau`` [N m] (NaN where a joint is not checked).
    tau : ndarray, shape (S, nj)
        The logged torques.
    velocity : ndarray, shape (S, nj)
        Joint velocities [rad/s].
    inertial : ndarray, shape (S, nj)
        ``(M a + h)`` of the joint rows [N m] (a mass scale's correction).
    jacobians : ndarray, shape (S, m, 6, nj)
        The joint columns of the contact frames' Jacobians, then the external wrenches'
        (``LOCAL_WORLD_ALIGNED``, rows ``(v, omega)``).
    over : ndarray of bool, shape (S,)
        Samples with a joint row over tolerance (not waived).
    log_tau : RowsOf
        The logged torques (N, nj) at the log rows within :data:`MAX_TORQUE_LAG` of the kept
        ones (the lag search reads them).
    """

    names: list[str]
    tolerance: Array
    residual: Array
    tau: Array
    velocity: Array
    inertial: Array
    jacobians: Array
    over: NDArray[np.bool_]
    log_tau: Any
    scored: NDArray[np.intp] = field(init=False)

    def __post_init__(self) -> None:
        self.scored = np.flatnonzero(self.over)

    def ratio(self, d: DiagnosisData, r: Array) -> Array:
        """(S,) the largest ``|r_j| / tol_j`` per sample, over ``d.smoothing`` samples."""
        with np.errstate(invalid="ignore", divide="ignore"):
            x = np.abs(d.smoothed(r)) / self.tolerance
        x = np.where(np.isfinite(x), x, 0.0)
        return np.asarray(x.max(axis=1)) if x.shape[1] else np.zeros(len(r))

    def score(self, d: DiagnosisData, r: Array, rows: NDArray[np.intp] | None = None) -> float:
        rows = self.scored if rows is None else rows
        return float(np.median(self.ratio(d, r)[rows])) if len(rows) else 0.0

    def judge(self, d: DiagnosisData, r: Array) -> float:
        """The share of the logged residual's score that ``r`` removes, less the share of the
        samples within tolerance it takes beyond."""
        base = self.score(d, self.residual)
        if base <= 0:
            return 0.0
        gain = max(0.0, 1.0 - self.score(d, r) / base)
        spoiled = (self.ratio(d, r) > 1.0) & (self.ratio(d, self.residual) <= 1.0)
        return float(gain * (1.0 - spoiled.sum() / max(len(r), 1)))

    def failing(self, d: DiagnosisData) -> list[int]:
        """The joints over tolerance on some scored sample."""
        with np.errstate(invalid="ignore"):
            x = np.abs(d.smoothed(self.residual))[self.scored] > self.tolerance
        return [int(j) for j in np.flatnonzero(x.any(axis=0))]


# --- the per-joint corrections ----------------------------------------------------------------

#: A per-joint fit: (column index, training rows) -> (the corrected residual column (S,), the
#: value, its standard error), or None when it does not apply.
Fit = Callable[[int, NDArray[np.intp]], "tuple[Array, float, float] | None"]


def _linear(y: Array, x: Array, rows: NDArray[np.intp], smoothing: int) -> tuple[float, float]:
    """Least squares ``y ~ theta x`` on ``rows``, refitted without the samples whose residual
    is beyond :data:`OUTLIER_SIGMAS` robust standard deviations (1.4826 times the median
    absolute deviation: a joint limit's force on some samples, which the cause does not
    model, does not pull the value): ``theta`` and one standard error, the larger of the
    residual's (``smoothing`` samples to an independent one) and a delete-a-block
    jackknife's over :data:`JACKKNIFE_BLOCKS` contiguous blocks (an error that is not noise
    errs alike on neighbours)."""
    ok = rows[np.isfinite(y[rows]) & np.isfinite(x[rows])]
    xx = float(x[ok] @ x[ok])
    if len(ok) < 3 or xx <= 0:
        return float("nan"), float("nan")
    theta = float(x[ok] @ y[ok]) / xx
    e = y[ok] - theta * x[ok]
    spread = 1.4826 * float(np.median(np.abs(e - np.median(e))))
    inlier = np.abs(e - np.median(e)) <= OUTLIER_SIGMAS * spread + 1e-12 * float(
        np.abs(y[ok]).max()
    )
    if 3 <= inlier.sum() < len(ok) and float(x[ok][inlier] @ x[ok][inlier]) > 0:
        ok = ok[inlier]
        xx = float(x[ok] @ x[ok])
        theta = float(x[ok] @ y[ok]) / xx
    sigma2 = float(np.sum((y[ok] - theta * x[ok]) ** 2)) / max(len(ok) - 1, 1)
    se = float(np.sqrt(sigma2 / xx * max(smoothing, 1)))
    if len(ok) < 2 * JACKKNIFE_BLOCKS:
        return theta, se
    xy, x2 = x[ok] * y[ok], x[ok] ** 2
    parts = np.array_split(np.arange(len(ok)), JACKKNIFE_BLOCKS)
    drop = np.array([(xy.sum() - xy[p].sum()) / max(x2.sum() - x2[p].sum(), 1e-300) for p in parts])
    B = JACKKNIFE_BLOCKS
    jack = float(np.sqrt((B - 1) / B * np.sum((drop - drop.mean()) ** 2)))
    return theta, max(se, jack)


def _fits(d: DiagnosisData, jr: JointRows) -> dict[str, tuple[Fit, str, str]]:
    """The per-joint causes: the fit, how a value reads, and the cause in words."""
    r, tau, v, M = jr.residual, jr.tau, jr.velocity, int(d.smoothing)

    needed = np.abs(r + tau)[jr.scored] > jr.tolerance

    def gain(j: int, rows: NDArray[np.intp]) -> tuple[Array, float, float] | None:
        if not needed[:, j].any():
            return None  # a joint that needs no torque beyond its tolerance: no gain to see
        k, se = _linear(r[:, j] + tau[:, j], tau[:, j], rows, M)  # T = k tau
        if not np.isfinite(k) or abs(k + 1.0) <= max(3 * se, 1e-3):
            return None  # -1 is a sign flip (its own cause, nothing fitted)
        return r[:, j] + tau[:, j] - k * tau[:, j], k, se

    def additive(x: Array) -> Fit:
        def fit(j: int, rows: NDArray[np.intp]) -> tuple[Array, float, float] | None:
            c, se = _linear(-r[:, j], x[:, j], rows, M)  # tau = T + c x
            return (r[:, j] + c * x[:, j], c, se) if np.isfinite(c) else None

        return fit

    def sign(j: int, rows: NDArray[np.intp]) -> tuple[Array, float, float]:
        return r[:, j] + 2.0 * tau[:, j], -1.0, 0.0

    ones = np.ones_like(tau)
    return {
        "torque_sign": (sign, "", "its logged torque has the wrong sign"),
        "torque_gain": (gain, "gain {} (logged torque times it balances the motion)", "a gain"),
        "torque_offset": (
            additive(ones),
            "offset {} N m (logged too high by it)",
            "a constant offset",
        ),
        "torque_viscous": (
            additive(v),
            "viscous friction {} N m s/rad (the logged torque includes b v)",
            "viscous friction the model lacks",
        ),
        "torque_coulomb": (
            additive(np.sign(v)),
            "Coulomb friction {} N m (the logged torque includes c sign(v))",
            "Coulomb friction the model lacks",
        ),
    }


def _apply(
    d: DiagnosisData, jr: JointRows, fit: Fit, joints: list[int], rows: NDArray[np.intp]
) -> tuple[Array, dict[str, float], dict[str, float]]:
    """The residual with ``fit`` applied (on ``rows``) to each joint of ``joints`` whose own
    score it reduces by :data:`JOINT_EXPLAINED`; the values and errors of those joints."""
    r = jr.residual.copy()
    values, errors = {}, {}
    for j in joints:
        out = fit(j, rows)
        if out is None:
            continue
        col, value, se = out
        trial = jr.residual.copy()
        trial[:, j] = col
        own = _joint_score(d, jr, jr.residual, j)
        if own > 0 and _joint_score(d, jr, trial, j) <= (1 - JOINT_EXPLAINED) * own:
            r[:, j] = col
            values[jr.names[j]], errors[jr.names[j]] = value, se
    return r, values, errors


def _joint_score(d: DiagnosisData, jr: JointRows, r: Array, j: int) -> float:
    x = np.abs(d.smoothed(r[:, j : j + 1]))[jr.scored, 0] / jr.tolerance[j]
    x = x[np.isfinite(x)]
    return float(np.median(x)) if len(x) else 0.0


def _held_out(
    d: DiagnosisData, jr: JointRows, fit: Fit, joints: list[int], names: list[str]
) -> tuple[float, int]:
    """The share explained on held-out windows (fitted on the others), and the windows."""
    windows = held_out_windows(d)
    if not windows:
        return float("nan"), 0
    r = jr.residual.copy()
    index = [jr.names.index(n) for n in names]
    for mask in windows:
        train = np.flatnonzero(~mask)
        for j in index:
            out = fit(j, train)
            if out is not None:
                r[mask, j] = out[0][mask]
    return jr.judge(d, r), len(windows)


def _per_joint_causes(d: DiagnosisData, jr: JointRows) -> list[Finding]:
    """One finding per per-joint cause (module table): the joints it corrects, with values."""
    joints = jr.failing(d)
    out = []
    every = np.arange(len(d.time))
    for cause, (fit, reads, words) in _fits(d, jr).items():
        r, values, errors = _apply(d, jr, fit, joints, every)
        if not values:
            out.append(Finding(cause, 0.0, f"{words}: fixes no joint", family="torque"))
            continue
        explained = jr.judge(d, r)
        p = 0 if cause == "torque_sign" else len(values)
        held, n_windows = (explained, 0) if p == 0 else _held_out(d, jr, fit, joints, list(values))
        said = "; ".join(
            f"{name!r}" + ("" if not reads else ": " + reads.format(_value(v, errors[name])))
            for name, v in values.items()
        )
        out.append(
            Finding(
                cause,
                explained,
                f"{words} on joint{'s' if len(values) > 1 else ''} {said}",
                {"joints": list(values), "values": values},
                {"values": errors},
                n_parameters=p,
                held_out=held,
                held_out_windows=n_windows,
                family="torque",
            )
        )
    return out


def _value(v: float, se: float) -> str:
    """The value to its standard error's first digit (four significant digits at most)."""
    if not (np.isfinite(se) and se > 1e-4 * abs(v)):
        return f"{v:.4g} +- {se:.1g}" if np.isfinite(se) else f"{v:.4g}"
    digits = max(0, int(-np.floor(np.log10(se))))
    return format_value(v, se, "", digits=digits).strip()


# --- the stream as a whole: lag, order ----------------------------------------------------------


def _shifted(d: DiagnosisData, jr: JointRows, lag: float) -> Array | None:
    """The residual with the logged torques read ``lag`` samples later (linear between
    samples); None where the log's rows do not reach."""
    n = len(jr.log_tau)
    whole = int(np.floor(lag))
    a = np.clip(d.rows + whole, 0, n - 1)
    b = np.clip(d.rows + whole + 1, 0, n - 1)
    try:
        lo, hi = jr.log_tau[a], jr.log_tau[b]
    except IndexError:
        return None
    frac = lag - whole
    shifted = (1 - frac) * lo + frac * hi
    return np.asarray(jr.residual + jr.tau - shifted)


def _lag_fit(d: DiagnosisData, jr: JointRows, rows: NDArray[np.intp]) -> tuple[float, float]:
    """The lag [samples] that scores best on ``rows`` (whole samples), then its fraction
    fitted on the rate of the needed torque (the logged stream ``x`` samples late leaves
    ``r ~ x dT/dt dt``: the needed torque's rate is free of the torques' own noise), and one
    standard error."""
    best, best_score = 0, jr.score(d, jr.residual, rows)
    for lag in range(-MAX_TORQUE_LAG, MAX_TORQUE_LAG + 1):
        r = _shifted(d, jr, float(lag)) if lag else None
        if r is not None and (s := jr.score(d, r, rows)) < best_score:
            best, best_score = lag, s
    here = _shifted(d, jr, float(best)) if best else None
    if here is None or len(d.time) < 3:
        return 0.0, float("nan")
    # Against time, in samples of the log's step: (S, nj) torque per sample.
    rate = np.gradient(jr.residual + jr.tau, d.time, axis=0) * d.dt
    joints = np.array(jr.failing(d) or range(len(jr.names)), dtype=np.intp)
    y = (here / jr.tolerance)[np.ix_(rows, joints)].ravel()
    x = (rate / jr.tolerance)[np.ix_(rows, joints)].ravel()
    frac, se = _linear(y, x, np.arange(len(y)), max(int(d.smoothing), 1))
    frac = float(np.clip(frac, -1.0, 1.0)) if np.isfinite(frac) else 0.0
    return best + frac, float(max(se, 1e-3)) if np.isfinite(se) else 0.5


def torque_lag(d: DiagnosisData, jr: JointRows) -> list[Finding]:
    """The torque stream late (or early) against the motion, one lag for every joint (fitted
    on the samples over tolerance, or on all of them when few are: a lag shows on every
    sample)."""
    rows = jr.scored if len(jr.scored) >= MIN_SCORED else np.arange(len(d.time))
    lag, se = _lag_fit(d, jr, rows)
    r = _shifted(d, jr, lag) if lag else None
    if r is None:
        return [Finding("torque_lag", 0.0, "a lag of the torques: none helps", family="torque")]
    windows = held_out_windows(d)
    held = r.copy()
    for mask in windows:
        train = rows[~mask[rows]]
        lag_k, _ = _lag_fit(d, jr, train)
        shifted = _shifted(d, jr, lag_k) if lag_k else jr.residual
        held[mask] = (jr.residual if shifted is None else shifted)[mask]
    dt = d.dt
    explained = jr.judge(d, r)
    return [
        Finding(
            "torque_lag",
            explained,
            f"the torque stream is {format_value(lag * dt, se * dt, 'ms', 1e3, 1)} "
            f"{'late' if lag > 0 else 'early'} against the motion ({lag:+.2f} samples; "
            "the torque logged at t + L is the one at t)",
            {"lag": lag * dt, "lag_samples": lag, "joints": [jr.names[j] for j in jr.failing(d)]},
            {"lag": se * dt},
            n_parameters=1,
            held_out=jr.judge(d, held) if windows else explained,
            held_out_windows=len(windows),
            family="torque",
        )
    ]


def torque_order(d: DiagnosisData, jr: JointRows) -> list[Finding]:
    """The torque columns of some joints belong to other joints: each failing joint's motion
    matched to the logged column that balances it best; named when they form a permutation."""
    joints = jr.failing(d)
    T = jr.residual + jr.tau
    rows = jr.scored
    source = {}
    for i in joints:
        with np.errstate(invalid="ignore"):
            cost = np.nanmedian(np.abs(T[rows, i : i + 1] - jr.tau[rows]), axis=0)
        cost = np.where(np.isfinite(cost), cost, np.inf)
        source[i] = int(np.argmin(cost))
    moved = {i: c for i, c in source.items() if c != i}
    if not moved or sorted(moved.values()) != sorted(moved):
        return [Finding("torque_order", 0.0, "torque columns permuted: none fits", family="torque")]
    r = jr.residual.copy()
    for i, c in moved.items():
        r[:, i] = T[:, i] - jr.tau[:, c]
    pairs = "; ".join(
        f"the torque logged for {jr.names[c]!r} is {jr.names[i]!r}'s" for i, c in moved.items()
    )
    explained = jr.judge(d, r)
    return [
        Finding(
            "torque_order",
            explained,
            f"the torque stream belongs to other joints (columns in another order): {pairs}",
            {"columns": {jr.names[i]: jr.names[c] for i, c in moved.items()}},
            held_out=explained,
            family="torque",
        )
    ]


def torque_causes(d: DiagnosisData) -> list[Finding]:
    """Every torque cause (module table) on the joint rows of ``d`` (none when they pass)."""
    jr = d.joints
    if jr is None or not len(jr.scored):
        return []
    n = max(len(jr.scored) / max(int(d.smoothing), 1), 1.0)
    base = jr.score(d, jr.residual)
    floor = float(min(1.0, max(0.1 / base, 1e-6))) if base > 0 else 1e-6
    d.cache.setdefault("families", {})["torque"] = Family("torque", n, floor)
    return _per_joint_causes(d, jr) + torque_lag(d, jr) + torque_order(d, jr)


#: The torque causes, tested when a joint row is over tolerance.
TORQUE_CAUSES = (torque_causes,)


def torque_shares(d: DiagnosisData, findings: list[Finding]) -> list[Finding]:
    """The wrench causes judged on the joint rows too: their corrected wrenches (and mass
    scale) put into the rows, ``r' = r + (s - 1) (M a + h) - sum_c J_c^T (W'_c - W_c)``; the
    share goes to :attr:`Finding.shares` (the ranking adds it to the criterion)."""
    import dataclasses

    jr = d.joints
    if jr is None or not len(jr.scored):
        return findings
    k = d.k
    out = []
    for f in findings:
        h = f.hypothesis
        if f.family != "wrench" or h is None:
            out.append(f)
            continue
        dW = np.nan_to_num(h.wrenches - d.wrenches)
        r = jr.residual - np.einsum("skrj,skr->sj", jr.jacobians[:, :k], dW)
        scale = float(getattr(h, "mass_scale", 1.0))
        if scale != 1.0:
            r = r + (scale - 1.0) * jr.inertial
        out.append(dataclasses.replace(f, shares={**f.shares, "torque": jr.judge(d, r)}))
    return out
