"""Noise, time stamps and tolerances measured from the log itself (issues 35 and 40): the
noise's white and correlated parts against the generator's, the filter against its closed
form, the noise-derived bounds at their stated level over seeds of correlated noise, and for
every way of excusing a sample (measured noise, the measured preset's filter, the engine's
floor, the stamps' jitter and gaps) a fault it could hide that is still caught."""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.special import ndtri

import wholebody as wb
from wholebody.check import CheckOptions, check_trajectory
from wholebody.check.noise import gaussian_kernel
from wholebody.check.sources import Differentiation
from wholebody.conventions.noise import (
    FALSE_ALARM,
    level_sigmas,
    measure_noise,
    measure_stamps,
    sigmas,
)
from wholebody.io.profile import load_profile
from wholebody.models import models_dir
from wholebody.trajectory import Trajectory

from ._identify_logs import TALOS_FEET, ar1, measured, perturbed_urdf, talos_squat

ROOT = Path(__file__).resolve().parents[1]
NO_ALARM = ("consistent", "consistent_except_unreliable")


def _noise(rng, n, white, correlated, rho):
    return white * rng.normal(size=n) + correlated * ar1(rng, (n,), rho)


# --- measuring the noise ----------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_white_and_correlated_parts_are_measured(seed):
    """A 0.3 Hz motion (amplitude 1) with white noise 1e-3 and AR(1) noise 3e-3 of
    coefficient 0.9 (correlation time -1 / ln 0.9 = 9.5 samples), 20,000 samples: white within
    15 %, correlated within 10 %, its correlation time within 25 % (the grid's steps are
    26 %), and the total std within 5 %; motion alone (no noise) measures below 1e-6."""
    rng = np.random.default_rng(seed)
    n, dt = 20_000, 1e-3
    t = np.arange(n) * dt
    motion = np.sin(2 * np.pi * 0.3 * t)
    got = measure_noise(motion + _noise(rng, n, 1e-3, 3e-3, 0.9), dt)
    assert got.white[0] == pytest.approx(1e-3, rel=0.15)
    assert got.correlated[0] == pytest.approx(3e-3, rel=0.10)
    assert got.correlation[0] == pytest.approx(-1 / math.log(0.9), rel=0.25)
    assert got.std[0] == pytest.approx(math.hypot(1e-3, 3e-3), rel=0.05)
    assert measure_noise(motion, dt).std[0] < 1e-6


def test_filtered_noise_std_against_monte_carlo():
    """The std of white + AR(1) noise through the measured preset's Gaussian and a mean over
    25 samples (:meth:`Noise.filtered_std`, from the autocovariance) equals the std of the
    same filter applied to 400,000 samples of it within 3 % (the sample std's own error is
    about 1 %)."""
    rng = np.random.default_rng(3)
    n, dt = 400_000, 1e-3
    x = _noise(rng, n, 1e-3, 3e-3, 0.9)
    noise = measure_noise(x[:50_000], dt)
    kernel = gaussian_kernel(20.0, dt)
    for means in (1, 25):
        h = np.convolve(kernel, np.full(means, 1.0 / means))
        empirical = float(np.std(np.convolve(x, h, mode="valid")))
        assert noise.filtered_std(kernel, means)[0] == pytest.approx(empirical, rel=0.03)


def test_kernel_is_minus_3_db_at_its_cutoff():
    """The measured preset's kernel: weights summing to 1, its frequency response (the DTFT
    of the symmetric weights) 1 / sqrt 2 at the cutoff and the Gaussian's
    ``exp(-ln 2 (f / cutoff)^2 / 2)`` elsewhere, within the truncation at 4 sd (4e-4)."""
    dt, cutoff = 1e-3, 5.0
    h = gaussian_kernel(cutoff, dt)
    j = (np.arange(len(h)) - len(h) // 2) * dt
    assert h.sum() == pytest.approx(1.0, abs=1e-14)
    assert float(np.sum(h * np.cos(2 * np.pi * cutoff * j))) == pytest.approx(2**-0.5, abs=4e-4)
    for f in (0.0, 1.0, cutoff, 10.0, 20.0):
        response = float(np.sum(h * np.cos(2 * np.pi * f * j)))
        assert response == pytest.approx(math.exp(-math.log(2) * (f / cutoff) ** 2 / 2), abs=4e-4)


def test_sigmas_are_the_family_wise_quantile():
    """``sigmas(n)``: the two-sided Gaussian quantile at FALSE_ALARM / n (scipy's ndtri, an
    independent reference), at least 4."""
    for n in (1, 16, 1000, 10_000):
        expected = max(4.0, float(-ndtri(FALSE_ALARM / n / 2)))
        assert sigmas(n) == pytest.approx(expected, rel=1e-12)
    assert sigmas(1000) == pytest.approx(4.892, abs=1e-3)


def test_noise_bounds_hold_their_level_over_seeds():
    """Coverage over 300 seeds of correlated noise (white 1e-3 + AR(1) 3e-3, 0.9) on a
    motion, 4,000 samples each, filtered by the measured preset's Gaussian (20 Hz): the
    bound ``level_sigmas(n, rate, p)`` times the filtered std, both from the noise measured
    in the series itself, is crossed somewhere in the series in a share of the seeds of at
    most ``p`` (Rice's expected number of crossings bounds the probability of one) and not
    far below it: at ``p = 0.2`` between 0.03 and 0.27 (binomial, 300 draws, 3 sd: the
    level is stated, not merely safe), at the check's own level (FALSE_ALARM, 1e-3) in at
    most 2 of 300."""
    dt, n = 1e-3, 4000
    t = np.arange(n) * dt
    motion = 0.5 * np.sin(2 * np.pi * 0.5 * t)
    kernel = gaussian_kernel(20.0, dt)
    half = len(kernel) // 2
    at_level = at_check = 0
    for seed in range(300):
        e = _noise(np.random.default_rng(100 + seed), n, 1e-3, 3e-3, 0.9)
        noise = measure_noise(motion + e, dt)
        worst = float(np.max(np.abs(np.convolve(e, kernel, mode="same")[half:-half])))
        std = float(noise.filtered_std(kernel)[0])
        rate = math.sqrt(2 * (1 - float(noise.filtered_correlation(kernel)[0])))
        at_level += worst > level_sigmas(n - 2 * half, rate, 0.2) * std
        at_check += worst > level_sigmas(n - 2 * half, rate) * std
    assert 9 <= at_level <= 81, at_level
    assert at_check <= 2, at_check


def test_stamps_jitter_gaps_and_bad_stamps_are_measured():
    """Stamps of a 2 ms clock with 0.25 ms of jitter, a block of 40 samples dropped, one stamp
    NaN, one repeated and one going backwards: the jitter within 10 %, the step within 1 %, the
    gap at its sample with its length, each bad stamp at its sample and named in words."""
    rng = np.random.default_rng(4)
    n = 3000
    t = np.arange(n) * 2e-3 + rng.normal(0, 2.5e-4, n)
    t = np.delete(t, np.s_[1000:1040])
    t[1500] = np.nan
    t[2000] = t[1999]
    t[2500] = t[2498] - 1e-3
    s = measure_stamps(t)
    assert s.jitter == pytest.approx(2.5e-4, rel=0.10)
    assert s.step == pytest.approx(2e-3, rel=0.01)
    assert [g[0] for g in s.gaps] == [1000]
    assert s.gaps[0][2] == pytest.approx(41 * 2e-3, abs=2e-3)
    assert (s.not_finite, s.duplicated, s.backwards) == ([1500], [2000], [2500])
    text = s.describe()
    assert "stamps jitter by 0.25" in text and "1 gap (longest 82" in text
    assert "before sample 1000" in text
    assert "1 stamp not finite (sample 1500)" in text
    assert "1 stamp duplicated (sample 2000)" in text
    assert "1 stamp going backwards (sample 2500)" in text
    assert measure_stamps(np.arange(100) * 1e-3).jitter < 1e-12  # a regular clock


def test_differentiation_against_closed_form_across_a_gap_and_jitter():
    """Accelerations of ``v = sin(2 pi t)`` (closed form ``2 pi cos(2 pi t)``) sampled at
    1 kHz with a block dropped: inside each segment the central difference's error is below
    its closed-form bound ``(2 pi)^3 h^2 / 6`` (h = 1 ms: 4.2e-5 of the amplitude... here
    1.1e-4 at the segments' ends, second-order one-sided), nothing crosses the gap. With
    stamps jittering by 0.1 ms and white noise 1e-4 on v, the two-point span difference's
    error stays within 4 sd of its stated ``a sqrt 2 jitter / span`` plus the noise's
    ``sqrt 2 sigma / span`` on 99.9 % of the samples."""
    t = np.delete(np.arange(2000) * 1e-3, np.s_[700:760])
    v = np.sin(2 * np.pi * t)[:, None]
    stamps = measure_stamps(t)
    d = Differentiation.from_time(t, None, stamps.gap)
    a = d.accelerations(t, v)[:, 0]
    exact = 2 * np.pi * np.cos(2 * np.pi * t)
    inner = np.ones(len(t), dtype=bool)
    inner[[0, 699, 700, len(t) - 1]] = False
    assert np.max(np.abs(a - exact)[inner]) < (2 * np.pi) ** 3 * 1e-6 / 6 * 1.01
    assert np.max(np.abs(a - exact)[~inner]) < (2 * np.pi) ** 3 * 1e-6 / 3 * 1.01
    rng = np.random.default_rng(5)
    true = np.arange(20_000) * 1e-3
    stamped = true + rng.normal(0, 1e-4, len(true))
    v = np.sin(2 * np.pi * true)[:, None] + 1e-4 * rng.normal(size=(len(true), 1))
    s = measure_stamps(stamped)
    d = Differentiation.from_time(stamped, None, s.gap, s.jitters)
    a = d.accelerations(stamped, v)[1:-1, 0]
    span = stamped[2:] - stamped[:-2]
    acc = 2 * np.pi * np.cos(2 * np.pi * true[1:-1])
    sd = np.hypot(np.abs(acc) * math.sqrt(2) * 1e-4, math.sqrt(2) * 1e-4) / span
    assert np.mean(np.abs(a - acc) <= 4 * sd) > 0.999


# --- the check: the engine's floor ------------------------------------------------------------


@pytest.fixture(scope="module")
def humanoid():
    profile = load_profile(models_dir() / "humanoid.toml")
    traj = Trajectory.load(ROOT / "data" / "humanoid_squat.npz")
    return profile.robot, profile.contacts, traj


def test_engine_floor_catches_millinewton_readout_mistakes(humanoid):
    """The shipped log names its simulator (MuJoCo, float64, accelerations logged): checked at
    the float64 engine floor (1e-7 m g), consistent; the basis says so. Its wrenches read
    one step late (a forgotten ``mj_forward``: 2e-3 .. 0.1 N here) and a 3 mN offset on one
    foot are inconsistent; the same offset under ``physical`` (1 % m g) is not."""
    robot, contacts, traj = humanoid
    clean = check_trajectory(robot, traj, contacts)
    assert clean.verdict == "consistent" and clean.preset == "simulation"
    assert clean.force_tolerance == 1e-7
    assert clean.tolerance_basis == (
        "the engine's floor: a log of MuJoCo 4.0.0 in float64, its accelerations logged"
    )
    assert "tolerance the engine's floor" in clean.format_summary()
    W = traj.contact_wrenches
    late = np.concatenate([W[:1], W[:-1]])
    error = np.linalg.norm((late - W)[1:, :, :3].sum(axis=1), axis=1)
    assert 1e-4 < np.median(error) < 0.2
    offset = W.copy()
    offset[:, 0, 2] += 3e-3
    for wrenches in (late, offset):
        report = check_trajectory(
            robot, dataclasses.replace(traj, contact_wrenches=wrenches), contacts
        )
        assert report.verdict == "inconsistent", report.format_summary()
    physical = check_trajectory(
        robot,
        dataclasses.replace(traj, contact_wrenches=offset),
        contacts,
        CheckOptions(preset="physical"),
    )
    assert physical.verdict == "consistent"


def test_float32_engine_floor(humanoid):
    """The same log stored in float32: checked at the float32 floor (2e-5 m g, 13 mN),
    consistent; a 0.1 N offset (8 times the floor) is not."""
    robot, contacts, traj = humanoid
    single = dataclasses.replace(
        traj,
        q=traj.q.astype(np.float32),
        v=traj.v.astype(np.float32),
        a=traj.a.astype(np.float32),
        contact_wrenches=traj.contact_wrenches.astype(np.float32),
    )
    report = check_trajectory(robot, single, contacts)
    assert report.force_tolerance == 2e-5 and "in float32" in report.tolerance_basis
    assert report.verdict in NO_ALARM, report.format_summary()
    W = single.contact_wrenches.astype(float)
    W[:, 0, 2] += 0.1
    bad = dataclasses.replace(single, contact_wrenches=W.astype(np.float32))
    assert check_trajectory(robot, bad, contacts).verdict == "inconsistent"


# --- the check: time as it is -----------------------------------------------------------------


def _rows(traj: Trajectory, rows, **changes) -> Trajectory:
    fields = {
        "time": traj.time[rows],
        "q": traj.q[rows],
        "v": traj.v[rows],
        "a": None if traj.a is None else traj.a[rows],
        "tau": None if traj.tau is None else traj.tau[rows],
        "contact_wrenches": traj.contact_wrenches[rows],
    }
    return dataclasses.replace(traj, **{**fields, **changes})


@pytest.fixture(scope="module")
def jittered(humanoid):
    """The shipped log with stamps jittering by 0.25 ms (the samples at their regular times)
    and 40 samples dropped."""
    _, _, traj = humanoid
    rng = np.random.default_rng(0)
    t = traj.time + rng.normal(0, 2.5e-4, len(traj.time))
    keep = np.r_[0:400, 440 : len(t)]
    return _rows(dataclasses.replace(traj, time=t), keep)


@pytest.mark.parametrize("accelerations", [True, False])
def test_jittered_stamps_and_a_dropped_block_are_no_alarm(humanoid, jittered, accelerations):
    """Jittered stamps with a block dropped: v matches dq/dt, the verdict raises no alarm
    (with logged and with differentiated accelerations), and the report describes the stamps
    ("stamps jitter by 0.25 ms ...; 1 gap ...")."""
    robot, contacts, _ = humanoid
    log = jittered if accelerations else dataclasses.replace(jittered, a=None)
    report = check_trajectory(robot, log, contacts)
    velocity = report.conventions.all_checks[0]
    assert velocity.name == "velocity_matches_configuration" and velocity.passed
    assert report.verdict in NO_ALARM, report.format_summary()
    text = report.format_summary()
    assert "time      step 2.01 ms; stamps jitter by 0.248 ms" in text
    assert "1 gap (longest 82.1 ms before sample 400" in text


@pytest.mark.parametrize("fault", ["v scaled 5 %", "clock 30 % fast"])
def test_jitter_allowance_still_catches_a_wrong_velocity_or_clock(humanoid, jittered, fault):
    """The jitter's allowance is random per sample: on the same jittered log, v scaled by
    1.05 (every sample within the per-sample allowance) and a clock running 30 % fast over
    0.2 s fail the velocity check."""
    robot, contacts, _ = humanoid
    if fault == "v scaled 5 %":
        log = dataclasses.replace(jittered, v=1.05 * jittered.v)
    else:
        t = jittered.time.copy()
        t[300:400] = t[300] + 1.3 * (t[300:400] - t[300])
        t[400:] += t[399] - jittered.time[399]
        log = dataclasses.replace(jittered, time=t)
    report = check_trajectory(robot, log, contacts)
    velocity = report.conventions.all_checks[0]
    assert not velocity.passed and report.verdict == "inconsistent", fault


def test_a_bad_stamp_flags_its_sample_and_names_it(humanoid):
    """A NaN stamp: its sample flagged with the reason, the rest checked (no alarm), and the
    stamps' line names the sample."""
    robot, contacts, traj = humanoid
    t = traj.time.copy()
    t[500] = np.nan
    for log in (dataclasses.replace(traj, time=t), dataclasses.replace(traj, time=t, a=None)):
        report = check_trajectory(robot, log, contacts)
        assert report.n_checked == len(t) - 1 and report.verdict in NO_ALARM
        text = report.format_summary()
        assert "sample 500: time stamp is not finite (nan)" in text
        assert "1 stamp not finite (sample 500)" in text


# --- the check: the measured preset on a real robot's noise ----------------------------------


@pytest.fixture(scope="module")
def talos():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return wb.load("talos")
        except wb.errors.MissingDependencyError:
            pytest.skip("example-robot-data not installed")


@pytest.fixture(scope="module")
def talos_logs(talos):
    """Issue 40's case: a Talos squat from a model whose torso is 0.88 kg heavier and its
    CoM 2 cm off, with encoders 1e-5 rad, a state estimator's base (0.5 mm, 0.5 mrad,
    AR(1) 0.99), filtered velocities (3e-3, AR(1) 0.9), force sensors (1 N, 0.08 N m, AR(1)
    0.9), torque sensing 0.3 N m, no accelerations; the truth's robot and the clean log."""
    truth = wb.Robot.from_urdf_string(
        perturbed_urdf(Path(talos.source).read_text(), "torso_2_link", 1.05, (0.02, 0, 0))
    )
    clean = talos_squat(truth, 4000)
    return truth, clean, measured(clean, seed=0)


def _talos_contacts():
    from wholebody.contacts import SurfaceContact

    return [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=1.0) for f in TALOS_FEET]


def test_measured_preset_clean_noisy_log_is_consistent_and_says_why(talos_logs):
    """The true model: consistent (no "loaded contacts move", no waived majority); the noise
    measured per signal within 10 % of the generator's (velocities 3e-3, forces 1 N, moments
    0.08 N m, torques 0.3 N m white); the filter named with its cutoff and cost; the
    tolerance's basis is the measured noise."""
    truth, _, log = talos_logs
    report = check_trajectory(truth, log, _talos_contacts(), CheckOptions(preset="measured"))
    assert report.verdict == "consistent", report.format_summary()
    assert all(c.passed for c in report.conventions.all_checks)
    noise = report.evidence.noise
    assert noise["v: joints"]["correlated"] == pytest.approx(3e-3, rel=0.1)
    assert noise["wrenches: force"]["correlated"] == pytest.approx(1.0, rel=0.1)
    assert noise["wrenches: moment"]["correlated"] == pytest.approx(0.08, rel=0.1)
    assert noise["tau: joints"]["white"] == pytest.approx(0.3, rel=0.1)
    assert report.tolerance_basis.startswith("measured: ")
    assert "from the noise measured in the log (through the filter at" in report.tolerance_basis
    text = report.format_summary()
    assert "filter    the residual (every wrench and the momentum rate alike) through a " in text
    assert "events shorter than" in text


def test_measured_preset_finds_a_model_error_and_a_fault_just_above_the_noise(talos, talos_logs):
    """Failing directions of the measured noise and the filter: the nominal model (8.6 N of
    gravity missing) is inconsistent and the cause named is the missing mass (a payload of
    0.88 kg, within 15 %) or its tie; on the true model, a 3 N offset on one foot's vertical
    force (3 times the force sensors' noise, a tenth of the per-sample tolerance) from the
    log's middle on is inconsistent; the robot sliding on its loaded feet for 0.5 s at 1.5
    times the contact-speed bound (the noise's share in it) fails ``loaded_contacts_still``."""
    truth, clean, log = talos_logs
    options = CheckOptions(preset="measured")
    nominal = check_trajectory(talos, log, _talos_contacts(), options)
    assert nominal.verdict == "inconsistent"
    best = nominal.diagnosis[0]
    named = {best.cause, *best.parameters.get("alternative_causes", [])}
    assert named & {"payload", "mass_error", "com_offset"}, nominal.format_summary()
    W = log.contact_wrenches.copy()
    W[2000:, 0, 2] += 3.0
    offset = check_trajectory(
        truth, dataclasses.replace(log, contact_wrenches=W), _talos_contacts(), options
    )
    assert offset.verdict == "inconsistent", offset.format_summary()
    clean = check_trajectory(truth, log, _talos_contacts(), options)
    bound = _still(clean).evidence
    assert 0 < bound["speed_noise_m_s"] < bound["speed_tolerance_m_s"]
    speed = 1.5 * bound["speed_tolerance_m_s"]
    q = log.q.copy()
    q[:, 0] += np.clip((np.arange(len(q)) - 2000) * 1e-3, 0, 0.5) * speed  # 0.5 s of sliding
    still = _still(
        check_trajectory(truth, dataclasses.replace(log, q=q), _talos_contacts(), options)
    )
    assert not still.passed


def _still(report):
    return [c for c in report.conventions.all_checks if c.name == "loaded_contacts_still"][0]


def test_stated_sensor_noise_is_a_floor_that_still_finds_a_fault(talos_logs, tmp_path):
    """A profile's ``[sensors]`` noise (0.5 N, 0.04 N m) reaches the check through the profile
    and is a floor: the true model stays consistent and the basis says what it rests on; a
    10 N offset on one foot from the log's middle on is still inconsistent. A negative value
    is refused by name."""
    from wholebody.errors import ProfileError

    truth, _, log = talos_logs
    profile = tmp_path / "talos.toml"
    text = 'robot = "talos"\n' + "".join(
        f'[[contacts]]\nframe = "{f}"\nhalf_length = 0.1\nhalf_width = 0.05\nmu = 1.0\n'
        for f in TALOS_FEET
    )
    profile.write_text(text + "[sensors]\nforce_noise = 0.5\nmoment_noise = 0.04\n")
    sensors = dict(load_profile(profile).sensors)
    assert sensors == {"force_noise": 0.5, "moment_noise": 0.04}
    options = CheckOptions(preset="measured", sensor_noise=sensors)
    clean = check_trajectory(truth, log, _talos_contacts(), options)
    assert clean.verdict == "consistent"
    assert "from the sensors' stated noise" in clean.tolerance_basis
    W = log.contact_wrenches.copy()
    W[2000:, 0, 2] += 10.0
    bad = check_trajectory(
        truth, dataclasses.replace(log, contact_wrenches=W), _talos_contacts(), options
    )
    assert bad.verdict == "inconsistent"
    profile.write_text(text + "[sensors]\nforce_noise = -1.0\n")
    with pytest.raises(ProfileError, match=r"\[sensors\]: 'force_noise' must be >= 0, got -1.0"):
        load_profile(profile)


def test_filtered_differentiation_against_the_closed_form():
    """The measured preset's route to accelerations: central differences of noisy velocities
    (``v = sin(2 pi 0.5 t)`` plus white 1e-3 and AR(1) 3e-3 noise, 0.9), then the Gaussian at
    5 Hz, equal the closed-form derivative through the same filter (``pi cos(pi t)`` times the
    Gaussian's gain at 0.5 Hz, ``exp(-ln 2 (0.5 / 5)^2 / 2)``) within the noise's bound:
    ``level_sigmas`` times the std of the noise through the difference-and-filter kernel
    (from the noise measured in ``v``), everywhere a whole kernel fits."""
    from wholebody.check.sources import low_pass

    rng = np.random.default_rng(6)
    dt, n = 1e-3, 8000
    t = np.arange(n) * dt
    v = np.sin(np.pi * t) + _noise(rng, n, 1e-3, 3e-3, 0.9)
    noise = measure_noise(v, dt)
    kernel = gaussian_kernel(5.0, dt)
    a = Differentiation.from_time(t, None).accelerations(t, v[:, None])
    filtered = low_pass(a, kernel, np.ones(n, dtype=bool), [(0, n)])[:, 0]
    gain = math.exp(-math.log(2) * (0.5 / 5.0) ** 2 / 2)
    exact = gain * np.pi * np.cos(np.pi * t)
    rate_kernel = np.convolve(kernel, np.array([1.0, 0.0, -1.0]) / (2 * dt))
    std = float(noise.filtered_std(rate_kernel)[0])
    rate = math.sqrt(2 * (1 - float(noise.filtered_correlation(rate_kernel)[0])))
    half = len(kernel) // 2 + 1
    error = np.abs(filtered - exact)[half:-half]
    assert np.max(error) <= level_sigmas(n, rate) * std
    assert np.max(error) > 0.5 * std  # the bound is the noise's, not a loose one
