"""An unmodelled payload: a point mass ``m`` held at a point ``p`` of a link (a tool, a box
in a hand, a battery the model lacks). The contacts carry its gravito-inertial wrench, the
model does not: the residual is ``m (a_x - g)`` at ``x = o + R p`` (``o``, ``R`` the link's
origin and orientation, ``a_x`` the point's classical acceleration). Fitted per link (mass
and point, 4 values, with their standard errors); the best link is named. Needs the robot
and the states (:attr:`DiagnosisData.robot`, :attr:`DiagnosisData.states`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from numpy.typing import NDArray

from ..robot.batch import joint_motions_rows
from ..spatial import cross
from .core import DiagnosisData, Finding, finding_of, format_names, format_value

__all__ = ["payload", "MAX_PAYLOAD_SHARE", "MAX_PAYLOAD_REACH"]

Array = NDArray[np.float64]

#: A fitted payload heavier than this share of the robot is no payload (units, gains).
MAX_PAYLOAD_SHARE = 0.3
#: A fitted point farther than this from its link's origin [m] is not on the link.
MAX_PAYLOAD_REACH = 0.5
#: Links compared in full (Gauss-Newton) after the linear start ranks them.
_FINALISTS = 2
_GN_STEPS = 6


@dataclass(frozen=True)
class _Links:
    """Motion of every link (joint frame) at some kept samples: origins (n, L, 3), rotations
    (n, L, 3, 3), classical accelerations of the origins (n, L, 3), angular velocities and
    accelerations (n, L, 3), world axes."""

    at: NDArray[np.intp]
    origin: Array
    rotation: Array
    acceleration: Array
    omega: Array
    alpha: Array


def _links(d: DiagnosisData, at: NDArray[np.intp], joints: list[int]) -> _Links:
    q, v, a = d.states(d.rows[at])
    return _Links(at, *joint_motions_rows(d.robot, q, v, a, joints))


def _wrench(d: DiagnosisData, links: _Links, c: int, m: float, p: Array) -> Array:
    """The payload's gravito-inertial wrench (n, 6) about the CoM: ``m (a_x - g)`` at ``x``."""
    r = np.einsum("nij,j->ni", links.rotation[:, c], p)
    w, al = links.omega[:, c], links.alpha[:, c]
    acc = links.acceleration[:, c] + np.cross(al, r) + np.cross(w, np.cross(w, r))
    f = m * (acc - d.gravity)
    x = links.origin[:, c] + r
    return np.concatenate([f, cross(x - d.com[links.at], f)], axis=1)


def _fit_link(
    d: DiagnosisData, links: _Links, c: int, steps: int = _GN_STEPS
) -> tuple[float, Array, Array]:
    """Mass, point (link frame) and their standard errors (4,) fitted on the link ``c``
    (its motion at every kept sample): a linear start in ``(m, m p)`` (the moment's small
    term in ``m p p`` left out), then ``steps`` Gauss-Newton steps on ``(m, p)``. Refitted
    on training windows, it starts from the fit on the whole log."""
    rows = d.all_rows
    key = ("payload_columns", id(links), c)
    if key not in d.cache:  # the same columns for every refit
        base = _wrench(d, links, c, 1.0, np.zeros(3))
        d.cache[key] = np.stack(
            [-base] + [-(_wrench(d, links, c, 1.0, e) - base) for e in np.eye(3)], axis=2
        )
    start = ("payload_fit", id(links), c)
    fixed = d.cache.get(("payload_fixed", id(links), c), np.zeros(3, dtype=bool))
    if d.train is not None and start in d.cache and steps:
        m, p = d.cache[start]
        se = np.full(4, np.nan)
    else:
        fit = d.fit(d.base_residual, d.cache[key], rows)
        m, p = float(fit.theta[0]), np.zeros(3)
        if m > 0:
            p = fit.theta[1:] / m
        se = fit.std_error
    m, p, se = _gauss_newton(d, links, c, m, p, se, steps, fixed)
    if d.train is None and steps:
        # A coordinate the log does not determine (its standard error beyond the reach: a
        # height along gravity when the link hardly accelerates sideways) is held at the
        # link's origin, here and in every refit.
        fixed = np.asarray(se[1:]) > MAX_PAYLOAD_REACH
        if fixed.any():
            m, p, se = _gauss_newton(d, links, c, m, np.where(fixed, 0.0, p), se, steps, fixed)
            d.cache[("payload_fixed", id(links), c)] = fixed
        d.cache[start] = (m, p)
    return m, p, se


def _gauss_newton(
    d: DiagnosisData,
    links: _Links,
    c: int,
    m: float,
    p: Array,
    se: Array,
    steps: int,
    fixed: NDArray[np.bool_],
) -> tuple[float, Array, Array]:
    """``steps`` Gauss-Newton steps on the payload's mass and point from ``(m, p)``, the
    ``fixed`` coordinates of the point held."""
    rows = d.all_rows
    for _ in range(steps):
        if not (m > 0 and np.all(np.isfinite(p))):
            break
        theta = np.r_[m, p]
        model = _wrench(d, links, c, m, p)
        J = np.zeros((len(d.time), 6, 4))
        for i in range(4):
            if i and fixed[i - 1]:
                continue
            h = 1e-6 * max(abs(theta[i]), 1e-2)
            t2 = theta.copy()
            t2[i] += h
            J[:, :, i] = -(_wrench(d, links, c, t2[0], t2[1:]) - model) / h
        step = d.fit(d.base_residual - model, J, rows)
        m, p = m + float(step.theta[0]), p + np.where(fixed, 0.0, step.theta[1:])
        se = step.std_error
        if np.abs(step.theta).max() < 1e-12:
            break
    return m, p, se


def _link_names(d: DiagnosisData) -> dict[int, str]:
    """Joint index -> the name of its link (the body frame placed at the joint)."""
    model = d.robot.model
    names: dict[int, str] = {}
    for f in model.frames:
        if f.type == pin.FrameType.BODY and f.parentJoint not in names:
            if np.allclose(f.placement.homogeneous, np.eye(4)):
                names[f.parentJoint] = f.name
    return {j: names.get(j, model.names[j]) for j in range(1, model.njoints)}


def payload(d: DiagnosisData) -> list[Finding]:
    """An unmodelled point mass on one link: every link's linear fit ranks the links, the
    best few are fitted in full; the best is named, with its mass and point and their
    standard errors (and the links rigidly attached to it in this log that fit as well)."""
    if d.robot is None or d.states is None or len(d.time) < 8:
        return []
    names = _link_names(d)
    joints = sorted(names)
    if "payload_links" not in d.cache:  # every link's motion, once per diagnosis
        d.cache["payload_links"] = _links(d, d.all_rows, joints)
    links: _Links = d.cache["payload_links"]

    def plausible(m: float, p: Array) -> bool:
        return bool(0 < m <= MAX_PAYLOAD_SHARE * d.mass and np.linalg.norm(p) <= MAX_PAYLOAD_REACH)

    def score(c: int, steps: int) -> tuple[float, float, Array, Array]:
        m, p, se = _fit_link(d, links, c, steps)
        if not plausible(m, p):
            return np.inf, m, p, se
        return d.score(d.base_residual - _wrench(d, links, c, m, p)), m, p, se

    if d.train is not None and "payload_link" in d.cache:  # refit on the link found
        start = [(0.0, d.cache["payload_link"])]
    else:
        start = sorted((score(c, 0)[0], c) for c in range(len(joints)))
    tried = sorted((score(c, _GN_STEPS), c) for s0, c in start[:_FINALISTS] if np.isfinite(s0))
    if not tried:
        return []
    (best, m, p, se), c = tried[0]
    if not np.isfinite(best):
        return []
    if d.train is None:
        d.cache["payload_link"] = c
    r = d.base_residual - _wrench(d, links, c, m, p)
    point = ", ".join(format_value(x, e, "", 1.0, 3).strip() for x, e in zip(p, se[1:]))
    same = [names[joints[cc]] for (s, *_), cc in tried[1:] if s <= 1.01 * best + 1e-12]
    alias = f" (or on {format_names(same)}: rigidly attached to it in this log)" if same else ""
    link = names[joints[c]]
    return [
        finding_of(
            d,
            "payload",
            r,
            f"an unmodelled payload of {format_value(m, se[0], 'kg', 1.0, 3)} on link "
            f"{link!r} at ({point}) m in its frame{alias}: the contacts carry its weight "
            "and inertia, the model does not",
            n_parameters=4,
            uncertainty={"mass": float(se[0]), "position": se[1:].tolist()},
            link=link,
            mass=m,
            position=p.tolist(),
        )
    ]
