"""Assembling one sample's QP: the Newton-Euler rows (or the full-dynamics least-squares
conditions), the cones, the data equations. Used by
:mod:`~wholebody.estimation.problem` and the route's full-dynamics mode
(:mod:`wholebody.estimation._samples`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..balance.newton_euler import wrench_sum
from ..errors import StateError
from ..friction import ContactSet
from ..robot import ContactPass, Robot
from .known import (
    identifiable_contacts,
    row_basis,
)

__all__ = [
    "Assembly",
    "assemble",
    "generalized_torque",
    "newton_euler_identifiability",
    "column_mask",
    "RANK_RTOL",
]

Array = NDArray[np.float64]
#: Singular values of J_c^T below this fraction of the largest count as zero (rank).
RANK_RTOL = 1e-9


@dataclass(slots=True)
class Assembly:
    """One sample's QP data.

    ``equations x = target`` are the hard constraints: the six Newton-Euler rows, or in
    full-dynamics mode the least-squares conditions ``diag(s) V^T x = U^T b`` of the
    thin SVD ``J_c^T = U diag(s) V^T`` restricted to its rank (every least-squares
    solution meets them; among those the QP takes the one of least norm).
    ``data_matrix x ~ data_target`` are the mode's raw equations. Columns of inactive
    contacts are zero everywhere (the least-norm answer puts zero there).
    ``identifiable`` (k,): which contacts' wrenches the equations determine.
    ``target_map`` (full-dynamics mode): ``U_r^T``, the map from the raw target ``b`` to
    ``target`` (None in Newton-Euler mode, where they are the same).
    """

    equations: Array
    target: Array
    cones: Array
    ne_matrix: Array
    ne_target: Array
    data_matrix: Array
    data_target: Array
    rank: int
    identifiable: NDArray[np.bool_]
    target_map: Array | None = None


def newton_euler_identifiability(
    cset: ContactSet, ne_matrix: Array, active: NDArray[np.bool_] | None
) -> tuple[int, NDArray[np.bool_]]:
    """Rank of the Newton-Euler rows and which contacts they determine.

    Soles alone: any second active contact can absorb any wrench of the first (shifted), so a
    sole is identifiable only when it is the only active contact; the rank is 6 with one
    active contact or more. With point contacts: from the SVD of ``ne_matrix`` (inactive
    columns zero).
    """
    act = np.ones(len(cset), dtype=bool) if active is None else active
    if all(size == 6 for size in cset.sizes):
        n_active = int(act.sum())
        return (6 if n_active else 0), ~act | (n_active == 1)
    basis, rank = row_basis(ne_matrix, RANK_RTOL)
    return rank, identifiable_contacts(basis, cset.cols, act)


def column_mask(cset: ContactSet, active: NDArray[np.bool_]) -> Array:
    """(n,) 1.0 on active contacts' columns, 0.0 on inactive ones."""
    return np.repeat(active.astype(float), cset.sizes)


def assemble(
    kin: ContactPass,
    cset: ContactSet,
    tau_generalized: Array | None,
    known: Array,
    mass: float,
    gravity: Array,
    *,
    known_points: Array | None = None,
    known_at_origins: Array | None = None,
    active: NDArray[np.bool_] | None = None,
) -> Assembly:
    """The QP data of one sample from its pass (contacts first, then known wrenches' frames).

    ``known`` (e, 6): known external wrenches, world axes, about ``known_points`` (e, 3)
    (default: the pass's frames after the contacts). Full-dynamics mode needs them at their
    frames' origins, ``known_at_origins`` (e, 6) (default ``known``), each on the pass frame
    ``k + j``. ``active`` (k,): inactive contacts' wrenches are fixed to zero.
    """
    k = len(cset)
    com = kin.com
    ne_A = cset.newton_euler_matrix(kin.positions[:k], com)
    masked = active is not None and not active.all()
    cmask = column_mask(cset, active) if masked and active is not None else None
    if cmask is not None:
        ne_A = ne_A * cmask
    # The contacts must supply -w_gi = (dP/dt - m g, dL_G/dt) about the CoM, less what the
    # known external wrenches already supply (their sum about the CoM: balance's algebra).
    ne_b = kin.momentum_rate.copy()
    ne_b[:3] -= mass * gravity
    e = len(known)
    if e:
        points = kin.positions[k : k + e] if known_points is None else known_points
        f, m = wrench_sum(known, points, com)
        ne_b[:3] -= f
        ne_b[3:] -= m
    G = cset.face_matrix(kin.rotations[:k])
    if tau_generalized is None:
        rank, ident = newton_euler_identifiability(cset, ne_A, active)
        return Assembly(ne_A, ne_b, G, ne_A, ne_b, ne_A, ne_b, rank, ident)
    J, rnea = kin.jacobians, kin.inverse_dynamics
    if J is None or rnea is None:
        raise StateError("full-dynamics assembly needs a pass with Jacobians and inverse dynamics")
    A = np.hstack([J[i, : c.size].T for i, c in enumerate(cset.contacts)])
    if cmask is not None:
        A *= cmask
    b = rnea - tau_generalized
    at_origins = known if known_at_origins is None else known_at_origins
    for j in range(e):
        b -= J[k + j].T @ at_origins[j]
    U, sv, Vt = np.linalg.svd(A, full_matrices=False)
    rank = int(np.sum(sv > sv[0] * RANK_RTOL)) if sv.size and sv[0] > 0 else 0
    act = np.ones(k, dtype=bool) if active is None else active
    ident = identifiable_contacts(Vt[:rank], cset.cols, act)
    Ut = U[:, :rank].T
    return Assembly(sv[:rank, None] * Vt[:rank], Ut @ b, G, ne_A, ne_b, A, b, rank, ident, Ut)


def generalized_torque(robot: Robot, tau: ArrayLike) -> Array:
    """Joint torques (nv - 6,) or (nv,) as generalized forces (nv,) (zeros on the base)."""
    tau = np.asarray(tau, dtype=float)
    n_base = 6 if robot.has_floating_base else 0
    if tau.shape == (robot.nv - n_base,):
        tau = np.concatenate([np.zeros(n_base), tau])
    elif tau.shape != (robot.nv,):
        raise StateError(
            f"tau must have shape ({robot.nv - n_base},) (joints) or ({robot.nv},), got {tau.shape}"
        )
    if not np.all(np.isfinite(tau)):
        raise StateError("tau has non-finite values")
    return tau
