"""A floating-base human from an anthropometric table: segment masses, lengths, CoMs, inertias.

Table ``"dempster"``: Dempster's (1955) cadaver data as adapted by Winter, *Biomechanics and
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

from .urdf_writer import UrdfWriter, box, box_inertia, cylinder, sphere

__all__ = [
    "DEMPSTER",
    "Segment",
    "anthropometric_human_urdf",
    "anthropometric_human",
    "segment_table",
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

TABLES = {"dempster": DEMPSTER}

HIP_HALF_WIDTH = 0.052  # of stature
SHOULDER_HALF_WIDTH = 0.1295
HIP_HEIGHT = 0.530
LUMBAR_HEIGHT = 0.630
SHOULDER_HEIGHT = 0.818
ANKLE_HEIGHT = 0.039
FOOT_WIDTH = 0.055
HEEL_BEHIND_ANKLE = 0.25  # share of the foot length behind the ankle
BODY_WIDTH, BODY_DEPTH = 0.19, 0.12  # trunk box, of stature


def segment_table(table: str = "dempster") -> dict[str, Segment]:
    try:
        return TABLES[table]
    except KeyError:
        raise KeyError(f"unknown anthropometric table {table!r}; known: {sorted(TABLES)}") from None


def _limb_inertia(m: float, L: float, rg: float, axis: str) -> np.ndarray:
    """Inertia about the CoM of a limb whose long axis is ``axis``."""
    transverse = m * (rg * L) ** 2
    longitudinal = m * (0.1 * L) ** 2
    diag = {
        "x": [longitudinal, transverse, transverse],
        "z": [transverse, transverse, longitudinal],
    }[axis]
    return np.diag(diag)


def anthropometric_human_urdf(
    height: float = 1.70, mass: float = 70.0, *, table: str = "dempster"
) -> str:
    """URDF text of the human model for a stature ``height`` [m] and ``mass`` [kg]."""
    if not (height > 0 and mass > 0):
        raise ValueError(f"height and mass must be positive, got {height} m, {mass} kg")
    T = segment_table(table)
    H, M = height, mass
    w = UrdfWriter(f"human_{table}")

    def seg(name: str):
        s = T[name]
        return s.mass * M, s.length * H, s

    # Pelvis (base): from the hip line up to L4-L5; proximal end = L4-L5 (table convention).
    m, L, s = seg("pelvis")
    pelvis_com = (0.0, 0.0, (LUMBAR_HEIGHT - HIP_HEIGHT) * H - s.com * L)  # from the hip line
    size = (BODY_DEPTH * H, BODY_WIDTH * H, L)
    w.link(
        "pelvis",
        m,
        pelvis_com,
        box_inertia(m, size),
        visual=box(size),
        geometry_origin=(0, 0, L / 2),
    )
    # Lumbar: three hinges at L4-L5.
    lumbar = (0.0, 0.0, (LUMBAR_HEIGHT - HIP_HEIGHT) * H)
    w.joint(
        "lumbar_flexion",
        "revolute",
        "pelvis",
        "lumbar_link_1",
        xyz=lumbar,
        axis=(0, 1, 0),
        limit=(-0.8, 0.6),
    )
    w.link("lumbar_link_1")
    w.joint(
        "lumbar_bending",
        "revolute",
        "lumbar_link_1",
        "lumbar_link_2",
        axis=(1, 0, 0),
        limit=(-0.5, 0.5),
    )
    w.link("lumbar_link_2")
    w.joint(
        "lumbar_rotation",
        "revolute",
        "lumbar_link_2",
        "thorax_abdomen",
        axis=(0, 0, 1),
        limit=(-0.6, 0.6),
    )
    m, L, s = seg("thorax_abdomen")  # proximal end = C7-T1 (top)
    size = (BODY_DEPTH * H, BODY_WIDTH * H, L)
    w.link(
        "thorax_abdomen",
        m,
        (0.0, 0.0, L - s.com * L),
        box_inertia(m, size),
        visual=box(size),
        geometry_origin=(0, 0, L / 2),
    )
    m, L, s = seg("head_neck")  # proximal end = C7-T1; CoM at the ear canal
    w.joint(
        "neck",
        "fixed",
        "thorax_abdomen",
        "head_neck",
        xyz=(0.0, 0.0, (SHOULDER_HEIGHT - LUMBAR_HEIGHT) * H),
    )
    i = m * (s.rg * L) ** 2
    w.link(
        "head_neck",
        m,
        (0.0, 0.0, s.com * L),
        np.diag([i, i, i]),
        visual=sphere(0.06 * H),
        geometry_origin=(0, 0, s.com * L),
    )

    for side, sy in (("left", 1.0), ("right", -1.0)):
        # Arm, hanging down (-z): shoulder (3 hinges), elbow, hand fixed.
        shoulder = (0.0, sy * SHOULDER_HALF_WIDTH * H, (SHOULDER_HEIGHT - LUMBAR_HEIGHT) * H)
        w.joint(
            f"{side}_shoulder_flexion",
            "revolute",
            "thorax_abdomen",
            f"{side}_shoulder_link_1",
            xyz=shoulder,
            axis=(0, 1, 0),
            limit=(-3.1, 1.0),
        )
        w.link(f"{side}_shoulder_link_1")
        w.joint(
            f"{side}_shoulder_abduction",
            "revolute",
            f"{side}_shoulder_link_1",
            f"{side}_shoulder_link_2",
            axis=(sy, 0, 0),
            limit=(-0.5, 3.0),
        )
        w.link(f"{side}_shoulder_link_2")
        w.joint(
            f"{side}_shoulder_rotation",
            "revolute",
            f"{side}_shoulder_link_2",
            f"{side}_upper_arm",
            axis=(0, 0, 1),
            limit=(-1.5, 1.5),
        )
        m, L, s = seg("upper_arm")
        w.link(
            f"{side}_upper_arm",
            m,
            (0, 0, -s.com * L),
            _limb_inertia(m, L, s.rg, "z"),
            visual=cylinder(0.025 * H, L),
            geometry_origin=(0, 0, -L / 2),
        )
        w.joint(
            f"{side}_elbow",
            "revolute",
            f"{side}_upper_arm",
            f"{side}_forearm",
            xyz=(0, 0, -L),
            axis=(0, 1, 0),
            limit=(-2.6, 0.0),
        )
        m, L, s = seg("forearm")
        w.link(
            f"{side}_forearm",
            m,
            (0, 0, -s.com * L),
            _limb_inertia(m, L, s.rg, "z"),
            visual=cylinder(0.02 * H, L),
            geometry_origin=(0, 0, -L / 2),
        )
        w.joint(f"{side}_wrist", "fixed", f"{side}_forearm", f"{side}_hand", xyz=(0, 0, -L))
        m, L, s = seg("hand")
        w.link(
            f"{side}_hand",
            m,
            (0, 0, -s.com * L),
            _limb_inertia(m, L, s.rg, "z"),
            visual=box((0.03 * H, 0.015 * H, L)),
            geometry_origin=(0, 0, -L / 2),
        )
        # Leg: hip (3 hinges), knee, ankle (2 hinges), foot with its sole.
        w.joint(
            f"{side}_hip_flexion",
            "revolute",
            "pelvis",
            f"{side}_hip_link_1",
            xyz=(0.0, sy * HIP_HALF_WIDTH * H, 0.0),
            axis=(0, 1, 0),
            limit=(-2.0, 0.5),
        )
        w.link(f"{side}_hip_link_1")
        w.joint(
            f"{side}_hip_adduction",
            "revolute",
            f"{side}_hip_link_1",
            f"{side}_hip_link_2",
            axis=(-sy, 0, 0),
            limit=(-0.5, 0.5),
        )
        w.link(f"{side}_hip_link_2")
        w.joint(
            f"{side}_hip_rotation",
            "revolute",
            f"{side}_hip_link_2",
            f"{side}_thigh",
            axis=(0, 0, 1),
            limit=(-0.8, 0.8),
        )
        m, L, s = seg("thigh")
        w.link(
            f"{side}_thigh",
            m,
            (0, 0, -s.com * L),
            _limb_inertia(m, L, s.rg, "z"),
            visual=cylinder(0.045 * H, L),
            geometry_origin=(0, 0, -L / 2),
        )
        w.joint(
            f"{side}_knee",
            "revolute",
            f"{side}_thigh",
            f"{side}_shank",
            xyz=(0, 0, -L),
            axis=(0, 1, 0),
            limit=(0.0, 2.5),
        )
        m, L, s = seg("shank")
        w.link(
            f"{side}_shank",
            m,
            (0, 0, -s.com * L),
            _limb_inertia(m, L, s.rg, "z"),
            visual=cylinder(0.03 * H, L),
            geometry_origin=(0, 0, -L / 2),
        )
        w.joint(
            f"{side}_ankle_flexion",
            "revolute",
            f"{side}_shank",
            f"{side}_ankle_link",
            xyz=(0, 0, -L),
            axis=(0, 1, 0),
            limit=(-0.9, 0.6),
        )
        w.link(f"{side}_ankle_link")
        w.joint(
            f"{side}_ankle_inversion",
            "revolute",
            f"{side}_ankle_link",
            f"{side}_foot",
            axis=(sy, 0, 0),
            limit=(-0.5, 0.5),
        )
        m, L, s = seg("foot")
        # Dempster's foot runs from the lateral malleolus to the head of metatarsal II.
        mt2 = np.array([(0.75 - HEEL_BEHIND_ANKLE) * L, 0.0, -ANKLE_HEIGHT * H])
        com = s.com * mt2
        L_ref = float(np.linalg.norm(mt2))  # the table's foot length: malleolus to MT2
        sole = (L * (0.5 - HEEL_BEHIND_ANKLE), 0.0, -ANKLE_HEIGHT * H)
        foot_box = (L, FOOT_WIDTH * H, 0.02 * H)
        w.link(
            f"{side}_foot",
            m,
            tuple(com),
            _limb_inertia(m, L_ref, s.rg, "x"),
            visual=box(foot_box),
            collision=box(foot_box),
            geometry_origin=(sole[0], 0.0, sole[2] + foot_box[2] / 2),
        )
        w.joint(f"{side}_sole_joint", "fixed", f"{side}_foot", f"{side}_sole", xyz=sole)
        w.link(f"{side}_sole")
    return w.render(
        f"wholebody anthropometric human, {table} table (Winter 2009, Table 4.1), stature "
        f"{H} m, mass {M} kg; "
        f"sole half-sizes {T['foot'].length * H / 2:.4f} x {FOOT_WIDTH * H / 2:.4f} m. "
        "Generated by python -m wholebody.models"
    )


def anthropometric_human(height: float = 1.70, mass: float = 70.0, *, table: str = "dempster"):
    """The human model as a :class:`wholebody.Robot` (floating base)."""
    from ..robot.core import Robot

    return Robot.from_urdf_string(
        anthropometric_human_urdf(height, mass, table=table), name=f"human_{table}"
    )


def sole_half_sizes(height: float = 1.70, table: str = "dempster") -> tuple[float, float]:
    """Half-length and half-width of the model's soles [m]."""
    return segment_table(table)["foot"].length * height / 2, FOOT_WIDTH * height / 2


def standing_height(height: float = 1.70, table: str = "dempster") -> float:
    """Base (hip line) height with straight legs and the soles on z = 0 [m]."""
    T = segment_table(table)
    return (T["thigh"].length + T["shank"].length + ANKLE_HEIGHT) * height
