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
        A floating-base robot (free-flyer root joint). The pass keeps its own Pinocchio
        ``Data``; ``robot.data`` is left alone.

    The attributes (``mass_matrix``, ``com``, ``momentum_matrix``, ...) are those of
    :class:`~wholebody.robot.ControllerPass`, documented there with shapes, frames and units.
    """
