"""Fitted causes: a mass scale, a CoM shift, sensor offsets and gains, stale forces,
missing contacts, missing forces event by event; each value with its standard error."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..spatial import cross
from .causes_discrete import MAX_OFFSET
from .core import DiagnosisData, Finding, finding_of, format_value, format_vector, skew_batch

Array = NDArray[np.float64]

#: Mass-scale fits beyond +-30 % are not a model error (units, gains: other causes).
MAX_MASS_ERROR = 0.3


# --- fitted causes ------------------------------------------------------------------------


def mass_error(d: DiagnosisData) -> list[Finding]:
    """The true gravito-inertial wrench is ``s`` times the model's (mass and inertia)."""
    gi = d.residual(np.zeros_like(d.wrenches)) - d.external  # the gravito-inertial wrench
    fit = d.fit(d.base_residual, gi[:, :, None], d.all_rows)
    beta, se = float(fit.theta[0]), float(fit.std_error[0])
    if abs(beta) > MAX_MASS_ERROR:
        return [
            Finding(
                "mass_error",
                0.0,
                f"a fitted mass scale of {1 + beta:.3g} is beyond +-"
                f"{100 * MAX_MASS_ERROR:.0f} %: not a mass error",
                {"mass_scale": 1 + beta},
            )
        ]
    return [
        finding_of(
            d,
            "mass_error",
            d.hypothesis(mass_scale=1 + beta),
            f"the robot's mass (and inertia) is off by {format_value(beta, se, '%', 100)} "
            f"({d.mass * (1 + beta):.2f} kg would balance the forces)",
            n_parameters=1,
            uncertainty={"mass_scale": se},
            mass_scale=1 + beta,
        )
    ]


def com_offset(d: DiagnosisData) -> list[Finding]:
    """The CoM is elsewhere: moments about it change by ``-dc x f_c``; only the components
    the contact forces can see are fitted (a vertical shift is invisible under vertical
    forces)."""
    f_c = d.wrenches[..., :3].sum(axis=1) + d.external[:, :3]
    D = np.zeros((len(d.time), 6, 3))
    D[:, 3:, :] = skew_batch(f_c)  # -dc x f = f x dc
    fit = d.fit(d.base_residual, D, d.all_rows, rtol=0.05)
    dc = np.where(fit.observable, fit.theta, 0.0)
    if np.abs(dc).max(initial=0.0) > MAX_OFFSET:
        return [
            Finding(
                "com_offset",
                0.0,
                f"a fitted CoM shift of {format_vector(dc, 'mm', 1e3)} is "
                f"over {1e3 * MAX_OFFSET:.0f} mm: not a CoM error",
                {"com_offset": dc.tolist()},
            )
        ]
    parts = [
        format_value(v, e, "mm", 1e3) if ok else "unobservable"
        for v, e, ok in zip(dc, fit.std_error, fit.observable)
    ]
    return [
        finding_of(
            d,
            "com_offset",
            d.hypothesis(com_shift=dc),
            f"the CoM is off by x {parts[0]}, y {parts[1]}, z {parts[2]} (world axes)",
            n_parameters=int(fit.observable.sum()),
            uncertainty={"com_offset": fit.std_error.tolist()},
            com_offset=dc.tolist(),
            observable=fit.observable.tolist(),
        )
    ]


def sensor_offsets(d: DiagnosisData) -> list[Finding]:
    """A constant wrench added to each contact's readings (world axes at its origin)."""
    S = len(d.time)
    D = np.zeros((S, 6, 6 * d.k))
    for j in range(d.k):
        D[:, :3, 6 * j : 6 * j + 3] = np.eye(3)
        D[:, 3:, 6 * j + 3 : 6 * j + 6] = np.eye(3)
        D[:, 3:, 6 * j : 6 * j + 3] = skew_batch(d.positions[:, j] - d.com)
    fit = d.fit(d.base_residual, D, d.all_rows)
    offsets = fit.theta.reshape(d.k, 6)
    W = d.wrenches + offsets[None]
    parts = [
        f"{n!r} f {format_vector(-o[:3], 'N')}, tau {format_vector(-o[3:], 'N m')}"
        for n, o in zip(d.names, offsets)
    ]
    return [
        finding_of(
            d,
            "sensor_offset",
            d.hypothesis(W),
            f"each contact's readings carry a constant offset (world axes): {'; '.join(parts)}",
            n_parameters=6 * d.k,
            uncertainty={"offsets": fit.std_error.reshape(d.k, 6).tolist()},
            offsets=(-offsets).tolist(),
        )
    ]


def force_gains(d: DiagnosisData) -> list[Finding]:
    """Each contact's readings scaled by a gain: kN instead of N, double counting, a
    mis-calibrated sensor."""
    terms = d.contact_wrench_terms()  # (S, k, 6)
    fit = d.fit(d.base_residual, np.swapaxes(terms, 1, 2), d.all_rows)
    gains = 1.0 + fit.theta  # true = gain * logged
    if np.any(np.abs(gains + 1.0) < 0.05):  # a sign flip, named by its own cause
        return [
            Finding(
                "force_gain",
                0.0,
                f"fitted gains {format_vector(gains, '')}: a gain of -1 is a sign flip",
                {"gains": gains.tolist()},
            )
        ]
    W = d.wrenches * gains[None, :, None]
    words = []
    for n, g, e in zip(d.names, gains, fit.std_error):
        note = (
            " (kN logged as N?)"
            if abs(g / 1000 - 1) < 0.05
            else (" (double counted?)" if abs(g - 0.5) < 0.03 else "")
        )
        words.append(f"{n!r} x {format_value(g, e, '', 1.0, 3).strip()}{note}")
    return [
        finding_of(
            d,
            "force_gain",
            d.hypothesis(W),
            "the wrench readings need a gain: " + "; ".join(words),
            n_parameters=d.k,
            uncertainty={"gains": fit.std_error.tolist()},
            gains=gains.tolist(),
        )
    ]


def stale_forces(d: DiagnosisData) -> list[Finding]:
    """A contact's force still logged after lift-off: its frame moves or rises while it
    carries load."""
    if len(d.time) < 3:
        return []
    out = []
    height = d.positions[..., 2]
    speed = np.linalg.norm(np.gradient(d.positions, d.time, axis=0), axis=-1)
    for j, name in enumerate(d.names):
        airborne = (height[:, j] > np.min(height[:, j]) + 0.02) | (speed[:, j] > 0.2)
        loaded = np.linalg.norm(d.wrenches[:, j, :3], axis=1) > 0.02 * d.weight
        stale = airborne & loaded
        if stale.sum() < 2:
            continue
        W = d.wrenches.copy()
        W[stale, j] = 0.0
        t = d.time[stale]
        out.append(
            finding_of(
                d,
                "stale_force",
                d.hypothesis(W),
                f"contact {name!r} still carries force while its frame is off the ground "
                f"({t.min():.3f} .. {t.max():.3f} s): a stale reading after lift-off",
                contact=name,
                start=float(t.min()),
                end=float(t.max()),
            )
        )
    return out


def missing_contacts(d: DiagnosisData) -> list[Finding]:
    """A declared contact whose logged wrench is zero where the residual is large: its
    readings are missing (not logged, or logged under another name)."""
    out = []
    rows = d.score_rows
    for j, name in enumerate(d.names):
        if np.any(d.wrenches[rows, j] != 0.0):
            continue
        # The contact takes whatever closes the balance, at its own point: explains it all.
        W = d.wrenches.copy()
        r = d.base_residual
        W[rows, j, :3] = -r[rows, :3]
        W[rows, j, 3:] = -(r[rows, 3:] + cross(d.positions[rows, j] - d.com[rows], -r[rows, :3]))
        t = d.time[rows]
        out.append(
            finding_of(
                d,
                "missing_contact",
                d.hypothesis(W),
                f"contact {name!r} carries no wrench in the log while the balance needs one "
                f"({t.min():.3f} .. {t.max():.3f} s): its readings are missing",
                n_parameters=len(rows),
                contact=name,
                start=float(t.min()),
                end=float(t.max()),
            )
        )
    return out


def missing_forces(d: DiagnosisData) -> list[Finding]:
    """The residual read as forces the log lacks, one per event (a push, a missing contact).

    Over-tolerance samples are split into events at gaps; in each, the residual is fitted by
    a wrench of fixed direction and line of action with a varying size (rank one).
    """
    rows = d.score_rows
    if not d.over.any():
        return []
    t = d.time
    dt = d.dt or 1.0
    gap = max(5 * dt, 0.02)
    cuts = np.flatnonzero(np.diff(t[rows]) > gap) + 1
    events = np.split(rows, cuts)
    corrected = d.base_residual.copy()
    described = []
    w = np.array([1.0, 1.0, 1.0, 10.0, 10.0, 10.0])
    share = len(rows) / max(len(t), 1)
    smooth = d.smoothed(d.base_residual)
    for idx in events[:20]:
        block = d.base_residual[idx] * w
        U, s, Vt = np.linalg.svd(block, full_matrices=False)
        u = Vt[0] / w  # direction in (f, tau) units
        amplitude = U[:, 0] * s[0]
        corrected[idx] = d.base_residual[idx] - np.outer(amplitude, u)
        # A contact pushes and a rope pulls: a missing force whose size changes sign is
        # neither (it describes a residual, it names nothing). Read on the averaged residual
        # (noise of differentiated accelerations changes sign, a force need not).
        size = (smooth[idx] * w) @ Vt[0]
        peak = float(np.abs(size).max(initial=0.0))
        two_sided = min(size.max(initial=0.0), -size.min(initial=0.0)) > 0.2 * peak
        missing = -np.outer(amplitude, u).mean(axis=0)  # the wrench that would close the balance
        f_mean, m_mean = missing[:3], missing[3:]
        start, end = float(t[idx[0]]), float(t[idx[-1]])
        com = d.com[idx].mean(axis=0)
        # A force whose line of action would lie over 10 m from the CoM (far beyond any
        # robot) is a pure moment.
        if np.linalg.norm(f_mean) * 10.0 < np.linalg.norm(m_mean):
            what = f"a moment of about {format_vector(m_mean, 'N m')} (world axes), no force"
            point = None
        else:
            point = com + np.cross(f_mean, m_mean) / (f_mean @ f_mean)
            what = (
                f"about {format_vector(f_mean, 'N')} (world axes), acting along a line "
                f"through {format_vector(point, 'm')}"
            )
        described.append(
            {
                "start": start,
                "end": end,
                "mean_force": f_mean.tolist(),
                "mean_moment": m_mean.tolist(),
                "point_on_line": None if point is None else point.tolist(),
                "two_sided": bool(two_sided),
                "description": what,
            }
        )
    if len(events) > 20:
        corrected[np.concatenate(events[20:])] = 0.0
    kind = "constant" if share > 0.5 and len(events) == 1 else "pulse"
    if kind == "constant":
        message = (
            f"a contact or constant force is missing from the log: {described[0]['description']}"
        )
    else:
        windows = "; ".join(
            f"{e['start']:.3f}-{e['end']:.3f} s: {e['description']}" for e in described[:4]
        )
        more = f" (+{len(described) - 4} more)" if len(described) > 4 else ""
        message = f"{len(events)} external force event(s) missing from the log: {windows}{more}"
    first = described[0]
    # Its size varies per sample: as many values as samples, so any fitted cause wins a tie.
    return [
        finding_of(
            d,
            "missing_force",
            corrected,
            message,
            n_parameters=len(rows) + 6 * len(events),
            kind=kind,
            events=described,
            start=first["start"],
            end=described[-1]["end"],
            mean_force=first["mean_force"],
            point_on_line=first["point_on_line"],
            share_of_samples=share,
        )
    ]
