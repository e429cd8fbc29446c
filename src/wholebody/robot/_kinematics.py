"""The kinematics part of :class:`wholebody.Robot`: frames, centre of mass, momentum, and the
one-pass helpers of balance and estimation (functions of the robot, bound as its methods in
:mod:`wholebody.robot.core`).

Motions and forces that Pinocchio returns by value expose ``.vector`` as a view into the
temporary object: those are copied before they are returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidArgumentError
from ._state import State
from .batch import frame_placements_rows

if TYPE_CHECKING:
    from wholebody.robot.core import Robot

Array = NDArray[np.float64]
_LWA = pin.LOCAL_WORLD_ALIGNED
_frame_jacobian = pin.computeFrameJacobian
_fk = pin.forwardKinematics
_frame_velocity = pin.getFrameVelocity
_frame_acc = pin.getFrameClassicalAcceleration
_com = pin.centerOfMass
_com_jacobian = pin.jacobianCenterOfMass
_momentum = pin.computeCentroidalMomentum
_momentum_rate = pin.computeCentroidalMomentumTimeVariation
_update_frame = pin.updateFramePlacement


@dataclass(frozen=True)
class ContactPass:
    """What one Pinocchio pass gives contact estimation (see :meth:`Robot.contact_pass`).

    Attributes
    ----------
    com : ndarray, shape (3,)
        Centre of mass, world [m].
    momentum_rate : ndarray, shape (6,)
        ``(dP/dt, dL_G/dt)`` at the CoM, world axes [N, N m].
    positions : ndarray, shape (k, 3)
        Frame origins, world [m].
    rotations : ndarray, shape (k, 3, 3)
        Frame orientations (world from frame).
    inverse_dynamics : ndarray, shape (nv,), or None
        ``rnea(q, v, a)`` when asked for.
    jacobians : ndarray, shape (k, 6, nv), or None
        ``LOCAL_WORLD_ALIGNED`` frame Jacobians when asked for.
    """

    com: Array
    momentum_rate: Array
    positions: Array
    rotations: Array
    inverse_dynamics: Array | None
    jacobians: Array | None


# --- frames -----------------------------------------------------------------------------


class FramePlacements(NamedTuple):
    """Frame placements of one sample or N (:meth:`Robot.placements`): ``(positions,
    rotations, flagged, reasons)``.

    Shapes follow the call: a leading N axis for N samples, a frame axis (k) for a sequence
    of frames, neither for one sample of one frame.

    Attributes
    ----------
    positions : ndarray, shape ([N,] [k,] 3)
        Frame origins in world coordinates [m]; NaN on flagged samples.
    rotations : ndarray, shape ([N,] [k,] 3, 3)
        World-from-frame rotations; NaN on flagged samples.
    flagged : bool or ndarray of bool, shape (N,)
        Samples that fail the state checks; always False for one sample (bad input raises).
    reasons : dict of int to str
        Why each flagged sample is flagged; empty for one sample.
    """

    positions: Array
    rotations: Array
    flagged: Any
    reasons: dict[int, str]

    @property
    def is_batch(self) -> bool:
        """True for N samples, False for one."""
        return isinstance(self.flagged, np.ndarray)

    def se3(self, *index: int) -> pin.SE3:
        """One placement as a ``pinocchio.SE3`` (a copy), by its index on the leading axes:
        ``se3()`` for one sample of one frame, ``se3(j)`` for frame ``j`` of one sample or
        sample ``j`` of one frame, ``se3(i, j)`` for sample ``i``, frame ``j``.

        Raises
        ------
        InvalidArgumentError
            The index does not name one placement.
        """
        try:
            p, R = self.positions[index], self.rotations[index]
        except IndexError as exc:
            raise InvalidArgumentError(f"se3{index}: {exc}") from None
        if p.shape != (3,):
            raise InvalidArgumentError(
                f"se3{index} names {p.size // 3} placements, not one: give "
                f"{self.positions.ndim - 1} indices"
            )
        return pin.SE3(R, p)


# The generated constructor names this module, so that its annotations resolve here (the API
# reference reads them).
FramePlacements.__new__.__module__ = __name__


def placements(robot: Robot, q: ArrayLike | State, frames: str | Sequence[str]) -> FramePlacements:
    """Placements of frames for one configuration or N, in one call.

    Like SciPy's ``Rotation``, the shape says which: ``q`` of shape (nq,) (or a
    :class:`~wholebody.robot.State`) is one sample (bad input raises, as in :meth:`state`),
    (N, nq) is N samples (bad samples flagged with a reason and NaN, the others placed, as
    :meth:`check_batch` flags them). The result says which it holds
    (:attr:`FramePlacements.is_batch`). One forward-kinematics pass per sample, then each
    frame.

    Parameters
    ----------
    q : array, shape (nq,) or (N, nq), or State
        Configurations.
    frames : str or sequence of str
        One frame (no frame axis in the result) or several (axis k).

    Returns
    -------
    FramePlacements
        ``(positions, rotations, flagged, reasons)``: positions of shape ([N,] [k,] 3),
        world [m]; rotations ([N,] [k,] 3, 3), world from frame. One placement as a
        ``pinocchio.SE3``: ``placements(q, frame).se3()``.

    Raises
    ------
    StateError
        One sample: a bad ``q``. N samples: ``q`` not of shape (N, nq).
    FrameNotFoundError
        An unknown frame name.

    Examples
    --------
    The soles of the humanoid standing at the origin, once and over three samples (the
    second with a zero quaternion, flagged):

    >>> import numpy as np, wholebody
    >>> robot = wholebody.load("humanoid")
    >>> one = robot.placements(robot.neutral(), ["left_sole", "right_sole"])
    >>> one.is_batch, one.positions.shape, np.round(one.positions[:, 1], 3)
    (False, (2, 3), array([ 0.09, -0.09]))
    >>> Q = np.tile(robot.neutral(), (3, 1))
    >>> Q[1, 3:7] = 0.0
    >>> many = robot.placements(Q, "left_sole")
    >>> many.is_batch, many.positions.shape, many.flagged.tolist(), many.reasons
    (True, (3, 3), [False, True, False], {1: 'base quaternion is zero'})
    >>> np.round(many.se3(2).translation, 3)
    array([ 0.03,  0.09, -0.94])
    """
    one_frame = isinstance(frames, str)
    if isinstance(frames, str):
        ids = [robot.frame_id(frames)]
    elif isinstance(frames, Sequence):
        ids = [robot.frame_id(f) for f in frames]
    else:
        raise robot._frame_error(frames)
    x: Any = q
    if type(x) is State or np.ndim(x) == 1:  # one sample: its own path, no N axis
        x = robot._check_q(x)
        m, d = robot._model, robot._data
        _fk(m, d, x)  # the joints, then each frame
        if one_frame:
            M = _update_frame(m, d, ids[0])
            return FramePlacements(M.translation.copy(), M.rotation.copy(), False, {})
        placed = [_update_frame(m, d, fid) for fid in ids]
        positions = np.array([p.translation for p in placed])
        return FramePlacements(positions, np.array([p.rotation for p in placed]), False, {})
    arrays, flagged, reasons = robot.check_batch(q=x)
    Q = arrays["q"]
    N, k = Q.shape[0], len(ids)
    positions = np.full((N, k, 3), np.nan)
    rotations = np.full((N, k, 3, 3), np.nan)
    frame_placements_rows(robot, Q, np.flatnonzero(~flagged).tolist(), ids, positions, rotations)
    if one_frame:
        positions, rotations = positions[:, 0], rotations[:, 0]
    return FramePlacements(positions, rotations, flagged, reasons)


def frame_position(robot: Robot, q: ArrayLike | State, frame: str) -> Array:
    """Origin of a frame in world coordinates, shape (3,) [m] (:meth:`placements`' position)."""
    return robot.placements(q, frame).positions


def frame_jacobian(robot: Robot, q: ArrayLike | State, frame: str) -> Array:
    """Frame Jacobian, shape (6, nv), ``LOCAL_WORLD_ALIGNED``.

    Rows ``(v, omega)``: velocity of the frame origin and angular velocity, world axes
    [m/s, rad/s per unit of v].

    Examples
    --------
    >>> import wholebody
    >>> robot = wholebody.load("humanoid")
    >>> J = robot.frame_jacobian(robot.neutral(), "left_sole")
    >>> J.shape  # (v, omega) rows, one column per velocity
    (6, 25)
    """
    try:
        fid = robot._frame_ids[frame]
    except (KeyError, TypeError):
        raise robot._frame_error(frame) from None
    q = robot._check_q(q)
    # computeFrameJacobian returns a new matrix (not a view of data): no copy needed.
    return _frame_jacobian(robot._model, robot._data, q, fid, _LWA)


def frame_velocity(
    robot: Robot, q: ArrayLike | State, v: ArrayLike | None = None, frame: str | None = None
) -> Array:
    """Twist ``(v, omega)`` of the frame origin, world axes, shape (6,) [m/s, rad/s].

    ``robot.frame_velocity(q, v, frame)``, or ``robot.frame_velocity(state, frame=frame)``
    with a :class:`~wholebody.robot.State` holding ``v``.
    """
    fid = robot.frame_id(frame)  # type: ignore[arg-type]
    q, v = robot._check_qv(q, v)
    _fk(robot._model, robot._data, q, v)
    return _frame_velocity(robot._model, robot._data, fid, _LWA).vector.copy()


def frame_drift(
    robot: Robot, q: ArrayLike | State, v: ArrayLike | None = None, frame: str | None = None
) -> Array:
    """``dJ/dt v`` of :meth:`frame_jacobian`, shape (6,) [m/s^2, rad/s^2].

    The classical acceleration of the frame origin (and angular acceleration), world
    axes, when ``a = 0``: the frame's acceleration is ``J a + frame_drift``. Arguments as
    in :meth:`frame_velocity`.
    """
    fid = robot.frame_id(frame)  # type: ignore[arg-type]
    q, v = robot._check_qv(q, v)
    m, d = robot._model, robot._data
    _fk(m, d, q, v, robot._zero_v)
    return _frame_acc(m, d, fid, _LWA).vector.copy()


# --- centre of mass and momentum --------------------------------------------------------


def com(robot: Robot, q: ArrayLike | State) -> Array:
    """Centre of mass in world coordinates, shape (3,) [m].

    Examples
    --------
    >>> import wholebody
    >>> robot = wholebody.load("humanoid")
    >>> robot.com(robot.neutral()).round(3)
    array([ 0.001,  0.   , -0.004])
    """
    q = robot._check_q(q)
    return _com(robot._model, robot._data, q, False)


def com_jacobian(robot: Robot, q: ArrayLike | State) -> Array:
    """Jacobian of the CoM velocity in world axes, shape (3, nv)."""
    q = robot._check_q(q)
    return _com_jacobian(robot._model, robot._data, q, False)


def centroidal_momentum(robot: Robot, q: ArrayLike | State, v: ArrayLike | None = None) -> Array:
    """Momentum at the CoM, world axes: ``(P, L_G)``, shape (6,) [kg m/s, kg m^2/s]."""
    q, v = robot._check_qv(q, v)
    return _momentum(robot._model, robot._data, q, v).vector.copy()


def centroidal_momentum_rate(
    robot: Robot, q: ArrayLike | State, v: ArrayLike | None = None, a: ArrayLike | None = None
) -> Array:
    """Rate of the momentum at the CoM, world axes: ``(dP/dt, dL_G/dt)``, shape (6,).

    Units [N, N m]. ``dP/dt = m * (CoM acceleration)``. Arguments as in
    :meth:`inverse_dynamics`.
    """
    q, v, a = robot._check_qva(q, v, a)
    return _momentum_rate(robot._model, robot._data, q, v, a).vector.copy()


# --- passes of balance and estimation -----------------------------------------------------


def _centroidal_sample(
    robot: Robot, q: Array, v: Array, a: Array, frame_ids: Sequence[int]
) -> tuple[list[float], list[float], list[list[float]]]:
    """One checked state's CoM (3), momentum rate ``(dP/dt, dL_G/dt)`` (6) and frame origins
    (k lists of 3) as Python floats, the input of the one-sample algebra of
    :mod:`wholebody.balance`; ``frame_ids`` come from :meth:`frame_id` (not checked again)."""
    m, d = robot._model, robot._data
    com, dhg = robot._data_views
    _momentum_rate(m, d, q, v, a)  # also places the joints
    return (
        com[0].tolist(),
        dhg.vector.tolist(),
        [_update_frame(m, d, fid).translation.tolist() for fid in frame_ids],
    )


def contact_pass(
    robot: Robot,
    q: Array,
    v: Array,
    a: Array,
    frame_ids: list[int] | tuple[int, ...],
    *,
    jacobians: bool,
) -> ContactPass:
    """One Pinocchio pass for contact estimation on a checked state (``q``, ``v``, ``a`` are
    not checked here): CoM, momentum rate, frame origins and orientations; with
    ``jacobians``, also ``rnea(q, v, a)`` and the frames' ``LOCAL_WORLD_ALIGNED`` Jacobians.

    Raises
    ------
    InvalidArgumentError
        A frame id that is not an int in ``[0, nframes)``.
    """
    ids = robot._check_frame_ids(frame_ids)
    m, d = robot._model, robot._data
    _momentum_rate(m, d, q, v, a)
    k = len(ids)
    positions, rotations = np.empty((k, 3)), np.empty((k, 3, 3))
    for i, fid in enumerate(ids):
        placement = _update_frame(m, d, fid)
        positions[i], rotations[i] = placement.translation, placement.rotation
    com, rate = d.com[0].copy(), d.dhg.vector.copy()
    tau = J = None
    if jacobians:
        tau = pin.rnea(m, d, q, v, a)
        pin.computeJointJacobians(m, d, q)
        J = np.empty((k, 6, m.nv))
        for i, fid in enumerate(ids):
            J[i] = pin.getFrameJacobian(m, d, fid, _LWA)
    return ContactPass(com, rate, positions, rotations, tau, J)
