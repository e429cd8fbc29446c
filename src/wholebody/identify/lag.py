"""A log's wrench lag, estimated before the fit: the time ``delta`` by which the contact
wrenches trail the motion (``w_log(t) = w_true(t - delta)``).

On the floating-base rows, the residual of each candidate ``delta`` (the wrenches read at
``t + delta``, linearly interpolated) is taken after projecting out the fit's own unknowns,
linearised at the URDF (the chosen inertial parameters) and a constant 6D offset per contact,
so that neither a mass error nor a sensor offset can pose as a lag. The residual is minimised
over a grid of half-sample steps within ``+- max_lag``, then refined between grid points.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pinocchio as pin
import scipy.optimize
from numpy.typing import NDArray

from .problem import PreparedLog, Problem

__all__ = ["estimate_lag", "shift_wrenches"]

Array = NDArray[np.float64]


def _interpolate(t: Array, W: Array, at: Array) -> Array:
    """``W`` (n, ...) linearly interpolated at times ``at`` (inside ``t``'s span)."""
    flat = W.reshape(len(W), -1)
    out = np.empty((len(at), flat.shape[1]))
    for c in range(flat.shape[1]):
        out[:, c] = np.interp(at, t, flat[:, c])
    return out.reshape((len(at),) + W.shape[1:])


def estimate_lag(problem: Problem, log: PreparedLog, max_lag: float) -> float:
    """The lag [s] of ``log``'s contact wrenches behind its motion, within ``+- max_lag``
    (0 when the log is too short or has no time stamps)."""
    t = log.t
    if t is None or len(t) < 20:
        return 0.0
    dt = float(np.median(np.diff(t)))
    inside = np.flatnonzero((t >= t[0] + max_lag) & (t <= t[-1] - max_lag))
    if len(inside) < 10 or dt <= 0:
        return 0.0
    robot = problem.robot
    model, data = robot.model, robot.model.createData()
    contacts = problem.contacts
    fids = [robot.frame_id(c.frame) for c in contacts]
    ext = [robot.frame_id(f) for f in log.ext_frames]
    x0, D0 = problem.x_and_derivative(np.zeros(problem.p))
    Dp = D0[: problem.n_pi, : problem.n_inertial]
    n, k = len(inside), len(contacts)
    y = np.empty((n, 6))
    G = np.empty((n, k, 6, 6))  # base rows of J^T per contact
    N = np.empty((n, 6, problem.n_inertial + 6 * k))
    for s, i in enumerate(inside):
        q = log.q[i]
        Y = pin.computeJointTorqueRegressor(model, data, q, log.v[i], log.a[i])[:6]
        pin.computeJointJacobians(model, data, q)
        Yu = Y[:, problem.used]
        y[s] = Yu @ x0[: problem.n_pi] + Y[:, problem.unused] @ problem.pi_unused
        N[s, :, : problem.n_inertial] = Yu @ Dp
        for c, fid in enumerate(fids):
            G[s, c] = pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED)[:, :6].T
            R = pin.updateFramePlacement(model, data, fid).rotation
            N[s, :, problem.n_inertial + 6 * c : problem.n_inertial + 6 * c + 3] = (
                G[s, c][:, :3] @ R
            )
            N[s, :, problem.n_inertial + 6 * c + 3 : problem.n_inertial + 6 * c + 6] = (
                G[s, c][:, 3:] @ R
            )
        if log.E is not None:
            for e, fid in enumerate(ext):
                Je = pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED)[:, :6]
                y[s] -= Je.T @ log.E[i, e]
    W = log.W[:, log.contact_order]

    def residual(delta: float) -> Array:
        Wd = _interpolate(t, W, t[inside] + delta)
        return y - np.einsum("nkrs,nks->nr", G, Wd)

    # Rows weighted by each group's scale (force, moment), then the unknowns projected out.
    Nf = N.reshape(-1, N.shape[2])
    U = _basis(Nf)
    r0 = residual(0.0).reshape(-1)
    r0 = (r0 - U @ (U.T @ r0)).reshape(n, 6)
    weight = np.ones(6)
    for sl in (slice(0, 3), slice(3, 6)):
        rms = float(np.sqrt(np.mean(r0[:, sl] ** 2)))
        weight[sl] = 1.0 / max(rms, 1e-12)
    Nw = (N * weight[None, :, None]).reshape(-1, N.shape[2])
    U = _basis(Nw)

    def cost(delta: float) -> float:
        r = (residual(delta) * weight).reshape(-1)
        return float(r @ r - np.sum((U.T @ r) ** 2))

    grid = np.arange(-max_lag, max_lag + 1e-12, dt / 2)
    values = np.array([cost(float(d)) for d in grid])
    j = int(np.argmin(values))
    lo, hi = grid[max(j - 1, 0)], grid[min(j + 1, len(grid) - 1)]
    if hi <= lo:
        return float(grid[j])
    res = scipy.optimize.minimize_scalar(
        cost, bounds=(float(lo), float(hi)), method="bounded", options={"xatol": dt * 1e-3}
    )
    return float(res.x) if res.fun <= values[j] else float(grid[j])


def _basis(N: Array) -> Array:
    """Orthonormal basis of the column space of ``N``."""
    if N.shape[1] == 0:
        return np.zeros((N.shape[0], 0))
    U, s, _ = np.linalg.svd(N, full_matrices=False)
    keep = s > 1e-10 * max(float(s[0]) if len(s) else 0.0, 1e-300)
    return U[:, keep]


def shift_wrenches(log: PreparedLog, lag: float) -> PreparedLog:
    """``log`` with its contact wrenches read ``lag`` later (``w(t + lag)``, interpolated);
    samples whose shifted time falls outside the log are left out."""
    if lag == 0.0 or log.t is None:
        return log
    t = log.t
    ok = (t + lag >= t[0]) & (t + lag <= t[-1])
    W = _interpolate(t, log.W, t[ok] + lag)
    return dataclasses.replace(
        log,
        q=log.q[ok],
        v=log.v[ok],
        a=log.a[ok],
        tau=None if log.tau is None else log.tau[ok],
        W=W,
        E=None if log.E is None else log.E[ok],
        t=t[ok],
        n_bad=log.n_bad + int((~ok).sum()),
    )
