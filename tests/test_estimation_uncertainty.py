"""Intervals of estimated wrenches contain MuJoCo's truth at their stated level."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from tests.test_schedule import DECLARED, mujoco_log
from wholebody.errors import InvalidArgumentError
from wholebody.estimation import estimate_contact_wrenches
from wholebody.estimation.uncertainty import NoiseLevels

SIGMA_A = 0.05  # [m/s^2, rad/s^2] on every component of a
SIGMA_TAU = 0.5  # [N m] on every joint torque


@pytest.fixture(scope="module")
def pushed_log():
    return mujoco_log("stand", 0.6, (0.3, 0.4, (0.0, 60.0, 0.0)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noise_intervals_cover_the_truth_at_their_level(humanoid, pushed_log, seed):
    """Full dynamics (every foot identifiable), noise of the stated level added to a and
    tau: the 95 % intervals contain MuJoCo's wrench for 92-98 % of the 600 components (50
    samples x 12), and the 99.9 % ones for more than 99 %."""
    q, v, a, tau, W, t, push = pushed_log
    rows = np.arange(0, len(t), 6)
    rng = np.random.default_rng(seed)
    A = a[rows] + rng.normal(scale=SIGMA_A, size=a[rows].shape)
    T = tau[rows] + rng.normal(scale=SIGMA_TAU, size=tau[rows].shape)
    truth = W[rows].reshape(len(rows), -1)
    noise = NoiseLevels(acceleration=SIGMA_A, torque=SIGMA_TAU)
    coverage = {}
    for level in (0.95, 0.999):
        batch = estimate_contact_wrenches(
            humanoid,
            q[rows],
            v[rows],
            A,
            DECLARED,
            tau=T,
            external_wrenches={"torso": push[rows]},
            noise=noise,
            confidence=level,
        )
        coverage[level] = batch.intervals.contains(truth).mean()
    assert 0.92 <= coverage[0.95] <= 0.98, coverage
    assert coverage[0.999] >= 0.99, coverage
    # The noise moves each estimate by about the stated standard deviation.
    z = (batch.wrenches - truth) / batch.intervals.std
    assert 0.7 < np.std(z) < 1.3


def test_split_ranges_contain_the_simulators_split(humanoid, pushed_log):
    """Newton-Euler mode, double support: the split is not identifiable; the range of
    splits consistent with the equations and cones contains MuJoCo's per-foot wrench (no
    noise stated), for every component of every sample."""
    q, v, a, _, W, t, push = pushed_log
    rows = np.arange(10, len(t), 20)
    truth = W[rows].reshape(len(rows), -1)
    batch = estimate_contact_wrenches(
        humanoid,
        q[rows],
        v[rows],
        a[rows],
        DECLARED,
        external_wrenches={"torso": push[rows]},
        noise=NoiseLevels(),
    )
    iv = batch.intervals
    assert batch.split_from_regularization.all()
    assert iv.contains(truth).all()
    assert_allclose(iv.std, 0.0, atol=1e-12)
    # The ranges are wide: the split is far from determined.
    lo, hi = iv.contact("left_sole")
    assert (hi[:, 2] - lo[:, 2] > 100.0).all()
    line = iv.describe("left_sole", "f_z", sample=3)
    assert line.startswith("left_sole f_z ") and line.endswith(" N)")
    # A single estimate says the same.
    i = int(rows[3])
    est = estimate_contact_wrenches(
        humanoid,
        q[i],
        v[i],
        a[i],
        DECLARED,
        external_wrenches={"torso": push[i]},
        noise=NoiseLevels(),
    )
    assert_allclose(est.intervals.lower, iv.lower[3], atol=1e-6)
    assert "left_sole f_z" in est.summary()


def test_velocity_noise_and_bad_levels(humanoid):
    noise = NoiseLevels.from_velocity_noise(0.01, 0.002, torque=0.1)
    assert noise.acceleration == pytest.approx(0.01 / (np.sqrt(2) * 0.002))
    with pytest.raises(InvalidArgumentError, match="timestep must be positive"):
        NoiseLevels.from_velocity_noise(0.01, 0.0)
    with pytest.raises(
        InvalidArgumentError, match=r"noise torque must be a scalar or shape \(19,\)"
    ):
        NoiseLevels(torque=np.ones(3)).sigmas(humanoid)
    with pytest.raises(InvalidArgumentError, match="finite and non-negative"):
        NoiseLevels(acceleration=-1.0).sigmas(humanoid)
