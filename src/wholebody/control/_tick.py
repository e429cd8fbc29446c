"""One Pinocchio pass per control tick, read by every task and constraint.

:class:`TickKinematics` is the robot's :class:`~wholebody.robot.ControllerPass`
(:meth:`wholebody.Robot.controller_pass`, in ``robot/`` with the library's other Pinocchio
calls): one ``computeAllTerms`` at ``(q, v)`` fills the mass matrix, the nonlinear effects,
every joint Jacobian, the CoM, the centroidal momentum, its matrix and drift, and the joint
accelerations at ``a = 0``. Frame Jacobians, placements, velocities and drifts ``dJ/dt v``
are then *read* from that pass (a frame placement is one SE3 product), never recomputed by
a second pass.
"""

from __future__ import annotations

from ..robot import ControllerPass

__all__ = ["TickKinematics"]


class TickKinematics(ControllerPass):
    """The terms of one state, from one ``computeAllTerms`` pass (buffers reused per tick).

    The controller's name for :class:`~wholebody.robot.ControllerPass` (same attributes
    and methods; :meth:`update` is its call).

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
