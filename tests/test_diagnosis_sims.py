"""The verdict on fresh simulations: clean logs raise no alarm with logged or differentiated
accelerations at 500 Hz and 1 kHz, and faults injected into a third-party robot's MuJoCo log
(G1 from example-robot-data, through the bridge) are named."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from wholebody.check.analysis import check_trajectory
from wholebody.contacts import SurfaceContact
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH as X
from wholebody.models import HUMANOID_SOLE_HALF_WIDTH as Y

ROOT = Path(__file__).resolve().parents[1]
FEET = [SurfaceContact(f, half_length=X, half_width=Y, mu=1.0) for f in ("left_sole", "right_sole")]
NO_ALARM = ("consistent", "consistent_except_unreliable")


@pytest.fixture(scope="module")
def examples():
    pytest.importorskip("mujoco")
    sys.path.insert(0, str(ROOT / "examples"))
    import mujoco_any_humanoid
    import mujoco_humanoid_simulation

    return mujoco_humanoid_simulation, mujoco_any_humanoid


@pytest.mark.parametrize("every", [1, 2], ids=["1kHz", "500Hz"])
@pytest.mark.parametrize(
    "scenario", ["squat", pytest.param("single_support", marks=pytest.mark.slow)]
)
def test_clean_simulations_raise_no_alarm(humanoid, examples, scenario, every):
    sim, _ = examples
    duration = 2.0 if scenario == "single_support" else 0.6
    traj = sim.simulate(humanoid, duration, every=every, scenario=scenario)
    logged = check_trajectory(humanoid, traj, FEET)
    differentiated = check_trajectory(humanoid, dataclasses.replace(traj, a=None), FEET)
    # The balance: no sample inconsistent, with logged or differentiated accelerations.
    assert not logged.over_tolerance.any(), logged.format_summary()
    assert not differentiated.inconsistent_samples.any(), differentiated.format_summary()
    if scenario == "single_support":
        # At the right foot's lift-off the example's MuJoCo contacts report a few samples
        # outside the declared sole cone (a real finding about that log, not a residual).
        return
    assert logged.verdict == "consistent", logged.format_summary()
    assert differentiated.verdict in NO_ALARM, differentiated.format_summary()


@pytest.fixture(scope="module")
def g1_standing(examples):
    import wholebody as wb

    _, any_humanoid = examples
    try:
        wb.load("g1")
    except wb.errors.MissingDependencyError:
        pytest.skip("example-robot-data is not installed")
    build, traj, report = any_humanoid.stand("g1", 0.3)
    assert report.verdict == "consistent"
    return build.robot, list(build.contacts), traj


def _diagnose(robot, contacts, traj, W):
    report = check_trajectory(robot, dataclasses.replace(traj, contact_wrenches=W), contacts)
    assert report.verdict == "inconsistent"
    return report.diagnosis[0]


def test_third_party_robot_faults_are_named(g1_standing):
    robot, contacts, traj = g1_standing
    # The wrench balance's causes: without the torques, a mass error and a gain are the same
    # data (with them the joint rows tell the two apart: test_causes_torque.py).
    traj = dataclasses.replace(traj, tau=None)
    W0 = traj.contact_wrenches
    flipped = W0.copy()
    flipped[:, 1] *= -1
    best = _diagnose(robot, contacts, traj, flipped)
    assert best.cause == "sign_flip" and best.parameters["contacts"] == [contacts[1].name]
    best = _diagnose(robot, contacts, traj, W0 / 1000)
    assert best.cause == "force_gain" and np.allclose(best.parameters["gains"], 1000, rtol=1e-6)
    best = _diagnose(robot, contacts, traj, 1.05 * W0)
    assert best.cause == "mass_error" and best.parameters["mass_scale"] == pytest.approx(
        1.05, rel=1e-6
    )
    missing = W0.copy()
    missing[:, 0] = 0.0
    best = _diagnose(robot, contacts, traj, missing)
    assert best.cause == "missing_contact" and best.parameters["contact"] == contacts[0].name
