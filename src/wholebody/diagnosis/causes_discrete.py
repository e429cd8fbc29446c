"""Discrete causes: a sign, an axis convention or sensor frame, a swap, gravity's sign, normal
forces only, the moments' reference point. Each correction is judged by the residual."""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import NDArray

from ..spatial import cross
from .core import DiagnosisData, Finding, finding_of, format_vector, skew_batch

Array = NDArray[np.float64]

#: Fitted points and CoM shifts farther than this [m] are not a wrong reference point or
#: CoM (a foot, an ankle, a torso are within it): something else is going on.
MAX_OFFSET = 0.3


# --- discrete causes ----------------------------------------------------------------------


def sign_flips(d: DiagnosisData) -> list[Finding]:
    where = d.window()
    out = [
        finding_of(
            d,
            "sign_flip",
            d.hypothesis(d.where_over(-d.wrenches)),
            "contact wrenches have the wrong sign (the force on the ground logged instead of "
            f"the force on the robot){where}",
            contacts=list(d.names),
        )
    ]
    if d.k > 1:
        for j, name in enumerate(d.names):
            W = d.wrenches.copy()
            W[:, j] *= -1
            out.append(
                finding_of(
                    d,
                    "sign_flip",
                    d.hypothesis(d.where_over(W)),
                    f"contact {name!r} has the wrong sign{where}",
                    contacts=[name],
                )
            )
    return out


_AXES = "xyz"


def _signed_permutations() -> list[Array]:
    mats = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1.0, -1.0), repeat=3):
            S = np.zeros((3, 3))
            S[np.arange(3), perm] = signs
            mats.append(S)
    return mats


_SIGNED_PERMUTATIONS = _signed_permutations()


def _describe_axes(S: Array, local: bool) -> str:
    """Words for ``true = S logged`` (in contact or world axes)."""
    rows = []
    for i in range(3):
        j = int(np.flatnonzero(S[i])[0])
        rows.append(("-" if S[i, j] < 0 else "") + _AXES[j])
    mapping = f"(x, y, z) = logged ({', '.join(rows)})"
    if local and np.array_equal(S, np.eye(3)):
        return "contact wrenches are in each contact's own axes, not world axes"
    if local and abs(S[2, 0]) == 1:
        return (
            "contact wrenches are in a simulator contact frame with the normal first (as "
            f"MuJoCo's mj_contactForce): in each contact's axes {mapping}"
        )
    n_flipped = int(np.sum(np.diag(S) < 0))
    where = "each contact's axes" if local else "world axes"
    if np.array_equal(np.abs(S), np.eye(3)) and n_flipped == 1:
        axis = _AXES[int(np.flatnonzero(np.diag(S) < 0)[0])]
        return f"the {axis} axis of the wrench readings is flipped (in {where})"
    return f"contact wrenches have their axes permuted (in {where}): {mapping}"


def axis_conventions(d: DiagnosisData) -> list[Finding]:
    """Signed permutations of the axes, in world or contact axes, for all contacts."""
    out = []
    for local in (False, True):
        # In contact axes the log holds S^T R^T w: apply S to the values, then rotate by R.
        for S in _SIGNED_PERMUTATIONS:
            if np.array_equal(S, -np.eye(3)) or (not local and np.array_equal(S, np.eye(3))):
                continue  # as logged; the sign flip is its own cause
            if local:
                W6 = np.concatenate([d.wrenches[..., :3] @ S.T, d.wrenches[..., 3:] @ S.T], axis=2)
                W = d.world(W6)
            else:
                W = np.concatenate([d.wrenches[..., :3] @ S.T, d.wrenches[..., 3:] @ S.T], axis=2)
            out.append(
                finding_of(
                    d,
                    "axes",
                    d.hypothesis(d.where_over(W)),
                    _describe_axes(S, local) + d.window(),
                    frame="contact" if local else "world",
                    matrix=S.tolist(),
                )
            )
    # Keep the best few: 94 near-identical findings would drown the report.
    out.sort(key=lambda f: -f.explained)
    return out[:3]


def swapped_contacts(d: DiagnosisData) -> list[Finding]:
    out = []
    for a in range(d.k):
        for b in range(a + 1, d.k):
            W = d.wrenches.copy()
            W[:, [a, b]] = W[:, [b, a]]
            out.append(
                finding_of(
                    d,
                    "swapped_contacts",
                    d.hypothesis(d.where_over(W)),
                    f"the wrenches of {d.names[a]!r} and {d.names[b]!r} are swapped{d.window()}",
                    contacts=[d.names[a], d.names[b]],
                )
            )
    return out


def gravity_sign(d: DiagnosisData) -> list[Finding]:
    return [
        finding_of(
            d,
            "gravity_sign",
            d.hypothesis(gravity_sign=-1.0),
            "gravity has the wrong sign (the model's gravity points up)",
        )
    ]


def normal_force_only(d: DiagnosisData) -> list[Finding]:
    """Contacts that carry only a normal force (tangential parts missing, as some simulators'
    net contact forces): named when the logged tangential parts are exactly zero."""
    local = d.local(d.wrenches)
    fn = local[..., 2]
    ft = np.linalg.norm(local[..., :2], axis=-1)
    loaded = fn > 0.02 * d.weight
    if not loaded.any() or ft[loaded].max() > 1e-9 * max(float(fn[loaded].max()), 1.0):
        return []
    r = d.base_residual
    horizontal = np.linalg.norm(r[d.score_rows, :2], axis=1)
    share = float(
        np.median(horizontal / np.maximum(np.linalg.norm(r[d.score_rows, :3], axis=1), 1e-300))
    )
    return [
        Finding(
            "normal_force_only",
            share,
            "contacts carry a normal force only: the tangential (friction) forces are missing "
            "from the log (a simulator's net normal force?)",
            {"share_horizontal": share},
        )
    ]


def wrong_points(d: DiagnosisData) -> list[Finding]:
    """Moments about the world origin or the parent joints, or a fitted point per contact."""
    out = []
    W = d.wrenches.copy()
    W[..., 3:] -= cross(d.positions, d.wrenches[..., :3])
    out.append(
        finding_of(
            d,
            "wrong_point",
            d.hypothesis(W),
            "contact moments are about the world origin, not about the contact points",
            point="world origin",
        )
    )
    W = d.wrenches.copy()
    W[..., 3:] += cross(d.joint_centres - d.positions, d.wrenches[..., :3])
    out.append(
        finding_of(
            d,
            "wrong_point",
            d.hypothesis(W),
            "contact moments are about the contacts' parent joints (e.g. the ankles), not "
            "about the contact points",
            point="parent joint",
        )
    )
    # Logged moments about p + R o (o in the contact frame): the true moment about p is
    # tau + (R o) x f = tau - skew(f) R o, linear in o.
    f = d.wrenches[..., :3]
    D = np.zeros((len(d.time), 6, 3 * d.k))
    for j in range(d.k):
        D[:, 3:, 3 * j : 3 * j + 3] = -skew_batch(f[:, j]) @ d.rotations[:, j]
    fit = d.fit(d.base_residual, D, d.all_rows)
    offsets = fit.theta.reshape(d.k, 3)
    if np.abs(offsets).max(initial=0.0) > MAX_OFFSET:
        return out + [
            Finding(
                "wrong_point",
                0.0,
                f"fitted moment points are over {MAX_OFFSET} m from the "
                "contacts: not a wrong reference point",
                {"point": "fitted"},
            )
        ]
    W = d.wrenches.copy()
    W[..., 3:] += cross(np.einsum("skij,kj->ski", d.rotations, offsets), f)
    parts = [f"{n!r} at {format_vector(o, 'mm', 1e3)}" for n, o in zip(d.names, offsets)]
    out.append(
        finding_of(
            d,
            "wrong_point",
            d.hypothesis(W),
            "contact moments are about other points than the contact frames' origins "
            f"(in each contact's axes): {'; '.join(parts)}",
            n_parameters=3 * d.k,
            uncertainty={"offsets": fit.std_error.reshape(d.k, 3).tolist()},
            point="fitted",
            offsets=offsets.tolist(),
            observable=fit.observable.reshape(d.k, 3).tolist(),
        )
    )
    return out
