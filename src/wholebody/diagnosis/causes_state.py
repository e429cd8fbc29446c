"""Causes in the state the forces are paired with: the log's first samples read before the
simulator computed them (a forgotten forward pass), forces and accelerations that belong to
the state one step before the logged ``q``, ``v`` (MuJoCo read after ``mj_step`` without
``mj_forward``: pitfall 1 of ``docs/mujoco.md``), and two joint columns swapped.

The last two recompute the kinematics (CoM, momentum rate, contact frames) from the log's
states, so they need :attr:`DiagnosisData.robot` and :attr:`DiagnosisData.states`.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..balance.newton_euler import newton_euler_residual_arrays
from ..robot.batch import centroidal_frames_rows
from .core import LENGTH_SCALE, LOADED, DiagnosisData, Finding, finding_of

__all__ = ["stale_start", "state_ahead", "swapped_joints", "kinematics", "MAX_STALE_SAMPLES"]

Array = NDArray[np.float64]

#: At most this many samples at the log's start are read as stale (more is another fault).
MAX_STALE_SAMPLES = 3
#: The screening of joint pairs: (samples over tolerance, trials kept) per stage.
_SCREENS = ((12, 6), (120, 3))
#: Pairs judged on every kept sample after the screening.
_FINALISTS = 3


def kinematics(d: DiagnosisData, q: Array, v: Array, a: Array) -> tuple[Array, Array, Array, Array]:
    """CoM (n, 3), momentum rate (n, 6) and the contact frames' origins (n, k, 3) and
    rotations (n, k, 3, 3) of the states ``q, v, a`` (one Pinocchio pass each)."""
    robot = d.robot
    ids = [robot.model.getFrameId(c.frame) for c in d.contacts]
    n = len(q)
    com, rate = np.empty((n, 3)), np.empty((n, 6))
    pos, rot = np.empty((n, len(ids), 3)), np.empty((n, len(ids), 3, 3))
    centroidal_frames_rows(robot, q, v, a, range(n), ids, com, rate, pos, rot)
    return com, rate, pos, rot


def _with_kinematics(d: DiagnosisData) -> bool:
    return d.robot is not None and d.states is not None and bool(d.contacts)


# --- stale samples at the start -----------------------------------------------------------


def stale_start(d: DiagnosisData) -> list[Finding]:
    """The log's first samples (at most :data:`MAX_STALE_SAMPLES`) are the only ones over
    tolerance and hold contact wrenches exactly zero on every contact (or, with the states,
    accelerations exactly zero): read before the simulator computed them (a recorder that
    logs before the first forward pass). Those samples are no evidence."""
    rows = d.rows
    over = np.flatnonzero(d.over)
    if not len(over) or len(over) > MAX_STALE_SAMPLES or rows[over].max() >= MAX_STALE_SAMPLES:
        return []
    first = over
    zero_w = np.all(d.wrenches[first] == 0.0)
    zero_a = False
    if d.states is not None:
        zero_a = bool(np.all(d.states(rows[first])[2] == 0.0))
    if not (zero_w or zero_a):
        return []
    what = " and ".join(
        w for w, z in (("contact wrenches", zero_w), ("accelerations", zero_a)) if z
    )
    r = d.base_residual.copy()
    r[first] = 0.0  # stale samples are no evidence
    t = d.time[first]
    return [
        finding_of(
            d,
            "stale_state",
            r,
            f"the log's first {len(first)} sample(s) ({t.min():.3f} .. {t.max():.3f} s) are stale: "
            f"their {what} are exactly zero, read before the simulator computed them (a "
            "recorder that logs before the first forward pass, e.g. MuJoCo's mj_forward; "
            "docs/mujoco.md pitfall 1); the rest of the log balances: drop them, or run the "
            "forward pass before logging",
            n_parameters=1,
            variant="first_samples",
            samples=[int(i) for i in rows[first]],
        )
    ]


# --- forces and accelerations one step behind the state -----------------------------------


def state_ahead(d: DiagnosisData) -> list[Finding]:
    """Logged accelerations and contact wrenches that belong to the state one sample before
    the logged ``q``, ``v``: MuJoCo read after ``mj_step`` without ``mj_forward`` (``qacc``
    and the contact forces are the previous state's). The balance is recomputed with each
    sample's ``a`` and wrenches against the previous sample's ``q``, ``v``."""
    if not _with_kinematics(d) or d.accelerations_estimated:
        return []
    rows = d.rows
    ok = rows >= 1
    if ok.sum() < 3:
        return []
    q0, v0, _ = d.states(rows[ok] - 1)
    _, _, a = d.states(rows[ok])
    com, rate, pos, _ = kinematics(d, q0, v0, a)
    positions, momentum = d.positions.copy(), d.momentum_rate.copy()
    shift = np.zeros_like(d.com)
    positions[ok], momentum[ok], shift[ok] = pos, rate, com - d.com[ok]
    r = d.residual(positions=positions, momentum_rate=momentum, com_shift=shift)
    return [
        finding_of(
            d,
            "stale_state",
            r,
            "the accelerations and contact forces belong to the state one sample before the "
            "logged q, v (read after the simulator's step without a forward pass: MuJoCo's "
            "mj_step leaves qacc and the contact forces of the state before the step; run "
            "mj_forward before logging, docs/mujoco.md pitfall 1)",
            variant="state_ahead",
        )
    ]


# --- two joint columns swapped ------------------------------------------------------------


def _named_pairs(d: DiagnosisData, names: list[str]) -> set[tuple[int, int]]:
    """Joint pairs the convention checks name (``v`` columns holding other joints')."""
    index = {n: i for i, n in enumerate(names)}
    pairs = set()
    for c in d.conventions:
        for a, b in c.parameters.get("evidence", {}).get("permutation", []):
            if a in index and b in index and a != b:
                pairs.add((min(index[a], index[b]), max(index[a], index[b])))
    return pairs


def _swap(X: Array, offset: int, i: int, j: int) -> Array:
    Y = X.copy()
    Y[:, [offset + i, offset + j]] = Y[:, [offset + j, offset + i]]
    return Y


def _swapped_residual(
    d: DiagnosisData,
    state: tuple[Array, Array, Array],
    at: NDArray[np.intp],
    pair: Any,
    arrays: str,
) -> tuple[Array, Array]:
    """The residual (len(at), 6) and contact origins (len(at), k, 3) at the kept samples
    ``at`` (``state`` their q, v, a) with the joint columns ``pair`` swapped in ``arrays``
    ("qva", "q" or "va")."""
    q, v, a = state
    i, j = pair
    q = _swap(q, 7, i, j) if "q" in arrays else q
    v = _swap(v, 6, i, j) if "v" in arrays else v
    a = _swap(a, 6, i, j) if "a" in arrays else a
    com, rate, pos, _ = kinematics(d, q, v, a)
    force, moment = newton_euler_residual_arrays(
        d.wrenches[at], pos, com, rate, mass=d.mass, gravity=d.gravity
    )
    ext = d.external[at]
    moment = moment + ext[:, 3:] - np.cross(com - d.com[at], ext[:, :3])
    return np.concatenate([force + ext[:, :3], moment], axis=1), pos


def _median_score(d: DiagnosisData, r: Array) -> float:
    """The score of residuals ``r`` (n, 6) (as :meth:`DiagnosisData.score`, unsmoothed)."""
    return float(
        np.median(np.linalg.norm(r[:, :3], axis=1)) / d.weight
        + np.median(np.linalg.norm(r[:, 3:], axis=1)) / (d.weight * LENGTH_SCALE)
    )


def swapped_joints(d: DiagnosisData) -> list[Finding]:
    """Two joint columns of the log swapped (in ``q``, ``v`` and ``a``; in ``q`` alone; or in
    ``v`` and ``a``): the kinematics recomputed with the columns put back. Every pair is
    screened on a few samples (swapped in all three; the pairs the convention checks name
    in each way), the best on more, the best few on all."""
    robot = d.robot
    if not _with_kinematics(d) or robot.model.nq - 7 != robot.model.nv - 6:
        return []
    names = list(robot.joint_names)
    state = d.states(d.rows)
    named = _named_pairs(d, names)
    trials = [(pair, "qva") for pair in itertools.combinations(range(len(names)), 2)] + [
        (pair, arrays) for pair in sorted(named) for arrays in ("q", "va")
    ]
    for n_rows, keep in _SCREENS:
        at = np.unique(d.score_rows[np.linspace(0, len(d.score_rows) - 1, n_rows).astype(int)])
        small = tuple(x[at] for x in state)
        scored = sorted(
            (_median_score(d, _swapped_residual(d, small, at, pair, arrays)[0]), pair, arrays)
            for pair, arrays in trials
        )
        trials = [(pair, arrays) for _, pair, arrays in scored[:keep]]
        if n_rows == _SCREENS[0][0]:  # the best pairs, each in every way
            trials = list(dict.fromkeys((p, a) for p, _ in trials for a in ("qva", "q", "va")))
    out = []
    for pair, arrays in trials[:_FINALISTS]:
        r, positions = _swapped_residual(d, state, d.all_rows, pair, arrays)
        a, b = names[pair[0]], names[pair[1]]
        where = {"qva": "q, v and a", "q": "q only", "va": "v and a"}[arrays]
        explains = _conventions_explained(d, positions, pair, names, arrays)
        out.append(
            finding_of(
                d,
                "swapped_joints",
                r,
                f"the joint columns {a!r} and {b!r} are swapped in the log ({where}): with them "
                "put back, the kinematics balance the forces"
                + (f" (and explain the failed checks {explains})" if explains else ""),
                joints=[a, b],
                arrays=arrays,
                variant=f"{a}/{b}/{arrays}",
                explains_conventions=explains,
            )
        )
    return out


def _conventions_explained(
    d: DiagnosisData, positions: Array, pair: Any, names: list[str], arrays: str
) -> list[str]:
    """The failed convention checks the swap explains: loaded contacts that move or leave
    the ground (at the check's own tolerances) stay still on it with the columns put back,
    on all but a fifth of the samples that failed; ``v`` against ``dq/dt`` when the check
    names the same two columns."""
    out = []
    swap = {names[pair[0]], names[pair[1]]}
    for c in d.conventions:
        name = c.cause.split(":", 1)[-1]
        evidence = c.parameters.get("evidence", {})
        if name.startswith("loaded_contacts"):
            before = _failing(d, d.positions, evidence)
            if before and _failing(d, positions, evidence) <= 0.2 * before:
                out.append(name)
        moved = evidence.get("permutation", [])
        if moved and {x for p in moved for x in p} == swap and arrays in ("q", "va"):
            out.append(name)
    return out


def _failing(d: DiagnosisData, positions: Array, evidence: dict) -> int:
    """Loaded contact samples beyond the convention check's speed or height tolerance."""
    if len(d.time) < 3:
        return 0
    loaded = np.linalg.norm(d.wrenches[..., :3], axis=-1) > LOADED * d.weight
    if "speed_tolerance_m_s" in evidence:
        speed = np.linalg.norm(np.gradient(positions, d.time, axis=0), axis=-1)
        return int((loaded & (speed > evidence["speed_tolerance_m_s"])).sum())
    if "height_tolerance_m" in evidence:
        up = -d.gravity / max(float(np.linalg.norm(d.gravity)), 1e-300)
        height = positions @ up
        level = float(np.median(height[loaded])) if loaded.any() else 0.0
        return int((loaded & (np.abs(height - level) > evidence["height_tolerance_m"])).sum())
    return 0
