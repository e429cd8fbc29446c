"""Balance: the Newton-Euler wrench balance, gravito-inertial and contact wrenches, the centre
of pressure and the ZMP, joint reaction wrenches.

The residual is written once (``_formula``, behind
:func:`~wholebody.balance.newton_euler.newton_euler_residual_arrays` for batches and the
single-sample calls of :mod:`wholebody.balance.core`); the log layout of wrenches and the
physical-magnitude limits are in :mod:`wholebody.balance.newton_euler`, the centre of pressure
in :mod:`wholebody.balance.cop`, reactions in :mod:`wholebody.balance.reactions`.
"""

from .core import (
    MAX_WRENCH_RELATIVE,
    CentreOfPressure,
    ExternalWrenches,
    KinematicsBatch,
    Residual,
    ResidualBatch,
    centre_of_pressure,
    contact_wrench,
    cop_in_contact_frame,
    gravito_inertial_wrench,
    joint_reaction_wrenches,
    kinematics_batch,
    newton_euler_residual,
    newton_euler_residual_arrays,
    newton_euler_residuals,
    stack_contact_wrenches,
    wrench_sum,
    wrenches_in_log_layout,
    zmp,
)

__all__ = [
    "gravito_inertial_wrench",
    "contact_wrench",
    "newton_euler_residual",
    "newton_euler_residuals",
    "Residual",
    "ResidualBatch",
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
