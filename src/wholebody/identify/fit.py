"""The fit: Gauss-Newton over the parameters with noise levels re-estimated, standard errors
that hold for time-correlated residuals, the identifiability report and a cross-validation
against the URDF on held-out time windows (see :mod:`wholebody.identify`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
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
from .problem import INERTIA_COMPONENTS, Problem, prepare_logs
from .result import CrossValidation, IdentificationResult
from .solver import Solver, combine, fold_parameters, square_root
from .stance import offset_imitated_directions

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
) -> IdentificationResult:
    """Fit corrections to links' masses, CoMs and rotational inertias (and sensor
    calibrations) to logs, keeping every link a physically consistent rigid body.

    See :mod:`wholebody.identify` for the model, the cost and the prior.

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
    if isinstance(logs, Trajectory):
        logs = [logs]
    logs = list(logs)
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
    contacts = list(contacts)
    if use_torques is None:
        use_torques = all(t.tau is not None for t in logs)
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
    names = _log_names([str(t.source) for t in logs])
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
    # Directions of other links' mass and CoM that a fitted offset imitates while its sensor's
    # body is still (an ankle link's mass and CoM along the roll axis, a shank's mass at the
    # ankle): held at the URDF like the carrier's (wholebody.identify.stance).
    imitated = []
    if links is None and sensors is not None:
        fitted = sensors.contacts_for("offsets", [c.name for c in contacts])
        imitated = offset_imitated_directions(problem, fitted, robot.nv if use_torques else 6)
    held_matrix = np.array([d.direction for d in imitated]) if imitated else None
    prepared = prepare_logs(robot, logs, contacts, use_torques)
    # The chunks' arrays, kept for every pass of the fit and the refits.
    workspace = Workspace()
    with blas_threads(max(problem.n_columns, problem.p)) as threads:
        lag_values: dict[str, float] = {}
        lag_read: dict[str, tuple[float, float]] = {}
        originals = list(prepared)
        # Each log's base rows from the first reading kept for the readings with the fitted
        # model (one regressor pass per sample), within the memory the fit keeps features in.
        keep_rows = sum(BaseRows.nbytes(problem, lg) for lg in prepared) <= _KEEP_BYTES
        base_rows: list[list[BaseRows] | None] = [[] if keep_rows else None for _ in prepared]
        if lags:
            for k, lg in enumerate(prepared):
                lag_read[names[k]] = lag_and_error(problem, lg, max_lag, rows=base_rows[k])
                lag_values[names[k]] = _significant(*lag_read[names[k]])
                prepared[k] = shift_wrenches(lg, lag_values[names[k]])
        n_total = sum(len(lg.q) for lg in prepared)
        if n_total == 0:
            raise StateError("no usable sample in the logs (all flagged as non-finite or invalid)")

        def fit_shifted(prepared: list[Any], lag_values: dict[str, float]) -> _Estimate:
            """The fit of the logs as shifted by ``lag_values`` (every other setting fixed)."""
            return _fit(
                problem,
                prepared,
                names,
                use_torques,
                prior_weight,
                max_iterations,
                folds,
                lag_values,
                held_matrix,
                workspace,
            )

        estimate = fit_shifted(prepared, lag_values)
        # The first lags were read with the URDF's model: its errors (with every link free,
        # too many to project out) pose as part of a lag. Read them again with the fitted
        # model, from the unshifted logs, and refit while they move.
        for _ in range(_LAG_ROUNDS if lags else 0):
            read = {
                names[k]: lag_and_error(problem, lg, max_lag, estimate.theta, base_rows[k])
                for k, lg in enumerate(originals)
            }
            again = {n: _significant(*v) for n, v in read.items()}
            if all(abs(again[n] - lag_values[n]) <= _LAG_TOLERANCE for n in again):
                lag_read = read
                break
            lag_values, lag_read = again, read
            prepared = [shift_wrenches(lg, again[names[k]]) for k, lg in enumerate(originals)]
            # From the URDF again, not from the previous estimate: the scale's fixed point is
            # met to a tolerance, so another start stops at another point within it (measured on
            # the three-log Talos case: 0.008 standard errors away, for about 0.4 s of 13 s).
            estimate = fit_shifted(prepared, lag_values)
        result = estimate.report()
    result.blas_threads = threads
    result.lag_estimates = lag_read
    result.lag_notes = {
        names[k]: why_no_lag(lg, max_lag)
        for k, lg in enumerate(originals)
        if names[k] in lag_read and not math.isfinite(lag_read[names[k]][1])
    }
    result.held_for_offsets = held
    result.held_directions = [(d.link, d.contact, d.words()) for d in imitated]
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
    n_total = sum(len(lg.q) for lg in prepared)
    step = max(2, 2 * (n_total // _NOISE_SAMPLES))
    C = problem.n_columns
    stats = NoiseStatistics([c.name for c in problem.contacts], rows, C)
    for li, lg in enumerate(prepared):
        starts = np.arange(0, len(lg.q) - 1, step)
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
    return stats.model(x, dof_share, floor), stats.lag_one(x, noise)


@dataclass(frozen=True)
class _Estimate:
    """A fit's parameters ``theta`` (p,) and the function computing its report."""

    theta: Array
    report: Callable[[], IdentificationResult]


def _fit(
    problem: Problem,
    prepared: list[Any],
    names: list[str],
    use_torques: bool,
    prior_weight: float,
    max_iterations: int,
    folds: int,
    lag_values: dict[str, float],
    held: Array | None = None,
    workspace: Workspace | None = None,
) -> _Estimate:
    """The noise model, the first pass (the Gram matrices) and the Gauss-Newton estimate
    (from the URDF); the report (the second pass: scores, held-out
    windows, intervals) is computed when asked for: a fit whose lags are read again and
    redone needs only the estimate. ``workspace``: the chunks' arrays, reused (by the fit's
    passes and by fits one after another)."""
    robot = problem.robot
    rows = robot.nv if use_torques else 6
    groups_rows = _row_groups(rows)
    C = problem.n_columns
    n_total = sum(len(lg.q) for lg in prepared)

    # Segments (log, fold, start, stop): each log cut into `folds` time windows.
    segments: list[tuple[int, int, int, int]] = []
    for li, lg in enumerate(prepared):
        n = len(lg.q)
        k = max(1, min(folds, n // 4)) if folds >= 2 else 1
        bounds = np.linspace(0, n, k + 1).astype(int)
        for f in range(k):
            for start in range(bounds[f], bounds[f + 1], _CHUNK):
                segments.append((li, f, start, min(start + _CHUNK, int(bounds[f + 1]))))
    n_folds = 1 + max(f for _, f, _, _ in segments)

    solver = Solver(problem, prior_weight, max_iterations, held)
    floor = 1e-12 * robot.weight
    ws = Workspace() if workspace is None else workspace
    noise_model, rho = _noise_model(problem, prepared, rows, solver, floor, ws)

    keep = n_total * rows * (C + rows) * 8 <= _KEEP_BYTES
    kept: list[tuple[Array, Whitening]] = []

    def chunks() -> Iterator[tuple[tuple[int, int, int, int], Array, Whitening]]:
        """Each segment's features (n, rows, C) and the whitening of its samples' rows (the
        features in the workspace's buffer, valid until the next chunk, unless kept)."""
        if kept:
            for seg, (F, white) in zip(segments, kept, strict=True):
                yield seg, F, white
            return
        for seg in segments:
            li, _, start, stop = seg
            F, JT = features_and_jacobians(
                problem, prepared[li], np.arange(start, stop), rows, li, None if keep else ws
            )
            yield seg, F, noise_model.whitening(JT, rows)

    # Pass 1: the Gram matrix per fold of the features whitened across rows (each sample by its
    # residual covariance) and in time (the residuals' lag-1 autoregression removed within each
    # time window, Prais-Winsten at its start): generalised least squares, so that the data
    # weigh against the prior by the information they carry, not by their sample count.
    # Factored once into a square root R (R^T R = G).
    grams = [{"all": np.zeros((C, C))} for _ in range(n_folds)]
    n_rows = 0
    previous: tuple[tuple[int, int], Array] | None = None
    for (li, f, _, _), F, white in chunks():
        if keep:
            kept.append((F, white))
        Fw = white.apply(F, out=ws.array("whitened", F.shape))
        prior_row = previous[1] if previous is not None and previous[0] == (li, f) else None
        previous = ((li, f), Fw[-1].copy())
        scratch = ws.array("lagged", F.shape)
        Fg = _prewhiten(Fw, prior_row, rho, in_place=True, scratch=scratch).reshape(-1, C)
        grams[f]["all"] += Fg.T @ Fg
        n_rows += len(Fg)
    factors = combine(grams, range(n_folds), C)
    R_all = factors["all"]

    # Gauss-Newton in prior-whitened parameters; the noise model's overall scale re-estimated
    # (its shape, the ratios of its components, is the preliminary fit's).
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

    def report() -> IdentificationResult:
        # Information and identifiability (data alone, every direction), then the posterior in
        # the directions the fit may move (N: not held for a sensor's offset).
        L = problem.prior_factor
        x, D = problem.x_and_derivative(theta)
        DL = D @ L
        J = (R_all @ DL) / scale
        H_data = J.T @ J
        N = solver.basis()
        H = N.T @ H_data @ N + prior_weight * np.eye(N.shape[1])
        H_inv = pinv_sym(H)
        fold_x = fold_parameters(solver, problem, grams, {"all": scale}, n_folds, C)

        # Pass 2: each sample's residual (before, after, and of each held-out window with the
        # models fitted without it) and its score, in the series whitened across rows and in time:
        # e_t = w_t - rho w_{t-1} (w = W r), whose gradient is
        # F_t^T W_t^T e_t - rho F_{t-1}^T W_{t-1}^T e_t (Prais-Winsten at a window's start).
        before: dict[str, list[Array]] = {g: [] for g, _ in groups_rows}
        after: dict[str, list[Array]] = {g: [] for g, _ in groups_rows}
        scores: list[list[Array]] = [[] for _ in prepared]
        DLN = DL @ N
        rss_fit = {g: 0.0 for g, _ in groups_rows}
        rss_nom = {g: 0.0 for g, _ in groups_rows}
        fold_fit = [0.0] * len(fold_x)
        fold_nom = [0.0] * len(fold_x)
        resolution = 0.0
        excess: list[list[Array]] = [[] for _ in prepared]  # per held-out sample, in time order
        carry: tuple[tuple[int, int], Array, Whitening, Array] | None = None
        for (li, f, _, _), F, white in chunks():
            # The residuals of the fit, the URDF and the held-out window's two models in one
            # product: one read of the chunk's features (memory-bound), not four.
            X = np.stack([x, x0, *(fold_x[f] if fold_x else ())], axis=1)
            residuals = F @ X  # (n, rows, 2 or 4)
            rx, r0 = residuals[..., 0], residuals[..., 1]
            w = white.apply(rx)
            prev = carry if carry is not None and carry[0] == (li, f) else None
            e = _prewhiten(w, None if prev is None else prev[3], rho)
            grad = np.einsum("nrc,nr->nc", F, white.apply_transpose(e))
            if prev is None:  # a window's first sample: F_0^T W_0^T e_0 sqrt(1 - rho^2)
                grad[0] *= math.sqrt(1.0 - rho**2)
            if rho and len(F) > 1:
                grad[1:] -= rho * np.einsum(
                    "nrc,nr->nc", F[:-1], white.take(slice(0, -1)).apply_transpose(e[1:])
                )
            if rho and prev is not None:
                grad[0] -= rho * (prev[1].T @ prev[2].apply_transpose(e[:1])[0])
            scores[li].append((grad / scale**2) @ DLN)
            # F[-1] copied: the next chunk's features overwrite the buffer.
            carry = ((li, f), F[-1].copy(), white.take(slice(len(F) - 1, len(F))), w[-1])
            for g, sl in groups_rows:
                before[g].append(np.linalg.norm(r0[:, sl], axis=1))
                after[g].append(np.linalg.norm(rx[:, sl], axis=1))
            if fold_x:
                cost_f, cost_n, res = _held_out(
                    F,
                    white,
                    X[:, 2:],
                    residuals[..., 2:],
                    groups_rows,
                    rss_fit,
                    rss_nom,
                    ws.array("magnitudes", F.shape),
                )
                fold_fit[f] += float(cost_f.sum()) / scale**2
                fold_nom[f] += float(cost_n.sum()) / scale**2
                resolution += res / scale**2
                excess[li].append((cost_f - cost_n) / scale**2)
        per_log = [np.concatenate(s) if s else np.zeros((0, N.shape[1])) for s in scores]
        meat, n_batches, batch, dof_w = batch_means_meat(
            per_log, H_inv, correlation_time=(1.0 + rho) / (1.0 - rho)
        )
        cov_w = H_inv @ meat @ H_inv
        blocks = {"all": J}
        identifiability = identifiability_report(blocks, H_data, [p.name for p in problem.params])
        V_null = observable_basis(blocks)[1]
        # What the data alone cannot separate, whatever the prior's scales: the null space of the
        # regressor with every parameter's column equilibrated.
        col_scale = np.sqrt(np.einsum("ij,ij->j", J, J))
        col_scale[col_scale == 0] = 1.0
        V_eq = observable_basis({"all": J / col_scale})[1]
        data_null = np.einsum("ij,ij->i", V_eq, V_eq)  # share of each parameter in it
        # An inertia's six coordinates mix into all its entries: if any coordinate is unseen,
        # none of the link's entries counts as identified.
        LV = L @ V_null
        coord_null = np.einsum("ij,ij->i", LV, LV) / np.maximum(np.einsum("ij,ij->i", L, L), 1e-300)
        for col in problem.link_inertia.values():
            if coord_null[col : col + 6].max() > 0.01:
                data_null[col : col + 6] = np.maximum(data_null[col : col + 6], 1.0)
        names_p = [p.name for p in problem.params]
        together = [direction_components(V_eq[:, k], names_p) for k in range(V_eq.shape[1])]

        # Reported quantities q = M theta (physical units) and their covariances.
        M = _reporting_jacobian(problem, theta)
        ML = M @ L
        MLN = ML @ N
        cov = MLN @ cov_w @ MLN.T
        prior_var = np.einsum("ij,ij->i", ML, ML)
        free_var = np.einsum("ij,ij->i", MLN, MLN)
        held_q = free_var < 0.01 * prior_var  # kept at the URDF for a sensor's offset
        post = MLN @ pinv_sym(N.T @ H_data @ N + np.eye(N.shape[1])) @ MLN.T
        share = 1.0 - np.diag(post) / np.maximum(free_var, 1e-300)
        null_share = np.einsum("ij,ij->i", ML @ V_null, ML @ V_null) / np.maximum(prior_var, 1e-300)
        unobserved = null_share > 0.5
        share[unobserved | held_q] = 0.0
        share = np.clip(share, 0.0, 1.0)
        if prior_weight == 0:
            cov[unobserved, :] = np.inf
            cov[:, unobserved] = np.inf
        # A reported quantity's degrees of freedom: the fewest of the coordinates it moves with
        # (a sensor offset of one log: that log's batches).
        moves = np.abs(MLN) > 1e-12 * np.maximum(np.abs(MLN).max(axis=1, keepdims=True), 1e-300)
        dof = np.array([float(dof_w[m].min()) if m.any() else 1.0 for m in moves])

        estimates = _estimates(problem, theta, cov, prior_var, share, dof, data_null, held_q)
        calibrations = {
            names[k]: fitted_calibration(problem, theta, k) for k in range(len(prepared))
        }
        counts = {g: sum(len(v) for v in after[g]) * (sl.stop - sl.start) for g, sl in groups_rows}
        cross = None
        if fold_x:
            cross = CrossValidation(
                n_folds=n_folds,
                rms_nominal={g: math.sqrt(rss_nom[g] / max(counts[g], 1)) for g in rss_nom},
                rms_fitted={g: math.sqrt(rss_fit[g] / max(counts[g], 1)) for g in rss_fit},
                cost_nominal=sum(fold_nom),
                cost_fitted=sum(fold_fit),
                fold_costs_nominal=fold_nom,
                fold_costs_fitted=fold_fit,
                cost_resolution=resolution,
                difference_std=_sum_std([np.concatenate(e) for e in excess if e]),
            )

        def rms(parts: dict[str, list[Array]], share: float = 1.0) -> dict[str, float]:
            return {
                g: float(
                    np.sqrt(np.sum(np.concatenate(parts[g]) ** 2) / max(counts[g] * share, 1.0))
                )
                for g, _ in groups_rows
            }

        return IdentificationResult(
            robot=robot,
            links=problem.links,
            parameters=estimates,
            identifiability=identifiability,
            noise={g: max(v, floor) for g, v in rms(after, dof_share).items()},
            residual_rms_before=rms(before),
            residual_rms_after=rms(after),
            residual_before={g: np.concatenate(v) for g, v in before.items()},
            residual_after={g: np.concatenate(v) for g, v in after.items()},
            calibration=calibrations[names[0]],
            n_samples=n_total,
            use_torques=use_torques,
            sources=[lg.source for lg in prepared],
            covariance=cov,
            _link_states={
                problem.links[i].name: problem.link_state(theta, i) for i in problem.touched
            },
            _theta=theta,
            calibrations=calibrations,
            lags=lag_values,
            cross_validation=cross,
            batch_length=batch,
            n_batches=n_batches,
            inconsistent_urdf_links=list(problem.inconsistent),
            inseparable=together,
            inseparable_share=dict(zip(names_p, (float(v) for v in data_null), strict=True)),
            noise_model=noise_model.as_dict(),
            noise_lag_one=rho,
        )

    return _Estimate(theta, report)


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
    problem: Problem,
    theta: Array,
    cov: Array,
    prior_var: Array,
    share: Array,
    dof: Array,
    data_null: Array,
    held: NDArray[np.bool_],
) -> list[ParameterEstimate]:
    """The reported parameters; a parameter is identified when the data shrink its prior
    variance by :data:`IDENTIFIED_SHARE`, it is not part of a combination the data cannot
    separate (``data_null``: its share in the equilibrated null space, below 1 %) and it is
    not ``held`` at the URDF (what a sensor offset imitates)."""
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
                float(dof[k]),
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
