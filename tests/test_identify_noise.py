"""Identification under a real robot's noise (issues 35 and 40): accelerations differentiated
from noisy velocities no longer bias the fit (the equations are read through one low-pass,
regressor and measurements alike), intervals keep their level over seeds of correlated noise,
and no interval is narrower than the fit's numerical resolution. Logs come from inverse
dynamics of perturbed URDFs (tests/_identify_logs.py), independent of the fitting code."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import wholebody as wb
from wholebody.contacts import SurfaceContact
from wholebody.identify import fit_inertial_parameters
from wholebody.identify.smoothing import KEEP, Smoothing, choose_smoothing

from ._identify_logs import (
    FEET,
    TALOS_FEET,
    humanoid_text,
    inverse_dynamics_log,
    measured,
    perturbed_urdf,
    smooth_log,
    talos_squat,
)

SOLES = ["left_sole", "right_sole"]
#: The humanoid's torso with 5 % more mass and its CoM 2 cm forward: the truth the fits seek.
TORSO = {"torso.mass": 18.9, "torso.com_x": 0.02, "torso.com_y": 0.0, "torso.com_z": 0.22}


@pytest.fixture(scope="module")
def nominal():
    return wb.load("humanoid")


@pytest.fixture(scope="module")
def heavier_torso():
    return wb.Robot.from_urdf_string(
        perturbed_urdf(humanoid_text(), "torso", 1.05, (0.02, 0.0, 0.0))
    )


@pytest.fixture(scope="module")
def talos():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return wb.load("talos")
        except wb.errors.MissingDependencyError:
            pytest.skip("example-robot-data not installed")


def _talos_truth(talos):
    """Talos with torso_2_link 5 % (0.88 kg) heavier and its CoM 2 cm off in x."""
    text = Path(talos.source).read_text()
    return wb.Robot.from_urdf_string(perturbed_urdf(text, "torso_2_link", 1.05, (0.02, 0, 0)))


TALOS_TORSO = {
    "torso_2_link.mass": 17.55011 * 1.05,
    "torso_2_link.com_x": -0.04551 + 0.02,
    "torso_2_link.com_y": -0.00053,
    "torso_2_link.com_z": 0.16386,
}


def _talos_contacts():
    return [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=1.0) for f in TALOS_FEET]


# --- the low-pass -----------------------------------------------------------------------------


def test_kernel_response_is_the_gaussian():
    """The truncated, normalised kernel's frequency response (its DTFT) is the Gaussian's,
    ``exp(-2 pi^2 sigma^2 f^2)``, within its truncation at 4 sigma (3e-4): 1/sqrt 2 at the
    stated cutoff, KEEP at the motion's bandwidth."""
    s = Smoothing(
        sigma=0.05, rate=1000.0, bandwidth=math.sqrt(-2 * math.log(KEEP)) / (0.1 * math.pi)
    )
    h = s.kernel
    j = np.arange(-s.half, s.half + 1) / s.rate
    assert h.sum() == pytest.approx(1.0, abs=1e-15)
    for f in (0.0, 0.5, s.bandwidth, s.cutoff, 5.0, 10.0, 30.0):
        response = float(np.sum(h * np.cos(2 * np.pi * f * j)))
        assert response == pytest.approx(math.exp(-2 * (np.pi * s.sigma * f) ** 2), abs=3e-4)
    assert math.exp(-2 * (np.pi * s.sigma * s.cutoff) ** 2) == pytest.approx(2**-0.5, rel=1e-12)
    assert math.exp(-2 * (np.pi * s.sigma * s.bandwidth) ** 2) == pytest.approx(KEEP, rel=1e-12)
    assert s.step == 100 and s.half == 200


def test_smoothed_rows_are_the_convolution():
    """The smoothed features, accumulated chunk by chunk, equal each column convolved with the
    kernel (``np.convolve``) at the kept samples, and the Jacobians are the kept samples' own."""
    rng = np.random.default_rng(0)
    n = 700
    raw_F, raw_J = rng.normal(size=(n, 3, 4)), rng.normal(size=(n, 2, 5))
    s = Smoothing(sigma=0.011, rate=1000.0)
    centres = s.centres(n)
    F, J = s.apply(lambda i: (raw_F[i], raw_J[i]), centres, n, chunk=7)
    h = s.kernel
    for r in range(3):
        for c in range(4):
            full = np.convolve(raw_F[:, r, c], h[::-1], mode="same")
            np.testing.assert_allclose(F[:, r, c], full[centres], rtol=0, atol=1e-13)
    np.testing.assert_array_equal(J, raw_J[centres])
    assert centres[0] == s.half and centres[-1] + s.half < n


def test_motion_bandwidth_read_from_the_velocities():
    """Velocities of 0.5 Hz and 1 Hz sines with white noise (1e-4) over 4 s at 1 kHz: the
    motion's bandwidth is read between 1 and 1.5 Hz (the periodogram's bins are 0.25 Hz
    apart) and the filter keeps at least KEEP of 1 Hz; samples without temporal structure
    (random states) get no smoothing."""
    rng = np.random.default_rng(1)
    t = np.arange(4000) * 1e-3
    v = np.stack([np.sin(2 * np.pi * 0.5 * t), 0.5 * np.cos(2 * np.pi * 1.0 * t)], axis=1)
    s = choose_smoothing(t, v + 1e-4 * rng.normal(size=v.shape))
    assert s is not None and 1.0 <= s.bandwidth <= 1.5
    assert math.exp(-2 * (np.pi * s.sigma * 1.0) ** 2) >= KEEP
    assert choose_smoothing(t, rng.normal(size=(4000, 5))) is None


def test_smoothed_fit_exact_on_an_exact_log(nominal, heavier_torso):
    """Smoothing weighs every column of a sample's equation alike: an exact log stays exact
    (the torso's mass and CoM to 1e-9), whatever the filter does to the motion."""
    log = smooth_log(heavier_torso, SOLES, 1000, dt=2e-3)
    fit = fit_inertial_parameters(
        nominal, log, FEET, parameters="mass_com", links=["torso"], smoothing=True
    )
    assert set(fit.smoothing) == {"arrays"}
    for name, value in TORSO.items():
        assert abs(fit[name].estimate - value) < 1e-9 * max(1.0, abs(value)), name
    assert "smoothed  arrays: zero-phase Gaussian low-pass" in fit.format_report()


# --- errors in variables ------------------------------------------------------------------


def test_differentiated_noise_no_longer_biases_the_fit(nominal, heavier_torso):
    """A real robot's noise (encoders, a state estimator's base pose, filtered velocities,
    force sensors, torque sensing; no logged accelerations) on a 4 s humanoid log: read sample
    by sample (``smoothing=False``), the torso's mass is biased by more than 20 % and its
    interval misses the truth (errors in variables); through the low-pass (the default for
    differentiated accelerations) it is within 0.5 % and the CoM within 3 mm, every interval
    containing the truth."""
    log = measured(smooth_log(heavier_torso, SOLES, 2000, dt=2e-3), seed=3)
    raw = fit_inertial_parameters(
        nominal, log, FEET, parameters="mass_com", links=["torso"], smoothing=False
    )
    mass = raw["torso.mass"]
    assert abs(mass.estimate / 18.9 - 1) > 0.2
    lo, hi = mass.interval(0.95)
    assert not lo <= 18.9 <= hi
    fit = fit_inertial_parameters(nominal, log, FEET, parameters="mass_com", links=["torso"])
    assert abs(fit["torso.mass"].estimate / 18.9 - 1) < 5e-3
    for name, value in TORSO.items():
        p = fit[name]
        if p.kind == "com":
            assert abs(p.estimate - value) < 3e-3, name
        lo, hi = p.interval(0.95)
        assert lo <= value <= hi, name


def test_talos_squat_with_a_real_robots_noise(talos):
    """The judged case (issue 40): a Talos squat (4 s at 1 kHz, soles still) with encoders
    1e-5 rad, a state estimator's base pose 0.5 mm and 0.5 mrad (AR(1) 0.99), filtered
    velocities 3e-3 (AR(1) 0.9), force sensors 1 N and 0.08 N m (AR(1) 0.9), torque sensing
    0.3 N m, no logged accelerations; the nominal model's torso 0.88 kg lighter and its CoM
    2 cm off. The targeted fit: the mass within 2 % and the CoM within 5 mm of the truth,
    every 95 % interval containing it, the low-pass named in the report."""
    log = measured(talos_squat(_talos_truth(talos), 4000), seed=0)
    fit = fit_inertial_parameters(
        talos, log, _talos_contacts(), parameters="mass_com", links=["torso_2_link"]
    )
    mass = TALOS_TORSO["torso_2_link.mass"]
    assert abs(fit["torso_2_link.mass"].estimate / mass - 1) < 0.02
    for name, value in TALOS_TORSO.items():
        p = fit[name]
        if p.kind == "com":
            assert abs(p.estimate - value) < 5e-3, name
        lo, hi = p.interval(0.95)
        assert lo <= value <= hi, name
        assert p.identified, name
    assert "-3 dB at" in fit.format_report() and fit.recommended


# --- intervals at their level ------------------------------------------------------------


def _coverage(nominal, truth, seeds, n, dt):
    """How many of the torso's mass and CoM 95 % intervals contain the truth, over ``seeds``
    measured-noise versions of one ``n``-sample humanoid log: (mass, CoM) counts."""
    clean = smooth_log(truth, SOLES, n, dt=dt)
    mass = com = 0
    for seed in seeds:
        fit = fit_inertial_parameters(
            nominal, measured(clean, seed), FEET, parameters="mass_com", links=["torso"]
        )
        for name, value in TORSO.items():
            lo, hi = fit[name].interval(0.95)
            inside = lo <= value <= hi
            mass += inside if name.endswith("mass") else 0
            com += inside if not name.endswith("mass") else 0
    return mass, com


def test_intervals_cover_under_a_real_robots_noise(nominal, heavier_torso):
    """Correlated noise in every signal (encoders, base pose AR(1) 0.99, velocities and force
    sensors AR(1) 0.9, torques), accelerations differentiated, 12 seeds of an 8 s humanoid log
    at 500 Hz: the torso's 95 % intervals (4 per seed) contain the truth at least 42 times in
    48 (the 1 % binomial tail at 95 %)."""
    mass, com = _coverage(nominal, heavier_torso, range(12), 4000, 2e-3)
    assert mass + com >= 42, (mass, com)


@pytest.mark.slow
def test_intervals_at_their_level_over_many_seeds(nominal, heavier_torso):
    """The same over 100 seeds, per family: the mass's 95 % intervals contain the truth in
    90-99 % of the seeds, the CoM's (3 per seed) in 90-99 % of theirs (the benchmark's 300
    seeds: 95 % and 94-97 %)."""
    mass, com = _coverage(nominal, heavier_torso, range(1000, 1100), 4000, 2e-3)
    assert 90 <= mass <= 99, mass
    assert 270 <= com <= 297, com


# --- numerical resolution ----------------------------------------------------------------


@pytest.mark.parametrize("use_torques", [True, False])
def test_intervals_never_narrower_than_the_resolution(nominal, heavier_torso, talos, use_torques):
    """Exact logs (random states; a smooth humanoid log; a Talos squat): every interval
    contains the truth, its half-width never under the fit's numerical resolution, which
    stays within 1e-12 of the value's scale; the standard errors alone missed by 20-40 times
    (they measure the round-off left in the residuals, not the solve's)."""
    cases = [
        (nominal, inverse_dynamics_log(heavier_torso, 150, seed=1), FEET, "torso", TORSO),
        (nominal, smooth_log(heavier_torso, SOLES, 600, dt=2e-3), FEET, "torso", TORSO),
        (
            talos,
            talos_squat(_talos_truth(talos), 1500),
            _talos_contacts(),
            "torso_2_link",
            TALOS_TORSO,
        ),
    ]
    for robot, log, contacts, link, truth in cases:
        fit = fit_inertial_parameters(
            robot, log, contacts, parameters="mass_com", links=[link], use_torques=use_torques
        )
        for name, value in truth.items():
            p = fit[name]
            lo, hi = p.interval(0.95)
            assert lo <= value <= hi, (name, p.estimate - value, p.resolution)
            assert (hi - lo) / 2 >= 0.99 * p.resolution > 0  # hi, lo round to 4e-15 kg
            scale = 1.0 if p.kind == "mass" else 0.1  # kg, m
            assert p.resolution < 1e-12 * max(abs(value), scale)
