"""The noise of what was logged, carried into the rows of the fit (generalised least squares).

A sample's residual ``r = Y pi - S^T tau_log - sum_c J_c^T w_c,log`` (rows: base force, base
moment about the base origin, joint torques) carries the noise of the logged quantities: each
contact's wrench noise through ``J_c^T`` and the torque noise on the torque rows. Its rows are
therefore correlated (a foot's force noise shows in the base force, in the base moment through
the foot's lever arm and in every torque of its leg) and differ in scale by those lever arms.
With an equation error per row group (model error, noise of ``q``, ``v``, ``a``):

.. math::

    \\operatorname{Cov}(r_s) = \\sum_c J_c^T \\operatorname{diag}(\\sigma_{f,c}^2 1_3,
    \\sigma_{m,c}^2 1_3) J_c + \\operatorname{diag}(\\sigma_F^2 1_3, \\sigma_M^2 1_3,
    \\sigma_\\tau^2 1)

(world-aligned ``J_c`` at the contact frames' origins; each wrench's noise isotropic in its force
and in its moment part). The component variances are estimated from the residuals of a
preliminary fit by the method of moments on the samples' outer products ``r r^T`` (a
non-negative least-squares fit of ``sum_k v_k B_k(s)`` to them), and each sample's rows are
whitened by the Cholesky factor of its covariance, so that every row weighs by what its noise
is: the rows a sensor offset shows in with little noise (an ankle's torque) are no longer
drowned by the same group's noisier rows (a hip's). The same preliminary fit, to pairs of
consecutive samples, gives the whitened residuals' lag-1 autocorrelation, which the fit removes
in time (:data:`WHITEN_IN_TIME`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import nnls

from .features import row_groups

__all__ = [
    "NoiseModel",
    "NoiseStatistics",
    "Whitening",
    "RELATIVE_FLOOR",
    "ROUND_OFF",
    "WHITEN_IN_TIME",
    "MAX_LAG_ONE",
]

Array = NDArray[np.float64]
#: Each row group's equation-error variance is at least this share of the group's residual
#: variance per row (and the absolute floor): the whitening amplifies no row combination by
#: more than ``RELATIVE_FLOOR ** -0.5`` against its group's scale.
RELATIVE_FLOOR = 1e-6
#: Residuals within this share of the data (RMS) are round-off, not noise: a log the model
#: balances exactly (a simulation's inverse dynamics) gets every row weighed alike.
ROUND_OFF = 1e-6
#: Whiten the residuals in time too (their lag-1 autoregression); False: samples are taken as
#: independent (for comparison).
WHITEN_IN_TIME = True
#: Largest lag-1 coefficient removed in time (Andrews, Monahan 1992 cap theirs at 0.97): near 1
#: the differenced rows would keep only the data's fastest changes.
MAX_LAG_ONE = 0.97


@dataclass(frozen=True)
class NoiseModel:
    """Noise variances of the logged quantities and of each row group's equation error.

    Attributes
    ----------
    contacts : tuple of str
        The contacts, in the problem's order.
    force, moment : ndarray, shape (k,)
        Each contact's wrench-noise standard deviation, force [N] and moment [N m] (per axis).
    rows : dict of str to float
        Each row group's equation-error standard deviation (``force`` [N], ``moment`` [N m],
        ``torque`` [N m]; the joint torques' own noise is the ``torque`` group's).
    """

    contacts: tuple[str, ...]
    force: Array
    moment: Array
    rows: dict[str, float]

    def covariance(self, JT: Array, n_rows: int) -> Array:
        """Each sample's residual covariance (n, rows, rows) from the contact Jacobians'
        transposes ``JT`` (n, k, rows, 6)."""
        k = JT.shape[1]
        scale = np.empty((k, 6))
        scale[:, :3] = (self.force**2)[:, None]
        scale[:, 3:] = (self.moment**2)[:, None]
        P = JT.transpose(0, 2, 1, 3).reshape(len(JT), n_rows, 6 * k)  # (n, rows, 6k)
        S = (P * scale.reshape(-1)) @ np.swapaxes(P, 1, 2)
        diagonal = np.einsum("nii->ni", S)
        for g, sl in row_groups(n_rows):
            diagonal[:, sl] += self.rows[g] ** 2
        return S

    def whitening(self, JT: Array, n_rows: int) -> Whitening:
        """The whitening of samples with contact Jacobians' transposes ``JT`` (n, k, rows,
        6): the rows no contact reaches have a diagonal covariance (their equation error) and
        are only scaled; the others get the Cholesky factor of their block."""
        S = self.covariance(JT, n_rows)
        coupled = np.flatnonzero(np.any(JT != 0, axis=(0, 1, 3)))
        alone = np.setdiff1d(np.arange(n_rows), coupled)
        block = S[:, coupled][:, :, coupled]
        # The inverse of the Cholesky factor once per sample: each whitening is applied to the
        # features and to several residuals (a product then, not a solve each time).
        return Whitening(
            coupled,
            alone,
            np.asarray(np.linalg.inv(np.linalg.cholesky(block)), dtype=np.float64),
            1.0 / np.sqrt(S[:, alone, alone]),
        )

    @classmethod
    def uniform(cls, contacts: Sequence[str], groups: Sequence[str], level: float) -> NoiseModel:
        """Every row the same equation error ``level``, no sensor noise."""
        k = len(contacts)
        return cls(tuple(contacts), np.zeros(k), np.zeros(k), dict.fromkeys(groups, level))

    def as_dict(self) -> dict[str, float]:
        """Standard deviations by name: ``CONTACT force`` [N], ``CONTACT moment`` [N m],
        ``force rows`` ... [N, N m]."""
        out = {}
        for c, f, m in zip(self.contacts, self.force, self.moment, strict=True):
            out[f"{c} force"] = float(f)
            out[f"{c} moment"] = float(m)
        for g, v in self.rows.items():
            out[f"{g} rows"] = float(v)
        return out


def _as_slice(index: NDArray[np.intp]) -> slice | NDArray[np.intp]:
    """A run of consecutive indices as a slice (a view, not a copy)."""
    if len(index) and int(index[-1]) - int(index[0]) == len(index) - 1:
        return slice(int(index[0]), int(index[-1]) + 1)
    return index


@dataclass(frozen=True)
class Whitening:
    """``W_s`` with ``W_s^T W_s = Cov(r_s)^-1`` for each of n samples: on the ``coupled`` rows
    ``inverse`` (n, m, m), the inverse of the lower Cholesky factor of their covariance block,
    on the other rows (``alone``, uncorrelated with anything) the scale ``scale`` (n, rows - m).
    """

    coupled: NDArray[np.intp]
    alone: NDArray[np.intp]
    inverse: Array
    scale: Array

    def __len__(self) -> int:
        return len(self.inverse)

    def take(self, index: slice) -> Whitening:
        """The whitening of the samples ``index``."""
        return Whitening(self.coupled, self.alone, self.inverse[index], self.scale[index])

    def apply(self, F: Array, out: Array | None = None) -> Array:
        """``W_s F_s`` for ``F`` (n, rows, ...), written into ``out`` (the shape of ``F``, not
        ``F``) when given."""
        if out is None:
            out = np.empty_like(F)
        c, a = _as_slice(self.coupled), _as_slice(self.alone)
        if len(self.coupled):
            block = F[:, c]
            if F.ndim == 3 and isinstance(c, slice):
                np.matmul(self.inverse, block, out=out[:, c])  # no temporary
            else:
                flat = block.reshape(len(F), len(self.coupled), -1)
                out[:, c] = np.matmul(self.inverse, flat).reshape(block.shape)
        if len(self.alone):
            scale = self.scale.reshape(self.scale.shape + (1,) * (F.ndim - 2))
            if isinstance(a, slice):
                np.multiply(F[:, a], scale, out=out[:, a])
            else:  # an index array selects a copy: assign
                out[:, a] = F[:, a] * scale
        return out

    def apply_transpose(self, v: Array) -> Array:
        """``W_s^T v_s`` for ``v`` (n, rows)."""
        out = np.empty_like(v)
        c, a = self.coupled, self.alone
        if len(c):
            out[:, c] = np.einsum("nji,nj->ni", self.inverse, v[:, c])
        if len(a):
            out[:, a] = v[:, a] * self.scale
        return out

    def bound(self, v: Array, transpose: bool = False) -> Array:
        """``|W_s| v_s`` (n, rows) for ``v`` (n, rows) >= 0, ``|W|`` the entries' magnitudes:
        a bound of ``|W_s e|`` entry by entry for any ``|e| <= v``; ``|W_s|^T v_s`` with
        ``transpose``."""
        out = np.empty_like(v)
        c, a = self.coupled, self.alone
        if len(c):
            inv = np.abs(self.inverse)
            out[:, c] = np.einsum("nji,nj->ni" if transpose else "nij,nj->ni", inv, v[:, c])
        if len(a):
            out[:, a] = v[:, a] * self.scale
        return out


class NoiseStatistics:
    """Sufficient statistics of the residual outer products for the moment estimator, summed
    over samples: for any parameters ``x``, ``sum_s r_s^T B_k(s) r_s = x^T G_k x`` with
    ``r_s = F_s x``, and ``T_jk = sum_s tr(B_j(s) B_k(s))``.

    Components ``k``: each contact's force and moment noise (``B = J_c^T E J_c`` with ``E``
    selecting the force or moment part), then each row group's equation error (``B`` the group's
    row selector).
    """

    def __init__(self, contacts: Sequence[str], n_rows: int, n_columns: int):
        self.contacts = tuple(contacts)
        self.n_rows = n_rows
        self.groups = row_groups(n_rows)
        k = 2 * len(self.contacts) + len(self.groups)
        self.G = np.zeros((k, n_columns, n_columns))
        self.T = np.zeros((k, k))
        self.counts = dict.fromkeys((g for g, _ in self.groups), 0)
        # Consecutive pairs (t, t+1): each row group's cross and first-sample Gram matrices.
        self.cross = np.zeros((len(self.groups), n_columns, n_columns))
        self.first = np.zeros((len(self.groups), n_columns, n_columns))

    def add(self, F: Array, JT: Array) -> None:
        """Add samples: features ``F`` (n, rows, C) and contact Jacobians' transposes ``JT``
        (n, k, rows, 6), in consecutive pairs (samples ``2i`` and ``2i + 1`` are ``t`` and
        ``t + 1`` of a log)."""
        n, _, C = F.shape
        for g, (_, sl) in enumerate(self.groups):
            a = F[0::2, sl].reshape(-1, C)
            b = F[1::2, sl].reshape(-1, C)
            self.cross[g] += a.T @ b
            self.first[g] += a.T @ a
        k = len(self.contacts)
        parts = []  # (n, rows, 3) projections of each contact component
        for c in range(k):
            parts.append(JT[:, c, :, :3])
            parts.append(JT[:, c, :, 3:])
        for j, P in enumerate(parts):
            PF = np.einsum("nrj,nrc->njc", P, F).reshape(-1, C)
            self.G[j] += PF.T @ PF
        first = 2 * k
        for g, (name, sl) in enumerate(self.groups):
            block = F[:, sl].reshape(-1, C)
            self.G[first + g] += block.T @ block
            self.counts[name] += n * (sl.stop - sl.start)
        # tr(B_i B_j) for P-components: |P_i^T P_j|_F^2; with a row group: |P_i[group]|_F^2.
        for i, Pi in enumerate(parts):
            for j in range(i, len(parts)):
                value = float(np.sum(np.einsum("nri,nrj->nij", Pi, parts[j]) ** 2))
                self.T[i, j] += value
                self.T[j, i] += value if i != j else 0.0
            for g, (_, sl) in enumerate(self.groups):
                value = float(np.sum(Pi[:, sl] ** 2))
                self.T[i, first + g] += value
                self.T[first + g, i] += value
        for g, (_, sl) in enumerate(self.groups):
            self.T[first + g, first + g] += n * (sl.stop - sl.start)

    def model(self, x: Array, dof_share: float, floor: float) -> NoiseModel:
        """The noise model that fits the residuals ``F x`` of the added samples.

        ``dof_share``: the share of residual degrees of freedom left by the fit (the variances
        are divided by it); ``floor``: the smallest equation-error standard deviation [N]
        (moment and torque rows: [N m], the same number).
        """
        b = np.maximum(np.einsum("kij,i,j->k", self.G, x, x), 0.0) / max(dof_share, 1e-3)
        w, V = np.linalg.eigh(self.T)
        keep = w > 1e-12 * max(float(w.max(initial=0.0)), 1e-300)
        A = np.sqrt(w[keep])[:, None] * V[:, keep].T
        y = (V[:, keep].T @ b) / np.sqrt(w[keep])
        v = nnls(A, y)[0] if A.size else np.zeros(len(b))
        k = len(self.contacts)
        force = np.sqrt(v[0 : 2 * k : 2])
        moment = np.sqrt(v[1 : 2 * k : 2])
        rows = {}
        first = 2 * k
        for g, (name, _) in enumerate(self.groups):
            per_row = max(float(self.G[first + g].dot(x).dot(x)), 0.0) / max(self.counts[name], 1)
            rows[name] = math.sqrt(max(v[first + g], RELATIVE_FLOOR * per_row, floor**2))
        return NoiseModel(self.contacts, force, moment, rows)

    def round_off(self, x: Array) -> bool:
        """Whether the residuals ``F x`` are within :data:`ROUND_OFF` of the data in every row
        group (RMS against the RMS of the constant column, what the model must explain)."""
        first = 2 * len(self.contacts)
        for g in range(len(self.groups)):
            G = self.G[first + g]
            if max(float(x @ G @ x), 0.0) > ROUND_OFF**2 * max(float(G[-1, -1]), 1e-300):
                return False
        return True

    def lag_one(self, x: Array, levels: dict[str, float]) -> float:
        """The residuals' lag-1 autocorrelation at ``x``, pooled over the row groups each
        weighted by its noise level ``levels``, within ``+-`` :data:`MAX_LAG_ONE` (0 without
        :data:`WHITEN_IN_TIME`)."""
        num = den = 0.0
        for g, (name, _) in enumerate(self.groups):
            w = 1.0 / levels[name] ** 2
            num += w * float(x @ self.cross[g] @ x)
            den += w * float(x @ self.first[g] @ x)
        if not WHITEN_IN_TIME or den <= 0:
            return 0.0
        return float(np.clip(num / den, -MAX_LAG_ONE, MAX_LAG_ONE))
