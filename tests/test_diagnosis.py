"""The diagnosis names injected faults, fits their values within the stated uncertainty, says
ties, and raises nothing on clean logs.

Faults are injected into the shipped MuJoCo log (exact to 1e-6 N) and into a copy of it turned
about the vertical, so that the soles' axes differ from the world's.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.spatial.transform import Rotation

from wholebody.check.analysis import check_trajectory
from wholebody.contacts import SurfaceContact
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH as X
from wholebody.models import HUMANOID_SOLE_HALF_WIDTH as Y
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
FEET = [SurfaceContact(f, half_length=X, half_width=Y, mu=1.0) for f in ("left_sole", "right_sole")]


@pytest.fixture(scope="module")
def squat() -> Trajectory:
    return Trajectory.load(ROOT / "data" / "humanoid_squat.npz")


@pytest.fixture(scope="module")
def turned(squat) -> Trajectory:
    """The same motion with the world turned 30 degrees about z: still exact (gravity is
    vertical), but the soles' axes are no longer the world's."""
    Rz = Rotation.from_euler("z", 30, degrees=True)
    q = squat.q.copy()
    q[:, :3] = Rz.apply(q[:, :3])
    q[:, 3:7] = (Rz * Rotation.from_quat(q[:, 3:7])).as_quat()
    W = squat.contact_wrenches.copy()
    W[..., :3] = Rz.apply(W[..., :3].reshape(-1, 3)).reshape(W[..., :3].shape)
    W[..., 3:] = Rz.apply(W[..., 3:].reshape(-1, 3)).reshape(W[..., 3:].shape)
    return dataclasses.replace(squat, q=q, contact_wrenches=W)


def _frames(robot, traj):
    q = traj.for_robot(robot)[0]
    R = np.array([[robot.placements(qi, c.frame).se3().rotation for c in FEET] for qi in q])
    return R


def _local(R, W):
    return np.concatenate(
        [np.einsum("nkji,nkj->nki", R, W[..., :3]), np.einsum("nkji,nkj->nki", R, W[..., 3:])],
        axis=2,
    )


def _check(robot, traj, W):
    report = check_trajectory(robot, dataclasses.replace(traj, contact_wrenches=W), FEET)
    assert report.verdict == "inconsistent"
    return report.diagnosis[0], report


def test_clean_logs_raise_no_diagnosis(humanoid, squat, turned):
    for traj in (squat, turned):
        report = check_trajectory(humanoid, traj, FEET)
        assert report.verdict == "consistent" and report.diagnosis == []


@pytest.mark.parametrize("which", ["all", "right"])
def test_sign_flip(humanoid, squat, which):
    W = squat.contact_wrenches.copy()
    if which == "all":
        W = -W
    else:
        W[:, 1] *= -1
    best, _ = _check(humanoid, squat, W)
    assert best.cause == "sign_flip" and best.explained > 0.99
    assert best.parameters["contacts"] == (
        ["left_sole", "right_sole"] if which == "all" else ["right_sole"]
    )


def test_kilonewtons_are_a_gain_of_1000(humanoid, squat):
    best, _ = _check(humanoid, squat, squat.contact_wrenches / 1000)
    assert best.cause == "force_gain" and "kN logged as N" in best.message
    assert_allclose(best.parameters["gains"], [1000.0, 1000.0], rtol=1e-6)


def test_equivalent_causes_are_a_tie_said_not_decided(humanoid, squat):
    # All wrenches 10 % high: the mass is 10 % low, or the sensors' gain is off: the same data
    # on the wrench balance (the log's torques would tell them apart: test_causes_torque.py).
    squat = dataclasses.replace(squat, tau=None)
    best, _ = _check(humanoid, squat, 1.1 * squat.contact_wrenches)
    assert best.cause == "mass_error"
    assert best.parameters["mass_scale"] == pytest.approx(1.1, rel=1e-6)
    assert any("gain" in alt for alt in best.alternatives)


def test_double_counted_contact(humanoid, squat):
    W = squat.contact_wrenches.copy()
    W[:, 0] *= 2
    best, _ = _check(humanoid, squat, W)
    assert best.cause == "force_gain" and "double counted" in best.message
    assert_allclose(best.parameters["gains"], [0.5, 1.0], atol=1e-6)


def test_wrenches_in_local_axes(humanoid, turned):
    R = _frames(humanoid, turned)
    best, _ = _check(humanoid, turned, _local(R, turned.contact_wrenches))
    assert best.cause == "axes" and "own axes, not world axes" in best.message


def test_wrenches_in_the_simulator_contact_frame(humanoid, turned):
    R = _frames(humanoid, turned)
    local = _local(R, turned.contact_wrenches)
    normal_first = local[..., [2, 0, 1, 5, 3, 4]]  # (n, t1, t2), as mj_contactForce
    best, _ = _check(humanoid, turned, normal_first)
    assert best.cause == "axes" and "normal first" in best.message


def test_one_flipped_axis(humanoid, squat):
    W = squat.contact_wrenches.copy()
    W[..., 1] *= -1
    W[..., 4] *= -1
    best, _ = _check(humanoid, squat, W)
    assert best.cause == "axes" and "the y axis of the wrench readings is flipped" in best.message


@pytest.mark.parametrize("lag_ms", [20.0, 7.5])
def test_time_offset_to_the_sub_sample(humanoid, squat, lag_ms):
    t = squat.time
    W0 = squat.contact_wrenches
    shifted = np.stack(
        [
            np.stack([np.interp(t - lag_ms * 1e-3, t, W0[:, j, c]) for c in range(6)], axis=-1)
            for j in range(W0.shape[1])
        ],
        axis=1,
    )
    best, _ = _check(humanoid, squat, shifted)
    assert best.cause == "time_offset"
    se = best.uncertainty["lag_seconds"]
    assert abs(best.parameters["lag_seconds"] - lag_ms * 1e-3) <= max(3 * se, 1e-3)


def test_sensor_offsets_are_fitted(humanoid, squat):
    W = squat.contact_wrenches.copy()
    offset = np.array([5.0, -3.0, 8.0, 0.5, -0.3, 0.2])
    W[:, 0] += offset
    best, _ = _check(humanoid, squat, W)
    assert best.cause == "sensor_offset"
    fitted = np.array(best.parameters["offsets"])
    # The sum of the offsets is what the balance sees; with both feet still, its split between
    # the feet is only as good as the lever arms make it.
    assert_allclose(fitted.sum(axis=0)[:3], offset[:3], atol=0.05)


def test_com_offset_reports_only_observable_components(humanoid, squat):
    # Without torques: the joint rows would see moments shifted in the log, not a CoM offset.
    squat = dataclasses.replace(squat, tau=None)
    W = squat.contact_wrenches.copy()
    W[..., 3:] += np.cross([0.03, -0.02, 0.0], W[..., :3])
    best, _ = _check(humanoid, squat, W)
    assert best.cause == "com_offset"
    assert best.parameters["observable"] == [True, True, False]
    assert_allclose(best.parameters["com_offset"][:2], [0.03, -0.02], atol=1e-4)
    assert "z unobservable" in best.message


def test_moments_about_the_ankle(humanoid, turned):
    R = _frames(humanoid, turned)
    W = turned.contact_wrenches.copy()
    ankle = np.array([0.03, 0.0, 0.04])  # in the sole frame
    W[..., 3:] -= np.cross(np.einsum("nkij,j->nki", R, ankle), W[..., :3])
    best, report = _check(humanoid, turned, W)
    assert best.cause in ("wrong_point", "com_offset")
    if best.cause == "wrong_point":
        assert_allclose(np.array(best.parameters["offsets"])[:, 0], [0.03, 0.03], atol=2e-3)


def test_missing_contact(humanoid, squat):
    W = squat.contact_wrenches.copy()
    W[:, 1] = 0.0
    best, _ = _check(humanoid, squat, W)
    assert best.cause == "missing_contact" and best.parameters["contact"] == "right_sole"


def test_two_pushes_are_two_events(humanoid, squat):
    W = squat.contact_wrenches.copy()
    W[300:340, 0, 1] -= 80.0  # 0.60-0.68 s
    W[700:730, 0, 0] += 60.0  # 1.40-1.46 s
    best, _ = _check(humanoid, squat, W)
    assert best.cause == "missing_force" and best.parameters["kind"] == "pulse"
    events = best.parameters["events"]
    assert len(events) == 2
    assert events[0]["start"] == pytest.approx(0.6, abs=0.003) and events[1][
        "start"
    ] == pytest.approx(1.4, abs=0.003)
    # The log itself balances to 1e-6 N per sample; the means carry that floor.
    assert_allclose(events[0]["mean_force"], [0.0, 80.0, 0.0], atol=1e-3)
    assert_allclose(events[1]["mean_force"], [-60.0, 0.0, 0.0], atol=1e-3)


def test_a_pure_moment_is_a_moment_not_a_far_line(humanoid, squat):
    # A moment with no force is no missing push or contact (no single contact makes one): the
    # residual is unexplained, and described as a moment, not as a force along a far line.
    W = squat.contact_wrenches.copy()
    W[300:340, 0, 5] += 20.0
    best, report = _check(humanoid, squat, W)
    assert best.cause == "unexplained" and "a moment of about" in best.message
    missing = next(f for f in report.diagnosis if f.cause == "missing_force")
    assert missing.parameters["events"][0]["point_on_line"] is None
    assert "no force" in missing.message


def test_normal_force_only(humanoid, turned):
    R = _frames(humanoid, turned)
    local = _local(R, turned.contact_wrenches)
    local[..., [0, 1, 3, 4, 5]] = 0.0
    W = np.concatenate(
        [
            np.einsum("nkij,nkj->nki", R, local[..., :3]),
            np.einsum("nkij,nkj->nki", R, local[..., 3:]),
        ],
        axis=2,
    )
    best, _ = _check(humanoid, turned, W)
    assert best.cause == "normal_force_only"


def test_every_cause_tested_is_listed_with_its_score(humanoid, squat):
    _, report = _check(humanoid, squat, -squat.contact_wrenches)
    causes = {f.cause for f in report.diagnosis}
    assert {
        "sign_flip",
        "axes",
        "time_offset",
        "mass_error",
        "com_offset",
        "sensor_offset",
        "force_gain",
        "missing_force",
    } <= causes
    assert all(0.0 <= f.explained <= 1.0 for f in report.diagnosis)
