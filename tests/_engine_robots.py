"""The test robot every engine loads: the shipped humanoid with four collision spheres under
each foot (point contacts every engine handles the same way), written to a temporary file."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import wholebody as wb
from wholebody.contacts import SurfaceContact

#: Sphere radius [m] and the corners of each foot's sole box (x, y in the foot frame).
RADIUS = 0.01
CORNERS = ((0.14, 0.045), (0.14, -0.045), (-0.08, 0.045), (-0.08, -0.045))
SOLE_Z = -0.07  # the bottom of the foot box in the foot frame [m]


def sphere_feet_urdf(
    directory: Path, *, inertial_everywhere: bool = False, base_com_offset: bool = False
) -> Path:
    """The humanoid with each foot's box replaced by four spheres touching its bottom face.

    ``inertial_everywhere`` gives the links without ``<inertial>`` (hands, soles) an explicit
    zero-mass one (for engines that default a missing one to 1 kg)."""
    src = Path(wb.load("humanoid").source)
    root = ET.parse(src).getroot()
    for link in root.iter("link"):
        for col in link.findall("collision"):
            link.remove(col)
        if link.get("name") in ("left_foot", "right_foot"):
            for x, y in CORNERS:
                col = ET.SubElement(link, "collision")
                ET.SubElement(col, "origin", xyz=f"{x} {y} {SOLE_Z + RADIUS}", rpy="0 0 0")
                ET.SubElement(ET.SubElement(col, "geometry"), "sphere", radius=str(RADIUS))
        if base_com_offset and link.get("name") == "pelvis":  # centre of mass off the origin
            origin = link.find("inertial/origin")
            assert origin is not None
            origin.set("xyz", "0.02 -0.01 0.03")
            origin.set("rpy", "0.2 0.1 0.0")
        if inertial_everywhere and link.find("inertial") is None:
            inertial = ET.SubElement(link, "inertial")
            ET.SubElement(inertial, "mass", value="0")
            ET.SubElement(inertial, "inertia", ixx="0", iyy="0", izz="0", ixy="0", ixz="0", iyz="0")
    path = Path(directory) / f"humanoid_sphere_feet{'_offset' if base_com_offset else ''}.urdf"
    ET.ElementTree(root).write(path)
    return path


def feet_contacts() -> list[SurfaceContact]:
    """The two soles as surface contacts (the spheres touch the soles' plane z = 0)."""
    return [
        SurfaceContact(f, half_length=0.12, half_width=0.05, mu=1.0)
        for f in ("left_sole", "right_sole")
    ]
