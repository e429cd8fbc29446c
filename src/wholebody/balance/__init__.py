"""Balance: the Newton-Euler wrench balance, gravito-inertial and contact wrenches, the centre
of pressure and the ZMP, joint reaction wrenches.

The residual is written once (in :mod:`wholebody.balance.newton_euler`, behind
:func:`~wholebody.balance.newton_euler.newton_euler_residual_arrays` for batches and the
single-sample calls of :mod:`wholebody.balance.core`); the log layout of wrenches and the
physical-magnitude limits are in :mod:`wholebody.balance.newton_euler`, the centre of pressure
in :mod:`wholebody.balance.cop`, reactions in :mod:`wholebody.balance.reactions`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
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

# name -> module of this package that defines it, imported on first access (PEP 562): the
# check needs the residual and the batch kinematics, not the centre of pressure or reactions.
_LAZY = {
    "MAX_WRENCH_RELATIVE": "newton_euler",
    "CentreOfPressure": "cop",
    "ExternalWrenches": "newton_euler",
    "KinematicsBatch": "_kinematics",
    "Residual": "newton_euler",
    "ResidualBatch": "newton_euler",
    "centre_of_pressure": "cop",
    "contact_wrench": "core",
    "cop_in_contact_frame": "cop",
    "gravito_inertial_wrench": "core",
    "joint_reaction_wrenches": "reactions",
    "kinematics_batch": "_kinematics",
    "newton_euler_residual": "core",
    "newton_euler_residual_arrays": "newton_euler",
    "newton_euler_residuals": "core",
    "stack_contact_wrenches": "newton_euler",
    "wrench_sum": "newton_euler",
    "wrenches_in_log_layout": "newton_euler",
    "zmp": "cop",
}

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


__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)
