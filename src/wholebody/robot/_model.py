"""The model part of :class:`wholebody.Robot`: names, frame ids, added frames, summary.

Functions of the robot (bound as its methods in :mod:`wholebody.robot.core`, where its
constructor, loaders and properties are). The robot owns the Pinocchio ``Model`` and ``Data``
and every name lookup. It never changes a model it was handed: the first structural change
(:meth:`Robot.add_frame`, setting :attr:`Robot.gravity_vector`) copies it (copy-on-write).
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin
from numpy.typing import NDArray

from ..errors import FrameNotFoundError, InvalidArgumentError, JointNotFoundError, ModelError
from ._checks import as_se3

if TYPE_CHECKING:
    from wholebody.robot.core import Robot

Array = NDArray[np.float64]

_FREE_FLYER = "JointModelFreeFlyer"
_UNBOUNDED = (
    "JointModelRUBX",
    "JointModelRUBY",
    "JointModelRUBZ",
    "JointModelRevoluteUnboundedUnaligned",
)


def _index_names(robot: Robot) -> None:
    m = robot._model
    first = 2 if robot._has_floating_base else 1
    robot._joint_ids = {m.names[j]: j for j in range(first, m.njoints)}
    robot._frame_ids = {}
    for i, f in enumerate(m.frames):
        # Pinocchio keeps duplicate names (a link and its joint may share one); the
        # first frame of a name wins, as in Model.getFrameId.
        robot._frame_ids.setdefault(f.name, i)
    robot._unit_pairs = []  # q indices of (cos, sin) pairs of unbounded revolute joints
    blocks = []  # the unit-norm blocks of q: (start, stop, name in errors, name in reasons)
    for j in range(1, m.njoints):
        kind, i, name = m.joints[j].shortname(), m.joints[j].idx_q, m.names[j]
        if kind == _FREE_FLYER:
            blocks.append((i + 3, i + 7, f"base quaternion q[{i + 3}:{i + 7}]", "base quaternion"))
        elif kind in _UNBOUNDED:
            robot._unit_pairs.append(i)
            blocks.append(
                (i, i + 2, f"(cos, sin) pair q[{i}:{i + 2}] of a continuous joint",
                 "continuous joint (cos, sin)")
            )  # fmt: skip
        elif kind == "JointModelSpherical":
            blocks.append(
                (i, i + 4, f"quaternion q[{i}:{i + 4}] of spherical joint {name!r}",
                 f"quaternion of spherical joint {name!r}")
            )  # fmt: skip
        elif kind == "JointModelPlanar":
            blocks.append(
                (i + 2, i + 4, f"(cos, sin) pair q[{i + 2}:{i + 4}] of planar joint {name!r}",
                 f"(cos, sin) of planar joint {name!r}")
            )  # fmt: skip
    robot._unit_blocks = tuple(blocks)
    # What a check of a state depends on: a State checked by a robot of the same spec is
    # trusted by this one (wholebody.robot._state).
    robot._state_spec = (int(m.nq), int(m.nv), tuple((a, b) for a, b, _, _ in blocks))


def _own_model(robot: Robot) -> pin.Model:
    """The model, copied first if it is still the caller's (copy-on-write)."""
    if not robot._owns_model:
        robot._model = pin.Model(robot._model)
        robot._set_data(robot._model.createData())
        robot._owns_model = True
    return robot._model


def _cache_gravity(robot: Robot) -> None:
    """Keep gravity, ``m g`` and ``m |g|`` of the model (at creation and on every change
    of :attr:`gravity_vector`): single calls read them without touching Pinocchio."""
    g = np.array(robot._model.gravity.linear, dtype=float)
    g.flags.writeable = False
    robot._gravity = g
    robot._mg = (robot._mass * g).tolist()  # Python floats, for the one-sample algebra
    robot._mg6 = np.concatenate([robot._mass * g, np.zeros(3)])  # (m g, 0): a wrench
    robot._mg6.flags.writeable = False
    robot._weight = robot._mass * float(np.linalg.norm(g))


def joint_id(robot: Robot, name: str) -> int:
    """Pinocchio joint index of a named joint.

    Raises
    ------
    JointNotFoundError
        Unknown name; lists close matches.
    InvalidArgumentError
        ``name`` is not a string.
    """
    try:
        return robot._joint_ids[name]
    except (KeyError, TypeError):
        if not isinstance(name, str):
            raise InvalidArgumentError(
                f"joint must be a joint name (str), got {type(name).__name__} {name!r}"
            ) from None
        raise JointNotFoundError(name, robot._joint_ids) from None


def frame_id(robot: Robot, name: str) -> int:
    """Pinocchio frame index of a named frame.

    Pinocchio itself can crash on an invalid index; every method of this class resolves
    frames through a name lookup like this one.

    Raises
    ------
    FrameNotFoundError
        Unknown name; lists close matches.
    InvalidArgumentError
        ``name`` is not a string (e.g. an integer index).
    """
    try:
        return robot._frame_ids[name]
    except (KeyError, TypeError):
        raise robot._frame_error(name) from None


def _frame_error(robot: Robot, frame: object) -> Exception:
    if not isinstance(frame, str):
        return InvalidArgumentError(
            f"frame must be a frame name (str), got {type(frame).__name__} {frame!r}"
        )
    return FrameNotFoundError(frame, robot._frame_ids)


def _check_frame_ids(robot: Robot, frame_ids: Any) -> tuple[int, ...]:
    """``frame_ids`` as a tuple of ints in ``[0, nframes)``, or an :class:`InvalidArgumentError`
    (Pinocchio aborts on an index out of range); sequences found valid are remembered (frames
    are never removed)."""
    try:
        key = tuple(frame_ids)
    except TypeError:
        raise InvalidArgumentError(
            f"frame_ids must be a sequence of frame indices (ints), got {type(frame_ids).__name__}"
        ) from None
    try:
        return robot._valid_ids[key]
    except (KeyError, TypeError):  # not seen yet (or unhashable items, refused below)
        pass
    nframes, ids = robot._model.nframes, []
    for k, fid in enumerate(key):
        if isinstance(fid, (bool, np.bool_)):
            raise InvalidArgumentError(f"frame_ids[{k}] must be a frame index (int), got {fid!r}")
        try:
            i = operator.index(fid)
        except TypeError:
            raise InvalidArgumentError(
                f"frame_ids[{k}] must be a frame index (int), got {type(fid).__name__} {fid!r}"
            ) from None
        if not 0 <= i < nframes:
            raise InvalidArgumentError(
                f"frame id {i} (frame_ids[{k}]) is out of range: valid ids are 0 to "
                f"{nframes - 1}; get them from Robot.frame_id(name)"
            )
        ids.append(i)
    if len(robot._valid_ids) >= 64:
        robot._valid_ids.clear()
    robot._valid_ids[key] = out = tuple(ids)
    return out


def add_frame(robot: Robot, name: str, parent_frame: str, placement: Any) -> int:
    """Add a fixed frame, for example the centre of a sole that the URDF lacks.

    The robot's model gets the frame; a model handed to :meth:`from_model` is copied
    first and stays as it was.

    Parameters
    ----------
    name : str
        New frame name; must not exist yet.
    parent_frame : str
        The frame it is attached to.
    placement : pinocchio.SE3, array of shape (4, 4) or (3,)
        Pose of the new frame in the parent frame; a 3-vector is a pure translation [m].

    Returns
    -------
    int
        The new frame's index.

    Raises
    ------
    ModelError
        ``name`` exists already, or ``placement`` is not a rigid transform.
    FrameNotFoundError
        ``parent_frame`` is unknown.
    InvalidArgumentError
        ``name`` or ``parent_frame`` is not a string.
    """
    if not isinstance(name, str):
        raise InvalidArgumentError(
            f"name must be a frame name (str), got {type(name).__name__} {name!r}"
        )
    if name in robot._frame_ids:
        raise ModelError(
            f"frame {name!r} already exists in robot {robot.name!r} "
            f"(frame {robot._frame_ids[name]}); choose another name"
        )
    parent_id = robot.frame_id(parent_frame)
    se3 = as_se3(placement)
    model = robot._own_model()
    parent = model.frames[parent_id]
    frame = pin.Frame(
        name, parent.parentJoint, parent_id, parent.placement * se3, pin.FrameType.OP_FRAME
    )
    fid = int(model.addFrame(frame, False))
    robot._set_data(model.createData())
    robot._frame_ids[name] = fid
    return fid


def summary(robot: Robot) -> str:
    """A few lines describing the robot (what ``wholebody info`` prints)."""
    lines = [
        f"robot      {robot.name}" + (f"  ({robot.source})" if robot.source else ""),
        f"base       {'floating (free flyer)' if robot._has_floating_base else 'fixed'}",
        f"nq, nv     {robot.nq}, {robot.nv}",
        f"mass       {robot.mass:.3f} kg   weight {robot.weight:.2f} N",
        f"gravity    {np.array2string(robot.gravity_vector, precision=3)} m/s^2",
        f"joints     {len(robot._joint_ids)}: {', '.join(robot.joint_names)}",
        f"frames     {len(robot._frame_ids)}",
    ]
    return "\n".join(lines)
