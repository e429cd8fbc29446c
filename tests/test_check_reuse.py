"""The log check reuses its own Pinocchio pass for the convention checks, and computes the
per-column statistics of the velocity check without NaN handling where there is no NaN:
both tied here to the standalone computations they replace."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

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
    report = check_trajectory(profile.robot, traj, profile.contacts, chunk_size=chunk)
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
