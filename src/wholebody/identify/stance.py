"""What a sensor offset imitates: the changes of a link's mass and CoM whose effect on every
row of the fit, while the body that carries the sensor is still, a constant offset of that
sensor reproduces exactly.

A force-torque sensor's offset is constant in the sensor's axes. While the sensor's body rests
(a foot in stance), the weight of that body is a constant wrench in the same axes, and so is
the weight of any change that stays put relative to it whatever the other joints do: on the
link next to it, a mass at a point of the joint axis between them, or a CoM shift along that
axis (an ankle link joined to the foot by a roll joint through its CoM: its mass and its CoM
along the roll axis; a shank: a mass at the ankle's centre). The logs tell such a change from
an offset only by the tilt and the accelerations of the sensor's body; at realistic noise that
leaves the offset off by the change's weight times its lever arm, and the link's fitted value
is noise. These directions are found by linear algebra on the problem's own rows: static
samples of random joint positions with the sensor's frame held at a fixed pose (three
orientations, each with its own offset), the whitened columns of each link's own parameters
against the span of the offsets' columns; a direction whose rows lie in that span (principal
angle below :data:`IMITATED_SINE`) is imitated. When offsets are fitted these directions stay
at the URDF (the offset takes what a difference would explain: a sensor's tare is the weight of
what it carries); directions the rows do not see at all are left to the fit's own rule
(unobserved: kept at the prior).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.transform import Rotation

from .features import features_and_jacobians
from .problem import PreparedLog, Problem

__all__ = ["ImitatedDirection", "offset_imitated_directions", "IMITATED_SINE"]

Array = NDArray[np.float64]
#: A link's direction is imitated by an offset when the sine of the principal angle between its
#: rows and the offsets' span is below this (exact imitation gives round-off; the first
#: direction told apart on the shipped humanoid and on Talos has a sine above 0.8).
IMITATED_SINE = 1e-6
#: Random joint positions per orientation of the sensor's frame.
_SAMPLES = 40
#: Orientations of the sensor's frame: as it is in the world (a sole flat on the ground), and
#: two others.
_ORIENTATIONS = 3


@dataclass(frozen=True)
class ImitatedDirection:
    """One direction of a link's own parameters that a sensor offset imitates.

    Attributes
    ----------
    link : str
        The link.
    contact : str
        The contact whose offset imitates it.
    direction : ndarray, shape (p,)
        Unit vector in the fit's prior-whitened parameters (``u = L^-1 theta``), zero outside
        the link's own parameters.
    members : tuple of str
        The link's parameters in it (``mass``, ``CoM x`` ...), largest first.
    """

    link: str
    contact: str
    direction: Array
    members: tuple[str, ...]

    def words(self) -> str:
        """``"mass"``, ``"CoM x"`` or ``"a combination of mass, CoM z"``."""
        if len(self.members) == 1:
            return self.members[0]
        return "a combination of " + ", ".join(self.members)


def _own_parameters(problem: Problem, i: int) -> list[int]:
    """Indices of the parameters that belong to link ``i`` alone."""
    cols = []
    for k, (_, ids) in enumerate(problem.mass_groups):
        if ids == [i]:
            cols.append(k)
    if i in problem.link_com:
        cols += [problem.link_com[i] + a for a in range(3)]
    if i in problem.link_inertia:
        cols += [problem.link_inertia[i] + a for a in range(6)]
    return cols


def _member_name(problem: Problem, k: int) -> str:
    p = problem.params[k]
    if p.kind == "mass":
        return "mass"
    if p.kind == "com":
        return f"CoM {'xyz'[p.axis]}"
    return p.name.rsplit(".", 1)[-1].replace("_", " ")


def offset_imitated_directions(
    problem: Problem, contacts: list[str], rows: int, seed: int = 0
) -> list[ImitatedDirection]:
    """The directions of each link's own parameters that an offset of one of ``contacts``
    imitates while that contact's frame is still (see the module's text).

    Parameters
    ----------
    problem : Problem
        With offsets of ``contacts`` among its parameters (shared or of its first log).
    contacts : list of str
        Contacts whose offsets are fitted.
    rows : int
        Rows of the fit (6: floating base only; ``nv``: with torques).
    """
    ni = problem.n_inertial
    if ni == 0 or not contacts:
        return []
    _, D = problem.x_and_derivative(np.zeros(problem.p))
    L = problem.prior_factor
    # Whitened columns of the inertial parameters in the rows: d r / d u = F dx/dtheta L.
    inertial = D[: problem.n_pi, :ni] @ L[:ni, :ni]
    rng = np.random.default_rng(seed)
    orientations = [np.eye(3)] + list(
        Rotation.random(_ORIENTATIONS - 1, random_state=rng).as_matrix()
    )
    by_contact = {c.name: c for c in problem.contacts}
    out: list[ImitatedDirection] = []
    for name in contacts:
        cols = [
            problem.n_pi + k - ni
            for k, p in enumerate(problem.params)
            if k >= ni
            and p.target == name
            and p.kind in ("force_offset", "moment_offset")
            and p.log in (None, 0)
        ]
        if len(cols) == 0:
            continue
        A_parts, O_parts = [], []
        for R in orientations:
            F = _still_features(problem, by_contact[name].frame, R, rows, rng)
            A_parts.append(F[:, : problem.n_pi] @ inertial)
            O_parts.append(F[:, cols])
        A = np.vstack(A_parts)
        # Each orientation its own offset: imitated in every still pose, not by one offset
        # across poses (several poses of the body are what tell a weight from an offset).
        O = np.zeros((len(A), len(cols) * len(orientations)))
        start = 0
        for e, part in enumerate(O_parts):
            O[start : start + len(part), e * len(cols) : (e + 1) * len(cols)] = part
            start += len(part)
        out += _imitated_by(problem, name, A, O)
    return out


def _still_features(
    problem: Problem, frame: str, R: Array, rows: int, rng: np.random.Generator
) -> Array:
    """The features (:data:`_SAMPLES` x rows, C) of static samples at random joint positions
    with ``frame`` held at orientation ``R`` (world axes) at the origin, without wrenches."""
    robot = problem.robot
    Q = np.empty((_SAMPLES, robot.nq))
    for k in range(_SAMPLES):
        q = robot.random_configuration(rng)
        q[:3], q[3:7] = 0.0, (0.0, 0.0, 0.0, 1.0)
        X = robot.placements(q, frame).se3()  # the frame in the base's axes
        base = R @ X.rotation.T  # the base placed so that the frame is at (R, 0)
        q[:3] = -base @ X.translation
        q[3:7] = Rotation.from_matrix(base).as_quat()  # x, y, z, w
        Q[k] = q
    zeros = np.zeros((_SAMPLES, robot.nv))
    log = PreparedLog(
        Q,
        zeros,
        zeros,
        np.zeros((_SAMPLES, robot.nv - 6)) if rows > 6 else None,
        np.zeros((_SAMPLES, len(problem.contacts), 6)),
        None,
        (),
        list(range(len(problem.contacts))),
        "stance",
        0,
    )
    F = features_and_jacobians(problem, log, np.arange(_SAMPLES), rows)[0]
    return F.reshape(-1, problem.n_columns)


def _imitated_by(problem: Problem, contact: str, A: Array, O: Array) -> list[ImitatedDirection]:
    """The directions of each touched link's own parameters whose rows (of ``A``: the
    inertial parameters' whitened columns) lie in the span of ``O`` (the offsets' columns of
    ``contact``)."""
    U_o, s_o, _ = np.linalg.svd(O, full_matrices=False)
    U_o = U_o[:, s_o > 1e-10 * max(float(s_o[0]) if len(s_o) else 0.0, 1e-300)]
    out = []
    for i in problem.touched:
        own = _own_parameters(problem, i)
        if not own:
            continue
        U, sv, Vt = np.linalg.svd(A[:, own], full_matrices=False)
        seen = sv > 1e-9 * max(float(sv[0]) if len(sv) else 0.0, 1e-300)
        if not seen.any():
            continue
        U, sv, Vt = U[:, seen], sv[seen], Vt[seen]
        _, sines, Zt = np.linalg.svd(U - U_o @ (U_o.T @ U), full_matrices=False)
        for z in Zt[sines < IMITATED_SINE]:
            d = Vt.T @ (z / sv)  # the link's parameters (whitened) whose rows are U z
            d /= np.linalg.norm(d)
            direction = np.zeros(problem.p)
            direction[own] = d
            order = np.argsort(-np.abs(d))
            members = tuple(
                _member_name(problem, own[j]) for j in order if abs(d[j]) > 0.05 * abs(d[order[0]])
            )
            out.append(ImitatedDirection(problem.links[i].name, contact, direction, members))
    return out
