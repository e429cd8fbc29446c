"""Support areas: where the CoM can stand still, and where the ZMP can go.

Both are projections onto a plane of a polytope of contact wrenches (each inside its friction
cone, all together balancing the robot), computed exactly (to a stated tolerance) by the
incremental projection of Bretl and Lall ("Testing static equilibrium for legged robots",
IEEE T-RO 2008): start from a triangle of extreme points, then for each edge ask a linear
program for the farthest point beyond it; an edge with nothing beyond it is final. Every
vertex is an LP optimum, so the polygon is exact up to the LP tolerance, and it converges in
as many LPs as it has edges plus vertices. Linear programs: scipy's HiGHS (no new
dependency; the polytopes here have at most a few hundred constraints).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import linprog

from ..contacts import Contact
from ..errors import ProjectionError, WholebodyError
from ..robot.core import Robot
from . import ContactSet

__all__ = ["Polygon", "static_equilibrium_polygon", "zmp_support_area", "project_polytope"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Polygon:
    """A convex polygon in the horizontal plane.

    Attributes
    ----------
    vertices : ndarray, shape (k, 2)
        Counter-clockwise, world x-y [m]; empty (0, 2) when the set is empty.
    """

    vertices: Array

    @property
    def area(self) -> float:
        """Area [m^2] (shoelace formula)."""
        if len(self.vertices) < 3:
            return 0.0
        x, y = self.vertices[:, 0], self.vertices[:, 1]
        return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))

    @property
    def is_empty(self) -> bool:
        return len(self.vertices) == 0

    def margin(self, point: ArrayLike) -> float:
        """Signed distance from ``point`` (x, y) to the boundary: positive inside [m]."""
        if len(self.vertices) < 3:
            return -np.inf
        p = np.asarray(point, dtype=float)[:2]
        v, w = self.vertices, np.roll(self.vertices, -1, axis=0)
        edges = w - v
        normals = np.column_stack([edges[:, 1], -edges[:, 0]])  # outward for CCW order
        normals /= np.linalg.norm(normals, axis=1)[:, None]
        return float(-np.max(np.einsum("ij,ij->i", normals, p - v)))

    def contains(self, point: ArrayLike, tol: float = 0.0) -> bool:
        return self.margin(point) >= -tol


def project_polytope(
    A_ub: Array, b_ub: Array, A_eq: Array, b_eq: Array, E: Array, f: Array, *, tol: float = 1e-7
) -> Polygon:
    """Project ``{x : A_ub x <= b_ub, A_eq x = b_eq}`` by ``y = E x + f`` (E of shape (2, n)).

    The polytope must project to a bounded set. ``tol`` [same unit as y]: an edge is final
    when no point lies farther than ``tol`` beyond it.
    """
    n = A_ub.shape[1]

    def extreme(direction: Array) -> Array | None:
        res = linprog(
            -(direction @ E),
            A_ub=A_ub,
            b_ub=b_ub,
            A_eq=A_eq,
            b_eq=b_eq,
            bounds=[(None, None)] * n,
            method="highs",
        )
        if res.status == 2:
            return None
        if res.status != 0:
            raise ProjectionError(f"linear program failed: {res.message}")
        return E @ res.x + f

    angles = np.pi / 2 + 2 * np.pi * np.arange(3) / 3
    first = [extreme(np.array([np.cos(t), np.sin(t)])) for t in angles]
    if first[0] is None:
        return Polygon(np.zeros((0, 2)))
    found = _unique(first, tol)
    if len(found) < 3:
        # Degenerate (a segment or a point): also probe the perpendicular directions.
        more = [extreme(np.array([np.cos(t), np.sin(t)])) for t in angles + np.pi]
        found = _unique([*found, *more], tol)
        if len(found) < 3:
            return Polygon(np.array(found))
    vertices = _ccw(np.array(found))
    final = [False] * len(vertices)
    i = 0
    while not all(final):
        if final[i]:
            i = (i + 1) % len(vertices)
            continue
        a, b = vertices[i], vertices[(i + 1) % len(vertices)]
        edge = b - a
        normal = np.array([edge[1], -edge[0]]) / np.linalg.norm(edge)
        p = extreme(normal)
        if p is None or normal @ (p - a) <= tol:
            final[i] = True
        else:
            vertices = np.insert(vertices, i + 1, p, axis=0)
            final.insert(i + 1, False)
    return Polygon(vertices)


def _unique(points: Sequence[Array | None], tol: float) -> list[Array]:
    out: list[Array] = []
    for p in points:
        if p is not None and all(np.linalg.norm(p - q) > tol for q in out):
            out.append(p)
    return out


def _ccw(vertices: Array) -> Array:
    centre = vertices.mean(axis=0)
    order = np.argsort(np.arctan2(vertices[:, 1] - centre[1], vertices[:, 0] - centre[0]))
    return vertices[order]


def _vertical_gravity(robot: Robot) -> float:
    g = robot.gravity_vector
    if abs(g[0]) > 1e-12 or abs(g[1]) > 1e-12 or g[2] >= 0:
        raise WholebodyError(f"support areas assume gravity along -z, got {g}")
    return float(-g[2])


def static_equilibrium_polygon(
    robot: Robot,
    q: ArrayLike,
    contacts: Sequence[Contact],
    *,
    pyramid_faces: int = 4,
    tol: float = 1e-7,
) -> Polygon:
    """CoM positions (x, y) [m] where the robot can stand still on ``contacts`` at ``q``.

    Exists a set of contact wrenches inside their cones (inner pyramids for point contacts,
    the wrench cone for soles) that balances the weight applied at the CoM:

    .. math::  \\sum_i f_i = -m g, \\quad \\sum_i (p_i \\times f_i + \\tau_i) + c \\times m g = 0

    The CoM height does not matter. Gravity must be along -z.
    """
    q = robot._check_q(q)
    g0 = _vertical_gravity(robot)
    m = robot.mass
    cset, positions, rotations = _contact_geometry(robot, q, contacts, pyramid_faces)
    n = cset.n
    G = cset.face_matrix(rotations)
    A_ne = cset.newton_euler_matrix(positions, np.zeros(3))  # wrench about the world origin
    # Unknowns (x, c_x, c_y); c x (m g) = m g0 (-c_y, c_x, 0) for g = (0, 0, -g0).
    A_eq = np.zeros((6, n + 2))
    A_eq[:, :n] = A_ne
    A_eq[3, n + 1] = -m * g0
    A_eq[4, n] = m * g0
    b_eq = np.array([0.0, 0.0, m * g0, 0.0, 0.0, 0.0])
    A_ub = np.hstack([G, np.zeros((G.shape[0], 2))])
    E = np.zeros((2, n + 2))
    E[0, n], E[1, n + 1] = 1.0, 1.0
    return project_polytope(A_ub, np.zeros(A_ub.shape[0]), A_eq, b_eq, E, np.zeros(2), tol=tol)


def zmp_support_area(
    robot: Robot,
    q: ArrayLike,
    contacts: Sequence[Contact],
    *,
    com: ArrayLike | None = None,
    height: float = 0.0,
    pyramid_faces: int = 4,
    tol: float = 1e-7,
) -> Polygon:
    """Where the ZMP on the plane ``z = height`` can be, for the CoM at ``com``.

    With no change of angular momentum, the contact force passes through the CoM ``c``; the
    ZMP is where that line meets the plane: ``z = c + (height - c_z) f / f_z``. Normalising
    ``sum f_z = 1`` makes this linear in the contact wrenches (Caron, Pham and Nakamura, "ZMP
    support areas for multi-contact mobility under frictional constraints", T-RO 2017).
    ``com`` defaults to the robot's CoM at ``q``. For coplanar horizontal contacts with ample
    friction, this is the convex hull of the contact areas.
    """
    q = robot._check_q(q)
    _vertical_gravity(robot)
    c = robot.com(q) if com is None else np.asarray(com, dtype=float)
    cset, positions, rotations = _contact_geometry(robot, q, contacts, pyramid_faces)
    G = cset.face_matrix(rotations)
    A_ne = cset.newton_euler_matrix(positions, c)
    A_eq = np.vstack([A_ne[2:3], A_ne[3:]])  # sum f_z = 1 and zero moment about c
    b_eq = np.array([1.0, 0.0, 0.0, 0.0])
    E = (height - c[2]) * A_ne[:2]
    return project_polytope(G, np.zeros(G.shape[0]), A_eq, b_eq, E, c[:2].copy(), tol=tol)


def _contact_geometry(robot, q, contacts, pyramid_faces):
    placed = robot.placements(q, [c.frame for c in contacts])
    return ContactSet(contacts, pyramid_faces=pyramid_faces), placed.positions, placed.rotations
