"""Joint position, velocity and acceleration bounds as acceleration bounds (with viability)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import InvalidArgumentError
from .._inputs import as_vector
from ._base import Constraint

if TYPE_CHECKING:
    from ...robot import ControllerPass
    from .._layout import ControlLayout

Array = NDArray[np.float64]
_min = np.minimum.reduce


class JointBounds(Constraint):
    """Bounds on the joint accelerations that keep position, velocity and acceleration in
    their limits over the next step and keep the state *viable* (as TSID's
    ``TaskJointPosVelAccBounds``, after Del Prete 2018).

    With the discrete step ``q+ = q + dt v + dt^2 a / 2``, ``v+ = v + dt a``, the upper bound
    of joint j's acceleration is the least of

    * ``a_max``;
    * position: ``2 (q_max - q - dt v) / dt^2``;
    * velocity: ``(v_max - v) / dt``;
    * viability: the largest ``a`` after which braking at ``a_max`` still stops before
      ``q_max``, ``v+^2 <= 2 a_max (q_max - q+)``, i.e.
      ``(-(2 v + a_max dt) + sqrt(a_max (a_max dt^2 - 4 v dt + 8 (q_max - q)))) / (2 dt)``;

    the lower bound mirrors it. ``q_max`` and ``q_min`` are first moved inwards by
    ``margin``. A joint whose state is already outside the viable set (no acceleration
    within ``a_max`` meets the bounds) gets ``lower = upper = -a_max sign(v)``: it brakes as
    hard as it can, and the QP stays feasible.

    Parameters
    ----------
    robot_or_limits : Robot
        The robot whose model gives default limits (one-dof joints only).
    dt : float
        Control period [s].
    acceleration_limit : float or array (nv - 6,)
        ``a_max`` [rad/s^2] (> 0).
    position_lower, position_upper : array (nv - 6,), optional
        Default the model's; infinite or missing entries leave the position free.
    velocity_limit : array (nv - 6,), optional
        Default the model's ``velocityLimit``.
    margin : float
        Viability margin [rad or m] taken off each position limit.

    Attributes
    ----------
    lower, upper : ndarray (nv - 6,)
        The acceleration bounds of the last tick.
    """

    name = "joint_bounds"

    def __init__(
        self,
        robot: object,
        *,
        dt: float,
        acceleration_limit: ArrayLike,
        position_lower: ArrayLike | None = None,
        position_upper: ArrayLike | None = None,
        velocity_limit: ArrayLike | None = None,
        margin: float = 0.0,
    ):
        model = robot.model  # type: ignore[attr-defined]
        nv = model.nv
        nu = nv - 6
        self.dt = float(dt)
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise InvalidArgumentError(f"dt must be a positive time step [s], got {dt!r}")
        self.margin = float(margin)
        if not (np.isfinite(self.margin) and self.margin >= 0):
            raise InvalidArgumentError(f"margin must be finite and >= 0, got {margin!r}")
        # Joint index (q and v) of each velocity coordinate of one-dof joints.
        qi = np.full(nu, -1)
        for j in range(2, model.njoints):
            joint = model.joints[j]
            if joint.nq == 1 and joint.nv == 1:
                qi[joint.idx_v - 6] = joint.idx_q
        self._qi = qi
        self._vi = np.arange(6, nv)

        def vec(x: ArrayLike | None, default: Array, what: str) -> Array:
            if x is None:
                return default.astype(float)
            try:
                if np.iscomplexobj(x):
                    raise TypeError
                out = np.broadcast_to(np.asarray(x, float), (nu,)).copy()
            except (TypeError, ValueError):
                raise InvalidArgumentError(
                    f"{what} must be a number or a vector of {nu} real numbers, got {x!r}"
                ) from None
            bad = np.flatnonzero(np.isnan(out))
            if len(bad):
                raise InvalidArgumentError(f"{what}: entries {bad[:10].tolist()} are NaN")
            return out

        lo = np.where(qi >= 0, model.lowerPositionLimit[np.maximum(qi, 0)], -np.inf)
        hi = np.where(qi >= 0, model.upperPositionLimit[np.maximum(qi, 0)], np.inf)
        self.position_lower = vec(position_lower, lo, "position_lower")
        self.position_upper = vec(position_upper, hi, "position_upper")
        # URDFs write "no limit" as huge numbers or as zero-width ranges.
        free = (self.position_upper - self.position_lower <= 0) | (
            np.abs(self.position_upper) > 1e10
        )
        self.position_lower[free], self.position_upper[free] = -np.inf, np.inf
        vmax = vec(velocity_limit, np.asarray(model.velocityLimit[6:], float), "velocity_limit")
        vmax[(vmax <= 0) | (vmax > 1e10)] = np.inf
        self.velocity_limit = vmax
        self.acceleration_limit = vec(acceleration_limit, np.zeros(nu), "acceleration_limit")
        if np.any(~(self.acceleration_limit > 0)) or np.any(~np.isfinite(self.acceleration_limit)):
            raise InvalidArgumentError("acceleration_limit must be finite and > 0 [rad/s^2]")
        self.lower, self.upper = np.zeros(nu), np.zeros(nu)
        # q's entries of the joints (a slice where they follow the free flyer in order,
        # else an index with 0 for joints of several dofs, their position left free).
        self._q_rows: slice | NDArray[np.intp] = np.maximum(qi, 0)
        if np.array_equal(qi, np.arange(7, 7 + nu)):
            self._q_rows = slice(7, 7 + nu)
        self._work: Array | None = None  # the stacked computation's buffers
        self._far = False  # the last bounds: every joint far from its position limits
        self._pattern: Array | None = None  # the rows whose pattern is written

    def bounds(self, q_joints: ArrayLike, v_joints: ArrayLike) -> tuple[Array, Array]:
        """``(lower, upper)`` acceleration bounds (nv - 6,) at joint positions and velocities
        (nv - 6,) [rad or m, rad/s or m/s].

        Raises
        ------
        InvalidArgumentError
            A position or velocity that is not a finite vector of nv - 6.
        """
        nu = len(self.acceleration_limit)
        q, v = as_vector(q_joints, nu, "q_joints"), as_vector(v_joints, nu, "v_joints")
        lower, upper = np.empty(nu), np.empty(nu)
        self._bounds_into(q, v, lower, upper)
        return lower, upper

    def _bounds_into(self, q: Array, v: Array, lower: Array, upper: Array) -> None:
        """:meth:`bounds` written into ``lower`` and ``upper`` (nu,).

        Both sides at once over stacked (2 nu,) buffers: the upper side, then the lower
        side mirrored (``q -> -q``, ``v -> -v``, ``q_max -> -q_min``: its bound is minus
        the mirrored upper bound, every step of it exact under negation). An infinite
        ``q_max`` gives infinite position and viability bounds, which the least leaves out.
        """
        nu = len(q)
        w = self._work
        if w is None or w.shape[1] != 2 * nu:
            w = self._work = np.zeros((8, 2 * nu))
        X, V, QM, AM, U, D, T, R = w
        dt = self.dt
        X[:nu] = q
        np.negative(q, out=X[nu:])
        V[:nu] = v
        np.negative(v, out=V[nu:])
        np.subtract(self.position_upper, self.margin, out=QM[:nu])
        np.add(self.position_lower, self.margin, out=QM[nu:])
        np.negative(QM[nu:], out=QM[nu:])
        AM[:nu] = self.acceleration_limit
        AM[nu:] = self.acceleration_limit
        # Velocity: (v_max - v) / dt, at most a_max.
        U[:nu] = self.velocity_limit
        U[nu:] = self.velocity_limit
        U -= V
        U /= dt
        np.minimum(U, AM, out=U)
        np.subtract(QM, X, out=D)  # q_max - q
        # Far from every position limit (the usual case) neither the position nor the
        # viability bound is below a_max: at a = a_max the step ends inside the limit with
        # room to brake, v+^2 <= 2 a_max (q_max - q+), which is where the viability bound
        # (the larger root of that quadratic in a) is >= a_max, and then q+ <= q_max, the
        # position bound >= a_max. Tested with a relative slack of 1e-6 (rounding
        # far below it): near a limit, the bounds below are computed.
        np.multiply(AM, 0.5 * dt * dt, out=T)
        np.multiply(V, dt, out=R)
        T += R
        np.subtract(D, T, out=T)  # q_max - q+ at a_max
        T *= AM
        T *= 2.0 * (1.0 - 1e-6)  # 2 a_max (q_max - q+), less the slack
        np.multiply(AM, dt, out=R)
        R += V
        R *= R
        R *= 1.0 + 1e-6  # v+^2 at a_max, with the slack
        T -= R  # inf where q_max is (NaN fails the test)
        self._far = far = bool(_min(T) >= 0.0)
        if not far:
            # Position: 2 (q_max - q - dt v) / dt^2.
            np.multiply(V, dt, out=T)
            np.subtract(D, T, out=T)
            T *= 2
            T /= dt**2
            np.minimum(U, T, out=U)
            # Viability: arg = a_max (a_max dt^2 - 4 v dt + 8 (q_max - q)) (in T), the bound
            # (-(2 v + a_max dt) + sqrt(arg)) / (2 dt) where arg >= 0, else -a_max (in R).
            np.multiply(AM, dt, out=T)
            T *= dt
            np.multiply(V, 4, out=R)
            R *= dt
            T -= R
            D *= 8
            T += D
            T *= AM
            np.maximum(T, 0.0, out=R)
            np.sqrt(R, out=R)
            np.multiply(V, 2, out=D)
            np.multiply(AM, dt, out=X)
            D += X
            R -= D
            R /= 2 * dt
            np.negative(AM, out=X)
            np.putmask(R, ~(T >= 0), X)
            np.minimum(U, R, out=U)
        # Clipped to [-a_max, a_max]; outside the viable set (lower > upper: no
        # acceleration within a_max keeps it) brake at a_max against the motion.
        np.negative(AM, out=X)
        np.maximum(U, X, out=U)
        np.minimum(U, AM, out=U)
        upper[...] = U[:nu]
        np.negative(U[nu:], out=lower)
        bad = lower > upper
        if bad.any():
            brake = np.where(v > 0, -AM[:nu], AM[:nu])
            lower[bad] = upper[bad] = brake[bad]

    def rows(self, kin: ControllerPass, layout: ControlLayout) -> int:
        return kin.nv - 6

    def fill(
        self, kin: ControllerPass, layout: ControlLayout, C: Array, lower: Array, upper: Array
    ) -> None:
        rows = self._q_rows
        q = kin.q[rows] if isinstance(rows, slice) else np.where(self._qi >= 0, kin.q[rows], 0.0)
        self._bounds_into(q, kin.v[6:], self.lower, self.upper)
        # The rows' pattern (identity on the joints' columns) written once per buffer: the
        # controller keeps these rows' other entries zero (JointBounds owns its pattern).
        if self._pattern is not C:
            nu = kin.nv - 6
            C[np.arange(nu), self._vi] = 1.0
            self._pattern = C
        lower[...] = self.lower
        upper[...] = self.upper
