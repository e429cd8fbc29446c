"""Time alignment of streams with their own stamps: linear interpolation (slerp for
quaternions) onto one time base, refusing extrapolation beyond a tolerance.

Stamps are integer nanoseconds while they are compared and sorted, and become float seconds
from the recording's time origin (the first sample of the time base) only at the end, so a
stamp of 1.7e9 s loses no precision (float64 seconds since 1970 resolve only ~0.2 us).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...errors import ExtrapolationError, RecordingError

__all__ = [
    "TopicTimes",
    "interpolate_linear",
    "interpolate_quaternions",
    "check_coverage",
    "gap_mask",
    "differentiate",
    "base_twist_from_poses",
]

Array = NDArray[np.float64]
Ints = NDArray[np.int64]


@dataclass(frozen=True)
class TopicTimes:
    """The raw stamps of one topic (or column stream), kept so a lag can be estimated.

    Attributes
    ----------
    topic : str
        The topic.
    field : str
        What it was mapped to (``"joint_states"``, ``"base_pose"``, ``"wrench:left_sole"``).
    header : ndarray, shape (n,)
        Header stamps [s from the time origin], in arrival order; NaN where unset (zero).
    receive : ndarray, shape (n,)
        Receive (bag) times [s from the time origin], in arrival order.
    used : {"header", "receive"}
        Which of the two the topic was aligned by.
    """

    topic: str
    field: str
    header: Array
    receive: Array
    used: str

    @property
    def times(self) -> Array:
        """The stamps the topic was aligned by, sorted [s from the time origin]."""
        return np.sort(self.header if self.used == "header" else self.receive)

    def receive_delay(self) -> float:
        """Median of receive time minus header stamp [s] (NaN without header stamps): the
        transport and processing delay of the topic."""
        d = self.receive - self.header
        d = d[np.isfinite(d)]
        return float(np.median(d)) if d.size else float("nan")

    def summary(self) -> dict[str, object]:
        """A JSON-ready summary: count, first and last stamp, median period, receive delay
        [s]."""
        t = self.times
        return {
            "field": self.field,
            "stamps": self.used,
            "count": int(t.size),
            "first": float(t[0]),
            "last": float(t[-1]),
            "median_period": float(np.median(np.diff(t))) if t.size > 1 else float("nan"),
            "receive_delay": self.receive_delay(),
        }


def sorted_stream(stamps_ns: Ints, values: Array, topic: str) -> tuple[Ints, Array]:
    """Sort a stream by stamp; repeated stamps are an error naming the topic."""
    order = np.argsort(stamps_ns, kind="stable")
    s, x = stamps_ns[order], values[order]
    dup = np.flatnonzero(np.diff(s) == 0)
    if dup.size:
        raise RecordingError(
            f"topic {topic!r}: {dup.size} repeated stamp(s) (first at sample {int(dup[0]) + 1} "
            f"of the sorted stream); stamps must be distinct to interpolate (try stamps = "
            "'receive')",
            topic,
        )
    return s, x


def _bracket(t_src: Array, t: Array) -> tuple[NDArray[np.intp], Array]:
    """Index i and weight w with t = (1 - w) t_src[i] + w t_src[i + 1], clamped to the ends."""
    n = t_src.size
    if n == 1:
        return np.zeros(t.size, dtype=np.intp), np.zeros(t.size)
    i = np.clip(np.searchsorted(t_src, t, side="right") - 1, 0, n - 2)
    w = (t - t_src[i]) / (t_src[i + 1] - t_src[i])
    return i, np.clip(w, 0.0, 1.0)


def interpolate_linear(t_src: Array, x: Array, t: Array) -> Array:
    """Linear interpolation of rows, exact at the source stamps.

    Parameters
    ----------
    t_src : ndarray, shape (n,)
        Increasing source times [s].
    x : ndarray, shape (n, ...)
        Values at ``t_src``.
    t : ndarray, shape (N,)
        Times to evaluate at; outside ``t_src`` the end value is held (check the coverage
        first with :func:`check_coverage`).

    Returns
    -------
    ndarray, shape (N, ...)
    """
    i, w = _bracket(t_src, t)
    if t_src.size == 1:
        return np.repeat(x[:1], t.size, axis=0)
    w = w.reshape((-1,) + (1,) * (x.ndim - 1))
    # At w = 0 (a source stamp) this is x[i] exactly; at w = 1, x[i + 1].
    return np.asarray((1.0 - w) * x[i] + w * x[i + 1])


def interpolate_quaternions(t_src: Array, quat: Array, t: Array) -> Array:
    """Spherical linear interpolation of unit quaternions (any component order), exact at the
    source stamps; ``q`` and ``-q`` are the same rotation, so each source sample is first
    put on the hemisphere of the one before.

    Parameters
    ----------
    t_src : ndarray, shape (n,)
        Increasing source times [s].
    quat : ndarray, shape (n, 4)
        Unit quaternions.
    t : ndarray, shape (N,)
        Times to evaluate at (end values held outside ``t_src``).

    Returns
    -------
    ndarray, shape (N, 4)
        Unit quaternions, same component order.
    """
    Q = np.array(quat, dtype=float)
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    if Q.shape[0] == 1:
        return np.repeat(Q, t.size, axis=0)
    flip = np.cumsum(np.einsum("ij,ij->i", Q[1:], Q[:-1]) < 0) % 2 == 1
    Q[1:][flip] *= -1.0
    i, w = _bracket(t_src, t)
    q0, q1 = Q[i], Q[i + 1]
    cos = np.clip(np.einsum("ij,ij->i", q0, q1), -1.0, 1.0)
    angle = np.arccos(cos)
    sin = np.sin(angle)
    small = sin < 1e-9
    safe = np.where(small, 1.0, sin)
    a = np.where(small, 1.0 - w, np.sin((1.0 - w) * angle) / safe)
    b = np.where(small, w, np.sin(w * angle) / safe)
    out = a[:, None] * q0 + b[:, None] * q1
    exact0, exact1 = w == 0.0, w == 1.0
    out[exact0], out[exact1] = q0[exact0], q1[exact1]
    out[~(exact0 | exact1)] /= np.linalg.norm(out[~(exact0 | exact1)], axis=1, keepdims=True)
    return out


def gap_mask(t_src: Array, t: Array, max_gap: float | None) -> tuple[NDArray[np.bool_], float]:
    """Which of the times ``t`` fall strictly inside a gap of the source stamps longer than
    ``max_gap`` [s] (interpolation across it would make up the values), and the longest gap
    [s] of ``t_src``. ``max_gap`` None: 5 times the source's median period.

    Times at a source stamp, and times held at an end (within the coverage tolerance), are
    never in a gap.
    """
    if t_src.size < 2:
        return np.zeros(t.size, dtype=bool), 0.0
    steps = np.diff(t_src)
    limit = 5.0 * float(np.median(steps)) if max_gap is None else max_gap
    i, w = _bracket(t_src, t)
    mask = (steps[i] > limit) & (w > 0.0) & (w < 1.0)
    return mask, float(steps.max())


def check_coverage(name: str, t_src: Array, t: Array, tolerance: float, hint: str = "") -> None:
    """Raise :class:`~wholebody.errors.ExtrapolationError` naming the topic when ``t`` reaches
    more than ``tolerance`` [s] before ``t_src[0]`` or after ``t_src[-1]``."""
    lo, hi = float(t_src[0]), float(t_src[-1])
    first, last = float(t[0]), float(t[-1])
    if first < lo - tolerance or last > hi + tolerance:
        side = (
            f"starts {lo - first:.6g} s after the time base"
            if first < lo - tolerance
            else f"ends {last - hi:.6g} s before the time base"
        )
        raise ExtrapolationError(
            f"topic {name!r} {side} (it covers [{lo:.6g}, {hi:.6g}] s, the time base "
            f"[{first:.6g}, {last:.6g}] s, tolerance {tolerance:g} s): it would be "
            f"extrapolated{hint}",
            name,
            covered=(lo, hi),
            requested=(first, last),
        )


def differentiate(t: Array, x: Array) -> Array:
    """Time derivative of rows by central differences (one-sided at the ends), for uneven
    steps: ``np.gradient`` with second-order accuracy inside.

    Parameters
    ----------
    t : ndarray, shape (N,)
        Increasing times [s], N >= 2.
    x : ndarray, shape (N, k)

    Returns
    -------
    ndarray, shape (N, k)
    """
    if t.size < 2:
        return np.zeros_like(x)
    return np.asarray(np.gradient(x, t, axis=0))


def _rotation_xyzw(quat: Array) -> Array:
    x, y, z, w = (quat[:, k] for k in range(4))
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
            np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
            np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=1,
    )


def rotations_xyzw(quat: Array) -> Array:
    """World-from-base rotation matrices, shape (N, 3, 3), of unit quaternions x-y-z-w."""
    Q = np.asarray(quat, dtype=float)
    return _rotation_xyzw(Q / np.linalg.norm(Q, axis=1, keepdims=True))


def base_twist_from_poses(t: Array, position: Array, quat_xyzw: Array) -> Array:
    """Base twist in the base frame from sampled poses, by finite differences.

    The linear part is ``R^T dp/dt`` (central differences of the origin, world axes); the
    angular part is the body rate: the rotation vector of ``R_i^T R_{i+1}`` over the step,
    averaged over the two steps around a sample (one-sided at the ends).

    Parameters
    ----------
    t : ndarray, shape (N,)
        Times [s].
    position : ndarray, shape (N, 3)
        Base origin, world coordinates [m].
    quat_xyzw : ndarray, shape (N, 4)
        Base orientation.

    Returns
    -------
    ndarray, shape (N, 6)
        ``(v, omega)`` in base axes [m/s, rad/s].
    """
    R = rotations_xyzw(quat_xyzw)
    v_lin = np.einsum("nji,nj->ni", R, differentiate(t, position))
    if t.size < 2:
        return np.concatenate([v_lin, np.zeros_like(v_lin)], axis=1)
    from scipy.spatial.transform import Rotation

    rel = np.einsum("nji,njk->nik", R[:-1], R[1:])
    # Steps touching a NaN pose (a gap in the stamps) stay NaN: flagged, not made up.
    finite = np.isfinite(rel).all(axis=(1, 2))
    step = np.full((t.size - 1, 3), np.nan)
    if finite.any():
        step[finite] = Rotation.from_matrix(rel[finite]).as_rotvec() / np.diff(t)[finite, None]
    omega = np.empty_like(v_lin)
    omega[0], omega[-1] = step[0], step[-1]
    omega[1:-1] = 0.5 * (step[:-1] + step[1:])
    return np.concatenate([v_lin, omega], axis=1)
