"""Joint reaction wrenches (seed 000): what each joint transmits from parent to child.

The net joint force and moment of biomechanics, computed by the recursive Newton-Euler
algorithm with the contact and other known wrenches acting on their frames' bodies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..contacts import Contact
from ..robot.core import Robot
from ..spatial import Wrench
from .newton_euler import check_sample_wrenches, stack_contact_wrenches

__all__ = ["joint_reaction_wrenches"]


def joint_reaction_wrenches(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    contacts: Sequence[Contact] = (),
    wrenches: Any = (),
    *,
    external_wrenches: Mapping[str, Any] | None = None,
) -> dict[str, Wrench]:
    """The wrench each joint transmits from its parent to its child subtree (seed 000).

    Includes what the actuator and the joint structure carry together (the net joint force
    and moment of biomechanics). With a floating base, the entry ``"root_joint"`` is what the
    world would have to apply to the base: zero for consistent contact wrenches.

    Parameters
    ----------
    contacts, wrenches
        Contact wrenches, world axes at the contact frame origins (as in
        :func:`newton_euler_residual`).
    external_wrenches : mapping of frame name to wrench, optional
        Other known wrenches on the robot, world axes at the frame origin ((6,) or (3,)), or
        :class:`Wrench` values (moved to the frame origin).

    Returns
    -------
    dict of str to Wrench
        Joint name -> wrench in world axes about the joint centre [N, N m].
    """
    ext: dict[str, Any] = dict(external_wrenches or {})
    if contacts:
        W = stack_contact_wrenches(contacts, wrenches, 1)[0]
        check_sample_wrenches(W, "contact wrenches", robot.weight)
        col = 0
        for c in contacts:
            w = W[col : col + c.size]
            col += c.size
            w6 = np.r_[w, np.zeros(3)] if c.size == 3 else w
            if c.frame in ext:
                ext[c.frame] = np.asarray(ext[c.frame], dtype=float) + w6
            else:
                ext[c.frame] = w6
    values, centres = robot.joint_wrenches(q, v, a, ext)
    names = [robot.model.names[j] for j in range(1, robot.model.njoints)]
    return {n: Wrench(w[:3], w[3:], p) for n, w, p in zip(names, values, centres)}
