"""One Pinocchio pass per control tick, read by every task and constraint.

:class:`TickKinematics` runs ``pinocchio.computeAllTerms`` once at ``(q, v)``: it fills the
mass matrix, the nonlinear effects, every joint Jacobian, the CoM and its Jacobian, the
centroidal momentum and its matrix, and the joint accelerations at ``a = 0``. Frame
Jacobians, placements, velocities and drifts ``dJ/dt v`` are then *read* from that pass (a
frame placement is one SE3 product), never recomputed by a second pass.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidArgumentError
from ..robot import Robot

__all__ = ["TickKinematics"]

Array = NDArray[np.float64]
_LWA, _LOCAL = pin.LOCAL_WORLD_ALIGNED, pin.LOCAL


class TickKinematics:
    """The terms of one state, from one ``computeAllTerms`` pass (buffers reused per tick).

    Parameters
    ----------
    robot : Robot
        A floating-base robot (free-flyer root joint). Its ``model`` and ``data`` are used.

    Attributes
    ----------
    q, v : ndarray, shapes (nq,), (nv,)
        The state of the last :meth:`update`.
    mass_matrix : ndarray, shape (nv, nv)
        ``M(q)``, full and symmetric.
    nonlinear_effects : ndarray, shape (nv,)
        ``h = C(q, v) v + g(q)`` [N, N m].
    com : ndarray, shape (3,)
        Centre of mass, world [m].
    momentum : ndarray, shape (6,)
        Centroidal momentum ``(P, L_G)``, world axes at the CoM [kg m/s, kg m^2/s].
    momentum_matrix : ndarray, shape (6, nv)
        ``A_G`` with ``A_G v = (P, L_G)``; ``A_G[:3] / m`` is the CoM Jacobian.
    momentum_drift : ndarray, shape (6,)
        ``dA_G/dt v`` [N, N m]: the momentum rate at ``a = 0``, so that
        ``d(P, L_G)/dt = A_G a + momentum_drift``.
    tick : int
        Number of updates so far.
    """

    def __init__(self, robot: Robot):
        if not robot.has_floating_base:
            raise InvalidArgumentError(
                f"the controller needs a floating-base robot; {robot.name!r} has a fixed base"
            )
        self.robot = robot
        self.model, self.data = robot.model, robot.data
        nv = robot.nv
        self.nv, self.nq = nv, robot.nq
        self.mass = float(robot.mass)
        self.gravity = np.array(robot.gravity_vector, dtype=float)
        m, d = self.model, self.data
        pin.computeAllTerms(m, d, pin.neutral(m), np.zeros(nv))
        # Some Pinocchio versions fill only the upper triangle of data.M: find out once.
        self._upper_only = not np.array_equal(d.M, d.M.T)
        self._lower = np.tril(np.ones((nv, nv), dtype=bool), -1)
        self.q, self.v = pin.neutral(m), np.zeros(nv)
        self.mass_matrix = np.zeros((nv, nv))
        self.nonlinear_effects = np.zeros(nv)
        self.com = np.zeros(3)
        self.momentum = np.zeros(6)
        self.momentum_matrix = np.zeros((6, nv))
        self.momentum_drift = np.zeros(6)
        self.tick = 0

    def update(self, q: ArrayLike, v: ArrayLike) -> None:
        """The one pass at ``(q, v)`` (checked like every state of the robot)."""
        robot = self.robot
        q, v = robot.check_q(q), robot.check_v(v)
        m, d = self.model, self.data
        pin.computeAllTerms(m, d, q, v)
        self.q[:], self.v[:] = q, v
        M = self.mass_matrix
        M[:] = d.M
        if self._upper_only:
            np.copyto(M, M.T, where=self._lower)
        self.nonlinear_effects[:] = d.nle
        self.com[:] = d.com[0]
        self.momentum[:] = d.hg.vector
        self.momentum_matrix[:] = d.Ag
        # Momentum rate at a = 0 from the root joint's rows of h (its local frame): they are
        # the whole body's momentum rate minus gravity's wrench, so in world axes
        # dP/dt = R f + m g and dL_G/dt = R tau + (p_root - c) x R f.
        root = d.oMi[1]
        R = root.rotation
        f = R @ d.nle[:3]
        self.momentum_drift[:3] = f + self.mass * self.gravity
        r = root.translation - self.com
        self.momentum_drift[3:] = R @ d.nle[3:6]
        self.momentum_drift[3] += r[1] * f[2] - r[2] * f[1]
        self.momentum_drift[4] += r[2] * f[0] - r[0] * f[2]
        self.momentum_drift[5] += r[0] * f[1] - r[1] * f[0]
        self.tick += 1

    # --- frames, read from the pass -------------------------------------------------------

    def frame_id(self, name: str) -> int:
        """The id of a frame (a typed error names an unknown frame)."""
        return int(self.robot.frame_id(name))

    def placement(self, fid: int) -> pin.SE3:
        """World placement of frame ``fid`` (one SE3 product on the pass's joint placements)."""
        return pin.updateFramePlacement(self.model, self.data, fid)

    def jacobian(self, fid: int, local: bool = False) -> Array:
        """Frame Jacobian (6, nv), ``(v, omega)`` rows; world-aligned axes at the frame origin,
        or the frame's own axes with ``local``."""
        return pin.getFrameJacobian(self.model, self.data, fid, _LOCAL if local else _LWA)

    def velocity(self, fid: int, local: bool = False) -> Array:
        """Frame twist ``(v, omega)`` (6,), axes as :meth:`jacobian` [m/s, rad/s]."""
        return pin.getFrameVelocity(self.model, self.data, fid, _LOCAL if local else _LWA).vector

    def drift(self, fid: int, local: bool = False) -> Array:
        """``dJ/dt v`` (6,) of :meth:`jacobian`: the frame's acceleration at ``a = 0``.

        World-aligned: the classical acceleration of the origin and ``d omega/dt`` (the time
        derivative of the world-aligned twist). Local: the spatial acceleration in the
        frame's axes (the time derivative of the body twist).
        """
        if local:
            return pin.getFrameAcceleration(self.model, self.data, fid, _LOCAL).vector
        return pin.getFrameClassicalAcceleration(self.model, self.data, fid, _LWA).vector
