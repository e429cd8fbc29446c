"""The motion of a model's links without ``<inertial>`` at the diagnosis' samples (for the
cause that gives them the mass a simulator does). Private to the check engine."""

from __future__ import annotations

from typing import Any

import numpy as np
import pinocchio as pin
from numpy.typing import NDArray

from ..diagnosis.causes_artefacts import LinkMotion
from ..robot import Robot
from ..robot.batch import frame_motions_rows

__all__ = ["link_motion"]


def link_motion(
    robot: Robot,
    read: Any,
    bounds: list[tuple[int, int]],
    rows: NDArray[np.intp],
    names: list[str],
) -> LinkMotion:
    """Positions and classical accelerations (world [m], [m/s^2]) of the link frames
    ``names`` at log rows ``rows``; ``read(start, stop)`` returns (q, v, a, offset) of a
    chunk in the robot's layout, ``offset`` the index of ``start`` in them."""
    S, m = len(rows), len(names)
    pos = np.full((S, m, 3), np.nan)
    acc = np.full((S, m, 3), np.nan)
    model = robot.model
    ids = [model.getFrameId(n, pin.FrameType.BODY) for n in names]
    for start, stop in bounds:
        sel = np.flatnonzero((rows >= start) & (rows < stop))
        if not len(sel):
            continue
        q, v, a, off = read(start, stop)
        at = rows[sel] - start + off
        ok = np.isfinite(q[at]).all(axis=1) & np.isfinite(v[at]).all(axis=1)
        ok &= np.isfinite(a[at]).all(axis=1)
        sel, at = sel[ok], at[ok]
        pos[sel], acc[sel] = frame_motions_rows(robot, q[at], v[at], a[at], ids)
    return LinkMotion(list(names), pos, acc)
