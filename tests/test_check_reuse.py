"""The log check reuses its own Pinocchio pass for the convention checks, and computes the
per-column statistics of the velocity check without NaN handling where there is no NaN:
both tied here to the standalone computations they replace."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np
import pytest

from wholebody.check import CheckOptions
from wholebody.check.analysis import check_trajectory
from wholebody.conventions import check_conventions
from wholebody.conventions._core import _row_median, _row_percentile
from wholebody.io.profile import load_profile
from wholebody.models import models_dir
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def squat():
    profile = load_profile(models_dir() / "humanoid.toml")
    return profile, Trajectory.load(ROOT / "data" / "humanoid_squat.npz")


def _same(a, b):
    assert a.name == b.name and a.passed == b.passed and a.hypotheses == b.hypotheses
    assert a.message == b.message and a.fix == b.fix


@pytest.mark.parametrize("mistake", ["none", "sliding_foot", "short_last_chunk"])
def test_check_conventions_equal_the_standalone_checks(squat, mistake):
    """The convention report of a check (CoM and contact origins from the check's pass)
    equals check_conventions on the same samples (its own Pinocchio calls)."""
    profile, traj = squat
    chunk = len(traj)
    if mistake == "sliding_foot":  # a loaded foot that moves: loaded_contacts_still fails
        q = traj.q.copy()
        q[:, 0] += np.linspace(0.0, 0.5, len(traj))
        traj = dataclasses.replace(traj, q=q)
    if mistake == "short_last_chunk":  # the last chunk borrows samples before it
        chunk = len(traj) - 3
    report = check_trajectory(profile.robot, traj, profile.contacts, CheckOptions(chunk_size=chunk))
    if chunk == len(traj):
        alone = check_conventions(profile.robot, traj, profile.contacts)
        for a, b in zip(report.conventions.all_checks, alone.all_checks, strict=True):
            _same(a, b)
            assert a.evidence == b.evidence
    else:
        last = traj.select(slice(len(traj) - 5, len(traj)))
        alone = check_conventions(profile.robot, last, profile.contacts)
        first = check_conventions(profile.robot, traj.select(slice(0, chunk)), profile.contacts)
        for a, b, c in zip(
            report.conventions.all_checks, first.all_checks, alone.all_checks, strict=True
        ):
            assert a.passed == (b.passed and c.passed)


def test_row_statistics_equal_the_nan_aware_ones():
    rng = np.random.default_rng(5)
    for n in (5, 101, 600, 5001):
        x = np.abs(rng.normal(size=(7, n))) * rng.uniform(0.1, 10.0, size=(7, 1))
        x[:, 1] = x[:, 0]  # ties
        np.testing.assert_array_equal(_row_median(x), np.nanmedian(x, axis=1))
        np.testing.assert_array_equal(_row_percentile(x, 90), np.nanpercentile(x, 90, axis=1))
        x[2, 3] = np.nan  # with NaN: the NaN-aware functions themselves
        np.testing.assert_array_equal(_row_median(x), np.nanmedian(x, axis=1))
        np.testing.assert_array_equal(_row_percentile(x, 90), np.nanpercentile(x, 90, axis=1))


def _flawed(traj):
    """The squat log with samples flagged for one field each: a non-finite ``a`` (with a
    quaternion off unit norm by 1e-8, renormalised where it is used), a contact wrench, a
    ``v``; and a quaternion off by 1e-3 (flagged)."""
    q, v, a, W = traj.q.copy(), traj.v.copy(), traj.a.copy(), traj.contact_wrenches.copy()
    a[200, 2] = np.nan
    q[301, 3:7] *= 1 + 1e-8
    a[301, 0] = np.nan
    W[400, 0, 2] = np.nan
    v[500, 3] = np.nan
    q[600, 3:7] *= 1.001
    return dataclasses.replace(traj, q=q, v=v, a=a, contact_wrenches=W)


def test_convention_checks_keep_samples_flagged_for_other_fields(squat):
    """The convention checks read the chunk's state check, yet judge ``q`` and ``v`` alone:
    a sample flagged for its ``a`` or wrenches stays in the velocity check (renormalised as
    the standalone check renormalises it), as check_conventions on the same log has it."""
    profile, traj = squat
    traj = _flawed(traj)
    report = check_trajectory(profile.robot, traj, profile.contacts)
    assert {200, 301, 400, 500, 600} <= set(report.reasons)
    alone = check_conventions(profile.robot, traj, profile.contacts)
    for a, b in zip(report.conventions.all_checks, alone.all_checks, strict=True):
        _same(a, b)
        assert a.evidence == b.evidence


class _Spy:
    """Counts the calls of a function and the samples they cover (also as a method)."""

    def __init__(self, fn, rows):
        self.fn, self.rows, self.calls, self.samples = fn, rows, 0, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        self.samples += self.rows(*args, **kwargs)
        return self.fn(*args, **kwargs)

    def __get__(self, obj, owner=None):
        return self if obj is None else functools.partial(self, obj)


@pytest.mark.parametrize("chunk", [None, 300])
@pytest.mark.parametrize("flawed", [False, True])
def test_each_sample_checked_once_and_placed_once(squat, monkeypatch, chunk, flawed):
    """One state check per chunk (Robot.check_batch over its samples; a flagged sample's
    ``q`` and ``v`` once more, for the convention checks) and one Pinocchio pass per sample
    that passes it, read by the residual, the convention checks and the diagnosis' notes:
    no other pass (pinocchio.centerOfMass) runs but on the samples
    the pass skips."""
    import pinocchio

    import wholebody.check.engine as engine
    from wholebody.robot.core import Robot

    profile, traj = squat
    if flawed:
        traj = _flawed(traj)
    n = len(traj)
    check = _Spy(Robot.check_batch, lambda robot, **arrays: len(arrays["q"]))
    rows = _Spy(engine.centroidal_frames_rows, lambda *args, **kwargs: len(args[4]))
    com = _Spy(pinocchio.centerOfMass, lambda *args, **kwargs: 1)
    monkeypatch.setattr(Robot, "check_batch", check)
    monkeypatch.setattr(engine, "centroidal_frames_rows", rows)
    monkeypatch.setattr(pinocchio, "centerOfMass", com)
    report = check_trajectory(
        profile.robot, traj, profile.contacts, CheckOptions(chunk_size=chunk or n)
    )
    size = chunk or n
    flagged = int(report.flagged.sum())
    assert report.n_checked == n - flagged >= 8  # the notes' diagnosis ran on the samples
    states = [200, 301, 500, 600] if flawed else []  # flagged for a state (400: a wrench)
    assert flagged == len(states) + flawed
    again = len({i // size for i in states})  # chunks with samples the state check flags
    assert (check.calls, check.samples) == (-(-n // size) + again, n + len(states))
    assert rows.samples == n - flagged
    # The convention checks place only what the pass skipped and they read: samples whose
    # q and v are fine but whose a or wrenches are not (200, 301, 400), by q alone.
    assert com.calls == (3 if flawed else 0)


def test_diagnosis_reading_the_checks_pass_equals_its_own_pass(squat, monkeypatch):
    """The diagnosis of a short log reads the check's pass (with the contacts' parent
    joints); its findings are those of a pass of its own on the samples it keeps."""
    from wholebody.check.engine import Placed

    profile, traj = squat
    W = traj.contact_wrenches.copy()
    W[:, 0] *= -1  # a contact's sign flipped: inconsistent, the causes are ranked
    traj = dataclasses.replace(traj, contact_wrenches=W)
    shared = check_trajectory(profile.robot, traj, profile.contacts)
    assert shared.verdict == "inconsistent" and shared.diagnosis

    # No placements kept from the check's pass: the diagnosis places its samples itself.
    monkeypatch.setattr(Placed, "empty", classmethod(lambda cls, *args: None))
    own = check_trajectory(profile.robot, traj, profile.contacts)
    assert shared.to_json() == own.to_json()
