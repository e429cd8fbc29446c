"""A floating-base human from an anthropometric table: segment masses, lengths, CoMs, inertias.

The table is Dempster's (1955) cadaver data as adapted by Winter, *Biomechanics and
Motor Control of Human Movement*, 4th ed., Wiley 2009, Table 4.1 (mass fraction of the body,
CoM as a fraction of segment length from the proximal end, radius of gyration about the CoM
as a fraction of segment length), with segment lengths as fractions of stature from Winter's
Fig. 4.1 (after Drillis and Contini, 1966).

What the table does not give is stated here and chosen simply:

* trunk segments (pelvis, thorax-abdomen) have no radius of gyration in the table: their
  inertia is that of a uniform box of the body's width and depth;
* the table gives the transverse radius of gyration of limbs; their longitudinal one is set to
  0.1 of the segment length (a solid cylinder of radius 0.14 L);
* joint centres: hips 0.052 H either side of the mid-line, shoulders 0.129 H (half the
  shoulder width 0.259 H); lumbar joint (L4-L5) at 0.630 H; the ankle 0.039 H above the sole;
* the foot is 0.152 H long, a quarter of it behind the ankle; the table's foot segment runs
  from the lateral malleolus (the ankle) to the head of metatarsal II, placed on the sole at
  three quarters of the foot length.

Segments and joints: pelvis (floating base); lumbar joint (3 hinges: flexion y, bending x,
rotation z) to the thorax-abdomen, with head and neck fixed on it; shoulders (3 hinges),
elbows (1), hands fixed on the forearms; hips (3 hinges), knees (1), ankles (2: y, x); sole
frames ``left_sole`` / ``right_sole`` at the centre of each sole, z normal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..robot import Robot
from .urdf_writer import Joint, Link, Solid, chain, urdf_text

__all__ = [
    "DEMPSTER",
    "Segment",
    "anthropometric_human_urdf",
    "anthropometric_human",
    "sole_half_sizes",
    "standing_height",
]


@dataclass(frozen=True)
class Segment:
    """One row of an anthropometric table.

    Attributes
    ----------
    mass : fraction of body mass.
    com : CoM distance from the proximal end, fraction of segment length.
    rg : radius of gyration about the CoM (transverse), fraction of segment length; None
        where the table gives none.
    length : segment length, fraction of stature.
    """

    mass: float
    com: float
    rg: float | None
    length: float


# Winter (2009) Table 4.1 (Dempster), lengths from Winter Fig. 4.1.
DEMPSTER: dict[str, Segment] = {
    "hand": Segment(0.006, 0.506, 0.297, 0.108),
    "forearm": Segment(0.016, 0.430, 0.303, 0.146),
    "upper_arm": Segment(0.028, 0.436, 0.322, 0.186),
    "foot": Segment(0.0145, 0.50, 0.475, 0.152),
    "shank": Segment(0.0465, 0.433, 0.302, 0.246),
    "thigh": Segment(0.100, 0.433, 0.323, 0.245),
    "head_neck": Segment(0.081, 1.000, 0.495, 0.118),
    "thorax_abdomen": Segment(0.355, 0.63, None, 0.188),
    "pelvis": Segment(0.142, 0.105, None, 0.100),
}

HIP_HALF_WIDTH = 0.052  # of stature
SHOULDER_HALF_WIDTH = 0.1295
HIP_HEIGHT = 0.530
LUMBAR_HEIGHT = 0.630
SHOULDER_HEIGHT = 0.818
ANKLE_HEIGHT = 0.039
FOOT_WIDTH = 0.055
HEEL_BEHIND_ANKLE = 0.25  # share of the foot length behind the ankle
BODY_WIDTH, BODY_DEPTH = 0.19, 0.12  # trunk box, of stature


def _gyration(s: Segment) -> float:
    """The segment's radius of gyration (fraction of its length); the table must give it."""
    if s.rg is None:
        raise InvalidArgumentError("the anthropometric table gives no radius of gyration here")
    return s.rg


def _limb_inertia(m: float, L: float, rg: float, axis: str) -> np.ndarray:
    """Inertia about the CoM of a limb whose long axis is ``axis``."""
    transverse = m * (rg * L) ** 2
    longitudinal = m * (0.1 * L) ** 2
    diag = {
        "x": [longitudinal, transverse, transverse],
        "z": [transverse, transverse, longitudinal],
    }[axis]
    return np.diag(diag)


#: Limbs hang along -z from their joint; their visuals, in fractions of stature: a cylinder's
#: radius, or a box's width and depth (the hand).
_LIMB_VISUALS: dict[str, tuple[float, ...]] = {
    "upper_arm": (0.025,),
    "forearm": (0.02,),
    "hand": (0.03, 0.015),
    "thigh": (0.045,),
    "shank": (0.03,),
}
X, Y, Z = (1, 0, 0), (0, 1, 0), (0, 0, 1)
_ORIGIN = (0.0, 0.0, 0.0)


def _trunk(name: str, m: float, L: float, com_z: float, H: float) -> Link:
    """A trunk segment of mass ``m`` [kg]: a uniform box of the body's depth and width and of
    height ``L`` [m] up from its origin; CoM ``com_z`` [m] above the origin."""
    box = Solid("box", (BODY_DEPTH * H, BODY_WIDTH * H, L))
    return Link(name, m, (0.0, 0.0, com_z), box.inertia(m), box.geometry(), None, (0, 0, L / 2))


def _human_links(H: float, M: float) -> dict[str, Link]:
    """The links with a body of the human of stature ``H`` [m] and mass ``M`` [kg]: trunk and
    head, and each limb for both sides."""

    def seg(name: str) -> tuple[float, float, Segment]:
        s = DEMPSTER[name]
        return s.mass * M, s.length * H, s

    # Pelvis (base): from the hip line up to L4-L5; proximal end = L4-L5 (table convention);
    # its CoM from the hip line.
    m, L, s = seg("pelvis")
    links = {"pelvis": _trunk("pelvis", m, L, (LUMBAR_HEIGHT - HIP_HEIGHT) * H - s.com * L, H)}
    m, L, s = seg("thorax_abdomen")  # proximal end = C7-T1 (top)
    links["thorax_abdomen"] = _trunk("thorax_abdomen", m, L, L - s.com * L, H)
    m, L, s = seg("head_neck")  # proximal end = C7-T1; CoM at the ear canal
    i = m * (_gyration(s) * L) ** 2
    com = (0.0, 0.0, s.com * L)
    head = Solid("sphere", (0.06 * H,)).geometry()
    links["head_neck"] = Link("head_neck", m, com, np.diag([i, i, i]), head, None, com)
    for side in ("left", "right"):
        for name, shape in _LIMB_VISUALS.items():
            m, L, s = seg(name)
            if len(shape) == 1:
                visual = Solid("cylinder", (shape[0] * H, L)).geometry()
            else:
                visual = Solid("box", (shape[0] * H, shape[1] * H, L)).geometry()
            limb = f"{side}_{name}"
            inertia = _limb_inertia(m, L, _gyration(s), "z")
            links[limb] = Link(limb, m, (0, 0, -s.com * L), inertia, visual, None, (0, 0, -L / 2))
        links[f"{side}_foot"] = _foot(f"{side}_foot", *seg("foot"), H)
    return links


def _sole(L: float, H: float) -> tuple[float, float, float]:
    """The sole frame's origin in the foot's (the ankle's) frame [m], ``L`` the foot length."""
    return (L * (0.5 - HEEL_BEHIND_ANKLE), 0.0, -ANKLE_HEIGHT * H)


def _foot(name: str, m: float, L: float, s: Segment, H: float) -> Link:
    """The foot of length ``L`` [m] in the ankle's frame; it collides (a box on the sole)."""
    # Dempster's foot runs from the lateral malleolus to the head of metatarsal II.
    mt2 = np.array([(0.75 - HEEL_BEHIND_ANKLE) * L, 0.0, -ANKLE_HEIGHT * H])
    com = s.com * mt2
    L_ref = float(np.linalg.norm(mt2))  # the table's foot length: malleolus to MT2
    sole = _sole(L, H)
    foot_box = (L, FOOT_WIDTH * H, 0.02 * H)
    geometry = Solid("box", foot_box).geometry()
    return Link(
        name,
        m,
        (com[0], com[1], com[2]),
        _limb_inertia(m, L_ref, _gyration(s), "x"),
        visual=geometry,
        collision=geometry,
        geometry_origin=(sole[0], 0.0, sole[2] + foot_box[2] / 2),
    )


def _human_joints(H: float) -> list[Joint]:
    """The human's joints, as chains of rows (:func:`~.urdf_writer.chain`); on the right, y
    and the x axes are mirrored."""
    length = {name: s.length * H for name, s in DEMPSTER.items()}
    lumbar = (0.0, 0.0, (LUMBAR_HEIGHT - HIP_HEIGHT) * H)
    neck = (0.0, 0.0, (SHOULDER_HEIGHT - LUMBAR_HEIGHT) * H)
    # Lumbar joint (3 hinges at L4-L5) to the thorax-abdomen, head and neck fixed on it.
    joints = chain(
        "pelvis",
        [
            ("lumbar_flexion", "lumbar_link_1", lumbar, Y, (-0.8, 0.6)),
            ("lumbar_bending", "lumbar_link_2", _ORIGIN, X, (-0.5, 0.5)),
            ("lumbar_rotation", "thorax_abdomen", _ORIGIN, Z, (-0.6, 0.6)),
            ("neck", "head_neck", neck, None, None),
        ],
    )
    for side, sy in (("left", 1.0), ("right", -1.0)):
        shoulder = (0.0, sy * SHOULDER_HALF_WIDTH * H, (SHOULDER_HEIGHT - LUMBAR_HEIGHT) * H)
        hip = (0.0, sy * HIP_HALF_WIDTH * H, 0.0)
        # Arm, hanging down (-z): shoulder (3 hinges), elbow, hand fixed.
        arm = [
            ("{s}_shoulder_flexion", "{s}_shoulder_link_1", shoulder, Y, (-3.1, 1.0)),
            ("{s}_shoulder_abduction", "{s}_shoulder_link_2", _ORIGIN, (sy, 0, 0), (-0.5, 3.0)),
            ("{s}_shoulder_rotation", "{s}_upper_arm", _ORIGIN, Z, (-1.5, 1.5)),
            ("{s}_elbow", "{s}_forearm", (0, 0, -length["upper_arm"]), Y, (-2.6, 0.0)),
            ("{s}_wrist", "{s}_hand", (0, 0, -length["forearm"]), None, None),
        ]
        # Leg: hip (3 hinges), knee, ankle (2 hinges), foot with its sole.
        leg = [
            ("{s}_hip_flexion", "{s}_hip_link_1", hip, Y, (-2.0, 0.5)),
            ("{s}_hip_adduction", "{s}_hip_link_2", _ORIGIN, (-sy, 0, 0), (-0.5, 0.5)),
            ("{s}_hip_rotation", "{s}_thigh", _ORIGIN, Z, (-0.8, 0.8)),
            ("{s}_knee", "{s}_shank", (0, 0, -length["thigh"]), Y, (0.0, 2.5)),
            ("{s}_ankle_flexion", "{s}_ankle_link", (0, 0, -length["shank"]), Y, (-0.9, 0.6)),
            ("{s}_ankle_inversion", "{s}_foot", _ORIGIN, (sy, 0, 0), (-0.5, 0.5)),
            ("{s}_sole_joint", "{s}_sole", _sole(length["foot"], H), None, None),
        ]
        joints += chain("thorax_abdomen", arm, side) + chain("pelvis", leg, side)
    return joints


def anthropometric_human_urdf(height: float = 1.70, mass: float = 70.0) -> str:
    """URDF text of the human model for a stature ``height`` [m] and ``mass`` [kg]."""
    if not (height > 0 and mass > 0):
        raise ValueError(f"height and mass must be positive, got {height} m, {mass} kg")
    links = _human_links(height, mass)
    half_length, half_width = sole_half_sizes(height)
    return urdf_text(
        "human_dempster",
        links["pelvis"],
        _human_joints(height),
        links,
        "wholebody anthropometric human, dempster table (Winter 2009, Table 4.1), stature "
        f"{height} m, mass {mass} kg; "
        f"sole half-sizes {half_length:.4f} x {half_width:.4f} m. "
        "Generated by python -m wholebody.models",
    )


def anthropometric_human(height: float = 1.70, mass: float = 70.0) -> Robot:
    """The human model as a :class:`wholebody.Robot` (floating base)."""
    return Robot.from_urdf_string(anthropometric_human_urdf(height, mass), name="human_dempster")


def sole_half_sizes(height: float = 1.70) -> tuple[float, float]:
    """Half-length and half-width of the model's soles [m]."""
    return DEMPSTER["foot"].length * height / 2, FOOT_WIDTH * height / 2


def standing_height(height: float = 1.70) -> float:
    """Base (hip line) height with straight legs and the soles on z = 0 [m]."""
    return (DEMPSTER["thigh"].length + DEMPSTER["shank"].length + ANKLE_HEIGHT) * height
