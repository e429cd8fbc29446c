"""The controller refuses, at the call that sets it, a target or reference that is not finite
and a contact or frame it does not know (issue 37): one test per defect, each failing on the
code before it (where a NaN reached the torques as all-NaN with no error, an unknown contact
was accepted, and NaN bounds came back)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from wholebody.contacts import PointContact
from wholebody.control import (
    ComTask,
    ContactForceTask,
    CopTask,
    FrameTask,
    JointBounds,
    PostureTask,
    RelativeFrameTask,
    WholeBodyController,
)
from wholebody.errors import ContactNotFoundError, FrameNotFoundError, InvalidArgumentError

from ._control_common import SOLES, controller, sole, standing


def test_posture_reference_not_finite_is_refused_when_set(humanoid):
    ctrl = controller(humanoid)
    posture = ctrl.task("posture")
    q, v = standing(humanoid)
    bad = q.copy()
    bad[10] = np.nan
    with pytest.raises(
        InvalidArgumentError,
        match=r"task 'posture': reference must be finite; entries \[10\] are \[nan\]",
    ):
        posture.set_reference(bad)
    ctrl.update(q, v, 0.0)  # once it has seen the robot, the sizes too
    with pytest.raises(
        InvalidArgumentError, match=f"reference must be a vector of {humanoid.nq}, got shape"
    ):
        posture.set_reference(q[:-1])
    nu = humanoid.nv - 6
    with pytest.raises(
        InvalidArgumentError, match=r"reference velocity must be finite; entries \[0, 1,"
    ):
        posture.set_reference(q, velocity=np.full(nu, np.inf))
    with pytest.raises(
        InvalidArgumentError, match=r"reference acceleration must be finite; entries \[0,"
    ):
        posture.set_reference(q, acceleration=[np.nan] * nu)
    assert np.isfinite(ctrl.solve().torque).all()  # the reference kept is the last good one


def test_frame_reference_not_finite_or_not_rigid_is_refused_when_set(humanoid):
    task = FrameTask("left_hand", kp=10.0, kd=5.0)
    M = np.eye(4)
    M[1, 3] = np.nan
    with pytest.raises(InvalidArgumentError, match=r"task 'left_hand': reference must be a finite"):
        task.set_reference(M)
    se3 = pin.SE3.Identity()
    se3.translation = np.array([0.0, np.inf, 0.0])
    with pytest.raises(InvalidArgumentError, match=r"must be a finite SE3"):
        task.set_reference(se3)
    sheared = np.eye(4)
    sheared[0, 1] = 0.5
    with pytest.raises(InvalidArgumentError, match=r"its rotation is not a rotation"):
        task.set_reference(sheared)
    mirrored = np.diag([1.0, 1.0, -1.0, 1.0])
    with pytest.raises(InvalidArgumentError, match=r"its rotation is not a rotation"):
        task.set_reference(mirrored)
    relative = RelativeFrameTask("left_hand", "right_hand", kp=1.0, kd=1.0)
    with pytest.raises(InvalidArgumentError, match=r"right_hand_in_left_hand'\: reference"):
        relative.set_reference(M)


def test_task_of_an_unknown_frame_is_refused_when_added(humanoid):
    ctrl = WholeBodyController(humanoid)
    with pytest.raises(FrameNotFoundError, match=r"frame 'left_hnd' not found; did you mean"):
        ctrl.add_task(FrameTask("left_hnd", kp=1.0, kd=1.0))
    with pytest.raises(FrameNotFoundError, match=r"frame 'nowhere' not found"):
        ctrl.add_task(RelativeFrameTask("left_hand", "nowhere", kp=1.0, kd=1.0))
    assert ctrl.tasks == []


def test_contact_force_task_of_an_unknown_contact_is_refused_when_added(humanoid):
    ctrl = WholeBodyController(humanoid)
    ctrl.add_contact(sole(SOLES[0]))
    with pytest.raises(ContactNotFoundError, match=r"contact 'left_sol' not found; did you mean"):
        ctrl.add_task(ContactForceTask("left_sol"))
    with pytest.raises(ContactNotFoundError, match=r"contact 'right_sole' not found"):
        ctrl.add_task(CopTask("right_sole"))  # a frame of the robot, not a contact added
    # A contact removed stays known: its task is accepted and adds nothing while inactive.
    ctrl.add_contact(sole(SOLES[1]))
    ctrl.remove_contact(SOLES[1])
    task = ctrl.add_task(ContactForceTask(SOLES[1]))
    ctrl.add_task(ComTask(kp=1.0, kd=1.0))
    ctrl.update(*standing(humanoid), 0.0)
    assert task.size == 0 and np.isfinite(ctrl.solve().torque).all()
    ctrl.add_contact(PointContact("left_hand", mu=0.5))
    with pytest.raises(InvalidArgumentError, match=r"'left_hand' is a PointContact; a centre"):
        ctrl.add_task(CopTask("left_hand"))


def test_joint_bounds_of_a_state_not_finite_are_refused(humanoid):
    bounds = JointBounds(humanoid, dt=1e-3, acceleration_limit=30.0)
    nu = humanoid.nv - 6
    q, v = standing(humanoid)
    qj, vj = q[7:].copy(), v[6:].copy()
    lower, upper = bounds.bounds(qj, vj)
    assert np.isfinite(lower).all() and np.isfinite(upper).all()
    qj[3] = np.nan
    with pytest.raises(
        InvalidArgumentError, match=r"q_joints must be finite; entries \[3\] are \[nan\]"
    ):
        bounds.bounds(qj, vj)
    vj[0] = np.inf
    with pytest.raises(
        InvalidArgumentError, match=r"v_joints must be finite; entries \[0\] are \[inf\]"
    ):
        bounds.bounds(q[7:], vj)
    with pytest.raises(InvalidArgumentError, match=f"v_joints must be a vector of {nu}, got shape"):
        bounds.bounds(q[7:], v[6:-1])


def test_references_of_text_complex_or_masked_nan_are_refused_when_set(humanoid):
    """Numpy would cast a complex array with only a warning, and a masked array's masked
    NaN would pass as data: the tasks refuse both, and text, naming what they got."""
    q, _ = standing(humanoid)
    posture, com = PostureTask(kp=1.0, kd=1.0), ComTask(kp=1.0, kd=1.0)
    with pytest.raises(
        InvalidArgumentError, match=r"reference must be .*real numbers, got complex128"
    ):
        posture.set_reference(q.astype(complex))
    with pytest.raises(InvalidArgumentError, match=r"position must be .*real numbers, got object"):
        com.set_reference(np.array(["x", "y", "z"], dtype=object))
    masked = np.ma.masked_invalid(np.where(np.arange(len(q)) == 8, np.nan, q))
    with pytest.raises(InvalidArgumentError, match=r"reference must be finite; entries \[8\]"):
        posture.set_reference(masked)


def test_masks_gains_weights_times_and_limits_that_are_not_numbers_are_refused(humanoid):
    """Each raised a raw ValueError or TypeError, or was taken as something else (a mask of
    text or NaN as all True, a NaN time, a complex external wrench cast to its real part,
    NaN joint weights, NaN limits named by a wrong shape)."""
    task = FrameTask("left_hand", kp=10.0, kd=5.0)
    for mask in (["x"] * 6, [np.nan] * 6):
        with pytest.raises(InvalidArgumentError, match=r"mask must be booleans or 0/1, got"):
            task.set_mask(mask)
    with pytest.raises(InvalidArgumentError, match=r"kp must be a finite non-negative .* got 'a'"):
        FrameTask("left_hand", kp="a", kd=5.0)
    with pytest.raises(InvalidArgumentError, match=r"weight must be finite and >= 0, got 1j"):
        FrameTask("left_hand", kp=1.0, kd=1.0, weight=1j)
    with pytest.raises(InvalidArgumentError, match=r"joint_weights must be finite; entries \[0\]"):
        PostureTask(kp=1.0, kd=1.0, joint_weights=[np.nan])
    ctrl = controller(humanoid)
    q, v = standing(humanoid)
    for t in (np.nan, "a"):
        with pytest.raises(InvalidArgumentError, match=r"t must be a finite time \[s\], got"):
            ctrl.update(q, v, t)
    with pytest.raises(
        InvalidArgumentError,
        match=r"external wrench on frame 'left_hand' must be a vector of real numbers, got complex",
    ):
        ctrl.update(q, v, 0.0, external_wrenches={"left_hand": np.ones(6) * 1j})
    with pytest.raises(InvalidArgumentError, match=r"acceleration_limit: entries \[2\] are NaN"):
        JointBounds(
            humanoid,
            dt=1e-3,
            acceleration_limit=np.where(np.arange(humanoid.nv - 6) == 2, np.nan, 1),
        )
    with pytest.raises(InvalidArgumentError, match=r"velocity_limit must be a number or a vector"):
        JointBounds(humanoid, dt=1e-3, acceleration_limit=1.0, velocity_limit="x")
