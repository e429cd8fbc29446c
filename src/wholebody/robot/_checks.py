"""Checks of the numbers a :class:`wholebody.Robot` is given: states and placements.

The state checks' fast test is in :mod:`wholebody.robot._state`; the functions here are the
full path that converts an input, finds what is wrong with it and says so in the error.
"""

from __future__ import annotations

import math
import numbers
import sys
import warnings
from typing import Any

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from ..errors import ModelError, StateError, StateWarning

Array = NDArray[np.float64]

#: Quaternion norms within this of 1 are taken as they are; up to QUAT_RENORMALIZE_TOL they
#: are renormalised with a warning; beyond, rejected.
QUAT_EXACT_TOL = 1e-10
QUAT_RENORMALIZE_TOL = 1e-6

#: No entry of a state (q, v, a, tau) in SI units is physically larger than this: beyond, the
#: number is a unit or logging error (a UTM base position, ~5e6 m, is well inside).
MAX_STATE_MAGNITUDE = 1e8
#: ``x.x <= MAX_STATE_MAGNITUDE**2`` holds only for finite vectors whose entries are all
#: within the limit (it is False for NaN, inf and overflow): the full path's first test.
MAX_STATE_NORM2 = MAX_STATE_MAGNITUDE**2

F64 = np.dtype(np.float64)

#: The byte of a float64 that holds its sign and its 7 highest exponent bits, and a table
#: that maps that byte to 0 when ``|x| < 2**17`` (finite, far within MAX_STATE_MAGNITUDE) and
#: to 1 otherwise: ``1 not in x.tobytes()[TOP_BYTE::8].translate(LARGE_TOP)`` is the fast
#: test of every entry of float64 vectors at once (a copy, a slice and a table lookup).
TOP_BYTE = 7 if sys.byteorder == "little" else 0
_SMALL_TOPS = set(range(0x00, 0x41)) | set(range(0x80, 0xC1))
LARGE_TOP = bytes(0 if b in _SMALL_TOPS else 1 for b in range(256))


def as_state_vector(x: ArrayLike, n: int, what: str) -> Array:
    """``x`` as a float vector of shape (n,), or a :class:`StateError` saying what is wrong.

    Accepts real numbers of any integer or float dtype and a row or column vector of the
    right size (an honest mistake); refuses other shapes, entries that are not real numbers
    (strings, complex numbers, booleans, None, masked entries), non-finite values and entries
    beyond :data:`MAX_STATE_MAGNITUDE`, naming the field ``what``, the index and the value.
    """
    if (
        type(x) is np.ndarray
        and x.dtype is F64
        and x.shape == (n,)
        and 1 not in x.tobytes()[TOP_BYTE::8].translate(LARGE_TOP)
    ):
        return x  # the fast test of robot._state: finite entries, all |x| < 2**17
    arr = x if type(x) is np.ndarray and x.dtype is F64 else real_array(x, what)
    if arr.shape != (n,):
        if arr.ndim == 2 and 1 in arr.shape and arr.size == n:
            arr = arr.reshape(n)  # a column or row vector is an honest mistake
        else:
            raise StateError(f"{what} must have shape ({n},), got {arr.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        norm2 = arr.dot(arr)
    if not norm2 <= MAX_STATE_NORM2:  # False also for NaN and overflow
        check_magnitudes(arr, what)
    return arr


def real_array(x: Any, what: str) -> Array:
    """``x`` as a float array, or a :class:`StateError` naming its first entry that is not a
    real number (a masked entry is a missing value, whatever the array holds under it)."""
    if x is None:
        raise StateError(f"{what} must be an array of numbers, got None")
    if isinstance(x, np.ma.MaskedArray):
        masked = np.flatnonzero(np.ma.getmaskarray(x))
        if masked.size:
            i = int(masked[0])
            raise StateError(
                f"{_entry(what, x, i)} is masked (holding {_shown(x.data.flat[i])}): every "
                "entry is needed; fill or drop the sample"
            )
        x = x.data
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:  # ragged nested sequences
        raise StateError(f"{what} must be an array of numbers: {exc}") from None
    if arr.dtype.kind in "fiu":
        return arr.astype(np.float64, copy=False)
    for i, value in enumerate(arr.flat):
        if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
            raise StateError(
                f"{_entry(what, arr, i)} = {_shown(value)} is not a real number ({arr.dtype} array)"
            )
    try:
        return arr.astype(np.float64)
    except OverflowError as exc:  # an int beyond any float
        raise StateError(f"{what} has an entry beyond any float: {exc}") from None


def _entry(what: str, arr: Any, i: int) -> str:
    """The name of flat entry ``i`` of ``arr`` (``q[4]``, ``q[0, 4]``, or ``q`` for a scalar)."""
    if np.ndim(arr) == 0:
        return what
    index = np.unravel_index(i, np.shape(arr))
    return f"{what}[{', '.join(str(int(j)) for j in index)}]"


def _shown(x: Any) -> str:
    """A value for a message: 6 significant digits when they are exact, else every digit
    (``1e+09``, but ``100000000.00000001`` for the float after 1e8)."""
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and math.isfinite(x) and float(f"{x:.6g}") == x:
        return f"{x:.6g}"
    return repr(x)


def check_magnitudes(arr: Array, what: str) -> None:
    """Raise :class:`StateError` for non-finite entries or entries beyond the limit.

    The full path's second test: ``arr`` may still be fine (each entry within
    :data:`MAX_STATE_MAGNITUDE` while the norm is beyond it).
    """
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        values = ", ".join(_shown(x) for x in arr[bad].tolist())
        raise StateError(f"{what} has non-finite values at indices {bad.tolist()}: {values}")
    huge = np.flatnonzero(np.abs(arr) > MAX_STATE_MAGNITUDE)
    if huge.size:
        i = int(huge[0])
        more = f" (and {huge.size - 1} more)" if huge.size > 1 else ""
        raise StateError(
            f"{what}[{i}] = {_shown(arr[i])} is beyond any physical magnitude "
            f"(|x| <= {MAX_STATE_MAGNITUDE:g}){more}"
        )


def renormalized(q: Array, start: int, stop: int, what: str) -> Array:
    """``q`` with the unit-norm block ``q[start:stop]`` checked (and renormalised in a copy).

    A norm within :data:`QUAT_EXACT_TOL` of 1 is taken as it is (``pinocchio.isNormalized``'s
    test); up to :data:`QUAT_RENORMALIZE_TOL` the block is renormalised with a
    :class:`StateWarning`; beyond, or zero, it is a :class:`StateError`.
    """
    part = q[start:stop]
    norm = math.sqrt(float(part @ part))
    error = abs(norm - 1.0)
    if error <= QUAT_EXACT_TOL:
        return q
    if norm == 0.0:
        raise StateError(f"{what} is zero; a rotation needs a unit quaternion")
    if not error <= QUAT_RENORMALIZE_TOL:
        raise StateError(
            f"{what} has norm {norm:.9g}, not 1 (tolerance {QUAT_RENORMALIZE_TOL:g}); "
            "is the order x-y-z-w and is the log's rotation complete?"
        )
    warnings.warn(f"{what} has norm {norm:.12g}; renormalised", StateWarning, stacklevel=4)
    q = q.copy()
    q[start:stop] /= norm
    return q


def as_se3(placement: Any) -> pin.SE3:
    """A placement as a ``pin.SE3`` (a copy): an SE3, a (4, 4) matrix or a (3,) translation."""
    if isinstance(placement, pin.SE3):
        return pin.SE3(placement)
    try:
        arr = np.asarray(placement, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"placement must be numbers: {exc}") from None
    if not np.all(np.isfinite(arr)):
        raise ModelError("placement has non-finite values")
    if arr.shape == (3,):
        return pin.SE3(np.eye(3), arr)
    if arr.shape == (4, 4):
        R = arr[:3, :3]
        if not np.allclose(R.T @ R, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
            raise ModelError("placement's rotation block is not a rotation matrix")
        return pin.SE3(R, arr[:3, 3])
    raise ModelError(
        f"placement must be a pinocchio.SE3, a (4, 4) matrix or a (3,) vector, got {arr.shape}"
    )
