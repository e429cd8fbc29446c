"""The Newton-Euler residual and Varignon's sum, component by component: the one place the
formula is written.

Every component is either a Python float (one sample: the single-sample calls of
:mod:`wholebody.balance` run it with no array machinery) or an array of one common shape (a
batch: :func:`wholebody.balance.newton_euler.newton_euler_residual_arrays` passes columns of shape
(N,)). The same arithmetic, in the same order, serves both, so one sample gives the same
numbers either way.

.. math::

    f_r = \\sum_i f_i + m g - \\dot P, \\qquad
    \\tau_r(A) = \\sum_i \\left(\\tau_i + (p_i - p_A) \\times f_i\\right)
               - \\dot L_G + (p_G - p_A) \\times (m g - \\dot P)
"""

from __future__ import annotations

from typing import Any

__all__ = ["wrench_sum_parts", "residual_parts"]


def wrench_sum_parts(wrenches: Any, points: Any, at: Any) -> tuple[Any, ...] | None:
    """Varignon's sum, component by component: the one place it is written.

    ``wrenches`` is a sequence of k 6-sequences ``(f, tau)``, ``points`` of k 3-sequences,
    ``at`` a 3-sequence. Every component is either a Python float (one sample: no array
    machinery at all) or an array of one common shape (a batch, e.g. (N,)): the same
    arithmetic, in the same order, serves both. Returns ``(f_x, f_y, f_z, tau_x, tau_y,
    tau_z)``, the total force and the moment about ``at``; None when k = 0.
    """
    ax, ay, az = at
    first, fx, fy, fz, tx, ty, tz = True, *((None,) * 6)
    for (f1, f2, f3, t1, t2, t3), (p1, p2, p3) in zip(wrenches, points, strict=True):
        l1, l2, l3 = p1 - ax, p2 - ay, p3 - az  # lever arm p_i - p_A
        m1 = t1 + (l2 * f3 - l3 * f2)  # tau_i + (p_i - p_A) x f_i
        m2 = t2 + (l3 * f1 - l1 * f3)
        m3 = t3 + (l1 * f2 - l2 * f1)
        if first:  # new objects only (never += : batch components are views of the input)
            first, fx, fy, fz, tx, ty, tz = False, f1, f2, f3, m1, m2, m3
        else:
            fx, fy, fz = fx + f1, fy + f2, fz + f3
            tx, ty, tz = tx + m1, ty + m2, tz + m3
    return None if first else (fx, fy, fz, tx, ty, tz)


def residual_parts(
    wrenches: Any, points: Any, com: Any, rate: Any, mg: Any, at: Any | None
) -> tuple[tuple[Any, Any, Any], tuple[Any, Any, Any]]:
    """The Newton-Euler residual, component by component: the one place it is written.

    Components as in :func:`wrench_sum_parts` (floats for one sample, arrays for a batch);
    ``rate`` is the 6 components of ``(dP/dt, dL_G/dt)``, ``mg`` the 3 of ``m g``, ``at``
    None for the CoM. Returns the force and moment components of ``w_c + w_gi`` about ``at``.
    """
    about = com if at is None else at
    parts = wrench_sum_parts(wrenches, points, about)
    if parts is None:
        parts = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    fx, fy, fz, tx, ty, tz = parts
    g1, g2, g3 = mg[0] - rate[0], mg[1] - rate[1], mg[2] - rate[2]  # f_gi = m g - dP/dt
    force = (fx + g1, fy + g2, fz + g3)
    if at is None:
        return force, (tx - rate[3], ty - rate[4], tz - rate[5])
    l1, l2, l3 = com[0] - at[0], com[1] - at[1], com[2] - at[2]  # p_G - p_A
    return force, (
        tx + (l2 * g3 - l3 * g2) - rate[3],
        ty + (l3 * g1 - l1 * g3) - rate[4],
        tz + (l1 * g2 - l2 * g1) - rate[5],
    )
