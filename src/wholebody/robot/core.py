"""The robot: a Pinocchio model with names resolved once and the equations of motion.

.. math::

    M(q)\\,a + C(q, v)\\,v + g(q) = S^T \\tau + \\sum_i J_i(q)^T w_i

Conventions (fixed for the whole library, see the README's table):

* ``q`` and ``v`` follow Pinocchio. With a floating base,
  ``q = [x, y, z, qx, qy, qz, qw, joints...]`` (unit quaternion, x-y-z-w) and
  ``v = [base linear velocity, base angular velocity, joint velocities]`` with both base
  parts in the **base frame** (Pinocchio's LOCAL). ``a`` likewise.
* ``g(q)`` is the generalized gravity **to compensate**: at rest ``tau = g(q)`` holds the
  robot still. The seeds write the same law with ``tau_g = -g(q)``.
* Frame Jacobians are ``LOCAL_WORLD_ALIGNED``: rows ``(v, omega)`` of the frame origin in
  world axes. Their transpose maps a world-axes wrench ``(f, tau)`` at the frame origin to
  generalized forces.
* Spatial vectors are force first: a wrench is ``(f, tau)``, a twist ``(v, omega)``.
* SI units: m, kg, s, N, N m, rad.

This module and its parts are the one place where Pinocchio is called for dynamics.
:class:`Robot` is assembled from four layers, each in its own module:

=============================  ===========================================================
``_robot_model.RobotModel``    loading, names, sizes, added frames (copy-on-write model)
``_robot_state.RobotState``    checks of q, v, a, tau (single and batch), configurations
``_robot_dynamics``            M, C, C v, g, nle, inverse/forward dynamics, torque split
``_robot_kinematics``          frames, CoM, momentum, one-pass helpers for balance/estimation
``_robot_contact``             the one-pass contact-dynamics bundle for controllers
=============================  ===========================================================
"""

from __future__ import annotations

from ._checks import (
    MAX_STATE_MAGNITUDE,
    QUAT_EXACT_TOL,
    QUAT_RENORMALIZE_TOL,
    Array,
)
from ._contact import ContactDynamics, ContactDynamicsPass, RobotContact
from ._dynamics import External, TorqueTerms
from ._kinematics import ContactPass

__all__ = [
    "Robot",
    "TorqueTerms",
    "ContactPass",
    "ContactDynamics",
    "ContactDynamicsPass",
    "External",
    "Array",
    "MAX_STATE_MAGNITUDE",
    "QUAT_EXACT_TOL",
    "QUAT_RENORMALIZE_TOL",
]


class Robot(RobotContact):
    """A rigid multibody robot on Pinocchio, with checked inputs and named frames.

    Create one with :meth:`from_urdf`, :meth:`from_urdf_string`, :meth:`from_model` or
    :func:`wholebody.load`. Methods take states as arrays in Pinocchio's layout (see the
    module docstring) and return fresh arrays. A ``Robot`` keeps one Pinocchio ``Data`` as
    scratch space, so one instance must not be shared between threads.

    Parameters
    ----------
    model : pinocchio.Model
        The model. It is shared with the caller until the robot changes it:
        :meth:`add_frame` and setting :attr:`gravity_vector` copy it first
        (copy-on-write), so the caller's model is never modified.
    name : str, optional
        A name for messages and reports; defaults to ``model.name``.
    source : str, optional
        Where the model came from (a file path), for messages.

    Notes
    -----
    Every state argument is checked unless :attr:`check_inputs` is False: shape,
    finiteness, magnitudes within :data:`MAX_STATE_MAGNITUDE` (1e8, SI units) and unit
    quaternions, with :class:`~wholebody.errors.StateError` naming the field, index and
    value. Frames are given by name (a ``str``); an unknown name is a
    :class:`~wholebody.errors.FrameNotFoundError` listing close matches, anything else an
    :class:`~wholebody.errors.InvalidArgumentError`.
    """
