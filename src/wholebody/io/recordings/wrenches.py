"""The one place where a recorded wrench becomes wholebody's contact wrench: from the sensor
frame's axes, about its origin, to world axes at the contact frame's origin.

.. math::

    f_W = R_{WS} f_S, \\qquad
    \\tau_W(C) = R_{WS} \\tau_S + (p_S - p_C) \\times f_W

with ``R_WS`` the world-from-sensor rotation, ``p_S`` and ``p_C`` the sensor and contact
frame origins in world coordinates, from the robot's frame placements at each sample's ``q``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ...errors import FrameNotFoundError, RecordingError
from ...robot.core import Robot
from ...spatial import shift_moment

__all__ = ["wrench_at_contact_in_world"]

Array = NDArray[np.float64]


def wrench_at_contact_in_world(
    robot: Robot,
    q: Array,
    wrench_sensor: Array,
    sensor_frame: str,
    contact_frame: str,
    *,
    name: str = "",
) -> Array:
    """Wrenches measured in a sensor frame, as world-axes wrenches at a contact frame's origin.

    Parameters
    ----------
    robot : Robot
        Floating-base robot holding both frames.
    q : ndarray, shape (N, nq)
        Configurations in the robot's joint order (base quaternion x-y-z-w).
    wrench_sensor : ndarray, shape (N, 6)
        ``(f, tau)`` in the sensor frame's axes, moment about the sensor frame's origin
        [N, N m]: the wrench the environment applies to the robot.
    sensor_frame, contact_frame : str
        Robot frame names.
    name : str
        The topic or column, for messages.

    Returns
    -------
    ndarray, shape (N, 6)
        ``(f, tau)`` in world axes, moment about the contact frame's origin [N, N m].

    Raises
    ------
    RecordingError
        A frame the robot lacks (the message names the topic and lists close frames).
    """
    try:
        positions, rotations = robot.placements(q, [sensor_frame, contact_frame])[:2]
    except FrameNotFoundError as exc:
        raise RecordingError(f"{name or 'wrench'}: {exc}", name) from exc
    R_ws = rotations[:, 0]
    W = np.asarray(wrench_sensor, dtype=float)
    f = np.einsum("nij,nj->ni", R_ws, W[:, :3])
    tau = np.einsum("nij,nj->ni", R_ws, W[:, 3:])
    # Varignon: from the sensor origin to the contact origin.
    return np.concatenate([f, shift_moment(f, tau, positions[:, 0], positions[:, 1])], axis=1)
