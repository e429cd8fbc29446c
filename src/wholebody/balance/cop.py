"""Centres of pressure and the zero-moment point.

A surface contact with wrench ``(f, tau)`` about its centre, in its own frame (z normal), has
its centre of pressure at

.. math::

    \\mathrm{cop} = \\left(-\\frac{\\tau_y}{f_z}, \\frac{\\tau_x}{f_z}\\right)

when ``f_z > 0`` (no pressure, no centre of pressure). The ZMP of a whole robot on a plane is the
same formula for the total contact (or minus the gravito-inertial) wrench about a point of the
plane. This module is the one home of that formula: checks, estimates, reports and plots use
:func:`cop_in_contact_frame`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..contacts import SurfaceContact
from ..errors import InvalidArgumentError, StateError
from ..robot.core import Robot
from ..spatial import Wrench

__all__ = ["CentreOfPressure", "cop_in_contact_frame", "centre_of_pressure", "zmp"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class CentreOfPressure:
    """Centre of pressure of a surface contact.

    Attributes
    ----------
    local : ndarray, shape (2,)
        ``(x, y)`` in the contact frame [m]; NaN when the normal force is not positive.
    world : ndarray, shape (3,)
        The same point in world coordinates [m].
    normal_force : float
        ``f_z`` in the contact frame [N].
    """

    local: Array
    world: Array
    normal_force: float


def _cop_parts(fz: float, tau_x: float, tau_y: float) -> tuple[float, float]:
    """``(-tau_y / f_z, tau_x / f_z)`` of one wrench on Python floats (NaN unless f_z > 0)."""
    if fz > 0:
        return -tau_y / fz, tau_x / fz
    return math.nan, math.nan


def cop_in_contact_frame(wrench_local: ArrayLike) -> Array:
    """Centre of pressure ``(-tau_y / f_z, tau_x / f_z)`` of wrenches in a contact frame.

    Parameters
    ----------
    wrench_local : array, shape (..., 6)
        ``(f, tau)`` about the contact frame's origin, in its own axes (z normal) [N, N m].

    Returns
    -------
    ndarray, shape (..., 2)
        ``(x, y)`` in the contact frame [m]; NaN where ``f_z <= 0`` (no pressure).
    """
    w = np.asarray(wrench_local, dtype=float)
    if w.ndim == 1:  # one wrench: the same formula on Python floats
        _, _, fz1, tx, ty, _ = w.tolist()
        return np.array(_cop_parts(fz1, tx, ty))
    fz = w[..., 2:3]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(fz > 0, np.stack([-w[..., 4], w[..., 3]], axis=-1) / fz, np.nan)


def centre_of_pressure(
    robot: Robot, q: ArrayLike, contact: SurfaceContact, wrench: ArrayLike
) -> CentreOfPressure:
    """Centre of pressure of a surface contact's wrench.

    Parameters
    ----------
    robot : Robot
    q : array, shape (nq,)
        Configuration.
    contact : SurfaceContact
    wrench : array, shape (6,)
        ``(f, tau)`` in world axes about the contact frame's origin [N, N m].

    Returns
    -------
    CentreOfPressure
        In the contact frame (z normal) and in world coordinates.
    """
    w = wrench if type(wrench) is np.ndarray and wrench.dtype == np.float64 else None
    if w is None:
        w = np.asarray(wrench, dtype=float)
    if w.shape != (6,):
        raise StateError(f"a surface contact wrench must have shape (6,), got {w.shape}")
    f1, f2, f3, t1, t2, t3 = w.tolist()
    if not math.isfinite(math.hypot(f1, f2, f3, t1, t2, t3)):  # NaN or inf for non-finite
        if not np.isfinite(w).all():
            raise StateError(f"contact {contact.name!r}: wrench has non-finite values: {w}")
    placed = robot.placements(q, contact.frame)
    (r11, r12, r13), (r21, r22, r23), (r31, r32, r33) = placed.rotations.tolist()
    p1, p2, p3 = placed.positions.tolist()
    # (R^T f, R^T tau): the wrench in the contact frame's axes (its origin is the point)
    fz = f1 * r13 + f2 * r23 + f3 * r33
    tx = t1 * r11 + t2 * r21 + t3 * r31
    ty = t1 * r12 + t2 * r22 + t3 * r32
    x, y = _cop_parts(fz, tx, ty)
    world = np.array([p1 + (r11 * x + r12 * y), p2 + (r21 * x + r22 * y), p3 + (r31 * x + r32 * y)])
    return CentreOfPressure(np.array([x, y]), world, fz)


def zmp(wrench: Wrench, *, height: float = 0.0) -> Array:
    """Zero-moment point of a wrench on the horizontal plane ``z = height``.

    The point of the plane about which the wrench's horizontal moment vanishes:
    ``x = -tau_y / f_z``, ``y = tau_x / f_z`` with the moment taken about ``(0, 0, height)``.
    For the contact wrench this is the robot's ZMP (centre of pressure of all contacts on
    flat ground); pass ``-gravito_inertial_wrench(...)`` for the ZMP of the motion.

    Parameters
    ----------
    wrench : Wrench
        World axes, about any point.
    height : float
        Height of the plane [m].

    Returns
    -------
    ndarray, shape (3,)
        World coordinates [m]; NaN when ``f_z <= 0``.
    """
    if not isinstance(wrench, Wrench):
        raise InvalidArgumentError(
            f"zmp takes a Wrench (it carries its point), got {type(wrench).__name__}"
        )
    w = wrench.shift_to([0.0, 0.0, float(height)])
    fz = w.force[2]
    if fz <= 0:
        return np.full(3, np.nan)
    return np.array([-w.moment[1] / fz, w.moment[0] / fz, height])
