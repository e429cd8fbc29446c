"""Aligned arrays -> Trajectory, shared by the bag and the dataset readers: the base pose and
twist in wholebody's convention, wrenches converted once (:mod:`.wrenches`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import InvalidArgumentError
from ...robot.core import Robot
from ...trajectory import Trajectory
from .mapping import WrenchSource
from .timing import rotations_xyzw
from .wrenches import wrench_at_contact_in_world

Array = NDArray[np.float64]


@dataclass
class AlignedWrench:
    """One wrench stream on the time base, before conversion."""

    spec: WrenchSource
    values: Array  # (N, 6): sensor axes about the sensor origin, or world at the contact
    frame: str | None  # the sensor frame (None with axes = "world")


def twist_in_base(twist: Array, quat_xyzw: Array, axes: str) -> Array:
    """A base twist ``(v, omega)`` (N, 6) in ``axes`` ("base" or "world"), in base axes: the
    one conversion, ``x_B = R_WB^T x_W``."""
    if axes == "base":
        return np.asarray(twist, dtype=float)
    R = rotations_xyzw(quat_xyzw)
    lin = np.einsum("nji,nj->ni", R, twist[:, :3])
    ang = np.einsum("nji,nj->ni", R, twist[:, 3:])
    return np.concatenate([lin, ang], axis=1)


def contact_frames_of(profile: Any) -> dict[str, str]:
    """Contact name -> frame from a profile's ``contacts`` (empty without one)."""
    return {c.name: c.frame for c in getattr(profile, "contacts", ())}


def assemble(
    time: Array,
    joint_names: Sequence[str],
    qj: Array,
    vj: Array,
    tau: Array | None,
    base: tuple[Array, Array, Array] | None,
    wrenches: Sequence[AlignedWrench],
    *,
    robot: Robot | None,
    contact_frames: Mapping[str, str],
    metadata: dict[str, Any],
    source: str,
) -> Trajectory:
    """The Trajectory of aligned arrays.

    ``base`` is (position (N, 3) world [m], quaternion x-y-z-w (N, 4), twist (N, 6) in base
    axes) or None (identity pose, zero twist, noted in the metadata). Wrenches of one contact
    are summed at its frame's origin, world axes.
    """
    N = time.shape[0]
    if base is None:
        pos, quat, twist = np.zeros((N, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (N, 1)), np.zeros((N, 6))
        metadata["base"] = "not recorded: identity pose and zero twist"
    else:
        pos, quat, twist = base
    q = np.concatenate([pos, quat, qj], axis=1)
    v = np.concatenate([twist, vj], axis=1)
    traj = Trajectory.from_arrays(
        time, q, v, joint_names=joint_names, contact_wrenches={}, tau=tau, metadata=metadata
    )
    sums: dict[str, Array] = {}
    q_robot: Array | None = None
    for w in wrenches:
        if w.spec.axes == "world":
            W = w.values
        else:
            if robot is None:
                raise InvalidArgumentError(
                    f"{w.spec.source}: the wrench is in sensor frame {w.frame!r}; converting it "
                    "to world axes at the contact needs the robot: pass robot= (or a profile)"
                )
            if q_robot is None:
                q_robot = traj.for_robot(robot)[0]
            contact_frame = w.spec.contact_frame or contact_frames.get(
                w.spec.contact, w.spec.contact
            )
            W = wrench_at_contact_in_world(
                robot, q_robot, w.values, str(w.frame), contact_frame, name=w.spec.source
            )
        sums[w.spec.contact] = sums[w.spec.contact] + W if w.spec.contact in sums else W
    if sums:
        traj = Trajectory.from_arrays(
            time,
            q,
            v,
            joint_names=joint_names,
            contact_wrenches=sums,
            tau=tau,
            metadata=metadata,
        )
    return replace(traj, source=source)
