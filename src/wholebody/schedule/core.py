"""The contact schedule (per sample and contact: active or not) and the helpers the
inference methods share. Public through :mod:`wholebody.schedule`."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..balance import kinematics_batch
from ..contacts import Contact, SurfaceContact
from ..errors import InvalidArgumentError, LogFileError, LogFormatError, OutputError, StateWarning
from ..robot.core import Robot
from ..spatial import cross

if TYPE_CHECKING:
    from ..trajectory import Trajectory

__all__ = [
    "ContactSchedule",
    "contact_heights",
    "enforce_min_durations",
    "ground_plane",
    "checked_states",
    "sample_times",
    "check_schedule_contacts",
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
        ``"kinematic"``, ``"dynamic"``, ``"combined"``, or ``"given"`` / ``"logged"`` (read
        from a log).
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
                f"{list(self.contact_names)}), got {self.active.shape}"
            )
        if self.unexplained is None:
            object.__setattr__(self, "unexplained", np.zeros(N, dtype=bool))

    def __len__(self) -> int:
        return int(self.active.shape[0])

    @classmethod
    def from_active(
        cls, contact_names: Sequence[str], time: ArrayLike, active: ArrayLike, method: str = "given"
    ) -> ContactSchedule:
        """A schedule from a known mask (a log's, or the simulator's): confidence 1."""
        mask = np.asarray(active, dtype=bool)
        t = np.asarray(time, dtype=float)
        return cls(tuple(contact_names), t, mask, method, np.ones(mask.shape))

    @classmethod
    def from_trajectory(cls, traj: Trajectory) -> ContactSchedule:
        """The schedule a log holds (``traj.contact_active``), method ``"logged"``,
        confidence 1.

        Raises
        ------
        InvalidArgumentError
            The log holds no contact schedule.
        """
        if traj.contact_active is None:
            raise InvalidArgumentError(
                f"{traj.source}: the log holds no contact schedule (contact_active); infer one "
                "with wholebody.schedule.infer_contact_schedule"
            )
        return cls.from_active(
            traj.contact_names, traj.time, traj.contact_active.copy(), method="logged"
        )

    def save(self, path: Any) -> None:
        """Write an ``.npz``: ``time`` (N,), ``contact_names`` (k,) str, ``active`` (N, k)
        bool, ``confidence`` (N, k), ``unexplained`` (N,) bool, ``method`` (str), and
        ``evidence_<name>`` arrays. Raises :class:`OutputError` when it cannot be written."""
        assert self.unexplained is not None
        arrays = {
            "time": self.time,
            "contact_names": np.array(self.contact_names),
            "active": self.active,
            "confidence": self.confidence,
            "unexplained": self.unexplained,
            "method": np.array(self.method),
        }
        arrays |= {f"evidence_{k}": np.asarray(v) for k, v in self.evidence.items()}
        try:
            np.savez(path, **arrays)  # type: ignore[arg-type]
        except OSError as exc:
            raise OutputError(f"cannot write the schedule {str(path)!r}: {exc}") from exc

    @classmethod
    def load(cls, path: Any) -> ContactSchedule:
        """Read what :meth:`save` wrote (reasons and parameters are not kept)."""
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
            unexplained = data["unexplained"].astype(bool) if "unexplained" in data.files else None
            method = str(data["method"]) if "method" in data.files else "given"
            evidence = {
                f[len("evidence_") :]: data[f] for f in data.files if f.startswith("evidence_")
            }
            return cls(
                names, data["time"].astype(float), active, method, conf, evidence, unexplained
            )

    def column(self, name: str) -> Bools:
        """The active flags of one contact, shape (N,)."""
        try:
            return self.active[:, self.contact_names.index(name)]
        except ValueError:
            from ..errors import ContactNotFoundError

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
                f"schedules differ in shape: {self.active.shape} and {mask.shape}"
            )
        return float(np.mean(mask == self.active))

    def summary(self) -> str:
        """A few lines: method, share of time each contact is active, transitions, flags."""
        lines = [f"contact schedule ({self.method}, {len(self)} samples)"]
        for j, name in enumerate(self.contact_names):
            n_tr = int(np.count_nonzero(np.diff(self.active[:, j].astype(np.int8))))
            lines.append(
                f"  {name}: active {100 * self.active[:, j].mean():.1f} % of samples, "
                f"{n_tr} transitions, least confidence "
                f"{float(np.min(self.confidence[:, j], initial=1.0)):.2f}"
            )
        assert self.unexplained is not None
        if self.unexplained.any():
            lines.append(
                f"  {int(self.unexplained.sum())} samples no subset of the contacts "
                f"explains (first at t = {self.time[self.unexplained][0]:.3f} s)"
            )
        return "\n".join(lines)


# --- helpers ------------------------------------------------------------------------------


def ground_plane(ground_height: float, ground_normal: ArrayLike | None) -> tuple[Array, Array]:
    n = np.array([0.0, 0.0, 1.0]) if ground_normal is None else np.asarray(ground_normal, float)
    if n.shape != (3,) or not np.isfinite(n).all() or np.linalg.norm(n) == 0:
        raise InvalidArgumentError(f"ground_normal must be a non-zero (3,) vector, got {n}")
    n = n / np.linalg.norm(n)
    if not np.isfinite(ground_height):
        raise InvalidArgumentError(f"ground_height must be finite [m], got {ground_height}")
    return n, ground_height * n


def checked_states(
    robot: Robot, q: ArrayLike, v: ArrayLike, a: ArrayLike | None
) -> tuple[Array, Array, Array, Bools, dict[int, str]]:
    arrays: dict[str, Any] = {"q": q, "v": v}
    if a is not None:
        arrays["a"] = a
    checked, flagged, reasons = robot.check_batch(**arrays)
    Q, V = checked["q"], checked["v"]
    A = checked["a"] if a is not None else np.zeros_like(V)
    return Q, V, A, np.asarray(flagged, dtype=bool), reasons


def sample_times(time: ArrayLike | None, N: int) -> Array:
    if time is None:
        raise InvalidArgumentError(
            "time is needed (sample times [s], shape (N,)): minimum durations are in seconds"
        )
    t = np.asarray(time, dtype=float)
    if t.shape != (N,):
        raise InvalidArgumentError(f"time must have shape ({N},) [s]; got shape {t.shape}")
    finite = np.isfinite(t)
    steps = np.diff(t[finite])
    if not finite.any() or np.any(steps <= 0):
        where = "none is finite" if not finite.any() else "the finite stamps do not increase"
        raise InvalidArgumentError(f"time must increase [s]: {where}")
    if finite.all():
        return t
    # A stamp that is not finite: the sample keeps its place, its time is put between its
    # neighbours' (the durations need one) and the sample is named.
    bad = np.flatnonzero(~finite)
    warnings.warn(
        f"time stamps of samples {bad[:10].tolist()}{' ...' if bad.size > 10 else ''} are not "
        "finite: placed between their neighbours' for the minimum durations",
        StateWarning,
        stacklevel=3,
    )
    i, good = np.arange(N), np.flatnonzero(finite)
    dt = float(np.median(steps)) if steps.size else 1.0
    filled = np.interp(i, good, t[good])
    filled[: good[0]] = t[good[0]] - dt * (good[0] - i[: good[0]])
    filled[good[-1] + 1 :] = t[good[-1]] + dt * (i[good[-1] + 1 :] - good[-1])
    return filled


def contact_heights(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    contacts: Sequence[Contact],
    *,
    ground_height: float = 0.0,
    ground_normal: ArrayLike | None = None,
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
    Q, V, A, bad, _ = checked_states(robot, q, v, None)
    n, p0 = ground_plane(ground_height, ground_normal)
    N, k = Q.shape[0], len(contacts)
    frames = [c.frame for c in contacts]
    kin = kinematics_batch(robot, Q, V, A, frames, bad, rotations=True)
    assert kin.rotations is not None
    height = np.full((N, k), np.nan)
    speed = np.full((N, k), np.nan)
    for j, c in enumerate(contacts):
        if isinstance(c, SurfaceContact):
            corners = c.corners  # offset by the sole's centre
        else:
            corners = np.zeros((1, 3))
        offsets = np.einsum("nij,cj->nci", kin.rotations[:, j], corners)  # world axes
        h = (kin.positions[:, j, None, :] + offsets - p0) @ n  # (N, corners)
        low = np.nanargmin(np.where(np.isnan(h), np.inf, h), axis=1)
        height[:, j] = h[np.arange(N), low]
        for i in np.flatnonzero(~bad).tolist():
            twist = robot.frame_velocity(Q[i], V[i], c.frame)
            vel = twist[:3] + cross(twist[3:], offsets[i, low[i]])  # the lowest point's
            speed[i, j] = vel @ n
    height[bad] = np.nan
    return height, speed


def enforce_min_durations(
    active: ArrayLike, time: ArrayLike, *, min_contact: float, min_flight: float
) -> Bools:
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


def check_schedule_contacts(contacts: Sequence[Contact]) -> None:
    if not contacts:
        raise InvalidArgumentError("a contact schedule needs at least one candidate contact")
    names = [c.name for c in contacts]
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"contact names must be unique, got {names}")
