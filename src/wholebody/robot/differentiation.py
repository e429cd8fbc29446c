"""Velocities and accelerations differentiated from a log's samples (central differences, on
the manifold for ``q``). Public through :mod:`wholebody.trajectory`."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import LogFormatError
from .batch import consecutive_differences
from .core import Robot

__all__ = ["estimate_accelerations", "estimate_velocities"]

Array = NDArray[np.float64]


# --- differentiation -------------------------------------------------------------------------


def estimate_accelerations(
    time: ArrayLike, v: ArrayLike, *, savgol: tuple[int, int] | None = None
) -> Array:
    """Accelerations from velocities: second-order central differences (``np.gradient``,
    non-uniform times allowed), or a Savitzky-Golay derivative with ``savgol=(window, order)``
    (uniform times).

    Pinocchio's ``a`` is the time derivative of ``v``'s coordinates (the base twist in the
    base frame included), so plain differences of ``v`` are exact to O(dt^2).
    """
    t = np.asarray(time, dtype=float)
    v = np.asarray(v, dtype=float)
    if len(t) < 3:
        raise LogFormatError(
            f"estimating accelerations needs at least 3 samples, the log has {len(t)}"
        )
    if savgol is None:
        return np.gradient(v, t, axis=0, edge_order=2)
    from scipy.signal import savgol_filter

    window, order = savgol
    dt = float(np.median(np.diff(t)))
    return savgol_filter(v, window, order, deriv=1, delta=dt, axis=0, mode="interp")


def estimate_velocities(robot: Robot, time: ArrayLike, q: ArrayLike) -> Array:
    """Velocities from configurations by central differences on the manifold.

    The tangent between consecutive samples is Pinocchio's ``difference`` (vectorised over
    the log, equal to ``pin.difference`` to 1e-12), so a quaternion whose sign flips between
    samples (the same rotation) does no harm.
    """
    t = np.asarray(time, dtype=float)
    Q = np.asarray(q, dtype=float)
    N = Q.shape[0]
    d = consecutive_differences(robot, Q).T  # (N - 1, nv)
    dt = np.diff(t)[:, None]
    fwd = d / dt
    v = np.empty((N, robot.nv))
    v[0], v[-1] = fwd[0], fwd[-1]
    # Central: average of the two one-sided differences, weighted for uneven steps.
    w = dt[1:] / (dt[:-1] + dt[1:])
    v[1:-1] = w * fwd[:-1] + (1 - w) * fwd[1:]
    return v
