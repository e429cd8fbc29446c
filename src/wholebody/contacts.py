"""Contacts: where a robot touches the world, and how much friction it has there.

A contact is attached to a robot frame. Its wrench unknowns are in **world axes at the
contact frame's origin**: a force ``f`` (3,) for a :class:`PointContact`, a wrench
``(f, tau)`` (6,) for a :class:`SurfaceContact`. Friction geometry (normal, sole sizes) is
given in the contact frame's own axes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from .errors import ContactError

__all__ = ["PointContact", "SurfaceContact", "Contact", "ground_aligned_rotations"]

Array = NDArray[np.float64]


def _positive(value: float, what: str, owner: str) -> float:
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ContactError(f"{owner}: {what} must be a positive finite number, got {value}")
    return value


def _unit(value: object, what: str, owner: str) -> Array:
    n = np.asarray(value, dtype=float)
    if n.shape != (3,) or not np.all(np.isfinite(n)) or np.linalg.norm(n) < 1e-9:
        raise ContactError(f"{owner}: {what} must be a non-zero finite 3-vector, got {value}")
    return n / np.linalg.norm(n)


def _ground_normal(value: object, owner: str) -> Array | None:
    return None if value is None else _unit(value, "ground_normal", owner)


def ground_aligned_rotations(rotations: Array, ground_normal: Array) -> Array:
    """Contact frames turned onto the ground: z along ``ground_normal`` (world axes), x the
    frame's x projected on the ground plane, y completing them. ``rotations`` (..., 3, 3)."""
    n = np.asarray(ground_normal, dtype=float)
    x = rotations[..., :, 0] - (rotations[..., :, 0] @ n)[..., None] * n
    # A frame whose x is along the normal (a foot on its toes): use its y instead.
    degenerate = np.linalg.norm(x, axis=-1) < 1e-9
    if np.any(degenerate):
        y_proj = rotations[..., :, 1] - (rotations[..., :, 1] @ n)[..., None] * n
        x = np.where(degenerate[..., None], np.cross(y_proj, n), x)
    x = x / np.linalg.norm(x, axis=-1, keepdims=True)
    y = np.cross(np.broadcast_to(n, x.shape), x)
    return np.stack([x, y, np.broadcast_to(n, x.shape)], axis=-1)


@dataclass(frozen=True)
class PointContact:
    """A point contact at a frame's origin with Coulomb friction.

    Parameters
    ----------
    frame : str
        Robot frame whose origin is the contact point.
    mu : float, keyword-only
        Friction coefficient (> 0).
    normal : array of shape (3,), keyword-only
        Contact normal in the frame's axes, pointing into the robot (the direction the
        ground pushes); default ``(0, 0, 1)``. Normalised here.
    name : str, keyword-only
        Label for reports; defaults to ``frame``.
    ground_normal : array of shape (3,), keyword-only, optional
        The normal of the surface touched, in **world** axes (e.g. ``(0, 0, 1)`` for flat
        ground). When given, log checks measure friction about it instead of about the
        frame's own normal, which a tilted or rolling foot turns away. Normalised here.
    """

    frame: str
    mu: float = field(kw_only=True)
    normal: Array = field(kw_only=True, default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    name: str = field(kw_only=True, default="")
    ground_normal: Array | None = field(kw_only=True, default=None)

    #: Size of this contact's wrench unknowns: a force.
    size = 3

    def __post_init__(self) -> None:
        label = f"point contact {self.name or self.frame!r}"
        object.__setattr__(self, "mu", _positive(self.mu, "mu", label))
        object.__setattr__(self, "normal", _unit(self.normal, "normal", label))
        object.__setattr__(self, "ground_normal", _ground_normal(self.ground_normal, label))
        if not self.name:
            object.__setattr__(self, "name", self.frame)


@dataclass(frozen=True)
class SurfaceContact:
    """A rectangular surface contact (a sole) in the plane z = 0 of a frame, z normal.

    The rectangle is centred at the frame's origin, or at ``center`` in the frame's x-y plane
    (an asymmetric sole: the ankle frame is not above the middle of the foot). The contact's
    wrench stays about the frame's origin everywhere (logs, estimates, Jacobians); the wrench
    cone, the CoP bounds and the support areas honour the offset.

    Parameters
    ----------
    frame : str
        Robot frame of the contact: its x-y plane holds the rectangle, its z axis is the
        contact normal (pointing into the robot).
    half_length : float, keyword-only
        Half-size X along the frame's x axis [m].
    half_width : float, keyword-only
        Half-size Y along the frame's y axis [m].
    mu : float, keyword-only
        Friction coefficient (> 0).
    name : str, keyword-only
        Label for reports; defaults to ``frame``.
    ground_normal : array of shape (3,), keyword-only, optional
        The normal of the surface touched, in **world** axes. When given, log checks evaluate
        the cone in the sole's frame turned so that its z axis is this normal (its x axis the
        sole's, projected on the ground): a slightly tilted, lightly loaded foot is then not
        "slipping" because of its tilt.
    center : pair of float, keyword-only
        ``(c_x, c_y)``: the rectangle's centre in the frame's x-y plane [m] (contact frame
        coordinates); default ``(0, 0)``, the frame's origin. Any 2-sequence is accepted and
        stored as a tuple of floats (so contacts compare by value).
    """

    frame: str
    half_length: float = field(kw_only=True)
    half_width: float = field(kw_only=True)
    mu: float = field(kw_only=True)
    name: str = field(kw_only=True, default="")
    ground_normal: Array | None = field(kw_only=True, default=None)
    center: tuple[float, float] = field(kw_only=True, default=(0.0, 0.0))

    #: Size of this contact's wrench unknowns: a wrench (f, tau).
    size = 6

    def __post_init__(self) -> None:
        label = f"surface contact {self.name or self.frame!r}"
        object.__setattr__(self, "mu", _positive(self.mu, "mu", label))
        object.__setattr__(self, "half_length", _positive(self.half_length, "half_length", label))
        object.__setattr__(self, "half_width", _positive(self.half_width, "half_width", label))
        object.__setattr__(self, "ground_normal", _ground_normal(self.ground_normal, label))
        try:
            c = np.asarray(self.center, dtype=float)
        except (TypeError, ValueError):
            c = np.full(0, np.nan)
        if c.shape != (2,) or not np.all(np.isfinite(c)):
            raise ContactError(
                f"{label}: center must be 2 finite numbers (c_x, c_y) [m] in the contact "
                f"frame, got {self.center!r}"
            )
        object.__setattr__(self, "center", (float(c[0]), float(c[1])))
        if not self.name:
            object.__setattr__(self, "name", self.frame)

    @property
    def center_point(self) -> Array:
        """The rectangle's centre ``(c_x, c_y, 0)`` in the contact frame, shape (3,) [m]."""
        return np.array([self.center[0], self.center[1], 0.0])

    @property
    def corners(self) -> Array:
        """The rectangle's corners in the contact frame, shape (4, 3) [m] (about
        :attr:`center`)."""
        X, Y = self.half_length, self.half_width
        return np.array([[X, Y, 0.0], [-X, Y, 0.0], [-X, -Y, 0.0], [X, -Y, 0.0]]) + (
            self.center_point
        )


Contact = PointContact | SurfaceContact
