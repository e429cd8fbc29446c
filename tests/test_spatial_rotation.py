"""The one quaternion-to-rotation formula (wholebody.spatial.rotation_from_quat_xyzw) that
the convention checks and the simulator bridges share, against Pinocchio's quaternion."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from numpy.testing import assert_allclose

from wholebody.spatial import rotation_from_quat_xyzw


def test_rotation_equals_pinocchio_single_and_batched_unnormalised():
    rng = np.random.default_rng(3)
    quats = rng.normal(size=(50, 4)) * rng.uniform(0.2, 5.0, size=(50, 1))  # not unit norm
    reference = np.array(
        [pin.Quaternion(*q[[3, 0, 1, 2]]).normalized().toRotationMatrix() for q in quats]
    )  # pin.Quaternion(w, x, y, z)
    assert_allclose(rotation_from_quat_xyzw(quats), reference, rtol=0, atol=1e-14)
    assert_allclose(rotation_from_quat_xyzw(quats[7]), reference[7], rtol=0, atol=1e-14)
    assert rotation_from_quat_xyzw(quats.reshape(5, 10, 4)).shape == (5, 10, 3, 3)
