"""Placement causes: what in the logged configuration puts a loaded contact off the ground
or tilts it (:mod:`wholebody.conventions.placement`).

A loaded contact carries its load where it touches the ground: its lowest point and its
centre of pressure on the ground plane. Per kept sample and loaded contact the error is
``e = (height of the lowest point, height of the centre of pressure)`` above the ground [m]
(a point contact: its height). A cause changes the configuration, places the contacts again
(one Pinocchio pass per sample) and is judged on the same error (family
``"contact_placement"``): the score is the median over the samples with a named contact of
the largest ``|e|``; a cause explains ``1 - score(corrected) / score(logged)`` of it.

=========================  ===============================================  ==============
cause                      the logged configuration                         fitted
=========================  ===============================================  ==============
``placement_joint_offset`` one joint on a named contact's chain is offset   the offset [rad]
``placement_base_height``  the base is offset along the ground normal       the offset [m]
``placement_base_tilt``    the base is turned about the two horizontal axes  two angles [rad]
=========================  ===============================================  ==============

Each is fitted by Gauss-Newton (finite differences, a few iterations) on the loaded
samples, with one standard error per value. The corrected configuration moves the contacts
and the CoM, so the Newton-Euler balance is judged too: a correction that takes balanced
samples beyond tolerance loses that share (a hip offset moves the foot as well as turning
it; the ankle only turns it), and where the balance fails, the share of it the correction
removes is added to its evidence (:attr:`~wholebody.diagnosis.core.Finding.shares`). A
configuration explained by none is said unexplained by the ranking.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..balance import kinematics_batch
from ..balance.placement import ROLL_SHARE, TILT_TOLERANCE, Soles, sole_placement
from .core import DiagnosisData, Finding, Hypothesis, format_value, format_vector
from .ranking import Family

__all__ = ["PlacementData", "PLACEMENT_CAUSES", "MAX_PLACEMENT_SAMPLES"]

Array = NDArray[np.float64]

#: The fits use at most this many of the kept samples (evenly spread).
MAX_PLACEMENT_SAMPLES = 300
#: Gauss-Newton iterations and the finite-difference step [rad or m].
ITERATIONS, STEP = 4, 1e-5
#: Blocks of the jackknife of a correction that explains at least half of the misplacement.
BLOCKS = 5
#: A turn is fitted on the soles' tilts, a shift on the heights (:meth:`_Placer.errors`).
TILTS, HEIGHTS = slice(0, 2), slice(2, 3)
#: Another joint of the chain whose offset explains this share of the best one's is said
#: with it (it turns the contact alike in this log).
JOINT_TIE = 0.9


@dataclass
class PlacementData:
    """Where the loaded contacts are at the diagnosis' kept samples (S of them, k contacts).

    Attributes
    ----------
    soles : Soles
        The contacts' soles and ground normals.
    level : ndarray, shape (k,)
        The ground's elevation along each contact's normal [m] (declared or estimated).
    tolerance : float
        The height tolerance [m].
    loaded, violated : ndarray of bool, shape (S, k)
        Loaded contacts; named contacts off the ground or tilted.
    failing : list of str
        The named contacts.
    frames : list of str
        The contact frames.
    """

    soles: Soles
    level: Array
    tolerance: float
    loaded: NDArray[np.bool_]
    violated: NDArray[np.bool_]
    failing: list[str]
    frames: list[str]


class _Placer:
    """Places the contacts of a corrected configuration and scores it (the fits' model)."""

    def __init__(self, d: DiagnosisData):
        p: PlacementData = d.placement
        self.d, self.p = d, p
        S = len(d.time)
        self.fit_rows = np.unique(np.linspace(0, S - 1, min(S, MAX_PLACEMENT_SAMPLES)).astype(int))
        self.q, self.v, self.a = d.states(d.rows)
        self.scored = np.flatnonzero(p.violated.any(axis=1))
        soles = p.soles
        self.halves = np.abs(soles.corners[:, 0, :2])  # (k, 2) the corners' reach [m]

    def errors(self, Q: Array, rows: NDArray[np.intp] | None = None) -> Array:
        """(n, k, 3) at ``rows`` (module docstring): the ground normal's components in each
        sole's x and y axes times the sole's reach there (the rise of its edges [m]; NaN on
        point contacts and rolling soles), and the lowest point's height above the ground
        [m]; NaN where a contact is not loaded."""
        rows = self.fit_rows if rows is None else rows
        kin = self._kinematics(Q, rows)
        return self._errors(kin.positions, kin.rotations, rows)

    def _kinematics(self, Q: Array, rows: NDArray[np.intp]) -> Any:
        skip = np.zeros(len(rows), dtype=bool)
        return kinematics_batch(
            self.d.robot, Q[rows], self.v[rows], self.a[rows], self.p.frames, skip, rotations=True
        )

    def _errors(self, positions: Array, rotations: Array, rows: NDArray[np.intp]) -> Array:
        soles = self.p.soles
        placed = sole_placement(soles, positions, rotations, self.d.wrenches[rows])
        Rn = np.einsum("nkab,ka->nkb", rotations, soles.normals)  # the normal, sole axes
        with np.errstate(invalid="ignore"):
            flat = soles.surface & ~(placed.lift <= ROLL_SHARE * placed.span)  # not rolling
        rise = np.where(flat[..., None], Rn[..., :2] * self.halves, np.nan)
        low = placed.low - self.p.level
        e = np.concatenate([rise, low[..., None]], axis=-1)
        return np.where(self.p.loaded[rows][..., None], e, np.nan)

    def score(self, e: Array, rows: NDArray[np.intp]) -> float:
        """The median over ``rows`` of the worst loaded contact's misplacement against the
        tolerances: its height over the height tolerance, its tilt (not rolling) over
        :data:`~wholebody.balance.placement.TILT_TOLERANCE`."""
        with np.errstate(invalid="ignore"):
            tilt = np.linalg.norm(e[..., :2] / self.halves, axis=-1) / TILT_TOLERANCE
            worst = np.fmax(np.abs(e[..., 2]) / self.p.tolerance, tilt)
        worst = np.nanmax(np.where(np.isfinite(worst), worst, 0.0), axis=1, initial=0.0)
        return float(np.median(worst[rows])) if len(rows) else 0.0


def _gauss_newton(
    placer: _Placer,
    apply: Callable[[Array, Array], Array],
    p: int,
    cols: slice,
    rows: NDArray[np.intp] | None = None,
) -> tuple[Array, Array]:
    """The values of a correction (``apply(q, theta)``) that bring the error components
    ``cols`` (the soles' tilt for a turn, the heights for a shift) to zero at the fit rows
    (or ``rows`` of them), and one standard error each (independent samples:
    :func:`_jackknife` widens it for slow errors)."""
    theta = np.zeros(p)
    q0 = placer.q
    J = np.zeros((0, p))
    rows = placer.fit_rows if rows is None else rows
    for _ in range(ITERATIONS):
        e0 = placer.errors(apply(q0, theta), rows)[..., cols].ravel()
        steps = np.eye(p) * STEP
        moved = [placer.errors(apply(q0, theta + h), rows)[..., cols].ravel() for h in steps]
        J = np.stack([(m - e0) / STEP for m in moved], axis=1)
        ok = np.isfinite(e0) & np.isfinite(J).all(axis=1)  # a sole that starts or stops rolling
        J = J[ok]
        if not len(J):
            break
        delta = np.linalg.lstsq(J, -e0[ok], rcond=None)[0]
        theta = theta + delta
        if np.max(np.abs(delta)) < 1e-9:
            break
    e = placer.errors(apply(q0, theta), rows)[..., cols].ravel()
    e = e[np.isfinite(e)]
    sigma2 = float(e @ e) / max(len(e) - p, 1)
    if not len(J):
        return theta, np.full(p, np.nan)
    se = np.sqrt(np.maximum(np.diag(np.linalg.pinv(J.T @ J) * sigma2), 0.0))
    # At least what is left, read as one sample: the contacts' own tilt and sinking (soft
    # contacts, a rolling sole) is not the log's error, and it is the same on every sample.
    with np.errstate(divide="ignore", invalid="ignore"):
        floor = np.sqrt(sigma2 / np.mean(J**2, axis=0))
    return theta, np.fmax(se, np.where(np.isfinite(floor), floor, 0.0))


def _jackknife(
    placer: _Placer, apply: Callable[[Array, Array], Array], cols: slice, theta: Array, se: Array
) -> Array:
    """The standard errors, at least a delete-a-block jackknife's over :data:`BLOCKS`
    contiguous blocks of the fit rows (a contact that settles or rolls slowly errs alike on
    neighbouring samples)."""
    rows = placer.fit_rows
    if len(rows) < 2 * BLOCKS:
        return se
    parts = np.array_split(np.arange(len(rows)), BLOCKS)
    fits = np.array(
        [_gauss_newton(placer, apply, len(theta), cols, np.delete(rows, part))[0] for part in parts]
    )
    jack = np.sqrt((BLOCKS - 1) / BLOCKS * np.sum((fits - fits.mean(axis=0)) ** 2, axis=0))
    return np.asarray(np.fmax(se, jack))


def _rotated(q: Array, axes: Array, angles: Array) -> Array:
    """Configurations whose base is turned by ``angles`` about the world ``axes`` (2, 3)
    through its origin (quaternions x-y-z-w, the turn applied on the world side)."""
    omega = angles @ axes
    angle = float(np.linalg.norm(omega))
    if angle < 1e-15:
        return q.copy()
    u = omega / angle
    w0, (x0, y0, z0) = np.cos(angle / 2), np.sin(angle / 2) * u
    x, y, z, w = q[:, 3], q[:, 4], q[:, 5], q[:, 6]
    out = q.copy()
    out[:, 3] = w0 * x + x0 * w + y0 * z - z0 * y
    out[:, 4] = w0 * y - x0 * z + y0 * w + z0 * x
    out[:, 5] = w0 * z + x0 * y - y0 * x + z0 * w
    out[:, 6] = w0 * w - x0 * x - y0 * y - z0 * z
    return out


Candidate = tuple[str, str, int, Callable[[Array, Array], Array], slice]


def _candidates(d: DiagnosisData) -> list[Candidate]:
    """(cause, what, values, apply, fitted on): the joints on the named contacts' chains, the
    base's height and orientation."""
    p: PlacementData = d.placement
    robot, model = d.robot, d.robot.model
    up, axes = _ground_axes(d)
    out: list[Candidate] = []
    chain: list[int] = []
    for name in p.failing:
        j = model.frames[robot.frame_id(p.frames[d.names.index(name)])].parentJoint
        while j > 0:
            if j not in chain and model.joints[j].nq == 1:
                chain.append(j)
            j = model.parents[j]
    for j in sorted(chain):
        iq = model.joints[j].idx_q

        def offset(q: Array, t: Array, iq: int = iq) -> Array:
            out_q = q.copy()
            out_q[:, iq] += t[0]
            return out_q

        out.append(("placement_joint_offset", model.names[j], 1, offset, TILTS))

    def height(q: Array, t: Array) -> Array:
        out_q = q.copy()
        out_q[:, :3] += t[0] * up
        return out_q

    out.append(("placement_base_height", "base", 1, height, HEIGHTS))
    out.append(("placement_base_tilt", "base", 2, lambda q, t: _rotated(q, axes, t), TILTS))
    return out


def _ground_axes(d: DiagnosisData) -> tuple[Array, Array]:
    """The named contacts' mean ground normal (3,) and two horizontal world axes (2, 3) that
    make a right-handed frame with it (the base tilt's angles are about them)."""
    p: PlacementData = d.placement
    up = p.soles.normals[[d.names.index(n) for n in p.failing]].mean(axis=0)
    up /= np.linalg.norm(up)
    side = np.cross(up, [1.0, 0.0, 0.0] if abs(up[0]) < 0.9 else [0.0, 1.0, 0.0])
    side /= np.linalg.norm(side)
    return up, np.array([side, np.cross(up, side)])


def _judged(placer: _Placer, q: Array, explained: float) -> tuple[float, dict[str, float], bool]:
    """The placement share less the balanced samples the corrected kinematics spoil; the
    share of the failing balance it removes (``{"wrench": share}``), and whether it puts the
    contacts' heights within tolerance (the convention check it explains)."""
    d = placer.d
    rows = np.arange(len(d.time))
    kin = placer._kinematics(q, rows)
    r = d.residual(
        positions=kin.positions,
        momentum_rate=kin.momentum_rate,
        com_shift=kin.com - d.com,
    )
    ne, _ = d.judge(Hypothesis(r, d.wrenches))
    lim_f, lim_m = d.tolerance[0] + d.bound[:, 0], d.tolerance[1] + d.bound[:, 1]
    beyond = (np.linalg.norm(r[:, :3], axis=1) > lim_f) | (np.linalg.norm(r[:, 3:], axis=1) > lim_m)
    spoiled = beyond & ~d.over
    shares = {"wrench": ne} if d.over.any() and d.base_score > 0 else {}
    e = placer._errors(kin.positions, kin.rotations, rows)
    low = e[..., 2]
    on_ground = bool(np.nanmax(np.abs(low), initial=0.0) <= placer.p.tolerance)
    return explained * (1.0 - float(spoiled.mean())), shares, on_ground


def placement_causes(d: DiagnosisData) -> list[Finding]:
    """Every placement cause (module table) fitted, each as one finding."""
    p: PlacementData | None = d.placement
    if p is None or not p.failing or d.robot is None or d.states is None:
        return []
    placer = _Placer(d)
    scored = np.flatnonzero(np.isin(placer.fit_rows, placer.scored))
    base = placer.score(placer.errors(placer.q), scored)
    if base <= 0 or not len(scored):
        return []
    n = max(len(placer.scored) / max(int(d.smoothing), 1), 1.0)
    floor = float(min(1.0, max(0.1 / base, 1e-6)))
    d.cache.setdefault("families", {})["contact_placement"] = Family("contact_placement", n, floor)
    out = []
    for cause, what, n_values, apply, cols in _candidates(d):
        theta, se = _gauss_newton(placer, apply, n_values, cols)
        q = apply(placer.q, theta)
        explained = max(0.0, 1.0 - placer.score(placer.errors(q), scored) / base)
        explained, shares, on_ground = _judged(placer, q, explained)
        if explained >= 0.5:
            se = _jackknife(placer, apply, cols, theta, se)
        axes = _ground_axes(d)[1] if cause == "placement_base_tilt" else None
        out.append(
            Finding(
                cause,
                explained,
                _message(cause, what, theta, se, axes),
                {"joint" if cause.endswith("offset") else "part": what, "values": (-theta).tolist()}
                | ({} if axes is None else {"axes": axes.tolist()})
                | ({"explains_conventions": ["loaded_contacts_on_ground"]} if on_ground else {}),
                {"values": se.tolist()},
                n_parameters=n_values,
                held_out=explained,
                family="contact_placement",
                shares=shares,
            )
        )
    return [f for f in out if f.cause != "placement_joint_offset"] + _best_joint(out)


def _best_joint(findings: list[Finding]) -> list[Finding]:
    """The joint offset that explains most, with the joints of the chain that explain as
    much said beside it (they turn the contact alike in this log)."""
    joints = sorted(
        (f for f in findings if f.cause == "placement_joint_offset"), key=lambda f: -f.explained
    )
    if not joints:
        return []
    best = joints[0]
    alike = [f for f in joints[1:] if f.explained >= JOINT_TIE * best.explained > 0]
    if not alike:
        return [best]
    said = "; ".join(f.message for f in alike[:2])
    return [
        dataclasses.replace(
            best,
            message=f"{best.message}; or, alike in this log: {said}",
            parameters={**best.parameters, "alike": [f.parameters["joint"] for f in alike]},
        )
    ]


def _message(cause: str, what: str, theta: Array, se: Array, axes: Array | None = None) -> str:
    """The cause in words: the log's error, the opposite of the correction ``theta`` (a base
    tilt's two angles about the world ``axes`` (2, 3))."""
    if cause == "placement_joint_offset":
        return (
            f"joint {what!r} is offset in the log by "
            f"{format_value(-np.degrees(theta[0]), np.degrees(se[0]), 'deg', digits=2)} "
            "(its logged angle puts the loaded contact off the ground or tilted)"
        )
    if cause == "placement_base_height":
        return (
            f"the logged base is {format_value(-theta[0], se[0], 'mm', 1e3)} off along the "
            "ground normal (the loaded contacts float or sink with it)"
        )
    a, b = (format_value(-np.degrees(t), np.degrees(e), "deg", digits=2) for t, e in zip(theta, se))
    about = " and ".join(format_vector(x, "") for x in ([] if axes is None else axes))
    return (
        f"the logged base orientation is turned by {a} and {b} about the horizontal world axes "
        f"{about} (the loaded soles tilt with it)"
    )


#: The placement causes, tested when a loaded contact is off the ground or tilted.
PLACEMENT_CAUSES = (placement_causes,)
