"""Honest verdicts (issue 21): the evidence is part of the verdict, a bias is not noise, every
waiver has a test of its failing direction, and float32 logs of clean simulations pass.

The faults are injected into the shipped squat log (MuJoCo, balanced to 1e-6 N). "Noisy v"
is the log without accelerations, ``v`` with white noise (std ``sigma`` on every column) and
``q`` re-integrated from it on the manifold, so that ``q`` and ``v`` agree as an encoder's
would: the accelerations are differentiated and every single sample is within its expected
error of differentiation.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from wholebody.check import CheckOptions
from wholebody.check.analysis import check_trajectory
from wholebody.cli import EXIT_INCONCLUSIVE, EXIT_OK, exit_code
from wholebody.contacts import SurfaceContact
from wholebody.conventions import check_conventions
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH as X
from wholebody.models import HUMANOID_SOLE_HALF_WIDTH as Y
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
FEET = [SurfaceContact(f, half_length=X, half_width=Y, mu=1.0) for f in ("left_sole", "right_sole")]
NO_ALARM = ("consistent", "consistent_except_unreliable")


@pytest.fixture(scope="module")
def squat(humanoid) -> Trajectory:
    """The shipped log in the robot's joint order (so that noise can be added per column)."""
    traj = Trajectory.load(ROOT / "data" / "humanoid_squat.npz")
    q, v, a, _ = traj.for_robot(humanoid)
    return dataclasses.replace(traj, q=q, v=v, a=a, tau=None, joint_names=humanoid.joint_names)


def _noisy(robot, traj: Trajectory, sigma: float, seed: int = 0) -> Trajectory:
    rng = np.random.default_rng(seed)
    v = traj.v + rng.normal(0.0, sigma, traj.v.shape)
    q = np.empty_like(traj.q)
    q[0] = traj.q[0]
    for i, dt in enumerate(np.diff(traj.time)):
        q[i + 1] = pin.integrate(robot.model, q[i], v[i + 1] * dt)
    return dataclasses.replace(traj, q=q, v=v, a=None)


def _float32(traj: Trajectory) -> Trajectory:
    """A copy stored in single precision (as MJX, MuJoCo Warp and Newton log by default)."""

    def cast(x):
        return None if x is None else x.astype(np.float32).astype(np.float64)

    return dataclasses.replace(
        traj,
        time=cast(traj.time),
        q=cast(traj.q),
        v=cast(traj.v),
        a=cast(traj.a),
        contact_wrenches=cast(traj.contact_wrenches),
    )


def _lagged(W: np.ndarray, samples: int) -> np.ndarray:
    """Wrenches ``samples`` late (the first held)."""
    return np.concatenate([np.repeat(W[:1], samples, axis=0), W[:-samples]])


def _crop_lagged(traj, samples: int):
    """Wrenches ``samples`` late within the log's span: the kinematics of rows ``samples..``
    with the wrenches of rows ``..-samples`` (nothing held at the start)."""
    s = samples
    return dataclasses.replace(
        traj,
        time=traj.time[s:],
        q=traj.q[s:],
        v=traj.v[s:],
        a=None if traj.a is None else traj.a[s:],
        tau=None,
        contact_wrenches=traj.contact_wrenches[:-s],
    )


def _named(report, causes) -> bool:
    best = report.diagnosis[0]
    return best.cause in causes or bool(
        set(best.parameters.get("alternative_causes", [])) & set(causes)
    )


# --- the reproduction of the issue --------------------------------------------------------------


def test_force_gain_behind_noisy_velocities_is_found(humanoid, squat):
    """Squat, no accelerations, v with sigma 0.005, q re-integrated, wrenches x1.5: every
    sample is within its differentiation error, and the log is inconsistent, named."""
    traj = _noisy(humanoid, squat, 0.005)
    traj = dataclasses.replace(traj, contact_wrenches=1.5 * traj.contact_wrenches)
    report = check_trajectory(humanoid, traj, FEET)
    assert report.unreliable.mean() > 0.9  # the per-sample test cannot see it
    assert report.verdict == "inconsistent", report.format_summary()
    best = report.diagnosis[0]
    assert best.cause == "force_gain", report.format_summary()
    assert np.allclose(best.parameters["gains"], 1 / 1.5, atol=0.03)
    assert report.evidence.systematic_windows > 0
    assert "systematic error" in report.format_summary()


@pytest.mark.parametrize(
    "fault, causes",
    [
        ("gain", {"force_gain"}),
        ("mass", {"mass_error"}),
        ("lag", {"time_offset"}),
    ],
)
def test_noisy_velocity_faults_are_inconsistent_and_named(humanoid, squat, fault, causes):
    traj = _noisy(humanoid, squat, 0.002, seed=1)
    W = traj.contact_wrenches
    if fault == "gain":  # one sensor 30 % high
        W = W.copy()
        W[:, 0] *= 1.3
    elif fault == "mass":  # the model 5 % light: the forces carry 5 % more
        W = 1.05 * W
    else:  # 20 ms late, within the log's span (the samples shifted out dropped, none held)
        traj = _crop_lagged(traj, 10)
        W = traj.contact_wrenches
    report = check_trajectory(humanoid, dataclasses.replace(traj, contact_wrenches=W), FEET)
    assert report.verdict == "inconsistent", report.format_summary()
    assert _named(report, causes), report.format_summary()
    if fault == "mass":
        assert report.diagnosis[0].parameters["mass_scale"] == pytest.approx(1.05, abs=0.01)


def test_clean_noisy_velocities_are_never_inconsistent(humanoid, squat):
    """The passing direction of the systematic test: noise, white or correlated over a few
    samples, is not a bias (4 seeds each). Per sample the check cannot see the tolerance:
    inconclusive, with the reason."""
    rng = np.random.default_rng(7)
    for width in (1, 4):
        for seed in range(3):
            noise = rng.normal(0.0, 0.004, squat.v.shape)
            if width > 1:  # a moving average, rescaled to the same std
                kernel = np.ones(width) / np.sqrt(width)
                noise = np.apply_along_axis(np.convolve, 0, noise, kernel, mode="same")
            traj = _noisy(humanoid, dataclasses.replace(squat, v=squat.v + noise), 0.0, seed)
            report = check_trajectory(humanoid, traj, FEET)
            assert report.verdict == "inconclusive", report.format_summary()
            assert not report.systematic.any()
            assert any("waived" in why for why in report.inconclusive_because())


# --- evidence: share checked, waived, achieved bound ------------------------------------------


def test_one_sample_of_a_thousand_is_inconclusive(humanoid, squat):
    W = squat.contact_wrenches.copy()
    W[1:] = np.nan
    report = check_trajectory(humanoid, dataclasses.replace(squat, contact_wrenches=W), FEET)
    assert report.n_checked == 1
    assert report.verdict == "inconclusive"
    assert report.evidence.share_checked == pytest.approx(0.001)
    assert exit_code([{"verdict": report.verdict}]) == EXIT_INCONCLUSIVE == 5
    summary = report.summary()
    assert summary["evidence"]["share_checked"] == pytest.approx(0.001)
    assert "0.1 % of the samples checked" in summary["evidence"]["inconclusive_because"][0]
    # The minimum is an option: asked for, one sample may do.
    lenient = check_trajectory(
        humanoid,
        dataclasses.replace(squat, contact_wrenches=W),
        FEET,
        CheckOptions(min_checked_share=0.0),
    )
    assert lenient.verdict == "consistent"
    assert exit_code([{"verdict": lenient.verdict}]) == EXIT_OK


def test_values_beyond_physical_magnitudes_make_the_log_inconsistent(humanoid, squat):
    W = squat.contact_wrenches.copy()
    W[1:, 0, 2] = 1e9
    report = check_trajectory(humanoid, dataclasses.replace(squat, contact_wrenches=W), FEET)
    assert report.verdict == "inconsistent"
    assert report.evidence.n_implausible == 999
    assert "beyond physical magnitudes" in report.format_summary()


def test_evidence_figures_are_stated(humanoid, squat, tmp_path):
    report = check_trajectory(humanoid, dataclasses.replace(squat, a=None), FEET)
    ev = report.evidence
    assert ev.share_checked == 1.0 and ev.n_checked == len(squat)
    # The achieved bound: the median per-sample expected error, computed per sample.
    assert ev.bound_force == pytest.approx(np.median(report.bound_force))
    assert 0 < ev.bound_force < report.force_tolerance * report.weight
    assert np.isfinite(ev.window_bound_force) and ev.window_bound_force < ev.bound_force
    text = report.format_summary()
    assert "of samples checked" in text and "achieved bound" in text
    assert "evidence" in report.summary()
    report.to_csv(tmp_path / "r.csv")
    header = (tmp_path / "r.csv").read_text().splitlines()[0].split(",")
    assert {"bound_force", "bound_moment", "waived", "systematic"} <= set(header)


def test_bound_wider_than_tolerance_is_inconclusive(humanoid, squat):
    traj = _noisy(humanoid, squat, 0.005, seed=3)
    report = check_trajectory(humanoid, traj, FEET, CheckOptions(max_waived_share=1.0))
    assert report.verdict == "inconclusive"
    assert any("wider than the tolerance" in why for why in report.inconclusive_because())


# --- failing directions of each waiver ---------------------------------------------------------


def test_differentiation_waiver_does_not_hide_a_mass_error(humanoid, squat):
    """Differentiation (noise): see the noisy tests above; and without noise, where the log's
    first samples are waived (one-sided differences), a +5 % mass error over the log."""
    traj = dataclasses.replace(squat, a=None)
    clean = check_trajectory(humanoid, traj, FEET)
    assert clean.verdict in NO_ALARM and clean.unreliable[:3].any()  # the ends are waived
    faulty = dataclasses.replace(traj, contact_wrenches=1.05 * traj.contact_wrenches)
    report = check_trajectory(humanoid, faulty, FEET)
    assert report.verdict == "inconsistent"
    assert _named(report, {"mass_error"})


def test_log_end_waiver_does_not_hide_a_push_at_the_end(humanoid, squat):
    """The last samples use one-sided differences (waived when off); a push over the last
    40 ms is seen."""
    traj = dataclasses.replace(squat, a=None)
    W = traj.contact_wrenches.copy()
    W[-20:, 0, 0] += 40.0
    report = check_trajectory(humanoid, dataclasses.replace(traj, contact_wrenches=W), FEET)
    assert report.verdict == "inconsistent"
    assert report.inconsistent_samples[-20:].sum() >= 15


def _with_impact(robot, traj: Trajectory, at: int, impulse: float) -> Trajectory:
    """Consistent impacts: a one-sample vertical force spike through the CoM on the soles
    at ``at`` and the opposite one three samples later, with the base's vertical
    velocity stepping by the impulse over the mass in between (q re-integrated)."""
    W = traj.contact_wrenches.copy()
    dt = float(traj.time[1] - traj.time[0])
    v = traj.v.copy()
    dv_world = np.array([0.0, 0.0, impulse / robot.mass])
    for i in range(at, at + 3):
        R = pin.Quaternion(*traj.q[i, [6, 3, 4, 5]]).toRotationMatrix()
        v[i, :3] += R.T @ dv_world
    q = traj.q.copy()
    for i in range(at - 1, len(q) - 1):
        q[i + 1] = pin.integrate(robot.model, q[i], v[i + 1] * dt)
    for i, sign in ((at, 1.0), (at + 3, -1.0)):
        f = np.array([0.0, 0.0, sign * impulse / dt])
        com = robot.com(q[i])
        soles = [robot.placements(q[i], c.frame).se3().translation for c in FEET]
        # Half on each sole; the moment about the CoM taken out, half on each: through the
        # CoM, only the linear momentum changes.
        tau = -np.cross(0.5 * (soles[0] + soles[1]) - com, f)
        for j in range(2):
            W[i, j, :3] += 0.5 * f
            W[i, j, 3:] += 0.5 * tau
    return dataclasses.replace(traj, q=q, v=v, a=None, contact_wrenches=W)


def test_impact_waiver_does_not_hide_a_gain(humanoid, squat):
    """Samples next to an impact are waived (their differentiated accelerations are off by
    up to half the jump); a 20 % gain on the log is not excused with them."""
    traj = _with_impact(humanoid, squat, 500, 0.5)
    clean = check_trajectory(humanoid, traj, FEET)
    assert clean.unreliable[495:506].any() and clean.verdict != "inconsistent"
    faulty = dataclasses.replace(traj, contact_wrenches=1.2 * traj.contact_wrenches)
    report = check_trajectory(humanoid, faulty, FEET)
    assert report.verdict == "inconsistent"
    assert _named(report, {"force_gain", "mass_error"})
    # The impact samples do not veto the cause that fits everything else.
    assert report.diagnosis[0].explained > 0.9


def test_flag_waiver_does_not_hide_a_push(humanoid, squat):
    """Flagged samples (NaN wrenches on 40 % of the log) are not evidence either way; a push
    among the rest is seen."""
    W = squat.contact_wrenches.copy()
    W[:400] = np.nan
    W[600:700, 0, 0] += 60.0
    report = check_trajectory(humanoid, dataclasses.replace(squat, contact_wrenches=W), FEET)
    assert report.verdict == "inconsistent"
    assert report.diagnosis[0].cause == "missing_force"


def test_float32_floor_does_not_hide_faults(humanoid, squat):
    """The storage-resolution floor of a float32 log is micro-newtons: a 10 ms lag and a mass
    error are still inconsistent, with logged and with differentiated accelerations."""
    base = _float32(squat)
    for traj in (base, dataclasses.replace(base, a=None)):
        lagged = dataclasses.replace(traj, contact_wrenches=_lagged(traj.contact_wrenches, 5))
        report = check_trajectory(humanoid, lagged, FEET)
        assert report.verdict == "inconsistent" and _named(report, {"time_offset"})
        heavy = dataclasses.replace(traj, contact_wrenches=1.05 * traj.contact_wrenches)
        report = check_trajectory(humanoid, heavy, FEET)
        assert report.verdict == "inconsistent" and _named(report, {"mass_error"})
        assert report.evidence.float32


# --- float32 logs of clean simulations -------------------------------------------------------


def test_float32_shipped_log_is_consistent(humanoid, squat):
    traj = _float32(squat)
    logged = check_trajectory(humanoid, traj, FEET)
    assert logged.verdict == "consistent" and logged.evidence.float32
    # The data's own resolution is in the bound (float32 wrenches of ~300 N: ~1e-5 N).
    assert 1e-6 < logged.evidence.resolution_force < 1e-3
    differentiated = check_trajectory(humanoid, dataclasses.replace(traj, a=None), FEET)
    assert differentiated.verdict in NO_ALARM, differentiated.format_summary()


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
def test_float32_clean_simulations_raise_no_alarm(humanoid, examples, scenario, every):
    sim, _ = examples
    duration = 2.0 if scenario == "single_support" else 0.6
    traj = _float32(sim.simulate(humanoid, duration, every=every, scenario=scenario))
    logged = check_trajectory(humanoid, traj, FEET)
    differentiated = check_trajectory(humanoid, dataclasses.replace(traj, a=None), FEET)
    for report in (logged, differentiated):
        assert report.conventions_passed, report.format_summary()
        assert not report.inconsistent_samples.any(), report.format_summary()
    if scenario == "squat":  # single support: cone findings at lift-off (test_diagnosis_sims)
        assert logged.verdict == "consistent"
        assert differentiated.verdict in NO_ALARM


def test_float32_third_party_robot_is_consistent(examples):
    import wholebody as wb

    _, any_humanoid = examples
    try:
        wb.load("g1")
    except wb.errors.MissingDependencyError:
        pytest.skip("example-robot-data is not installed")
    build, traj, _ = any_humanoid.stand("g1", 0.3)
    traj = _float32(traj)
    for t in (traj, dataclasses.replace(traj, a=None)):
        report = check_trajectory(build.robot, t, list(build.contacts))
        assert report.verdict in NO_ALARM, report.format_summary()


# --- convention checks --------------------------------------------------------------------------


def test_velocity_check_could_not_run_on_one_valid_sample(humanoid, squat):
    q = squat.q.copy()
    q[:-1] = np.nan  # one valid sample
    report = check_conventions(humanoid, dataclasses.replace(squat, q=q), FEET)
    check = report["velocity_matches_configuration"]
    assert check.passed and check.message.startswith("could not run")
    assert check.evidence["ran"] is False


def test_convention_findings_measure_what_they_explain(humanoid, squat):
    """A quaternion stored w-x-y-z: the finding's explained share is measured (the share of
    the disagreement its fix repairs), not a constant."""
    q = squat.q.copy()
    q[:, 3:7] = q[:, [6, 3, 4, 5]]
    turned = dataclasses.replace(squat, q=q)
    report = check_trajectory(humanoid, turned, FEET, CheckOptions(diagnose_causes=False))
    finding = report.diagnosis[0]
    assert finding.cause == "convention:velocity_matches_configuration"
    assert 0.9 < finding.explained <= 1.0
    assert "of the samples that failed the check" in report.format_summary()


def test_causes_report_runner_up_and_margin(humanoid, squat):
    W = squat.contact_wrenches.copy()
    W[:, 1] *= 1.3
    report = check_trajectory(humanoid, dataclasses.replace(squat, contact_wrenches=W), FEET)
    best = report.diagnosis[0]
    assert best.cause == "force_gain"
    # At 1 % of m g a payload placed by fit leaves a residual under the evidence floor too:
    # it is said as a tie (margin 0), never ahead of the gain.
    assert best.runner_up and best.runner_up != "force_gain" and best.margin >= 0
    assert np.isfinite(best.criterion)
    assert "runner-up" in report.format_summary()


# --- the command line ------------------------------------------------------------------------


def test_cli_exit_codes_of_the_new_verdicts(humanoid, squat, tmp_path):
    """The issue's runs as a user types them: the noisy-v gain log exits 1 naming the gain;
    one sample of a thousand exits 5; --min-checked-share 0 accepts it (exit 0)."""
    from .test_cli import PROFILE, run

    traj = _noisy(humanoid, squat, 0.005)
    faulty = tmp_path / "gain.npz"
    dataclasses.replace(traj, contact_wrenches=1.5 * traj.contact_wrenches).save(faulty)
    result = run("check", str(faulty), "--config", str(PROFILE))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "need a gain" in result.stdout and "systematic error" in result.stdout
    W = squat.contact_wrenches.copy()
    W[1:] = np.nan
    sparse = tmp_path / "sparse.npz"
    dataclasses.replace(squat, contact_wrenches=W).save(sparse)
    result = run("check", str(sparse), "--config", str(PROFILE))
    assert result.returncode == 5 and "INCONCLUSIVE" in result.stdout
    result = run("check", str(sparse), "--config", str(PROFILE), "--min-checked-share", "0")
    assert result.returncode == 0, result.stdout
    result = run("check", str(sparse), "--config", str(PROFILE), "--max-waived-share", "2")
    assert result.returncode == 2 and "share between 0 and 1" in result.stderr


def test_catch_all_does_not_beat_the_simple_cause(humanoid, squat):
    """A 5 % heavier robot with 8 ms late forces: the per-sample "missing forces" describe the
    residual too (88 %), but the mass error and the common gain are named, as a tie (the same
    correction; the gain, one value per contact, takes a little more of the lag's trace). At
    1 % m g: the log names its simulator, whose floor (1e-7 m g) tells them apart by that
    trace."""
    W = _lagged(1.05 * squat.contact_wrenches, 4)
    physical = CheckOptions(preset="physical")
    for traj in (squat, dataclasses.replace(squat, a=None)):
        log = dataclasses.replace(traj, contact_wrenches=W)
        report = check_trajectory(humanoid, log, FEET, physical)
        best = report.diagnosis[0]
        named = {best.cause, *best.parameters["alternative_causes"]}
        # A payload placed by fit also leaves a residual under the evidence floor at 1 % m g.
        assert {"mass_error", "force_gain"} <= named <= {"mass_error", "force_gain", "payload"}
        assert best.cause in ("mass_error", "force_gain"), report.format_summary()
        assert best.margin <= np.log(len(squat)) + 1e-9  # within one parameter's price


@pytest.mark.parametrize("samples", [5, 10, -5])
def test_a_lag_with_held_ends_is_fitted_without_bias(humanoid, squat, samples):
    """Forces late (the first reading held until the stream starts) or early (the last held):
    the held rows are flagged, and the lag fit reads no flagged row (they hold zeros, not
    readings) and judges no sample whose forces were shifted in from beyond the log. With
    logged accelerations the lag is exact; before, a flagged row read by the fit biased a
    10 ms lag to 11.9 ms and left 19 % of the residual unexplained."""
    W = squat.contact_wrenches
    if samples > 0:
        W = _lagged(W, samples)
    else:
        W = np.concatenate([W[-samples:], np.repeat(W[-1:], -samples, axis=0)])
    report = check_trajectory(humanoid, dataclasses.replace(squat, contact_wrenches=W), FEET)
    assert report.verdict == "inconsistent"
    best = report.diagnosis[0]
    assert best.cause == "time_offset", report.format_summary()
    dt = float(np.median(np.diff(squat.time)))
    assert best.parameters["lag_seconds"] == pytest.approx(samples * dt, abs=1e-6)
    assert best.explained > 0.99
