"""The fit: Gauss-Newton over the parameters with noise levels re-estimated, standard errors
that hold for time-correlated residuals, the identifiability report and a cross-validation
against the URDF on held-out time windows (see :mod:`wholebody.identify`)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
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
from .features import features, fitted_calibration
from .features import row_groups as _row_groups
from .intervals import batch_means_meat
from .lag import estimate_lag, shift_wrenches
from .links import LinkInertia, robot_links
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
from .result import IdentificationResult
from .solver import Solver, combine, cross_validate, square_root

__all__ = ["fit_inertial_parameters", "fit_calibration"]

Array = NDArray[np.float64]

#: Samples per chunk of features.
_CHUNK = 500
#: The features of all samples are kept between the passes up to this size [bytes].
_KEEP_BYTES = 256 * 2**20
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
    prepared = prepare_logs(robot, logs, contacts, use_torques)
    with blas_threads(max(problem.n_columns, problem.p)) as threads:
        lag_values: dict[str, float] = {}
        originals = list(prepared)
        if lags:
            for k, lg in enumerate(prepared):
                lag = estimate_lag(problem, lg, max_lag)
                lag_values[names[k]] = lag
                prepared[k] = shift_wrenches(lg, lag)
        n_total = sum(len(lg.q) for lg in prepared)
        if n_total == 0:
            raise StateError("no usable sample in the logs (all flagged as non-finite or invalid)")
        result = _fit(
            problem, prepared, names, use_torques, prior_weight, max_iterations, folds, lag_values
        )
        # The first lags were read with the URDF's model: its errors (with every link free,
        # too many to project out) pose as part of a lag. Read them again with the fitted
        # model, from the unshifted logs, and refit while they move.
        for _ in range(_LAG_ROUNDS if lags else 0):
            again = {
                names[k]: estimate_lag(problem, lg, max_lag, result._theta)
                for k, lg in enumerate(originals)
            }
            if all(abs(again[n] - lag_values[n]) <= _LAG_TOLERANCE for n in again):
                break
            lag_values = again
            prepared = [shift_wrenches(lg, again[names[k]]) for k, lg in enumerate(originals)]
            result = _fit(
                problem,
                prepared,
                names,
                use_torques,
                prior_weight,
                max_iterations,
                folds,
                lag_values,
            )
    result.blas_threads = threads
    result.held_for_offsets = held
    return result


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


def _fit(
    problem: Problem,
    prepared: list[Any],
    names: list[str],
    use_torques: bool,
    prior_weight: float,
    max_iterations: int,
    folds: int,
    lag_values: dict[str, float],
) -> IdentificationResult:
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

    keep = n_total * rows * C * 8 <= _KEEP_BYTES
    kept: list[Array] = []

    def chunks() -> Iterator[tuple[tuple[int, int, int, int], Array]]:
        if kept:
            yield from zip(segments, kept, strict=True)
            return
        for seg in segments:
            li, _, start, stop = seg
            yield seg, features(problem, prepared[li], start, stop, rows, li)

    # Pass 1: each row group's Gram matrix of the stacked features, per fold (BLAS-3, half
    # the work of a QR), factored once into a square root R (R^T R = F^T F).
    grams = [{g: np.zeros((C, C)) for g, _ in groups_rows} for _ in range(n_folds)]
    fold_counts = [dict.fromkeys(grams[0], 0) for _ in range(n_folds)]
    for (_, f, _, _), F in chunks():
        if keep:
            kept.append(F)
        for g, sl in groups_rows:
            block = F[:, sl].reshape(-1, C)
            fold_counts[f][g] += len(block)
            grams[f][g] += block.T @ block
    fold_factors = [{g: square_root(G) for g, G in fg.items()} for fg in grams]
    factors = combine(grams, range(n_folds), C)
    counts = {g: sum(fc[g] for fc in fold_counts) for g in factors}

    # Gauss-Newton in prior-whitened parameters, noise levels re-estimated.
    solver = Solver(problem, prior_weight, max_iterations)
    theta0 = np.zeros(problem.p)
    x0, _ = problem.x_and_derivative(theta0)
    rss0 = {g: float(np.sum((R @ x0) ** 2)) for g, R in factors.items()}
    floor = 1e-12 * robot.weight
    noise = {g: max(math.sqrt(rss0[g] / max(counts[g], 1)), floor) for g in factors}
    theta = theta0.copy()
    for _outer in range(6):
        theta = solver.solve(factors, noise, theta)
        x, _ = problem.x_and_derivative(theta)
        dof_share = max(1.0 - problem.p / max(sum(counts.values()), 1), 1e-3)
        new = {
            g: max(math.sqrt(float(np.sum((R @ x) ** 2)) / max(counts[g] * dof_share, 1.0)), floor)
            for g, R in factors.items()
        }
        converged = all(abs(new[g] / noise[g] - 1) < 1e-3 for g in noise)
        noise = new
        if converged:
            break

    # Information, identifiability and the covariance (pass 2 over the samples).
    L = problem.prior_factor
    x, D = problem.x_and_derivative(theta)
    DL = D @ L
    Jg = {g: (R @ DL) / noise[g] for g, R in factors.items()}
    H_data = sum(J.T @ J for J in Jg.values())
    H = H_data + prior_weight * np.eye(problem.p)
    before: dict[str, list[Array]] = {g: [] for g in factors}
    after: dict[str, list[Array]] = {g: [] for g in factors}
    scores: list[list[Array]] = [[] for _ in prepared]
    for (li, _, _, _), F in chunks():
        rx, r0 = F @ x, F @ x0  # (n, rows)
        grad = np.zeros((len(F), C))
        for g, sl in groups_rows:
            grad += np.einsum("nrc,nr->nc", F[:, sl], rx[:, sl]) / noise[g] ** 2
            before[g].append(np.linalg.norm(r0[:, sl], axis=1))
            after[g].append(np.linalg.norm(rx[:, sl], axis=1))
        scores[li].append(grad @ DL)
    H_inv = pinv_sym(H)
    per_log = [np.concatenate(s) if s else np.zeros((0, problem.p)) for s in scores]
    meat, n_batches, batch = batch_means_meat(per_log, H_inv)
    cov_u = H_inv @ meat @ H_inv
    blocks = {g: R @ DL for g, R in factors.items()}
    identifiability = identifiability_report(blocks, H_data, [p.name for p in problem.params])
    V_null = observable_basis(blocks)[1]
    # What the data alone cannot separate, whatever the prior's scales: the null space of the
    # regressor with every parameter's column equilibrated.
    scale = np.sqrt(sum(np.einsum("ij,ij->j", J, J) for J in Jg.values()))
    scale[scale == 0] = 1.0
    V_eq = observable_basis({g: J / scale for g, J in Jg.items()})[1]
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
    cov = ML @ cov_u @ ML.T
    prior_var = np.einsum("ij,ij->i", ML, ML)
    post = ML @ pinv_sym(H_data + np.eye(problem.p)) @ ML.T
    share = 1.0 - np.diag(post) / np.maximum(prior_var, 1e-300)
    null_share = np.einsum("ij,ij->i", ML @ V_null, ML @ V_null) / np.maximum(prior_var, 1e-300)
    unobserved = null_share > 0.5
    share[unobserved] = 0.0
    share = np.clip(share, 0.0, 1.0)
    if prior_weight == 0:
        cov[unobserved, :] = np.inf
        cov[:, unobserved] = np.inf
    dof = float(n_batches - 1) if n_batches > 1 else 1.0

    estimates = _estimates(problem, theta, cov, prior_var, share, dof, data_null)
    calibrations = {names[k]: fitted_calibration(problem, theta, k) for k in range(len(prepared))}
    cross = cross_validate(
        solver, problem, grams, fold_factors, fold_counts, noise, theta, n_folds, C
    )

    def rms(parts: dict[str, list[Array]]) -> dict[str, float]:
        return {
            g: float(np.sqrt(np.mean(np.concatenate(v) ** 2 / (sl.stop - sl.start))))
            for (g, v), (_, sl) in zip(parts.items(), groups_rows, strict=True)
        }

    return IdentificationResult(
        robot=robot,
        links=problem.links,
        parameters=estimates,
        identifiability=identifiability,
        noise=noise,
        residual_rms_before=rms(before),
        residual_rms_after=rms(after),
        residual_before={g: np.concatenate(v) for g, v in before.items()},
        residual_after={g: np.concatenate(v) for g, v in after.items()},
        calibration=calibrations[names[0]],
        n_samples=n_total,
        use_torques=use_torques,
        sources=[lg.source for lg in prepared],
        covariance=cov,
        _link_states={problem.links[i].name: problem.link_state(theta, i) for i in problem.touched},
        _theta=theta,
        calibrations=calibrations,
        lags=lag_values,
        cross_validation=cross,
        batch_length=batch,
        n_batches=n_batches,
        inconsistent_urdf_links=list(problem.inconsistent),
        inseparable=together,
        inseparable_share=dict(zip(names_p, (float(v) for v in data_null), strict=True)),
    )


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
    dof: float,
    data_null: Array,
) -> list[ParameterEstimate]:
    """The reported parameters; a parameter is identified when the data shrink its prior
    variance by :data:`IDENTIFIED_SHARE` and it is not part of a combination the data cannot
    separate (``data_null``: its share in the equilibrated null space, below 1 %)."""
    out = []
    links = problem.links
    by_name = {lk.name: (i, lk) for i, lk in enumerate(links)}
    for k, p in enumerate(problem.params):
        se = math.sqrt(cov[k, k]) if np.isfinite(cov[k, k]) else math.inf
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
                bool(share[k] >= IDENTIFIED_SHARE and data_null[k] < 0.01),
                dof,
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
    is the fitted :class:`~wholebody.identify.calibrate.Calibration` (of the first log; every log's
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
