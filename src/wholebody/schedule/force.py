"""Contact schedules from force and kinematics together.

Per contact: the normal force (measured, or estimated) along the ground normal, through a
Schmitt trigger (on above ``force_on``, off below ``force_off``: the hysteresis of the Blind
Legged Odometry and iDynTree contact-state machines), gated by kinematics (a contact whose
lowest point is above ``height_off``, or above ``height_on`` and rising faster than
``lift_speed``, is in the air whatever its force says), then minimum dwell times
(``min_contact``, ``min_flight``). A foot in the air carries no force in an estimate that
uses this schedule.

The kinematic schedule alone (:func:`~wholebody.schedule.infer_schedule_kinematic`) is kept as
evidence, and :func:`force_kinematic_agreement` says, per contact, on what share of the
samples the force evidence and the kinematic evidence agree.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..contacts import Contact
from ..errors import InvalidArgumentError, StateError
from ..robot import Robot
from .core import ContactSchedule, enforce_min_durations, ground_plane
from .inference import infer_schedule_kinematic

__all__ = [
    "infer_schedule_force",
    "schmitt_trigger",
    "force_kinematic_agreement",
    "FORCE_ON",
    "FORCE_OFF",
]

Array = NDArray[np.float64]
Bools = NDArray[np.bool_]

#: Default Schmitt thresholds, shares of the robot's weight: on above 2 % (the check's contact
#: threshold), off below 1 %.
FORCE_ON = 0.02
FORCE_OFF = 0.01


def schmitt_trigger(x: ArrayLike, on: float, off: float, initial: bool | None = None) -> Bools:
    """Per column of ``x`` (N, k): True from where ``x > on`` until ``x < off`` (``off <= on``).

    NaN samples keep the previous state; the first state is ``x[0] > on`` unless given.
    """
    X = np.asarray(x, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    for name, value in (("force_on", on), ("force_off", off)):
        if not np.isfinite(value):
            raise InvalidArgumentError(f"{name} must be a finite number [N], got {value!r}")
    if not off <= on:
        raise InvalidArgumentError(f"force_off ({off}) must not exceed force_on ({on})")
    N, k = X.shape
    out = np.zeros((N, k), dtype=bool)
    for j in range(k):
        state = bool(X[0, j] > on) if initial is None else bool(initial)
        for i in range(N):
            xi = X[i, j]
            if xi > on:
                state = True
            elif xi < off:
                state = False
            out[i, j] = state
    return out


def _normal_forces(
    wrenches: ArrayLike | None, normal_force: ArrayLike | None, n: Array, N: int, k: int
) -> Array:
    if normal_force is not None:
        fn = np.asarray(normal_force, dtype=float)
    elif wrenches is not None:
        W = np.asarray(wrenches, dtype=float)
        if W.ndim != 3 or W.shape[0] != N or W.shape[1] != k or W.shape[2] < 3:
            raise StateError(f"wrenches must have shape ({N}, {k}, 6), got {W.shape}")
        fn = W[..., :3] @ n
    else:
        raise InvalidArgumentError("give the contacts' wrenches or their normal forces")
    if fn.shape != (N, k):
        raise StateError(f"normal forces must have shape ({N}, {k}), got {fn.shape}")
    return fn


def infer_schedule_force(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    contacts: Sequence[Contact],
    *,
    time: ArrayLike,
    wrenches: ArrayLike | None = None,
    normal_force: ArrayLike | None = None,
    force_on: float | None = None,
    force_off: float | None = None,
    ground_height: float = 0.0,
    ground_normal: ArrayLike | None = None,
    height_on: float = 0.005,
    height_off: float = 0.01,
    lift_speed: float = 0.05,
    min_contact: float = 0.0,
    min_flight: float = 0.0,
) -> ContactSchedule:
    """Contact schedule from each contact's normal force (Schmitt trigger) gated by its
    kinematics, with minimum dwell times.

    Parameters
    ----------
    q, v : arrays, shapes (N, nq), (N, nv)
    contacts : sequence of Contact
    time : array, shape (N,)
        [s].
    wrenches : array, shape (N, k, 6), optional
        Contact wrenches, world axes [N, N m] (the normal force is their force along the
        ground normal); or give ``normal_force`` (N, k) [N] directly (an estimate's).
    force_on, force_off : float, optional
        Schmitt thresholds [N] (default :data:`FORCE_ON` and :data:`FORCE_OFF` of the weight).
    ground_height, ground_normal, height_on, height_off, lift_speed
        The kinematic gate, as in :func:`~wholebody.schedule.infer_schedule_kinematic`.
    min_contact, min_flight : float
        Shortest contact and gap kept [s]: the minimum dwell in each state. The trigger's
        hysteresis already debounces the force, so by default none (a one-sample touch
        carries force; a foot chattering on the ground at 1 ms intervals is in the air
        between touches and gets no force there); a noisy sensor may want 0.01 s.

    Returns
    -------
    ContactSchedule
        ``method="force"``; evidence ``"normal_force"`` [N], ``"force_state"`` (the trigger
        alone), ``"kinematic_state"``, ``"height"`` [m], ``"normal_speed"`` [m/s];
        ``parameters["agreement"]``: per contact, the share of samples where force and
        kinematic evidence agree.
    """
    kin = infer_schedule_kinematic(
        robot,
        q,
        v,
        contacts,
        time=time,
        ground_height=ground_height,
        ground_normal=ground_normal,
        height_on=height_on,
        height_off=height_off,
        lift_speed=lift_speed,
        min_contact=0.02,  # the kinematic evidence keeps its own defaults
        min_flight=0.02,
    )
    N, k = kin.active.shape
    n, _ = ground_plane(ground_height, ground_normal)
    fn = _normal_forces(wrenches, normal_force, n, N, k)
    on = FORCE_ON * robot.weight if force_on is None else float(force_on)
    off = FORCE_OFF * robot.weight if force_off is None else float(force_off)
    force_state = schmitt_trigger(fn, on, off)
    height, speed = kin.evidence["height"], kin.evidence["normal_speed"]
    with np.errstate(invalid="ignore"):
        airborne = (height > height_off) | ((height > height_on) & (speed > lift_speed))
    raw = force_state & ~airborne
    active = enforce_min_durations(raw, kin.time, min_contact=min_contact, min_flight=min_flight)
    # Confidence: how far the force is from the band between the thresholds.
    band = max(on - off, 1e-9)
    mid = 0.5 * (on + off)
    confidence = np.clip(np.abs(np.nan_to_num(fn, nan=mid) - mid) / band, 0.0, 1.0)
    agreement = force_kinematic_agreement(force_state, kin.active)
    params = dict(kin.parameters)
    params.update(
        {
            "force_on": on,
            "force_off": off,
            "agreement": dict(zip(kin.contact_names, agreement.tolist(), strict=True)),
            "kinematics_overrode": int((force_state & airborne).sum()),
        }
    )
    evidence = {
        **kin.evidence,
        "normal_force": fn,
        "force_state": force_state,
        "kinematic_state": kin.active,
    }
    return ContactSchedule(
        kin.contact_names, kin.time, active, "force", confidence, evidence, None, {}, params
    )


def force_kinematic_agreement(force_state: ArrayLike, kinematic_state: ArrayLike) -> Array:
    """Per contact, the share of samples where two (N, k) boolean states agree."""
    F = np.asarray(force_state, dtype=bool)
    K = np.asarray(kinematic_state, dtype=bool)
    if F.shape != K.shape:
        raise StateError(f"states of shapes {F.shape} and {K.shape} cannot be compared")
    return np.asarray((F == K).mean(axis=0), dtype=float)
