"""The dynamics part of :class:`wholebody.Robot` (functions bound as its methods): M, C, g,
nle, inverse and forward dynamics, each one Pinocchio call after the state check. Pinocchio
(4.x) returns fresh arrays from these calls, not views of ``data``: they are handed out
without a copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from ..errors import StateError
from ._checks import as_state_vector
from ._state import State, _state_of

if TYPE_CHECKING:
    from wholebody.robot.core import Robot

Array = NDArray[np.float64]
#: External wrenches: frame name -> world-axes wrench ``(f, tau)`` at the frame origin, shape
#: (6,), or a force alone, shape (3,) [N, N m]. :class:`wholebody.Wrench` values are accepted
#: too and moved to the frame origin.
External = Mapping[str, Any]

_crba = pin.crba
_coriolis_matrix = pin.computeCoriolisMatrix
_gravity = pin.computeGeneralizedGravity
_nle = pin.nonLinearEffects
_rnea = pin.rnea
_aba = pin.aba


@dataclass(frozen=True)
class TorqueTerms:
    """The generalized forces of one state, split by origin (seed 001).

    ``total = inertial + coriolis + gravity + external`` is the actuation ``S^T tau`` that
    produces the motion. Each array has shape (nv,), [N m] for revolute joints and [N] for
    prismatic ones and the base's linear part.

    Attributes
    ----------
    inertial : ``M(q) a``.
    coriolis : ``C(q, v) v``, Coriolis and centripetal.
    gravity : ``g(q)``, generalized gravity to compensate.
    external : ``-sum_i J_i^T w_i``, what the actuators must add because of the external
        wrenches (the seed's ``E``).
    total : the sum of the four.
    """

    inertial: Array
    coriolis: Array
    gravity: Array
    external: Array

    @property
    def total(self) -> Array:
        """``inertial + coriolis + gravity + external``, shape (nv,)."""
        return self.inertial + self.coriolis + self.gravity + self.external


def mass_matrix(robot: Robot, q: ArrayLike | State) -> Array:
    """Joint-space inertia matrix ``M(q)``, shape (nv, nv), symmetric positive definite.

    Units: [kg] for translations, [kg m^2] for rotations, [kg m] for the mixed blocks.
    """
    q = robot._check_q(q)
    M = _crba(robot._model, robot._data, q)
    if robot._crba_upper_only:
        np.copyto(M, M.T, where=robot._lower_mask)
    return M


def coriolis_matrix(robot: Robot, q: ArrayLike | State, v: ArrayLike | None = None) -> Array:
    """Coriolis matrix ``C(q, v)``, shape (nv, nv), with ``dM/dt - 2 C`` skew-symmetric."""
    q, v = robot._check_qv(q, v)
    return _coriolis_matrix(robot._model, robot._data, q, v)


def coriolis(robot: Robot, q: ArrayLike | State, v: ArrayLike | None = None) -> Array:
    """Coriolis and centripetal generalized forces ``C(q, v) v``, shape (nv,).

    Computed in one pass: ``rnea(q, v, 0)`` on a copy of the model without gravity,
    made at the first call (the robot's model is never modified; like :attr:`mass`, the
    copy does not follow later edits of the model's inertias or joints made through
    :attr:`model` directly).
    """
    q, v = robot._check_qv(q, v)
    if robot._nograv is None:
        model = pin.Model(robot._model)
        model.gravity = pin.Motion.Zero()
        robot._nograv = (model, model.createData())
    return _rnea(robot._nograv[0], robot._nograv[1], q, v, robot._zero_v)


def gravity(robot: Robot, q: ArrayLike | State) -> Array:
    """Generalized gravity to compensate ``g(q)``, shape (nv,).

    ``tau = g(q)`` holds the robot still; the seeds' gravity torque is ``-g(q)``.
    """
    q = robot._check_q(q)
    return _gravity(robot._model, robot._data, q)


def nonlinear_effects(robot: Robot, q: ArrayLike | State, v: ArrayLike | None = None) -> Array:
    """``h = C(q, v) v + g(q)``, shape (nv,)."""
    q, v = robot._check_qv(q, v)
    return _nle(robot._model, robot._data, q, v)


def _external(robot: Robot, q: Array, external_wrenches: External) -> Array:
    """``sum_i J_i(q)^T w_i`` of :data:`External` wrenches at a checked ``q``, shape (nv,)."""
    out = np.zeros(robot.nv)
    if not external_wrenches:
        return out
    pin.computeJointJacobians(robot._model, robot._data, q)
    pin.updateFramePlacements(robot._model, robot._data)
    for frame, wrench in external_wrenches.items():
        fid = robot.frame_id(frame)
        w = robot._wrench_at_frame(wrench, fid, frame)
        J = pin.getFrameJacobian(robot._model, robot._data, fid, pin.LOCAL_WORLD_ALIGNED)
        out += J.T @ w
    return out


def _wrench_at_frame(robot: Robot, wrench: Any, fid: int, frame: str) -> Array:
    if hasattr(wrench, "shift_to") and hasattr(wrench, "as_vector"):
        origin = robot._data.oMf[fid].translation
        return np.asarray(wrench.shift_to(origin).as_vector(), dtype=float)
    try:
        w = np.asarray(wrench, dtype=float)
    except (TypeError, ValueError) as exc:
        raise StateError(f"external wrench on frame {frame!r} must be numbers: {exc}") from None
    if w.shape == (3,):
        w = np.concatenate([w, np.zeros(3)])
    if w.shape != (6,):
        raise StateError(
            f"external wrench on frame {frame!r} must have shape (6,) (f, tau) or (3,), "
            f"got {w.shape}"
        )
    if not np.all(np.isfinite(w)):
        raise StateError(f"external wrench on frame {frame!r} is not finite: {w}")
    return w


def inverse_dynamics(
    robot: Robot,
    q: ArrayLike | State,
    v: ArrayLike | None = None,
    a: ArrayLike | None = None,
    external_wrenches: External | None = None,
) -> Array:
    """Generalized forces that produce ``a``: ``M a + C v + g - sum J_i^T w_i``, shape (nv,).

    With a floating base, the first six entries are the base wrench that the
    unmodelled contacts would have to supply (base frame, at the base origin).

    Parameters
    ----------
    q, v, a : arrays of shape (nq,), (nv,), (nv,)
        State and acceleration (Pinocchio's layout, base parts in the base frame); or ``q``
        a :class:`~wholebody.robot.State` holding all three (``v``, ``a`` not given).
    external_wrenches : mapping of str to wrench, optional
        Frame name -> wrench, see :data:`~wholebody.robot.External`.

    Examples
    --------
    At rest, the base rows are the weight the contacts must carry (base frame, [N]):

    >>> import numpy as np, wholebody
    >>> robot = wholebody.load("humanoid")
    >>> zero = np.zeros(robot.nv)
    >>> tau = robot.inverse_dynamics(robot.neutral(), zero, zero)
    >>> np.round(tau[:3], 1)
    array([  0. ,   0. , 644.5])
    >>> bool(np.isclose(tau[2], robot.weight))
    True
    """
    q, v, a = robot._check_qva(q, v, a)
    tau: Array = _rnea(robot._model, robot._data, q, v, a)
    if external_wrenches:
        tau -= _external(robot, q, external_wrenches)
    return tau


def forward_dynamics(
    robot: Robot,
    q: ArrayLike | State,
    v: ArrayLike | None = None,
    tau: ArrayLike | None = None,
    external_wrenches: External | None = None,
) -> Array:
    """Acceleration from generalized forces: ``M^-1 (tau + sum J_i^T w_i - C v - g)``.

    ``q``, ``v`` as in :meth:`inverse_dynamics` (``q`` a State holding ``v``: ``v`` not
    given); ``tau`` has shape (nv,), and with a floating base its first six entries are
    usually 0. Returns ``a``, shape (nv,) [m/s^2, rad/s^2].
    """
    q, v = robot._check_qv(q, v)
    tau = as_state_vector(tau, robot._nv, "tau")  # type: ignore[arg-type]
    if external_wrenches:
        tau = tau + _external(robot, q, external_wrenches)
    return _aba(robot._model, robot._data, q, v, tau)


def torque_terms(
    robot: Robot,
    q: ArrayLike | State,
    v: ArrayLike | None = None,
    a: ArrayLike | None = None,
    external_wrenches: External | None = None,
) -> TorqueTerms:
    """Split the inverse dynamics into inertial, Coriolis, gravity and external parts.

    Arguments as in :meth:`inverse_dynamics`.
    """
    q, v, a = robot._check_qva(q, v, a)
    s = _state_of(robot, q, v, a)  # checked once, handed on
    return TorqueTerms(
        inertial=robot.mass_matrix(s) @ a,
        coriolis=robot.coriolis(s),
        gravity=robot.gravity(s),
        external=-_external(robot, q, external_wrenches or {}),
    )


def joint_wrenches(
    robot: Robot,
    q: ArrayLike | State,
    v: ArrayLike | None = None,
    a: ArrayLike | None = None,
    external_wrenches: External | None = None,
) -> tuple[Array, Array]:
    """Wrench each joint transmits from its parent to its child subtree.

    Computed by the recursive Newton-Euler algorithm with the external wrenches acting
    on their frames' bodies. With a floating base, the first row is what the world would
    have to apply to the base for the motion to happen: zero when the external wrenches
    are consistent with the motion.

    Parameters
    ----------
    q, v, a : as in :meth:`inverse_dynamics`
    external_wrenches : mapping of str to wrench, optional
        Frame name -> wrench, see :data:`~wholebody.robot.External`.

    Returns
    -------
    wrenches : ndarray, shape (njoints, 6)
        ``(f, tau)`` world axes, about each joint's centre, in model order (the floating
        base first, then :attr:`joint_names`) [N, N m].
    centres : ndarray, shape (njoints, 3)
        The joint centres in world coordinates [m].
    """
    q, v, a = robot._check_qva(q, v, a)
    m, d = robot._model, robot._data
    pin.framesForwardKinematics(m, d, q)
    fext = [pin.Force.Zero() for _ in range(m.njoints)]
    for frame, wrench in (external_wrenches or {}).items():
        fid = robot.frame_id(frame)
        w = robot._wrench_at_frame(wrench, fid, frame)
        origin = d.oMf[fid].translation
        # The same wrench about the world origin, then in the joint's local frame.
        at_world_origin = pin.Force(w[:3], w[3:] + np.cross(origin, w[:3]))
        j = m.frames[fid].parentJoint
        fext[j] += d.oMi[j].actInv(at_world_origin)
    pin.rnea(m, d, q, v, a, fext)
    wrenches = np.empty((m.njoints - 1, 6))
    centres = np.empty((m.njoints - 1, 3))
    for j in range(1, m.njoints):
        R = d.oMi[j].rotation
        wrenches[j - 1, :3] = R @ d.f[j].linear
        wrenches[j - 1, 3:] = R @ d.f[j].angular
        centres[j - 1] = d.oMi[j].translation
    return wrenches, centres
