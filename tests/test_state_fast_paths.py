"""The combined fast checks of (q, v) and (q, v, a) of a new state (one byte test over the
vectors at once): each fault is still caught and named, a large but physical entry still
passes, and the results equal Pinocchio's."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_array_equal

from wholebody.errors import StateError


def _state(robot, seed):
    rng = np.random.default_rng(seed)
    return robot.random_configuration(seed), rng.normal(size=robot.nv), rng.normal(size=robot.nv)


@pytest.mark.parametrize(
    ("field", "index", "value", "match"),
    [
        ("v", 4, np.nan, "v has non-finite"),
        ("a", 9, np.inf, "a has non-finite"),
        ("a", 2, 1e9, r"a\[2\] = 1e\+09 is beyond"),
        ("v", 0, -1e300, r"v\[0\] = -1e\+300 is beyond"),
        ("q", 3, 0.5, "quaternion"),
    ],
)
def test_each_fault_of_a_new_state_is_named(humanoid, field, index, value, match):
    for call in ("inverse_dynamics", "nonlinear_effects"):
        if call == "nonlinear_effects" and field == "a":
            continue
        q, v, a = _state(humanoid, 1)
        humanoid.inverse_dynamics(q, v, a)  # a state that passed just before
        q, v, a = _state(humanoid, 2)
        {"q": q, "v": v, "a": a}[field][index] = value
        args = (q, v, a) if call == "inverse_dynamics" else (q, v)
        with pytest.raises(StateError, match=match):
            getattr(humanoid, call)(*args)


def test_large_physical_entries_pass_and_results_are_pinocchios(humanoid):
    q, v, a = _state(humanoid, 3)
    q[0], v[7], a[8] = 5e6, 2e5, -3e7  # beyond the byte test (2**17), within 1e8
    m, d = humanoid.model, pin.Data(humanoid.model)
    assert_array_equal(humanoid.inverse_dynamics(q, v, a), pin.rnea(m, d, q, v, a))
    assert_array_equal(humanoid.nonlinear_effects(q, v), pin.nonLinearEffects(m, d, q, v))
    q2, v2, a2 = _state(humanoid, 4)  # small entries: the combined test
    assert_array_equal(humanoid.inverse_dynamics(q2, v2, a2), pin.rnea(m, d, q2, v2, a2))
    assert_array_equal(humanoid.com(q2), pin.centerOfMass(m, d, q2, False))
    # The same state again, then a wrong size.
    assert_array_equal(humanoid.inverse_dynamics(q2, v2, a2), pin.rnea(m, d, q2, v2, a2))
    with pytest.raises(StateError, match="a must have shape"):
        humanoid.inverse_dynamics(q2, v2, a2[:-1])
