"""The fit's solver: Gauss-Newton on the square roots of the features' Gram matrices, in
prior-whitened coordinates, and the cross-validation on held-out time windows."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .parameters import observable_basis
from .problem import Problem
from .result import CrossValidation

__all__ = ["Solver", "square_root", "combine", "cross_validate"]

Array = NDArray[np.float64]


def square_root(G: Array) -> Array:
    """``R`` (C, C) with ``R^T R = G`` for a Gram matrix ``G`` (columns equilibrated first, so
    that columns of very different scales keep their information)."""
    d = np.sqrt(np.clip(np.diag(G), 0.0, None))
    d[d == 0] = 1.0
    w, V = np.linalg.eigh(G / np.outer(d, d))
    return (np.sqrt(np.clip(w, 0.0, None))[:, None] * V.T) * d[None, :]


class Solver:
    """Gauss-Newton on triangular factors, in prior-whitened coordinates ``u = L^-1 theta``."""

    def __init__(self, problem: Problem, prior_weight: float, max_iterations: int):
        self.problem, self.w, self.max_iterations = problem, prior_weight, max_iterations
        self.L, self.Li = problem.prior_factor, problem.prior_factor_inv

    def cost(self, factors: dict[str, Array], noise: dict[str, float], th: Array) -> float:
        xx = self.problem.x_only(th)
        data = sum(float(np.sum((R @ xx) ** 2)) / noise[g] ** 2 for g, R in factors.items())
        return data + self.w * float(np.sum((self.Li @ th) ** 2))

    def solve(
        self,
        factors: dict[str, Array],
        noise: dict[str, float],
        theta: Array,
        free: NDArray[np.bool_] | None = None,
    ) -> Array:
        p = self.problem.p
        free = np.ones(p, dtype=bool) if free is None else free
        if not free.any():
            return theta
        x, D = self.problem.x_and_derivative(theta)
        blocks = {g: ((R @ D) @ self.L)[:, free] for g, R in factors.items()}
        V_obs = np.zeros((p, 0))
        basis = observable_basis(blocks)[0]
        V_obs = np.zeros((p, basis.shape[1]))
        V_obs[free] = basis
        current = self.cost(factors, noise, theta)
        for _ in range(self.max_iterations):
            x, D = self.problem.x_and_derivative(theta)
            DL = D @ self.L
            A = [math.sqrt(self.w) * np.eye(p)]
            r = [math.sqrt(self.w) * (self.Li @ theta)]
            for g, R in factors.items():
                A.append((R @ DL) / noise[g])
                r.append(R @ x / noise[g])
            step = -V_obs @ np.linalg.lstsq(np.vstack(A) @ V_obs, np.concatenate(r), rcond=None)[0]
            trial, new_cost = theta, current
            accepted = False
            for _half in range(40):  # backtracking: the mass and the inertia enter nonlinearly
                trial = theta + self.L @ step
                new_cost = self.cost(factors, noise, trial)
                if new_cost <= current * (1 + 1e-12) + 1e-300:
                    accepted = True
                    break
                step = step / 2
            if not accepted:  # no descent left (rounding): converged
                break
            progress = current - new_cost
            theta, current = trial, new_cost
            if np.abs(step).max() < 1e-9 or progress <= 1e-12 * current:
                break
        return theta


def combine(grams: list[dict[str, Array]], which: Any, C: int) -> dict[str, Array]:
    """The square roots of the Gram matrices summed over the folds ``which``."""
    chosen = list(which)
    return {g: square_root(sum(grams[f][g] for f in chosen)) for g in grams[0]}


def cross_validate(
    solver: Solver,
    problem: Problem,
    grams: list[dict[str, Array]],
    fold_factors: list[dict[str, Array]],
    fold_counts: list[dict[str, int]],
    noise: dict[str, float],
    theta: Array,
    n_folds: int,
    C: int,
) -> CrossValidation | None:
    """Fit on all windows but one, score the held-out one; the nominal model (URDF inertias,
    sensor parameters fitted on the same windows) scored alike."""
    if n_folds < 2:
        return None
    sensor = np.zeros(problem.p, dtype=bool)
    sensor[problem.n_inertial :] = True
    rss_fit = dict.fromkeys(noise, 0.0)
    rss_nom = dict.fromkeys(noise, 0.0)
    fold_fit, fold_nom = [], []
    resolution = 0.0
    for f in range(n_folds):
        train = combine(grams, [k for k in range(n_folds) if k != f], C)
        th = solver.solve(train, noise, theta.copy())
        th_nom = np.zeros(problem.p)
        if sensor.any():
            th_nom[sensor] = theta[sensor]
            th_nom = solver.solve(train, noise, th_nom, free=sensor)
        xf, _ = problem.x_and_derivative(th)
        xn, _ = problem.x_and_derivative(th_nom)
        cost_fit = cost_nom = 0.0
        for g, R in fold_factors[f].items():
            fit_g, nom_g = float(np.sum((R @ xf) ** 2)), float(np.sum((R @ xn) ** 2))
            rss_fit[g] += fit_g
            rss_nom[g] += nom_g
            cost_fit += fit_g / noise[g] ** 2
            cost_nom += nom_g / noise[g] ** 2
            # A sum of squares through a Gram factor is exact only to about eps times the
            # data's own sum of squares (||R||_F^2 ||x||^2): below that a held-out
            # difference is arithmetic, not evidence.
            size = float(np.sum(R * R)) * max(float(xf @ xf), float(xn @ xn))
            resolution += 64.0 * float(np.finfo(float).eps) * size / noise[g] ** 2
        fold_fit.append(cost_fit)
        fold_nom.append(cost_nom)
    counts = {g: sum(fc[g] for fc in fold_counts) for g in noise}
    return CrossValidation(
        n_folds=n_folds,
        rms_nominal={g: math.sqrt(rss_nom[g] / max(counts[g], 1)) for g in noise},
        rms_fitted={g: math.sqrt(rss_fit[g] / max(counts[g], 1)) for g in noise},
        cost_nominal=sum(rss_nom[g] / noise[g] ** 2 for g in noise),
        cost_fitted=sum(rss_fit[g] / noise[g] ** 2 for g in noise),
        fold_costs_nominal=fold_nom,
        fold_costs_fitted=fold_fit,
        cost_resolution=resolution,
    )
