"""Joint position, velocity and acceleration bounds as acceleration bounds (with viability)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import InvalidArgumentError
from ._base import Constraint

if TYPE_CHECKING:
    from .._layout import ControlLayout
    from .._tick import TickKinematics

Array = NDArray[np.float64]


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
            out = default if x is None else np.broadcast_to(np.asarray(x, float), (nu,)).copy()
            if out.shape != (nu,) or np.any(np.isnan(out)):
                raise InvalidArgumentError(f"{what} must have shape ({nu},), got {out.shape}")
            return out.astype(float)

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

    def bounds(self, q_joints: ArrayLike, v_joints: ArrayLike) -> tuple[Array, Array]:
        """``(lower, upper)`` acceleration bounds (nv - 6,) at joint positions and velocities."""
        q, v = np.asarray(q_joints, float), np.asarray(v_joints, float)
        dt, amax = self.dt, self.acceleration_limit
        qmax = self.position_upper - self.margin
        qmin = self.position_lower + self.margin
        with np.errstate(invalid="ignore"):
            up = np.minimum(amax, (self.velocity_limit - v) / dt)
            lo = np.maximum(-amax, (-self.velocity_limit - v) / dt)
            up_pos = np.minimum(2 * (qmax - q - dt * v) / dt**2, _viable(q, v, qmax, amax, dt))
            lo_pos = np.maximum(2 * (qmin - q - dt * v) / dt**2, -_viable(-q, -v, -qmin, amax, dt))
        finite_up, finite_lo = np.isfinite(qmax), np.isfinite(qmin)
        up_all = np.where(finite_up, np.minimum(up, up_pos), up)
        lo_all = np.where(finite_lo, np.maximum(lo, lo_pos), lo)
        # Outside the viable set (no acceleration within a_max keeps it): brake at a_max
        # against the motion, the best the joint can do.
        up_all = np.clip(up_all, -amax, amax)
        lo_all = np.clip(lo_all, -amax, amax)
        bad = lo_all > up_all
        brake = np.where(v > 0, -amax, amax)
        return np.where(bad, brake, lo_all), np.where(bad, brake, up_all)

    def rows(self, kin: TickKinematics, layout: ControlLayout) -> int:
        return kin.nv - 6

    def fill(
        self, kin: TickKinematics, layout: ControlLayout, C: Array, lower: Array, upper: Array
    ) -> None:
        nu = kin.nv - 6
        q = np.where(self._qi >= 0, kin.q[np.maximum(self._qi, 0)], 0.0)
        lo, up = self.bounds(q, kin.v[6:])
        self.lower[:], self.upper[:] = lo, up
        C[np.arange(nu), self._vi] = 1.0
        lower[:], upper[:] = lo, up


def _viable(q: Array, v: Array, qmax: Array, amax: Array, dt: float) -> Array:
    """Largest acceleration after which braking at ``amax`` stops before ``qmax``."""
    arg = amax * (amax * dt * dt - 4 * v * dt + 8 * (qmax - q))
    root = np.sqrt(np.maximum(arg, 0.0))
    return np.where(arg >= 0, (-(2 * v + amax * dt) + root) / (2 * dt), -amax)
