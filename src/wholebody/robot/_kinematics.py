"""The kinematics part of :class:`wholebody.Robot`: frames, centre of mass, momentum, and the
one-pass helpers used by balance and estimation: functions of the robot, bound as its methods
in :mod:`wholebody.robot.core`.

Frames are named by strings and resolved through a dictionary built once; frame indices
given to the passes are checked against the model (Pinocchio aborts on an index out of
range).

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


def _fid(robot: Robot, frame: str) -> int:
    try:
        return robot._frame_ids[frame]
    except (KeyError, TypeError):
        raise robot._frame_error(frame) from None


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


def placements(robot: Robot, q: ArrayLike, frames: str | Sequence[str]) -> FramePlacements:
    """Placements of frames for one configuration or N, in one call.

    Like SciPy's ``Rotation``, the shape says which: ``q`` of shape (nq,) is one sample (bad
    input raises, as in :meth:`check_q`), (N, nq) is N samples (bad samples flagged with a
    reason and NaN, the others placed, as :meth:`check_batch` flags them). The result says
    which it holds (:attr:`FramePlacements.is_batch`). One forward-kinematics pass per
    sample, then each frame.

    Parameters
    ----------
    q : array, shape (nq,) or (N, nq)
        Configurations.
    frames : str or sequence of str
        One frame (no frame axis in the result) or several (axis k).

    Returns
    -------
    FramePlacements
        ``(positions, rotations, flagged, reasons)``: positions of shape ([N,] [k,] 3),
        world [m]; rotations ([N,] [k,] 3, 3), world from frame.

    Raises
    ------
    StateError
        One sample: a bad ``q``. N samples: ``q`` not of shape (N, nq).
    FrameNotFoundError
        An unknown frame name.

    Notes
    -----
    The names of earlier releases stay: :meth:`frame_placement` (one sample, one frame, a
    ``pinocchio.SE3``: ``placements(q, frame).se3()``) and :meth:`frame_placements` (always
    N samples, ``(positions, rotations)``; a (nq,) ``q`` is N = 1).

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
    names = [frames] if isinstance(frames, str) else list(frames)
    ids = [robot.frame_id(f) for f in names]
    Q = np.asarray(q, dtype=float) if not isinstance(q, np.ndarray) else q
    if Q.ndim == 1:
        Q = robot.check_q(Q)[None]
        flagged: Any = False
        reasons: dict[int, str] = {}
        rows: Any = [0]
    else:
        arrays, flagged, reasons = robot.check_batch(q=Q)
        Q = arrays["q"]
        rows = np.flatnonzero(~flagged).tolist()
    N, k = Q.shape[0], len(ids)
    positions = np.full((N, k, 3), np.nan)
    rotations = np.full((N, k, 3, 3), np.nan)
    frame_placements_rows(robot, Q, rows, ids, positions, rotations)
    if one_frame:
        positions, rotations = positions[:, 0], rotations[:, 0]
    if not isinstance(flagged, np.ndarray):
        positions, rotations = positions[0], rotations[0]
    return FramePlacements(positions, rotations, flagged, reasons)


def frame_placement(robot: Robot, q: ArrayLike, frame: str) -> pin.SE3:
    """Pose of a frame in the world, ``oMf`` (a copy): rotation world-from-frame and
    origin in world coordinates [m].

    The one-sample, one-frame form of :meth:`placements`, kept under this name of earlier
    releases (``placements(q, frame).se3()``, on its own fast path)."""
    try:
        fid = robot._frame_ids[frame]
    except (KeyError, TypeError):
        raise robot._frame_error(frame) from None
    q = robot.check_q(q)
    pin.forwardKinematics(robot._model, robot._data, q)  # the joints, then this frame only
    return pin.SE3(pin.updateFramePlacement(robot._model, robot._data, fid))


def frame_placements(
    robot: Robot, q: ArrayLike, frames: Sequence[str], *, progress: bool = False
) -> tuple[Array, Array]:
    """Poses of several frames over a whole log: one forward-kinematics pass per sample.

    The N-sample form of :meth:`placements`, kept under this name of earlier releases: it
    always has the N axis (a single (nq,) ``q`` is N = 1) and gives the two arrays alone.

    Parameters
    ----------
    q : array, shape (N, nq)
        Configurations (a single (nq,) one is taken as N = 1).
    frames : sequence of str
        Frame names.
    progress : bool
        A progress bar over the samples.

    Returns
    -------
    positions : ndarray, shape (N, k, 3)
        Frame origins in world coordinates [m]; NaN on samples that fail the state checks.
    rotations : ndarray, shape (N, k, 3, 3)
        World-from-frame rotations; NaN likewise.
    """
    ids = [robot.frame_id(f) for f in frames]
    Q = np.asarray(q, dtype=float)
    if Q.ndim == 1:
        Q = Q[None]
    arrays, bad, _ = robot.check_batch(q=Q)
    Q = arrays["q"]
    N, k = Q.shape[0], len(ids)
    positions = np.full((N, k, 3), np.nan)
    rotations = np.full((N, k, 3, 3), np.nan)
    rows: Any = np.flatnonzero(~bad).tolist()
    if progress:
        from ..parallel import progress_bar

        rows = progress_bar(rows, desc="frames", total=len(rows))
    frame_placements_rows(robot, Q, rows, ids, positions, rotations)
    return positions, rotations


def com_and_frame_positions(
    robot: Robot, q: Array, frame_ids: Sequence[int]
) -> tuple[Array, Array]:
    """CoM and frame origins of a checked ``q``, without the momentum work of
    :meth:`centroidal_pass` (positions only; ids as in :meth:`centroidal_pass`).

    Returns
    -------
    com : ndarray, shape (3,)
        World [m].
    positions : ndarray, shape (len(frame_ids), 3)
        World [m].
    """
    ids = robot._check_frame_ids(frame_ids)
    m, d = robot._model, robot._data
    com = np.array(pin.centerOfMass(m, d, q))  # also places the joints
    positions = np.empty((len(ids), 3))
    for j, fid in enumerate(ids):
        positions[j] = pin.updateFramePlacement(m, d, fid).translation
    return com, positions


def frame_position(robot: Robot, q: ArrayLike, frame: str) -> Array:
    """Origin of a frame in world coordinates, shape (3,) [m]."""
    return np.array(robot.frame_placement(q, frame).translation)


def frame_jacobian(robot: Robot, q: ArrayLike, frame: str) -> Array:
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
    q = robot.check_q(q)
    # computeFrameJacobian returns a new matrix (not a view of data): no copy needed.
    return _frame_jacobian(robot._model, robot._data, q, fid, _LWA)


def point_jacobian(robot: Robot, q: ArrayLike, frame: str) -> Array:
    """Jacobian of the frame origin's velocity in world axes, shape (3, nv)."""
    return robot.frame_jacobian(q, frame)[:3]


def frame_velocity(robot: Robot, q: ArrayLike, v: ArrayLike, frame: str) -> Array:
    """Twist ``(v, omega)`` of the frame origin, world axes, shape (6,) [m/s, rad/s]."""
    fid = robot._fid(frame)
    q, v = robot._check_qv(q, v)
    _fk(robot._model, robot._data, q, v)
    return _frame_velocity(robot._model, robot._data, fid, _LWA).vector.copy()


def frame_drift(robot: Robot, q: ArrayLike, v: ArrayLike, frame: str) -> Array:
    """``dJ/dt v`` of :meth:`frame_jacobian`, shape (6,) [m/s^2, rad/s^2].

    The classical acceleration of the frame origin (and angular acceleration), world
    axes, when ``a = 0``: the frame's acceleration is ``J a + frame_drift``.
    """
    try:
        fid = robot._frame_ids[frame]
    except (KeyError, TypeError):
        raise robot._frame_error(frame) from None
    q, v = robot._check_qv(q, v)
    m, d = robot._model, robot._data
    _fk(m, d, q, v, robot._zero_v)
    return _frame_acc(m, d, fid, _LWA).vector.copy()


# --- centre of mass and momentum --------------------------------------------------------


def com(robot: Robot, q: ArrayLike) -> Array:
    """Centre of mass in world coordinates, shape (3,) [m].

    Examples
    --------
    >>> import wholebody
    >>> robot = wholebody.load("humanoid")
    >>> robot.com(robot.neutral()).round(3)
    array([ 0.001,  0.   , -0.004])
    """
    q = robot.check_q(q)
    return _com(robot._model, robot._data, q, False)


def com_jacobian(robot: Robot, q: ArrayLike) -> Array:
    """Jacobian of the CoM velocity in world axes, shape (3, nv)."""
    q = robot.check_q(q)
    return _com_jacobian(robot._model, robot._data, q, False)


def centroidal_momentum(robot: Robot, q: ArrayLike, v: ArrayLike) -> Array:
    """Momentum at the CoM, world axes: ``(P, L_G)``, shape (6,) [kg m/s, kg m^2/s]."""
    q, v = robot._check_qv(q, v)
    return _momentum(robot._model, robot._data, q, v).vector.copy()


def centroidal_momentum_rate(robot: Robot, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> Array:
    """Rate of the momentum at the CoM, world axes: ``(dP/dt, dL_G/dt)``, shape (6,).

    Units [N, N m]. ``dP/dt = m * (CoM acceleration)``.
    """
    q, v, a = robot._check_qva(q, v, a)
    return _momentum_rate(robot._model, robot._data, q, v, a).vector.copy()


# --- passes used by the balance and estimation modules ---------------------------------


def centroidal_pass(
    robot: Robot,
    q: Array,
    v: Array,
    a: Array,
    frame_ids: list[int] | tuple[int, ...],
    out: tuple[Array, Array, Array] | None = None,
    rotations: Array | None = None,
) -> tuple[Array, Array, Array]:
    """One Pinocchio pass: CoM, momentum rate at the CoM and frame origins.

    The hot path of batch work: ``q``, ``v``, ``a`` are **not checked** here (callers
    check whole arrays at once with :meth:`check_batch`). Frame ids come from
    :meth:`frame_id`; they are checked against the model (the last sequence found valid
    is remembered, so a repeated one costs one comparison).

    Parameters
    ----------
    q, v, a : ndarray, shapes (nq,), (nv,), (nv,)
        A checked state.
    frame_ids : sequence of int
        Frame indices, each in ``[0, nframes)``.
    out : (com, momentum_rate, frame_positions), optional
        Arrays of the shapes below to write into (rows of batch arrays), saving the
        allocation of new ones.
    rotations : ndarray, shape (len(frame_ids), 3, 3), optional
        Also write the frames' orientations (world from frame) here.

    Returns
    -------
    com : ndarray, shape (3,)
        Centre of mass, world [m].
    momentum_rate : ndarray, shape (6,)
        ``(dP/dt, dL_G/dt)`` at the CoM, world axes [N, N m].
    frame_positions : ndarray, shape (len(frame_ids), 3)
        Origins of the frames, world [m].

    Raises
    ------
    InvalidArgumentError
        A frame id that is not an int in ``[0, nframes)``.
    """
    ids = robot._check_frame_ids(frame_ids)
    m, d = robot._model, robot._data
    if out is None:
        out = (np.empty(3), np.empty(6), np.empty((len(ids), 3)))
    com, rate, positions = out
    _momentum_rate(m, d, q, v, a)  # also places the joints
    com[:] = d.com[0]
    rate[:] = d.dhg.vector
    if rotations is None:
        for k, fid in enumerate(ids):
            positions[k] = _update_frame(m, d, fid).translation
    else:
        for k, fid in enumerate(ids):
            placement = _update_frame(m, d, fid)
            positions[k] = placement.translation
            rotations[k] = placement.rotation
    return out


def _centroidal_sample(
    robot: Robot, q: Array, v: Array, a: Array, frame_ids: Sequence[int]
) -> tuple[list[float], list[float], list[list[float]]]:
    """:meth:`centroidal_pass` of one checked state as Python floats (the input of the
    one-sample algebra): CoM (3), momentum rate (6), frame origins (k lists of 3).

    ``frame_ids`` must be valid ids (from :meth:`frame_id`, as its one caller,
    :func:`wholebody.balance.newton_euler_residual`, takes them): they are not checked again.
    """
    m, d = robot._model, robot._data
    views = robot._data_views  # (data, data.com, data.dhg), made with the Data
    _momentum_rate(m, d, q, v, a)  # also places the joints
    return (
        views[1][0].tolist(),
        views[2].vector.tolist(),
        [_update_frame(m, d, fid).translation.tolist() for fid in frame_ids],
    )


def _frame_sample(robot: Robot, q: ArrayLike, frame: str) -> tuple[list[list[float]], list[float]]:
    """:meth:`frame_placement` as Python floats: rotation (3 rows of 3, world from frame)
    and origin (3) [m]; ``q`` is checked."""
    try:
        fid = robot._frame_ids[frame]
    except (KeyError, TypeError):
        raise robot._frame_error(frame) from None
    q = robot.check_q(q)
    m, d = robot._model, robot._data
    _fk(m, d, q)  # the joints, then this frame only
    placement = _update_frame(m, d, fid)
    return placement.rotation.tolist(), placement.translation.tolist()


def _momentum_rate_sample(
    robot: Robot, q: Array, v: Array, a: Array
) -> tuple[list[float], list[float]]:
    """CoM (3) and momentum rate ``(dP/dt, dL_G/dt)`` (6) of one checked state as Python
    floats: one Pinocchio pass, read through views of ``data`` made once per ``Data``."""
    m, d = robot._model, robot._data
    views = robot._data_views
    _momentum_rate(m, d, q, v, a)
    return views[1][0].tolist(), views[2].vector.tolist()


def _gravito_inertial_sample(robot: Robot, q: Array, v: Array, a: Array) -> tuple[Array, Array]:
    """CoM (3,) and ``(m g - dP/dt, -dL_G/dt)`` (6,), world axes, of one checked state:
    one Pinocchio pass and one subtraction from ``(m g, 0)``."""
    m, d = robot._model, robot._data
    views = robot._data_views
    _momentum_rate(m, d, q, v, a)
    return views[1][0].copy(), np.subtract(robot._mg6, views[2].vector)


def _com_sample(
    robot: Robot, q: Array, frame_ids: Sequence[int]
) -> tuple[list[float], list[list[float]]]:
    """:meth:`com_and_frame_positions` of one checked ``q`` as Python floats."""
    ids = robot._check_frame_ids(frame_ids)
    m, d = robot._model, robot._data
    com = _com(m, d, q, False).tolist()  # also places the joints
    return com, [_update_frame(m, d, fid).translation.tolist() for fid in ids]


def contact_pass(
    robot: Robot,
    q: Array,
    v: Array,
    a: Array,
    frame_ids: list[int] | tuple[int, ...],
    *,
    jacobians: bool,
) -> ContactPass:
    """One pass for contact estimation (unchecked states, like :meth:`centroidal_pass`).

    Always: CoM, momentum rate, frame origins and orientations. With ``jacobians``:
    also ``rnea(q, v, a)`` and the frames' ``LOCAL_WORLD_ALIGNED`` Jacobians. Frame ids
    are checked as in :meth:`centroidal_pass`.
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


def _frame_ids_of(robot: Robot, frames: Any) -> list[int]:
    """Frame names resolved to ids (each checked)."""
    if isinstance(frames, str):
        frames = [frames]
    return [robot._fid(f) for f in frames]
