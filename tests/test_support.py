"""Support polygons against independent references: convex hulls and per-point LPs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.spatial import ConvexHull

import wholebody as wb
from wholebody.contacts import PointContact, SurfaceContact
from wholebody.friction import contact_wrench_cone, friction_pyramid
from wholebody.friction.support import static_equilibrium_polygon, zmp_support_area
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH as X
from wholebody.models import HUMANOID_SOLE_HALF_WIDTH as Y
from wholebody.models import HUMANOID_STANDING_HEIGHT as H

FEET = [SurfaceContact(f, half_length=X, half_width=Y, mu=0.7) for f in ("left_sole", "right_sole")]


def sole_corners(robot, q):
    pts = []
    for c in FEET:
        M = robot.placements(q, c.frame).se3()
        for sx, sy in ((1, 1), (-1, 1), (-1, -1), (1, -1)):
            pts.append(M.act(np.array([sx * X, sy * Y, 0.0]))[:2])
    return np.array(pts)


def assert_same_polygon(vertices, reference, atol):
    hull = ConvexHull(reference)
    ref = reference[hull.vertices]
    assert len(vertices) == len(ref)
    for v in ref:
        assert np.min(np.linalg.norm(vertices - v, axis=1)) < atol


@pytest.mark.parametrize("stance", ["parallel", "staggered"])
def test_flat_feet_polygon_is_the_convex_hull_of_the_soles(humanoid, stance):
    bent = {"left_hip_pitch": -0.3, "left_knee": 0.3, "right_hip_yaw": 0.3}
    joints = {} if stance == "parallel" else bent
    q = humanoid.q_from_named(joints, base_position=[0.1, -0.2, H])
    # Put both soles flat on z = 0 is not needed: static equilibrium of horizontal
    # coplanar-or-not contacts with vertical forces alone is the hull of the sole corners.
    polygon = static_equilibrium_polygon(humanoid, q, FEET)
    assert_same_polygon(polygon.vertices, sole_corners(humanoid, q), atol=1e-6)
    assert polygon.area == pytest.approx(ConvexHull(sole_corners(humanoid, q)).volume, rel=1e-6)
    # The ZMP area with ample friction is the same hull, for any CoM height.
    rich = [SurfaceContact(c.frame, half_length=X, half_width=Y, mu=50.0) for c in FEET]
    if stance == "parallel":
        area = zmp_support_area(humanoid, q, rich)
        assert_same_polygon(area.vertices, sole_corners(humanoid, q), atol=1e-6)


def test_polygon_agrees_with_pointwise_feasibility_on_uneven_contacts():
    robot = wb.load("humanoid")
    # Left foot flat, right foot tilted on a slope, plus a hand against a wall.
    pose = {"right_ankle_roll": 0.35, "right_ankle_pitch": -0.3, "left_shoulder_pitch": -1.4}
    q = robot.q_from_named(pose, base_position=[0.0, 0.0, H])
    contacts = [
        FEET[0],
        SurfaceContact("right_sole", half_length=X, half_width=Y, mu=0.5),
        PointContact("left_hand", mu=0.6, normal=[0.0, 0.0, 1.0]),
    ]
    polygon = static_equilibrium_polygon(robot, q, contacts)
    assert len(polygon.vertices) >= 4 and polygon.area > 0

    # Feasibility of one CoM, written out here: unknowns are each contact's force (3) or
    # wrench (6) in its own frame; cones from wholebody.friction (tested against corner LPs).
    places = [robot.placements(q, c.frame).se3() for c in contacts]
    blocks, sizes = [], []
    for c, _M in zip(contacts, places, strict=True):
        if isinstance(c, SurfaceContact):
            blocks.append(contact_wrench_cone(c.half_length, c.half_width, c.mu))
            sizes.append(6)
        else:
            blocks.append(friction_pyramid(c.mu, 4))
            sizes.append(3)
    n = sum(sizes)
    G = np.zeros((sum(len(b) for b in blocks), n))
    r = col = 0
    for b, size in zip(blocks, sizes, strict=True):
        G[r : r + len(b), col : col + size] = b
        r, col = r + len(b), col + size
    m, g0 = robot.mass, 9.81

    def feasible(cx, cy):
        c = np.array([cx, cy, 1.0])
        A = np.zeros((6, n))
        col = 0
        for M, size in zip(places, sizes, strict=True):
            R, p = M.rotation, M.translation
            A[:3, col : col + 3] = R  # world force from the local force
            A[3:, col : col + 3] = np.cross(p - c, R.T).T  # (p - c) x (R f_local)
            if size == 6:
                A[3:, col + 3 : col + 6] = R
            col += size
        b = np.array([0, 0, m * g0, 0, 0, 0.0])  # weight through c: zero moment about c
        res = linprog(
            np.zeros(n),
            A_ub=G,
            b_ub=np.zeros(len(G)),
            A_eq=A,
            b_eq=b,
            bounds=[(None, None)] * n,
            method="highs",
        )
        return res.status == 0

    rng = np.random.default_rng(0)
    lo, hi = polygon.vertices.min(axis=0) - 0.1, polygon.vertices.max(axis=0) + 0.1
    checked = 0
    for _ in range(300):
        p = rng.uniform(lo, hi)
        margin = polygon.margin(p)
        if abs(margin) < 1e-5:
            continue
        checked += 1
        assert (margin > 0) == feasible(*p), (p, margin)
    assert checked > 250


def test_polygon_is_empty_when_standing_is_impossible(humanoid):
    q = humanoid.q_from_named({}, base_position=[0, 0, H])
    wall = [PointContact("left_hand", mu=0.2, normal=[1.0, 0.0, 0.0])]
    assert static_equilibrium_polygon(humanoid, q, wall).is_empty
