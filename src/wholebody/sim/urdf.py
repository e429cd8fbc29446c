"""A URDF for the engines that load URDF files (PyBullet, Drake, Newton, Genesis), with the
robot touching the world only at its declared contacts.

:func:`contact_urdf` writes a copy of the robot's URDF whose only collision geometry is a few
spheres at each declared contact, placed in the link that carries the contact's frame (frames
added by a profile's ``[[frames]]`` or :meth:`~wholebody.Robot.add_frame` included): the four
corners of a sole's rectangle, or a point contact's origin. Visual elements and collision
meshes are dropped (nothing to resolve: no ``package://`` paths, no mesh format an engine
lacks), a link without ``<inertial>`` gets an explicit zero one (PyBullet would give it
1 kg, Genesis a tiny mass), and a fixed joint loses any ``<mimic>`` (Drake refuses one).
Every engine then loads the same contact geometry, as
:func:`wholebody.sim.mujoco.mujoco_spec_for_robot` gives MuJoCo its sole boxes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..contacts import Contact, SurfaceContact
from ..errors import InvalidArgumentError, OutputError
from ..robot import Robot

__all__ = ["contact_urdf"]


def contact_urdf(
    robot: Robot, contacts: Sequence[Contact], path: str | Path, *, radius: float = 0.005
) -> Path:
    """Write the robot's URDF with collision spheres at the declared contacts only.

    Parameters
    ----------
    robot : Robot
        Loaded from a URDF file (``robot.source``); frames added to it (a profile's
        ``[[frames]]``) may carry contacts.
    contacts : sequence of Contact
        Each :class:`~wholebody.contacts.SurfaceContact` gets a sphere at each corner of its
        rectangle (its ``center`` offset included), each point contact one at its origin;
        each sphere touches the contact frame's x-y plane from the robot's side (its centre
        ``radius`` along the frame's z axis), so the contact frame lies on the floor when the
        robot stands on the spheres.
    path : str or Path
        The URDF to write (its folder must exist).
    radius : float
        Sphere radius [m], > 0.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    InvalidArgumentError
        The robot was not loaded from a URDF file, or ``radius`` is not positive.
    OutputError
        ``path`` cannot be written.
    """
    if not (isinstance(radius, (int, float)) and np.isfinite(radius) and radius > 0):
        raise InvalidArgumentError(f"radius must be a positive length [m], got {radius!r}")
    source = Path(str(robot.source)) if robot.source else None
    tree = ET.parse(source) if source is not None and source.is_file() else None
    if tree is None or tree.getroot().tag != "robot":
        raise InvalidArgumentError(
            f"contact_urdf needs a robot loaded from a URDF file; robot {robot.name!r} comes "
            f"from {robot.source!r}"
        )
    links = {link.get("name"): link for link in tree.getroot().iter("link")}
    for joint in tree.getroot().iter("joint"):
        for mimic in joint.findall("mimic") if joint.get("type") == "fixed" else ():
            joint.remove(mimic)  # a fixed joint mimics nothing (Drake refuses the tag)
    for link in links.values():
        for element in link.findall("visual") + link.findall("collision"):
            link.remove(element)
        if link.find("inertial") is None:
            inertial = ET.SubElement(link, "inertial")
            ET.SubElement(inertial, "mass", value="0")
            zero = dict.fromkeys(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), "0")
            ET.SubElement(inertial, "inertia", zero)
    for contact in contacts:
        name, in_link = _placement_in_link(robot, contact.frame)
        if isinstance(contact, SurfaceContact):
            points = list(np.asarray(contact.corners, float))
        else:
            points = [np.zeros(3)]
        for point in points:
            centre = in_link.act(point + np.array([0.0, 0.0, radius]))
            collision = ET.SubElement(links[name], "collision")
            ET.SubElement(collision, "origin", xyz=" ".join(repr(float(x)) for x in centre))
            ET.SubElement(ET.SubElement(collision, "geometry"), "sphere", radius=repr(radius))
    out = Path(path)
    try:
        tree.write(out, encoding="utf-8", xml_declaration=True)
    except OSError as exc:
        raise OutputError(f"cannot write {out}: {exc.strerror or exc}") from exc
    return out


def _placement_in_link(robot: Robot, frame: str):
    """The URDF link carrying ``frame`` (the first link on its Pinocchio body) and the frame's
    placement in that link (``pinocchio.SE3``)."""
    import pinocchio as pin

    model = robot.model
    f = model.frames[robot.frame_id(frame)]
    link = next(
        x for x in model.frames if x.type == pin.FrameType.BODY and x.parentJoint == f.parentJoint
    )
    return link.name, link.placement.inverse() * f.placement
