"""``wholebody info --links``: each link with mass, as ``fit --link`` names it."""

from __future__ import annotations

from ..identify import robot_links
from ..robot import Robot


def format_links(robot: Robot) -> str:
    """One line per link with mass: its name, the joint whose body carries it, its mass [kg]
    and CoM in link axes [m] (the URDF's ``<inertial>``), then the total."""
    links = robot_links(robot)
    lines = [f"{'link':30s} {'on joint':24s} {'mass [kg]':>10s}  CoM in link axes [m]"]
    for link in links:
        com = " ".join(f"{x:+.4f}" for x in link.com)
        lines.append(
            f"{link.name:30s} {robot.model.names[link.joint]:24s} {link.mass:10.4g}  [{com}]"
        )
    lines.append(f"{len(links)} links with mass, {sum(k.mass for k in links):.4f} kg in all")
    return "\n".join(lines)
