"""Inferring a contact schedule: kinematic, dynamic, combined (see :mod:`wholebody.schedule`)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..contacts import Contact
from ..errors import InvalidArgumentError, StateError
from ..robot.core import Robot
from .core import (
    MAX_SUBSET_CONTACTS,
    METHODS,
    ContactSchedule,
    check_schedule_contacts,
    checked_states,
    contact_heights,
    enforce_min_durations,
    ground_plane,
    sample_times,
)

__all__ = [
    "infer_contact_schedule",
    "infer_schedule_kinematic",
    "infer_schedule_dynamic",
    "infer_schedule_combined",
]

Array = NDArray[np.float64]
Bools = NDArray[np.bool_]


# --- kinematic ----------------------------------------------------------------------------


def infer_schedule_kinematic(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    contacts: Sequence[Contact],
    *,
    time: ArrayLike,
    ground_height: float = 0.0,
    ground_normal: ArrayLike | None = None,
    height_on: float = 0.005,
    height_off: float = 0.01,
    lift_speed: float = 0.05,
    min_contact: float = 0.02,
    min_flight: float = 0.02,
) -> ContactSchedule:
    """Contact schedule from the height and normal speed of each contact above the ground.

    A contact becomes active when its lowest point (:func:`contact_heights`) is at most
    ``height_on`` above the plane; it stays active until it is above ``height_off``, or
    above ``height_on`` and rising faster than ``lift_speed``. Then contacts shorter than
    ``min_contact`` and gaps shorter than ``min_flight`` are removed.

    Parameters
    ----------
    q : array, shape (N, nq)
    v : array, shape (N, nv)
    contacts : sequence of Contact
        Candidate contacts (soles use their rectangle's lowest corner).
    time : array, shape (N,)
        Sample times [s].
    ground_height, ground_normal
        The ground plane: ``n . p = ground_height`` with unit normal ``n`` (default +z) [m].
    height_on, height_off : float
        Hysteresis band on the height [m] (``height_on <= height_off``). A simulator whose
        contacts act at zero distance wants a band near zero; a real robot's kinematics want
        millimetres to centimetres.
    lift_speed : float
        Rising speed along the normal [m/s] that ends a contact above ``height_on``.
    min_contact, min_flight : float
        Shortest contact and shortest gap kept [s].

    Returns
    -------
    ContactSchedule
        ``method="kinematic"``; evidence ``"height"`` and ``"normal_speed"``.
    """
    check_schedule_contacts(contacts)
    if not height_on <= height_off:
        raise InvalidArgumentError(
            f"height_on ({height_on} m) must not exceed height_off ({height_off} m)"
        )
    height, speed = contact_heights(
        robot, q, v, contacts, ground_height=ground_height, ground_normal=ground_normal
    )
    N, k = height.shape
    t = sample_times(time, N)
    active = np.zeros((N, k), dtype=bool)
    for j in range(k):
        h, s = height[:, j], speed[:, j]
        state = bool(h[0] <= height_on) if np.isfinite(h[0]) else False
        for i in range(N):
            if not np.isfinite(h[i]):
                active[i, j] = state
                continue
            if state:
                if h[i] > height_off or (h[i] > height_on and s[i] > lift_speed):
                    state = False
            elif h[i] <= height_on:
                state = True
            active[i, j] = state
    active = enforce_min_durations(active, t, min_contact=min_contact, min_flight=min_flight)
    band = max(height_off - height_on, 1e-3)
    mid = 0.5 * (height_on + height_off)
    confidence = np.clip(np.abs(np.nan_to_num(height, nan=mid) - mid) / band, 0.0, 1.0)
    params = {
        "ground_height": float(ground_height),
        "height_on": height_on,
        "height_off": height_off,
        "lift_speed": lift_speed,
        "min_contact": min_contact,
        "min_flight": min_flight,
    }
    return ContactSchedule(
        tuple(c.name for c in contacts),
        t,
        active,
        "kinematic",
        confidence,
        {"height": height, "normal_speed": speed},
        None,
        {},
        params,
    )


# --- dynamic ------------------------------------------------------------------------------


def _subsets(k: int) -> Bools:
    """Every non-empty subset of k contacts, smallest first: (2^k - 1, k) bool."""
    rows = [
        np.isin(np.arange(k), combo)
        for size in range(1, k + 1)
        for combo in itertools.combinations(range(k), size)
    ]
    return np.array(rows, dtype=bool)


@dataclass(frozen=True)
class _SubsetFits:
    subsets: Bools  # (S, k)
    residual: Array  # (N, S) raw-equation misfit [N or N m]; inf where not found
    consistent: Bools  # (N, S)
    normal: Array  # (N, S, k) normal force of each subset's estimate [N]
    tolerance: float
    mode: str


def _subset_fits(
    robot: Robot,
    Q: Array,
    V: Array,
    A: Array,
    contacts: Sequence[Contact],
    tau: ArrayLike | None,
    external_wrenches: Mapping[str, Any] | None,
    residual_tolerance: float | None,
    ground_normal: Array,
    estimate_options: Mapping[str, Any],
) -> _SubsetFits:
    from ..estimation import EstimationBatch, estimate_contact_wrenches

    k = len(contacts)
    if k > MAX_SUBSET_CONTACTS:
        raise InvalidArgumentError(
            f"dynamic schedule inference tries every subset of the contacts: at most "
            f"{MAX_SUBSET_CONTACTS} candidates, got {k} (group point contacts into soles)"
        )
    tol = 0.01 * robot.weight if residual_tolerance is None else float(residual_tolerance)
    if not tol > 0:
        raise InvalidArgumentError(f"residual_tolerance must be positive [N], got {tol}")
    subsets = _subsets(k)
    N = Q.shape[0]
    residual = np.full((N, len(subsets)), np.inf)
    normal = np.full((N, len(subsets), k), np.nan)
    sizes = [c.size for c in contacts]
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    mode = "newton_euler"
    for s, subset in enumerate(subsets):
        batch = cast(
            EstimationBatch,
            estimate_contact_wrenches(
                robot,
                Q,
                V,
                A,
                contacts,
                tau=tau,
                external_wrenches=external_wrenches,
                active=np.broadcast_to(subset, (N, k)),
                **dict(estimate_options),
            ),
        )
        mode = batch.mode
        ok = batch.status == "found"
        residual[ok, s] = batch.data_residual[ok]
        for j, start in enumerate(starts.tolist()):
            normal[:, s, j] = batch.wrenches[:, start : start + 3] @ ground_normal
    consistent = residual <= tol
    return _SubsetFits(subsets, residual, consistent, normal, tol, mode)


def _pick_smallest(
    fits: _SubsetFits, allowed: Bools | None = None
) -> tuple[NDArray[np.int64], Bools]:
    """Per sample, the index of the smallest consistent subset (least residual among equal
    sizes), restricted to ``allowed`` (N, S); -1 where none."""
    sizes = fits.subsets.sum(axis=1)
    ok = fits.consistent if allowed is None else fits.consistent & allowed
    # Sort key: size first, then residual.
    key = np.where(ok, sizes[None, :] * 1e30 + np.minimum(fits.residual, 1e29), np.inf)
    best = np.argmin(key, axis=1)
    found = np.isfinite(key[np.arange(len(key)), best])
    return np.where(found, best, -1), found


def _confidence_dynamic(fits: _SubsetFits, chosen: Bools) -> Array:
    """Per sample and contact, in [0, 1]: for an active contact, how far the residual of
    the chosen set without it is above the tolerance; for an inactive one, how far the
    chosen set's residual is below it (relative to the tolerance)."""
    N, k = chosen.shape
    index = {tuple(row): s for s, row in enumerate(fits.subsets.tolist())}
    out = np.ones((N, k))
    tol = fits.tolerance
    for i in range(N):
        row = chosen[i]
        s_here = index.get(tuple(row.tolist()))
        r_here = fits.residual[i, s_here] if s_here is not None else 0.0
        for j in range(k):
            if row[j]:
                without = row.copy()
                without[j] = False
                s = index.get(tuple(without.tolist()))
                r = fits.residual[i, s] if s is not None else np.inf
                out[i, j] = min(1.0, max(0.0, (r - tol) / tol)) if np.isfinite(r) else 1.0
            else:
                out[i, j] = min(1.0, max(0.0, (tol - r_here) / tol))
    return out


def _unexplained_reasons(fits: _SubsetFits, rows: NDArray[np.int64]) -> dict[int, str]:
    out = {}
    for i in rows.tolist():
        best = float(np.min(np.where(np.isfinite(fits.residual[i]), fits.residual[i], np.inf)))
        how = (
            f"the best subset misses the equations by {best:.3g}"
            if np.isfinite(best)
            else "no subset has wrenches inside its cones that meet the equations"
        )
        out[i] = (
            f"no subset of the contacts explains the motion within the cones ({how}; "
            f"tolerance {fits.tolerance:.3g}): a push, or a contact not declared?"
        )
    return out


def infer_schedule_dynamic(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    contacts: Sequence[Contact],
    *,
    time: ArrayLike,
    tau: ArrayLike | None = None,
    external_wrenches: Mapping[str, Any] | None = None,
    residual_tolerance: float | None = None,
    ground_normal: ArrayLike | None = None,
    min_contact: float = 0.02,
    min_flight: float = 0.02,
    estimate_options: Mapping[str, Any] | None = None,
) -> ContactSchedule:
    """Contact schedule from the dynamics: the smallest subset of the contacts that explains
    the measured motion within its cones.

    Every non-empty subset of the candidates (at most :data:`MAX_SUBSET_CONTACTS`) is
    estimated in batch with the others inactive; a subset is consistent at a sample where
    its estimate is ``found`` and its raw equations (Newton-Euler rows, or all nv rows with
    ``tau``) are met within ``residual_tolerance``. Per sample the smallest consistent
    subset wins (least residual among equal sizes), then minimum durations smooth each
    contact. Samples no subset explains are flagged and keep the subset of least residual.

    Parameters
    ----------
    q : array, shape (N, nq)
    v, a : arrays, shape (N, nv)
    contacts : sequence of Contact
    time : array, shape (N,)
        Sample times [s].
    tau : array, shape (N, nv - 6) or (N, nv), optional
        Joint torques [N m]: full-dynamics mode, where each foot's wrench is identifiable.
    external_wrenches : mapping, optional
        Known external wrenches, as in :func:`wholebody.estimation.estimate_contact_wrenches`.
    residual_tolerance : float, optional
        Largest misfit of the raw equations for a consistent subset [N or N m]; default
        1 % of the weight. A contact that carries less than about this is not needed.
    ground_normal : array, shape (3,), optional
        The direction of ``evidence["normal_force"]`` (default +z).
    min_contact, min_flight : float
        Shortest contact and gap kept [s].
    estimate_options : mapping, optional
        Passed to the batch estimator (``solver``, ``tolerance``, ``pyramid_faces``,
        ``workers``...).

    Returns
    -------
    ContactSchedule
        ``method="dynamic"``; evidence ``"subset_residual"``, ``"subsets"``,
        ``"normal_force"``.
    """
    check_schedule_contacts(contacts)
    Q, V, A, _, _ = checked_states(robot, q, v, a)
    N = Q.shape[0]
    t = sample_times(time, N)
    n, _ = ground_plane(0.0, ground_normal)
    fits = _subset_fits(
        robot,
        Q,
        V,
        A,
        contacts,
        tau,
        external_wrenches,
        residual_tolerance,
        n,
        estimate_options or {},
    )
    best, found = _pick_smallest(fits)
    fallback = np.argmin(np.where(np.isfinite(fits.residual), fits.residual, 1e300), axis=1)
    index = np.where(found, best, fallback)
    raw = fits.subsets[index]
    active = enforce_min_durations(raw, t, min_contact=min_contact, min_flight=min_flight)
    return _finish(
        contacts,
        t,
        active,
        "dynamic",
        fits,
        ~found,
        {
            "residual_tolerance": fits.tolerance,
            "min_contact": min_contact,
            "min_flight": min_flight,
            "mode": fits.mode,
        },
    )


def _finish(
    contacts: Sequence[Contact],
    t: Array,
    active: Bools,
    method: str,
    fits: _SubsetFits,
    unexplained: Bools,
    params: dict[str, Any],
    evidence: dict[str, NDArray[Any]] | None = None,
) -> ContactSchedule:
    index = {tuple(row): s for s, row in enumerate(fits.subsets.tolist())}
    N, k = active.shape
    normal = np.zeros((N, k))
    for i in range(N):
        s = index.get(tuple(active[i].tolist()))
        if s is not None:
            normal[i] = fits.normal[i, s]
    ev: dict[str, NDArray[Any]] = dict(evidence or {})
    ev.update({"subset_residual": fits.residual, "subsets": fits.subsets, "normal_force": normal})
    return ContactSchedule(
        tuple(c.name for c in contacts),
        t,
        active,
        method,
        _confidence_dynamic(fits, active),
        ev,
        unexplained,
        _unexplained_reasons(fits, np.flatnonzero(unexplained)),
        params,
    )


# --- combined -----------------------------------------------------------------------------


def infer_schedule_combined(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    contacts: Sequence[Contact],
    *,
    time: ArrayLike,
    tau: ArrayLike | None = None,
    external_wrenches: Mapping[str, Any] | None = None,
    residual_tolerance: float | None = None,
    ground_height: float = 0.0,
    ground_normal: ArrayLike | None = None,
    height_on: float = 0.005,
    height_off: float = 0.01,
    lift_speed: float = 0.05,
    min_contact: float = 0.02,
    min_flight: float = 0.02,
    estimate_options: Mapping[str, Any] | None = None,
) -> ContactSchedule:
    """Kinematics proposes, dynamics confirms.

    Per sample: the kinematic set (:func:`infer_schedule_kinematic`) is kept where it is
    consistent (see :func:`infer_schedule_dynamic`); with ``tau`` (each wrench identifiable)
    its smallest consistent subset is taken instead (a contact that touches but carries
    nothing is dropped). Where the kinematic set is not consistent, the consistent subset
    nearest to it (fewest contacts changed, then smallest, then least residual) replaces
    it; where none is, the kinematic set stays and the sample is flagged. Minimum
    durations smooth the result. Parameters as in the two methods.

    Returns
    -------
    ContactSchedule
        ``method="combined"``; the evidence of both methods.
    """
    kin = infer_schedule_kinematic(
        robot,
        q,
        v,
        contacts,
        time=time,
        ground_height=ground_height,
        ground_normal=ground_normal,
        height_on=height_on,
        height_off=height_off,
        lift_speed=lift_speed,
        min_contact=0.0,
        min_flight=0.0,
    )
    Q, V, A, _, _ = checked_states(robot, q, v, a)
    t = kin.time
    n, _ = ground_plane(0.0, ground_normal)
    fits = _subset_fits(
        robot,
        Q,
        V,
        A,
        contacts,
        tau,
        external_wrenches,
        residual_tolerance,
        n,
        estimate_options or {},
    )
    raw, unexplained, replace = _confirmed(fits, kin.active, loaded_only=tau is not None)
    active = enforce_min_durations(raw, t, min_contact=min_contact, min_flight=min_flight)
    params = dict(kin.parameters)
    params.update(
        {
            "residual_tolerance": fits.tolerance,
            "min_contact": min_contact,
            "min_flight": min_flight,
            "mode": fits.mode,
            "overridden_samples": int(replace.sum()),
        }
    )
    return _finish(contacts, t, active, "combined", fits, unexplained, params, kin.evidence)


def _confirmed(fits: _SubsetFits, proposed: Bools, loaded_only: bool) -> tuple[Bools, Bools, Bools]:
    """Each sample's contact set (N, k): the ``proposed`` set where it is consistent (with
    ``loaded_only``, its smallest consistent subset), else the consistent subset nearest to it
    (fewest contacts changed, then smallest, then least residual), else the proposed set.
    Returns it, the samples no subset explains and the samples replaced by the nearest."""
    N = len(proposed)
    subsets = fits.subsets
    # Distance of every subset to each sample's proposed set: (N, S).
    distance = (subsets[None, :, :] != proposed[:, None, :]).sum(axis=2)
    same = distance == 0
    if loaded_only:
        inside = np.asarray(~(subsets[None, :, :] & ~proposed[:, None, :]).any(axis=2), dtype=bool)
        best, found_sub = _pick_smallest(fits, inside)
    else:
        best, found_sub = _pick_smallest(fits, same)
    sizes = subsets.sum(axis=1)
    key = np.where(
        fits.consistent,
        distance * 1e60 + sizes[None, :] * 1e30 + np.minimum(fits.residual, 1e29),
        np.inf,
    )
    nearest = np.argmin(key, axis=1)
    any_ok = np.isfinite(key[np.arange(N), nearest])
    raw = proposed.copy()
    raw[found_sub] = subsets[best[found_sub]]
    replace = ~found_sub & any_ok
    raw[replace] = subsets[nearest[replace]]
    return raw, ~found_sub & ~any_ok, replace


def infer_contact_schedule(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike | None,
    contacts: Sequence[Contact],
    *,
    time: ArrayLike,
    method: str = "combined",
    **options: Any,
) -> ContactSchedule:
    """Infer a contact schedule by ``method`` (:data:`METHODS`); ``options`` go to
    :func:`infer_schedule_kinematic`, :func:`infer_schedule_dynamic` or
    :func:`infer_schedule_combined` (``a`` is not used by the kinematic method)."""
    if method == "kinematic":
        return infer_schedule_kinematic(robot, q, v, contacts, time=time, **options)
    if a is None:
        raise StateError(f"the {method!r} method needs accelerations a (N, nv)")
    if method == "dynamic":
        return infer_schedule_dynamic(robot, q, v, a, contacts, time=time, **options)
    if method == "combined":
        return infer_schedule_combined(robot, q, v, a, contacts, time=time, **options)
    raise InvalidArgumentError(f"method must be one of {METHODS}, got {method!r}")
