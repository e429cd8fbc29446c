"""Every cause the diagnosis tests, in the order of the report when they tie exactly: the
discrete ones (:mod:`.causes_discrete`) and the fitted ones (:mod:`.causes_fitted`); the
torque causes (:mod:`.causes_torque`), tested when a joint row fails; the placement causes
(:mod:`.causes_placement`), tested when a loaded contact is off the ground or tilted. See
``docs/diagnosis.md`` for each model."""

from __future__ import annotations

from .causes_artefacts import held_streams, inertialess_link_mass, tangential_force_missing
from .causes_discrete import (
    axis_conventions,
    gravity_sign,
    sign_flips,
    swapped_contacts,
    wrong_points,
)
from .causes_fall import falling
from .causes_fitted import (
    com_offset,
    force_gains,
    mass_error,
    missing_contacts,
    missing_forces,
    sensor_offsets,
    stale_forces,
)
from .causes_frames import gravity_tilt, sensor_rotations
from .causes_payload import payload
from .causes_placement import PLACEMENT_CAUSES
from .causes_state import stale_start, state_ahead, swapped_joints
from .causes_timing import force_lag
from .causes_torque import TORQUE_CAUSES

__all__ = ["CAUSES", "KINEMATIC_CAUSES", "TORQUE_CAUSES", "PLACEMENT_CAUSES", "REFITTED"]

CAUSES = (
    sign_flips,
    axis_conventions,
    swapped_contacts,
    wrong_points,
    force_lag,  # supersedes causes_fitted.time_offset (no central-difference bias)
    mass_error,
    inertialess_link_mass,  # after mass_error: an engine's default mass costs no parameter
    gravity_sign,
    com_offset,
    sensor_offsets,
    force_gains,
    sensor_rotations,
    gravity_tilt,
    payload,
    swapped_joints,
    stale_start,
    state_ahead,
    falling,
    tangential_force_missing,  # supersedes normal_force_only (ground normal's axes, fitted)
    held_streams,
    stale_forces,
    missing_contacts,
    missing_forces,
)

#: Causes tested when no sample is over tolerance but a convention check failed (loaded
#: contacts that move): they read the kinematics, not the residual.
KINEMATIC_CAUSES = (falling,)
#: Causes whose values are fitted from the log: refitted on all windows but one for their
#: held-out share (:mod:`.ranking`). The others fit nothing (a sign, a convention, a swap) or
#: a wrench free per sample (descriptive: not compared on the criterion).
REFITTED = frozenset(
    {
        wrong_points,
        force_lag,
        mass_error,
        inertialess_link_mass,
        com_offset,
        sensor_offsets,
        force_gains,
        sensor_rotations,
        gravity_tilt,
        payload,
    }
)
