"""Asymmetric soles: a rectangle centred at ``center`` in the contact frame, not at its origin.

Independent references: a corner-force LP written here from scratch (four corners at
``c ± (X, Y)``, each force in its pyramid, moments about the frame origin), the centred cone
of the same rectangle applied to the wrench moved to its centre by hand, and convex hulls of
sole corners placed by hand for the support polygon.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.spatial import ConvexHull
from scipy.spatial.transform import Rotation

from wholebody.check import CheckOptions
from wholebody.check.analysis import check_trajectory
from wholebody.contacts import PointContact, SurfaceContact
from wholebody.errors import ContactError, ProfileError
from wholebody.friction import ContactSet, check_wrench_cone, contact_wrench_cone
from wholebody.friction.support import static_equilibrium_polygon
from wholebody.io.profile import load_profile
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH, models_dir
from wholebody.models import HUMANOID_STANDING_HEIGHT as H
from wholebody.trajectory import Trajectory

from ._cone_reference import corner_lp_member

ROOT = Path(__file__).resolve().parents[1]
X, Y, MU = 0.11, 0.045, 0.7
CENTERS = [(0.0, 0.0), (0.04, 0.0), (-0.03, 0.02), (0.25, -0.1)]


def _wrenches(rng, n, center):
    """Wrenches about the origin, with CoPs spread around the (offset) rectangle."""
    f = rng.normal(size=(n, 3)) * [20, 20, 0] + np.c_[np.zeros((n, 2)), rng.uniform(5, 200, n)]
    cop = np.array([center[0], center[1], 0.0]) + rng.uniform(-1.5, 1.5, (n, 3)) * [X, Y, 0]
    tau = np.cross(cop, f) + rng.normal(size=(n, 3)) * [0.5, 0.5, 2.0]
    return np.hstack([f, tau])


@pytest.mark.parametrize("center", CENTERS)
def test_offset_cone_equals_the_corner_force_lp(center):
    """Membership in the offset sole's 16 rows equals the corner-force LP, away from the
    boundary (|margin| > 1e-7 of the normalised rows)."""
    rng = np.random.default_rng(1)
    A = contact_wrench_cone(X, Y, MU, center)
    norms = np.linalg.norm(A, axis=1)
    inside = outside = 0
    for w in _wrenches(rng, 300, center):
        margin = -np.max(A @ w / norms)
        if abs(margin) < 1e-7:
            continue
        member = corner_lp_member(w, X, Y, MU, center)
        assert member == (margin > 0), (w, margin)
        inside += member
        outside += not member
    assert inside > 30 and outside > 30


@pytest.mark.parametrize("center", CENTERS)
def test_offset_cone_is_the_centred_cone_about_the_centre(center):
    """A_offset w_O = A_centred w_C, with w_C the wrench moved by hand to the rectangle's
    centre (tau_C = tau_O + (0 - c) x f), to 1e-12."""
    rng = np.random.default_rng(2)
    c = np.array([center[0], center[1], 0.0])
    W = _wrenches(rng, 50, center)
    W_center = W.copy()
    W_center[:, 3:] += np.cross(-c, W[:, :3])
    assert_allclose(
        W @ contact_wrench_cone(X, Y, MU, center).T,
        W_center @ contact_wrench_cone(X, Y, MU).T,
        rtol=0,
        atol=1e-12,
    )
    sole = SurfaceContact("foot", half_length=X, half_width=Y, mu=MU, center=center)
    got = check_wrench_cone(sole, W)
    ref = check_wrench_cone(replace(sole, center=(0.0, 0.0)), W_center)
    np.testing.assert_array_equal(got.inside, ref.inside)
    assert_allclose(sole.corners.mean(axis=0), c, rtol=0, atol=1e-15)


def test_contact_set_checks_and_generators_honour_the_offset():
    """ContactSet.check of world-axes wrenches (random rotations) agrees with the LP; every
    generator is inside the faces and the generators span the LP's members (nnls)."""
    from scipy.optimize import nnls

    rng = np.random.default_rng(3)
    center = (0.05, -0.02)
    soles = [
        SurfaceContact("a", half_length=X, half_width=Y, mu=MU, center=center),
        PointContact("p", mu=0.5),
    ]
    cset = ContactSet(soles)
    n = 80
    R = Rotation.random(2 * n, random_state=4).as_matrix().reshape(n, 2, 3, 3)
    local = _wrenches(rng, n, center)
    W = np.zeros((n, 2, 6))
    W[:, 0, :3] = np.einsum("nij,nj->ni", R[:, 0], local[:, :3])
    W[:, 0, 3:] = np.einsum("nij,nj->ni", R[:, 0], local[:, 3:])
    W[:, 1, :3] = np.einsum("nij,j->ni", R[:, 1], [0.0, 0.0, 10.0])
    ev = cset.check(W, R)
    members = []
    for i in range(n):
        if abs(ev.margin[i, 0]) > 1e-7:
            member = corner_lp_member(local[i], X, Y, MU, center)
            assert member == (ev.margin[i, 0] > 0)
            members.append(member)
    assert 10 < sum(members) < len(members) - 10
    i = int(np.flatnonzero(ev.margin[:, 0] > 1e-7)[0])
    G = cset.face_matrix(R[i])
    V = cset.generators(R[i])
    assert (G @ V <= 1e-12).all()
    assert nnls(V, np.r_[W[i, 0], W[i, 1, :3]])[1] < 1e-9


@pytest.mark.parametrize("center", [(0.0, 0.0), (0.06, 0.01)])
def test_support_polygon_is_the_hull_of_the_offset_soles(humanoid, center):
    """Flat feet: the static-equilibrium polygon is the convex hull of the offset soles'
    corners, placed by hand (frame origin + R (c + corner))."""
    q = humanoid.q_from_named({"right_hip_yaw": 0.3}, base_position=[0.1, -0.2, H])
    feet = [
        SurfaceContact(f, half_length=0.1, half_width=0.04, mu=0.7, center=center)
        for f in ("left_sole", "right_sole")
    ]
    polygon = static_equilibrium_polygon(humanoid, q, feet)
    corners = []
    for c in feet:
        M = humanoid.placements(q, c.frame).se3()
        for sx, sy in ((1, 1), (-1, 1), (-1, -1), (1, -1)):
            corners.append(M.act(np.array([center[0] + sx * 0.1, center[1] + sy * 0.04, 0]))[:2])
    corners = np.array(corners)
    hull = corners[ConvexHull(corners).vertices]
    assert len(polygon.vertices) == len(hull)
    for v in hull:
        assert np.min(np.linalg.norm(polygon.vertices - v, axis=1)) < 1e-6


def test_a_log_checks_against_where_the_sole_is():
    """The squat's CoPs lie near the sole origins: a sole shifted ahead by more than its
    length excludes them (every sample violates a CoP row), one shifted a little does not."""
    profile = load_profile(models_dir() / "humanoid.toml")
    squat = Trajectory.load(ROOT / "data" / "humanoid_squat.npz")
    Xh = HUMANOID_SOLE_HALF_LENGTH
    near = [replace(c, center=(0.2 * Xh, 0.0)) for c in profile.contacts]
    far = [replace(c, center=(2 * Xh + 0.02, 0.0)) for c in profile.contacts]
    ok = check_trajectory(profile.robot, squat, near, CheckOptions(diagnose_causes=False))
    assert ok.verdict == "consistent" and (ok.cone_margin > 0).all()
    bad = check_trajectory(profile.robot, squat, far, CheckOptions(diagnose_causes=False))
    assert (bad.cone_margin < 0).all()
    assert all("tau_y" in r for r in bad.violated_row.ravel())
    # The report keeps where each sole is, for the CoP figure.
    assert bad.sole_centers == {c.name: (2 * Xh + 0.02, 0.0) for c in profile.contacts}


# --- inputs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("center", [(0.0,), (0.0, np.nan), "ab", (0, 0, 0)])
def test_bad_center_is_a_contact_error(center):
    with pytest.raises(ContactError, match="center must be 2 finite numbers"):
        SurfaceContact("foot", half_length=X, half_width=Y, mu=MU, center=center)


def test_profile_center_key(tmp_path):
    def write(extra: str, kind: str = "surface") -> Path:
        path = tmp_path / "p.toml"
        sizes = "half_length = 0.1\nhalf_width = 0.05\n" if kind == "surface" else ""
        path.write_text(
            f'robot = "humanoid"\n[[contacts]]\nframe = "left_sole"\ntype = "{kind}"\n'
            f"{sizes}mu = 1.0\n{extra}\n"
        )
        return path

    (sole,) = load_profile(write("center = [0.03, -0.01]")).contacts
    assert isinstance(sole, SurfaceContact)
    np.testing.assert_array_equal(sole.center, [0.03, -0.01])
    (sole,) = load_profile(write("")).contacts
    np.testing.assert_array_equal(sole.center, [0.0, 0.0])
    with pytest.raises(ProfileError, match="'center' must be an array of 2 numbers"):
        load_profile(write("center = [0.03, 0.0, 0.0]"))
    with pytest.raises(ProfileError, match="'center' applies to surface contacts"):
        load_profile(write("center = [0.03, 0.0]", kind="point"))
    with pytest.raises(ProfileError, match="unknown key 'centre'; did you mean 'center'"):
        load_profile(write("centre = [0.03, 0.0]"))


def test_command_line_contact_spec_takes_a_centre():
    from wholebody.io.profile import parse_contact_spec

    c = parse_contact_spec("left_sole:surface:0.12:0.05:0.8:0.03:-0.01")
    assert c == SurfaceContact(
        "left_sole", half_length=0.12, half_width=0.05, mu=0.8, center=(0.03, -0.01)
    )
    assert parse_contact_spec("left_sole:surface:0.12:0.05:0.8").center == (0.0, 0.0)
    with pytest.raises(ProfileError, match=r"MU\[:CX:CY\]"):
        parse_contact_spec("left_sole:surface:0.12:0.05:0.8:0.03")
