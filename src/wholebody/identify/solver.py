"""The fit's solver: Gauss-Newton on the square roots of the features' Gram matrices, in
prior-whitened coordinates, and the fits of the cross-validation (all time windows but one)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from .parameters import observable_basis
from .problem import Problem

__all__ = ["Solver", "square_root", "combine", "fold_parameters"]

Array = NDArray[np.float64]
#: Gauss-Newton iterations at most.
MAX_ITERATIONS = 50


def square_root(G: Array) -> Array:
    """``R`` (C, C) with ``R^T R = G`` for a Gram matrix ``G`` (columns equilibrated first, so
    that columns of very different scales keep their information)."""
    d = np.sqrt(np.clip(np.diag(G), 0.0, None))
    d[d == 0] = 1.0
    w, V = np.linalg.eigh(G / np.outer(d, d))
    return (np.sqrt(np.clip(w, 0.0, None))[:, None] * V.T) * d[None, :]


class Solver:
    """Gauss-Newton on triangular factors, in prior-whitened coordinates ``u = L^-1 theta``.

    ``held`` (k, p): directions of ``u`` the fit never moves (rows; the URDF's value stays),
    e.g. what a sensor offset imitates (:mod:`~wholebody.identify.stance`).
    """

    def __init__(self, problem: Problem, prior_weight: float, held: Array | None = None):
        self.problem, self.w = problem, prior_weight
        self.L, self.Li = problem.prior_factor, problem.prior_factor_inv
        self.held = np.zeros((0, problem.p)) if held is None else held

    def basis(self, free: NDArray[np.bool_] | None = None) -> Array:
        """Orthonormal basis (p, r) of the directions of ``u`` the fit may move: not held,
        and within the ``free`` parameters."""
        p = self.problem.p
        free = np.ones(p, dtype=bool) if free is None else free
        # Parameters no held direction involves keep their own axis (so a sensor offset of
        # one log stays one coordinate); the others' allowed directions are the null space.
        involved = np.abs(self.held).max(axis=0, initial=0.0) > 0
        mixed = np.flatnonzero(involved & free)
        plain = np.flatnonzero(~involved & free)
        if len(mixed):
            _, s, Vt = np.linalg.svd(self.held[:, mixed], full_matrices=True)
            rank = int(np.sum(s > 1e-10 * max(float(s[0]) if len(s) else 0.0, 1e-300)))
            inner = Vt[rank:].T
        else:
            inner = np.zeros((0, 0))
        out = np.zeros((p, len(plain) + inner.shape[1]))
        out[plain, np.arange(len(plain))] = 1.0
        out[np.ix_(mixed, np.arange(len(plain), out.shape[1]))] = inner
        return out

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
        B = self.basis(free)
        if B.shape[1] == 0:
            return theta
        x, D = self.problem.x_and_derivative(theta)
        blocks = {g: ((R @ D) @ self.L) @ B for g, R in factors.items()}
        observed, unobserved, _ = observable_basis(blocks)
        V_obs = B @ observed
        if unobserved.shape[1]:
            # What the logs do not observe (here) keeps the URDF's value: a start from an
            # earlier fit, whose observed directions differed a little, is brought back there.
            U = B @ unobserved
            theta = theta - self.L @ (U @ (U.T @ (self.Li @ theta)))
        if len(factors) > 1:
            # One square root of the weighted sum for the iterations: the same cost, with a
            # third of the rows per least-squares step (the noise model's row groups).
            total = sum((R.T @ R) / noise[g] ** 2 for g, R in factors.items())
            factors, noise = {"all": square_root(total)}, {"all": 1.0}
        current = self.cost(factors, noise, theta)
        for _ in range(MAX_ITERATIONS):
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


def combine(grams: list[dict[str, Array]], which: Iterable[int]) -> dict[str, Array]:
    """The square roots of the Gram matrices summed over the folds ``which``."""
    chosen = list(which)
    return {
        g: square_root(sum((grams[f][g] for f in chosen), np.zeros_like(grams[0][g])))
        for g in grams[0]
    }


def fold_parameters(
    solver: Solver, grams: list[dict[str, Array]], noise: dict[str, float]
) -> list[tuple[Array, Array]]:
    """For each time window held out in turn: ``x`` of the fit to the other windows and of
    the nominal model (URDF inertias, sensor parameters fitted on the same windows); the
    held-out windows are scored on their own residuals
    (:class:`~wholebody.identify.result.CrossValidation`)."""
    problem, n_folds = solver.problem, len(grams)
    if n_folds < 2:
        return []
    sensor = np.zeros(problem.p, dtype=bool)
    sensor[problem.n_inertial :] = True
    out = []
    for f in range(n_folds):
        train = combine(grams, [k for k in range(n_folds) if k != f])
        # From the URDF, not from the fit to all windows: the steps stay in the directions the
        # training windows observe, so a start there would keep what only the held-out window
        # told about the others.
        th = solver.solve(train, noise, np.zeros(problem.p))
        th_nom = np.zeros(problem.p)
        if sensor.any():
            th_nom = solver.solve(train, noise, th_nom, free=sensor)
        out.append((problem.x_only(th), problem.x_only(th_nom)))
    return out
