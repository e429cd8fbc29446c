"""Balance: the Newton-Euler wrench balance, gravito-inertial and contact wrenches, the centre
of pressure and the ZMP, joint reaction wrenches.

The residual is written once (in :mod:`wholebody.balance.newton_euler`, behind
:func:`~wholebody.balance.newton_euler.newton_euler_residual_arrays` for batches and the
single-sample calls of :mod:`wholebody.balance.core`); the log layout of wrenches and the
physical-magnitude limits are in :mod:`wholebody.balance.newton_euler`, the centre of pressure
in :mod:`wholebody.balance.cop`, reactions in :mod:`wholebody.balance.reactions`.
"""

from __future__ import annotations

from ._kinematics import KinematicsBatch, kinematics_batch
from .cop import CentreOfPressure, centre_of_pressure, cop_in_contact_frame, zmp
from .core import contact_wrench, gravito_inertial_wrench, newton_euler_residual
from .newton_euler import (
    MAX_WRENCH_RELATIVE,
    ExternalWrenches,
    Residual,
    newton_euler_residual_arrays,
    stack_contact_wrenches,
    wrench_sum,
    wrenches_in_log_layout,
)
from .reactions import joint_reaction_wrenches

__all__ = [
    "gravito_inertial_wrench",
    "contact_wrench",
    "newton_euler_residual",
    "Residual",
    "centre_of_pressure",
    "cop_in_contact_frame",
    "CentreOfPressure",
    "zmp",
    "joint_reaction_wrenches",
    "stack_contact_wrenches",
    "wrenches_in_log_layout",
    "wrench_sum",
    "newton_euler_residual_arrays",
    "kinematics_batch",
    "KinematicsBatch",
    "ExternalWrenches",
    "MAX_WRENCH_RELATIVE",
]
