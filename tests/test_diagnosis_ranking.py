"""One ranking of the causes: scored on held-out windows (a sensor offset under noisy
velocities is not named a gain, nor a gain an offset), ties said with what makes them ties
and what would separate them, one runner-up for every reader, residuals that no hypothesis
covers said unexplained, and a cause of another residual family ranked on the same scale.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pinocchio as pin
import pytest

from wholebody.check import CheckOptions
from wholebody.check.analysis import check_trajectory
from wholebody.diagnosis import DESCRIPTIVE_CAUSES, Family, Finding
from wholebody.diagnosis.causes import REFITTED
from wholebody.diagnosis.ranking import held_out_windows, rank

from ._artefact_logs import check_options, standing_log
from .test_diagnosis import FEET


def _noisy(robot, traj, sigma, seed=1):
    """``v`` with white noise of ``sigma``, ``q`` integrated from it (an encoder's pair), no
    accelerations: they are differentiated, noisy."""
    rng = np.random.default_rng(seed)
    q0, v, _, _ = traj.for_robot(robot)
    v = v + rng.normal(0.0, sigma, v.shape)
    q = np.empty_like(q0)
    q[0] = q0[0]
    for i, dt in enumerate(np.diff(traj.time)):
        q[i + 1] = pin.integrate(robot.model, q[i], v[i + 1] * dt)
    return dataclasses.replace(
        traj, q=q, v=v, a=None, tau=None, joint_names=tuple(robot.joint_names)
    )


@pytest.fixture(scope="module")
def noisy(humanoid, squat):
    return _noisy(humanoid, squat, 0.002)


def _diagnosis(robot, traj, W, contacts=FEET):
    # At 1 % m g: the shipped log names its simulator, whose floor (1e-7 m g) the ties'
    # evidence criterion would read the corrections' round-off against.
    physical = CheckOptions(preset="physical")
    log = dataclasses.replace(traj, contact_wrenches=W)
    report = check_trajectory(robot, log, contacts, physical)
    assert report.verdict == "inconsistent", report.format_summary()
    return report.diagnosis


@pytest.fixture(scope="module")
def squat():
    from wholebody.trajectory import Trajectory

    from .test_diagnosis import ROOT

    return Trajectory.load(ROOT / "data" / "humanoid_squat.npz")


def test_one_ranking_for_every_reader(humanoid, squat):
    findings = _diagnosis(humanoid, squat, 1.1 * squat.contact_wrenches)
    best = findings[0]
    ranking = best.ranking
    assert [e.cause for e in ranking.entries] == [f.cause for f in findings]
    assert ranking.named == best.cause == ranking.entries[0].cause
    # The runner-up is the next entry of another cause that explains anything, the same name
    # the first finding carries, and the margin is their criteria's difference.
    runner = next(f for f in findings[1:] if f.cause != best.cause and f.explained > 0)
    assert ranking.runner_up.cause == best.runner_up == runner.cause
    assert ranking.margin == pytest.approx(runner.criterion - best.criterion)
    assert json.loads(json.dumps(ranking.to_dict()))["named"] == best.cause
    # Hypotheses (residual arrays) are not kept in the report.
    assert all(f.hypothesis is None for f in findings)


def test_ties_are_said_with_why_and_what_separates_them(humanoid, squat):
    # Without torques: the joint rows would separate these (test_causes_torque.py).
    squat = dataclasses.replace(squat, tau=None)
    W = squat.contact_wrenches
    best = _diagnosis(humanoid, squat, 1.1 * W)[0]
    assert best.cause == "mass_error"
    # With the states, a payload on the pelvis (moving with the CoM in a squat) joins the tie.
    assert best.message.startswith("a mass error or a gain of the readings")
    assert "indistinguishable in this log because" in best.message
    assert "a known load separates them" in best.message
    assert [t.causes for t in best.ranking.ties][0] == ("mass_error", "force_gain")
    # A CoM offset and the same moment point on both soles, which are parallel here.
    shifted = W.copy()
    shifted[..., 3:] += np.cross([0.03, -0.02, 0.0], W[..., :3])
    best = _diagnosis(humanoid, squat, shifted)[0]
    assert best.cause == "com_offset" and "wrong_point" in best.parameters["alternative_causes"]
    assert "soles parallel to each other" in best.message
    assert "a stance with the soles turned against each other" in best.message


@pytest.mark.parametrize(
    "fault, named, not_named",
    [("offset", "sensor_offset", "force_gain"), ("gain", "force_gain", "sensor_offset")],
)
def test_noisy_velocities_offset_is_not_a_gain(humanoid, noisy, fault, named, not_named):
    # v with white noise of 0.002 (the accelerations differentiated from it): ranked on the
    # held-out windows, the cause with spare values predicts them worse than the truth.
    W = noisy.contact_wrenches.copy()
    if fault == "offset":
        W[:, 0, 2] += 30.0
    else:
        W[:, 0] *= 1.3
    findings = _diagnosis(humanoid, noisy, W)
    best = findings[0]
    assert best.cause == named and named not in best.parameters.get("alternative_causes", [])
    other = next(f for f in findings if f.cause == not_named)
    assert other.held_out < best.held_out
    # Every fitted cause was refitted on held-out folds.
    refitted = {c.__name__ for c in REFITTED}
    assert refitted  # the registry is not empty
    for f in findings:
        if f.cause in {"mass_error", "force_gain", "sensor_offset", "com_offset", "time_offset"}:
            assert f.held_out_windows >= 3, f.cause


def _uncovered(fault, W, t):
    W = W.copy()
    if fault == "moment gain":  # one foot's moment channels scaled: no cause scales them alone
        W[:, 0, 3:] *= 0.3
    else:  # one foot's gain oscillating 1 +- 0.3: no cause fits a gain that changes
        W[:, 0] *= (1 + 0.3 * np.sin(2 * np.pi * 1.5 * t))[:, None]
    return W


@pytest.mark.parametrize("fault", ["moment gain", "oscillating gain"])
def test_causes_without_a_hypothesis_are_unexplained(fault):
    pytest.importorskip("mujoco")
    robot, contacts, clean = standing_log("humanoid")
    W = _uncovered(fault, clean.contact_wrenches, clean.time)
    tight = dict(force_tolerance=1e-9 / robot.weight, moment_tolerance=1e-9 / robot.weight)
    traj = dataclasses.replace(clean, contact_wrenches=W)
    report = check_trajectory(robot, traj, contacts, check_options(tight))
    best = report.diagnosis[0]
    assert best.cause == "unexplained", best.message
    attempt = best.parameters["best_cause"]
    assert f"the best, {attempt.replace('_', ' ')}" in best.message
    assert "read as missing forces" in best.message
    ranking = best.ranking
    assert ranking.unexplained and ranking.named == "unexplained"
    assert ranking.runner_up.cause == attempt == ranking.entries[0].cause


def test_held_out_folds_span_the_log(humanoid, squat):
    W = squat.contact_wrenches.copy()
    W[:, 0, 2] += 30.0
    captured = []
    from unittest import mock

    from wholebody.check import engine as analysis

    with mock.patch.object(analysis, "diagnose", lambda d: captured.append(d) or []):
        check_trajectory(humanoid, dataclasses.replace(squat, contact_wrenches=W), FEET)
    d = captured[0]
    folds = held_out_windows(d)
    assert len(folds) == 5
    cover = np.sum(folds, axis=0)
    assert np.all(cover == 1)  # every kept sample held out exactly once
    S = len(d.time)
    for fold in folds:  # each fold's windows reach the log's first and last fifths
        idx = np.flatnonzero(fold)
        assert idx.min() < S / 5 and idx.max() > 4 * S / 5


def test_a_cause_of_another_residual_joins_the_ranking(humanoid, squat):
    # A cause scored on another residual family (the joint rows' torques, say) competes on
    # the same scale: its n log(remaining) against the wrench causes' own.
    captured = []
    from unittest import mock

    from wholebody.check import engine as analysis

    W = 1.1 * squat.contact_wrenches
    # The wrench balance alone (tau=None): the joint family here is the synthetic one below.
    log = dataclasses.replace(squat, contact_wrenches=W, tau=None)
    with mock.patch.object(analysis, "diagnose", lambda d: captured.append(d) or []):
        check_trajectory(humanoid, log, FEET)
    d = captured[0]
    from wholebody.diagnosis import diagnose

    findings = [dataclasses.replace(f, ranking=None) for f in diagnose(d)]
    wrench = Family("wrench", d.n_independent, d.floor)
    best = findings[0]
    for n, first in ((10.0 * d.n_independent, "joint_gain"), (1.0, best.cause)):
        joint = Finding(
            "joint_gain",
            0.999,
            "a joint's torque gain",
            n_parameters=1,
            family="joint",
            held_out=0.999,
            held_out_windows=5,
        )
        ranked = rank(
            d, findings[1:] + [best, joint], {"wrench": wrench, "joint": Family("joint", n, 1e-6)}
        )
        assert ranked[0].cause == first
        assert ranked[0].ranking.entries[0].cause == first
    assert DESCRIPTIVE_CAUSES == ("missing_contact", "missing_force")
