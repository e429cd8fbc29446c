"""Friction cones: exact checks with margins, linear face matrices and generators for QPs.

Conventions: a face matrix ``A`` describes a cone as ``A x <= 0``. For a point contact ``x``
is a force (3,); for a rectangular surface contact it is the wrench ``(f, tau)`` (6,) about the
contact frame's origin (the rectangle's centre unless the sole has a ``center`` offset, see
:func:`contact_wrench_cone`). Matrices come in the contact frame's axes (z normal) or, through
:func:`in_world_axes`, in world axes.

Point contacts (Coulomb, friction coefficient ``mu``):

.. math::

    f_n \\ge 0, \\qquad \\|f_t\\| \\le \\mu f_n

* :func:`check_friction_cone` is exact (second-order cone) and gives a margin
  ``mu f_n - |f_t|`` [N] and the utilisation ``|f_t| / (mu f_n)``.
* :func:`friction_pyramid` is a k-face linearisation: **inner** (inscribed, default: a force
  it accepts is inside the exact cone; for k = 4, ``|f_x|, |f_y| <= mu / sqrt(2) f_n``) or
  **outer** (circumscribed: every force of the exact cone passes).

Rectangular surface contacts: :func:`contact_wrench_cone` is the closed-form cone of Caron,
Pham and Nakamura (ICRA 2015), "Stability of surface contacts for humanoid robots: closed-form
formulae of the contact wrench cone for rectangular support areas": the set of wrenches made
by four corner forces, each in the 4-face pyramid ``|f_x|, |f_y| <= mu f_z``. 16 rows.

:class:`ContactSet` is the one home of these cones for a list of contacts: built once, it
gives the stacked face matrix in world axes (updated in place), the generator form, the
Newton-Euler matrix, and the vectorised check of logged wrenches that every check, estimate,
support area and report uses. Support areas (static equilibrium, ZMP) are in
:mod:`wholebody.friction.support`.
"""

from __future__ import annotations

from .cones import (
    CWC_ROW_NAMES,
    PULLING,
    SLIPPING,
    VIOLATION_NAMES,
    ConeCheck,
    ConeEvaluation,
    ContactSet,
    WrenchConeCheck,
    check_friction_cone,
    check_wrench_cone,
    contact_wrench_cone,
    friction_pyramid,
    in_world_axes,
    normal_rotation,
    wrench_cone_generators,
)

__all__ = [
    "ContactSet",
    "ConeEvaluation",
    "ConeCheck",
    "check_friction_cone",
    "friction_pyramid",
    "contact_wrench_cone",
    "CWC_ROW_NAMES",
    "VIOLATION_NAMES",
    "PULLING",
    "SLIPPING",
    "wrench_cone_generators",
    "WrenchConeCheck",
    "check_wrench_cone",
    "in_world_axes",
    "normal_rotation",
]
