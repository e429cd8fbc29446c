"""Causes from what simulators and recorders really get wrong: contact forces without their
tangential part (a net normal force), streams that hold one value while the motion changes
(a topic that ended, a resampler holding its last value), and links a model leaves without
``<inertial>`` that a simulator gives a mass of its own.

Each is a hypothesis judged by the same residual as the check (:class:`.core.DiagnosisData`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..spatial import cross
from .core import DiagnosisData, Finding, finding_of, format_names, format_value, linear_fit

__all__ = [
    "tangential_force_missing",
    "held_streams",
    "held_stream_notes",
    "inertialess_link_mass",
    "LinkMotion",
    "MIN_HELD_SAMPLES",
    "ZERO_TANGENTIAL",
]

Array = NDArray[np.float64]

#: A tangential force is "exactly zero" below this share of the normal force (round-off of a
#: rotation into the normal's axes).
ZERO_TANGENTIAL = 1e-7
#: A share of the weight above which a contact counts as loaded.
LOADED = 0.02
#: A fitted mass at the links without <inertial> over this share of the robot's is no engine's
#: default (units, gains, pushes: other causes).
MAX_EXTRA_MASS = 0.3
#: A reading repeated (bit for bit) this many samples in a row is a held value when the
#: balance needs it to change.
MIN_HELD_SAMPLES = 5


# --- tangential forces missing ------------------------------------------------------------


def _normals(d: DiagnosisData) -> dict[str, Array]:
    """Candidate normal directions (S, k, 3): the ground's (each contact's declared
    ``ground_normal``, else world up) and each contact frame's z axis."""
    up = -d.gravity / max(float(np.linalg.norm(d.gravity)), 1e-300)
    ground = np.broadcast_to(up, d.positions.shape).copy()
    for j, c in enumerate(d.contacts or ()):
        n = getattr(c, "ground_normal", None)
        if n is not None:
            ground[:, j] = np.asarray(n, float) / np.linalg.norm(n)
    return {"ground": ground, "contact": d.rotations[..., :, 2]}


def _normal_only(d: DiagnosisData, n: Array) -> NDArray[np.bool_] | None:
    """Per contact, whether every loaded sample's force lies along ``n`` (None: no load)."""
    f = d.wrenches[..., :3]
    fn = np.einsum("ski,ski->sk", f, n)
    ft = np.linalg.norm(f - fn[..., None] * n, axis=-1)
    loaded = fn > LOADED * d.weight
    if not loaded.any():
        return None
    zero = np.where(loaded, ft <= ZERO_TANGENTIAL * np.abs(fn), True)
    has_load = loaded.any(axis=0)
    return zero.all(axis=0) & has_load


def tangential_force_missing(d: DiagnosisData) -> list[Finding]:
    """Contacts that log only the force along the ground's (or their own) normal: friction
    forces and the moment about the normal are missing (a net normal force, as PhysX-style
    contact reports give).

    Tested in the ground normal's axes (a tilted sole's own axes would see a normal force as
    partly tangential) and in each contact's axes. The correction adds, per sample, the
    residual's force across the normal and its moment about the normal (3 values), shared by
    the normal-only loaded contacts in proportion to their normal forces.
    """
    if not d.k:
        return []
    found = [
        (axes, n, only)
        for axes, n in _normals(d).items()
        if (only := _normal_only(d, n)) is not None and only.any()
    ]
    if not found:
        return []
    axes, n, only = found[0]
    # Per sample, the friction the balance lacks: the residual's force across the normal and
    # its moment about the normal, shared by the normal-only loaded contacts in proportion to
    # their normal forces (3 values per sample; a free split per contact would absorb any
    # moment error of the log into opposed friction forces).
    fn = np.einsum("ski,ski->sk", d.wrenches[..., :3], n)
    share = np.where(only[None, :] & (fn > LOADED * d.weight), fn, 0.0)
    total = share.sum(axis=1, keepdims=True)
    share = np.divide(share, total, out=np.zeros_like(share), where=total > 0)
    W = d.wrenches.copy()
    r = d.base_residual
    for j in np.flatnonzero(only):
        nj = n[:, j]
        f_across = r[:, :3] - np.einsum("si,si->s", r[:, :3], nj)[:, None] * nj
        W[:, j, :3] -= share[:, j, None] * np.nan_to_num(f_across)
    r2 = d.residual(W)
    for j in np.flatnonzero(only):
        nj = n[:, j]
        W[:, j, 3:] -= share[:, j, None] * np.nan_to_num(
            np.einsum("si,si->s", r2[:, 3:], nj)[:, None] * nj
        )
    loaded = share > 0
    names = [d.names[j] for j in np.flatnonzero(only)]
    words = "the ground normal's axes" if axes == "ground" else "each contact's own axes (its z)"
    finding = finding_of(
        d,
        "normal_force_only",
        d.hypothesis(W),
        f"contacts {format_names(names)} log only a normal force (tangential part exactly "
        f"zero in {words} on every loaded sample): the friction forces are missing from the log (a "
        "simulator's net normal force, as PhysX-style contact reports)",
        # 3 values per loaded sample scored, counted per independent sample like the
        # criterion's n (averaged windows on noisy logs carry one sample's freedom each).
        n_parameters=int(
            np.ceil(3 * loaded[d.score_rows].any(axis=1).sum() / max(int(d.smoothing), 1))
        ),
        contacts=names,
        axes=axes,
    )
    # The residual's horizontal share: a lower bound of what missing friction explains when
    # the logged moments are missing too (then no fit of friction alone closes them).
    # (A cause of the diagnosis, imported by it: the notes beside a consistent verdict, which
    # this module serves too, do not need it.)
    from .causes_discrete import normal_force_only

    legacy = normal_force_only(d) if axes == "contact" else []
    horizontal = float(max((f.explained for f in legacy), default=0.0))
    moments_missing = horizontal > finding.explained
    if moments_missing:
        finding = dataclasses.replace(finding, explained=horizontal)
    # Tangential parts within ZERO_TANGENTIAL of zero on every loaded sample are themselves
    # evidence: with friction of an ordinary tenth of the normal force, each loaded contact
    # and sample would land there with a probability of about (ZERO_TANGENTIAL / 0.1)^2.
    # Counted only for a correction that explains the residual (zero friction is no evidence
    # for this cause against another fault that the correction leaves in place), or where the
    # log lacks the moments too: then it holds too little to name any other fault.
    n_zero = int(np.sum(fn[:, only] > LOADED * d.weight))
    if finding.explained >= 0.8 or moments_missing:  # 0.8: the ranking's threshold
        finding = dataclasses.replace(
            finding, structural_evidence=2.0 * n_zero * float(np.log(0.1 / ZERO_TANGENTIAL))
        )
    return [finding]


# --- held streams -------------------------------------------------------------------------


def _runs(mask: NDArray[np.bool_]) -> list[tuple[int, int]]:
    """[start, stop) of each run of True."""
    edges = np.diff(np.r_[0, mask.astype(np.int8), 0])
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), strict=True))


def held_streams(d: DiagnosisData, *, floor: float | None = None) -> list[Finding]:
    """A contact whose readings repeat one value, bit for bit, for at least
    :data:`MIN_HELD_SAMPLES` samples while the balance needs them to change (the residual
    varies by more than ``floor``, default the force tolerance, over the run): a held or stale
    stream. Its samples are flagged (not evidence), with the reason, never read as a missing
    force (``parameters["flagged"]``: log row -> reason)."""
    N = len(d.log_wrenches)
    rows = d.rows
    prev_ok = rows >= 1
    if len(rows) < MIN_HELD_SAMPLES or not prev_ok.any():
        return []
    try:
        before = d.log_wrenches[np.where(prev_ok, rows - 1, rows)]
        now = d.log_wrenches[rows]
    except IndexError:
        return []
    del N
    out = []
    tol = floor if floor is not None else d.tolerance[0]
    tol = tol if np.isfinite(tol) else 0.0
    flagged_all = np.zeros(len(rows), dtype=bool)
    windows = []
    reasons: dict[int, str] = {}
    for j, name in enumerate(d.names):
        same = (now[:, j] == before[:, j]).all(axis=1) & prev_ok
        same &= np.abs(now[:, j]).max(axis=1) > 0  # zeros: a foot in the air, not a hold
        # Kept rows are consecutive log rows only where rows step by one.
        contiguous = np.r_[False, np.diff(rows) == 1]
        held = same & contiguous
        # The first sample of a hold is the last fresh one: the run starts after it.
        for a, b in _runs(held):
            if b - a < MIN_HELD_SAMPLES:
                continue
            seg = np.arange(a, b)
            change = np.ptp(d.base_residual[seg, :3], axis=0)
            if not np.linalg.norm(change) > tol:  # the balance needs no change
                continue
            flagged_all[seg] = True
            t0, t1 = float(d.time[a]), float(d.time[b - 1])
            windows.append({"contact": name, "start": t0, "end": t1, "samples": int(b - a)})
            why = f"contact {name!r} holds the reading of {float(d.time[a - 1]):.4f} s (stale)"
            reasons.update({int(rows[i]): why for i in seg})
    if not windows:
        return []
    r = d.base_residual.copy()
    r[flagged_all] = 0.0  # flagged samples are no evidence
    text = "; ".join(
        f"{w['contact']!r} {w['start']:.3f} .. {w['end']:.3f} s ({w['samples']} samples)"
        for w in windows[:4]
    )
    more = f" (+{len(windows) - 4} more)" if len(windows) > 4 else ""
    out.append(
        finding_of(
            d,
            "held_stream",
            r,
            f"readings repeat one value while the motion changes: {text}{more}: a held or "
            "stale stream (a topic that ended before the others, a resampler holding its last "
            "value); these samples are flagged, not evidence",
            windows=windows,
            flagged=reasons,
        )
    )
    return out


# --- links without <inertial> -------------------------------------------------------------


@dataclass(frozen=True)
class LinkMotion:
    """Motion of the links a model leaves without ``<inertial>`` at the diagnosis' samples.

    Attributes
    ----------
    names : list of str
        Link names (m).
    positions : ndarray, shape (S, m, 3)
        Link frame origins, world [m] (where a simulator puts the mass it gives them).
    accelerations : ndarray, shape (S, m, 3)
        Classical accelerations of those origins, world [m/s^2].
    """

    names: list[str]
    positions: Array
    accelerations: Array


def inertialess_link_mass(d: DiagnosisData) -> list[Finding]:
    """The simulated robot had a mass at each link the model leaves without ``<inertial>``
    (PyBullet gives such a link 1 kg; Genesis a tiny mass): one mass per link fitted, the
    same for all of them (what an engine's default is), as point masses at the link origins.

    The gravito-inertial wrench of a point mass ``m`` at ``p`` with acceleration ``a`` is
    ``m (g - a)`` at ``p``; the balance without it leaves ``-m (g - a)`` (and its moment about
    the CoM) in the residual.
    """
    links: LinkMotion | None = d.links
    if links is None or not links.names:
        return []
    g = d.gravity
    f = g[None, None, :] - links.accelerations  # per unit mass, (S, m, 3)
    tau = cross(links.positions - d.com[:, None], f)
    col = np.concatenate([f.sum(axis=1), tau.sum(axis=1)], axis=1)[:, :, None]
    fit = linear_fit(d.base_residual, col, d.training(d.all_rows))
    m, se = float(fit.theta[0]), float(fit.std_error[0])
    total = m * len(links.names)
    if not (m > 0 and total <= MAX_EXTRA_MASS * d.mass):
        return [
            Finding(
                "inertialess_links",
                0.0,
                f"a fitted mass of {m:.3g} kg at each link without <inertial> is not a mass an "
                f"engine gives them (negative, or over {100 * MAX_EXTRA_MASS:.0f} % of the robot)",
                {"link_mass": m, "links": list(links.names)},
            )
        ]
    corrected = d.base_residual + m * col[:, :, 0]
    engine = ""
    if abs(m - 1.0) < max(3 * se, 0.05):
        engine = " (1 kg each: PyBullet's default for a link without <inertial>)"
    return [
        finding_of(
            d,
            "inertialess_links",
            corrected,
            f"the simulated robot had {format_value(m, se, 'kg', 1.0, 3)} at each of the "
            f"{len(links.names)} links without <inertial> ({', '.join(links.names[:6])}"
            f"{', ...' if len(links.names) > 6 else ''}), {total:.2f} kg in all{engine}; "
            "the model gives them none",
            # A mass that is an engine's known default is not a free value: the cause then
            # fits no parameter (it names a fact); any other mass is one free value.
            n_parameters=0 if engine else 1,
            uncertainty={"link_mass": se, "total_mass": se * len(links.names)},
            link_mass=m,
            total_mass=total,
            links=list(links.names),
        )
    ]


def held_stream_notes(d: DiagnosisData) -> list[Finding]:
    """On a log within tolerance: held readings whose residual grows beyond 10 times the
    log's own residual floor (the median over all samples) and 1e-6 of the weight."""
    f = np.linalg.norm(d.base_residual[:, :3], axis=1)
    if not np.isfinite(f).any():
        return []
    floor = max(10.0 * float(np.nanmedian(f)), 1e-6 * d.weight)
    found = held_streams(d, floor=floor)
    return [dataclasses.replace(x, parameters={**x.parameters, "note": True}) for x in found]
