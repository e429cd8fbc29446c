"""The kinematics of a batch (one Pinocchio pass per sample) and the helpers the balance
functions share to place wrenches; :mod:`wholebody.balance` re-exports the public names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..contacts import Contact
from ..errors import InvalidArgumentError
from ..robot.batch import centroidal_frames_rows
from ..robot.core import Robot
from .newton_euler import ExternalWrench

Array = NDArray[np.float64]


def _batch_points(
    contacts: Sequence[Contact], ext: list[ExternalWrench], positions: Array
) -> Array:
    """Points of the batch layout (N, k + e, 3): contact origins, then external points."""
    k = len(contacts)
    parts, placed = [positions[:, :k]], k
    for e in ext:
        if e.point is None:
            parts.append(positions[:, placed : placed + 1])
            placed += 1
        else:
            parts.append(e.point[:, None])
    return np.concatenate(parts, axis=1)


@dataclass(frozen=True)
class KinematicsBatch:
    """What the Pinocchio pass gives per sample (NaN on skipped rows).

    Shapes: ``com`` (N, 3), ``momentum_rate`` (N, 6) ``(dP/dt, dL_G/dt)``, ``positions``
    (N, k, 3) frame origins, ``rotations`` (N, k, 3, 3) or None. World axes, SI units.
    """

    com: Array
    momentum_rate: Array
    positions: Array
    rotations: Array | None


def kinematics_batch(
    robot: Robot,
    Q: Array,
    V: Array,
    A: Array,
    frames: Sequence[str],
    skip: NDArray[np.bool_],
    *,
    rotations: bool = False,
    progress: bool = False,
) -> KinematicsBatch:
    """CoM, momentum rate and frame placements of the samples not in ``skip``, one Pinocchio
    pass each (:func:`wholebody.robot.batch.centroidal_frames_rows`), NaN on the others.

    Parameters
    ----------
    Q : ndarray, shape (N, nq)
    V, A : ndarrays, shape (N, nv)
        Checked states (see :meth:`Robot.check_batch`).
    frames : sequence of str
        Frames whose origins (and orientations, with ``rotations``) to place.
    skip : ndarray of bool, shape (N,)
        Samples to leave NaN.
    """
    N = Q.shape[0]
    frame_ids = [robot.frame_id(f) for f in frames]
    com = np.full((N, 3), np.nan)
    rate = np.full((N, 6), np.nan)
    positions = np.full((N, len(frames), 3), np.nan)
    rots = np.full((N, len(frames), 3, 3), np.nan) if rotations else None
    rows: Any = np.flatnonzero(~skip).tolist()
    if progress:
        from ..parallel import progress_bar

        rows = progress_bar(rows, desc="checking", total=len(rows))
    centroidal_frames_rows(robot, Q, V, A, rows, frame_ids, com, rate, positions, rots)
    return KinematicsBatch(com, rate, positions, rots)


def _resolve_point(at: str | ArrayLike, com: Array) -> Array:
    if isinstance(at, str):
        if at == "com":
            return com
        if at == "origin":
            return np.zeros_like(com)
        raise InvalidArgumentError(
            f"at must be 'com', 'origin' or a point of shape (3,), got {at!r}"
        )
    try:
        p = np.asarray(at, dtype=float)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"at must be 'com', 'origin' or a point of shape (3,), got {type(at).__name__} {at!r}"
        ) from None
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise InvalidArgumentError(f"at must be a finite point of shape (3,) [m], got {at!r}")
    return p
