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

This module is the one place where Pinocchio is called for dynamics.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from . import _validation
from .errors import (
    FrameNotFoundError,
    JointNotFoundError,
    ModelError,
    StateError,
    StateWarning,
    URDFParseError,
)

__all__ = ["Robot", "TorqueTerms", "ContactPass"]

Array = NDArray[np.float64]
#: External wrenches: frame name -> world-axes wrench ``(f, tau)`` at the frame origin, shape
#: (6,), or a force alone, shape (3,) [N, N m]. :class:`wholebody.Wrench` values are accepted
#: too and moved to the frame origin.
External = Mapping[str, Any]

# Quaternion norms within this of 1 are taken as they are; up to QUAT_RENORMALIZE_TOL they
# are renormalised with a warning; beyond, rejected.
QUAT_EXACT_TOL = 1e-10
QUAT_RENORMALIZE_TOL = 1e-6

_FREE_FLYER = "JointModelFreeFlyer"
_UNBOUNDED = ("JointModelRUBX", "JointModelRUBY", "JointModelRUBZ", "JointModelRevoluteUnboundedUnaligned")


@dataclass(frozen=True)
class ContactPass:
    """What one Pinocchio pass gives contact estimation (see :meth:`Robot.contact_pass`).

    Shapes: ``com`` (3,), ``momentum_rate`` (6,) ``(dP/dt, dL_G/dt)``, ``positions`` (k, 3),
    ``rotations`` (k, 3, 3), ``inverse_dynamics`` (nv,) or None, ``jacobians`` (k, 6, nv)
    world-aligned or None. World axes, SI units.
    """

    com: Array
    momentum_rate: Array
    positions: Array
    rotations: Array
    inverse_dynamics: Array | None
    jacobians: Array | None


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
        return self.inertial + self.coriolis + self.gravity + self.external


class Robot:
    """A rigid multibody robot on Pinocchio, with checked inputs and named frames.

    Create one with :meth:`from_urdf`, :meth:`from_model` or :func:`wholebody.load`.
    Methods take states as arrays in Pinocchio's layout (see the module docstring) and
    return fresh arrays. A ``Robot`` keeps one Pinocchio ``Data`` as scratch space, so one
    instance must not be shared between threads.

    Parameters
    ----------
    model : pinocchio.Model
        The model; it is used as given (not copied).
    name : str, optional
        A name for messages and reports; defaults to ``model.name``.
    """

    def __init__(self, model: pin.Model, *, name: str | None = None, source: str | None = None):
        self._model = model
        self._data = model.createData()
        self.name = name or model.name or "robot"
        self.source = source
        self._has_floating_base = model.njoints > 1 and model.joints[1].shortname() == _FREE_FLYER
        self._frame_ids: dict[str, int] = {}
        #: Check states at every call (default). Set False in a hot loop over arrays you have
        #: already checked (e.g. with :meth:`check_batch`): a bad state then reaches Pinocchio,
        #: which may return garbage or crash. Frame names are always checked.
        self.check_inputs = True
        self._index_names()
        self._mass = float(sum(model.inertias[j].mass for j in range(1, model.njoints)))
        # Some Pinocchio versions fill only the upper triangle of M: find out once.
        M = pin.crba(model, self._data, pin.neutral(model))
        self._crba_upper_only = not np.array_equal(M, M.T)
        self._lower_mask = np.tril(np.ones((model.nv, model.nv), dtype=bool), -1)

    # --- pickling: the model travels, the scratch data is made afresh ----------------------

    def __getstate__(self) -> dict[str, Any]:
        return {"model": self._model, "name": self.name, "source": self.source}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["model"], name=state["name"], source=state["source"])

    # --- construction ---------------------------------------------------------------------

    @classmethod
    def from_urdf(
        cls,
        path: str | Path,
        *,
        floating_base: bool = True,
        validate: str = "raise",
        name: str | None = None,
    ) -> Robot:
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
            zero total mass, a link set whose mass matrix is singular): raise a typed
            :class:`~wholebody.errors.ModelError` naming the link or joint (default), warn,
            or ignore. Mimic joints (loaded as independent joints) are always a warning.
            Massless links carried by massive ones (the middle links of a spherical joint
            written as three hinges) are accepted silently: the mass matrix stays positive
            definite.

        Raises
        ------
        ModelFileNotFoundError
            The file does not exist.
        URDFParseError
            The XML is malformed or Pinocchio rejects the description; carries the reason.
        InvalidInertiaError, InvalidJointError
            As ``validate="raise"`` says.
        """
        _validation.check_policy(validate)
        path = Path(path)
        _, root = _validation.read_urdf(path)
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
        return cls(model, name=name or root.get("name"), source=str(path))

    @classmethod
    def from_urdf_string(
        cls, text: str, *, floating_base: bool = True, validate: str = "raise", name: str | None = None
    ) -> Robot:
        """Load a robot from URDF text (as :meth:`from_urdf`; ``source`` stays None)."""
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "robot.urdf"
            path.write_text(text)
            robot = cls.from_urdf(path, floating_base=floating_base, validate=validate, name=name)
        robot.source = None
        return robot

    @classmethod
    def from_model(cls, model: pin.Model, *, validate: str = "raise", name: str | None = None) -> Robot:
        """Wrap an existing Pinocchio model (used as given, not copied).

        ``validate`` is as in :meth:`from_urdf`; bodies are named by their joints.
        """
        if not isinstance(model, pin.Model):
            raise TypeError(f"expected a pinocchio.Model, got {type(model).__name__}")
        _validation.check_policy(validate)
        _validation.apply_policy(
            _validation.model_problems(model, check_bodies=True), validate, f"model {model.name!r}"
        )
        return cls(model, name=name)

    def _index_names(self) -> None:
        m = self._model
        first = 2 if self._has_floating_base else 1
        self._joint_ids = {m.names[j]: j for j in range(first, m.njoints)}
        self._frame_ids = {}
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

    # --- sizes and names --------------------------------------------------------------------

    @property
    def model(self) -> pin.Model:
        """The Pinocchio model (shared, not a copy)."""
        return self._model

    @property
    def data(self) -> pin.Data:
        """The Pinocchio data used as scratch space by this robot's methods."""
        return self._data

    @property
    def nq(self) -> int:
        """Size of a configuration vector ``q``."""
        return self._model.nq

    @property
    def nv(self) -> int:
        """Size of velocity, acceleration and generalized-force vectors."""
        return self._model.nv

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
        """Total weight ``m |g|`` [N]; the scale of relative residuals."""
        return self.mass * float(np.linalg.norm(self.gravity_vector))

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

        Named ``gravity_vector`` because :meth:`gravity` is the generalized gravity ``g(q)``.
        """
        return np.array(self._model.gravity.linear)

    @gravity_vector.setter
    def gravity_vector(self, value: ArrayLike) -> None:
        g = _state(value, 3, "gravity_vector")
        self._model.gravity = pin.Motion(g, np.zeros(3))

    def joint_id(self, name: str) -> int:
        """Pinocchio joint index of a named joint; :class:`JointNotFoundError` if unknown."""
        try:
            return self._joint_ids[name]
        except KeyError:
            raise JointNotFoundError(name, self._joint_ids) from None

    def frame_id(self, name: str) -> int:
        """Pinocchio frame index of a named frame; :class:`FrameNotFoundError` if unknown.

        Pinocchio itself can crash on an invalid index; every method of this class resolves
        frames through here.
        """
        try:
            return self._frame_ids[name]
        except KeyError:
            raise FrameNotFoundError(name, self._frame_ids) from None

    def add_frame(self, name: str, parent_frame: str, placement: Any) -> int:
        """Add a fixed frame, for example the centre of a sole that the URDF lacks.

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
        """
        if name in self._frame_ids:
            raise ValueError(f"frame {name!r} already exists")
        parent_id = self.frame_id(parent_frame)
        placement = _as_se3(placement)
        parent = self._model.frames[parent_id]
        frame = pin.Frame(
            name, parent.parentJoint, parent_id, parent.placement * placement, pin.FrameType.OP_FRAME
        )
        fid = self._model.addFrame(frame, False)
        self._data = self._model.createData()
        self._frame_ids[name] = fid
        return fid

    # --- configurations ---------------------------------------------------------------------

    def neutral(self) -> Array:
        """The neutral configuration (base at the origin, identity orientation, joints at 0)."""
        return np.array(pin.neutral(self._model))

    def random_configuration(self, seed: int | np.random.Generator | None = None) -> Array:
        """A random configuration, reproducible from ``seed``.

        Joints with finite limits are drawn uniformly within them; other angles in
        ``[-pi, pi]``; the base position in ``[-1, 1]^3`` m and its orientation uniformly.
        """
        rng = np.random.default_rng(seed)
        m = self._model
        dv = rng.uniform(-np.pi, np.pi, m.nv)
        q = np.array(pin.integrate(m, pin.neutral(m), dv))
        if self._has_floating_base:
            q[:3] = rng.uniform(-1.0, 1.0, 3)
            quat = rng.normal(size=4)
            q[3:7] = quat / np.linalg.norm(quat)
        for j in range(1, m.njoints):
            jm = m.joints[j]
            if jm.nq == 1 and jm.nv == 1:
                lo, hi = self._lower[jm.idx_q], self._upper[jm.idx_q]
                if np.isfinite(lo) and np.isfinite(hi) and hi > lo:
                    q[jm.idx_q] = rng.uniform(lo, hi)
        return q

    def q_from_named(
        self,
        joint_positions: Mapping[str, float],
        *,
        base_position: ArrayLike | None = None,
        base_quaternion_xyzw: ArrayLike | None = None,
    ) -> Array:
        """Build ``q`` from joint values given by name; unnamed joints stay neutral.

        Parameters
        ----------
        joint_positions : mapping of str to float
            Joint name -> position [rad or m]. Continuous (unbounded) joints take an angle,
            converted here to Pinocchio's ``(cos, sin)`` pair.
        base_position : array of shape (3,), optional
            Base origin in world [m] (floating base only).
        base_quaternion_xyzw : array of shape (4,), optional
            Base orientation, x-y-z-w, unit norm (floating base only).
        """
        q = self.neutral()
        m = self._model
        for name, value in joint_positions.items():
            jm = m.joints[self.joint_id(name)]
            value = float(value)
            if not np.isfinite(value):
                raise StateError(f"joint {name!r}: position is not finite ({value})")
            if jm.nq == 1:
                q[jm.idx_q] = value
            elif jm.idx_q in self._unit_pairs:
                q[jm.idx_q : jm.idx_q + 2] = np.cos(value), np.sin(value)
            else:
                raise StateError(f"joint {name!r} has {jm.nq} coordinates; give q directly")
        if base_position is not None or base_quaternion_xyzw is not None:
            if not self._has_floating_base:
                raise StateError(f"robot {self.name!r} has no floating base")
            if base_position is not None:
                q[:3] = _state(base_position, 3, "base_position")
            if base_quaternion_xyzw is not None:
                q[3:7] = _state(base_quaternion_xyzw, 4, "base_quaternion_xyzw")
        return self.check_q(q)

    def named(self, q: ArrayLike) -> dict[str, float]:
        """Joint positions of ``q`` by name (continuous joints as angles) [rad or m]."""
        q = self.check_q(q)
        out = {}
        for name, j in self._joint_ids.items():
            jm = self._model.joints[j]
            if jm.nq == 1:
                out[name] = float(q[jm.idx_q])
            elif jm.idx_q in self._unit_pairs:
                out[name] = float(np.arctan2(q[jm.idx_q + 1], q[jm.idx_q]))
        return out

    # --- state validation -------------------------------------------------------------------

    def check_q(self, q: ArrayLike) -> Array:
        """Return ``q`` as a float array after checking it.

        Raises :class:`StateError` on a wrong length, non-finite values, a zero quaternion or
        one whose norm is off by more than 1e-6. A norm off by less is renormalised (a copy)
        with a :class:`StateWarning`.
        """
        if not self.check_inputs:
            return q
        q = _state(q, self._model.nq, "q")
        if self._has_floating_base:
            x, y, z, w = q[3:7].tolist()  # Python floats: cheaper than a numpy dot for four
            if abs(x * x + y * y + z * z + w * w - 1.0) > 2 * QUAT_EXACT_TOL:
                q = self._unit(q, 3, 7, "base quaternion q[3:7]")
        for i in self._unit_pairs:
            q = self._unit(q, i, i + 2, f"(cos, sin) pair q[{i}:{i + 2}] of a continuous joint")
        return q

    @staticmethod
    def _unit(q: Array, start: int, stop: int, what: str) -> Array:
        part = q[start:stop]
        norm2 = float(part @ part)
        if abs(norm2 - 1.0) <= 2 * QUAT_EXACT_TOL:  # |n^2 - 1| ~ 2 |n - 1|
            return q
        norm = math.sqrt(norm2)
        error = abs(norm - 1.0)
        if norm == 0.0:
            raise StateError(f"{what} is zero; a rotation needs a unit quaternion")
        if error > QUAT_RENORMALIZE_TOL:
            raise StateError(
                f"{what} has norm {norm:.9g}, not 1 (tolerance {QUAT_RENORMALIZE_TOL:g}); "
                "is the order x-y-z-w and is the log's rotation complete?"
            )
        warnings.warn(f"{what} has norm {norm:.12g}; renormalised", StateWarning, stacklevel=3)
        q = q.copy()
        q[start:stop] /= norm
        return q

    def check_v(self, v: ArrayLike, what: str = "v") -> Array:
        """Return a velocity-sized vector (v, a, tau) as a float array after checking it."""
        if not self.check_inputs:
            return v
        return _state(v, self._model.nv, what)

    def check_batch(self, **arrays: ArrayLike) -> tuple[dict[str, Array], Array, dict[int, str]]:
        """Check arrays of samples at once; flag bad rows instead of raising.

        Parameters
        ----------
        **arrays
            ``q`` of shape (N, nq) and any of ``v``, ``a``, ``tau`` of shape (N, nv), or other
            named arrays of shape (N, ...) that must be finite.

        Returns
        -------
        arrays : dict of str to ndarray
            The arrays as float; rows of ``q`` whose quaternion norm is within 1e-6 of 1
            are renormalised (in a copy).
        bad : ndarray of bool, shape (N,)
            Rows that cannot be used.
        reasons : dict of int to str
            Why each bad row is bad (first reason found).

        Raises
        ------
        StateError
            When the arrays themselves have wrong shapes (a file-level problem).
        """
        out: dict[str, Array] = {}
        n = None
        for name, x in arrays.items():
            arr = np.asarray(x, dtype=float)
            if arr.ndim == 0:
                raise StateError(f"{name} must be an array of samples, got a scalar")
            if n is None:
                n = arr.shape[0]
            if arr.shape[0] != n:
                raise StateError(f"{name} has {arr.shape[0]} samples, expected {n}")
            width = {"q": self.nq, "v": self.nv, "a": self.nv, "tau": self.nv}.get(name)
            if width is not None and arr.shape != (n, width):
                raise StateError(f"{name} must have shape (N, {width}), got {arr.shape}")
            out[name] = arr
        n = n or 0
        bad = np.zeros(n, dtype=bool)
        reasons: dict[int, str] = {}

        def flag(rows: Array, why: str) -> None:
            for i in np.flatnonzero(rows & ~bad):
                reasons[int(i)] = why
            bad[rows] = True

        for name, arr in out.items():
            if n:
                flag(~np.isfinite(arr.reshape(n, -1)).all(axis=1), f"{name} has non-finite values")
        if "q" in out:
            q = out["q"]
            spans = ([(3, 7, "base quaternion")] if self._has_floating_base else []) + [
                (i, i + 2, "continuous joint (cos, sin)") for i in self._unit_pairs
            ]
            for start, stop, what in spans:
                with np.errstate(invalid="ignore"):
                    norm = np.linalg.norm(q[:, start:stop], axis=1)
                err = np.abs(norm - 1.0)
                flag(norm == 0.0, f"{what} is zero")
                flag(err > QUAT_RENORMALIZE_TOL, f"{what} norm off 1 by more than {QUAT_RENORMALIZE_TOL:g}")
                fix = (err > QUAT_EXACT_TOL) & ~bad
                if fix.any():
                    q = q.copy() if q is out["q"] else q
                    q[fix, start:stop] /= norm[fix, None]
            out["q"] = q
        return out, bad, reasons

    # --- dynamics terms ---------------------------------------------------------------------

    def mass_matrix(self, q: ArrayLike) -> Array:
        """Joint-space inertia matrix ``M(q)``, shape (nv, nv), symmetric positive definite."""
        q = self.check_q(q)
        M = np.array(pin.crba(self._model, self._data, q))
        if self._crba_upper_only:
            np.copyto(M, M.T, where=self._lower_mask)
        return M

    def coriolis_matrix(self, q: ArrayLike, v: ArrayLike) -> Array:
        """Coriolis matrix ``C(q, v)``, shape (nv, nv), with ``dM/dt - 2 C`` skew-symmetric."""
        q, v = self.check_q(q), self.check_v(v)
        return np.array(pin.computeCoriolisMatrix(self._model, self._data, q, v))

    def coriolis(self, q: ArrayLike, v: ArrayLike) -> Array:
        """Coriolis and centripetal generalized forces ``C(q, v) v``, shape (nv,)."""
        q, v = self.check_q(q), self.check_v(v)
        # rnea with zero acceleration and zero gravity is exactly C v, in one pass.
        g = pin.Motion(self._model.gravity)  # a copy: the attribute is a reference
        self._model.gravity = pin.Motion.Zero()
        try:
            return np.array(pin.rnea(self._model, self._data, q, v, np.zeros(self.nv)))
        finally:
            self._model.gravity = g

    def gravity(self, q: ArrayLike) -> Array:
        """Generalized gravity to compensate ``g(q)``, shape (nv,).

        ``tau = g(q)`` holds the robot still; the seeds' gravity torque is ``-g(q)``.
        """
        q = self.check_q(q)
        return np.array(pin.computeGeneralizedGravity(self._model, self._data, q))

    def nonlinear_effects(self, q: ArrayLike, v: ArrayLike) -> Array:
        """``C(q, v) v + g(q)``, shape (nv,)."""
        q, v = self.check_q(q), self.check_v(v)
        return np.array(pin.nonLinearEffects(self._model, self._data, q, v))

    def external_generalized_forces(self, q: ArrayLike, external: External) -> Array:
        """``sum_i J_i(q)^T w_i`` for external wrenches given by frame, shape (nv,).

        Parameters
        ----------
        external : mapping of str to wrench
            Frame name -> world-axes wrench ``(f, tau)`` at the frame origin, shape (6,),
            or a force alone, shape (3,) [N, N m]. A :class:`wholebody.Wrench` is moved to
            the frame origin first.
        """
        q = self.check_q(q)
        out = np.zeros(self.nv)
        if not external:
            return out
        pin.computeJointJacobians(self._model, self._data, q)
        pin.updateFramePlacements(self._model, self._data)
        for frame, wrench in external.items():
            fid = self.frame_id(frame)
            w = self._wrench_at_frame(wrench, fid, frame)
            J = pin.getFrameJacobian(self._model, self._data, fid, pin.LOCAL_WORLD_ALIGNED)
            out += J.T @ w
        return out

    def _wrench_at_frame(self, wrench: Any, fid: int, frame: str) -> Array:
        if hasattr(wrench, "shift_to") and hasattr(wrench, "as_vector"):
            origin = self._data.oMf[fid].translation
            return np.asarray(wrench.shift_to(origin).as_vector(), dtype=float)
        w = np.asarray(wrench, dtype=float)
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
        self, q: ArrayLike, v: ArrayLike, a: ArrayLike, external: External | None = None
    ) -> Array:
        """Generalized forces that produce ``a``: ``M a + C v + g - sum J_i^T w_i``, shape (nv,).

        With a floating base, the first six entries are the base wrench that the
        unmodelled contacts would have to supply (base frame, at the base origin).
        """
        q, v, a = self.check_q(q), self.check_v(v), self.check_v(a, "a")
        tau = np.array(pin.rnea(self._model, self._data, q, v, a))
        if external:
            tau -= self.external_generalized_forces(q, external)
        return tau

    def forward_dynamics(
        self, q: ArrayLike, v: ArrayLike, tau: ArrayLike, external: External | None = None
    ) -> Array:
        """Acceleration from generalized forces: ``M^-1 (tau + sum J_i^T w_i - C v - g)``.

        ``tau`` has shape (nv,); with a floating base its first six entries are usually 0.
        """
        q, v, tau = self.check_q(q), self.check_v(v), self.check_v(tau, "tau")
        if external:
            tau = tau + self.external_generalized_forces(q, external)
        return np.array(pin.aba(self._model, self._data, q, v, tau))

    def torque_terms(
        self, q: ArrayLike, v: ArrayLike, a: ArrayLike, external: External | None = None
    ) -> TorqueTerms:
        """Split the inverse dynamics into inertial, Coriolis, gravity and external parts."""
        q, v, a = self.check_q(q), self.check_v(v), self.check_v(a, "a")
        return TorqueTerms(
            inertial=self.mass_matrix(q) @ a,
            coriolis=self.coriolis(q, v),
            gravity=self.gravity(q),
            external=-self.external_generalized_forces(q, external or {}),
        )

    # --- frames -----------------------------------------------------------------------------

    def frame_placement(self, q: ArrayLike, frame: str) -> pin.SE3:
        """Pose of a frame in the world, ``oMf`` (a copy)."""
        fid = self.frame_id(frame)
        q = self.check_q(q)
        pin.framesForwardKinematics(self._model, self._data, q)
        return pin.SE3(self._data.oMf[fid])

    def frame_position(self, q: ArrayLike, frame: str) -> Array:
        """Origin of a frame in world coordinates, shape (3,) [m]."""
        return np.array(self.frame_placement(q, frame).translation)

    def frame_jacobian(self, q: ArrayLike, frame: str) -> Array:
        """Frame Jacobian, shape (6, nv), ``LOCAL_WORLD_ALIGNED``.

        Rows ``(v, omega)``: velocity of the frame origin and angular velocity, world axes.
        """
        fid = self.frame_id(frame)
        q = self.check_q(q)
        # computeFrameJacobian returns a new matrix (not a view of data): no copy needed.
        return np.asarray(
            pin.computeFrameJacobian(self._model, self._data, q, fid, pin.LOCAL_WORLD_ALIGNED)
        )

    def point_jacobian(self, q: ArrayLike, frame: str) -> Array:
        """Jacobian of the frame origin's velocity in world axes, shape (3, nv)."""
        return self.frame_jacobian(q, frame)[:3]

    def frame_velocity(self, q: ArrayLike, v: ArrayLike, frame: str) -> Array:
        """Twist ``(v, omega)`` of the frame origin, world axes, shape (6,) [m/s, rad/s]."""
        fid = self.frame_id(frame)
        q, v = self.check_q(q), self.check_v(v)
        pin.forwardKinematics(self._model, self._data, q, v)
        return np.array(
            pin.getFrameVelocity(self._model, self._data, fid, pin.LOCAL_WORLD_ALIGNED).vector
        )

    def frame_drift(self, q: ArrayLike, v: ArrayLike, frame: str) -> Array:
        """``dJ/dt v`` of :meth:`frame_jacobian`, shape (6,) [m/s^2, rad/s^2].

        The classical acceleration of the frame origin (and angular acceleration), world
        axes, when ``a = 0``: the frame's acceleration is ``J a + frame_drift``.
        """
        fid = self.frame_id(frame)
        q, v = self.check_q(q), self.check_v(v)
        pin.forwardKinematics(self._model, self._data, q, v, np.zeros(self.nv))
        return np.array(
            pin.getFrameClassicalAcceleration(
                self._model, self._data, fid, pin.LOCAL_WORLD_ALIGNED
            ).vector
        )

    # --- centre of mass and momentum --------------------------------------------------------

    def com(self, q: ArrayLike) -> Array:
        """Centre of mass in world coordinates, shape (3,) [m]."""
        q = self.check_q(q)
        return np.array(pin.centerOfMass(self._model, self._data, q, False))

    def com_jacobian(self, q: ArrayLike) -> Array:
        """Jacobian of the CoM velocity in world axes, shape (3, nv)."""
        q = self.check_q(q)
        return np.array(pin.jacobianCenterOfMass(self._model, self._data, q, False))

    def centroidal_momentum(self, q: ArrayLike, v: ArrayLike) -> Array:
        """Momentum at the CoM, world axes: ``(P, L_G)``, shape (6,) [kg m/s, kg m^2/s]."""
        q, v = self.check_q(q), self.check_v(v)
        return np.array(pin.computeCentroidalMomentum(self._model, self._data, q, v).vector)

    def centroidal_momentum_rate(self, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> Array:
        """Rate of the momentum at the CoM, world axes: ``(dP/dt, dL_G/dt)``, shape (6,).

        Units [N, N m]. ``dP/dt = m * (CoM acceleration)``.
        """
        q, v, a = self.check_q(q), self.check_v(v), self.check_v(a, "a")
        pin.computeCentroidalMomentumTimeVariation(self._model, self._data, q, v, a)
        return np.array(self._data.dhg.vector)

    # --- passes used by the balance and estimation modules ---------------------------------

    def centroidal_pass(
        self,
        q: Array,
        v: Array,
        a: Array,
        frame_ids: list[int],
        out: tuple[Array, Array, Array] | None = None,
        rotations: Array | None = None,
    ) -> tuple[Array, Array, Array]:
        """One Pinocchio pass: CoM, momentum rate at the CoM and frame origins.

        The hot path of batch work: ``q``, ``v``, ``a`` are **not checked** here (callers
        check whole arrays at once). Frame ids come from :meth:`frame_id`.

        Parameters
        ----------
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
        """
        m, d = self._model, self._data
        if out is None:
            out = (np.empty(3), np.empty(6), np.empty((len(frame_ids), 3)))
        com, rate, positions = out
        pin.computeCentroidalMomentumTimeVariation(m, d, q, v, a)  # also places the joints
        com[:] = d.com[0]
        rate[:] = d.dhg.vector
        if rotations is None:
            for k, fid in enumerate(frame_ids):
                positions[k] = pin.updateFramePlacement(m, d, fid).translation
        else:
            for k, fid in enumerate(frame_ids):
                placement = pin.updateFramePlacement(m, d, fid)
                positions[k] = placement.translation
                rotations[k] = placement.rotation
        return out

    def contact_pass(
        self, q: Array, v: Array, a: Array, frame_ids: list[int], *, jacobians: bool
    ) -> ContactPass:
        """One pass for contact estimation (unchecked inputs, like :meth:`centroidal_pass`).

        Always: CoM, momentum rate, frame origins and orientations. With ``jacobians``:
        also ``rnea(q, v, a)`` and the frames' ``LOCAL_WORLD_ALIGNED`` Jacobians.
        """
        m, d = self._model, self._data
        pin.computeCentroidalMomentumTimeVariation(m, d, q, v, a)
        k = len(frame_ids)
        positions, rotations = np.empty((k, 3)), np.empty((k, 3, 3))
        for i, fid in enumerate(frame_ids):
            placement = pin.updateFramePlacement(m, d, fid)
            positions[i], rotations[i] = placement.translation, placement.rotation
        com, rate = d.com[0].copy(), d.dhg.vector.copy()
        tau = J = None
        if jacobians:
            tau = np.array(pin.rnea(m, d, q, v, a))
            pin.computeJointJacobians(m, d, q)
            J = np.empty((k, 6, m.nv))
            for i, fid in enumerate(frame_ids):
                J[i] = pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED)
        return ContactPass(com, rate, positions, rotations, tau, J)

    def joint_wrenches(
        self, q: ArrayLike, v: ArrayLike, a: ArrayLike, external: External | None = None
    ) -> tuple[Array, Array]:
        """Wrench each joint transmits from its parent to its child subtree.

        Computed by the recursive Newton-Euler algorithm with the external wrenches acting
        on their frames' bodies. With a floating base, the first row is what the world would
        have to apply to the base for the motion to happen: zero when the external wrenches
        are consistent with the motion.

        Parameters
        ----------
        external : mapping of str to wrench, optional
            As in :meth:`external_generalized_forces`.

        Returns
        -------
        wrenches : ndarray, shape (njoints, 6)
            ``(f, tau)`` world axes, about each joint's centre, in model order (the floating
            base first, then :attr:`joint_names`) [N, N m].
        centres : ndarray, shape (njoints, 3)
            The joint centres in world coordinates [m].
        """
        q, v, a = self.check_q(q), self.check_v(v), self.check_v(a, "a")
        m, d = self._model, self._data
        pin.framesForwardKinematics(m, d, q)
        fext = [pin.Force.Zero() for _ in range(m.njoints)]
        for frame, wrench in (external or {}).items():
            fid = self.frame_id(frame)
            w = self._wrench_at_frame(wrench, fid, frame)
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


# --- helpers ------------------------------------------------------------------------------


def _state(x: ArrayLike, n: int, what: str) -> Array:
    if type(x) is np.ndarray and x.dtype == np.float64:
        arr = x
    else:
        try:
            arr = np.asarray(x, dtype=float)
        except (TypeError, ValueError) as exc:
            raise StateError(f"{what} must be an array of {n} numbers: {exc}") from None
    if arr.shape != (n,):
        if arr.ndim == 2 and 1 in arr.shape and arr.size == n:
            arr = arr.reshape(n)  # a column or row vector is an honest mistake
        else:
            raise StateError(f"{what} must have shape ({n},), got {arr.shape}")
    # x.x is finite iff every entry is (short of |x| > 1e154): a third of the cost of isfinite.
    if not math.isfinite(arr.dot(arr)):
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise StateError(f"{what} has non-finite values at indices {bad.tolist()}")
    return arr


def _as_se3(placement: Any) -> pin.SE3:
    if isinstance(placement, pin.SE3):
        return pin.SE3(placement)
    arr = np.asarray(placement, dtype=float)
    if arr.shape == (3,):
        return pin.SE3(np.eye(3), arr)
    if arr.shape == (4, 4):
        R = arr[:3, :3]
        if not np.allclose(R.T @ R, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
            raise ModelError("placement's rotation block is not a rotation matrix")
        return pin.SE3(R, arr[:3, 3])
    raise ModelError(f"placement must be a pinocchio.SE3, a (4, 4) matrix or a (3,) vector, got {arr.shape}")
