"""Reference trajectories for the controller's tasks, in the tasks' units and frames.

* :class:`MinimumJerk`: the minimum-jerk profile ``s(tau) = 10 tau^3 - 15 tau^4 + 6 tau^5``
  (Flash and Hogan 1985; seed 001's reaching movement) between two points of R^n;
* :class:`MinimumJerkSE3`: the same profile along the geodesic between two placements,
  ``p(t) = p0 + s (p1 - p0)``, ``R(t) = R0 exp(s log(R0^T R1))``;
* :class:`SplineTrajectory`: a cubic spline through waypoints of R^n (CoM, joints);
* :class:`SE3Spline`: a spline through placements: a cubic spline of the positions and
  SciPy's cubic rotation spline on SO(3) (continuous angular velocity and acceleration).

Each gives ``(position, velocity, acceleration)`` at a time; SE3 ones give a
:class:`pinocchio.SE3` and twists ``(linear, angular)`` in world-aligned axes at the frame
origin, as :meth:`wholebody.control.tasks.FrameTask.set_reference` takes them. Outside their
time span they hold the end values with zero velocity and acceleration.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray
from scipy.interpolate import CubicSpline
from scipy.spatial.transform import Rotation, RotationSpline

from ..errors import InvalidArgumentError

__all__ = ["MinimumJerk", "MinimumJerkSE3", "SplineTrajectory", "SE3Spline"]

Array = NDArray[np.float64]


def _profile(t: float, t0: float, duration: float) -> tuple[float, float, float]:
    """``(s, ds/dt, d2s/dt2)`` of the minimum-jerk profile, held outside ``[t0, t0 + T]``."""
    tau = (t - t0) / duration
    if tau <= 0.0:
        return 0.0, 0.0, 0.0
    if tau >= 1.0:
        return 1.0, 0.0, 0.0
    s = tau**3 * (10 - 15 * tau + 6 * tau**2)
    ds = 30 * tau**2 * (1 - tau) ** 2 / duration
    dds = 60 * tau * (1 - tau) * (1 - 2 * tau) / duration**2
    return float(s), float(ds), float(dds)


def _check_span(t0: float, duration: float) -> tuple[float, float]:
    t0, duration = float(t0), float(duration)
    if not (np.isfinite(t0) and np.isfinite(duration) and duration > 0):
        raise InvalidArgumentError(f"need a finite start and a duration > 0 [s], got {duration!r}")
    return t0, duration


class MinimumJerk:
    """Minimum-jerk motion from ``start`` to ``end`` (R^n) over ``[t0, t0 + duration]``.

    Parameters
    ----------
    start, end : array (n,)
    duration : float
        [s], > 0.
    t0 : float
        Start time [s].
    """

    def __init__(self, start: ArrayLike, end: ArrayLike, duration: float, t0: float = 0.0):
        self.start = np.atleast_1d(np.asarray(start, dtype=float)).copy()
        self.end = np.atleast_1d(np.asarray(end, dtype=float)).copy()
        if self.start.shape != self.end.shape or not (
            np.all(np.isfinite(self.start)) and np.all(np.isfinite(self.end))
        ):
            raise InvalidArgumentError(
                f"start and end must be finite and of one shape, got {self.start.shape} and "
                f"{self.end.shape}"
            )
        self.t0, self.duration = _check_span(t0, duration)

    def __call__(self, t: float) -> tuple[Array, Array, Array]:
        """``(position, velocity, acceleration)`` at time ``t`` [s]."""
        s, ds, dds = _profile(t, self.t0, self.duration)
        d = self.end - self.start
        return self.start + s * d, ds * d, dds * d


class MinimumJerkSE3:
    """Minimum-jerk motion along the geodesic from placement ``start`` to ``end``.

    Position straight, rotation about the fixed axis of ``log(R0^T R1)``; twists
    ``(v, omega)`` in world-aligned axes at the moving frame's origin.

    Parameters
    ----------
    start, end : pinocchio.SE3
    duration : float
    t0 : float
    """

    def __init__(self, start: pin.SE3, end: pin.SE3, duration: float, t0: float = 0.0):
        self.start, self.end = start.copy(), end.copy()
        self.t0, self.duration = _check_span(t0, duration)
        self._axis = pin.log3(start.rotation.T @ end.rotation)
        self._axis_world = start.rotation @ self._axis

    def __call__(self, t: float) -> tuple[pin.SE3, Array, Array]:
        """``(placement, twist, acceleration)`` at time ``t``."""
        s, ds, dds = _profile(t, self.t0, self.duration)
        d = self.end.translation - self.start.translation
        R = self.start.rotation @ pin.exp3(s * self._axis)
        M = pin.SE3(R, self.start.translation + s * d)
        w = self._axis_world
        return M, np.r_[ds * d, ds * w], np.r_[dds * d, dds * w]


class SplineTrajectory:
    """Cubic spline through waypoints of R^n at given times (zero end velocities by
    default: ``bc_type="clamped"``).

    Parameters
    ----------
    times : array (k,)
        Strictly increasing [s], k >= 2.
    points : array (k, n)
    bc_type : str
        SciPy's ``CubicSpline`` end conditions.
    """

    def __init__(self, times: ArrayLike, points: ArrayLike, bc_type: str = "clamped"):
        t = np.asarray(times, dtype=float)
        p = np.asarray(points, dtype=float)
        if t.ndim != 1 or len(t) < 2 or np.any(np.diff(t) <= 0) or p.shape[0] != len(t):
            raise InvalidArgumentError(
                "times must be >= 2 strictly increasing values, one per row of points"
            )
        self.times = t
        self._spline = CubicSpline(t, p, axis=0, bc_type=bc_type)
        self._d1, self._d2 = self._spline.derivative(1), self._spline.derivative(2)

    def __call__(self, t: float) -> tuple[Array, Array, Array]:
        """``(position, velocity, acceleration)`` at ``t``."""
        if t <= self.times[0] or t >= self.times[-1]:
            tc = min(max(t, self.times[0]), self.times[-1])
            p = np.asarray(self._spline(tc))
            return p, np.zeros_like(p), np.zeros_like(p)
        return np.asarray(self._spline(t)), np.asarray(self._d1(t)), np.asarray(self._d2(t))


class SE3Spline:
    """Spline through placements: cubic positions, cubic rotations on SO(3).

    Positions: :class:`scipy.interpolate.CubicSpline` (clamped). Rotations:
    :class:`scipy.spatial.transform.RotationSpline` (continuous angular rate and
    acceleration, interpolating on the manifold).

    Parameters
    ----------
    times : array (k,)
        Strictly increasing [s].
    placements : sequence of pinocchio.SE3
    """

    def __init__(self, times: ArrayLike, placements: list[pin.SE3]):
        t = np.asarray(times, dtype=float)
        if t.ndim != 1 or len(t) < 2 or np.any(np.diff(t) <= 0) or len(placements) != len(t):
            raise InvalidArgumentError(
                "times must be >= 2 strictly increasing values, one per placement"
            )
        self.times = t
        self._pos = SplineTrajectory(t, [M.translation for M in placements])
        self._rot = RotationSpline(t, Rotation.from_matrix([M.rotation for M in placements]))

    def __call__(self, t: float) -> tuple[pin.SE3, Array, Array]:
        """``(placement, twist, acceleration)`` at ``t``, world-aligned ``(linear, angular)``."""
        p, v, a = self._pos(t)
        tc = min(max(t, self.times[0]), self.times[-1])
        R = self._rot(tc).as_matrix()
        if t <= self.times[0] or t >= self.times[-1]:
            w, dw = np.zeros(3), np.zeros(3)
        else:
            # RotationSpline's rates are in the moving frame's own axes (checked by
            # differences in the tests); d(R w)/dt = R dw/dt since w x w = 0.
            w, dw = R @ self._rot(t, 1), R @ self._rot(t, 2)
        return pin.SE3(R, p), np.r_[v, w], np.r_[a, dw]
