"""An independent reference for sole wrench cones: exact membership by linear programming.

A wrench on a rectangular sole is in its contact wrench cone if and only if four forces at the
rectangle's corners, each in its friction pyramid ``|f_x|, |f_y| <= mu f_z``, make it. This is
a feasibility LP (HiGHS through SciPy), written from the definition, with no code from
wholebody.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog


def skew(d) -> np.ndarray:
    """The matrix of ``d x .``."""
    return np.array([[0, -d[2], d[1]], [d[2], 0, -d[0]], [-d[1], d[0], 0]])


def corner_lp_member(w_origin, X: float, Y: float, mu: float, center=(0.0, 0.0)) -> bool:
    """Is the wrench ``(f, tau)`` (contact frame axes, moment about the frame origin) made by
    four forces at the corners ``center +- (X, Y)``, each with ``|f_x|, |f_y| <= mu f_z``?"""
    A_eq, A_ub = np.zeros((6, 12)), []
    cx, cy = center
    for i, (sx, sy) in enumerate([(1, 1), (-1, 1), (-1, -1), (1, -1)]):
        cols = slice(3 * i, 3 * i + 3)
        A_eq[:3, cols] = np.eye(3)
        A_eq[3:, cols] = skew([cx + sx * X, cy + sy * Y, 0.0])
        for row in ([1, 0, -mu], [-1, 0, -mu], [0, 1, -mu], [0, -1, -mu]):
            r = np.zeros(12)
            r[cols] = row
            A_ub.append(r)
    res = linprog(
        np.zeros(12),
        A_ub=np.array(A_ub),
        b_ub=np.zeros(16),
        A_eq=A_eq,
        b_eq=w_origin,
        bounds=[(None, None)] * 12,
        method="highs",
    )
    return res.status == 0
