"""The anthropometric human against Winter's (2009) Table 4.1 (Dempster), typed here."""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from wholebody.models import anthropometric_human, anthropometric_human_urdf, path

H, M = 1.70, 70.0
# segment: (mass fraction, CoM from proximal / length, Rg about CoM / length, length / stature)
WINTER = {
    "upper_arm": (0.028, 0.436, 0.322, 0.186),
    "forearm": (0.016, 0.430, 0.303, 0.146),
    "hand": (0.006, 0.506, 0.297, 0.108),
    "thigh": (0.100, 0.433, 0.323, 0.245),
    "shank": (0.0465, 0.433, 0.302, 0.246),
    "foot": (0.0145, 0.50, 0.475, 0.152),
}


def links(text: str) -> dict[str, tuple[float, np.ndarray, np.ndarray]]:
    out = {}
    for link in ET.fromstring(text).iter("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        com = np.array([float(x) for x in inertial.find("origin").get("xyz").split()])
        I = inertial.find("inertia")
        out[link.get("name")] = (
            float(inertial.find("mass").get("value")),
            com,
            np.array([float(I.get(k)) for k in ("ixx", "iyy", "izz")]),
        )
    return out


def test_segment_masses_sum_to_the_total():
    robot = anthropometric_human(H, M)
    assert robot.mass == pytest.approx(M, abs=1e-9)
    assert sum(m for m, _, _ in links(anthropometric_human_urdf(H, M)).values()) == pytest.approx(
        M, abs=1e-9
    )


@pytest.mark.parametrize("segment", sorted(WINTER))
def test_limb_segments_match_the_table(segment):
    mass_fraction, com_fraction, rg_fraction, length_fraction = WINTER[segment]
    L = length_fraction * H
    if segment == "foot":
        # Dempster's foot runs from the malleolus (ankle, 0.039 H above the sole, a quarter of
        # the foot length from the heel) to the head of metatarsal II (three quarters).
        L = float(np.hypot(0.5 * length_fraction * H, 0.039 * H))
    table = links(anthropometric_human_urdf(H, M))
    for side in ("left", "right"):
        m, com, inertia = table[f"{side}_{segment}"]
        assert m == pytest.approx(mass_fraction * M, rel=1e-12)
        assert np.linalg.norm(com) == pytest.approx(com_fraction * L, rel=1e-12)
        # The transverse moments (the larger two) are m (rg L)^2.
        assert sorted(inertia)[-1] == pytest.approx(m * (rg_fraction * L) ** 2, rel=1e-12)


def test_trunk_and_head_masses():
    table = links(anthropometric_human_urdf(H, M))
    assert table["head_neck"][0] == pytest.approx(0.081 * M)
    assert table["thorax_abdomen"][0] + table["pelvis"][0] == pytest.approx(0.497 * M)


def test_shipped_file_and_scaling():
    assert path("human_dempster").read_text() == anthropometric_human_urdf(1.70, 70.0)
    tall = anthropometric_human(1.90, 90.0)
    assert tall.mass == pytest.approx(90.0)
    q = tall.q_from_named({}, base_position=[0, 0, 0])
    knee_to_ankle = tall.frame_position(q, "left_ankle_flexion") - tall.frame_position(
        q, "left_knee"
    )
    assert np.linalg.norm(knee_to_ankle) == pytest.approx(0.246 * 1.90)


@pytest.mark.parametrize(
    ("height", "mass", "sha256"),
    [
        (1.0, 40.0, "570ac289b7d6a51271a18d5aae7ec09dd6bd93cb7570709d1eb678cc947af155"),
        (1.55, 95.5, "42f9a0d5be720311d5028f57ac23f72c99b6f22a801947bfbd12b2de93aa6305"),
        (2.1, 70.0, "bb973dff95ed9a62c9a25bd1024877880d1bc0bbb8a118e42e3429371420472f"),
    ],
)
def test_other_statures_write_the_text_pinned_before_the_builder_was_a_table(height, mass, sha256):
    # SHA-256 of the text main ee921d1 wrote (one writer call per element).
    text = anthropometric_human_urdf(height, mass)
    assert hashlib.sha256(text.encode()).hexdigest() == sha256
