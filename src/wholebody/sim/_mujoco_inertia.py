"""Inertias MuJoCo refuses, found and repaired on an ``MjSpec`` (used by
:func:`wholebody.sim.mujoco.mujoco_spec_for_robot`)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pinocchio as pin

from ..errors import InvalidInertiaError, ModelError, ModelWarning
from ..robot.core import Array, Robot
from ._mujoco_base import import_mujoco

__all__ = [
    "InertiaRepair",
    "inertia_repairs",
    "repair_inertias",
    "body_inertia",
    "patched_robot",
    "REPAIR_MASS",
    "REPAIR_MOMENT",
]

#: Mass [kg] and principal moments [kg m^2] given to a moving body that MuJoCo would refuse
#: as massless (a virtual link between two hinges of a spherical joint). Pinocchio gets the
#: same values, so the two engines keep the same dynamics.
REPAIR_MASS = 1e-6
REPAIR_MOMENT = 1e-9
#: Relative margin kept by repaired principal moments (MuJoCo checks them strictly).
_REPAIR_MARGIN = 1e-6
#: MuJoCo's mjMINVAL: smaller principal moments of a full inertia are refused.
_MJ_MINVAL = 1e-15


@dataclass(frozen=True)
class InertiaRepair:
    """One body whose inertia MuJoCo refuses, and what the bridge did about it.

    Attributes
    ----------
    body : str
        MuJoCo body (URDF link, MJCF body) name.
    reason : str
        What MuJoCo would refuse: the triangle inequality, a non-positive principal moment,
        or a massless moving body.
    mass_before, mass_after : float
        [kg].
    moments_before, moments_after : ndarray, shape (3,)
        Principal moments of inertia about the body's centre of mass, ascending [kg m^2].
        ``moments_after`` is the closest set of moments (Euclidean) that MuJoCo accepts,
        with a relative margin of 1e-6; the principal axes are kept.
    """

    body: str
    reason: str
    mass_before: float
    mass_after: float
    moments_before: Array
    moments_after: Array

    def __str__(self) -> str:
        return (
            f"{self.body}: {self.reason}; mass {self.mass_before:.6g} -> {self.mass_after:.6g} kg, "
            f"principal moments {np.array2string(self.moments_before, precision=4)} -> "
            f"{np.array2string(self.moments_after, precision=4)} kg m^2"
        )


def body_inertia(body: Any) -> tuple[Array, Array]:
    """A spec body's inertia: (rotation of its axes in the body frame, 3x3 inertia in them)."""
    R = np.zeros(9)
    quat = np.asarray(body.iquat, dtype=float)
    import_mujoco().mju_quat2Mat(R, quat if np.all(np.isfinite(quat)) else np.array([1.0, 0, 0, 0]))
    full = np.asarray(body.fullinertia, dtype=float)
    if np.all(np.isfinite(full)) and np.any(full != 0):
        xx, yy, zz, xy, xz, yz = full
        inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    else:
        inertia = np.diag(np.nan_to_num(np.asarray(body.inertia, dtype=float)))
    return R.reshape(3, 3), inertia


def _repaired_moments(d: Array, full: bool) -> tuple[Array, str]:
    """Closest principal moments (ascending) that MuJoCo accepts, and why they changed.

    MuJoCo refuses a full (non-diagonal) inertia with a principal moment that is not
    positive, and any inertia whose moments break the triangle inequality; an all-zero
    diagonal inertia (a point mass) it accepts.
    """
    d = np.sort(np.asarray(d, dtype=float))
    scale = max(float(abs(d).max()), REPAIR_MOMENT)
    reason = ""
    if full and d[0] < _MJ_MINVAL:
        reason = "full inertia with a principal moment that is not positive (< 1e-15)"
        d = np.maximum(d, max(_REPAIR_MARGIN * scale, REPAIR_MOMENT))
    excess = d[2] - d[0] - d[1]
    if excess > 0.0 or (reason and excess >= -_REPAIR_MARGIN * scale):
        reason = reason or "principal moments break the triangle inequality I1 + I2 >= I3"
        # Euclidean projection onto I1 + I2 - I3 >= margin: move each by a third.
        shift = (excess + _REPAIR_MARGIN * scale) / 3.0
        d = d + np.array([shift, shift, -shift])
    return np.sort(d), reason


def _moving_bodies_mass(spec: Any) -> dict[str, tuple[float, float]]:
    """Each body with joints: (mass, largest principal moment) with the joint-less bodies
    MuJoCo fuses into it (the moment ignores the parallel-axis terms: a lower bound)."""
    out: dict[str, tuple[float, float]] = {}

    def fused(body: Any) -> tuple[float, float]:
        m, moment = float(body.mass), float(np.abs(body_inertia(body)[1]).max())
        for child in body.bodies:
            if child.first_joint() is None:
                cm, cmoment = fused(child)
                m, moment = m + cm, max(moment, cmoment)
        return m, moment

    for body in spec.bodies:
        if body.name and body.first_joint() is not None:
            out[body.name] = fused(body)
    return out


def inertia_repairs(spec: Any) -> list[tuple[Any, InertiaRepair, Array, Array]]:
    """Bodies MuJoCo would refuse: (spec body, repair, axes rotation, new 3x3 inertia)."""
    found = []
    moving = _moving_bodies_mass(spec)
    for body in spec.bodies:
        if not body.name:
            continue
        R, inertia = body_inertia(body)
        mass = float(body.mass)
        # MuJoCo diagonalises a full inertia and refuses one with a moment < 1e-15; an all-zero
        # inertia (a point mass) it takes as given.
        full_values = np.asarray(body.fullinertia, dtype=float)
        full = bool(np.all(np.isfinite(full_values)) and np.any(full_values != 0))
        moments, axes = np.linalg.eigh(0.5 * (inertia + inertia.T))
        fused_mass, fused_moment = moving.get(body.name, (np.inf, np.inf))
        if fused_mass < REPAIR_MASS or fused_moment < _MJ_MINVAL:
            reason = (
                "massless moving body (MuJoCo needs mass and inertia)"
                if fused_mass < REPAIR_MASS
                else "moving body without rotational inertia (MuJoCo needs some)"
            )
            new_mass = mass + REPAIR_MASS if fused_mass < REPAIR_MASS else mass
            new_moments = np.maximum(moments, 0.0) + REPAIR_MOMENT
        else:
            new_mass = mass
            new_moments, reason = _repaired_moments(moments, full)
        if not reason:
            continue
        new_inertia = axes @ np.diag(new_moments) @ axes.T
        found.append(
            (
                body,
                InertiaRepair(
                    body.name, reason, mass, new_mass, np.sort(moments), np.sort(new_moments)
                ),
                R,
                new_inertia,
            )
        )
    return found


def _parameters_in_joint(mass: float, com: Array, inertia: Array, placement: pin.SE3) -> Array:
    """Pinocchio's 10 dynamic parameters of a link given in its own frame, in its joint's frame.

    ``[m, m c, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]`` with ``I`` about the joint origin; built
    by hand because ``pin.Inertia`` refuses the invalid inertias being repaired.
    """
    R, p = np.asarray(placement.rotation), np.asarray(placement.translation)
    c = R @ com + p
    Io = R @ inertia @ R.T + mass * (c @ c * np.eye(3) - np.outer(c, c))
    return np.r_[mass, mass * c, Io[0, 0], Io[0, 1], Io[1, 1], Io[0, 2], Io[1, 2], Io[2, 2]]


def patched_robot(
    robot: Robot, changes: list[tuple[str, float, float, Array, Array, Array]]
) -> Robot:
    """A copy of ``robot`` whose links have the new inertias.

    ``changes``: (link, old mass, new mass, CoM, old inertia, new inertia), the CoM and the
    inertias (about the CoM) in the link frame.
    """
    model = robot.model.copy()
    ids = {f.name: i for i, f in enumerate(model.frames) if f.type == pin.FrameType.BODY}
    for link, m_old, m_new, com, I_old, I_new in changes:
        if link not in ids:
            raise ModelError(
                f"cannot repair link {link!r}: the robot has no body frame of that name"
            )
        frame = model.frames[ids[link]]
        j = frame.parentJoint
        params = (
            model.inertias[j].toDynamicParameters()
            - _parameters_in_joint(m_old, com, I_old, frame.placement)
            + _parameters_in_joint(m_new, com, I_new, frame.placement)
        )
        model.inertias[j] = pin.Inertia.FromDynamicParameters(params)
    return robot.with_model(model)


def repair_inertias(
    spec: Any, robot: Robot, source: str, repair: bool
) -> tuple[Robot, tuple[InertiaRepair, ...]]:
    """The inertias of ``spec`` that MuJoCo refuses, refused or repaired.

    Without ``repair``, :class:`InvalidInertiaError` lists them with the closest accepted
    values; with it, the spec's bodies get those values and a copy of ``robot`` the same
    change (a ModelWarning lists them), so that both engines keep the same dynamics.

    Returns
    -------
    robot : Robot
        ``robot``, or its repaired copy.
    repairs : tuple of InertiaRepair
        The changes made (empty when none was needed).
    """
    found = inertia_repairs(spec)
    if found and not repair:
        lines = "\n  ".join(str(r) for _, r, _, _ in found)
        raise InvalidInertiaError(
            f"{source}: MuJoCo refuses the inertia of {len(found)} bodies (the closest accepted "
            "values are shown; inertia='repair' applies them to MuJoCo and to the robot):"
            f"\n  {lines}"
        )
    changes = []
    for body, rep, R, new_inertia in found:
        com = np.asarray(body.ipos, dtype=float)
        if not np.all(np.isfinite(com)):  # a body without <inertial>: mass at its origin
            com = np.zeros(3)
            body.ipos = com
            body.iquat = [1.0, 0.0, 0.0, 0.0]
            R = np.eye(3)
        changes.append(
            (
                rep.body,
                rep.mass_before,
                rep.mass_after,
                com,
                R @ body_inertia(body)[1] @ R.T,
                R @ new_inertia @ R.T,
            )
        )
        body.explicitinertial = True
        body.mass = rep.mass_after
        body.fullinertia = [
            new_inertia[0, 0],
            new_inertia[1, 1],
            new_inertia[2, 2],
            new_inertia[0, 1],
            new_inertia[0, 2],
            new_inertia[1, 2],
        ]
    repairs = tuple(r for _, r, _, _ in found)
    if repairs:
        warnings.warn(
            f"{source}: inertias repaired for MuJoCo (and in the returned robot):\n  "
            + "\n  ".join(str(r) for r in repairs),
            ModelWarning,
            stacklevel=3,
        )
    return (patched_robot(robot, changes) if changes else robot), repairs
