"""The fit: Gauss-Newton over the parameters with noise levels re-estimated, standard errors
that hold for time-correlated residuals, the identifiability report and a cross-validation
against the URDF on held-out time windows (see :mod:`wholebody.identify`)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..contacts import Contact
from ..errors import InvalidArgumentError, StateError
from ..robot.core import Robot
from ..trajectory import Trajectory
from ._threads import blas_threads
from .calibrate import SensorModel
from .features import Workspace, features_and_jacobians, fitted_calibration
from .features import row_groups as _row_groups
from .intervals import batch_means_meat, integrated_autocorrelation_time
from .lag import BaseRows, lag_and_error, shift_wrenches, why_no_lag
from .links import LinkInertia, robot_links
from .noise import NoiseModel, NoiseStatistics, Whitening
from .parameters import (
    DEFAULT_PRIOR_STD,
    IDENTIFIED_SHARE,
    ParameterEstimate,
    direction_components,
    identifiability_report,
    observable_basis,
    parse_selection,
    pinv_sym,
)
from .problem import INERTIA_COMPONENTS, PreparedLog, Problem, prepare_logs
from .result import CrossValidation, IdentificationResult
from .solver import Solver, combine, fold_parameters, square_root
from .stance import ImitatedDirection, offset_imitated_directions

__all__ = ["fit_inertial_parameters", "fit_calibration"]

Array = NDArray[np.float64]

#: Samples per chunk of features: a chunk's arrays (100 x 38 rows x 347 columns for Talos,
#: 10 MB) stay below the allocator's mmap threshold, so they are reused, not page-faulted in
#: afresh for every chunk.
_CHUNK = 100
#: The features of all samples are kept between the passes up to this size [bytes].
_KEEP_BYTES = 256 * 2**20
#: The noise model is estimated from about this many samples (every k-th of each log) ...
_NOISE_SAMPLES = 1000
#: ... after at most this many rounds of a preliminary fit and its row groups' noise levels.
_NOISE_ROUNDS = 6
#: The overall scale of the whitened residual is at least this (a log the model balances to
#: round-off).
_SCALE_FLOOR = 1e-12
#: A computed residual entry is exact to within this many eps times the sum of the magnitudes
#: of the terms that cancel in it (the held-out comparison's arithmetic resolution).
_ROUNDING = 64.0
_PAIRS = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))


def fit_inertial_parameters(
    robot: Robot,
    logs: Trajectory | Sequence[Trajectory],
    contacts: Sequence[Contact],
    *,
    parameters: str | None = "mass_com",
    links: Sequence[str] | None = None,
    groups: Mapping[str, Sequence[str]] | None = None,
    sensors: SensorModel | None = None,
    use_torques: bool | None = None,
    prior_weight: float = 1.0,
    prior_std: Mapping[str, float] | None = None,
    urdf: str | Path | None = None,
    max_iterations: int = 50,
    density: bool = False,
    lags: bool = False,
    max_lag: float = 0.02,
    folds: int = 5,
    smoothing: bool | None = None,
) -> IdentificationResult:
    """Fit corrections to links' masses, CoMs and rotational inertias (and sensor
    calibrations) to logs, keeping every link a physically consistent rigid body (see
    :mod:`wholebody.identify` for the model, the cost and the prior).

    Parameters
    ----------
    robot : Robot
        Floating-base robot, loaded from the URDF to correct (``robot.source``, or ``urdf``).
    logs : Trajectory or sequence of Trajectory
        Fitted together (their excitation adds up). Logs without accelerations get them
        from ``v`` by central differences. Samples with non-finite values are left out.
    contacts : sequence of Contact
        One per contact of the logs, matched by name.
    parameters : str or None
        ``"mass"``, ``"com"``, ``"inertia"`` or their combinations joined by ``_``
        (``"mass_com"``, ``"mass_com_inertia"``, ...: per-link mass, CoM shift, rotational
        inertia about the CoM), ``"total_mass"`` (one mass scale for the whole robot) or
        None (a sensor-only fit).
    links : sequence of str, optional
        Restrict the per-link parameters to these links (default: every link with mass).
    groups : mapping of str to sequence of str, optional
        Named groups of links sharing one mass scale (e.g. ``{"arms": [...]}``).
    sensors : SensorModel, optional
        Sensor parameters to fit jointly (see :func:`fit_calibration`); with several logs
        each log has its own contact offsets unless ``SensorModel(per_log=False)``.
    use_torques : bool, optional
        Use the joint-torque rows; default: when every log has torques.
    prior_weight : float
        ``lambda`` >= 0: 1 is the stated prior (:data:`DEFAULT_PRIOR_STD`), 0 none (the
        unobservable directions then stay at the URDF: minimum-norm steps).
    prior_std : mapping, optional
        Overrides of :data:`DEFAULT_PRIOR_STD` by kind.
    urdf : path, optional
        The URDF the robot was built from, when ``robot.source`` is not it.
    density : bool
        The link's rotational inertia scales with its mass (a uniform-density change);
        default: the mass alone changes, the inertia about the CoM is kept.
    lags : bool
        Estimate, per log and before the fit, the time by which the contact wrenches lag the
        motion (within ``max_lag`` [s]), and fit the logs with their wrenches moved back.
    folds : int
        Cross-validation: each log is cut into this many time windows; window ``k`` of every
        log is held out in turn (fewer than 2: no cross-validation).
    smoothing : bool, optional
        Low-pass each log's equations, regressor and measurements alike
        (:mod:`~wholebody.identify.smoothing`); default: logs with differentiated accelerations.

    Returns
    -------
    IdentificationResult

    Raises
    ------
    InvalidArgumentError
        Unknown links, parameter sets or options; no parameter to fit.
    LogFormatError
        A log whose contacts do not match ``contacts``, or without torques when asked.
    StateError
        No usable sample.
    """
    if not robot.has_floating_base:
        raise StateError("identification from logs needs a floating-base robot")
    logs = [logs] if isinstance(logs, Trajectory) else list(logs)
    stds = _checked_options(logs, prior_weight, max_lag, prior_std)
    contacts = list(contacts)
    use_torques = all(t.tau is not None for t in logs) if use_torques is None else use_torques
    names = _log_names([str(t.source) for t in logs])
    problem, held = _problem(
        robot, contacts, names, use_torques, stds, parameters, links, groups, sensors, density, urdf
    )
    imitated = _imitated(problem, sensors, links, use_torques)
    held_matrix = np.array([d.direction for d in imitated]) if imitated else None
    settings = _Settings(use_torques, prior_weight, max_iterations, folds, held_matrix)
    prepared = prepare_logs(robot, logs, contacts, use_torques, smoothing)
    with blas_threads(max(problem.n_columns, problem.p)) as threads:
        result = _fit_logs(problem, prepared, settings, lags, max_lag)
    result.blas_threads = threads
    result.held_for_offsets = held
    result.held_directions = [(d.link, d.contact, d.words()) for d in imitated]
    return result


def _checked_options(
    logs: list[Trajectory],
    prior_weight: float,
    max_lag: float,
    prior_std: Mapping[str, float] | None,
) -> dict[str, float]:
    """The prior's standard deviations by kind (:data:`DEFAULT_PRIOR_STD` with ``prior_std``'s
    overrides), once the options are checked."""
    if not logs:
        raise InvalidArgumentError("give at least one log")
    if not (math.isfinite(prior_weight) and prior_weight >= 0):
        raise InvalidArgumentError(
            f"prior_weight must be a finite number >= 0, got {prior_weight!r}"
        )
    if not (math.isfinite(max_lag) and max_lag > 0):
        raise InvalidArgumentError(f"max_lag must be a positive number [s], got {max_lag!r}")
    stds = dict(DEFAULT_PRIOR_STD)
    for kind, value in (prior_std or {}).items():
        if kind not in stds:
            raise InvalidArgumentError(f"prior_std: unknown kind {kind!r}; kinds: {sorted(stds)}")
        if not (value > 0 and math.isfinite(value)):
            raise InvalidArgumentError(
                f"prior_std[{kind!r}] must be a positive number, got {value!r}"
            )
        stds[kind] = float(value)
    return stds


def _problem(
    robot: Robot,
    contacts: list[Contact],
    names: list[str],
    use_torques: bool,
    stds: dict[str, float],
    parameters: str | None,
    links: Sequence[str] | None,
    groups: Mapping[str, Sequence[str]] | None,
    sensors: SensorModel | None,
    density: bool,
    urdf: str | Path | None,
) -> tuple[Problem, dict[str, str]]:
    """The problem of the parameter sets chosen (:func:`parse_selection`) and the sensors'
    parameters; and the links kept at the URDF because they carry a contact whose offsets are
    fitted (link name -> contact name)."""
    all_links = robot_links(robot, urdf)
    mass_groups, com_links, inertia_links = parse_selection(all_links, parameters, links, groups)
    held: dict[str, str] = {}
    if links is None and sensors is not None:
        # A sensor offset (constant in the sensor's axes) and the mass and CoM of the body
        # that carries the sensor (its weight, fixed in world axes, acting on that same body)
        # are told apart only by that body's tilt and acceleration; with offsets per log the
        # shared mass and CoM trade with every log's offsets. A force-torque sensor's tare is
        # that body's weight: by default its mass and CoM stay at the URDF, and the offsets
        # take what a difference would explain (name the link in `links` to fit it anyway).
        held = _sensor_carriers(robot, all_links, contacts, sensors)
        drop = {i for i, lk in enumerate(all_links) if lk.name in held}
        mass_groups = [
            (g, ids)
            for g, ids in mass_groups
            if not (len(ids) == 1 and ids[0] in drop and g == all_links[ids[0]].name)
        ]
        com_links = [i for i in com_links if i not in drop]
    problem = Problem(
        robot,
        all_links,
        mass_groups,
        com_links,
        contacts,
        sensors,
        use_torques,
        stds,
        inertia_links=inertia_links,
        density=density,
        log_names=names,
    )
    if problem.p == 0:
        raise InvalidArgumentError("nothing to fit: choose parameters or sensor parameters")
    return problem, held


def _imitated(
    problem: Problem, sensors: SensorModel | None, links: Sequence[str] | None, use_torques: bool
) -> list[ImitatedDirection]:
    """Directions of other links' mass and CoM that a fitted offset imitates while its sensor's
    body is still (an ankle link's mass and CoM along the roll axis, a shank's mass at the
    ankle): held at the URDF like the carrier's (:mod:`wholebody.identify.stance`), unless the
    links are chosen by name."""
    if links is not None or sensors is None:
        return []
    fitted = sensors.contacts_for("offsets", [c.name for c in problem.contacts])
    return offset_imitated_directions(problem, fitted, problem.robot.nv if use_torques else 6)


@dataclass(frozen=True)
class _Settings:
    """What every fit of one call shares: the rows used (joint torques or the floating base's
    alone), the prior's weight, the Gauss-Newton iterations, the cross-validation's time
    windows per log, and the directions held at the URDF (k, p) or None."""

    use_torques: bool
    prior_weight: float
    max_iterations: int
    folds: int
    held: Array | None


def _fit_logs(
    problem: Problem,
    prepared: list[PreparedLog],
    settings: _Settings,
    lags: bool,
    max_lag: float,
) -> IdentificationResult:
    """The fit of the logs and its report, with each log's lag reading (estimate, standard
    error [s]) and why none was read (by name). With ``lags``, each log's lag (within
    ``max_lag`` [s]) is read first (with the URDF's model) and the log fitted with its wrenches
    moved back by it; the lags are then read again with the fitted model and the logs refitted,
    until they settle."""
    names = problem.log_names
    # The chunks' arrays, kept for every pass of the fit and the refits.
    workspace = Workspace()
    lag_values: dict[str, float] = {}
    lag_read: dict[str, tuple[float, float]] = {}
    # Each log's base rows from the first reading kept for the readings with the fitted
    # model (one regressor pass per sample), within the memory the fit keeps features in.
    keep_rows = sum(BaseRows.nbytes(problem, lg) for lg in prepared) <= _KEEP_BYTES
    base_rows: list[list[BaseRows] | None] = [[] if keep_rows else None for _ in prepared]
    shifted = list(prepared)
    if lags:
        for k, lg in enumerate(prepared):
            lag_read[names[k]] = lag_and_error(problem, lg, max_lag, rows=base_rows[k])
            lag_values[names[k]] = _significant(*lag_read[names[k]])
            shifted[k] = shift_wrenches(lg, lag_values[names[k]])
    if sum(len(lg.samples) for lg in shifted) == 0:
        raise StateError("no usable sample in the logs (all flagged as non-finite or invalid)")
    estimate = _fit(problem, shifted, settings, workspace)
    # The first lags were read with the URDF's model: its errors (with every link free, too
    # many to project out) pose as part of a lag. Read them again with the fitted model, from
    # the unshifted logs, and refit while they move.
    for _ in range(_LAG_ROUNDS if lags else 0):
        read = {
            names[k]: lag_and_error(problem, lg, max_lag, estimate.theta, base_rows[k])
            for k, lg in enumerate(prepared)
        }
        again = {n: _significant(*v) for n, v in read.items()}
        if all(abs(again[n] - lag_values[n]) <= _LAG_TOLERANCE for n in again):
            lag_read = read
            break
        lag_values, lag_read = again, read
        shifted = [shift_wrenches(lg, again[names[k]]) for k, lg in enumerate(prepared)]
        # From the URDF again, not from the previous estimate: the scale's fixed point is met
        # to a tolerance, so another start would stop at another point within it.
        estimate = _fit(problem, shifted, settings, workspace)
    result = estimate.report()
    result.lags = lag_values
    result.lag_estimates = lag_read
    result.lag_notes = {
        names[k]: why_no_lag(lg, max_lag)
        for k, lg in enumerate(prepared)
        if names[k] in lag_read and not math.isfinite(lag_read[names[k]][1])
    }
    return result


def _significant(lag: float, std_error: float) -> float:
    """The lag applied to a log: its estimate when the log tells it from zero (beyond
    :data:`LAG_QUANTILE` standard errors), else 0 (the log is taken as timed: a fractional
    shift read from noise moves that log's sensor offsets by the wrenches' rate of change times
    the shift)."""
    return lag if abs(lag) > LAG_QUANTILE * std_error else 0.0


#: A lag is applied when its estimate is beyond this many standard errors (two-sided 95 %).
LAG_QUANTILE = 1.959963984540054
#: Lags are read again with the fitted model at most this many times ...
_LAG_ROUNDS = 3
#: ... until none moves by more than this [s].
_LAG_TOLERANCE = 2e-5


def _sensor_carriers(
    robot: Robot, links: list[LinkInertia], contacts: list[Contact], sensors: SensorModel
) -> dict[str, str]:
    """Links on the same rigid body as a contact whose offsets are fitted: link name ->
    contact name."""
    names = [c.name for c in contacts]
    fitted = set(sensors.contacts_for("offsets", names))
    held: dict[str, str] = {}
    for c in contacts:
        if c.name not in fitted:
            continue
        joint = robot.model.frames[robot.frame_id(c.frame)].parentJoint
        for lk in links:
            if lk.joint == joint and lk.name not in held:
                held[lk.name] = c.name
    return held


def _log_names(sources: list[str]) -> list[str]:
    """Short distinct names of the logs (file stems), for per-log parameters."""
    stems = [Path(s).stem or f"log{k}" for k, s in enumerate(sources)]
    if len(set(stems)) < len(stems):
        stems = [f"log{k + 1}" for k in range(len(stems))]
    return stems


def _noise_model(
    problem: Problem,
    prepared: list[Any],
    rows: int,
    solver: Solver,
    floor: float,
    workspace: Workspace | None = None,
) -> tuple[NoiseModel, float]:
    """The noise of the logged quantities (:mod:`~wholebody.identify.noise`) and the lag-1
    autocorrelation of the residuals, from a preliminary fit (each row group weighted by its
    own noise level, one level per group) to pairs of consecutive samples ``(t, t + 1)``, every
    k-th ``t`` of each log, about :data:`_NOISE_SAMPLES` samples in all."""
    n_total = sum(len(lg.samples) for lg in prepared)
    step = max(2, 2 * (n_total // _NOISE_SAMPLES))
    C = problem.n_columns
    stats = NoiseStatistics([c.name for c in problem.contacts], rows, C)
    for li, lg in enumerate(prepared):
        starts = np.arange(0, len(lg.samples) - 1, step)
        for c0 in range(0, len(starts), _CHUNK // 2):
            t = starts[c0 : c0 + _CHUNK // 2]
            index = np.stack([t, t + 1], axis=1).reshape(-1)
            stats.add(*features_and_jacobians(problem, lg, index, rows, li, workspace))
    first = 2 * len(problem.contacts)
    groups = [g for g, _ in _row_groups(rows)]
    factors = {g: square_root(stats.G[first + k]) for k, g in enumerate(groups)}
    total = max(sum(stats.counts.values()), 1)
    dof_share = max(1.0 - problem.p / total, 1e-3)
    theta = np.zeros(problem.p)
    x = problem.x_only(theta)

    def levels(x: Array, share: float) -> dict[str, float]:
        return {
            g: max(
                math.sqrt(
                    max(float(x @ stats.G[first + k] @ x), 0.0) / max(stats.counts[g] * share, 1.0)
                ),
                floor,
            )
            for k, g in enumerate(groups)
        }

    noise = levels(x, 1.0)
    for _ in range(_NOISE_ROUNDS):
        theta = solver.solve(factors, noise, theta)
        x = problem.x_only(theta)
        new = levels(x, dof_share)
        converged = all(abs(new[g] / noise[g] - 1) < 1e-2 for g in noise)
        noise = new
        if converged:
            break
    if stats.round_off(x):
        # The model balances the logs to round-off: no noise to model; every row alike.
        return NoiseModel.uniform(stats.contacts, groups, floor), 0.0
    if any(lg.smoothing is not None for lg in prepared):
        # Smoothed logs' residuals are mostly the differentiation noise left in band, which
        # enters through the mass matrix, not through the sensors' Jacobians: a sensor model
        # fitted to it weighs rows by correlations it does not have (on a Talos squat the
        # torso's mass came out 60 times less precise). Each row group by its own level.
        k = len(stats.contacts)
        return NoiseModel(stats.contacts, np.zeros(k), np.zeros(k), noise), stats.lag_one(x, noise)
    return stats.model(x, dof_share, floor), stats.lag_one(x, noise)


@dataclass(frozen=True)
class _Segment:
    """Samples ``start:stop`` of log ``log``, in its time window ``fold``."""

    log: int
    fold: int
    start: int
    stop: int


def _segments(prepared: list[PreparedLog], folds: int) -> tuple[list[_Segment], int]:
    """Each log cut into ``folds`` time windows (fewer for a short log; one when ``folds`` is
    under 2), each window into chunks of :data:`_CHUNK` samples; and the number of windows."""
    segments = []
    for li, lg in enumerate(prepared):
        n = len(lg.samples)
        k = max(1, min(folds, n // 4)) if folds >= 2 else 1
        bounds = np.linspace(0, n, k + 1).astype(int)
        for f in range(k):
            for start in range(bounds[f], bounds[f + 1], _CHUNK):
                segments.append(_Segment(li, f, start, min(start + _CHUNK, int(bounds[f + 1]))))
    return segments, 1 + max(s.fold for s in segments)


@dataclass
class _Chunks:
    """Each segment's features ``F`` (n, rows, C) and the whitening of its samples' rows, in
    the segments' order. With ``keep`` they are computed on the first pass and kept for the
    next; else computed on every pass in the workspace's buffers (valid until the next chunk)."""

    problem: Problem
    prepared: list[PreparedLog]
    segments: list[_Segment]
    rows: int
    noise_model: NoiseModel
    workspace: Workspace
    keep: bool
    kept: list[tuple[Array, Whitening]] = field(default_factory=list)

    def __iter__(self) -> Iterator[tuple[_Segment, Array, Whitening]]:
        if self.kept:
            for seg, (F, white) in zip(self.segments, self.kept, strict=True):
                yield seg, F, white
            return
        for seg in self.segments:
            log = self.prepared[seg.log]
            # Kept raw features are fresh arrays, not the workspace's (a smoothed log's are
            # copies of what the workspace keeps for it).
            fresh = self.keep and log.smoothing is None
            F, JT = features_and_jacobians(
                self.problem,
                log,
                np.arange(seg.start, seg.stop),
                self.rows,
                seg.log,
                None if fresh else self.workspace,
            )
            white = self.noise_model.whitening(JT, self.rows)
            if self.keep:
                self.kept.append((F, white))
            yield seg, F, white


@dataclass(frozen=True)
class _Estimate:
    """A fit's parameters ``theta`` (p,) and what its report needs: the features (``chunks``),
    the Gram matrices per time window and the square root of their sum (``R``), the noise
    model's overall scale, the share of degrees of freedom the residual keeps and the
    residuals' lag-1 autocorrelation ``rho``."""

    problem: Problem
    settings: _Settings
    chunks: _Chunks
    solver: Solver
    grams: list[dict[str, Array]]
    R: Array
    theta: Array
    scale: float
    dof_share: float
    rho: float

    def report(self) -> IdentificationResult:
        """The second pass (scores, held-out windows), the intervals, the identifiability
        report and the cross-validation."""
        return _report(self)


def _fit(
    problem: Problem, prepared: list[PreparedLog], settings: _Settings, workspace: Workspace
) -> _Estimate:
    """The noise model, the first pass (the Gram matrices) and the Gauss-Newton estimate
    (from the URDF); the report is computed when asked for: a fit whose lags are read again
    and redone needs only the estimate. ``workspace``: the chunks' arrays, reused (by the
    fit's passes and by fits one after another)."""
    rows = problem.robot.nv if settings.use_torques else 6
    n_total = sum(len(lg.samples) for lg in prepared)
    segments, n_folds = _segments(prepared, settings.folds)
    solver = Solver(problem, settings.prior_weight, settings.max_iterations, settings.held)
    floor = _floor(problem)
    noise_model, rho = _noise_model(problem, prepared, rows, solver, floor, workspace)
    keep = n_total * rows * (problem.n_columns + rows) * 8 <= _KEEP_BYTES
    chunks = _Chunks(problem, prepared, segments, rows, noise_model, workspace, keep)
    grams, n_rows = _gram_matrices(chunks, rho, n_folds, workspace)
    factors = combine(grams, range(n_folds), problem.n_columns)
    theta, scale, dof_share = _gauss_newton(problem, solver, factors, n_rows)
    return _Estimate(
        problem, settings, chunks, solver, grams, factors["all"], theta, scale, dof_share, rho
    )


def _floor(problem: Problem) -> float:
    """The least noise level of a row group [N or N m]."""
    return 1e-12 * problem.robot.weight


def _gram_matrices(
    chunks: _Chunks, rho: float, n_folds: int, ws: Workspace
) -> tuple[list[dict[str, Array]], int]:
    """Pass 1: the Gram matrix per time window of the features whitened across rows (each
    sample by its residual covariance) and in time (the residuals' lag-1 autoregression removed
    within each window, Prais-Winsten at its start): generalised least squares, so that the
    data weigh against the prior by the information they carry, not by their sample count.
    Returns them and the number of rows."""
    C = chunks.problem.n_columns
    grams = [{"all": np.zeros((C, C))} for _ in range(n_folds)]
    n_rows = 0
    previous: tuple[tuple[int, int], Array] | None = None
    for seg, F, white in chunks:
        window = (seg.log, seg.fold)
        Fw = white.apply(F, out=ws.array("whitened", F.shape))
        prior_row = previous[1] if previous is not None and previous[0] == window else None
        previous = (window, Fw[-1].copy())
        scratch = ws.array("lagged", F.shape)
        Fg = _prewhiten(Fw, prior_row, rho, in_place=True, scratch=scratch).reshape(-1, C)
        grams[seg.fold]["all"] += Fg.T @ Fg
        n_rows += len(Fg)
    return grams, n_rows


def _gauss_newton(
    problem: Problem, solver: Solver, factors: dict[str, Array], n_rows: int
) -> tuple[Array, float, float]:
    """Gauss-Newton in prior-whitened parameters from the URDF, with the noise model's overall
    scale re-estimated (its shape, the ratios of its components, is the preliminary fit's).
    Returns ``theta`` (p,), the scale, and the share of degrees of freedom the residual keeps."""
    R_all = factors["all"]
    theta0 = np.zeros(problem.p)
    x0 = problem.x_only(theta0)
    dof_share = max(1.0 - problem.p / max(n_rows, 1), 1e-3)
    scale = max(math.sqrt(float(np.sum((R_all @ x0) ** 2)) / max(n_rows, 1)), _SCALE_FLOOR)
    theta = theta0.copy()
    for _outer in range(6):
        theta = solver.solve(factors, {"all": scale}, theta)
        x = problem.x_only(theta)
        new = max(
            math.sqrt(float(np.sum((R_all @ x) ** 2)) / max(n_rows * dof_share, 1.0)),
            _SCALE_FLOOR,
        )
        converged = abs(new / scale - 1) < 1e-3
        scale = new
        if converged:
            break
    return theta, scale, dof_share


@dataclass
class _Residuals:
    """What the second pass sums, per row group (``before`` / ``after``: each sample's residual
    norm with the URDF and with the fit, the logs one after the other) and per log (``scores``:
    each sample's score (n, r); ``excess``: each held-out sample's whitened cost of the fit less
    the nominal model's); the held-out windows' plain sums of squares by group (``rss_fit``,
    ``rss_nom``), whitened costs by window (``fold_fit``, ``fold_nom``) and the arithmetic
    resolution of their sum (see :func:`_held_out`); ``magnitude`` (C,), the sum over
    samples of ``|W F|^T |W F| |x|`` (bounded by ``|F|^T |W|^T |W| |F| |x|``): each product
    of the Gram matrix's ``G x`` is exact to within ``_ROUNDING eps`` of its share of it."""

    before: dict[str, list[Array]]
    after: dict[str, list[Array]]
    scores: list[list[Array]]
    excess: list[list[Array]]
    rss_fit: dict[str, float]
    rss_nom: dict[str, float]
    fold_fit: list[float]
    fold_nom: list[float]
    resolution: float = 0.0
    magnitude: Array | float = 0.0

    @classmethod
    def empty(cls, groups: list[str], n_logs: int, n_folds: int) -> _Residuals:
        return cls(
            {g: [] for g in groups},
            {g: [] for g in groups},
            [[] for _ in range(n_logs)],
            [[] for _ in range(n_logs)],
            {g: 0.0 for g in groups},
            {g: 0.0 for g in groups},
            [0.0] * n_folds,
            [0.0] * n_folds,
        )

    def rms(self, which: str, counts: dict[str, int], share: float = 1.0) -> dict[str, float]:
        """RMS per row of ``before`` or ``after`` by group, for ``share`` of the rows."""
        parts = self.before if which == "before" else self.after
        return {
            g: float(np.sqrt(np.sum(np.concatenate(v) ** 2) / max(counts[g] * share, 1.0)))
            for g, v in parts.items()
        }

    def cross_validation(self, n_folds: int, counts: dict[str, int]) -> CrossValidation:
        return CrossValidation(
            n_folds=n_folds,
            rms_nominal={g: math.sqrt(v / max(counts[g], 1)) for g, v in self.rss_nom.items()},
            rms_fitted={g: math.sqrt(v / max(counts[g], 1)) for g, v in self.rss_fit.items()},
            cost_nominal=sum(self.fold_nom),
            cost_fitted=sum(self.fold_fit),
            fold_costs_nominal=self.fold_nom,
            fold_costs_fitted=self.fold_fit,
            cost_resolution=self.resolution,
            difference_std=_sum_std([np.concatenate(e) for e in self.excess if e]),
        )


@dataclass(frozen=True)
class _Last:
    """The last sample of a chunk, for the next chunk of the same time window: its features
    (rows, C), its whitening and its whitened residual (rows,)."""

    window: tuple[int, int]
    F: Array
    white: Whitening
    w: Array


def _second_pass(
    est: _Estimate, x: Array, fold_x: list[tuple[Array, Array]], DLN: Array
) -> _Residuals:
    """Pass 2: each sample's residual (with the URDF, the fit, and each held-out window's two
    models fitted without it) and its score, in the series whitened across rows and in time:
    ``e_t = w_t - rho w_{t-1}`` (``w = W r``), whose gradient is
    ``F_t^T W_t^T e_t - rho F_{t-1}^T W_{t-1}^T e_t`` (Prais-Winsten at a window's start)."""
    groups_rows = _row_groups(est.chunks.rows)
    out = _Residuals.empty([g for g, _ in groups_rows], len(est.chunks.prepared), len(fold_x))
    x0 = est.problem.x_only(np.zeros(est.problem.p))
    rho, scale = est.rho, est.scale
    last: _Last | None = None
    for seg, F, white in est.chunks:
        # The residuals of the fit, the URDF and the held-out window's two models in one
        # product: one read of the chunk's features (memory-bound), not four.
        X = np.stack([x, x0, *(fold_x[seg.fold] if fold_x else ())], axis=1)
        residuals = F @ X  # (n, rows, 2 or 4)
        rx, r0 = residuals[..., 0], residuals[..., 1]
        w = white.apply(rx)
        window = (seg.log, seg.fold)
        prev = last if last is not None and last.window == window else None
        e = _prewhiten(w, None if prev is None else prev.w, rho)
        grad = np.einsum("nrc,nr->nc", F, white.apply_transpose(e))
        if prev is None:  # a window's first sample: F_0^T W_0^T e_0 sqrt(1 - rho^2)
            grad[0] *= math.sqrt(1.0 - rho**2)
        if rho and len(F) > 1:
            grad[1:] -= rho * np.einsum(
                "nrc,nr->nc", F[:-1], white.take(slice(0, -1)).apply_transpose(e[1:])
            )
        if rho and prev is not None:
            grad[0] -= rho * (prev.F.T @ prev.white.apply_transpose(e[:1])[0])
        out.scores[seg.log].append((grad / scale**2) @ DLN)
        size = np.abs(F) @ np.abs(x)  # (n, rows)
        size = white.bound(white.bound(size), transpose=True)
        out.magnitude = out.magnitude + np.einsum("nrc,nr->c", np.abs(F), size)
        # F[-1] copied: the next chunk's features overwrite the buffer.
        last = _Last(window, F[-1].copy(), white.take(slice(len(F) - 1, len(F))), w[-1])
        for g, sl in groups_rows:
            out.before[g].append(np.linalg.norm(r0[:, sl], axis=1))
            out.after[g].append(np.linalg.norm(rx[:, sl], axis=1))
        if fold_x:
            cost_f, cost_n, res = _held_out(
                F,
                white,
                X[:, 2:],
                residuals[..., 2:],
                groups_rows,
                out.rss_fit,
                out.rss_nom,
                est.chunks.workspace.array("magnitudes", F.shape),
            )
            out.fold_fit[seg.fold] += float(cost_f.sum()) / scale**2
            out.fold_nom[seg.fold] += float(cost_n.sum()) / scale**2
            out.resolution += res / scale**2
            out.excess[seg.log].append((cost_f - cost_n) / scale**2)
    return out


def _inseparable(problem: Problem, J: Array, V_null: Array) -> tuple[Array, list[dict[str, float]]]:
    """What the data alone cannot separate, whatever the prior's scales: the null space of the
    regressor ``J`` (rows, p) with every parameter's column equilibrated. Returns each
    parameter's share in it (p,) and its directions (parameter name -> component)."""
    col_scale = np.sqrt(np.einsum("ij,ij->j", J, J))
    col_scale[col_scale == 0] = 1.0
    V_eq = observable_basis({"all": J / col_scale})[1]
    data_null = np.einsum("ij,ij->i", V_eq, V_eq)  # share of each parameter in it
    # An inertia's six coordinates mix into all its entries: if any coordinate is unseen, none
    # of the link's entries counts as identified.
    L = problem.prior_factor
    LV = L @ V_null
    coord_null = np.einsum("ij,ij->i", LV, LV) / np.maximum(np.einsum("ij,ij->i", L, L), 1e-300)
    for col in problem.link_inertia.values():
        if coord_null[col : col + 6].max() > 0.01:
            data_null[col : col + 6] = np.maximum(data_null[col : col + 6], 1.0)
    names = [p.name for p in problem.params]
    return data_null, [direction_components(V_eq[:, k], names) for k in range(V_eq.shape[1])]


@dataclass(frozen=True)
class _Reported:
    """The reported quantities ``q = M theta`` (mass [kg], CoM [m], inertia [kg m^2], sensor
    parameters): their covariance (p, p), prior variances, the data's share of their information,
    degrees of freedom (p,), which are ``held`` at the URDF for a sensor's offset, and their
    numerical resolution (p,)."""

    cov: Array
    prior_var: Array
    share: Array
    dof: Array
    held: NDArray[np.bool_]
    resolution: Array


def _reported(
    est: _Estimate,
    N: Array,
    H_data: Array,
    cov_w: Array,
    V_null: Array,
    dof_w: Array,
    resolution_w: Array,
) -> _Reported:
    """The posterior of the reported quantities in the directions the fit may move (``N``,
    p x r: not held for a sensor's offset), from the whitened sandwich covariance ``cov_w``,
    and their numerical resolution from that of the free coordinates (``resolution_w``, r)."""
    L = est.problem.prior_factor
    ML = _reporting_jacobian(est.problem, est.theta) @ L
    MLN = ML @ N
    cov = MLN @ cov_w @ MLN.T
    prior_var = np.einsum("ij,ij->i", ML, ML)
    free_var = np.einsum("ij,ij->i", MLN, MLN)
    held = free_var < 0.01 * prior_var  # kept at the URDF for a sensor's offset
    post = MLN @ pinv_sym(N.T @ H_data @ N + np.eye(N.shape[1])) @ MLN.T
    share = 1.0 - np.diag(post) / np.maximum(free_var, 1e-300)
    null_share = np.einsum("ij,ij->i", ML @ V_null, ML @ V_null) / np.maximum(prior_var, 1e-300)
    unobserved = null_share > 0.5
    share[unobserved | held] = 0.0
    share = np.clip(share, 0.0, 1.0)
    if est.settings.prior_weight == 0:
        cov[unobserved, :] = np.inf
        cov[:, unobserved] = np.inf
    # A reported quantity's degrees of freedom: the fewest of the coordinates it moves with
    # (a sensor offset of one log: that log's batches).
    moves = np.abs(MLN) > 1e-12 * np.maximum(np.abs(MLN).max(axis=1, keepdims=True), 1e-300)
    dof = np.array([float(dof_w[m].min()) if m.any() else 1.0 for m in moves])
    return _Reported(cov, prior_var, share, dof, held, np.abs(MLN) @ resolution_w)


def _report(est: _Estimate) -> IdentificationResult:
    """The report of a fit (:meth:`_Estimate.report`)."""
    problem, theta = est.problem, est.theta
    # Information and identifiability (data alone, every direction), then the posterior in
    # the directions the fit may move (N: not held for a sensor's offset).
    x, D = problem.x_and_derivative(theta)
    DL = D @ problem.prior_factor
    J = (est.R @ DL) / est.scale
    H_data = J.T @ J
    N = est.solver.basis()
    H_inv = pinv_sym(N.T @ H_data @ N + est.settings.prior_weight * np.eye(N.shape[1]))
    n_folds = len(est.grams)
    fold_x = fold_parameters(
        est.solver, problem, est.grams, {"all": est.scale}, n_folds, problem.n_columns
    )
    res = _second_pass(est, x, fold_x, DL @ N)
    per_log = [np.concatenate(s) if s else np.zeros((0, N.shape[1])) for s in res.scores]
    meat, n_batches, batch, dof_w = batch_means_meat(per_log, H_inv)
    blocks = {"all": J}
    names_p = [p.name for p in problem.params]
    V_null = observable_basis(blocks)[1]
    data_null, together = _inseparable(problem, J, V_null)
    # The fit's numerical resolution in the free directions: the estimate moves by
    # H^-1 (D L N)^T dG x under the round-off dG of the Gram matrix's products.
    eps = float(np.finfo(float).eps)
    moved = np.abs(DL @ N).T @ res.magnitude * (_ROUNDING * eps / est.scale**2)
    q = _reported(est, N, H_data, H_inv @ meat @ H_inv, V_null, dof_w, np.abs(H_inv) @ moved)
    groups_rows = _row_groups(est.chunks.rows)
    counts = {g: sum(len(v) for v in res.after[g]) * (sl.stop - sl.start) for g, sl in groups_rows}
    names, prepared = problem.log_names, est.chunks.prepared
    calibrations = {names[k]: fitted_calibration(problem, theta, k) for k in range(len(prepared))}
    return IdentificationResult(
        robot=problem.robot,
        links=problem.links,
        parameters=_estimates(problem, theta, q, data_null),
        identifiability=identifiability_report(blocks, H_data, names_p),
        noise={
            g: max(v, _floor(problem)) for g, v in res.rms("after", counts, est.dof_share).items()
        },
        residual_rms_before=res.rms("before", counts),
        residual_rms_after=res.rms("after", counts),
        residual_before={g: np.concatenate(v) for g, v in res.before.items()},
        residual_after={g: np.concatenate(v) for g, v in res.after.items()},
        calibration=calibrations[names[0]],
        n_samples=sum(len(lg.q) for lg in prepared),
        use_torques=est.settings.use_torques,
        sources=[lg.source for lg in prepared],
        covariance=q.cov,
        _link_states={problem.links[i].name: problem.link_state(theta, i) for i in problem.touched},
        _theta=theta,
        calibrations=calibrations,
        cross_validation=res.cross_validation(n_folds, counts) if fold_x else None,
        batch_length=batch,
        n_batches=n_batches,
        inconsistent_urdf_links=list(problem.inconsistent),
        inseparable=together,
        inseparable_share=dict(zip(names_p, (float(v) for v in data_null), strict=True)),
        noise_model=est.chunks.noise_model.as_dict(),
        noise_lag_one=est.rho,
        smoothing={
            names[k]: (lg.smoothing, len(lg.samples))
            for k, lg in enumerate(prepared)
            if lg.smoothing is not None
        },
    )


def _prewhiten(
    X: Array,
    previous: Array | None,
    rho: float,
    in_place: bool = False,
    scratch: Array | None = None,
) -> Array:
    """``X_t - rho X_{t-1}`` along the first axis of ``X`` (n, ...), ``previous`` the sample
    before ``X[0]`` (None: ``X[0]`` starts a window and is scaled by ``sqrt(1 - rho^2)``,
    Prais-Winsten); ``in_place``: overwrite ``X``; ``scratch`` (at least n - 1, ...): holds
    ``rho X_{t-1}`` (else a temporary)."""
    if rho == 0.0:
        return X
    out = X if in_place else X.copy()
    first = X[0] * math.sqrt(1.0 - rho**2) if previous is None else X[0] - rho * previous
    if scratch is None:
        out[1:] -= rho * X[:-1]
    else:
        # In blocks of samples from the last (a block's lagged rows are not yet overwritten)
        # of about 1 MB: each block's product and difference stay in the cache.
        block = max(1, 2**20 // max(X[0].nbytes, 1))
        stop = len(X)
        while stop > 1:
            start = max(1, stop - block)
            lagged = np.multiply(X[start - 1 : stop - 1], rho, out=scratch[: stop - start])
            out[start:stop] -= lagged
            stop = start
    out[0] = first
    return out


def _sum_std(series: list[Array]) -> float:
    """Standard deviation of the sum of time series (independent of each other), each from
    its variance and integrated autocorrelation time."""
    var = 0.0
    for z in series:
        if len(z) >= 2:
            tau = float(integrated_autocorrelation_time(z[:, None])[0])
            var += len(z) * float(np.var(z)) * tau
    return math.sqrt(var)


def _held_out(
    F: Array,
    white: Whitening,
    X: Array,
    residuals: Array,
    groups_rows: list[tuple[str, slice]],
    rss_fit: dict[str, float],
    rss_nom: dict[str, float],
    scratch: Array | None = None,
) -> tuple[Array, Array, float]:
    """Held-out samples scored on their own residuals ``r = F x`` (``residuals`` (n, rows, 2)
    of ``X`` (C, 2): the fit's ``x`` and the nominal model's): each sample's whitened squared
    residual ``|W r|^2`` (n,) of the fit and of the nominal model (the groups' plain sums of
    squares are added to ``rss_*``), and the arithmetic resolution of their sum.

    A computed residual entry is exact to within ``_ROUNDING eps a_i``, ``a_i`` the sum of the
    magnitudes of the terms that cancel in it, so each whitened residual entry ``w_i`` to
    within ``d_i``, ``d = |W| (_ROUNDING eps a)``, and the sample's ``|w|^2`` to within
    ``sum_i 2 |w_i| d_i + d_i^2``; the resolution sums that over samples and both models.
    ``scratch`` (the shape of ``F``): holds ``|F|`` (else a temporary).
    """
    eps = float(np.finfo(float).eps)
    costs = []
    resolution = 0.0
    magnitudes = np.abs(F, out=scratch) @ np.abs(X)  # (n, rows, 2)
    for k, rss in enumerate((rss_fit, rss_nom)):
        r = residuals[..., k]
        for g, sl in groups_rows:
            rss[g] += float(np.sum(r[:, sl] ** 2))
        w = white.apply(r)
        costs.append(np.einsum("ni,ni->n", w, w))
        d = white.bound(_ROUNDING * eps * magnitudes[..., k])
        resolution += float(np.sum(2.0 * np.abs(w) * d + d**2))
    return costs[0], costs[1], resolution


def _reporting_jacobian(problem: Problem, theta: Array) -> Array:
    """``d q / d theta`` (p, p) of the reported quantities (mass [kg], CoM [m], inertia
    entries about the CoM [kg m^2], sensor parameters) at ``theta``."""
    p = problem.p
    M = np.eye(p)
    for k, (_, ids) in enumerate(problem.mass_groups):
        M[k, k] = sum(problem.link_state(theta, i)[0] for i in ids)
    for i, col in problem.link_inertia.items():
        dI = problem.inertia_derivatives(theta, i)  # (6 coords, 3, 3)
        G = np.array([[dI[c][a, b] for c in range(6)] for a, b in _PAIRS])
        M[col : col + 6, col : col + 6] = G
    return M


def _estimates(
    problem: Problem, theta: Array, q: _Reported, data_null: Array
) -> list[ParameterEstimate]:
    """The reported parameters; a parameter is identified when the data shrink its prior
    variance by :data:`IDENTIFIED_SHARE`, it is not part of a combination the data cannot
    separate (``data_null``: its share in the equilibrated null space, below 1 %) and it is
    not held at the URDF (what a sensor offset imitates). Its resolution is at least
    ``_ROUNDING eps`` of its value (the value's own rounding)."""
    cov, prior_var, share, held = q.cov, q.prior_var, q.share, q.held
    eps = float(np.finfo(float).eps)
    out = []
    links = problem.links
    by_name = {lk.name: (i, lk) for i, lk in enumerate(links)}
    for k, p in enumerate(problem.params):
        se = math.sqrt(max(cov[k, k], 0.0)) if np.isfinite(cov[k, k]) else math.inf
        prior = math.sqrt(prior_var[k])
        if p.kind == "mass":
            ids = problem.mass_groups[k][1]
            nominal = sum(links[i].mass for i in ids)
            value = sum(problem.link_state(theta, i)[0] for i in ids)
        elif p.kind == "com":
            i, lk = by_name[p.target]
            nominal = float(lk.com[p.axis])
            value = float(problem.link_state(theta, i)[1][p.axis])
        elif p.kind == "inertia":
            i, lk = by_name[p.target]
            a, b = _PAIRS[p.axis]
            nominal = float(lk.inertia_com[a, b])
            value = float(problem.link_state(theta, i)[2][a, b])
        else:
            nominal, value = 0.0, float(theta[k])
        out.append(
            ParameterEstimate(
                p.name,
                p.kind,
                p.target,
                p.unit,
                float(nominal),
                float(value),
                float(se),
                float(prior),
                float(share[k]),
                bool(share[k] >= IDENTIFIED_SHARE and data_null[k] < 0.01 and not held[k]),
                float(q.dof[k]),
                max(float(q.resolution[k]), _ROUNDING * eps * abs(value)),
            )
        )
    assert len(INERTIA_COMPONENTS) == 6
    return out


def fit_calibration(
    robot: Robot,
    logs: Trajectory | Sequence[Trajectory],
    contacts: Sequence[Contact],
    *,
    offsets: bool | Sequence[str] = True,
    gains: bool | Sequence[str] = False,
    rotations: bool | Sequence[str] = False,
    torque_offsets: bool | Sequence[str] = False,
    axes: str | Mapping[str, str] = "contact",
    per_log: bool = True,
    parameters: Any = None,
    **options: Any,
) -> IdentificationResult:
    """Fit sensor calibrations, jointly with inertial corrections when ``parameters`` is given.

    A thin front of :func:`wholebody.identify.fit_inertial_parameters` with
    ``parameters=None`` (no inertial parameter) by default; ``options`` are passed on
    (``use_torques``, ``prior_weight``, ``prior_std``, ...). The result's ``calibration``
    is the fitted :class:`~wholebody.io.calibration.Calibration` (of the first log; every log's
    in
    ``calibrations``); its report says what the logs could identify. ``offsets``, ``gains``,
    ``rotations``, ``torque_offsets``, ``axes`` and ``per_log`` are those of
    :class:`~wholebody.identify.calibrate.SensorModel`.
    """
    sensors = SensorModel(
        offsets=offsets,
        gains=gains,
        rotations=rotations,
        torque_offsets=torque_offsets,
        axes=axes,
        per_log=per_log,
    )
    return fit_inertial_parameters(
        robot, logs, contacts, parameters=parameters, sensors=sensors, **options
    )
