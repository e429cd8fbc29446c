"""A small URDF writer for the models wholebody ships (no meshes: boxes, spheres, cylinders).

Inertias are those of uniform solids, so every link is physically valid by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["UrdfWriter", "box_inertia", "cylinder_inertia", "sphere_inertia"]


def box_inertia(mass: float, size: tuple[float, float, float]) -> np.ndarray:
    """Inertia of a uniform box about its centre [kg m^2]; ``size`` are full edge lengths [m]."""
    x, y, z = size
    return mass / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])


def cylinder_inertia(mass: float, radius: float, length: float) -> np.ndarray:
    """Inertia of a uniform cylinder along z about its centre [kg m^2]."""
    r2, h2 = radius * radius, length * length
    side = mass * (3 * r2 + h2) / 12.0
    return np.diag([side, side, mass * r2 / 2.0])


def sphere_inertia(mass: float, radius: float) -> np.ndarray:
    """Inertia of a uniform sphere about its centre [kg m^2]."""
    return np.eye(3) * 0.4 * mass * radius * radius


def _f(x: float) -> str:
    # Shortest text that reads back to the same double: the closed-form tests need 1e-10.
    return repr(float(x)).replace("-0.0", "0.0") if x == 0 else repr(float(x))


def _v(xs) -> str:
    return " ".join(_f(float(x)) for x in xs)


@dataclass
class UrdfWriter:
    """Accumulates links and joints and renders a URDF document."""

    name: str
    parts: list[str] = field(default_factory=list)

    def link(
        self,
        name: str,
        mass: float | None = None,
        com: tuple[float, float, float] = (0.0, 0.0, 0.0),
        inertia: np.ndarray | None = None,
        collision: str | None = None,
        visual: str | None = None,
        geometry_origin: tuple[float, float, float] = (0.0, 0.0, 0.0),
    ) -> None:
        """Add a link; ``collision`` / ``visual`` are URDF geometry elements as text."""
        body = []
        if mass is not None:
            inertia = np.zeros((3, 3)) if inertia is None else inertia
            body.append(
                f'    <inertial>\n      <origin xyz="{_v(com)}" rpy="0 0 0"/>\n'
                f'      <mass value="{_f(mass)}"/>\n'
                f'      <inertia ixx="{_f(inertia[0, 0])}" ixy="{_f(inertia[0, 1])}" '
                f'ixz="{_f(inertia[0, 2])}" iyy="{_f(inertia[1, 1])}" iyz="{_f(inertia[1, 2])}" '
                f'izz="{_f(inertia[2, 2])}"/>\n    </inertial>'
            )
        for tag, geom in (("visual", visual), ("collision", collision)):
            if geom:
                body.append(
                    f'    <{tag}>\n      <origin xyz="{_v(geometry_origin)}" rpy="0 0 0"/>\n'
                    f"      <geometry>{geom}</geometry>\n    </{tag}>"
                )
        inner = "\n".join(body)
        self.parts.append(
            f'  <link name="{name}">\n{inner}\n  </link>' if inner else f'  <link name="{name}"/>'
        )

    def joint(
        self,
        name: str,
        jtype: str,
        parent: str,
        child: str,
        xyz: tuple[float, float, float] = (0.0, 0.0, 0.0),
        axis: tuple[float, float, float] | None = None,
        limit: tuple[float, float] | None = None,
        effort: float = 300.0,
        velocity: float = 20.0,
    ) -> None:
        """Add a joint; ``limit`` is (lower, upper) [rad or m] for revolute/prismatic joints."""
        lines = [
            f'  <joint name="{name}" type="{jtype}">',
            f'    <parent link="{parent}"/>',
            f'    <child link="{child}"/>',
            f'    <origin xyz="{_v(xyz)}" rpy="0 0 0"/>',
        ]
        if axis is not None:
            lines.append(f'    <axis xyz="{_v(axis)}"/>')
        if limit is not None:
            lines.append(
                f'    <limit lower="{_f(limit[0])}" upper="{_f(limit[1])}" '
                f'effort="{_f(effort)}" velocity="{_f(velocity)}"/>'
            )
        lines.append("  </joint>")
        self.parts.append("\n".join(lines))

    def render(self, comment: str = "") -> str:
        head = '<?xml version="1.0"?>\n'
        if comment:
            head += f"<!-- {comment} -->\n"
        return head + f'<robot name="{self.name}">\n' + "\n".join(self.parts) + "\n</robot>\n"


def box(size: tuple[float, float, float]) -> str:
    return f'<box size="{_v(size)}"/>'


def sphere(radius: float) -> str:
    return f'<sphere radius="{_f(radius)}"/>'


def cylinder(radius: float, length: float) -> str:
    return f'<cylinder radius="{_f(radius)}" length="{_f(length)}"/>'
