"""Reference trajectories for the controller's tasks, in the tasks' units and frames.

* :class:`MinimumJerk`: the minimum-jerk profile ``s(tau) = 10 tau^3 - 15 tau^4 + 6 tau^5``
  (Flash and Hogan 1985; seed 001's reaching movement) between two points of R^n;
* :class:`MinimumJerkSE3`: the same profile along the geodesic between two placements,
  ``p(t) = p0 + s (p1 - p0)``, ``R(t) = R0 exp(s log(R0^T R1))``;
* :class:`SplineTrajectory`: a cubic spline through waypoints of R^n (CoM, joints);
* :class:`SE3Spline`: a spline through placements: a cubic spline of the positions and
  SciPy's cubic rotation spline on SO(3) (continuous angular velocity and acceleration);
* walking: :class:`FootstepPlan` (alternating footholds, their timing and the piecewise-linear
  ZMP they make), :class:`DcmTrajectory` (the CoM of the linear inverted pendulum on that
  ZMP, through its divergent component of motion, solved exactly per segment) and
  :class:`SwingFoot` (a swing sole's minimum-jerk path with a lift).

Each gives ``(position, velocity, acceleration)`` at a time; SE3 ones give a
:class:`pinocchio.SE3` and twists ``(linear, angular)`` in world-aligned axes at the frame
origin, as :meth:`wholebody.control.tasks.FrameTask.set_reference` takes them. Outside their
time span they hold the end values with zero velocity and acceleration (the CoM of
:class:`DcmTrajectory` settles after its end: see there).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray
from scipy.interpolate import CubicSpline
from scipy.spatial.transform import Rotation, RotationSpline

from ..errors import InvalidArgumentError

__all__ = [
    "DcmTrajectory",
    "Footstep",
    "FootstepPlan",
    "MinimumJerk",
    "MinimumJerkSE3",
    "SE3Spline",
    "SplineTrajectory",
    "SwingFoot",
]

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


class SwingFoot(MinimumJerkSE3):
    """A swing foot's placement: minimum jerk from ``start`` to ``end`` (as
    :class:`MinimumJerkSE3`) plus a vertical lift ``h b(tau)`` along world z, with the bump
    ``b(tau) = 64 tau^3 (1 - tau)^3`` (``b(1/2) = 1``; zero value, velocity and acceleration at
    lift-off and touch-down).

    Parameters
    ----------
    start, end : pinocchio.SE3
        The sole's placement at lift-off and at touch-down.
    height : float
        Lift at mid-swing [m], >= 0, above the straight line from ``start`` to ``end``.
    duration : float
        Swing time [s], > 0.
    t0 : float
        Lift-off time [s].
    """

    def __init__(
        self, start: pin.SE3, end: pin.SE3, height: float, duration: float, t0: float = 0.0
    ):
        super().__init__(start, end, duration, t0)
        self.height = float(height)
        if not (np.isfinite(self.height) and self.height >= 0):
            raise InvalidArgumentError(f"height must be finite and >= 0 [m], got {height!r}")

    def __call__(self, t: float) -> tuple[pin.SE3, Array, Array]:
        """``(placement, twist, acceleration)`` at time ``t``, world-aligned ``(linear, angular)``
        at the sole's origin."""
        M, twist, acc = super().__call__(t)
        tau = (t - self.t0) / self.duration
        if 0.0 < tau < 1.0:
            h, T = self.height, self.duration
            M.translation = M.translation + [0.0, 0.0, 64 * h * tau**3 * (1 - tau) ** 3]
            twist[2] += 192 * h * tau**2 * (1 - tau) ** 2 * (1 - 2 * tau) / T
            acc[2] += 384 * h * tau * (1 - tau) * (1 - 5 * tau + 5 * tau**2) / T**2
        return M, twist, acc


@dataclass(frozen=True)
class Footstep:
    """One step: the contact ``foot`` leaves the sole placement ``start`` at ``lift_off`` [s]
    and lands on ``end`` at ``touch_down`` [s]."""

    foot: str
    start: pin.SE3
    end: pin.SE3
    lift_off: float
    touch_down: float


class FootstepPlan:
    """Alternating footsteps, their timing and the ZMP reference they make.

    The timeline from ``t0``: a rest of ``rest`` seconds, a double support, then per step a
    single support (``foot`` swings from its placement to its target) and a double support;
    a final rest. The ZMP (world x-y) is piecewise linear: at the centre of the two soles
    during the rests, at the stance sole's origin during single support, and moving
    linearly from one sole's origin to the other's during each double support (from the
    centre to the first stance sole in the first, from the last stance sole to the centre of
    the final placements in the last).

    Parameters
    ----------
    feet : dict of str to pinocchio.SE3
        The two soles (contact names) and their placements at ``t0``; the sole frame's origin
        is where the ZMP is put.
    steps : sequence of (str, pinocchio.SE3)
        The footholds in order: the foot that swings and the sole placement it lands on. A
        foot's step follows the other foot's (each step swings the foot that stood during
        the last one).
    single_support, double_support : float
        Durations [s], > 0.
    rest : float
        Duration of the rests before the first and after the last double support [s], >= 0.
    t0 : float
        Start [s].

    Attributes
    ----------
    footsteps : list of Footstep
    zmp_times : ndarray (k,)
        The ZMP waypoints' times [s], strictly increasing.
    zmp_points : ndarray (k, 2)
        The ZMP waypoints, world x-y [m].
    end : float
        Time [s] of the last waypoint (the end of the final rest).
    """

    def __init__(
        self,
        feet: dict[str, pin.SE3],
        steps: list[tuple[str, pin.SE3]],
        *,
        single_support: float,
        double_support: float,
        rest: float = 0.0,
        t0: float = 0.0,
    ):
        if len(feet) != 2 or not steps:
            raise InvalidArgumentError(
                f"need two feet and at least one step, got {len(feet)} feet, {len(steps)} steps"
            )
        for (a, _), (b, _) in zip(steps, steps[1:], strict=False):
            if a == b or a not in feet:
                raise InvalidArgumentError(
                    f"steps must alternate between the feet {list(feet)}, got {a!r} then {b!r}"
                )
        if steps[-1][0] not in feet:
            raise InvalidArgumentError(f"unknown foot {steps[-1][0]!r}; feet: {list(feet)}")
        t0, ss = _check_span(t0, single_support)
        _, ds = _check_span(t0, double_support)
        if not (np.isfinite(rest) and rest >= 0):
            raise InvalidArgumentError(f"rest must be a duration >= 0 [s], got {rest!r}")
        placed = {f: M.copy() for f, M in feet.items()}
        centre = sum(M.translation[:2] for M in placed.values()) / 2
        times, points = [t0], [centre]
        if rest > 0:
            times.append(t0 + rest)
            points.append(centre)
        self.footsteps: list[Footstep] = []
        t = times[-1] + ds
        for foot, target in steps:
            stance = next(f for f in placed if f != foot)
            times += [t, t + ss]
            points += [placed[stance].translation[:2]] * 2
            self.footsteps.append(Footstep(foot, placed[foot], target.copy(), t, t + ss))
            placed[foot] = target.copy()
            t += ss + ds
        centre = sum(M.translation[:2] for M in placed.values()) / 2
        times.append(t)
        points.append(centre)
        if rest > 0:
            times.append(t + rest)
            points.append(centre)
        self.zmp_times = np.array(times)
        self.zmp_points = np.array(points, dtype=float)
        self.end = float(times[-1])

    @classmethod
    def straight(
        cls,
        feet: dict[str, pin.SE3],
        *,
        steps: int,
        length: float,
        first: str,
        single_support: float,
        double_support: float,
        rest: float = 0.0,
        t0: float = 0.0,
    ) -> FootstepPlan:
        """Walk straight ahead along the soles' mean x axis (horizontal): ``steps`` steps
        starting with the foot ``first``, each landing ``length`` [m] ahead of the other foot,
        the last one beside it (the feet side by side again, ``(steps - 1) length`` ahead of
        their start). Orientations and the feet's lateral offsets are kept."""
        if steps < 1 or first not in feet:
            raise InvalidArgumentError(
                f"need steps >= 1 and first among {list(feet)}, got {steps!r} and {first!r}"
            )
        names = [first, next(f for f in feet if f != first)]
        heading = sum(M.rotation[:, 0] for M in feet.values())
        heading[2] = 0.0
        heading /= np.linalg.norm(heading)
        plan = []
        for k in range(steps):
            foot = names[k % 2]
            M = feet[foot].copy()
            M.translation = M.translation + length * min(k + 1, steps - 1) * heading
            plan.append((foot, M))
        return cls(
            feet,
            plan,
            single_support=single_support,
            double_support=double_support,
            rest=rest,
            t0=t0,
        )


class DcmTrajectory:
    """The CoM of the linear inverted pendulum on a piecewise-linear ZMP, through its
    divergent component of motion (DCM, the capture point), solved exactly per segment.

    With ``omega = sqrt(g / z_c)`` (CoM height ``z_c`` above the ZMP's plane), the horizontal
    CoM ``c``, DCM ``xi = c + c_dot / omega`` and ZMP ``p`` obey (Pratt et al. 2006;
    Englsberger, Ott and Albu-Schaeffer 2015):

    .. math::

        \\dot\\xi = \\omega (\\xi - p), \\qquad \\dot c = \\omega (\\xi - c), \\qquad
        \\ddot c = \\omega^2 (c - p).

    On a segment of duration ``T`` where ``p(s) = p_0 + s \\dot p`` (``0 <= s <= T``):

    .. math::

        \\xi(s) = p(s) + \\dot p / \\omega + e^{\\omega s} (\\xi(0) - p_0 - \\dot p / \\omega),
        \\qquad
        c(s) = p(s) + A e^{\\omega s} + B e^{-\\omega s}

    with ``2 A = xi(0) - p_0 - p_dot / omega`` and ``B = c(0) - p_0 - A``. The DCM is solved
    backward from the last waypoint, where it equals the ZMP (the pendulum ends at rest over
    it): ``xi(0) = p_0 + p_dot / omega + e^{-omega T} (xi(T) - p(T) - p_dot / omega)``; the CoM
    forward from ``com0`` at the first waypoint (it converges to the DCM's path: its start
    velocity is ``omega (xi(t_0) - c_0)``, small after a rest of a few ``1 / omega``). After
    the last waypoint the ZMP and DCM stay there and ``c - p`` decays as ``e^{-omega t}``;
    before the first, ``(com0, 0, 0)`` is held.

    Parameters
    ----------
    times : array (k,)
        The ZMP waypoints' times [s], strictly increasing, k >= 2.
    zmp : array (k, 2)
        The ZMP waypoints, world x-y [m].
    com0 : array (3,)
        The CoM at ``times[0]``, world [m]; its z is held.
    height : float
        ``z_c``: the CoM's height above the ZMP's plane [m], > 0.
    gravity : float
        ``|g|`` [m/s^2].

    Attributes
    ----------
    omega : float
        [1/s].
    """

    def __init__(
        self,
        times: ArrayLike,
        zmp: ArrayLike,
        com0: ArrayLike,
        height: float,
        gravity: float = 9.81,
    ):
        t = np.asarray(times, dtype=float)
        p = np.asarray(zmp, dtype=float)
        c0 = np.asarray(com0, dtype=float)
        if t.ndim != 1 or len(t) < 2 or np.any(np.diff(t) <= 0) or p.shape != (len(t), 2):
            raise InvalidArgumentError(
                "times must be >= 2 strictly increasing values, zmp one x-y row per time; got "
                f"times {t.shape}, zmp {p.shape}"
            )
        if c0.shape != (3,) or not (np.isfinite(height) and height > 0 and gravity > 0):
            raise InvalidArgumentError(
                f"need com0 (3,), height > 0 and gravity > 0, got {c0.shape}, {height!r}, "
                f"{gravity!r}"
            )
        self.omega = w = float(np.sqrt(gravity / height))
        self.times, self.points, self.com0 = t, p, c0.copy()
        self._slope = np.diff(p, axis=0) / np.diff(t)[:, None]
        xi = np.empty_like(p)
        xi[-1] = p[-1]
        for i in range(len(t) - 2, -1, -1):
            d = self._slope[i] / w
            xi[i] = p[i] + d + np.exp(-w * (t[i + 1] - t[i])) * (xi[i + 1] - p[i + 1] - d)
        c = np.empty_like(p)
        c[0] = c0[:2]
        for i in range(len(t) - 1):
            c[i + 1] = self._segment(i, t[i + 1] - t[i], xi[i], c[i])[0]
        self._xi, self._c = xi, c

    def _segment(self, i: int, s: float, xi0: Array, c0: Array) -> tuple[Array, Array, Array]:
        """CoM ``(c, c_dot, c_ddot)`` (x-y) at ``s`` into segment ``i`` (the last waypoint's
        hold for ``i = k - 1``), from its start DCM and CoM."""
        w = self.omega
        p0 = self.points[i]
        dp = self._slope[i] if i < len(self._slope) else np.zeros(2)
        A = 0.5 * (xi0 - p0 - dp / w)
        B = c0 - p0 - A
        ep, em = np.exp(w * s), np.exp(-w * s)
        c = p0 + s * dp + A * ep + B * em
        return c, dp + w * (A * ep - B * em), w * w * (A * ep + B * em)

    def _locate(self, t: float) -> tuple[int, float]:
        i = int(np.searchsorted(self.times, t, side="right")) - 1
        i = min(i, len(self.times) - 1)
        return i, t - self.times[i]

    def zmp(self, t: float) -> Array:
        """The ZMP reference at ``t``, world x-y [m] (the end points held outside)."""
        if t <= self.times[0]:
            return self.points[0].copy()
        i, s = self._locate(t)
        return self.points[i] + (s * self._slope[i] if i < len(self._slope) else 0.0)

    def dcm(self, t: float) -> Array:
        """The DCM reference ``xi`` at ``t``, world x-y [m] (``xi(t_0)`` held before)."""
        i, s = self._locate(max(t, self.times[0]))
        if i >= len(self._slope):
            return self.points[-1].copy()
        d = self._slope[i] / self.omega
        p0 = self.points[i]
        return p0 + s * self._slope[i] + d + np.exp(self.omega * s) * (self._xi[i] - p0 - d)

    def __call__(self, t: float) -> tuple[Array, Array, Array]:
        """CoM ``(position, velocity, acceleration)`` at ``t``, world [m, m/s, m/s^2] (z held at
        ``com0``'s, with zero rates), as :meth:`ComTask.set_reference` takes them."""
        if t <= self.times[0]:
            return self.com0.copy(), np.zeros(3), np.zeros(3)
        i, s = self._locate(t)
        c, dc, ddc = self._segment(i, s, self._xi[i], self._c[i])
        return np.r_[c, self.com0[2]], np.r_[dc, 0.0], np.r_[ddc, 0.0]
