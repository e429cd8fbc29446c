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

This package is the one place where Pinocchio's algorithms are called (the passes that other
packages need are in :mod:`wholebody.robot.batch`; tested). :class:`Robot` is one
class: it holds the model, its data and the names (its constructor, loaders and properties
are here), and its methods are plain functions of the robot, each in the module of its
idea, bound to the class in its body (no base classes, no call overhead):

====================  ===========================================================
``_model``            names, frame ids, added frames (copy-on-write model), summary
``_state``            a state checked once (``State``), checks of raw arrays and of N
                      samples, configurations
``_dynamics``         M, C, C v, g, nle, inverse/forward dynamics, torque split
``_kinematics``       frames, CoM, momentum, one-pass helpers for balance/estimation
``_controller_pass``  the one pass of a whole-body controller's tick
====================  ===========================================================

``Robot.mass_matrix`` is ``_dynamics.mass_matrix``, whose first argument is the robot.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike

from ..errors import InvalidArgumentError, URDFParseError
from . import _controller_pass, _dynamics, _kinematics, _model, _state
from . import validation as _validation
from ._checks import Array, as_state_vector
from ._model import _FREE_FLYER
from .validation import inertialess_child_links

__all__ = ["Robot"]


_R = TypeVar("_R", bound="Robot")


class Robot:
    """A rigid multibody robot on Pinocchio, with checked inputs and named frames.

    Create one with :meth:`from_urdf`, :meth:`from_urdf_string`, :meth:`from_model` or
    :func:`wholebody.load`. Methods take states in Pinocchio's layout (see the module
    docstring), as a :class:`~wholebody.robot.State` checked once by :meth:`state` or as
    arrays checked at each call, and return fresh arrays. A ``Robot`` keeps one Pinocchio
    ``Data`` as scratch space, so one instance must not be shared between threads.

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
    A bad state is a :class:`~wholebody.errors.StateError` naming the field, index and value
    (see :meth:`state`). Frames are given by name (a ``str``); an unknown name is a
    :class:`~wholebody.errors.FrameNotFoundError` listing close matches, anything else an
    :class:`~wholebody.errors.InvalidArgumentError`.
    """

    # Set by the functions of ``_model`` (names, gravity), declared here for type checkers.
    _joint_ids: dict[str, int]
    _frame_ids: dict[str, int]
    _unit_pairs: list[int]
    _unit_blocks: tuple[tuple[int, int, str, str], ...]
    # (nq, nv, unit-norm blocks of q): what a state's check depends on.
    _state_spec: tuple[int, int, tuple[tuple[int, int], ...]]
    _gravity: Array
    _mg: list[float]
    _mg6: Array
    _weight: float

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
        self._set_data(model.createData())
        self.name = name or model.name or "robot"
        self.source = source
        self._has_floating_base = model.njoints > 1 and model.joints[1].shortname() == _FREE_FLYER
        self._nq, self._nv = int(model.nq), int(model.nv)
        self._v_shape = (self._nv,)
        self._index_names()
        self._mass = float(sum(model.inertias[j].mass for j in range(1, model.njoints)))
        self._cache_gravity()
        self._nograv: tuple[pin.Model, pin.Data] | None = None  # for C(q, v) v, made lazily
        # Frame-id sequences found valid (ids stay valid: frames are never removed).
        self._valid_ids: dict[tuple[Any, ...], tuple[int, ...]] = {}
        # Some Pinocchio versions fill only the upper triangle of M: find out once.
        M = pin.crba(self._model, self._data, pin.neutral(self._model))
        self._crba_upper_only = not np.array_equal(M, M.T)
        self._lower_mask = np.tril(np.ones((self._nv, self._nv), dtype=bool), -1)
        self._zero_v = np.zeros(self._nv)
        # What the file said that the model does not keep (set by the loaders).
        self._links_without_inertia: tuple[str, ...] = ()

    def __getstate__(self) -> dict[str, Any]:
        return {
            "model": self._model,
            "name": self.name,
            "source": self.source,
            "links_without_inertia": self._links_without_inertia,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["model"], name=state["name"], source=state["source"], _owned=True
        )
        self._links_without_inertia = tuple(state.get("links_without_inertia", ()))

    def _set_data(self, data: pin.Data) -> None:
        """The robot's scratch ``Data``, and the views of it the one-sample path reads
        (``data.com``, ``data.dhg``: each attribute access makes a new wrapper)."""
        self._data = data
        self._data_views: tuple[Any, ...] = (data.com, data.dhg)

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
        problems = _validation.urdf_problems(root) + _validation.inertia_notes(root, path)
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
        robot = cls(model, name=name or root.get("name"), source=str(path), _owned=True)
        # Kept from the parsed tree: nothing reads the file again (it may be gone).
        robot._links_without_inertia = tuple(
            n for n in inertialess_child_links(root) if model.existFrame(n, pin.FrameType.BODY)
        )
        return robot

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
        from .mjcf import model_from_mjcf  # the MJCF reader on the first MJCF model

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

    @property
    def links_without_inertia(self) -> list[str]:
        """Links that the URDF the robot was loaded from leaves without ``<inertial>``, in file
        order, its root link excluded: Pinocchio gives them no mass, simulators some (PyBullet
        1 kg each; see :mod:`wholebody.robot.validation`).

        Read when the file is loaded (:meth:`from_urdf`, :meth:`from_urdf_string`), so it
        holds after the file is gone; kept by pickling and by :meth:`with_model`. Empty for
        MJCF files and :meth:`from_model` (their bodies say nothing of a missing element).

        Examples
        --------
        >>> import wholebody
        >>> wholebody.load("humanoid").links_without_inertia
        ['left_hand', 'left_sole', 'right_hand', 'right_sole']
        """
        return list(self._links_without_inertia)

    def with_model(self: _R, model: pin.Model) -> _R:
        """A robot on ``model``, a changed copy of this robot's model (other inertias, as the
        simulators' repairs make), with this robot's name, source and what its file said
        (:attr:`links_without_inertia`). ``model`` is used as is (not validated, not copied).
        """
        robot = type(self)(model, name=self.name, source=self.source)
        robot._links_without_inertia = self._links_without_inertia
        return robot

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

    def __repr__(self) -> str:
        base = "floating base" if self._has_floating_base else "fixed base"
        return (
            f"Robot({self.name!r}, {base}, nq={self.nq}, nv={self.nv}, "
            f"mass={self.mass:.3f} kg, {len(self._frame_ids)} frames)"
        )

    # --- model: names, frames added (copy-on-write model) ---------------------------------

    _index_names = _model._index_names
    _own_model = _model._own_model
    _cache_gravity = _model._cache_gravity
    joint_id = _model.joint_id
    frame_id = _model.frame_id
    _frame_error = _model._frame_error
    _check_frame_ids = _model._check_frame_ids
    add_frame = _model.add_frame
    summary = _model.summary

    # --- state: a state checked once, raw arrays checked per call, N samples, configurations

    state = _state.state
    _check_q = _state._check_q
    _check_qv = _state._check_qv
    _check_qva = _state._check_qva
    check_batch = _state.check_batch
    neutral = _state.neutral
    random_configuration = _state.random_configuration
    q_from_named = _state.q_from_named
    named = _state.named

    # --- dynamics: M, C, C v, g, nle, inverse/forward dynamics, torque split --------------

    mass_matrix = _dynamics.mass_matrix
    coriolis_matrix = _dynamics.coriolis_matrix
    coriolis = _dynamics.coriolis
    gravity = _dynamics.gravity
    nonlinear_effects = _dynamics.nonlinear_effects
    _wrench_at_frame = _dynamics._wrench_at_frame
    inverse_dynamics = _dynamics.inverse_dynamics
    forward_dynamics = _dynamics.forward_dynamics
    torque_terms = _dynamics.torque_terms
    joint_wrenches = _dynamics.joint_wrenches

    # --- kinematics: frames, CoM, momentum, one-pass helpers for balance/estimation -------

    placements = _kinematics.placements
    frame_position = _kinematics.frame_position
    frame_jacobian = _kinematics.frame_jacobian
    frame_velocity = _kinematics.frame_velocity
    frame_drift = _kinematics.frame_drift
    com = _kinematics.com
    com_jacobian = _kinematics.com_jacobian
    centroidal_momentum = _kinematics.centroidal_momentum
    centroidal_momentum_rate = _kinematics.centroidal_momentum_rate
    _centroidal_sample = _kinematics._centroidal_sample
    contact_pass = _kinematics.contact_pass

    # --- controller: the one pass of a control tick (whole-body terms, frames read) -------

    controller_pass = _controller_pass.controller_pass
