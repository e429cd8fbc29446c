"""The fit: Gauss-Newton over the parameters with noise levels re-estimated, robust
standard errors and the identifiability report (see :mod:`wholebody.identify`)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.linalg
from numpy.typing import NDArray

from ..contacts import Contact
from ..errors import InvalidArgumentError, StateError
from ..robot.core import Robot
from ..trajectory import Trajectory
from .calibrate import SensorModel
from .links import robot_links
from .parameters import (
    DEFAULT_PRIOR_STD,
    IDENTIFIED_SHARE,
    ParameterEstimate,
    identifiability_report,
    observable_basis,
    parse_selection,
    pinv_sym,
)
from .problem import Problem, features, fitted_calibration, prepare_logs, row_groups
from .result import IdentificationResult

__all__ = ["fit_inertial_parameters", "fit_calibration"]

Array = NDArray[np.float64]

#: Samples per chunk of features.
_CHUNK = 2000
#: The features of all samples are kept between the passes up to this size [bytes].
_KEEP_BYTES = 256 * 2**20


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
) -> IdentificationResult:
    """Fit corrections to links' masses and CoMs (and sensor calibrations) to logs.

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
    parameters : {"mass_com", "mass", "com", "total_mass"} or None
        Per-link mass scales and CoM shifts, either alone, one mass scale for the whole
        robot, or none (a sensor-only fit).
    links : sequence of str, optional
        Restrict the per-link parameters to these links (default: every link with mass).
    groups : mapping of str to sequence of str, optional
        Named groups of links sharing one mass scale (e.g. ``{"arms": [...]}``).
    sensors : SensorModel, optional
        Sensor parameters to fit jointly (see :func:`fit_calibration`).
    use_torques : bool, optional
        Use the joint-torque rows; default: when every log has torques.
    prior_weight : float
        ``lambda`` >= 0: 1 is the stated prior (:data:`DEFAULT_PRIOR_STD`), 0 none (the
        unobservable directions then stay at the URDF: minimum-norm steps).
    prior_std : mapping, optional
        Overrides of :data:`DEFAULT_PRIOR_STD` by kind.
    urdf : path, optional
        The URDF the robot was built from, when ``robot.source`` is not it.

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
    mass_groups, com_links = parse_selection(all_links, parameters, links, groups)
    problem = Problem(
        robot, all_links, mass_groups, com_links, contacts, sensors, use_torques, stds
    )
    if problem.p == 0:
        raise InvalidArgumentError("nothing to fit: choose parameters or sensor parameters")
    prepared = prepare_logs(robot, logs, contacts, use_torques)
    n_total = sum(len(lg.q) for lg in prepared)
    if n_total == 0:
        raise StateError("no usable sample in the logs (all flagged as non-finite or invalid)")
    rows = robot.nv if use_torques else 6
    groups_rows = row_groups(rows)

    # Pass 1: triangular factors of each row group's stacked features (QR, chunk by chunk).
    C = problem.n_columns
    keep = n_total * rows * C * 8 <= _KEEP_BYTES
    kept: list[Array] = []
    factors = {g: np.zeros((0, C)) for g, _ in groups_rows}
    counts = dict.fromkeys(factors, 0)

    def chunks() -> Iterator[Array]:
        if kept:
            yield from kept
            return
        for lg in prepared:
            for start in range(0, len(lg.q), _CHUNK):
                yield features(problem, lg, start, min(start + _CHUNK, len(lg.q)), rows)

    for F in chunks():
        if keep:
            kept.append(F)
        for g, sl in groups_rows:
            block = F[:, sl].reshape(-1, C)
            counts[g] += len(block)
            factors[g] = scipy.linalg.qr(
                np.vstack([factors[g], block]), mode="r", overwrite_a=True, check_finite=False
            )[0][:C]  # (min(M, C), C)

    # Gauss-Newton in prior-scaled parameters, noise levels re-estimated.
    S = problem.sigma
    theta0 = np.zeros(problem.p)
    x0, _ = problem.x_and_derivative(theta0)
    rss0 = {g: float(np.sum((R @ x0) ** 2)) for g, R in factors.items()}
    scale = {"force": robot.weight, "moment": robot.weight, "torque": robot.weight}
    noise = {g: max(math.sqrt(rss0[g] / max(counts[g], 1)), 1e-12 * scale[g]) for g in factors}
    theta = theta0.copy()

    def cost(th: Array) -> float:
        xx, _ = problem.x_and_derivative(th)
        data = sum(float(np.sum((R @ xx) ** 2)) / noise[g] ** 2 for g, R in factors.items())
        return data + prior_weight * float(np.sum((th / S) ** 2))

    for _outer in range(6):
        current = cost(theta)
        x, D = problem.x_and_derivative(theta)
        # Steps stay in the directions the logs observe (each row group judged on its own
        # scale); the others keep their prior value.
        V_obs = observable_basis({g: (R @ D) * S for g, R in factors.items()})[0]
        for _ in range(max_iterations):
            x, D = problem.x_and_derivative(theta)
            A = [np.sqrt(prior_weight) * np.eye(problem.p)]
            r = [np.sqrt(prior_weight) * theta / S]
            blocks = {g: (R @ D) * S for g, R in factors.items()}
            for g, R in factors.items():
                A.append(blocks[g] / noise[g])
                r.append(R @ x / noise[g])
            step = -V_obs @ np.linalg.lstsq(np.vstack(A) @ V_obs, np.concatenate(r), rcond=None)[0]
            # Backtracking: the mass scale and the CoM enter nonlinearly.
            for _half in range(30):
                trial = theta + step * S
                new_cost = cost(trial)
                if new_cost <= current * (1 + 1e-12) + 1e-300:
                    break
                step = step / 2
            progress = current - new_cost
            theta, current = trial, new_cost
            if np.abs(step).max() < 1e-11 or progress <= 1e-15 * current:
                break
        x, _ = problem.x_and_derivative(theta)
        dof_share = max(1.0 - problem.p / max(sum(counts.values()), 1), 1e-3)
        new = {
            g: max(
                math.sqrt(float(np.sum((R @ x) ** 2)) / max(counts[g] * dof_share, 1.0)),
                1e-12 * scale[g],
            )
            for g, R in factors.items()
        }
        converged = all(abs(new[g] / noise[g] - 1) < 1e-3 for g in noise)
        noise = new
        if converged:
            break

    # Information, identifiability and robust covariance (pass 2 over the samples).
    x, D = problem.x_and_derivative(theta)
    Jg = {g: (R @ D) * S / noise[g] for g, R in factors.items()}
    H_data = sum(J.T @ J for J in Jg.values())
    H = H_data + prior_weight * np.eye(problem.p)
    meat = np.zeros((problem.p, problem.p))
    before: dict[str, list[Array]] = {g: [] for g in factors}
    after: dict[str, list[Array]] = {g: [] for g in factors}
    DS = D * S
    for F in chunks():
        rx, r0 = F @ x, F @ x0  # (n, rows)
        score = np.zeros((len(F), problem.p))
        for g, sl in groups_rows:
            JF = F[:, sl] @ DS  # (n, rows_g, p)
            score += np.einsum("nrp,nr->np", JF, rx[:, sl]) / noise[g] ** 2
            before[g].append(np.linalg.norm(r0[:, sl], axis=1))
            after[g].append(np.linalg.norm(rx[:, sl], axis=1))
        meat += score.T @ score
    H_inv = pinv_sym(H)
    cov_scaled = H_inv @ meat @ H_inv
    # Data share with the prior at unit weight: 1 - diag((H_data + 1)^-1).
    w_h, V_h = np.linalg.eigh(H_data)
    share = 1.0 - ((V_h**2) / (1.0 + np.clip(w_h, 0.0, None))).sum(axis=1)
    blocks = {g: (R @ D) * S for g, R in factors.items()}
    identifiability = identifiability_report(blocks, H_data, [p.name for p in problem.params])
    V_null = observable_basis(blocks)[1]
    unobserved = [int(i) for i in np.flatnonzero((V_null**2).sum(axis=1) > 0.5)]
    share[(V_null**2).sum(axis=1) > 0.5] = 0.0
    if prior_weight == 0:
        cov_scaled[unobserved, :] = np.inf
        cov_scaled[:, unobserved] = np.inf
    cov = cov_scaled * np.outer(S, S)

    # Physical values.
    estimates = []
    link_states = {all_links[i].name: problem.link_state(theta, i) for i in problem.touched}
    for k, p in enumerate(problem.params):
        se = math.sqrt(cov[k, k]) if np.isfinite(cov[k, k]) else math.inf
        if p.kind == "mass":
            ids = mass_groups[k][1]
            nominal = sum(all_links[i].mass for i in ids)
            value = nominal * math.exp(theta[k])
            se, prior = value * se, nominal * p.prior_std
        elif p.kind == "com":
            lk = next(lk for lk in all_links if lk.name == p.target)
            nominal = float(lk.com[p.axis])
            value, prior = nominal + theta[k], p.prior_std
        else:
            nominal, value, prior = 0.0, float(theta[k]), p.prior_std
        estimates.append(
            ParameterEstimate(
                p.name,
                p.kind,
                p.target,
                p.unit,
                nominal,
                float(value),
                float(se),
                float(prior),
                float(share[k]),
                bool(share[k] >= IDENTIFIED_SHARE),
            )
        )
    calibration = fitted_calibration(problem, theta)

    def rms(parts: dict[str, list[Array]]) -> dict[str, float]:
        return {
            g: float(np.sqrt(np.mean(np.concatenate(v) ** 2 / (sl.stop - sl.start))))
            for (g, v), (_, sl) in zip(parts.items(), groups_rows, strict=True)
        }

    return IdentificationResult(
        robot=robot,
        links=all_links,
        parameters=estimates,
        identifiability=identifiability,
        noise=noise,
        residual_rms_before=rms(before),
        residual_rms_after=rms(after),
        residual_before={g: np.concatenate(v) for g, v in before.items()},
        residual_after={g: np.concatenate(v) for g, v in after.items()},
        calibration=calibration,
        n_samples=n_total,
        use_torques=use_torques,
        sources=[lg.source for lg in prepared],
        covariance=cov,
        _link_states=link_states,
        _theta=theta,
    )


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
    parameters: Any = None,
    **options: Any,
) -> IdentificationResult:
    """Fit sensor calibrations, jointly with inertial corrections when ``parameters`` is given.

    A thin front of :func:`wholebody.identify.fit_inertial_parameters` with
    ``parameters=None`` (no inertial parameter) by default; ``options`` are passed on
    (``use_torques``, ``prior_weight``, ``prior_std``, ...). The result's ``calibration``
    is the fitted :class:`~wholebody.calibrate.Calibration`; its report says what the logs
    could identify. ``offsets``, ``gains``, ``rotations``, ``torque_offsets`` and ``axes`` are
    those of :class:`~wholebody.calibrate.SensorModel`.
    """
    sensors = SensorModel(
        offsets=offsets, gains=gains, rotations=rotations, torque_offsets=torque_offsets, axes=axes
    )
    return fit_inertial_parameters(
        robot, logs, contacts, parameters=parameters, sensors=sensors, **options
    )
