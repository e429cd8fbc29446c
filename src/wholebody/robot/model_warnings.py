"""Load-time notes that matter to simulation users: links without ``<inertial>`` (and what each
engine gives them), real mimic joints (movable joints with ``<mimic>``; a fixed joint that keeps
a ``<mimic>`` element, as in Talos' reduced models, is no mimic joint), and which of the
inertia-less links are leaves (contact or sensor frames: a contact declared on one moves mass
an engine gave it, not the robot's).

Engines and a link without ``<inertial>`` (DESIGN.md section 8, and each engine's URDF
importer): Pinocchio gives it no mass; PyBullet gives it 1 kg at the link origin; Genesis a
tiny mass; MuJoCo's compiler (``inertiafromgeom="auto"``) infers its inertia from its geoms,
or merges a massless body into its parent.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

__all__ = [
    "links_without_inertia",
    "inertialess_child_links",
    "leaf_links",
    "mimic_joints",
    "inertia_note",
    "ENGINE_DEFAULTS",
]

#: What each engine does with a URDF link that has no ``<inertial>``.
ENGINE_DEFAULTS = {
    "pinocchio": "no mass",
    "pybullet": "1 kg at the link origin",
    "genesis": "a tiny mass",
    "mujoco": "an inertia inferred from its geoms (inertiafromgeom='auto')",
}


def links_without_inertia(root: ET.Element) -> list[str]:
    """Names of the URDF's links that have no ``<inertial>`` (file order)."""
    return [str(link.get("name")) for link in root.findall("link") if link.find("inertial") is None]


def inertialess_child_links(root: ET.Element) -> list[str]:
    """:func:`links_without_inertia` that are some joint's child (the root link excluded: a
    floating base's root carries no mass of its own in any engine's reading of the file)."""
    children = {
        str(c.get("link")) for j in root.findall("joint") if (c := j.find("child")) is not None
    }
    return [n for n in links_without_inertia(root) if n in children]


def leaf_links(root: ET.Element) -> set[str]:
    """Links that are no joint's parent."""
    parents = {
        str(p.get("link")) for j in root.findall("joint") if (p := j.find("parent")) is not None
    }
    return {str(link.get("name")) for link in root.findall("link")} - parents


def mimic_joints(root: ET.Element) -> list[str]:
    """Movable joints (not ``fixed``) of the robot with a ``<mimic>`` element: the joints a
    mimic relation binds. Only the robot's own ``<joint>`` elements count (not those inside
    ``<transmission>`` or ``<gazebo>``)."""
    return [
        str(j.get("name", "?"))
        for j in root.findall("joint")
        if j.find("mimic") is not None and j.get("type", "") != "fixed"
    ]


def inertia_note(root: ET.Element) -> str | None:
    """The load-time note on links without ``<inertial>`` (None when every link has one)."""
    missing = links_without_inertia(root)
    if not missing:
        return None
    leaves = leaf_links(root)
    on_leaves = [n for n in missing if n in leaves]
    shown = ", ".join(repr(n) for n in missing[:8]) + (", ..." if len(missing) > 8 else "")
    engines = "; ".join(f"{k}: {v}" for k, v in ENGINE_DEFAULTS.items())
    leaf_text = (
        f"; {len(on_leaves)} of them are leaves (sensor or contact frames): a contact declared on "
        "one is massless here but not in every simulator"
        if on_leaves
        else ""
    )
    return (
        f"{len(missing)} links have no <inertial> ({shown}): engines differ on them ({engines}); "
        f"a log simulated in PyBullet carries {len(missing)} kg more than this model"
        f"{leaf_text}. Give them an <inertial> (or load PyBullet with the same masses) so that "
        "model and simulation agree"
    )
