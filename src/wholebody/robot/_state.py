"""The state part of :class:`wholebody.Robot`: checks of q, v, a, tau and configurations.

Functions of the robot, bound as its methods in :mod:`wholebody.robot.core`.

A state check costs one call on the fast path: the compiled ``wholebody._speedups`` (built at
install when a C compiler is there; :data:`SPEEDUPS` says whether it is in use) tests a
float64 vector's length, that every entry is finite and within ``MAX_STATE_MAGNITUDE`` and,
for ``q``, the unit norm of its base quaternion and (cos, sin) pairs, in ~0.03 us. Only a
state that fails goes through the slow path, which finds what is wrong and names it; what the
fast path passes, the slow path passes unchanged and silently.

Without the compiled module (or with ``WHOLEBODY_NO_SPEEDUPS=1``) the same checks run in
Python: every entry's sign-and-exponent byte says ``|x| < 2**17`` (read from the bytes the
cache below keeps anyway), or else ``x.x <= MAX_STATE_MAGNITUDE**2``, which is False for
NaN, inf, overflow and magnitudes beyond any physical one; ``pinocchio.isNormalized`` checks
the size of ``q`` and its unit quaternions in C++. The bytes of the last ``q`` that passed
(and of the last ``v``, ``a``, ``tau``) are kept: a state equal to it, bit for bit, passes on
one comparison of bytes.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidArgumentError, StateError
from ._checks import (
    F64,
    MAX_STATE_MAGNITUDE,
    MAX_STATE_NORM2,
    QUAT_EXACT_TOL,
    QUAT_RENORMALIZE_TOL,
    SPEEDUPS,
    _speedups,
    as_state_vector,
    renormalized,
)

if TYPE_CHECKING:
    from wholebody.robot.core import Robot

Array = NDArray[np.float64]
_is_normalized = pin.isNormalized
# ``x.x`` overflows for entries beyond ~1e154: the check then fails (inf is not <= the limit)
# and the slow path names the entry. numpy's warning about it says nothing more: silence it
# here, for this module's fast paths only (an errstate block per call would cost ~1 us).
warnings.filterwarnings(
    "ignore", message="overflow encountered in dot", category=RuntimeWarning, module=__name__
)
_STATE_FIELDS = ("q", "v", "a", "tau")
#: The byte of a float64 that holds its sign and its 7 highest exponent bits, and the values
#: of that byte for ``|x| < 2**17``: ``x.tobytes()[_TOP::8]`` has one byte per entry, and when
#: each is one of ``_SMALL_TOP`` (``bytes.translate`` deletes them all) every entry is finite
#: and far within MAX_STATE_MAGNITUDE. The bytes are those the equality cache compares
#: anyway: the check costs a slice and a translate (~0.2 us), half of ``x.dot(x)``, which
#: remains the test for states with larger entries.
_TOP = 7 if sys.byteorder == "little" else 0
_SMALL_TOP = bytes(range(0x00, 0x41)) + bytes(range(0x80, 0xC1))
#: The same test as a translation table: each of ``_SMALL_TOP`` maps to 0, any other byte to 1,
#: so ``1 not in raw[_TOP::8].translate(_TOP_TABLE)`` holds when every entry is small (a
#: table lookup and a memchr: ~0.1 us less than deleting a set, whose table is built per call).
_TOP_TABLE = bytes(0 if b in _SMALL_TOP else 1 for b in range(256))


# --- single states ----------------------------------------------------------------------


def _check_q_py(robot: Robot, q: ArrayLike) -> Array:
    """Return ``q`` as a float array of shape (nq,) after checking it.

    The one-sample check of ``q`` alone, giving the array (the fast path every single-sample
    method takes; skipped when :attr:`check_inputs` is False); :meth:`check_state` checks one
    sample or N in one call.

    Raises
    ------
    StateError
        A wrong length, values that are not numbers, non-finite values, an entry beyond
        :data:`~wholebody.robot.MAX_STATE_MAGNITUDE` (1e8, SI units), a zero quaternion
        or one whose norm is off 1 by more than 1e-6. A norm off by less (and more than
        1e-10) is renormalised in a copy, with a :class:`~wholebody.errors.StateWarning`.
    """
    if robot.check_inputs:
        x: Any = q
        try:
            if x.dtype is F64 and x.ndim == 1:
                raw = x.tobytes()
                if raw == robot._checked_q:
                    return x
                # A new q: the byte test and the quaternions inline (a call costs ~0.1 us).
                if 1 not in raw[_TOP::8].translate(_TOP_TABLE) and _is_normalized(
                    robot._model, x, QUAT_EXACT_TOL
                ):
                    robot._checked_q = raw
                    return x
                if robot._new_q_passes(x, raw):
                    return x
        except (AttributeError, TypeError, ValueError, RuntimeError, RuntimeWarning):
            pass  # not an array, a wrong size, an overflow: the slow path says which
        return robot._check_q_slow(q)
    return q  # type: ignore[return-value]


def _new_q_passes(robot: Robot, x: Any, raw: bytes) -> bool:
    """The fast check of a float64 vector ``x`` (bytes ``raw``) not seen before: finite
    and small entries (the byte test, else ``x.x``) and unit quaternions of the right
    size (Pinocchio, in C++; a wrong size raises). Remembered when it passes."""
    if (
        not raw[_TOP::8].translate(None, _SMALL_TOP) or x.dot(x) <= MAX_STATE_NORM2
    ) and _is_normalized(robot._model, x, QUAT_EXACT_TOL):
        robot._checked_q = raw
        return True
    return False


def _new_v_passes(robot: Robot, x: Any, raw: bytes, what: str) -> bool:
    """:meth:`_new_q_passes` for a velocity-sized vector named ``what``: its length and
    finite, small entries."""
    if len(x) == robot._nv and (
        not raw[_TOP::8].translate(None, _SMALL_TOP) or x.dot(x) <= MAX_STATE_NORM2
    ):
        robot._checked_v[what] = raw
        return True
    return False


def _check_q_slow(robot: Robot, q: ArrayLike) -> Array:
    arr = as_state_vector(q, robot._nq, "q")
    if robot._has_floating_base:
        x, y, z, w = arr[3:7].tolist()
        if abs(x * x + y * y + z * z + w * w - 1.0) > 2 * QUAT_EXACT_TOL:
            arr = renormalized(arr, 3, 7, "base quaternion q[3:7]")
    for i in robot._unit_pairs:
        arr = renormalized(arr, i, i + 2, f"(cos, sin) pair q[{i}:{i + 2}] of a continuous joint")
    return arr


def _check_v_py(robot: Robot, v: ArrayLike, what: str = "v") -> Array:
    """Return a velocity-sized vector (v, a, tau) as a float array after checking it.

    Parameters
    ----------
    v : array of shape (nv,)
        The vector; a row or column vector of that size is accepted and flattened.
    what : str
        Its name in error messages (``"v"``, ``"a"``, ``"tau"``).

    Raises
    ------
    StateError
        A wrong length, values that are not numbers, non-finite values or an entry
        beyond :data:`~wholebody.robot.MAX_STATE_MAGNITUDE` (1e8), naming ``what``, the
        index and the value.
    """
    if robot.check_inputs:
        x: Any = v
        try:
            if x.dtype is F64 and x.ndim == 1:
                raw = x.tobytes()
                if raw == robot._checked_v.get(what) or robot._new_v_passes(x, raw, what):
                    return x
        except (AttributeError, TypeError, ValueError, RuntimeWarning):
            pass  # RuntimeWarning: an overflow in dot, where warnings are errors
        return as_state_vector(v, robot._nv, what)
    return v  # type: ignore[return-value]


def _check_qv_py(robot: Robot, q: ArrayLike, v: ArrayLike) -> tuple[Array, Array]:
    """``check_q(q), check_v(v)`` in one call: each vector's bytes are read once, and a
    pair equal to the last that passed costs two comparisons."""
    if not robot.check_inputs:
        return q, v  # type: ignore[return-value]
    x: Any = q
    y: Any = v
    try:
        if x.dtype is F64 and y.dtype is F64 and x.ndim == 1 and y.ndim == 1:
            rq, rv = x.tobytes(), y.tobytes()
            checked = robot._checked_v
            if rq == robot._checked_q and rv == checked.get("v"):
                return x, y
            # A new state: one byte test over both vectors, as in _check_qva.
            if (
                len(y) == robot._nv
                and 1 not in (rq + rv)[_TOP::8].translate(_TOP_TABLE)
                and _is_normalized(robot._model, x, QUAT_EXACT_TOL)
            ):
                robot._checked_q = rq
                checked["v"] = rv
                return x, y
            if (rq == robot._checked_q or robot._new_q_passes(x, rq)) and (
                rv == robot._checked_v.get("v") or robot._new_v_passes(y, rv, "v")
            ):
                return x, y
    except (AttributeError, TypeError, ValueError, RuntimeError, RuntimeWarning):
        pass  # the separate checks say what is wrong
    return robot.check_q(q), robot.check_v(v)


def _check_qva_py(
    robot: Robot, q: ArrayLike, v: ArrayLike, a: ArrayLike
) -> tuple[Array, Array, Array]:
    """``check_q(q), check_v(v), check_v(a, "a")`` in one call, as :meth:`_check_qv`."""
    if not robot.check_inputs:
        return q, v, a  # type: ignore[return-value]
    x: Any = q
    y: Any = v
    z: Any = a
    try:
        if (
            x.dtype is F64
            and y.dtype is F64
            and z.dtype is F64
            and x.ndim == 1
            and y.ndim == 1
            and z.ndim == 1
        ):
            rq, rv, ra = x.tobytes(), y.tobytes(), z.tobytes()
            checked = robot._checked_v
            if rq == robot._checked_q and rv == checked.get("v") and ra == checked.get("a"):
                return x, y, z
            # A new state: one byte test over the three vectors at once (one slice and one
            # translate instead of three), then the quaternions; larger entries, wrong sizes
            # and partial repeats take the separate tests below.
            if (
                len(y) == robot._nv
                and len(z) == robot._nv
                and 1 not in (rq + rv + ra)[_TOP::8].translate(_TOP_TABLE)
                and _is_normalized(robot._model, x, QUAT_EXACT_TOL)
            ):
                robot._checked_q = rq
                checked["v"] = rv
                checked["a"] = ra
                return x, y, z
            if (
                (rq == robot._checked_q or robot._new_q_passes(x, rq))
                and (rv == checked.get("v") or robot._new_v_passes(y, rv, "v"))
                and (ra == checked.get("a") or robot._new_v_passes(z, ra, "a"))
            ):
                return x, y, z
    except (AttributeError, TypeError, ValueError, RuntimeError, RuntimeWarning):
        pass  # the separate checks say what is wrong
    return robot.check_q(q), robot.check_v(v), robot.check_v(a, "a")


# --- the compiled fast paths --------------------------------------------------------------


def _spec(robot: Robot) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
    """What the compiled checks read of ``robot`` (set with its name tables): ``(nq, nv,
    starts of the quaternions in q, starts of the (cos, sin) pairs)``."""
    return robot._state_spec


def _check_q_c(robot: Robot, q: ArrayLike) -> Array:
    """:func:`check_q` on the compiled check."""
    if robot.check_inputs:
        spec = robot._state_spec
        if _speedups.q(q, spec):
            return q  # type: ignore[return-value]
        return robot._check_q_slow(q)
    return q  # type: ignore[return-value]


def _check_v_c(robot: Robot, v: ArrayLike, what: str = "v") -> Array:
    """:func:`check_v` on the compiled check."""
    if robot.check_inputs:
        spec = robot._state_spec
        if _speedups.v(v, spec):
            return v  # type: ignore[return-value]
        return as_state_vector(v, robot._nv, what)
    return v  # type: ignore[return-value]


def _check_qv_c(robot: Robot, q: ArrayLike, v: ArrayLike) -> tuple[Array, Array]:
    """:func:`_check_qv` on the compiled check (one call for both)."""
    if robot.check_inputs:
        spec = robot._state_spec
        if not _speedups.qv(q, v, spec):
            return robot.check_q(q), robot.check_v(v)
    return q, v  # type: ignore[return-value]


def _check_qva_c(
    robot: Robot, q: ArrayLike, v: ArrayLike, a: ArrayLike
) -> tuple[Array, Array, Array]:
    """:func:`_check_qva` on the compiled check (one call for the three)."""
    if robot.check_inputs:
        spec = robot._state_spec
        if not _speedups.qva(q, v, a, spec):
            return robot.check_q(q), robot.check_v(v), robot.check_v(a, "a")
    return q, v, a  # type: ignore[return-value]


_F = TypeVar("_F")


def _select(name: str, compiled: _F, python: _F) -> _F:
    """The compiled path's function when :data:`SPEEDUPS`, else the Python one, under the
    public name and the Python one's docstring (the Robot methods and the API reference)."""
    chosen: Any = compiled if SPEEDUPS else python
    chosen.__doc__ = getattr(python, "__doc__", None)
    chosen.__name__ = chosen.__qualname__ = name
    return cast(_F, chosen)


check_q = _select("check_q", _check_q_c, _check_q_py)
check_v = _select("check_v", _check_v_c, _check_v_py)
_check_qv = _select("_check_qv", _check_qv_c, _check_qv_py)
_check_qva = _select("_check_qva", _check_qva_c, _check_qva_py)


# --- one sample or N -------------------------------------------------------------------


class StateCheck(NamedTuple):
    """What :meth:`Robot.check_state` found, for one sample or N: ``(arrays, flagged,
    reasons)``, a tuple (``arrays, bad, reasons = robot.check_batch(...)`` unpacks it as in
    earlier releases).

    Attributes
    ----------
    arrays : dict of str to ndarray
        The checked arrays as float, by the names given: shape (nq,) / (nv,) for one sample,
        (N, nq) / (N, nv) for N (other named arrays as given).
    flagged : bool or ndarray of bool, shape (N,)
        The samples that cannot be used; always False for one sample (bad input raises).
    reasons : dict of int to str
        Why each flagged sample is flagged (the first reason found); empty for one sample.
    """

    arrays: dict[str, Array]
    flagged: Any
    reasons: dict[int, str]

    @property
    def is_batch(self) -> bool:
        """True for N samples, False for one."""
        return isinstance(self.flagged, np.ndarray)


# The generated constructor names this module, so that its annotations resolve here (the API
# reference reads them).
StateCheck.__new__.__module__ = __name__


def check_state(robot: Robot, **arrays: ArrayLike) -> StateCheck:
    """Check one sample or N in one call: one sample raises on bad input, N samples flag it.

    Like SciPy's ``Rotation``, the shape says which: ``q`` of shape (nq,) (or, without ``q``,
    the first of ``v``, ``a``, ``tau`` of shape (nv,)) is one sample, checked as
    :meth:`check_q` and :meth:`check_v` check it (a :class:`~wholebody.errors.StateError`
    naming the field, index and value; a quaternion norm off 1 by less than 1e-6
    renormalised with a :class:`~wholebody.errors.StateWarning`); (N, nq) is N samples,
    checked as :meth:`check_batch` checks them (bad samples flagged with a reason, never
    dropped). The result says which it holds (:attr:`StateCheck.is_batch`). The states are
    checked whatever :attr:`check_inputs` says.

    Parameters
    ----------
    **arrays
        ``q`` of shape (nq,) or (N, nq) and any of ``v``, ``a``, ``tau`` of shape (nv,) or
        (N, nv) [SI units, Pinocchio's layout]; other named arrays (one sample: any shape;
        N samples: (N, ...)) must be finite (and within the magnitude limit when their name
        starts with ``tau``).

    Returns
    -------
    StateCheck
        ``(arrays, flagged, reasons)``: for one sample the checked vectors, ``False`` and
        ``{}``; for N as :meth:`check_batch` returns them.

    Raises
    ------
    StateError
        One sample: any bad value. N samples: arrays whose shapes do not fit (a file-level
        problem); bad values are flagged instead.

    Examples
    --------
    One configuration, then three of which one has a zero base quaternion:

    >>> import numpy as np, wholebody
    >>> robot = wholebody.load("humanoid")
    >>> one = robot.check_state(q=robot.neutral(), v=np.zeros(robot.nv))
    >>> one.is_batch, one.arrays["q"].shape, one.flagged
    (False, (26,), False)
    >>> Q = np.tile(robot.neutral(), (3, 1))
    >>> Q[1, 3:7] = 0.0
    >>> many = robot.check_state(q=Q)
    >>> many.is_batch, many.flagged.tolist(), many.reasons
    (True, [False, True, False], {1: 'base quaternion is zero'})
    >>> robot.check_state(q=Q[1])
    Traceback (most recent call last):
    ...
    wholebody.errors.StateError: base quaternion q[3:7] is zero; a rotation needs a unit quaternion
    """
    first = next((arrays[n] for n in _STATE_FIELDS if n in arrays), None)
    if first is None or np.ndim(first) != 1:
        return robot.check_batch(**arrays)
    out: dict[str, Array] = {}
    for name, x in arrays.items():
        if name == "q":
            out[name] = robot._check_q_slow(x)  # the full check (whatever check_inputs says)
        elif name in _STATE_FIELDS:
            out[name] = as_state_vector(x, robot._nv, name)
        else:  # the batch's rule for any other named array, on a batch of one
            try:
                arr = np.asarray(x, dtype=float)
            except (TypeError, ValueError) as exc:
                raise StateError(f"{name} must be an array of numbers: {exc}") from None
            _, bad, reasons = robot.check_batch(**{name: arr[None]})
            if bad[0]:
                raise StateError(reasons[0])
            out[name] = arr
    return StateCheck(out, False, {})


# --- arrays of samples ------------------------------------------------------------------


def check_batch(robot: Robot, **arrays: ArrayLike) -> StateCheck:
    """Check arrays of samples at once; flag bad rows instead of raising.

    The N-sample form of :meth:`check_state` (which also takes one sample), kept under this
    name of earlier releases: it always takes N samples.

    Parameters
    ----------
    **arrays
        ``q`` of shape (N, nq) and any of ``v``, ``a``, ``tau`` of shape (N, nv), or other
        named arrays of shape (N, ...) that must be finite.

    Returns
    -------
    StateCheck
        ``(arrays, bad, reasons)``, a tuple:

        arrays : dict of str to ndarray
            The arrays as float; rows of ``q`` whose quaternion norm is within 1e-6 of 1
            are renormalised (in a copy).
        bad : ndarray of bool, shape (N,)
            Rows that cannot be used: non-finite values; in ``q``, ``v``, ``a`` and ``tau*``
            arrays also entries beyond :data:`~wholebody.robot.MAX_STATE_MAGNITUDE` (1e8,
            SI units); quaternions that are zero or off unit norm by more than 1e-6.
        reasons : dict of int to str
            Why each bad row is bad (first reason found), e.g. ``"v has non-finite
            values"`` or ``"v[3] = 1e+200 is beyond any physical magnitude (|x| <=
            1e+08)"``.

    Raises
    ------
    StateError
        When the arrays themselves have wrong shapes (a file-level problem).
    """
    out: dict[str, Array] = {}
    n = None
    for name, x in arrays.items():
        try:
            arr = np.asarray(x, dtype=float)
        except (TypeError, ValueError) as exc:
            raise StateError(f"{name} must be an array of numbers: {exc}") from None
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
            flag(_mask(n, rows[~finite]), f"{name} has non-finite values")
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
        spans = ([(3, 7, "base quaternion")] if robot._has_floating_base else []) + [
            (i, i + 2, "continuous joint (cos, sin)") for i in robot._unit_pairs
        ]
        for start, stop, what in spans:
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
            lo, hi = robot._lower[jm.idx_q], robot._upper[jm.idx_q]
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
    return robot.check_q(q)


def named(robot: Robot, q: ArrayLike) -> dict[str, float]:
    """Joint positions of ``q`` by name (continuous joints as angles) [rad or m]."""
    q = robot.check_q(q)
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


def _mask(n: int, rows: NDArray[np.intp]) -> NDArray[np.bool_]:
    m = np.zeros(n, dtype=bool)
    m[rows] = True
    return m
