"""Aligned arrays -> Trajectory, shared by the bag and the dataset readers: the base pose and
twist in wholebody's convention, wrenches converted once (:mod:`.wrenches`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import FrameNotFoundError, InvalidArgumentError, ProfileError, RecordingError
from ...robot.core import Robot
from ...spatial import shift_moment
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
    are summed at its frame's origin, world axes; external ones (a push) at their frame's.
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
    externals: dict[str, Array] = {}
    q_robot: Array | None = None

    def configurations(what: str) -> Array:
        nonlocal q_robot
        if robot is None:
            raise InvalidArgumentError(f"{what}; this needs the robot: pass robot= (or a profile)")
        if q_robot is None:
            q_robot = traj.for_robot(robot)[0]
        return q_robot

    for w in wrenches:
        spec = w.spec
        target = spec.external or _contact_frame(spec, contact_frames)
        if spec.axes == "world":
            W = w.values
            stated = spec.contact_frame
            if stated is not None and stated != target:  # moment about another origin
                qr = configurations(
                    f"{spec.source}: the wrench is stated about frame {stated!r}'s origin and "
                    f"is moved to contact frame {target!r}'s"
                )
                W = _moved(robot, qr, W, stated, target, spec.source)
        else:
            qr = configurations(
                f"{spec.source}: the wrench is in sensor frame {w.frame!r}; converting it to "
                "world axes at the contact"
            )
            assert robot is not None
            W = wrench_at_contact_in_world(
                robot, qr, w.values, str(w.frame), target, name=spec.source
            )
        into = externals if spec.external else sums
        key = spec.external or spec.contact
        into[key] = into[key] + W if key in into else W
    if sums or externals:
        traj = Trajectory.from_arrays(
            time,
            q,
            v,
            joint_names=joint_names,
            contact_wrenches=sums,
            tau=tau,
            metadata=metadata,
            external_wrenches=externals or None,
        )
    return replace(traj, source=source)


def _contact_frame(spec: WrenchSource, contact_frames: Mapping[str, str]) -> str:
    """The frame at whose origin a contact's wrench is stored: the profile contact's frame;
    a ``contact_frame`` that contradicts it with sensor axes is refused (the checks would
    read the wrench at the profile's frame)."""
    profile = contact_frames.get(spec.contact)
    if profile is None:
        return spec.contact_frame or spec.contact
    if spec.axes == "sensor" and spec.contact_frame not in (None, profile):
        raise ProfileError(
            f"{spec.source}: contact_frame {spec.contact_frame!r} is not the frame {profile!r} "
            f"of contact {spec.contact!r} in the profile; the wrench is converted to the "
            "contact's frame: remove contact_frame, or use axes = 'world' for a wrench stated "
            "about another frame's origin"
        )
    return profile


def _moved(robot: Robot | None, q: Array, W: Array, stated: str, target: str, name: str) -> Array:
    """World-axes wrenches about ``stated``'s origin, moved to ``target``'s origin."""
    assert robot is not None
    try:
        positions, _ = robot.placements(q, [stated, target])[:2]
    except FrameNotFoundError as exc:
        raise RecordingError(f"{name}: {exc}", name) from exc
    f = W[:, :3]
    return np.concatenate([f, shift_moment(f, W[:, 3:], positions[:, 0], positions[:, 1])], 1)
