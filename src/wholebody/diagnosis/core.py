"""What every hypothesis of the diagnosis shares: the data, the residual, the score, a fit
(on all samples, or on the training windows of the held-out scoring).

The residual of a hypothesis is always computed by
:func:`wholebody.balance.newton_euler.newton_euler_residual_arrays` on corrected data (other
wrenches,
points, mass or CoM), so a hypothesis is judged by the same formula as the check itself.

The **score** of a residual is ``median(|f_r|) / (m g) + median(|tau_r|) / (m g L)`` over the
samples over tolerance, with ``L = 0.1 m`` (a foot's size), so that moment errors count as CoP
errors of 10 cm. A hypothesis *explains* ``1 - score(corrected) / score(as logged)`` of it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..balance.newton_euler import newton_euler_residual_arrays
from ..friction import ContactSet
from ..spatial import cross

__all__ = [
    "Finding",
    "DiagnosisData",
    "LinearFit",
    "linear_fit",
    "LENGTH_SCALE",
    "finding_of",
    "Hypothesis",
    "skew_batch",
    "format_value",
    "format_vector",
    "format_names",
    "MAX_LAG_SAMPLES",
]

Array = NDArray[np.float64]
#: Moments are divided by this length [m] to compare them with forces (a foot's size).
LENGTH_SCALE = 0.1
_WEIGHTS = np.array([1.0, 1.0, 1.0, 1 / LENGTH_SCALE, 1 / LENGTH_SCALE, 1 / LENGTH_SCALE])
#: The lag search of the causes tries up to this many samples each way: the wrench rows a
#: check gives the diagnosis (``log_wrenches``) reach this far beyond its kept samples.
MAX_LAG_SAMPLES = 50


@dataclass(frozen=True)
class Finding:
    """One tested cause of an inconsistent log.

    Attributes
    ----------
    cause : str
        Short identifier (see ``docs/diagnosis.md``): ``"sign_flip"``, ``"axes"``,
        ``"wrong_point"``, ``"swapped_contacts"``, ``"time_offset"``, ``"mass_error"``,
        ``"gravity_sign"``, ``"com_offset"``, ``"sensor_offset"``, ``"force_gain"``,
        ``"normal_force_only"``, ``"stale_force"``, ``"missing_force"``, ``"unexplained"``,
        ``"acceleration_estimate"``, ``"held_stream"``, ``"inertialess_links"``,
        ``"sensor_rotation"``, ``"gravity_tilt"``, ``"payload"``, ``"swapped_joints"``,
        ``"stale_state"``, ``"falling"``,
        ``"cone_violation"`` (which contact, how far, when); as notes
        beside a consistent verdict also ``"joint_limits"``.
    explained : float
        Share of the residual score the correction removes (1 = all of it).
    message : str
        The cause, its fitted values with their uncertainty, in words.
    parameters : dict
        The fitted values (lag in seconds, mass scale, offsets in metres or newtons, ...).
    uncertainty : dict
        One standard error for each fitted value that has one (same keys, same units).
        Computed as if samples were independent, so it is a lower bound for slow faults.
    alternatives : list of str
        Messages of other causes that explain the residual equally well (a tie is said,
        never decided silently).
    n_parameters : int
        How many values the cause fits (a tie goes to the cause with fewer).
    cone_violations : float
        Share of the samples over tolerance where, after the correction, a contact is outside
        its friction cone (0 when the contacts are not known).
    criterion : float
        The evidence criterion the causes are ranked by (lower is better; NaN until ranked):
        ``n log(remaining share) + p log(n)`` with ``n`` independent samples scored and
        ``p`` = :attr:`n_parameters` (:func:`wholebody.diagnosis.diagnose`).
    structural_evidence : float
        Evidence [nats] from an exact structural fact of the log that the cause predicts and
        the absence of the cause makes improbable (for example tangential forces zero to a
        relative 1e-7 on every loaded sample, where friction of a tenth of the normal force
        is ordinary: a log-likelihood ratio of ``2 log(0.1 / 1e-7)`` per loaded contact and
        sample), brought to independent samples and subtracted from :attr:`criterion`. 0 for
        causes read from the residual alone.
    runner_up : str
        On the first finding: the cause ranked second ("" when none).
    margin : float
        On the first finding: the runner-up's criterion minus its own (NaN when none).
    held_out : float
        The share of the residual the correction explains on held-out windows: fitted on
        the other windows of the log, scored on each in turn (:mod:`.ranking`); equal to
        :attr:`explained` for a cause that fits nothing. NaN until ranked.
    held_out_windows : int
        How many held-out folds the cause was refitted on (0: not refitted; then its
        criterion pays ``log n`` per fitted value instead).
    family : str
        The residual the cause is scored on: ``"wrench"`` (the Newton-Euler balance) or
        ``"contact_motion"`` (loaded contacts that move, which a fall explains).
    ranking : Ranking or None
        On the first finding: the one ranking of every cause tested
        (:class:`~wholebody.diagnosis.ranking.Ranking`), which text, JSON and HTML read.
    """

    cause: str
    explained: float
    message: str
    parameters: dict[str, Any] = field(default_factory=dict)
    uncertainty: dict[str, Any] = field(default_factory=dict)
    alternatives: list[str] = field(default_factory=list)
    n_parameters: int = 0
    cone_violations: float = 0.0
    criterion: float = float("nan")
    structural_evidence: float = 0.0
    runner_up: str = ""
    margin: float = float("nan")
    held_out: float = float("nan")
    held_out_windows: int = 0
    family: str = "wrench"
    ranking: Any = None
    #: The correction judged (for the held-out scoring; dropped once ranked).
    hypothesis: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class Hypothesis:
    """A correction of the log: the residual (S, 6) it leaves and the contact wrenches
    (S, k, 6) it assumes; ``excluded`` (S,) bool: samples it has no data for (forces shifted
    out of the log's span), judged neither for nor against it."""

    residual: Array
    wrenches: Array
    excluded: NDArray[np.bool_] | None = None


@dataclass
class DiagnosisData:
    """The samples a diagnosis works on (valid samples only, at most a few thousand).

    Attributes
    ----------
    weight, mass : float
        ``m |g|`` [N] and ``m`` [kg].
    gravity : ndarray, shape (3,)
        World axes [m/s^2].
    time : ndarray, shape (S,)
        [s].
    wrenches : ndarray, shape (S, k, 6)
        Contact wrenches as logged, world axes at the contact origins [N, N m].
    positions : ndarray, shape (S, k, 3)
        Contact frame origins [m].
    rotations : ndarray, shape (S, k, 3, 3)
        Contact frame orientations (world from contact).
    joint_centres : ndarray, shape (S, k, 3)
        Centres of the contacts' parent joints [m].
    com : ndarray, shape (S, 3)
    momentum_rate : ndarray, shape (S, 6)
        ``(dP/dt, dL_G/dt)`` [N, N m].
    external : ndarray, shape (S, 6)
        Known external wrench about the CoM [N, N m].
    names : list of str
        Contact names.
    over : ndarray of bool, shape (S,)
        Samples over tolerance (where hypotheses are scored).
    log_wrenches : ndarray, shape (N, k, 6)
        The whole log's wrenches (the lag search shifts them); ``rows`` (S,) index them.
    rows : ndarray of int, shape (S,)
    log_time : ndarray, shape (N,)
    tolerance : (float, float)
        The check's tolerances: residual force [N] and moment [N m].
    contacts : sequence of Contact, optional
        The contacts (friction, sole sizes): with them, friction-cone evidence counts too.
    cone_tolerance : float
        Cone slack [N] (the check's absolute cone tolerance).
    accelerations_estimated : bool
        Whether the accelerations were differentiated from ``v`` (the lag fit's basis).
    euler_velocities : bool
        Whether ``v`` is a semi-implicit Euler integrator's at the log's step
        (:func:`wholebody.diagnosis.causes_timing.semi_implicit_euler`).
    links : LinkMotion or None
        Motion of the model's links that have no ``<inertial>`` (for the cause that gives
        them the mass a simulator does); None when the model has none or it is unknown.
    bound : ndarray, shape (S, 2), optional
        Per-sample bound on the residual's error [N], [N m] (differentiated accelerations,
        storage resolution); a correction spoils a sample only beyond tolerance plus it.
    smoothing : int
        Residuals are scored averaged over this many consecutive samples (the systematic
        test's window when accelerations were differentiated from noisy ``v``: noise averages
        out, a gain or a lag does not); 1 scores each sample.
    log_flagged : ndarray of bool, shape (N,), optional
        The log's flagged rows (their wrench rows hold zeros, not readings).
    robot : Robot, optional
        The robot checked: with :attr:`states`, the causes that change the kinematics (a
        payload on a link, two joint columns swapped, a state one step ahead of its forces)
        recompute them. Without it those causes are not tested.
    states : callable, optional
        ``states(rows) -> (q, v, a)``: the log's configurations (n, nq), velocities and
        accelerations (n, nv) at log rows ``rows`` (n,), in the robot's layout, the
        accelerations as the check used them (logged, or differentiated from ``v``).
    conventions : sequence of Finding
        The convention checks that failed, as findings ``"convention:<check>"`` (the
        check's evidence in ``parameters["evidence"]``): a cause that explains them (a fall
        explains loaded contacts that move) is ranked against them.
    """

    weight: float
    mass: float
    gravity: Array
    time: Array
    wrenches: Array
    positions: Array
    rotations: Array
    joint_centres: Array
    com: Array
    momentum_rate: Array
    external: Array
    names: list[str]
    over: NDArray[np.bool_]
    log_wrenches: Array
    rows: NDArray[np.intp]
    log_time: Array
    tolerance: tuple[float, float] = (np.inf, np.inf)
    contacts: Any = None
    cone_tolerance: float = 0.0
    accelerations_estimated: bool = False
    euler_velocities: bool = False
    links: Any = None
    bound: Any = None
    smoothing: int = 1
    log_flagged: NDArray[np.bool_] | None = None
    robot: Any = None
    states: Any = None
    conventions: Any = ()

    def __post_init__(self) -> None:
        if self.bound is None:
            self.bound = np.zeros((len(self.time), 2))
        self.bound = np.where(np.isfinite(self.bound), self.bound, np.inf)
        self.score_rows = (
            np.flatnonzero(self.over) if self.over.any() else np.arange(len(self.time))
        )
        self.all_rows = np.arange(len(self.time))
        self._cones = ContactSet(self.contacts) if self.contacts else None
        self.base_residual = self.residual()
        self.base_score = self.score(self.base_residual)
        self.base_cone_share = self.cone_violation_share(self.wrenches)
        #: Samples the fits may use (None: all): held-out scoring fits on the other windows.
        self.train: NDArray[np.bool_] | None = None
        #: Kinematics computed once per diagnosis by the causes that need them (by key).
        self.cache: dict[Any, Any] = {}

    def training(self, rows: NDArray[np.intp]) -> NDArray[np.intp]:
        """``rows`` less those held out (all of them outside held-out scoring)."""
        return rows if self.train is None else rows[self.train[rows]]

    def holding_out(self, train: NDArray[np.bool_]) -> DiagnosisData:
        """The same data whose fits use only the samples ``train`` (S,) (a shallow copy:
        arrays and the kinematics cache are shared)."""
        other = copy.copy(self)
        other.train = np.asarray(train, dtype=bool)
        return other

    @property
    def n_independent(self) -> float:
        """Independent samples scored: samples over tolerance over the smoothing window."""
        return max(len(self.score_rows) / max(int(self.smoothing), 1), 1.0)

    @property
    def floor(self) -> float:
        """The smallest remaining share the criterion tells apart: a residual a tenth of the
        tolerance (within it, every correction is as good), relative to the logged score."""
        if self.base_score <= 0 or not np.all(np.isfinite(self.tolerance)):
            return 1e-6
        tol = self.tolerance[0] / self.weight + self.tolerance[1] / (self.weight * LENGTH_SCALE)
        return float(min(1.0, max(0.1 * tol / self.base_score, 1e-6)))

    def criterion(
        self, explained: float, n_parameters: int, structural_evidence: float = 0.0
    ) -> float:
        """The evidence criterion of a correction (lower is better): ``n log(remaining) + p
        log(n) - e``, a Bayesian information criterion with the score as the residual's scale
        (``n`` = :attr:`n_independent`, remaining = ``max(1 - explained, floor)``), less the
        structural evidence ``e`` [nats] per scored sample (:attr:`Finding.structural_evidence`)
        brought to independent samples."""
        n = self.n_independent
        remaining = max(1.0 - float(explained), self.floor)
        per_sample = structural_evidence / max(len(self.time), 1)
        return float(n * np.log(remaining) + n_parameters * np.log(max(n, 2.0)) - n * per_sample)

    @property
    def k(self) -> int:
        return len(self.names)

    @property
    def dt(self) -> float:
        steps = np.diff(self.log_time)
        return float(np.median(steps)) if len(steps) else 0.0

    def residual(
        self,
        W: Array | None = None,
        *,
        mass_scale: float = 1.0,
        com_shift: Array | None = None,
        gravity_sign: float = 1.0,
        positions: Array | None = None,
        momentum_rate: Array | None = None,
    ) -> Array:
        """The residual ``(f_r, tau_r)`` (S, 6) under a hypothesis, about the (shifted) CoM.

        ``W`` replaces the contact wrenches; ``mass_scale`` scales the gravito-inertial wrench
        (mass and inertia); ``com_shift`` moves the CoM [m]; ``gravity_sign`` flips gravity;
        ``positions`` (S, k, 3) and ``momentum_rate`` (S, 6) replace the kinematics (another
        state: columns swapped, a state one step off).
        """
        W = self.wrenches if W is None else W
        com = self.com if com_shift is None else self.com + com_shift
        rate = self.momentum_rate if momentum_rate is None else momentum_rate
        force, moment = newton_euler_residual_arrays(
            W,
            self.positions if positions is None else positions,
            com,
            mass_scale * rate,
            mass=mass_scale * self.mass,
            gravity=gravity_sign * self.gravity,
        )
        ext_moment = self.external[:, 3:]
        if com_shift is not None:
            ext_moment = ext_moment - cross(
                np.broadcast_to(com_shift, self.com.shape), self.external[:, :3]
            )
        return np.concatenate([force + self.external[:, :3], moment + ext_moment], axis=1)

    def where_over(self, W: Array) -> Array:
        """``W`` on the samples over tolerance, the logged wrenches elsewhere: a discrete
        correction (a sign, an axis convention, a swap) judged where the fault is."""
        return np.where(self.over[:, None, None], W, self.wrenches)

    def window(self) -> str:
        """``" (1.200 .. 1.298 s)"`` when the samples over tolerance are only part of the log."""
        if self.over.all():
            return ""
        t = self.time[self.score_rows]
        return f" ({t.min():.3f} .. {t.max():.3f} s)"

    def score(self, r: Array, rows: NDArray[np.intp] | None = None) -> float:
        """``median |f_r| / (m g) + median |tau_r| / (m g L)`` over ``rows`` (default: over "
        "tolerance)."""
        rows = self.score_rows if rows is None else rows
        if not len(rows):
            return 0.0
        r = self.smoothed(r)
        f = np.linalg.norm(r[rows, :3], axis=1)
        m = np.linalg.norm(r[rows, 3:], axis=1)
        return float(np.median(f) / self.weight + np.median(m) / (self.weight * LENGTH_SCALE))

    def smoothed(self, r: Array) -> Array:
        """``r`` (S, 6) averaged over :attr:`smoothing` consecutive samples (centred; the
        window shrinks at the ends); ``r`` itself when ``smoothing`` is 1."""
        M = int(self.smoothing)
        if M <= 1 or len(r) < 2:
            return r
        S = len(r)
        c = np.vstack([np.zeros((1, r.shape[1])), np.cumsum(np.nan_to_num(r), axis=0)])
        i = np.arange(S)
        lo = np.clip(i - M // 2, 0, S)
        hi = np.clip(i - M // 2 + M, 0, S)
        finite = np.isfinite(r).all(axis=1)
        if finite.all():
            return (c[hi] - c[lo]) / (hi - lo)[:, None]
        # Samples without a value (NaN) are left out of their windows' means.
        n = (np.r_[0, np.cumsum(finite)][hi] - np.r_[0, np.cumsum(finite)][lo])[:, None]
        return np.asarray((c[hi] - c[lo]) / np.maximum(n, 1), dtype=float)

    def fit(self, r0: Array, D: Array, rows: NDArray[np.intp], *, rtol: float = 1e-3) -> LinearFit:
        """:func:`linear_fit` of ``r0 + D theta`` on ``rows`` (less held-out samples), on the
        residuals averaged over :attr:`smoothing` samples: with noisy differentiated
        accelerations, the noise is in ``r0`` and, for the mass, in ``D`` too (the same noise:
        an unsmoothed fit would be biased towards it); averaged, it is gone and the fault is
        not."""
        rows = self.training(rows)
        M = int(self.smoothing)
        if M <= 1:
            return linear_fit(r0, D, rows, rtol=rtol)
        S, six, p = D.shape
        r0 = self.smoothed(r0)
        D = self.smoothed(D.reshape(S, six * p)).reshape(S, six, p)
        fit = linear_fit(r0, D, rows, rtol=rtol)
        # Averages over M samples are not independent: M times fewer, the error sqrt(M) wider.
        return LinearFit(fit.theta, fit.std_error * np.sqrt(M), fit.observable)

    def cone_violation_share(self, W: Array) -> float:
        """Share of the samples over tolerance where some contact of ``W`` is outside its
        friction cone (0 without contacts)."""
        if self._cones is None or not len(self.score_rows):
            return 0.0
        rows = self.score_rows
        check = self._cones.check(W[rows], self.rotations[rows])
        with np.errstate(invalid="ignore"):
            outside = (check.margin < -self.cone_tolerance).any(axis=1)
        return float(outside.mean())

    def hypothesis(
        self,
        W: Array | None = None,
        *,
        mass_scale: float = 1.0,
        com_shift: Array | None = None,
        gravity_sign: float = 1.0,
    ) -> Hypothesis:
        """A correction of the log: its residual (as :meth:`residual`) and its wrenches."""
        r = self.residual(W, mass_scale=mass_scale, com_shift=com_shift, gravity_sign=gravity_sign)
        return Hypothesis(r, self.wrenches if W is None else W)

    def judge(self, hypothesis: Hypothesis | Array) -> tuple[float, float]:
        """How much of the logged residual a correction explains, and its cone evidence.

        Returns ``(explained, cone_share)``. ``explained`` is the share of the logged
        residual's score the correction removes, in [0, 1]. A correction that pushes samples
        that were within tolerance over it is penalised by the share of those samples it
        spoils: a cause must fix the log, not move the fault. With contacts, the friction
        cones are evidence too: a correction whose wrenches put contacts outside their cones
        on more samples than the log does loses up to half its score; ``cone_share`` is the
        share of samples over tolerance it leaves outside a cone (ties go to fewer). A bare
        residual array is judged with the logged wrenches.
        """
        if not isinstance(hypothesis, Hypothesis):
            hypothesis = Hypothesis(hypothesis, self.wrenches)
        if self.base_score <= 0:
            return 0.0, self.base_cone_share
        r, base, scored = hypothesis.residual, self.base_residual, self.score_rows
        clean = ~self.over
        if hypothesis.excluded is not None and hypothesis.excluded.any():
            # Samples without data for this correction: left out of both scores.
            out = np.asarray(hypothesis.excluded, dtype=bool)
            r, base = r.copy(), base.copy()
            r[out] = np.nan
            base[out] = np.nan
            scored = scored[~out[scored]]
            clean = clean & ~out
            if not len(scored):
                return 0.0, self.base_cone_share
        base_score = self.score(base, scored)
        if base_score <= 0:
            return 0.0, self.base_cone_share
        gain = max(0.0, 1.0 - self.score(r, scored) / base_score)
        if clean.any():
            # A sample is spoiled when it was within tolerance plus its bound and the
            # correction takes it beyond: samples already beyond (impacts whose
            # differentiated accelerations are off) neither count nor veto. The penalty is
            # the share of all samples spoiled: a cause must fix the log, not move the fault.
            rs, r0 = self.smoothed(r), self.smoothed(base)
            # The bound of an average over M samples: its two ends' (telescoped noise).
            shrink = min(1.0, 2.0 / max(int(self.smoothing), 1))
            lim_f = self.tolerance[0] + self.bound[:, 0] * shrink
            lim_m = self.tolerance[1] + self.bound[:, 1] * shrink
            with np.errstate(invalid="ignore"):
                beyond = (np.linalg.norm(rs[:, :3], axis=1) > lim_f) | (
                    np.linalg.norm(rs[:, 3:], axis=1) > lim_m
                )
                within = (np.linalg.norm(r0[:, :3], axis=1) <= lim_f) & (
                    np.linalg.norm(r0[:, 3:], axis=1) <= lim_m
                )
            spoiled = clean & beyond & within
            gain *= 1.0 - float(spoiled.sum()) / len(r)
        cone_share = self.base_cone_share
        # The cones can change the ranking only of causes that explain much of the residual:
        # they are evaluated for those alone (the check is the costly part of a hypothesis).
        if self._cones is not None and gain > 0.5:
            cone_share = self.cone_violation_share(hypothesis.wrenches)
            gain *= 1.0 - 0.5 * max(0.0, cone_share - self.base_cone_share)
        return float(gain), cone_share

    def explained(self, hypothesis: Hypothesis | Array) -> float:
        """The first value of :meth:`judge`."""
        return self.judge(hypothesis)[0]

    def contact_wrench_terms(self) -> Array:
        """Each contact's wrench about the CoM, (S, k, 6): the columns of gain fits."""
        f = self.wrenches[..., :3]
        tau = self.wrenches[..., 3:] + cross(self.positions - self.com[:, None], f)
        return np.concatenate([f, tau], axis=2)

    def local(self, W: Array) -> Array:
        """Wrenches (S, k, 6) expressed in each contact frame's axes."""
        RT = np.swapaxes(self.rotations, -1, -2)
        return np.concatenate(
            [
                np.einsum("skij,skj->ski", RT, W[..., :3]),
                np.einsum("skij,skj->ski", RT, W[..., 3:]),
            ],
            axis=2,
        )

    def world(self, W_local: Array) -> Array:
        """Wrenches (S, k, 6) from each contact frame's axes to world axes."""
        R = self.rotations
        return np.concatenate(
            [
                np.einsum("skij,skj->ski", R, W_local[..., :3]),
                np.einsum("skij,skj->ski", R, W_local[..., 3:]),
            ],
            axis=2,
        )


@dataclass(frozen=True)
class LinearFit:
    """Least squares ``r(theta) = r0 + D theta ~ 0`` on the weighted residual.

    Attributes
    ----------
    theta : ndarray, shape (p,)
        The fitted values (0 along unobservable directions).
    std_error : ndarray, shape (p,)
        One standard error of each (NaN where not observable).
    observable : ndarray of bool, shape (p,)
        Whether each parameter is determined by the data (not in a direction the
        samples cannot see).
    """

    theta: Array
    std_error: Array
    observable: NDArray[np.bool_]


def linear_fit(r0: Array, D: Array, rows: NDArray[np.intp], *, rtol: float = 1e-3) -> LinearFit:
    """Fit ``theta`` so that ``r0 + D theta`` is least (moments weighted by ``1 / L``).

    ``r0`` (S, 6), ``D`` (S, 6, p); only ``rows`` are used. Directions whose singular
    value is below ``rtol`` times the largest are unobservable: left at zero and reported.
    """
    p = D.shape[2]
    A = (D[rows] * _WEIGHTS[None, :, None]).reshape(-1, p)
    b = -(r0[rows] * _WEIGHTS).reshape(-1)
    finite = np.isfinite(A).all(axis=1) & np.isfinite(b)
    A, b = A[finite], b[finite]
    if not len(b):
        return LinearFit(np.zeros(p), np.full(p, np.nan), np.zeros(p, dtype=bool))
    # The singular values and right vectors of A from its Gram matrix (p x p: the fits are
    # tall and narrow); directions below rtol are cut, so the squared condition stays small.
    w, V = np.linalg.eigh(A.T @ A)
    s, Vt = np.sqrt(np.maximum(w[::-1], 0.0)), V[:, ::-1].T
    keep = s > rtol * s[0] if s.size and s[0] > 0 else np.zeros(len(s), dtype=bool)
    inv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
    theta = Vt.T @ (inv**2 * (Vt @ (A.T @ b)))
    dof = max(len(b) - int(keep.sum()), 1)
    sigma2 = float(np.sum((b - A @ theta) ** 2) / dof)
    cov = (Vt.T * inv**2) @ Vt * sigma2
    # A parameter is observable when it lies (almost) in the span of the kept directions.
    in_span = np.sum((Vt[keep] ** 2), axis=0) if keep.any() else np.zeros(p)
    observable = in_span > 0.99
    se = np.where(observable, np.sqrt(np.maximum(np.diag(cov), 0.0)), np.nan)
    return LinearFit(theta, se, observable)


def format_value(value: float, error: float, unit: str, scale: float = 1.0, digits: int = 1) -> str:
    """``"12.3 +- 0.4 mm"`` (value and error times ``scale``)."""
    if np.isfinite(error):
        return f"{value * scale:.{digits}f} +- {error * scale:.{digits}f} {unit}"
    return f"{value * scale:.{digits}f} {unit}"


def format_vector(values: Any, unit: str, scale: float = 1.0, digits: int = 3) -> str:
    """``"(1.2, -0.0345, 12.3) mm"``: each component times ``scale`` to ``digits`` significant
    digits (``-0`` written ``0``), for messages read by people."""
    parts = [f"{float(x) * scale:.{digits}g}" for x in np.ravel(values)]
    return (
        "("
        + ", ".join("0" if p in ("-0", "0") else p for p in parts)
        + ")"
        + (f" {unit}" if unit else "")
    )


def format_names(names: Any) -> str:
    """``"'a', 'b'"``: names quoted and joined, for messages read by people."""
    return ", ".join(repr(str(n)) for n in names)


def finding_of(
    d: DiagnosisData,
    cause: str,
    hypothesis: Hypothesis | Array,
    message: str,
    n_parameters: int = 0,
    uncertainty: dict | None = None,
    **parameters: object,
) -> Finding:
    """A finding for a correction (a :class:`Hypothesis`, or a residual judged with the logged
    wrenches), judged by :meth:`DiagnosisData.judge` (not while refitting on training
    windows: the held-out scoring judges the corrections put together)."""
    if not isinstance(hypothesis, Hypothesis):
        hypothesis = Hypothesis(hypothesis, d.wrenches)
    explained, cone_share = (
        d.judge(hypothesis) if d.train is None else (float("nan"), d.base_cone_share)
    )
    return Finding(
        cause,
        explained,
        message,
        dict(parameters),
        dict(uncertainty or {}),
        n_parameters=n_parameters,
        cone_violations=cone_share,
        hypothesis=hypothesis,
    )


def skew_batch(v: Array) -> Array:
    """``skew(v)`` for v of shape (..., 3): shape (..., 3, 3) with ``skew(v) x = v x x``."""
    z = np.zeros(v.shape[:-1])
    return np.stack(
        [
            np.stack([z, -v[..., 2], v[..., 1]], axis=-1),
            np.stack([v[..., 2], z, -v[..., 0]], axis=-1),
            np.stack([-v[..., 1], v[..., 0], z], axis=-1),
        ],
        axis=-2,
    )
