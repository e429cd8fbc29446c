"""Checks of the controller's inputs that its tasks and contacts share."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidArgumentError

__all__ = ["as_placement", "as_vector"]

Array = NDArray[np.float64]


def as_vector(value: ArrayLike, size: int | None, what: str) -> Array:
    """A copy of ``value`` as a finite real vector (size,) (any length when ``size`` is None).

    Raises
    ------
    InvalidArgumentError
        Not real numbers (text, complex values), the wrong shape, or entries that are not
        finite (their indices named).
    """
    try:
        if np.iscomplexobj(value):
            raise TypeError
        x = np.array(value, dtype=float)  # (a copy; a masked array's data as it is)
    except (TypeError, ValueError):
        kind = getattr(value, "dtype", type(value).__name__)
        raise InvalidArgumentError(f"{what} must be a vector of real numbers, got {kind}") from None
    if x.ndim != 1 or (size is not None and x.shape != (size,)):
        expected = "a vector" if size is None else f"a vector of {size}"
        raise InvalidArgumentError(f"{what} must be {expected}, got shape {x.shape}")
    bad = np.flatnonzero(~np.isfinite(x))
    if len(bad):
        raise InvalidArgumentError(
            f"{what} must be finite; entries {bad[:10].tolist()} are {x[bad[:10]].tolist()}"
        )
    return x


def as_placement(value: pin.SE3 | ArrayLike, what: str) -> pin.SE3:
    """A copy of a rigid placement given as an SE3 or a (4, 4) homogeneous matrix: finite,
    its rotation orthonormal with determinant 1 (to 1e-6)."""
    try:
        T = value.homogeneous if isinstance(value, pin.SE3) else np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"{what} must be an SE3 or a (4, 4) matrix, got {value!r}"
        ) from None
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise InvalidArgumentError(
            f"{what} must be a finite SE3 or (4, 4) matrix, got {np.array2string(T)}"
        )
    R = T[:3, :3]
    (a, b, c), (d, e, f), (g, h, i) = R.tolist()
    gram = R.T @ R
    gram.flat[::4] -= 1.0
    det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
    if not (np.abs(gram).max() <= 1e-6 and det > 0):
        raise InvalidArgumentError(f"{what}: its rotation is not a rotation, {R.tolist()}")
    return pin.SE3(R.copy(), T[:3, 3].copy())
