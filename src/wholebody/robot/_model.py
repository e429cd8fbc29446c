"""The model part of :class:`wholebody.Robot`: loading, names, sizes, added frames.

:class:`RobotModel` owns the Pinocchio ``Model`` and ``Data`` and every name lookup. It never
changes a model it was handed: the first structural change (:meth:`RobotModel.add_frame`,
setting :attr:`RobotModel.gravity_vector`) copies it (copy-on-write).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from ..errors import (
    FrameNotFoundError,
    InvalidArgumentError,
    JointNotFoundError,
    ModelError,
    URDFParseError,
)
from . import validation as _validation
from ._checks import as_se3, as_state_vector, frame_name_error, validated_frame_ids
from .mjcf import model_from_mjcf

Array = NDArray[np.float64]
_R = TypeVar("_R", bound="RobotModel")

_FREE_FLYER = "JointModelFreeFlyer"
_UNBOUNDED = (
    "JointModelRUBX",
    "JointModelRUBY",
    "JointModelRUBZ",
    "JointModelRevoluteUnboundedUnaligned",
)


class RobotModel:
    """A Pinocchio model with its names resolved once (the base of :class:`wholebody.Robot`).

    Parameters
    ----------
    model : pinocchio.Model
        The model. It is shared, not copied, until the robot changes it: the first
        :meth:`add_frame` or assignment to :attr:`gravity_vector` works on a copy, so the
        caller's model is never modified.
    name : str, optional
        A name for messages and reports; defaults to ``model.name``.
    source : str, optional
        Where the model came from (a file path), for messages.
    """

    def __init__(
        self,
        model: pin.Model,
        *,
        name: str | None = None,
        source: str | None = None,
        _owned: bool = False,
    ):
        if not isinstance(model, pin.Model):
            raise InvalidArgumentError(f"expected a pinocchio.Model, got {type(model).__name__}")
        self._model = model
        self._owns_model = _owned
        self._data = model.createData()
        self.name = name or model.name or "robot"
        self.source = source
        self._has_floating_base = model.njoints > 1 and model.joints[1].shortname() == _FREE_FLYER
        #: Check states at every call (default). Set False in a hot loop over arrays you have
        #: already checked (e.g. with :meth:`check_batch`): a bad state then reaches Pinocchio,
        #: which may return garbage or crash. Frame names and ids are always checked.
        self.check_inputs = True
        self._nq, self._nv = int(model.nq), int(model.nv)
        self._index_names()
        self._mass = float(sum(model.inertias[j].mass for j in range(1, model.njoints)))
        self._cache_gravity()
        # (data, data.com, data.dhg): Pinocchio's views of one Data, made at first use.
        self._data_views: tuple[Any, ...] | None = None
        self._nograv: tuple[pin.Model, pin.Data] | None = None  # for C(q, v) v, made lazily
        # Frame-id sequences found valid (ids stay valid: frames are never removed).
        self._valid_ids: dict[tuple[Any, ...], tuple[int, ...]] = {}
        # Bytes of the last q and of the last v-sized vectors (by name) that passed the checks.
        self._checked_q = b""
        self._checked_v: dict[str, bytes] = {}

    # --- pickling: the model travels, the scratch data is made afresh ----------------------

    def __getstate__(self) -> dict[str, Any]:
        return {"model": self._model, "name": self.name, "source": self.source}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["model"], name=state["name"], source=state["source"], _owned=True
        )

    # --- construction ---------------------------------------------------------------------

    @classmethod
    def from_urdf(
        cls: type[_R],
        path: str | Path,
        *,
        floating_base: bool = True,
        validate: str = "raise",
        name: str | None = None,
    ) -> _R:
        """Load a robot from a URDF file.

        Parameters
        ----------
        path : str or Path
            The URDF file. Meshes are not loaded (dynamics needs none).
        floating_base : bool, keyword-only
            Add a free-flyer root joint (``root_joint``), as for a humanoid. Default True.
        validate : {"raise", "warn", "ignore"}, keyword-only
            What to do with a physically invalid description (negative mass, inertia not
            positive definite or breaking the triangle inequality, zero-length joint axis,
            a joint limit with lower > upper, zero total mass, a link set whose mass matrix
            is singular): raise a typed :class:`~wholebody.errors.ModelError` naming the
            link or joint (default), warn, or ignore. Mimic joints (loaded as independent
            joints) are always a warning. Massless links carried by massive ones (the middle
            links of a spherical joint written as three hinges) are accepted silently: the
            mass matrix stays positive definite. A description that cannot form a tree
            (a duplicated link or joint name, a joint to a link that does not exist, a link
            with two parents) is always an error.
        name : str, optional
            Name of the robot; default the URDF's ``<robot name>``.

        Raises
        ------
        ModelFileNotFoundError
            The file does not exist.
        URDFParseError
            The XML is malformed, a link name is duplicated, or Pinocchio rejects the
            description; carries the reason.
        InvalidInertiaError, InvalidJointError
            As ``validate="raise"`` says; a joint to a missing link always.
        InvalidArgumentError
            ``validate`` is not one of the three policies.
        """
        _validation.check_policy(validate)
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidArgumentError(
                f"path must be a URDF file path (str or Path), got {type(path).__name__}"
            )
        path = Path(path)
        _, root = _validation.read_urdf(path)
        _validation.check_urdf_tree(root, str(path))
        problems = _validation.urdf_problems(root)
        # Pinocchio may crash on the impossible cases: refuse them before building.
        _validation.apply_policy(
            [p for p in problems if p.error_type is not None], validate, str(path)
        )
        try:
            if floating_base:
                model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
            else:
                model = pin.buildModelFromUrdf(str(path))
        except (RuntimeError, ValueError) as exc:
            raise URDFParseError(f"{path}: Pinocchio cannot build the model: {exc}") from exc
        problems = [p for p in problems if p.error_type is None]
        problems += _validation.model_problems(model, check_bodies=False)
        _validation.apply_policy(problems, validate, str(path))
        return cls(model, name=name or root.get("name"), source=str(path), _owned=True)

    @classmethod
    def from_mjcf(
        cls: type[_R],
        path: str | Path,
        *,
        floating_base: bool | None = None,
        validate: str = "raise",
        name: str | None = None,
    ) -> _R:
        """Load a robot from an MJCF file with Pinocchio's MJCF parser.

        Parameters
        ----------
        path : str or Path
            The MJCF file (``<mujoco>`` root). Meshes are not loaded; dynamics needs none.
        floating_base : bool or None, keyword-only
            None (default): as the file says (a free joint on the root body gives a free flyer).
            True: add a free-flyer root when the file has none. False: refuse a file whose
            root body has a free joint (:class:`~wholebody.errors.MJCFParseError`).
        validate : {"raise", "warn", "ignore"}, keyword-only
            As in :meth:`Robot.from_urdf`: every body's inertia, the total mass and the mass
            matrix are checked.
        name : str, keyword-only
            Defaults to the ``model`` attribute of ``<mujoco>``.

        Returns
        -------
        Robot
            ``source`` is the MJCF path. Joint order is Pinocchio's (depth first, as in the
            file); map logs by joint name.

        Raises
        ------
        ModelFileNotFoundError
            The file does not exist.
        MJCFParseError
            Malformed XML, a root other than ``<mujoco>``, or Pinocchio's parser refuses the
            file (the reason is in the message and ``__cause__``).
        InvalidInertiaError
            As ``validate="raise"`` says.
        """
        model, model_name = model_from_mjcf(path, floating_base=floating_base, validate=validate)
        return cls(model, name=name or model_name or model.name, source=str(path))

    @classmethod
    def from_urdf_string(
        cls: type[_R],
        text: str,
        *,
        floating_base: bool = True,
        validate: str = "raise",
        name: str | None = None,
    ) -> _R:
        """Load a robot from URDF text (as :meth:`from_urdf`; ``source`` stays None)."""
        if not isinstance(text, str):
            raise InvalidArgumentError(f"text must be URDF text (str), got {type(text).__name__}")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "robot.urdf"
            path.write_text(text)
            robot = cls.from_urdf(path, floating_base=floating_base, validate=validate, name=name)
        robot.source = None
        return robot

    @classmethod
    def from_model(
        cls: type[_R], model: pin.Model, *, validate: str = "raise", name: str | None = None
    ) -> _R:
        """Wrap an existing Pinocchio model.

        The model is shared until the robot changes it (copy-on-write: :meth:`add_frame` and
        setting :attr:`gravity_vector` work on a copy; the caller's model is left as it was).
        ``validate`` is as in :meth:`from_urdf`; bodies are named by their joints.

        Raises
        ------
        InvalidArgumentError
            ``model`` is not a ``pinocchio.Model``, or ``validate`` is not a policy.
        InvalidInertiaError
            A body's inertia is impossible (``validate="raise"``).
        """
        if not isinstance(model, pin.Model):
            raise InvalidArgumentError(f"expected a pinocchio.Model, got {type(model).__name__}")
        _validation.check_policy(validate)
        _validation.apply_policy(
            _validation.model_problems(model, check_bodies=True), validate, f"model {model.name!r}"
        )
        return cls(model, name=name)

    def _index_names(self) -> None:
        m = self._model
        first = 2 if self._has_floating_base else 1
        self._joint_ids = {m.names[j]: j for j in range(first, m.njoints)}
        self._frame_ids: dict[str, int] = {}
        for i, f in enumerate(m.frames):
            # Pinocchio keeps duplicate names (a link and its joint may share one); the
            # first frame of a name wins, as in Model.getFrameId.
            self._frame_ids.setdefault(f.name, i)
        self._unit_pairs = []  # q indices of (cos, sin) pairs of unbounded revolute joints
        for j in range(1, m.njoints):
            if m.joints[j].shortname() in _UNBOUNDED:
                self._unit_pairs.append(m.joints[j].idx_q)
        # Bounds used by random_configuration: finite joint limits, else +-pi (angles) / +-1 m.
        self._lower = np.array(m.lowerPositionLimit, dtype=float)
        self._upper = np.array(m.upperPositionLimit, dtype=float)

    def _own_model(self) -> pin.Model:
        """The model, copied first if it is still the caller's (copy-on-write)."""
        if not self._owns_model:
            self._model = pin.Model(self._model)
            self._data = self._model.createData()
            self._owns_model = True
        return self._model

    # --- sizes and names --------------------------------------------------------------------

    @property
    def model(self) -> pin.Model:
        """The Pinocchio model (shared with the caller of :meth:`from_model` until the robot
        changes it). Treat it as read-only: edit frames and gravity through the robot."""
        return self._model

    @property
    def data(self) -> pin.Data:
        """The Pinocchio data used as scratch space by this robot's methods."""
        return self._data

    @property
    def nq(self) -> int:
        """Size of a configuration vector ``q``."""
        return self._nq

    @property
    def nv(self) -> int:
        """Size of velocity, acceleration and generalized-force vectors."""
        return self._nv

    @property
    def has_floating_base(self) -> bool:
        """True when the first joint is a free flyer (``q[:7]`` is the base pose)."""
        return self._has_floating_base

    @property
    def mass(self) -> float:
        """Total mass [kg] (of the moving bodies)."""
        return self._mass

    @property
    def weight(self) -> float:
        """Total weight ``m |g|`` [N]; the scale of relative residuals.

        Computed when the robot is made and again when :attr:`gravity_vector` is set (like
        :attr:`mass`, it does not follow edits made to :attr:`model` directly).
        """
        return self._weight

    def _cache_gravity(self) -> None:
        """Keep gravity, ``m g`` and ``m |g|`` of the model (at creation and on every change
        of :attr:`gravity_vector`): single calls read them without touching Pinocchio."""
        g = np.array(self._model.gravity.linear, dtype=float)
        g.flags.writeable = False
        self._gravity = g
        self._mg = (self._mass * g).tolist()  # Python floats, for the one-sample algebra
        self._mg6 = np.concatenate([self._mass * g, np.zeros(3)])  # (m g, 0): a wrench
        self._mg6.flags.writeable = False
        self._weight = self._mass * float(np.linalg.norm(g))

    @property
    def joint_names(self) -> list[str]:
        """Names of the joints in model order, without the floating base."""
        return list(self._joint_ids)

    @property
    def frame_names(self) -> list[str]:
        """Names of all frames (links, joints, fixed frames, added frames)."""
        return list(self._frame_ids)

    @property
    def gravity_vector(self) -> Array:
        """Gravity acceleration in world axes [m/s^2]; default ``(0, 0, -9.81)``.

        Named ``gravity_vector`` because ``gravity()`` is the generalized gravity ``g(q)``.
        Setting it changes this robot's model only (a model from :meth:`from_model` is
        copied first).
        """
        return self._gravity.copy()

    @gravity_vector.setter
    def gravity_vector(self, value: ArrayLike) -> None:
        g = as_state_vector(value, 3, "gravity_vector")
        self._own_model().gravity = pin.Motion(g, np.zeros(3))
        self._cache_gravity()

    def joint_id(self, name: str) -> int:
        """Pinocchio joint index of a named joint.

        Raises
        ------
        JointNotFoundError
            Unknown name; lists close matches.
        InvalidArgumentError
            ``name`` is not a string.
        """
        try:
            return self._joint_ids[name]
        except (KeyError, TypeError):
            if not isinstance(name, str):
                raise InvalidArgumentError(
                    f"joint must be a joint name (str), got {type(name).__name__} {name!r}"
                ) from None
            raise JointNotFoundError(name, self._joint_ids) from None

    def frame_id(self, name: str) -> int:
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
            return self._frame_ids[name]
        except (KeyError, TypeError):
            raise self._frame_error(name) from None

    def _frame_error(self, frame: object) -> Exception:
        if not isinstance(frame, str):
            return frame_name_error(frame)
        return FrameNotFoundError(frame, self._frame_ids)

    def _check_frame_ids(self, frame_ids: Any) -> tuple[int, ...]:
        """``frame_ids`` as a tuple of checked ints in ``[0, nframes)``.

        Sequences found valid are remembered (ids stay valid: frames are never removed), so
        a repeated one costs a tuple and a dictionary lookup (~0.2 us).
        """
        try:
            key = tuple(frame_ids)
            ids = self._valid_ids.get(key)
        except TypeError:  # not iterable, or unhashable items
            key, ids = None, None
        if ids is None:
            ids = tuple(validated_frame_ids(frame_ids, self._model.nframes))
            if key is not None:
                if len(self._valid_ids) >= 64:
                    self._valid_ids.clear()
                self._valid_ids[key] = ids
        return ids

    def add_frame(self, name: str, parent_frame: str, placement: Any) -> int:
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
        if name in self._frame_ids:
            raise ModelError(
                f"frame {name!r} already exists in robot {self.name!r} "
                f"(frame {self._frame_ids[name]}); choose another name"
            )
        parent_id = self.frame_id(parent_frame)
        se3 = as_se3(placement)
        model = self._own_model()
        parent = model.frames[parent_id]
        frame = pin.Frame(
            name, parent.parentJoint, parent_id, parent.placement * se3, pin.FrameType.OP_FRAME
        )
        fid = int(model.addFrame(frame, False))
        self._data = model.createData()
        self._frame_ids[name] = fid
        return fid

    def __repr__(self) -> str:
        base = "floating base" if self._has_floating_base else "fixed base"
        return (
            f"Robot({self.name!r}, {base}, nq={self.nq}, nv={self.nv}, "
            f"mass={self.mass:.3f} kg, {len(self._frame_ids)} frames)"
        )

    def summary(self) -> str:
        """A few lines describing the robot (what ``wholebody info`` prints)."""
        lines = [
            f"robot      {self.name}" + (f"  ({self.source})" if self.source else ""),
            f"base       {'floating (free flyer)' if self._has_floating_base else 'fixed'}",
            f"nq, nv     {self.nq}, {self.nv}",
            f"mass       {self.mass:.3f} kg   weight {self.weight:.2f} N",
            f"gravity    {np.array2string(self.gravity_vector, precision=3)} m/s^2",
            f"joints     {len(self._joint_ids)}: {', '.join(self.joint_names)}",
            f"frames     {len(self._frame_ids)}",
        ]
        return "\n".join(lines)
