"""The state part of :class:`wholebody.Robot` (functions bound as its methods): states checked
once, raw arrays checked at every call, arrays of samples, configurations.

A state is checked at the boundary and trusted where it travels (as mink's and pink's
``Configuration.update(q)``): :meth:`Robot.state` returns a :class:`State` of read-only
copies, which every single-sample method takes in place of ``q`` without a second check. Raw
arrays are checked at every call: float64 vectors of the right shape whose entries pass the
byte test of :mod:`wholebody.robot._checks` and whose unit-norm blocks pass
``pinocchio.isNormalized`` are taken as they are; anything else takes the full check, which
converts, renormalises or names the fault. N samples are checked once per batch
(:meth:`Robot.check_batch`), flagging bad samples.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidArgumentError, StateError
from ._checks import (
    F64,
    LARGE_TOP,
    MAX_STATE_MAGNITUDE,
    QUAT_EXACT_TOL,
    QUAT_RENORMALIZE_TOL,
    TOP_BYTE,
    as_state_vector,
    real_array,
    renormalized,
)

if TYPE_CHECKING:
    from wholebody.robot.core import Robot

Array = NDArray[np.float64]
_ndarray = np.ndarray
_is_normalized = pin.isNormalized
_STATE_FIELDS = ("q", "v", "a", "tau")


# --- a state checked once ---------------------------------------------------------------


class State:
    """One state of a robot, checked once by :meth:`Robot.state` and trusted after.

    Every single-sample method of :class:`~wholebody.Robot` (and the single-sample functions
    of :mod:`wholebody.balance`) takes a State in place of ``q``; ``v`` and ``a`` then come
    from it and are not given. Nothing is checked again: its arrays are read-only copies
    made at the check (they cannot be made writeable), a State cannot be changed, and it is
    made only by :meth:`Robot.state` (``State(...)`` raises), so it always holds checked
    numbers. Any robot with the same layout of ``q`` and ``v`` takes it.

    Attributes
    ----------
    q : ndarray, shape (nq,)
        Configuration, Pinocchio's layout (unit quaternions x-y-z-w) [m, rad].
    v : ndarray, shape (nv,), or None
        Velocity, base parts in the base frame [m/s, rad/s]; None when not given.
    a : ndarray, shape (nv,), or None
        Acceleration [m/s^2, rad/s^2]; None when not given.

    Examples
    --------
    >>> import numpy as np, wholebody
    >>> robot = wholebody.load("humanoid")
    >>> s = robot.state(robot.neutral(), np.zeros(robot.nv), np.zeros(robot.nv))
    >>> M, tau = robot.mass_matrix(s), robot.inverse_dynamics(s)  # no check here
    >>> bool(np.isclose(tau[2], robot.weight)), s.q.flags.writeable
    (True, False)
    """

    __slots__ = ("q", "v", "a", "_spec")
    q: Array
    v: Array | None
    a: Array | None
    _spec: tuple[Any, ...]

    def __new__(cls, *args: Any, **kwargs: Any) -> State:
        raise TypeError("a State is made by Robot.state(q, v, a), which checks it")

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"a State cannot be changed (setting {name!r}): make another")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"a State cannot be changed (deleting {name!r})")

    def __copy__(self) -> State:
        return self  # nothing in it can change: a copy is the State itself

    def __deepcopy__(self, memo: Any) -> State:
        return self

    def __repr__(self) -> str:
        given = ", ".join(n for n in ("q", "v", "a") if getattr(self, n) is not None)
        return f"State({given}; nq={self._spec[0]}, nv={self._spec[1]})"


def _read_only(x: Array) -> Array:
    """A copy of ``x`` in memory that cannot be written (a bytes object)."""
    return np.frombuffer(x.tobytes(), dtype=np.float64)


def state(
    robot: Robot, q: ArrayLike | State, v: ArrayLike | None = None, a: ArrayLike | None = None
) -> State:
    """Check a state once; every single-sample method then takes it in place of ``q``.

    Parameters
    ----------
    q : array of shape (nq,)
        Configuration, Pinocchio's layout [m, rad]. A :class:`State` of this robot's layout
        is returned as it is.
    v, a : arrays of shape (nv,), optional
        Velocity and acceleration (base parts in the base frame) [m/s, rad/s; m/s^2, rad/s^2].

    Returns
    -------
    State
        Read-only copies of the checked arrays (a quaternion renormalised as below).

    Raises
    ------
    StateError
        A wrong shape, entries that are not real numbers (strings, complex, booleans,
        masked), non-finite values, an entry beyond
        :data:`~wholebody.robot.MAX_STATE_MAGNITUDE` (1e8, SI units), a zero quaternion or
        (cos, sin) pair, or one whose norm is off 1 by more than 1e-6, naming the field, the
        index and the value. A norm off by less (and more than 1e-10) is renormalised in the
        copy, with a :class:`~wholebody.errors.StateWarning`.

    Examples
    --------
    >>> import numpy as np, wholebody
    >>> robot = wholebody.load("humanoid")
    >>> q = robot.neutral()
    >>> q[3:7] = 0.0
    >>> robot.state(q)
    Traceback (most recent call last):
    ...
    wholebody.errors.StateError: base quaternion q[3:7] is zero; a rotation needs a unit quaternion
    """
    if type(q) is State:
        _arrays_of(robot, q, v, a, "q")
        return q
    return _state_of(
        robot,
        _read_only(robot._check_q(q)),
        None if v is None else _read_only(as_state_vector(v, robot._nv, "v")),
        None if a is None else _read_only(as_state_vector(a, robot._nv, "a")),
    )


def _state_of(robot: Robot, q: Array, v: Array | None, a: Array | None) -> State:
    """A :class:`State` of arrays already checked, as they are (no copy)."""
    s = object.__new__(State)
    for name, x in (("q", q), ("v", v), ("a", a)):
        object.__setattr__(s, name, x)
    object.__setattr__(s, "_spec", robot._state_spec)
    return s


def _arrays_of(robot: Robot, s: State, v: Any, a: Any, need: str) -> tuple[Any, ...]:
    """The arrays of ``s`` a call needs (``need``: "q", "qv" or "qva"), or the
    :class:`StateError` that says why ``s`` cannot serve."""
    if s._spec != robot._state_spec:
        nq, nv, blocks = s._spec
        raise StateError(
            f"the State was checked for another layout (nq={nq}, nv={nv}, unit-norm blocks "
            f"{list(blocks)}) than robot {robot.name!r}'s (nq={robot._nq}, nv={robot._nv}, "
            f"{list(robot._state_spec[2])}): check the arrays with this robot's state()"
        )
    if v is not None or a is not None:
        raise StateError(
            "q is a State: its v and a are used, not others; give q, v and a as arrays to use these"
        )
    out = (s.q, s.v, s.a)[: len(need)]
    for name, x in zip(("q", "v", "a"), out):
        if x is None:
            raise StateError(
                f"this call needs {name} and the State has none: make it with "
                f"robot.state({', '.join(need)})"
            )
    return out


# --- raw arrays, checked at every call --------------------------------------------------


def _check_q(robot: Robot, q: ArrayLike | State) -> Array:
    """``q`` for a single-sample call: a :class:`State`'s, trusted, or an array checked now
    (the fused test, else the full check of :meth:`state`)."""
    if type(q) is State:
        return q.q if q._spec is robot._state_spec else _arrays_of(robot, q, None, None, "q")[0]
    x: Any = q
    if type(x) is _ndarray and x.dtype is F64 and x.ndim == 1:
        try:
            if 1 not in x.tobytes()[TOP_BYTE::8].translate(LARGE_TOP) and _is_normalized(
                robot._model, x, QUAT_EXACT_TOL
            ):
                return x
        except (TypeError, ValueError):
            pass  # a q of the wrong size (Pinocchio raises): named below
    arr = as_state_vector(x, robot._nq, "q")
    for start, stop, what, _ in robot._unit_blocks:
        arr = renormalized(arr, start, stop, what)
    return arr


def _check_qv(robot: Robot, q: ArrayLike | State, v: ArrayLike | None) -> tuple[Array, Array]:
    """``(q, v)`` for a single-sample call, as :func:`_check_q` (one fused test of both)."""
    if type(q) is State:
        if q._spec is robot._state_spec and v is None and q.v is not None:
            return q.q, q.v
        return _arrays_of(robot, q, v, None, "qv")
    x: Any = q
    y: Any = v
    try:
        if (
            type(x) is _ndarray
            and type(y) is _ndarray
            and x.dtype is F64
            and y.dtype is F64
            and x.ndim == 1
            and y.shape == robot._v_shape
            and 1 not in (x.tobytes() + y.tobytes())[TOP_BYTE::8].translate(LARGE_TOP)
            and _is_normalized(robot._model, x, QUAT_EXACT_TOL)
        ):
            return x, y
    except (TypeError, ValueError):
        pass  # a q of the wrong size (Pinocchio raises): named below
    return robot._check_q(q), as_state_vector(v, robot._nv, "v")  # type: ignore[arg-type]


def _check_qva(
    robot: Robot, q: ArrayLike | State, v: ArrayLike | None, a: ArrayLike | None
) -> tuple[Array, Array, Array]:
    """``(q, v, a)`` for a single-sample call, as :func:`_check_q` (one fused test of all)."""
    if type(q) is State:
        if (
            q._spec is robot._state_spec
            and v is None
            and a is None
            and q.v is not None
            and q.a is not None
        ):
            return q.q, q.v, q.a
        return _arrays_of(robot, q, v, a, "qva")
    x: Any = q
    y: Any = v
    z: Any = a
    try:
        if (
            type(x) is _ndarray
            and type(y) is _ndarray
            and type(z) is _ndarray
            and x.dtype is F64
            and y.dtype is F64
            and z.dtype is F64
            and x.ndim == 1
            and y.shape == robot._v_shape
            and z.shape == robot._v_shape
            and 1 not in (x.tobytes() + y.tobytes() + z.tobytes())[TOP_BYTE::8].translate(LARGE_TOP)
            and _is_normalized(robot._model, x, QUAT_EXACT_TOL)
        ):
            return x, y, z
    except (TypeError, ValueError):
        pass  # a q of the wrong size (Pinocchio raises): named below
    nv = robot._nv
    return (
        robot._check_q(q),
        as_state_vector(v, nv, "v"),  # type: ignore[arg-type]
        as_state_vector(a, nv, "a"),  # type: ignore[arg-type]
    )


# --- arrays of samples ------------------------------------------------------------------


class StateCheck(NamedTuple):
    """What :meth:`Robot.check_batch` found in N samples: ``(arrays, flagged, reasons)``.

    Attributes
    ----------
    arrays : dict of str to ndarray
        The checked arrays as float, by the names given; rows of ``q`` whose unit-norm blocks
        are off norm 1 by at most 1e-6 are renormalised (in a copy).
    flagged : ndarray of bool, shape (N,)
        The samples that cannot be used: non-finite values; in ``q``, ``v``, ``a`` and
        ``tau*`` arrays also entries beyond :data:`~wholebody.robot.MAX_STATE_MAGNITUDE`;
        quaternions and (cos, sin) pairs that are zero or off unit norm by more than 1e-6.
    reasons : dict of int to str
        Why each flagged sample is flagged (the first reason found), e.g. ``"v has
        non-finite values"`` or ``"v[3] = 1e+200 is beyond any physical magnitude (|x| <=
        1e+08)"``.
    """

    arrays: dict[str, Array]
    flagged: NDArray[np.bool_]
    reasons: dict[int, str]


# The generated constructor names this module, so that its annotations resolve here (the API
# reference reads them).
StateCheck.__new__.__module__ = __name__


def check_batch(robot: Robot, **arrays: ArrayLike) -> StateCheck:
    """Check N samples at once, flagging bad samples instead of raising (one sample:
    :meth:`state`, which raises).

    Parameters
    ----------
    **arrays
        ``q`` of shape (N, nq) and any of ``v``, ``a``, ``tau`` of shape (N, nv), or other
        named arrays of shape (N, ...) that must be finite.

    Returns
    -------
    StateCheck
        ``(arrays, flagged, reasons)``.

    Raises
    ------
    StateError
        When the arrays themselves have wrong shapes (a file-level problem).
    """
    out: dict[str, Array] = {}
    n = None
    for name, x in arrays.items():
        arr = x if type(x) is np.ndarray and x.dtype is F64 else real_array(x, name)
        if arr.ndim == 0:
            raise StateError(f"{name} must be an array of samples, got a scalar")
        if n is None:
            n = arr.shape[0]
        if arr.shape[0] != n:
            raise StateError(f"{name} has {arr.shape[0]} samples, expected {n}")
        width = {"q": robot.nq, "v": robot.nv, "a": robot.nv, "tau": robot.nv}.get(name)
        if width is not None and arr.shape != (n, width):
            raise StateError(f"{name} must have shape (N, {width}), got {arr.shape}")
        out[name] = arr
    n = n or 0
    bad = np.zeros(n, dtype=bool)
    reasons: dict[int, str] = {}

    def flag(rows: NDArray[np.bool_], why: str) -> None:
        for i in np.flatnonzero(rows & ~bad):
            reasons[int(i)] = why
        bad[rows] = True

    for name, arr in out.items():
        if not n:
            continue
        flat = arr.reshape(n, -1)
        if flat.shape[1] == 0:
            continue
        if name in _STATE_FIELDS or name.startswith("tau"):
            # max and min propagate NaN, and NaN compares False: one pass flags both.
            ok = (flat.max(axis=1) <= MAX_STATE_MAGNITUDE) & (
                flat.min(axis=1) >= -MAX_STATE_MAGNITUDE
            )
            if ok.all():
                continue
            finite = np.isfinite(flat[~ok]).all(axis=1)
            rows = np.flatnonzero(~ok)
            flag(np.isin(np.arange(n), rows[~finite]), f"{name} has non-finite values")
            for i in rows[finite]:
                if not bad[i]:
                    j = int(np.argmax(np.abs(flat[i])))
                    reasons[int(i)] = (
                        f"{name}[{j}] = {flat[i, j]:.6g} is beyond any physical magnitude "
                        f"(|x| <= {MAX_STATE_MAGNITUDE:g})"
                    )
                    bad[i] = True
        else:
            flag(np.asarray(~np.isfinite(flat).all(axis=1)), f"{name} has non-finite values")
    if "q" in out:
        q = out["q"]
        for start, stop, _, what in robot._unit_blocks:
            with np.errstate(invalid="ignore", over="ignore"):
                norm = np.linalg.norm(q[:, start:stop], axis=1)
            err = np.abs(norm - 1.0)
            flag(norm == 0.0, f"{what} is zero")
            flag(
                err > QUAT_RENORMALIZE_TOL,
                f"{what} norm off 1 by more than {QUAT_RENORMALIZE_TOL:g}",
            )
            fix = (err > QUAT_EXACT_TOL) & ~bad
            if fix.any():
                q = q.copy() if q is out["q"] else q
                q[fix, start:stop] /= norm[fix, None]
        out["q"] = q
    return StateCheck(out, bad, reasons)


# --- configurations ---------------------------------------------------------------------


def neutral(robot: Robot) -> Array:
    """The neutral configuration (base at the origin, identity orientation, joints at 0)."""
    return np.array(pin.neutral(robot._model))


def random_configuration(robot: Robot, seed: int | np.random.Generator | None = None) -> Array:
    """A random configuration, shape (nq,), reproducible from ``seed``.

    Joints with finite limits are drawn uniformly within them; other angles in
    ``[-pi, pi]``; the base position in ``[-1, 1]^3`` m and its orientation uniformly.
    """
    rng = np.random.default_rng(seed)
    m = robot._model
    dv = rng.uniform(-np.pi, np.pi, m.nv)
    q = np.array(pin.integrate(m, pin.neutral(m), dv))
    if robot._has_floating_base:
        q[:3] = rng.uniform(-1.0, 1.0, 3)
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)
    for j in range(1, m.njoints):
        jm = m.joints[j]
        if jm.nq == 1 and jm.nv == 1:
            lo, hi = m.lowerPositionLimit[jm.idx_q], m.upperPositionLimit[jm.idx_q]
            if np.isfinite(lo) and np.isfinite(hi) and hi > lo:
                q[jm.idx_q] = rng.uniform(lo, hi)
    return q


def q_from_named(
    robot: Robot,
    joint_positions: Mapping[str, float],
    *,
    base_position: ArrayLike | None = None,
    base_quaternion_xyzw: ArrayLike | None = None,
    beyond_limits: bool = False,
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
    beyond_limits : bool
        Accept positions outside the URDF's joint limits (default: a :class:`StateError`
        naming the joint, its limits, and "degrees?" when the value read as degrees is
        within them).

    Returns
    -------
    ndarray, shape (nq,)
        The checked configuration.
    """
    if not isinstance(joint_positions, Mapping):
        raise InvalidArgumentError(
            "joint_positions must be a mapping of joint name to position, got "
            f"{type(joint_positions).__name__}"
        )
    q = robot.neutral()
    m = robot._model
    for name, value in joint_positions.items():
        jm = m.joints[robot.joint_id(name)]
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise StateError(f"joint {name!r}: position must be a number, got {value!r}") from None
        if not np.isfinite(value):
            raise StateError(f"joint {name!r}: position is not finite ({value})")
        if jm.nq == 1:
            if not beyond_limits:
                _within_limits(m, name, jm.idx_q, value)
            q[jm.idx_q] = value
        elif jm.idx_q in robot._unit_pairs:
            q[jm.idx_q : jm.idx_q + 2] = np.cos(value), np.sin(value)
        else:
            raise StateError(f"joint {name!r} has {jm.nq} coordinates; give q directly")
    if base_position is not None or base_quaternion_xyzw is not None:
        if not robot._has_floating_base:
            raise StateError(f"robot {robot.name!r} has no floating base")
        if base_position is not None:
            q[:3] = as_state_vector(base_position, 3, "base_position")
        if base_quaternion_xyzw is not None:
            q[3:7] = as_state_vector(base_quaternion_xyzw, 4, "base_quaternion_xyzw")
    return robot._check_q(q)


def named(robot: Robot, q: ArrayLike | State) -> dict[str, float]:
    """Joint positions of ``q`` by name (continuous joints as angles) [rad or m]."""
    q = robot._check_q(q)
    out = {}
    for name, j in robot._joint_ids.items():
        jm = robot._model.joints[j]
        if jm.nq == 1:
            out[name] = float(q[jm.idx_q])
        elif jm.idx_q in robot._unit_pairs:
            out[name] = float(np.arctan2(q[jm.idx_q + 1], q[jm.idx_q]))
    return out


def _within_limits(model: Any, name: str, index: int, value: float) -> None:
    """Raise :class:`StateError` when ``value`` is outside joint ``name``'s limits (those the
    model has: finite and not both zero)."""
    lo, hi = float(model.lowerPositionLimit[index]), float(model.upperPositionLimit[index])
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo == hi == 0.0 or lo > hi:
        return
    slack = 1e-9 * max(1.0, abs(lo), abs(hi))
    if lo - slack <= value <= hi + slack:
        return
    hint = ""
    if lo <= np.radians(value) <= hi:
        hint = (
            f"; read as degrees it is {np.radians(value):.4g} rad, within them: give radians "
            "(np.radians)"
        )
    raise StateError(
        f"joint {name!r}: position {value:g} is beyond its limits [{lo:.4g}, {hi:.4g}] "
        f"(rad or m){hint}; pass beyond_limits=True to accept it"
    )
