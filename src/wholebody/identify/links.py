"""Links' inertial parameters for identification: read from the URDF, moved to Pinocchio's
joint bodies, differentiated, and written back.

Pinocchio merges links attached by fixed joints into the body of their parent joint, so a
URDF link is not always a Pinocchio body. Identification works **per URDF link**: each link's
inertia (mass ``m``, centre of mass ``c`` in link axes, rotational inertia ``I_C`` about the
CoM in link axes) is turned into the 10 dynamic parameters of Pinocchio

.. math::

    \\pi = (m,\\; m c_x, m c_y, m c_z,\\; I_{xx}, I_{xy}, I_{yy}, I_{xz}, I_{yz}, I_{zz})
    \\qquad I = I_C + m (c^T c\\, 1 - c c^T) \\text{ (about the frame origin)}

and moved to the joint frame by a linear map ``T`` (the spatial-inertia transform), so the
parameters of joint body ``j`` are ``pi_j = sum over its links of T_L pi_L``.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin
from numpy.typing import NDArray

from ..errors import InvalidArgumentError, ModelError, URDFParseError
from ..robot.core import Robot

__all__ = [
    "LinkInertia",
    "robot_links",
    "link_parameters",
    "transform_parameters",
    "rewrite_urdf_inertials",
]

Array = NDArray[np.float64]
#: Relative agreement required between the URDF links summed per joint and Pinocchio's bodies.
_CONSISTENCY_RTOL = 1e-9
#: The URDF's inertia attributes and their entries.
_URDF_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
_URDF_PAIRS = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))


@dataclass(frozen=True)
class LinkInertia:
    """One link's inertia as the URDF gives it, and where Pinocchio attaches it.

    Attributes
    ----------
    name : str
        The URDF link (or, without a URDF, the Pinocchio joint whose body it is).
    joint : int
        Pinocchio joint index of the body carrying the link.
    mass : float
        [kg].
    com : ndarray, shape (3,)
        Centre of mass in link axes, about the link origin [m] (the URDF ``<inertial>``
        origin ``xyz``).
    inertia_com : ndarray, shape (3, 3)
        Rotational inertia about the CoM in link axes [kg m^2].
    rpy : ndarray, shape (3,)
        Roll-pitch-yaw of the URDF's inertial frame in link axes [rad].
    transform : ndarray, shape (10, 10)
        Maps the link's dynamic parameters (link frame) to the joint frame's.
    """

    name: str
    joint: int
    mass: float
    com: Array
    inertia_com: Array
    rpy: Array
    transform: Array


#: Pinocchio's order of the inertia entries (xx, xy, yy, xz, yz, zz).
PIN_ROWS = np.array([0, 0, 1, 0, 1, 2])
PIN_COLS = np.array([0, 1, 1, 2, 2, 2])
EYE3 = np.eye(3)
#: Order of the six inertia coordinates (the symmetric ``S`` and ``I_C``'s entries).
INERTIA_COMPONENTS = ("xx", "yy", "zz", "xy", "xz", "yz")
INERTIA_PAIRS = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))
#: Smallest RMS extent of a link assumed by the CoM prior and the consistency repair [m].
MIN_EXTENT = 0.01


def link_parameters(mass: float, com: Array, inertia_com: Array) -> Array:
    """Pinocchio's 10 dynamic parameters of a body about its frame origin, shape (10,).

    ``(m, m c, Ixx, Ixy, Iyy, Ixz, Iyz, Izz)`` with the inertia about the origin
    ``I_C + m (|c|^2 1 - c c^T)`` (same order as ``pin.Inertia.toDynamicParameters``).
    """
    c = np.asarray(com, dtype=float)
    inertia = inertia_com + mass * ((c @ c) * EYE3 - np.multiply.outer(c, c))
    out = np.empty(10)
    out[0] = mass
    out[1:4] = mass * c
    out[4:] = inertia[PIN_ROWS, PIN_COLS]
    return out


def symmetric(v: Array) -> Array:
    """The symmetric 3x3 of six coordinates (orthonormal basis: off-diagonal ones / sqrt 2)."""
    S = np.zeros((3, 3))
    for k, (a, b) in enumerate(INERTIA_PAIRS):
        S[a, b] = S[b, a] = v[k] if a == b else v[k] / math.sqrt(2.0)
    return S


SYM_BASIS = [symmetric(np.eye(6)[k]) for k in range(6)]


def sqrtm_psd(S: Array) -> Array:
    w, V = np.linalg.eigh(S)
    return (V * np.sqrt(np.clip(w, 0.0, None))) @ V.T


def second_moment(mass: float, inertia_com: Array) -> tuple[Array, bool]:
    """``Sigma = tr(I_C)/2 1 - I_C`` (3, 3) [kg m^2] of a link, and whether the URDF's is
    physically consistent (positive definite: the pseudo-inertia is).

    An inconsistent one is replaced by the nearest with eigenvalues at least
    ``mass * (1 cm)^2`` (so that fits of it start from a real rigid body).
    """
    sig = 0.5 * np.trace(inertia_com) * np.eye(3) - inertia_com
    w, V = np.linalg.eigh(0.5 * (sig + sig.T))
    ok = bool(w.min() > mass * MIN_EXTENT**2 * 1e-4)
    if not ok:
        sig = (V * np.maximum(w, mass * MIN_EXTENT**2)) @ V.T
    return sig, ok


def _sym(p: Array) -> Array:
    """The 3x3 inertia of parameter rows (..., 10) -> (..., 3, 3)."""
    xx, xy, yy, xz, yz, zz = (p[..., i] for i in range(4, 10))
    return np.stack(
        [np.stack([xx, xy, xz], -1), np.stack([xy, yy, yz], -1), np.stack([xz, yz, zz], -1)], -2
    )


def transform_parameters(rotation: Array, translation: Array) -> Array:
    """The linear map (10, 10) taking dynamic parameters in a child frame to a parent frame.

    For the child frame placed at ``translation`` p with axes ``rotation`` R in the parent:
    ``m' = m``, ``h' = R h + m p`` and, about the parent origin,
    ``I' = R I R^T + 2 (p . R h) 1 - (R h) p^T - p (R h)^T + m (|p|^2 1 - p p^T)``.
    """
    R = np.asarray(rotation, dtype=float)
    p = np.asarray(translation, dtype=float)
    basis = np.eye(10)
    m = basis[:, 0]
    h = basis[:, 1:4] @ R.T  # (10, 3): R h for each basis vector
    inertia = np.einsum("ij,njk,lk->nil", R, _sym(basis), R)
    inertia += (2 * (h @ p))[:, None, None] * np.eye(3)
    inertia -= h[:, :, None] * p[None, None, :] + p[None, :, None] * h[:, None, :]
    inertia += m[:, None, None] * (p @ p * np.eye(3) - np.outer(p, p))
    out = np.zeros((10, 10))
    out[0] = m
    out[1:4] = (h + m[:, None] * p).T
    out[4:] = inertia[:, PIN_ROWS, PIN_COLS].T
    return out


def _floats(text: str | None, n: int, where: str) -> Array:
    try:
        values = np.array([float(x) for x in (text or "").split()], dtype=float)
    except ValueError as exc:
        raise URDFParseError(f"{where}: not numbers: {text!r}") from exc
    if values.shape != (n,):
        raise URDFParseError(f"{where}: expected {n} numbers, got {text!r}")
    return values


def _urdf_inertials(root: ET.Element, source: str) -> dict[str, tuple[float, Array, Array, Array]]:
    """link name -> (mass, xyz, rpy, inertia in the inertial frame) for links with mass."""
    out = {}
    for link in root.iter("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        name = link.get("name", "?")
        where = f"{source}: link {name!r}"
        mass_el, inertia_el, origin = (
            inertial.find("mass"),
            inertial.find("inertia"),
            inertial.find("origin"),
        )
        if mass_el is None or inertia_el is None:
            raise URDFParseError(f"{where}: <inertial> needs <mass> and <inertia>")
        mass = float(mass_el.get("value", "0"))
        xyz = (
            np.zeros(3)
            if origin is None
            else _floats(origin.get("xyz", "0 0 0"), 3, where + " origin xyz")
        )
        rpy = (
            np.zeros(3)
            if origin is None
            else _floats(origin.get("rpy", "0 0 0"), 3, where + " origin rpy")
        )
        inertia = np.zeros((3, 3))
        for key, (a, b) in zip(_URDF_KEYS, _URDF_PAIRS, strict=True):
            inertia[a, b] = inertia[b, a] = float(inertia_el.get(key, "0"))
        if mass > 0:
            out[name] = (mass, xyz, rpy, inertia)
    return out


def robot_links(robot: Robot, urdf: str | Path | None = None) -> list[LinkInertia]:
    """The robot's massive links, from its URDF (``urdf`` or ``robot.source``).

    Without a URDF file, each Pinocchio joint body is one "link" named after its joint.
    The links summed per joint must reproduce Pinocchio's body inertias (relative 1e-9),
    else :class:`ModelError`.
    """
    model = robot.model
    path = urdf if urdf is not None else robot.source
    links: list[LinkInertia] = []
    if path is None or not str(path).endswith(".urdf"):
        for j in range(1, model.njoints):
            inertia = model.inertias[j]
            if inertia.mass > 0:
                links.append(
                    LinkInertia(
                        model.names[j],
                        j,
                        float(inertia.mass),
                        np.array(inertia.lever),
                        np.array(inertia.inertia),
                        np.zeros(3),
                        np.eye(10),
                    )
                )
        return links
    try:
        root = ET.fromstring(Path(path).read_text())
    except (OSError, ET.ParseError) as exc:
        raise URDFParseError(f"{path}: cannot read the URDF: {exc}") from exc
    inertials = _urdf_inertials(root, str(path))
    bodies = {f.name: f for f in model.frames if f.type == pin.FrameType.BODY}
    for name, (mass, xyz, rpy, inertia) in inertials.items():
        frame = bodies.get(name)
        if frame is None:
            raise ModelError(
                f"{path}: link {name!r} has no body frame in the model of {robot.name!r}"
            )
        R = pin.rpy.rpyToMatrix(*rpy)
        placement = frame.placement
        links.append(
            LinkInertia(
                name,
                int(frame.parentJoint),
                mass,
                xyz,
                R @ inertia @ R.T,
                rpy,
                transform_parameters(placement.rotation, placement.translation),
            )
        )
    # Cross-check against Pinocchio's merged bodies.
    total = np.zeros((model.njoints, 10))
    for link in links:
        total[link.joint] += link.transform @ link_parameters(link.mass, link.com, link.inertia_com)
    for j in range(1, model.njoints):
        ref = model.inertias[j].toDynamicParameters()
        if np.abs(total[j] - ref).max() > _CONSISTENCY_RTOL * max(1.0, np.abs(ref).max()):
            raise ModelError(
                f"{path}: the links of joint {model.names[j]!r} do not sum to Pinocchio's body "
                f"(URDF {total[j].round(6).tolist()} vs model {ref.round(6).tolist()}); "
                "was the robot loaded from another file?"
            )
    return links


def _format(x: float) -> str:
    return repr(float(x)) if x != 0 else "0.0"


def _set_attribute(text: str, prefix: str, value: str) -> str:
    """``text`` with the first attribute matched by ``prefix`` (up to its name) set to ``value``."""
    match = re.search("(" + prefix + r'\s*=\s*")[^"]*(")', text)
    if match is None:
        return text
    return text[: match.end(1)] + value + text[match.start(2) :]


def rewrite_urdf_inertials(text: str, changes: dict[str, tuple[float, Array, Array]]) -> str:
    """URDF text with the ``<inertial>`` of the named links rewritten, the rest untouched.

    ``changes`` maps a link name to ``(mass, xyz, inertia)``: mass [kg], the inertial origin
    in link axes [m], the inertia in the inertial frame's axes [kg m^2] (its ``rpy`` is kept).
    """
    out = text
    for name, (mass, xyz, inertia) in changes.items():
        link = re.search(
            r'<link\b[^>]*\bname\s*=\s*"' + re.escape(name) + r'"[^>]*(?<!/)>.*?</link>', out, re.S
        )
        if link is None:
            raise InvalidArgumentError(f"the URDF has no link {name!r} to rewrite")
        block = re.search(r"<inertial\b.*?</inertial>", link.group(0), re.S)
        if block is None:
            raise InvalidArgumentError(f"link {name!r} has no <inertial> element to rewrite")
        new = block.group(0)
        xyz_text = " ".join(_format(v) for v in xyz)
        if re.search(r"<origin\b", new):
            if re.search(r'<origin\b[^>]*\bxyz="', new):
                new = _set_attribute(new, r"<origin\b[^>]*\bxyz", xyz_text)
            else:
                new = re.sub(r"<origin\b", f'<origin xyz="{xyz_text}"', new, count=1)
        else:
            new = re.sub(
                r"<inertial>", f'<inertial><origin xyz="{xyz_text}" rpy="0 0 0"/>', new, count=1
            )
        new = _set_attribute(new, r"<mass\b[^>]*\bvalue", _format(mass))
        for key, (a, b) in zip(_URDF_KEYS, _URDF_PAIRS, strict=True):
            new = _set_attribute(new, r"\b" + key, _format(inertia[a, b]))
        start = link.start() + block.start()
        out = out[:start] + new + out[start + len(block.group(0)) :]
    return out
