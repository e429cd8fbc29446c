"""The base of the acceleration tasks: ``weight * || S (J a + dJ/dt v - a_des) ||^2``."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import InvalidArgumentError
from .._tick import TickKinematics

Array = NDArray[np.float64]


def as_gains(value: ArrayLike, size: int, what: str) -> Array:
    """A scalar or per-axis gain vector (size,), finite and >= 0."""
    g = np.asarray(value, dtype=float)
    if g.ndim == 0:
        g = np.full(size, float(g))
    if g.shape != (size,) or not np.all(np.isfinite(g)) or np.any(g < 0):
        raise InvalidArgumentError(
            f"{what} must be a finite non-negative scalar or a vector of {size}, got {value!r}"
        )
    return g


def as_vector(value: ArrayLike, size: int, what: str) -> Array:
    """A finite vector (size,)."""
    x = np.asarray(value, dtype=float)
    if x.shape != (size,) or not np.all(np.isfinite(x)):
        raise InvalidArgumentError(f"{what} must be a finite vector of {size}, got {value!r}")
    return x.copy()


def as_weight(value: float, what: str = "weight") -> float:
    w = float(value)
    if not (np.isfinite(w) and w >= 0):
        raise InvalidArgumentError(f"{what} must be finite and >= 0, got {value!r}")
    return w


class AccelerationTask:
    """A task on the generalized accelerations: ``weight * || S (J a + drift - desired) ||^2``.

    Subclasses fill, in :meth:`update` and from the tick's one pass only, the task Jacobian
    ``jacobian`` (m, nv), its ``drift`` ``dJ/dt v`` (m,) and the ``desired`` task-space
    acceleration (m,) of their PD law; ``mask`` (m,) selects the rows that count.

    Attributes
    ----------
    name : str
    weight : float
        Non-negative weight of the task in the objective.
    mask : ndarray of bool, shape (m,)
        Rows (axes) that count.
    jacobian, drift, desired, error : ndarrays
        Of the last :meth:`update`; ``error`` is the task's position-level error (the PD's
        proportional term acts on it).
    """

    def __init__(self, name: str, size: int, *, weight: float, mask: ArrayLike | None = None):
        self.name = str(name)
        self.weight = as_weight(weight, f"task {name!r}: weight")
        self.size = int(size)
        self.mask = np.ones(size, dtype=bool)
        if mask is not None:
            self.set_mask(mask)
        self.desired = np.zeros(size)
        self.error = np.zeros(size)
        self.drift = np.zeros(size)
        self.jacobian: Array = np.zeros((size, 0))

    def set_mask(self, mask: ArrayLike) -> None:
        """Which of the task's ``size`` axes count (booleans or 0/1)."""
        m = np.asarray(mask)
        if m.shape != (self.size,):
            raise InvalidArgumentError(
                f"task {self.name!r}: mask must have {self.size} entries, got shape {m.shape}"
            )
        self.mask = m.astype(bool)

    def update(self, kin: TickKinematics) -> None:  # pragma: no cover - abstract
        """Refresh ``jacobian``, ``drift``, ``error``, ``desired`` from the tick's pass."""
        raise NotImplementedError

    def add_cost(self, P: Array, q: Array) -> None:
        """Add ``weight * ||S (J a + drift - desired)||^2`` to ``x^T P x / 2 + q^T x``
        (``P``, ``q`` over ``a``: their first nv rows and columns; factor 2 absorbed as in
        :class:`~wholebody.control.InverseDynamicsQP`)."""
        if self.weight == 0.0:
            return
        r = self.desired - self.drift
        J = self.jacobian
        if not self.mask.all():
            J, r = J[self.mask], r[self.mask]
        nv = J.shape[1]
        P[:nv, :nv] += self.weight * (J.T @ J)
        q[:nv] -= self.weight * (J.T @ r)

    def residual(self, a: ArrayLike) -> Array:
        """``S (J a + drift - desired)`` for accelerations ``a`` (nv,), the masked rows."""
        return (self.jacobian @ np.asarray(a, dtype=float) + self.drift - self.desired)[self.mask]
