"""The motion of a model's links without ``<inertial>`` at the diagnosis' samples (for the
cause that gives them the mass a simulator does). Private to the check engine."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
from numpy.typing import NDArray

from ..diagnosis.causes_artefacts import LinkMotion
from ..robot import Robot
from ..robot.model_warnings import links_without_inertia

__all__ = ["inertialess_links", "link_motion"]


def inertialess_links(robot: Robot) -> list[str]:
    """The robot's links (Pinocchio body frames) that its URDF leaves without ``<inertial>``,
    its root excluded (empty when the model did not come from a readable URDF file)."""
    source = getattr(robot, "source", None)
    if not source or not str(source).endswith(".urdf"):
        return []
    try:
        root = ET.parse(Path(source)).getroot()
    except (OSError, ET.ParseError):
        return []
    children = {
        str(c.get("link")) for j in root.findall("joint") if (c := j.find("child")) is not None
    }
    model = robot.model
    return [
        n
        for n in links_without_inertia(root)
        if n in children and model.existFrame(n, pin.FrameType.BODY)
    ]


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
    model, data = robot.model, robot.model.createData()
    ids = [model.getFrameId(n, pin.FrameType.BODY) for n in names]
    frame = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    for start, stop in bounds:
        sel = np.flatnonzero((rows >= start) & (rows < stop))
        if not len(sel):
            continue
        q, v, a, off = read(start, stop)
        for s in sel:
            i = int(rows[s] - start + off)
            if not (
                np.isfinite(q[i]).all() and np.isfinite(v[i]).all() and np.isfinite(a[i]).all()
            ):
                continue
            pin.forwardKinematics(model, data, q[i], v[i], a[i])
            for c, fid in enumerate(ids):
                pin.updateFramePlacement(model, data, fid)
                pos[s, c] = data.oMf[fid].translation
                acc[s, c] = pin.getFrameClassicalAcceleration(model, data, fid, frame).linear
    return LinkMotion(list(names), pos, acc)
