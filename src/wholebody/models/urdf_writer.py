"""URDF text of a model described as data (no meshes: boxes, spheres, cylinders).

A model is a root :class:`Link`, the :class:`Joint` rows that carry the other links (each
written before its child link, in the order given) and the links that have a body; a joint's
child with no entry there is a frame (a link without inertial or geometry).
:func:`uniform_link` gives a link the inertia of a uniform solid, so that it is physically
valid by construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Joint", "Link", "Solid", "chain", "uniform_link", "urdf_text"]

Vec3 = tuple[float, float, float]
ORIGIN: Vec3 = (0.0, 0.0, 0.0)


def _f(x: float) -> str:
    # Shortest text that reads back to the same double: the closed-form tests need 1e-10.
    return repr(float(x)).replace("-0.0", "0.0") if x == 0 else repr(float(x))


def _v(xs) -> str:
    return " ".join(_f(float(x)) for x in xs)


@dataclass(frozen=True)
class Solid:
    """A uniform solid: ``"box"`` (full edge lengths), ``"sphere"`` (radius) or ``"cylinder"``
    (radius, length along z) [m]."""

    kind: str
    size: tuple[float, ...]

    def inertia(self, mass: float) -> np.ndarray:
        """Inertia about the centre for ``mass`` [kg] spread uniformly [kg m^2]."""
        if self.kind == "box":
            x, y, z = self.size
            return mass / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])
        r = self.size[0]
        if self.kind == "sphere":
            return np.eye(3) * 0.4 * mass * r * r
        r2 = r * r
        side = mass * (3 * r2 + self.size[1] * self.size[1]) / 12.0
        return np.diag([side, side, mass * r2 / 2.0])

    def geometry(self) -> str:
        """The URDF geometry element."""
        if self.kind == "box":
            return f'<box size="{_v(self.size)}"/>'
        if self.kind == "sphere":
            return f'<sphere radius="{_f(self.size[0])}"/>'
        return f'<cylinder radius="{_f(self.size[0])}" length="{_f(self.size[1])}"/>'


@dataclass(frozen=True)
class Link:
    """A link: mass [kg], CoM [m] and inertia about it [kg m^2] in the link's frame (no
    inertial when ``mass`` is None); ``visual`` / ``collision`` are URDF geometry elements as
    text, centred at ``geometry_origin`` [m]."""

    name: str
    mass: float | None = None
    com: Vec3 = ORIGIN
    inertia: np.ndarray | None = None
    visual: str | None = None
    collision: str | None = None
    geometry_origin: Vec3 = ORIGIN

    def xml(self) -> str:
        """The ``<link>`` element, indented as in the document."""
        body = []
        if self.mass is not None:
            inertia = np.zeros((3, 3)) if self.inertia is None else self.inertia
            body.append(
                f'    <inertial>\n      <origin xyz="{_v(self.com)}" rpy="0 0 0"/>\n'
                f'      <mass value="{_f(self.mass)}"/>\n'
                f'      <inertia ixx="{_f(inertia[0, 0])}" ixy="{_f(inertia[0, 1])}" '
                f'ixz="{_f(inertia[0, 2])}" iyy="{_f(inertia[1, 1])}" iyz="{_f(inertia[1, 2])}" '
                f'izz="{_f(inertia[2, 2])}"/>\n    </inertial>'
            )
        for tag, geom in (("visual", self.visual), ("collision", self.collision)):
            if geom:
                body.append(
                    f'    <{tag}>\n      <origin xyz="{_v(self.geometry_origin)}" rpy="0 0 0"/>\n'
                    f"      <geometry>{geom}</geometry>\n    </{tag}>"
                )
        inner = "\n".join(body)
        if not inner:
            return f'  <link name="{self.name}"/>'
        return f'  <link name="{self.name}">\n{inner}\n  </link>'


def uniform_link(
    name: str,
    mass: float,
    solid: Solid,
    com: Vec3 = ORIGIN,
    centre: Vec3 = ORIGIN,
    *,
    collision: bool = False,
) -> Link:
    """A link whose inertia about its CoM ``com`` is that of ``solid`` (also its visual, and
    its collision geometry when asked) centred at ``centre`` [m]."""
    geometry = solid.geometry()
    return Link(
        name,
        mass,
        com,
        solid.inertia(mass),
        visual=geometry,
        collision=geometry if collision else None,
        geometry_origin=centre,
    )


@dataclass(frozen=True)
class Joint:
    """A joint from ``parent`` to ``child``, at ``xyz`` [m] in the parent's frame; ``axis`` and
    ``limit`` (lower, upper) [rad or m] for revolute and prismatic joints."""

    name: str
    type: str
    parent: str
    child: str
    xyz: Vec3 = ORIGIN
    axis: Vec3 | None = None
    limit: tuple[float, float] | None = None
    effort: float = 300.0
    velocity: float = 20.0

    def xml(self) -> str:
        """The ``<joint>`` element, indented as in the document."""
        lines = [
            f'  <joint name="{self.name}" type="{self.type}">',
            f'    <parent link="{self.parent}"/>',
            f'    <child link="{self.child}"/>',
            f'    <origin xyz="{_v(self.xyz)}" rpy="0 0 0"/>',
        ]
        if self.axis is not None:
            lines.append(f'    <axis xyz="{_v(self.axis)}"/>')
        if self.limit is not None:
            lines.append(
                f'    <limit lower="{_f(self.limit[0])}" upper="{_f(self.limit[1])}" '
                f'effort="{_f(self.effort)}" velocity="{_f(self.velocity)}"/>'
            )
        lines.append("  </joint>")
        return "\n".join(lines)


def chain(parent: str, rows: Sequence[tuple], side: str = "") -> list[Joint]:
    """The joints of a chain from ``parent``, from a table of rows ``(name, child, origin [m],
    axis, limits [rad])``: each joint's parent is the previous row's child; revolute where there
    is an axis, fixed where it is None; ``"{s}"`` in a name stands for ``side``."""
    joints = []
    for name, child, xyz, axis, limit in rows:
        kind = "fixed" if axis is None else "revolute"
        child = child.format(s=side)
        joints.append(Joint(name.format(s=side), kind, parent, child, xyz, axis, limit))
        parent = child
    return joints


def urdf_text(
    name: str,
    root: Link,
    joints: Sequence[Joint],
    links: Mapping[str, Link] | None = None,
    comment: str = "",
) -> str:
    """The URDF document of robot ``name``: ``root``, then each joint followed by its child
    (``links[child]``, or a bare frame link when it has no entry); ``comment`` heads it."""
    links = links or {}
    parts = [root.xml()]
    for joint in joints:
        parts += [joint.xml(), links.get(joint.child, Link(joint.child)).xml()]
    head = '<?xml version="1.0"?>\n' + (f"<!-- {comment} -->\n" if comment else "")
    return head + f'<robot name="{name}">\n' + "\n".join(parts) + "\n</robot>\n"
