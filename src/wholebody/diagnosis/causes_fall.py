"""A robot that falls: its loaded contacts move because it falls, not because of a logging
mistake. The CoM drops; each loaded contact tips over an edge of its sole (it turns about
its centre of pressure, which is at the edge), slips (its centre of pressure slides with the
friction at its limit) or lifts off, each from a time read from the log.

The cause explains the convention checks that fail on such a log (loaded contacts that move
or leave the ground): its share is of those samples (family ``"contact_motion"``), not of the
Newton-Euler residual. Where the residual is over tolerance too after the fall begins (parts
of the robot not declared as contacts hit the ground), it is read as missing forces.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .core import LOADED, DiagnosisData, Finding
from .ranking import Family

__all__ = ["falling", "FALL_DROP_SHARE", "FALL_SPEED"]

Array = NDArray[np.float64]

#: The CoM falls when it drops by this share of its height above the loaded contacts.
FALL_DROP_SHARE = 0.1
#: ... moving down faster than this [m/s] at some sample.
FALL_SPEED = 0.3
#: Before the fall the CoM descends slower than this [m/s] (the onset).
ONSET_SPEED = 0.05
#: The convention checks' tolerances (without their evidence): speed as a share of
#: sqrt(g h), height as a share of h (``h`` the CoM's height above the contacts).
SPEED_SHARE, HEIGHT_SHARE = 0.05, 0.02
#: A centre of pressure this close to the sole's edge (share of the half size) is at the edge.
EDGE = 0.9
#: Friction at this share of its limit is slipping friction.
SLIPPING_UTILISATION = 0.8


def _tolerances(d: DiagnosisData, h: float, own: bool = False) -> tuple[float, float]:
    """Speed [m/s] and height [m] tolerances for a CoM ``h`` above the contacts: the
    convention checks' own when given (unless ``own``)."""
    g = float(np.linalg.norm(d.gravity))
    speed, height = SPEED_SHARE * np.sqrt(g * h), HEIGHT_SHARE * h
    for c in () if own else d.conventions:
        ev = c.parameters.get("evidence", {})
        speed = float(ev.get("speed_tolerance_m_s", speed))
        height = float(ev.get("height_tolerance_m", height))
    return speed, height


def _sole(c: object) -> tuple[float, float, Array] | None:
    hl, hw = getattr(c, "half_length", None), getattr(c, "half_width", None)
    if hl is None or hw is None:
        return None
    return float(hl), float(hw), np.asarray(getattr(c, "center", (0.0, 0.0)), float)[:2]


def _onset(d: DiagnosisData, height: Array, h: float) -> int | None:
    """The sample the fall begins at (None when the CoM does not fall)."""
    t = d.time
    vz = np.gradient(height, t)
    drop = np.maximum.accumulate(height) - height
    fallen = np.flatnonzero((drop >= FALL_DROP_SHARE * h) & (vz <= -FALL_SPEED))
    if not len(fallen):
        fallen = np.flatnonzero(drop >= FALL_DROP_SHARE * h)
        if not len(fallen) or vz[: fallen[0] + 1].min() > -FALL_SPEED:
            return None
    end = int(fallen[0])
    calm = np.flatnonzero(vz[:end] > -ONSET_SPEED)
    return int(calm[-1] + 1) if len(calm) else 0


def _events(d: DiagnosisData, j: int, start: int, moving: NDArray[np.bool_]) -> dict:
    """One contact's events after ``start``: tipping (about which edge), slipping, lift-off
    (first times), and the moving samples they account for: a moving sole loaded on its
    edge turns about it (tips); one loaded inside its edge with friction at its limit
    slips."""
    t = d.time
    local = d.local(d.wrenches)[:, j]
    fn = local[:, 2]
    loaded = fn > LOADED * d.weight
    out: dict = {"explained": np.zeros(len(t), dtype=bool)}
    sole = _sole(d.contacts[j]) if d.contacts else None
    after = np.arange(len(t)) >= start
    if sole is not None:
        hl, hw, centre = sole
        with np.errstate(all="ignore"):
            cop = np.stack([-local[:, 4] / fn, local[:, 3] / fn], axis=1)
        off = cop - centre
        edge = (np.abs(off[:, 0]) >= EDGE * hl) | (np.abs(off[:, 1]) >= EDGE * hw)
        # The load on the sole's edge while the sole moves: it turns about that edge.
        tip = loaded & after & edge & moving
        mu = float(getattr(d.contacts[j], "mu", np.inf) or np.inf)
        with np.errstate(all="ignore"):
            util = np.linalg.norm(local[:, :2], axis=1) / (mu * fn)
        slip = loaded & after & moving & ~edge & (util >= SLIPPING_UTILISATION)
        for name, mask in (("tips", tip), ("slips", slip)):
            if mask.any():
                i = int(np.flatnonzero(mask)[0])
                out[name] = float(t[i])
                if name == "tips":
                    x, y = off[i]
                    out["edge"] = (
                        ("toe" if x > 0 else "heel")
                        if abs(x) / hl >= abs(y) / hw
                        else ("left" if y > 0 else "right")
                    )
        out["explained"] = (tip | slip) & moving
    lifted = after & ~loaded & np.r_[False, loaded[:-1]]
    if lifted.any():
        out["lifts"] = float(t[int(np.flatnonzero(lifted)[0])])
    return out


def falling(d: DiagnosisData) -> list[Finding]:
    """The robot falls: the CoM drops by :data:`FALL_DROP_SHARE` of its height above the
    contacts, and the loaded contacts' motion after the onset is tipping or slipping."""
    if len(d.time) < 8 or not d.contacts or not d.k:
        return []
    up = -d.gravity / max(float(np.linalg.norm(d.gravity)), 1e-300)
    fn = np.einsum("ski,i->sk", d.wrenches[..., :3], up)
    loaded = fn > LOADED * d.weight
    heights = d.positions @ up
    if not loaded.any():
        return []
    com_h = d.com @ up
    level = float(np.median(heights[loaded]))
    h = max(float(np.median(com_h[loaded.any(axis=1)]) - level), 1e-3)
    start = _onset(d, com_h, h)
    if start is None:
        return []
    speed_tol, height_tol = _tolerances(d, h)
    speed = np.linalg.norm(np.gradient(d.positions, d.time, axis=0), axis=-1)
    off = np.abs(heights - level)
    moving = loaded & ((speed > speed_tol) | (off > height_tol))
    if not moving.any():
        return []
    # The convention checks scale their tolerances with the CoM's height, which the fall
    # shrinks: a loaded contact still and on the ground at the standing height's tolerances
    # is flagged only because the robot is going down.
    standing = max(float(np.median(com_h[: max(start, 1)])) - level, h)
    still_tol, ground_tol = _tolerances(d, standing, own=True)
    calm = (speed <= still_tol) & (off <= ground_tol)
    words, explained = [], np.zeros_like(moving)
    for j, name in enumerate(d.names):
        ev = _events(d, j, start, moving[:, j])
        explained[:, j] = ev["explained"] | (calm[:, j] & (np.arange(len(d.time)) >= start))
        parts = []
        if "tips" in ev:
            parts.append(f"tips over its {ev['edge']} edge from {ev['tips']:.3f} s")
        if "slips" in ev:
            parts.append(f"slips from {ev['slips']:.3f} s")
        if "lifts" in ev:
            parts.append(f"lifts off at {ev['lifts']:.3f} s")
        if parts:
            words.append(f"{name!r} {', '.join(parts)}")
    share = float(explained.sum() / moving.sum())
    t0, dt = float(d.time[start]), d.dt
    drop = float(com_h[start] - com_h[start:].min())
    residual = ""
    after = d.over & (np.arange(len(d.time)) >= start)
    if d.over.any():
        late = float(after.sum() / d.over.sum())
        residual = (
            f"; {100 * late:.0f} % of the samples over tolerance come after it begins (parts "
            "of the robot not declared as contacts meeting the ground: read as missing forces)"
        )
    d.cache.setdefault("families", {})["contact_motion"] = Family(
        "contact_motion", max(float(moving.any(axis=1).sum()) / 10.0, 1.0), 1e-3
    )
    return [
        Finding(
            "falling",
            share,
            f"the robot falls from t = {t0:.3f} +- {dt:.3f} s (its CoM drops {drop:.2f} m): "
            + ("; ".join(words) if words else "its contacts move")
            + "; its loaded contacts move because it falls, not because of a logging mistake"
            + residual,
            {
                "onset": t0,
                "com_drop": drop,
                "explains_conventions": ["loaded_contacts_still", "loaded_contacts_on_ground"],
                "residual_after_onset": float(after.sum() / max(d.over.sum(), 1)),
            },
            {"onset": dt},
            n_parameters=1,
            family="contact_motion",
        )
    ]
