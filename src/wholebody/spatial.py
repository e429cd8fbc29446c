"""Wrenches that carry their point, and the algebra of moving them.

A wrench is force first, ``(f, tau)``: a force ``f`` [N] and the moment ``tau`` [N m] about a
point ``p`` [m], all in world axes. Moving it to another point is Varignon's theorem:

.. math::

    \\tau(B) = \\tau(A) + (p_A - p_B) \\times f
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from .errors import PointMismatchError, StateError

__all__ = [
    "Wrench",
    "skew",
    "cross",
    "shift_moment",
    "rotation_from_quat_xyzw",
    "PointMismatchError",
]

Array = NDArray[np.float64]

#: Two points closer than this [m] are the same point for :meth:`Wrench.__add__`.
POINT_TOL = 1e-12


def skew(x: ArrayLike) -> Array:
    """Skew-symmetric matrix with ``skew(x) @ y == cross(x, y)``, shape (3, 3)."""
    x = np.asarray(x, dtype=float)
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


_NEXT = np.array([1, 2, 0])
_PREV = np.array([2, 0, 1])


def cross(a: Array, b: Array) -> Array:
    """``a x b`` over the last axis of arrays of shape (..., 3), broadcasting.

    ``a[i+1] b[i+2] - a[i+2] b[i+1]`` with index arrays (``np.cross`` has a large fixed cost
    in numpy 2.x); two 3-vectors take the same three terms on Python floats.
    """
    if a.shape == (3,) and b.shape == (3,):
        a1, a2, a3 = a.tolist()
        b1, b2, b3 = b.tolist()
        return np.array([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1])
    return a.take(_NEXT, axis=-1) * b.take(_PREV, axis=-1) - a.take(_PREV, axis=-1) * b.take(
        _NEXT, axis=-1
    )


def rotation_from_quat_xyzw(quat: ArrayLike) -> Array:
    """Rotation matrices (..., 3, 3) of quaternions ``[x, y, z, w]`` (..., 4), each normalised
    first (the quaternion of Pinocchio's ``q``; reorder ``[w, x, y, z]`` before calling).

    Examples
    --------
    >>> import numpy as np
    >>> R = rotation_from_quat_xyzw([0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)])
    >>> np.round(R @ [1.0, 0.0, 0.0], 12)  # a quarter turn about z
    array([0., 1., 0.])
    """
    Q = np.asarray(quat, dtype=float)
    x, y, z, w = np.moveaxis(Q / np.linalg.norm(Q, axis=-1, keepdims=True), -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], axis=-1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], axis=-1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1),
        ],
        axis=-2,
    )


def shift_moment(
    force: ArrayLike, moment: ArrayLike, from_point: ArrayLike, to_point: ArrayLike
) -> Array:
    """Moment about ``to_point`` of a wrench known about ``from_point`` (Varignon).

    Broadcasts over leading dimensions: arrays of shape (..., 3) [N, N m, m].
    """
    force, moment = np.asarray(force, dtype=float), np.asarray(moment, dtype=float)
    lever = np.asarray(from_point, dtype=float) - np.asarray(to_point, dtype=float)
    return moment + cross(lever, force)


def _vec3(x: ArrayLike, what: str) -> Array:
    arr = np.asarray(x, dtype=float)
    if arr.shape != (3,):
        raise StateError(f"{what} must have shape (3,), got {arr.shape}")
    return arr


@dataclass(frozen=True, eq=False)
class Wrench:
    """A force and a moment about a point, world axes.

    Attributes
    ----------
    force : ndarray, shape (3,)
        Resultant force, world axes [N].
    moment : ndarray, shape (3,)
        Moment about ``point``, world axes [N m].
    point : ndarray, shape (3,)
        The point the moment is taken about, world coordinates [m].
    """

    force: Array
    moment: Array
    point: Array

    def __post_init__(self) -> None:
        object.__setattr__(self, "force", _vec3(self.force, "force"))
        object.__setattr__(self, "moment", _vec3(self.moment, "moment"))
        object.__setattr__(self, "point", _vec3(self.point, "point"))

    @classmethod
    def _from_checked(cls, force: Array, moment: Array, point: Array) -> Wrench:
        """A wrench from float arrays of shape (3,) that need no check (the library's own
        results): the fields are set without the validation of ``__init__``."""
        w = object.__new__(cls)
        w.__dict__.update(force=force, moment=moment, point=point)
        return w

    @classmethod
    def from_vector(cls, wrench: ArrayLike, point: ArrayLike) -> Wrench:
        """From a force-first 6-vector ``(f, tau)`` (world axes) about ``point``."""
        w = np.asarray(wrench, dtype=float)
        if w.shape != (6,):
            raise StateError(f"a wrench vector must have shape (6,) (f, tau), got {w.shape}")
        return cls(w[:3], w[3:], np.asarray(point, dtype=float))

    @classmethod
    def from_local(cls, wrench_local: ArrayLike, placement: pin.SE3) -> Wrench:
        """From a wrench in a frame's own axes at its origin; ``placement`` is ``oMf``."""
        w = np.asarray(wrench_local, dtype=float)
        R = placement.rotation
        return cls(R @ w[:3], R @ w[3:], placement.translation)

    def shift_to(self, point: ArrayLike) -> Wrench:
        """The same wrench about another point (Varignon)."""
        point = _vec3(point, "point")
        return Wrench(self.force, shift_moment(self.force, self.moment, self.point, point), point)

    def in_frame(self, placement: pin.SE3) -> Array:
        """Force-first 6-vector about the frame's origin, in the frame's axes.

        ``placement`` is the frame's pose in the world (``oMf``).
        """
        w = self.shift_to(placement.translation)
        R = placement.rotation
        return np.concatenate([R.T @ w.force, R.T @ w.moment])

    def as_vector(self) -> Array:
        """``(f, tau)``, shape (6,), world axes, about :attr:`point`."""
        return np.concatenate([self.force, self.moment])

    def __add__(self, other: Wrench) -> Wrench:
        if not isinstance(other, Wrench):
            return NotImplemented
        if np.max(np.abs(self.point - other.point)) > POINT_TOL:
            raise PointMismatchError(
                f"cannot add wrenches about different points {self.point} and {other.point}; "
                "shift one with .shift_to(point) first"
            )
        return Wrench(self.force + other.force, self.moment + other.moment, self.point)

    def __neg__(self) -> Wrench:
        return Wrench(-self.force, -self.moment, self.point)

    def __sub__(self, other: Wrench) -> Wrench:
        return self + (-other)

    def __repr__(self) -> str:
        # + 0.0 turns -0.0 into 0.0 for printing.
        f = np.array2string(self.force + 0.0, precision=4, suppress_small=True)
        t = np.array2string(np.round(self.moment, 12) + 0.0, precision=4, suppress_small=True)
        p = np.array2string(self.point + 0.0, precision=4, suppress_small=True)
        return f"Wrench(force={f} N, moment={t} N m, point={p} m)"
