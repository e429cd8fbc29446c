"""Lags of the contact forces against the kinematics, by whole steps and by a fraction of a
step, fitted without the central-difference bias, with an interval that holds the truth; and
the note a consistent log gets when a one-step shift removes its small residual.

The logs are cut from one MuJoCo run at 2 kHz (``tests/_artefact_logs.py``), so the forces can
be shifted by 7 ms (3.5 samples at 500 Hz) with the simulator's own values, not interpolated.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest

import wholebody as wb
from wholebody.check import CheckOptions
from wholebody.check.analysis import check_trajectory
from wholebody.diagnosis.causes_timing import semi_implicit_euler

from ._artefact_logs import FINE_DT, ROOT, cut, fine_run
from .test_diagnosis import FEET

pytest.importorskip("mujoco")


@pytest.fixture(scope="module")
def fine():
    return fine_run()


def _lag_finding(robot, traj):
    """The named cause of an inconsistent log, or the note of a consistent one (a 7 ms lag of
    a slow squat after its landing stays within 1 % m g)."""
    report = check_trajectory(robot, traj, FEET)
    if report.verdict == "inconsistent":
        best = report.diagnosis[0]
    else:
        assert report.notes, report.format_summary()
        best = report.notes[0]
    assert best.cause == "time_offset", report.format_summary()
    return best


@pytest.mark.parametrize("logged_a", [True, False], ids=["a", "no-a"])
@pytest.mark.parametrize("every", [2, 4], ids=["1kHz", "500Hz"])
@pytest.mark.parametrize("lag_ms", [7.0, -3.5])
def test_sub_sample_lag_within_half_a_millisecond(humanoid, fine, every, logged_a, lag_ms):
    steps = int(round(lag_ms * 1e-3 / FINE_DT))
    traj = cut(fine, every, lag_steps=steps)
    if not logged_a:
        traj = dataclasses.replace(traj, a=None)
    best = _lag_finding(humanoid, traj)
    lag = best.parameters["lag_seconds"]
    lo, hi = best.parameters["interval_seconds"]
    assert abs(lag - lag_ms * 1e-3) <= 0.5e-3, best.message
    assert lo <= lag_ms * 1e-3 <= hi, best.message
    if logged_a:  # against the simulator's own accelerations: exact to the interpolation
        assert abs(lag - lag_ms * 1e-3) <= 1e-5


def test_euler_velocities_are_recognised_and_the_half_step_corrected(humanoid):
    pytest.importorskip("mujoco")
    sys.path.insert(0, str(ROOT / "examples"))
    import mujoco_humanoid_simulation as sim

    run = sim.simulate(humanoid, 0.5)  # 1 kHz, logged at every step
    q, v = run.for_robot(humanoid)[:2]
    assert semi_implicit_euler(q, v)
    # A measured-looking v (the exact derivative of a smooth q) is not an integrator's.
    t = np.linspace(0, 1, 500)[:, None]
    q_s = np.hstack([np.zeros((500, 6)), np.ones((500, 1)), np.sin(3 * t + np.arange(4))])
    v_s = np.hstack([np.zeros((500, 6)), 3 * np.cos(3 * t + np.arange(4))])
    assert not semi_implicit_euler(q_s, v_s)
    best = _lag_finding(humanoid, dataclasses.replace(cut(run, 1, lag_steps=7), a=None))
    assert abs(best.parameters["lag_seconds"] - 7e-3) <= 0.1e-3, best.message
    assert "semi-implicit Euler" in best.message


@pytest.mark.parametrize("every", [2, 4], ids=["1kHz", "500Hz"])
@pytest.mark.parametrize("steps", [1, -1], ids=["late", "early"])
def test_one_step_lag_below_tolerance_is_a_note(humanoid, fine, every, steps):
    traj = cut(fine, every, lag_steps=steps * every)
    report = check_trajectory(humanoid, traj, FEET)
    if report.verdict != "consistent":  # a 2 ms lag at 500 Hz is over tolerance: a cause
        assert report.diagnosis[0].cause == "time_offset"
        return
    assert report.diagnosis == []
    assert len(report.notes) == 1, report.format_summary()
    note = report.notes[0]
    dt = every * FINE_DT
    assert note.cause == "time_offset" and note.parameters["note"]
    assert note.parameters["lag_seconds"] == pytest.approx(steps * dt, abs=1e-6)
    assert note.explained > 0.99
    assert "note" in report.format_summary() and report.summary()["notes"]


@pytest.mark.parametrize("every", [2, 4], ids=["1kHz", "500Hz"])
def test_clean_logs_have_no_note(humanoid, fine, every):
    for traj in (cut(fine, every), dataclasses.replace(cut(fine, every), a=None)):
        report = check_trajectory(humanoid, traj, FEET)
        assert report.diagnosis == [] and report.notes == [], report.format_summary()


def test_lag_interval_covers_under_correlated_noise(humanoid, fine):
    """95 % intervals over 20 seeds of AR(1) noise (correlation 0.95 per sample, 0.05 N: the
    lag explains most of the residual): the truth inside on at least 16 (binomial:
    P(<16 | 0.95) < 2 %)."""
    base = cut(fine, 2, lag_steps=7)
    inside = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        e = np.zeros(base.contact_wrenches.shape)
        step = rng.normal(scale=0.05 * np.sqrt(1 - 0.95**2), size=e.shape)
        e[0] = rng.normal(scale=0.05, size=e.shape[1:])
        for i in range(1, len(e)):
            e[i] = 0.95 * e[i - 1] + step[i]
        e[..., 3:] *= 0.05  # moments: 5 cm lever
        noisy = dataclasses.replace(base, contact_wrenches=base.contact_wrenches + e)
        # Tolerances of 0.1 % m g and 1 mm: over them, the lag is a tested cause.
        report = check_trajectory(
            humanoid, noisy, FEET, CheckOptions(force_tolerance=1e-3, moment_tolerance=1e-3)
        )
        best = next(f for f in report.diagnosis if f.cause == "time_offset")
        lo, hi = best.parameters["interval_seconds"]
        inside += lo <= 3.5e-3 <= hi
    assert inside >= 16


def test_third_party_robot_lag(humanoid):
    try:
        wb.load("g1")
    except wb.errors.MissingDependencyError:
        pytest.skip("example-robot-data is not installed")
    sys.path.insert(0, str(ROOT / "examples"))
    import mujoco_any_humanoid

    build, traj, report = mujoco_any_humanoid.stand("g1", 0.3)
    assert report.verdict == "consistent" and report.notes == []
    W = traj.contact_wrenches
    shifted = dataclasses.replace(traj, contact_wrenches=W[np.clip(np.arange(len(W)) - 5, 0, None)])
    check = check_trajectory(build.robot, shifted, list(build.contacts))
    found = check.diagnosis[0] if check.diagnosis else check.notes[0]
    dt = float(np.median(np.diff(traj.time)))
    assert found.cause == "time_offset"
    assert found.parameters["lag_seconds"] == pytest.approx(5 * dt, abs=0.05 * dt)
