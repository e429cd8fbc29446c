"""What the diagnosis of a check keeps: the kinematics of at most
:data:`wholebody.diagnosis.MAX_SAMPLES` samples (the check's own pass when it kept them,
else a pass of their own) and the wrench rows its lag search reads, read chunk by chunk."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..balance.newton_euler import wrench_sum
from ..contacts import Contact
from ..diagnosis.core import MAX_LAG_SAMPLES
from ..robot.core import Robot
from ..trajectory import Trajectory
from .sources import Differentiation, Source, read_part

__all__: list[str] = []  # the engine's parts

Array = NDArray[np.float64]


class RowsOf:
    """Rows of an (N, k, 6) array known at some indices only: the wrench rows the
    diagnosis' lag search reads (``len`` is N; indexing by an array of known rows)."""

    def __init__(self, n: int, index: NDArray[np.intp], values: Array):
        self.n, self.index, self.values = n, index, values
        self.shape = (n,) + values.shape[1:]

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, rows: Any) -> Array:
        rows = np.asarray(rows)
        pos = np.minimum(np.searchsorted(self.index, rows), max(len(self.index) - 1, 0))
        if not len(self.index) or np.any(self.index[pos] != rows):
            raise IndexError("wrench rows beyond those kept for the diagnosis")
        return self.values[pos]


@dataclass
class Kept:
    wrenches: Array
    positions: Array
    rotations: Array
    joints: Array
    com: Array
    rate: Array
    ext: Array
    log_wrenches: RowsOf


@dataclass
class Placed:
    """The kinematics of the check's own pass, per sample of the log (NaN where it made
    none), kept for the diagnosis when it keeps every sample: CoM (N, 3), momentum rate at
    the CoM (N, 6), origins of the contact frames, the external wrenches' frames and the
    contacts' parent joints (N, k + e + k, 3), contact frame rotations (N, k, 3, 3); world
    axes, SI units."""

    com: Array
    rate: Array
    positions: Array
    rotations: Array

    @classmethod
    def empty(cls, n: int, k: int, e: int) -> Placed:
        nan = np.nan
        return cls(
            np.full((n, 3), nan),
            np.full((n, 6), nan),
            np.full((n, 2 * k + e, 3), nan),
            np.full((n, k, 3, 3), nan),
        )


def kept_samples(
    robot: Robot,
    source: Source,
    bounds: list[tuple[int, int]],
    contacts: list[Contact],
    parents: list[str],
    rows: NDArray[np.intp],
    bad: NDArray[np.bool_],
    diff: Differentiation | None,
    placed: Placed | None = None,
) -> Kept:
    """The kinematics of the samples the diagnosis keeps and the wrench rows within the lag
    search's reach (flagged samples' rows zeroed), read chunk by chunk. The kinematics are
    the check's own pass's (``placed``) when it kept them; else one more Pinocchio pass per
    kept sample, with the contacts' parent joints."""
    N, k = source.n, len(contacts)
    e = len(source.external_frames)
    reach = min(MAX_LAG_SAMPLES, N // 4) + 1
    frames = [c.frame for c in contacts] + list(source.external_frames) + parents
    S = len(rows)
    kept = Kept(
        np.empty((S, k, 6)),
        np.empty((S, k, 3)),
        np.empty((S, k, 3, 3)),
        np.empty((S, k, 3)),
        np.empty((S, 3)),
        np.empty((S, 6)),
        np.zeros((S, 6)),
        RowsOf(N, np.zeros(0, np.intp), np.zeros((0, k, 6))),
    )
    index_parts, value_parts = [], []
    for start, stop in bounds:
        sel = np.flatnonzero((rows >= start) & (rows < stop))
        if not len(sel):
            continue
        # Accelerations only for a pass of its own (the wrenches do not depend on them).
        part, off = read_part(source, start, stop, diff if placed is None else None, reach)
        lo = start - off
        local = rows[sel] - lo
        if placed is None:
            kin = kept_pass(robot, part, local, frames)
        else:
            at = rows[sel]
            kin = Placed(
                placed.com[at], placed.rate[at], placed.positions[at], placed.rotations[at]
            )
        kept.positions[sel] = kin.positions[:, :k]
        kept.rotations[sel] = kin.rotations[:, :k]
        kept.joints[sel] = kin.positions[:, k + e :]
        kept.com[sel] = kin.com
        kept.rate[sel] = kin.rate
        kept.wrenches[sel] = part.contact_wrenches[local]
        if part.external_wrenches is not None:
            kept.ext[sel] = np.concatenate(
                wrench_sum(part.external_wrenches[local], kin.positions[:, k : k + e], kin.com),
                axis=1,
            )
        near = np.unique(np.clip(rows[sel][:, None] + np.arange(-reach, reach + 1), 0, N - 1))
        values = part.contact_wrenches[near - lo].copy()
        values[bad[near]] = 0.0
        index_parts.append(near)
        value_parts.append(values)
    if index_parts:
        index = np.concatenate(index_parts)
        index, first = np.unique(index, return_index=True)
        kept.log_wrenches = RowsOf(N, index, np.concatenate(value_parts)[first])
    return kept


def kept_pass(robot: Robot, part: Trajectory, local: NDArray[np.intp], frames: list[str]) -> Placed:
    """One Pinocchio pass per sample ``local`` of ``part`` (samples the check passed; checked
    again for the renormalised ``q``): the kinematics of :class:`Placed`."""
    from ..balance import kinematics_batch  # for a log longer than the check's kept pass

    q, v, a, _ = part.for_robot(robot)
    assert a is not None  # read with accelerations
    arrays, _, _ = robot.check_batch(q=q[local], v=v[local], a=a[local])
    kin = kinematics_batch(
        robot,
        arrays["q"],
        arrays["v"],
        arrays["a"],
        frames,
        np.zeros(len(local), bool),
        rotations=True,
    )
    assert kin.rotations is not None
    return Placed(kin.com, kin.momentum_rate, kin.positions, kin.rotations)


def link_motion_at(
    robot: Robot,
    source: Source,
    bounds: list[tuple[int, int]],
    rows: NDArray[np.intp],
    diff: Differentiation | None,
) -> Any:
    """The motion of the links without ``<inertial>`` at ``rows`` (None when there are none)."""
    from ._links import link_motion  # a diagnosis' cause only

    names = robot.links_without_inertia  # read when the URDF was loaded
    if not names or not len(rows):
        return None

    def read(start: int, stop: int) -> tuple[Array, Array, Array, int]:
        part, off = read_part(source, start, stop, diff)
        q, v, a, _ = part.for_robot(robot)
        assert a is not None  # read with accelerations (read_part)
        return q, v, a, off

    return link_motion(robot, read, bounds, rows, names)


def kept_smoothing(smoothing: int, n: int, kept: int) -> int:
    """The bias test's averaging window in samples, in the diagnosis' kept samples (spread
    evenly over the log), at most an eighth of them."""
    if smoothing <= 1 or kept < 16:
        return 1
    return int(max(1, min(round(smoothing * kept / max(n, 1)), kept // 8)))
