"""One call for one sample or N: ``newton_euler_residual`` takes q of shape (nq,) or (N, nq),
and the Residual says which it holds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import wholebody
from wholebody.balance import newton_euler_residual
from wholebody.contacts import SurfaceContact
from wholebody.errors import StateError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def squat():
    robot = wholebody.load("humanoid")
    feet = [
        SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.7)
        for f in ("left_sole", "right_sole")
    ]
    traj = wholebody.Trajectory.load(ROOT / "data" / "humanoid_squat.npz")
    q, v, a, _ = traj.for_robot(robot)
    return robot, feet, q[:80], v[:80], a[:80], traj.contact_wrenches[:80].reshape(80, 12)


def test_n_samples_through_the_one_call_equal_the_single_sample_path(squat):
    robot, feet, q, v, a, W = squat
    batch = newton_euler_residual(robot, q, v, a, feet, W)
    assert batch.is_batch and len(batch) == 80
    singles = [newton_euler_residual(robot, q[i], v[i], a[i], feet, W[i]) for i in range(80)]
    assert not any(s.is_batch for s in singles)
    # Two implementations of the formula: Python floats per sample, numpy columns per batch.
    np.testing.assert_allclose(batch.force, [s.force for s in singles], rtol=0, atol=1e-9)
    np.testing.assert_allclose(batch.moment, [s.moment for s in singles], rtol=0, atol=1e-9)


def test_at_rest_without_contact_wrenches_the_residual_is_the_weight_per_sample():
    robot = wholebody.load("humanoid")
    N = 5
    q = np.tile(robot.neutral(), (N, 1))
    zero = np.zeros((N, robot.nv))
    r = newton_euler_residual(robot, q, zero, zero, [], np.zeros((N, 0)))
    expected = np.tile(robot.mass * robot.gravity_vector, (N, 1))  # closed form: m g
    np.testing.assert_allclose(r.force, expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(r.moment, 0.0, rtol=0, atol=1e-9)


def test_a_bad_sample_is_flagged_among_n_and_raises_alone(squat):
    robot, feet, q, v, a, W = squat
    q = q.copy()
    q[3, 3:7] = [0.0, 0.0, 0.0, 2.0]  # not a unit quaternion
    r = newton_euler_residual(robot, q, v, a, feet, W)
    assert r.flagged[3] and not r.flagged[[0, 1, 2, 4]].any()
    assert "quaternion" in r.reasons[3]
    assert np.isnan(r.force[3]).all()
    with pytest.raises(StateError, match="quaternion"):
        newton_euler_residual(robot, q[3], v[3], a[3], feet, W[3])
