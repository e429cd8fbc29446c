"""One call for one sample or N: ``estimate_contact_wrenches`` with ``q`` of shape (nq,) or
(N, nq). Checked against wrenches known by construction (forward dynamics from drawn
cone-interior wrenches), one sample against N, and the closed form at rest."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from wholebody.errors import StateError
from wholebody.estimation import ContactEstimate, EstimationBatch, estimate_contact_wrenches

from .test_estimation import FEET, known_sample

TOL = 1e-6  # [N], [N m]: the wrenches are recovered exactly up to the QP's tolerance


def _samples(robot, n, seed):
    rng = np.random.default_rng(seed)
    s = [known_sample(robot, rng) for _ in range(n)]
    return (np.array([x[i] for x in s]) for i in range(4)), [x[4] for x in s]


@pytest.mark.parametrize("full", [False, True])
def test_n_samples_through_the_one_call_equal_each_sample(humanoid, full):
    (Q, V, A, T), truth = _samples(humanoid, 5, seed=11)
    many = estimate_contact_wrenches(humanoid, Q, V, A, FEET, tau=T if full else None)
    assert isinstance(many, EstimationBatch) and many.is_batch and len(many) == 5
    for i in range(5):
        one = estimate_contact_wrenches(
            humanoid, Q[i], V[i], A[i], FEET, tau=T[i] if full else None
        )
        assert isinstance(one, ContactEstimate) and not one.is_batch
        assert many.status[i] == one.status == "found"
        assert_allclose(many.wrenches[i], one.x, rtol=0, atol=TOL)
        if full:  # full dynamics identifies each foot: the wrenches drawn
            assert_allclose(one.x, np.concatenate(truth[i]), rtol=0, atol=TOL)


def test_at_rest_each_foot_carries_half_the_weight_once_and_n_times(humanoid):
    q, zero = humanoid.neutral(), np.zeros(humanoid.nv)
    one = estimate_contact_wrenches(humanoid, q, zero, zero, FEET)
    many = estimate_contact_wrenches(
        humanoid, np.tile(q, (3, 1)), np.zeros((3, humanoid.nv)), np.zeros((3, humanoid.nv)), FEET
    )
    half = humanoid.weight / 2  # the neutral humanoid is symmetric about its sagittal plane
    assert one.wrenches["left_sole"][2] == pytest.approx(half, abs=TOL)
    assert_allclose(many.wrench("right_sole")[:, 2], half, rtol=0, atol=TOL)


def test_a_bad_sample_is_flagged_among_n_and_raises_alone(humanoid):
    (Q, V, A, _), _ = _samples(humanoid, 4, seed=3)
    V[1, 7] = np.nan
    many = estimate_contact_wrenches(humanoid, Q, V, A, FEET)
    assert list(many.status) == ["found", "flagged", "found", "found"]
    assert "v has non-finite values" in many.reasons[1]
    with pytest.raises(StateError, match="v"):
        estimate_contact_wrenches(humanoid, Q[1], V[1], A[1], FEET)


def test_a_single_row_is_a_batch_of_one(humanoid):
    (Q, V, A, _), _ = _samples(humanoid, 1, seed=5)
    one = estimate_contact_wrenches(humanoid, Q[0], V[0], A[0], FEET)
    row = estimate_contact_wrenches(humanoid, Q[:1], V[:1], A[:1], FEET)
    assert row.is_batch and len(row) == 1 and not one.is_batch
    assert_allclose(row.wrenches[0], one.x, rtol=0, atol=TOL)
