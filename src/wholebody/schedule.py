"""Contact schedules: which contacts are active at each sample, and how to infer them.

A :class:`ContactSchedule` holds, per sample and per contact, whether the contact may carry
a wrench (``active``, shape (N, k)); estimation fixes inactive contacts' wrenches to zero
(``estimate_contact_wrenches_batch(..., active=schedule.active)``).

When a log has no schedule, three methods infer one (``docs/schedule.md``):

``"kinematic"`` (:func:`infer_schedule_kinematic`)
    Height of each contact above the declared ground plane (the lowest corner of a sole, the
    origin of a point contact) and its velocity along the normal, with hysteresis (enter at
    ``height_on``, leave above ``height_off`` or when rising faster than ``lift_speed``
    above ``height_on``) and minimum durations. Parameters in metres, m/s and seconds.
``"dynamic"`` (:func:`infer_schedule_dynamic`)
    Which subsets of the candidate contacts can explain the measured motion within their
    cones: each subset is estimated in batch with the others inactive (a small QP per
    sample and subset); a subset is consistent where its estimate is found and its raw
    equations are met within ``residual_tolerance``. The smallest consistent subset (least
    residual among equals) is taken, then minimum durations smooth it. Samples no subset
    explains are flagged (a push, a contact that is not declared). With joint torques
    (full dynamics) each foot's wrench is identifiable and the smallest set is the loaded
    one; in Newton-Euler mode the smallest set is only the least the motion needs (a foot
    that carries load may be left out where the other alone could carry it).
``"combined"`` (:func:`infer_schedule_combined`)
    The kinematic schedule proposes; dynamics confirms it where it is consistent (with
    torques, contacts whose removal stays consistent are dropped: touching but unloaded),
    replaces it by the nearest consistent subset where it is not, and flags samples no
    subset explains.

:func:`infer_contact_schedule` dispatches on ``method``; :func:`plot_schedule` draws the
Gantt-style timeline beside the vertical force.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .contacts import Contact, SurfaceContact
from .errors import InvalidArgumentError, StateError
from .robot import Robot

__all__ = [
    "ContactSchedule",
    "infer_contact_schedule",
    "infer_schedule_kinematic",
    "infer_schedule_dynamic",
    "infer_schedule_combined",
    "contact_heights",
    "enforce_min_durations",
    "plot_schedule",
    "METHODS",
    "MAX_SUBSET_CONTACTS",
]

Array = NDArray[np.float64]
Bools = NDArray[np.bool_]
#: Inference methods.
METHODS = ("kinematic", "dynamic", "combined")
#: Dynamic inference tries every subset: at most this many candidate contacts.
MAX_SUBSET_CONTACTS = 6


@dataclass(frozen=True)
class ContactSchedule:
    """Per sample and per contact, whether the contact is active (may carry a wrench).

    Attributes
    ----------
    contact_names : tuple of str
        Contact names, column order of every (N, k) array.
    time : ndarray, shape (N,)
        Sample times [s].
    active : ndarray of bool, shape (N, k)
        True where the contact may carry a wrench; estimation fixes the others to zero.
    method : str
        ``"kinematic"``, ``"dynamic"``, ``"combined"`` or ``"given"`` (from a log).
    confidence : ndarray, shape (N, k)
        How clear each decision is, in [0, 1]: kinematic, the distance of the height from
        the hysteresis band relative to its width; dynamic, how far the residual without
        the contact (active) or with the chosen set (inactive) is from the tolerance,
        relative to the tolerance. 1 is clear, 0 on the threshold.
    evidence : dict of str to ndarray
        What the decision rests on: ``"height"`` (N, k) [m] above the ground,
        ``"normal_speed"`` (N, k) [m/s] along the ground normal (kinematic);
        ``"subset_residual"`` (N, n_subsets) [N or N m] and ``"subsets"`` (n_subsets, k)
        bool (dynamic); ``"normal_force"`` (N, k) [N], the estimate of the chosen set
        along the ground normal (dynamic, combined).
    unexplained : ndarray of bool, shape (N,)
        Samples no subset of the contacts explains within the cones (dynamic, combined).
    reasons : dict of int to str
        Why each unexplained sample is so.
    parameters : dict of str to float
        The parameters used (physical units).
    """

    contact_names: tuple[str, ...]
    time: Array
    active: Bools
    method: str
    confidence: Array
    evidence: dict[str, NDArray[Any]] = field(default_factory=dict)
    unexplained: Bools | None = None
    reasons: dict[int, str] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        N, k = len(self.time), len(self.contact_names)
        if self.active.shape != (N, k):
            raise InvalidArgumentError(
                f"active must have shape ({N}, {k}) (samples, contacts "
                f"{list(self.contact_names)}), got {self.active.shape}")
        if self.unexplained is None:
            object.__setattr__(self, "unexplained", np.zeros(N, dtype=bool))

    def __len__(self) -> int:
        return int(self.active.shape[0])

    @classmethod
    def from_active(cls, contact_names: Sequence[str], time: ArrayLike, active: ArrayLike,
                    method: str = "given") -> ContactSchedule:
        """A schedule from a known mask (a log's, or the simulator's): confidence 1."""
        mask = np.asarray(active, dtype=bool)
        t = np.asarray(time, dtype=float)
        return cls(tuple(contact_names), t, mask, method, np.ones(mask.shape))

    def save(self, path: Any) -> None:
        """Write an ``.npz``: ``time`` (N,), ``contact_names`` (k,) str, ``active`` (N, k)
        bool, ``confidence`` (N, k), ``unexplained`` (N,) bool, ``method`` (str), and
        ``evidence_<name>`` arrays. Raises :class:`OutputError` when it cannot be written."""
        from .errors import OutputError

        assert self.unexplained is not None
        arrays = {"time": self.time, "contact_names": np.array(self.contact_names),
                  "active": self.active, "confidence": self.confidence,
                  "unexplained": self.unexplained, "method": np.array(self.method)}
        arrays |= {f"evidence_{k}": np.asarray(v) for k, v in self.evidence.items()}
        try:
            np.savez(path, **arrays)  # type: ignore[arg-type]
        except OSError as exc:
            raise OutputError(f"cannot write the schedule {str(path)!r}: {exc}") from exc

    @classmethod
    def load(cls, path: Any) -> ContactSchedule:
        """Read what :meth:`save` wrote (reasons and parameters are not kept)."""
        from .errors import LogFileError, LogFormatError

        try:
            data = np.load(path, allow_pickle=False)
        except OSError as exc:
            raise LogFileError(f"cannot read the schedule {str(path)!r}: {exc}") from exc
        with data:
            missing = {"time", "contact_names", "active"} - set(data.files)
            if missing:
                raise LogFormatError(f"schedule {str(path)!r} lacks {sorted(missing)}")
            names = tuple(str(n) for n in data["contact_names"])
            active = data["active"].astype(bool)
            conf = data["confidence"] if "confidence" in data.files else np.ones(active.shape)
            unexplained = (data["unexplained"].astype(bool) if "unexplained" in data.files
                           else None)
            method = str(data["method"]) if "method" in data.files else "given"
            evidence = {f[len("evidence_"):]: data[f] for f in data.files
                        if f.startswith("evidence_")}
            return cls(names, data["time"].astype(float), active, method, conf, evidence,
                       unexplained)

    def column(self, name: str) -> Bools:
        """The active flags of one contact, shape (N,)."""
        try:
            return self.active[:, self.contact_names.index(name)]
        except ValueError:
            from .errors import ContactNotFoundError

            raise ContactNotFoundError(name, list(self.contact_names)) from None

    def transitions(self) -> list[tuple[float, str, str]]:
        """``(time, contact, "make" or "break")`` in time order."""
        out = []
        for j, name in enumerate(self.contact_names):
            col = self.active[:, j].astype(np.int8)
            for i in np.flatnonzero(np.diff(col)).tolist():
                out.append((float(self.time[i + 1]), name, "make" if col[i + 1] else "break"))
        return sorted(out)

    def agreement(self, other: ContactSchedule | ArrayLike) -> float:
        """Share of (sample, contact) entries equal to another schedule's (or mask)."""
        mask = other.active if isinstance(other, ContactSchedule) else np.asarray(other, bool)
        if mask.shape != self.active.shape:
            raise InvalidArgumentError(
                f"schedules differ in shape: {self.active.shape} and {mask.shape}")
        return float(np.mean(mask == self.active))

    def summary(self) -> str:
        """A few lines: method, share of time each contact is active, transitions, flags."""
        lines = [f"contact schedule ({self.method}, {len(self)} samples)"]
        for j, name in enumerate(self.contact_names):
            n_tr = int(np.count_nonzero(np.diff(self.active[:, j].astype(np.int8))))
            lines.append(f"  {name}: active {100 * self.active[:, j].mean():.1f} % of samples, "
                         f"{n_tr} transitions, least confidence "
                         f"{float(np.min(self.confidence[:, j], initial=1.0)):.2f}")
        assert self.unexplained is not None
        if self.unexplained.any():
            lines.append(f"  {int(self.unexplained.sum())} samples no subset of the contacts "
                         f"explains (first at t = {self.time[self.unexplained][0]:.3f} s)")
        return "\n".join(lines)


# --- helpers ------------------------------------------------------------------------------


def _ground(ground_height: float, ground_normal: ArrayLike | None) -> tuple[Array, Array]:
    n = np.array([0.0, 0.0, 1.0]) if ground_normal is None else np.asarray(ground_normal, float)
    if n.shape != (3,) or not np.isfinite(n).all() or np.linalg.norm(n) == 0:
        raise InvalidArgumentError(f"ground_normal must be a non-zero (3,) vector, got {n}")
    n = n / np.linalg.norm(n)
    if not np.isfinite(ground_height):
        raise InvalidArgumentError(f"ground_height must be finite [m], got {ground_height}")
    return n, ground_height * n


def _states(robot: Robot, q: ArrayLike, v: ArrayLike, a: ArrayLike | None
            ) -> tuple[Array, Array, Array, Bools, dict[int, str]]:
    arrays: dict[str, Any] = {"q": q, "v": v}
    if a is not None:
        arrays["a"] = a
    checked, flagged, reasons = robot.check_batch(**arrays)
    Q, V = checked["q"], checked["v"]
    A = checked["a"] if a is not None else np.zeros_like(V)
    return Q, V, A, np.asarray(flagged, dtype=bool), reasons


def _time(time: ArrayLike | None, N: int) -> Array:
    if time is None:
        raise InvalidArgumentError("time is needed (sample times [s], shape (N,)): minimum "
                                   "durations are in seconds")
    t = np.asarray(time, dtype=float)
    if t.shape != (N,) or not np.isfinite(t).all() or np.any(np.diff(t) <= 0):
        raise InvalidArgumentError(f"time must be finite and increasing, shape ({N},); got "
                                   f"shape {t.shape}")
    return t


def contact_heights(robot: Robot, q: ArrayLike, v: ArrayLike, contacts: Sequence[Contact], *,
                    ground_height: float = 0.0, ground_normal: ArrayLike | None = None
                    ) -> tuple[Array, Array]:
    """Height above the ground plane and normal speed of each contact's lowest point.

    The lowest point is a sole's lowest corner (its rectangle in the contact frame's x-y
    plane) or a point contact's frame origin.

    Parameters
    ----------
    q : array, shape (N, nq)
    v : array, shape (N, nv)
    contacts : sequence of Contact
    ground_height : float
        Offset of the ground plane along its normal from the world origin [m].
    ground_normal : array, shape (3,), optional
        Ground normal, world axes (default +z).

    Returns
    -------
    height : ndarray, shape (N, k)
        Signed distance of the lowest point above the plane [m] (negative: below).
    normal_speed : ndarray, shape (N, k)
        Velocity of that point along the normal [m/s] (positive: rising). NaN where the
        state is flagged.
    """
    Q, V, A, bad, _ = _states(robot, q, v, None)
    n, p0 = _ground(ground_height, ground_normal)
    N, k = Q.shape[0], len(contacts)
    from .balance import kinematics_batch

    frames = [c.frame for c in contacts]
    kin = kinematics_batch(robot, Q, V, A, frames, bad, rotations=True)  # type: ignore[arg-type]
    assert kin.rotations is not None
    height = np.full((N, k), np.nan)
    speed = np.full((N, k), np.nan)
    for j, c in enumerate(contacts):
        if isinstance(c, SurfaceContact):
            X, Y = c.half_length, c.half_width
            corners = np.array([[X, Y, 0.0], [-X, Y, 0.0], [-X, -Y, 0.0], [X, -Y, 0.0]])
        else:
            corners = np.zeros((1, 3))
        offsets = np.einsum("nij,cj->nci", kin.rotations[:, j], corners)  # world axes
        h = (kin.positions[:, j, None, :] + offsets - p0) @ n  # (N, corners)
        low = np.nanargmin(np.where(np.isnan(h), np.inf, h), axis=1)
        height[:, j] = h[np.arange(N), low]
        for i in np.flatnonzero(~bad).tolist():
            twist = robot.frame_velocity(Q[i], V[i], c.frame)
            r = offsets[i, low[i]]
            w = twist[3:]
            vel = twist[:3] + np.array([w[1] * r[2] - w[2] * r[1], w[2] * r[0] - w[0] * r[2],
                                        w[0] * r[1] - w[1] * r[0]])
            speed[i, j] = vel @ n
    height[bad] = np.nan
    return height, speed


def enforce_min_durations(active: ArrayLike, time: ArrayLike, *, min_contact: float,
                          min_flight: float) -> Bools:
    """Remove gaps shorter than ``min_flight`` [s], then contacts shorter than
    ``min_contact`` [s], in each column of ``active`` (N,) or (N, k). Runs that touch the
    start or end of the log are kept (their true length is unknown)."""
    mask = np.array(active, dtype=bool)
    t = np.asarray(time, dtype=float)
    cols = mask.reshape(mask.shape[0], -1)
    dt = float(np.median(np.diff(t))) if len(t) > 1 else 0.0
    for j in range(cols.shape[1]):
        for value, shortest in ((False, min_flight), (True, min_contact)):
            if shortest <= 0:
                continue
            col = cols[:, j]
            edges = np.flatnonzero(np.diff(col.astype(np.int8))) + 1
            starts = np.r_[0, edges]
            stops = np.r_[edges, len(col)]
            for s, e in zip(starts.tolist(), stops.tolist(), strict=True):
                if col[s] != value or s == 0 or e == len(col):
                    continue
                if t[e - 1] - t[s] + dt < shortest - 1e-12:
                    col[s:e] = not value
    return cols.reshape(mask.shape)


def _check_contacts(contacts: Sequence[Contact]) -> None:
    if not contacts:
        raise InvalidArgumentError("a contact schedule needs at least one candidate contact")
    names = [c.name for c in contacts]
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"contact names must be unique, got {names}")


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
    _check_contacts(contacts)
    if not height_on <= height_off:
        raise InvalidArgumentError(f"height_on ({height_on} m) must not exceed height_off "
                                   f"({height_off} m)")
    height, speed = contact_heights(robot, q, v, contacts, ground_height=ground_height,
                                    ground_normal=ground_normal)
    N, k = height.shape
    t = _time(time, N)
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
    params = {"ground_height": float(ground_height), "height_on": height_on,
              "height_off": height_off, "lift_speed": lift_speed, "min_contact": min_contact,
              "min_flight": min_flight}
    return ContactSchedule(tuple(c.name for c in contacts), t, active, "kinematic", confidence,
                           {"height": height, "normal_speed": speed}, None, {}, params)


# --- dynamic ------------------------------------------------------------------------------


def _subsets(k: int) -> Bools:
    """Every non-empty subset of k contacts, smallest first: (2^k - 1, k) bool."""
    rows = [np.isin(np.arange(k), combo)
            for size in range(1, k + 1) for combo in itertools.combinations(range(k), size)]
    return np.array(rows, dtype=bool)


@dataclass(frozen=True)
class _SubsetFits:
    subsets: Bools  # (S, k)
    residual: Array  # (N, S) raw-equation misfit [N or N m]; inf where not found
    consistent: Bools  # (N, S)
    normal: Array  # (N, S, k) normal force of each subset's estimate [N]
    tolerance: float
    mode: str


def _subset_fits(robot: Robot, Q: Array, V: Array, A: Array, contacts: Sequence[Contact],
                 tau: ArrayLike | None, external_wrenches: Mapping[str, Any] | None,
                 residual_tolerance: float | None, ground_normal: Array,
                 estimate_options: Mapping[str, Any]) -> _SubsetFits:
    from .estimation import estimate_contact_wrenches_batch

    k = len(contacts)
    if k > MAX_SUBSET_CONTACTS:
        raise InvalidArgumentError(
            f"dynamic schedule inference tries every subset of the contacts: at most "
            f"{MAX_SUBSET_CONTACTS} candidates, got {k} (group point contacts into soles)")
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
        batch = estimate_contact_wrenches_batch(
            robot, Q, V, A, contacts, tau=tau, external_wrenches=external_wrenches,
            active=np.broadcast_to(subset, (N, k)), **dict(estimate_options))
        mode = batch.mode
        ok = batch.status == "found"
        residual[ok, s] = batch.data_residual[ok]
        for j, start in enumerate(starts.tolist()):
            normal[:, s, j] = batch.wrenches[:, start : start + 3] @ ground_normal
    consistent = residual <= tol
    return _SubsetFits(subsets, residual, consistent, normal, tol, mode)


def _pick_smallest(fits: _SubsetFits, allowed: Bools | None = None) -> tuple[NDArray[np.int64],
                                                                            Bools]:
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
        how = (f"the best subset misses the equations by {best:.3g}" if np.isfinite(best)
               else "no subset has wrenches inside its cones that meet the equations")
        out[i] = (f"no subset of the contacts explains the motion within the cones ({how}; "
                  f"tolerance {fits.tolerance:.3g}): a push, or a contact not declared?")
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
        Known external wrenches, as in :func:`wholebody.estimation.estimate_contact_wrenches_batch`.
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
    _check_contacts(contacts)
    Q, V, A, _, _ = _states(robot, q, v, a)
    N = Q.shape[0]
    t = _time(time, N)
    n, _ = _ground(0.0, ground_normal)
    fits = _subset_fits(robot, Q, V, A, contacts, tau, external_wrenches, residual_tolerance, n,
                        estimate_options or {})
    best, found = _pick_smallest(fits)
    fallback = np.argmin(np.where(np.isfinite(fits.residual), fits.residual, 1e300), axis=1)
    index = np.where(found, best, fallback)
    raw = fits.subsets[index]
    active = enforce_min_durations(raw, t, min_contact=min_contact, min_flight=min_flight)
    return _finish(contacts, t, active, "dynamic", fits, ~found,
                   {"residual_tolerance": fits.tolerance, "min_contact": min_contact,
                    "min_flight": min_flight, "mode": fits.mode})


def _finish(contacts: Sequence[Contact], t: Array, active: Bools, method: str,
            fits: _SubsetFits, unexplained: Bools, params: dict[str, Any],
            evidence: dict[str, NDArray[Any]] | None = None) -> ContactSchedule:
    index = {tuple(row): s for s, row in enumerate(fits.subsets.tolist())}
    N, k = active.shape
    normal = np.zeros((N, k))
    for i in range(N):
        s = index.get(tuple(active[i].tolist()))
        if s is not None:
            normal[i] = fits.normal[i, s]
    ev: dict[str, NDArray[Any]] = dict(evidence or {})
    ev.update({"subset_residual": fits.residual, "subsets": fits.subsets, "normal_force": normal})
    return ContactSchedule(tuple(c.name for c in contacts), t, active, method,
                           _confidence_dynamic(fits, active), ev, unexplained,
                           _unexplained_reasons(fits, np.flatnonzero(unexplained)), params)


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
        robot, q, v, contacts, time=time, ground_height=ground_height,
        ground_normal=ground_normal, height_on=height_on, height_off=height_off,
        lift_speed=lift_speed, min_contact=0.0, min_flight=0.0)
    Q, V, A, _, _ = _states(robot, q, v, a)
    t = kin.time
    n, _ = _ground(0.0, ground_normal)
    fits = _subset_fits(robot, Q, V, A, contacts, tau, external_wrenches, residual_tolerance, n,
                        estimate_options or {})
    N, k = kin.active.shape
    subsets = fits.subsets
    # Distance of every subset to each sample's kinematic set: (N, S).
    distance = (subsets[None, :, :] != kin.active[:, None, :]).sum(axis=2)
    same = distance == 0
    if tau is not None:
        inside = np.asarray(~(subsets[None, :, :] & ~kin.active[:, None, :]).any(axis=2),
                            dtype=bool)
        best, found_sub = _pick_smallest(fits, inside)
    else:
        best, found_sub = _pick_smallest(fits, same)
    sizes = subsets.sum(axis=1)
    key = np.where(fits.consistent, distance * 1e60 + sizes[None, :] * 1e30
                   + np.minimum(fits.residual, 1e29), np.inf)
    nearest = np.argmin(key, axis=1)
    any_ok = np.isfinite(key[np.arange(N), nearest])
    raw = kin.active.copy()
    raw[found_sub] = subsets[best[found_sub]]
    replace = ~found_sub & any_ok
    raw[replace] = subsets[nearest[replace]]
    unexplained = ~found_sub & ~any_ok
    active = enforce_min_durations(raw, t, min_contact=min_contact, min_flight=min_flight)
    params = dict(kin.parameters)
    params.update({"residual_tolerance": fits.tolerance, "min_contact": min_contact,
                   "min_flight": min_flight, "mode": fits.mode,
                   "overridden_samples": int(replace.sum())})
    return _finish(contacts, t, active, "combined", fits, unexplained, params, kin.evidence)


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


# --- figure -------------------------------------------------------------------------------


def plot_schedule(schedule: ContactSchedule, normal_forces: ArrayLike | None = None,
                  path: str | None = None) -> Any:
    """A Gantt-style timeline of the schedule beside the vertical force.

    Top panel: one row per contact, a bar where it is active (shaded by confidence),
    unexplained samples marked in red. Bottom panel: each contact's normal force [N]
    (``normal_forces`` (N, k), or the schedule's ``evidence["normal_force"]``) with the
    inactive spans shaded. Saved to ``path`` when given.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ._optional import require

    require("matplotlib", "plot", "schedule figures")
    import matplotlib

    if path is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    t = schedule.time
    k = len(schedule.contact_names)
    forces = (np.asarray(normal_forces, dtype=float) if normal_forces is not None
              else schedule.evidence.get("normal_force"))
    rows = 2 if forces is not None else 1
    fig, axes = plt.subplots(rows, 1, sharex=True, figsize=(10, 1.2 + 0.6 * k + 2.5 * (rows - 1)),
                             squeeze=False, gridspec_kw={"height_ratios": [1] + [2] * (rows - 1)})
    ax = axes[0, 0]
    dt = float(np.median(np.diff(t))) if len(t) > 1 else 1.0
    for j in range(k):
        col = schedule.active[:, j].astype(np.int8)
        edges = np.flatnonzero(np.diff(col)) + 1
        for s, e in zip(np.r_[0, edges].tolist(), np.r_[edges, len(col)].tolist(), strict=True):
            if col[s]:
                conf = float(np.mean(schedule.confidence[s:e, j]))
                ax.broken_barh([(t[s], t[e - 1] - t[s] + dt)], (j - 0.4, 0.8),
                               facecolors=f"C{j}", alpha=0.35 + 0.65 * conf)
    assert schedule.unexplained is not None
    if schedule.unexplained.any():
        ax.plot(t[schedule.unexplained], np.full(int(schedule.unexplained.sum()), k - 0.5),
                "r|", markersize=12, label="no subset explains the motion")
        ax.legend(loc="upper right", fontsize="small")
    ax.set_yticks(range(k), list(schedule.contact_names))
    ax.set_ylim(-0.6, k - 0.2)
    ax.set_title(f"contact schedule ({schedule.method})")
    if forces is not None:
        axf = axes[1, 0]
        for j, name in enumerate(schedule.contact_names):
            axf.plot(t, forces[:, j], color=f"C{j}", label=f"{name} normal force")
        axf.set_ylabel("force [N]")
        axf.legend(loc="upper right", fontsize="small")
    axes[-1, 0].set_xlabel("time [s]")
    fig.tight_layout()
    if path is not None:
        from .errors import OutputError

        try:
            fig.savefig(path)
        except OSError as exc:
            raise OutputError(f"cannot write the schedule figure {path!r}: {exc}") from exc
    return fig
