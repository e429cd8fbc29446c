"""check_log (a log file read chunk by chunk) against check_trajectory on the loaded log.

Reference: the in-memory check with the default chunk (the whole log in one chunk, so
accelerations are differentiated over the whole log at once by ``np.gradient``). The
streamed check reads chunks of 7 to 333 samples, differentiating across their boundaries
from overlapping reads. Per-sample results must be equal bit for bit (``array_equal``), and
the verdict, the flags and the diagnosis the same.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import wholebody as wb
from wholebody.check import CheckOptions
from wholebody.check.analysis import check_log, check_trajectory
from wholebody.errors import InvalidArgumentError
from wholebody.io.profile import load_profile
from wholebody.models import models_dir
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def profile():
    return load_profile(models_dir() / "humanoid.toml")


@pytest.fixture(scope="module")
def squat() -> Trajectory:
    return Trajectory.load(ROOT / "data" / "humanoid_squat.npz")


def _flipped(traj: Trajectory) -> Trajectory:
    """A sign fault on the left sole for 0.3 .. 0.7 s: the diagnosis runs."""
    W = traj.contact_wrenches.copy()
    W[300:700, 0, :3] *= -1
    return replace(traj, contact_wrenches=W)


def _lagged(traj: Trajectory) -> Trajectory:
    """Forces 7 samples late (the lag search reads wrench rows around the kept samples)."""
    return replace(traj, contact_wrenches=np.roll(traj.contact_wrenches, 7, axis=0))


def _same(streamed: wb.Report, ref: wb.Report, *, unreliable: bool = True) -> None:
    cols, ref_cols = streamed.columns(), ref.columns()
    assert list(cols) == list(ref_cols)
    # The bounds of differentiated accelerations use the noise of v estimated per chunk.
    per_chunk = set() if unreliable else {"bound_force", "bound_moment", "waived", "systematic"}
    for name in ref_cols:
        if name in per_chunk:
            continue
        assert np.array_equal(cols[name], ref_cols[name], equal_nan=True), name
    assert np.array_equal(streamed.violated_row, ref.violated_row)
    assert streamed.reasons == ref.reasons
    assert streamed.events == ref.events
    assert streamed.accelerations_estimated == ref.accelerations_estimated
    if unreliable:
        assert np.array_equal(streamed.unreliable, ref.unreliable)
        assert streamed.verdict == ref.verdict
        dump = [
            json.dumps([f.cause, f.explained, f.message, f.parameters], default=str)
            for f in streamed.diagnosis
        ]
        assert dump == [
            json.dumps([f.cause, f.explained, f.message, f.parameters], default=str)
            for f in ref.diagnosis
        ]


def _write(traj: Trajectory, path: Path) -> Path:
    pytest.importorskip({".parquet": "pyarrow", ".h5": "h5py"}[path.suffix])
    traj.save(path)
    return path


# By default one format per fault (each reads through its own reader); all pairs with -m slow.
@pytest.mark.parametrize(
    "suffix, fault",
    [
        (".h5", "none"),
        (".parquet", "sign"),
        pytest.param(".parquet", "none", marks=pytest.mark.slow),
        pytest.param(".h5", "sign", marks=pytest.mark.slow),
        pytest.param(".parquet", "lag", marks=pytest.mark.slow),
        pytest.param(".h5", "lag", marks=pytest.mark.slow),
    ],
)
def test_streamed_equals_in_memory_shipped_log(tmp_path, profile, squat, suffix, fault):
    traj = {"none": squat, "sign": _flipped(squat), "lag": _lagged(squat)}[fault]
    path = _write(traj, tmp_path / f"log{suffix}")
    ref = check_trajectory(profile.robot, Trajectory.load(path), profile.contacts)
    if fault != "none":
        assert ref.verdict == "inconsistent" and ref.diagnosis
    for chunk in (7, 128, 333):
        streamed = check_log(
            profile.robot, path, profile.contacts, CheckOptions(chunk_size=chunk, conventions=False)
        )
        in_memory = check_trajectory(
            profile.robot,
            Trajectory.load(path),
            profile.contacts,
            CheckOptions(chunk_size=chunk, conventions=False),
        )
        ref_plain = check_trajectory(
            profile.robot, Trajectory.load(path), profile.contacts, CheckOptions(conventions=False)
        )
        _same(streamed, ref_plain)
        _same(in_memory, ref_plain)
    # With the convention checks, one chunk is the in-memory check exactly.
    _same(check_log(profile.robot, path, profile.contacts), ref)
    assert (
        check_log(profile.robot, path, profile.contacts).summary()["conventions"]
        == ref.summary()["conventions"]
    )


@pytest.mark.parametrize("suffix", [pytest.param(".parquet", marks=pytest.mark.slow), ".h5"])
def test_streamed_differentiates_across_chunks(tmp_path, profile, squat, suffix):
    """Accelerations estimated from v: central differences need each sample's neighbours;
    the chunks read them from the next and previous chunk."""
    traj = replace(_flipped(squat), a=None)
    path = _write(traj, tmp_path / f"noa{suffix}")
    ref = check_trajectory(
        profile.robot, Trajectory.load(path), profile.contacts, CheckOptions(conventions=False)
    )
    assert ref.accelerations_estimated
    for chunk in (5, 100, 999):
        streamed = check_log(
            profile.robot, path, profile.contacts, CheckOptions(chunk_size=chunk, conventions=False)
        )
        # The expected error of differentiation estimates the noise of v per chunk: the
        # samples it covers may differ; everything per sample is the same.
        _same(streamed, ref, unreliable=False)
    one_chunk = check_log(profile.robot, path, profile.contacts, CheckOptions(conventions=False))
    _same(one_chunk, ref)
    # Savitzky-Golay needs a window of neighbours across boundaries.
    ref_sg = check_trajectory(
        profile.robot,
        Trajectory.load(path),
        profile.contacts,
        CheckOptions(conventions=False, savgol=(9, 3)),
    )
    _same(
        check_log(
            profile.robot,
            path,
            profile.contacts,
            CheckOptions(conventions=False, savgol=(9, 3), chunk_size=50),
        ),
        ref_sg,
        unreliable=False,
    )


def test_streamed_time_window(tmp_path, profile, squat):
    path = _write(_flipped(squat), tmp_path / "log.parquet")
    ref = check_trajectory(
        profile.robot,
        Trajectory.load(path),
        profile.contacts,
        CheckOptions(t_start=0.25, t_stop=0.61, conventions=False),
    )
    got = check_log(
        profile.robot,
        path,
        profile.contacts,
        CheckOptions(t_start=0.25, t_stop=0.61, chunk_size=64, conventions=False),
    )
    assert (
        got.n_samples == ref.n_samples == int(((squat.time >= 0.25) & (squat.time <= 0.61)).sum())
    )
    _same(got, ref)


def test_streamed_synthetic_g1_like_log(tmp_path, profile):
    """A synthetic log with random states (the benchmark's kind) and a few bad samples."""
    robot = profile.robot
    rng = np.random.default_rng(3)
    n = 1000
    Q = np.array([robot.random_configuration(rng) for _ in range(n)])
    V = rng.normal(size=(n, robot.nv))
    A = rng.normal(size=(n, robot.nv))
    W = rng.normal(scale=50.0, size=(n, 2, 6)) + [0, 0, 300.0, 0, 0, 0]
    V[17, 3] = np.nan
    W[900, 1, 2] = 1e12  # beyond physical magnitudes: flagged
    traj = Trajectory(
        np.arange(n) * 1e-3,
        Q,
        V,
        A,
        None,
        tuple(robot.joint_names),
        tuple(c.name for c in profile.contacts),
        W,
    )
    for suffix in (".parquet", ".h5"):
        path = _write(traj, tmp_path / f"syn{suffix}")
        ref = check_trajectory(
            robot, Trajectory.load(path), profile.contacts, CheckOptions(conventions=False)
        )
        assert ref.flagged[[17, 900]].all() and ref.diagnosis
        _same(
            check_log(
                robot, path, profile.contacts, CheckOptions(chunk_size=400, conventions=False)
            ),
            ref,
        )
        _same(
            check_log(
                robot,
                path,
                profile.contacts,
                CheckOptions(chunk_size=400, conventions=False, workers=2),
            ),
            ref,
        )


def test_streamed_residual_matches_batch_residual(tmp_path, profile, squat):
    """An independent path: newton_euler_residual on the whole arrays (rtol 0, atol 1e-9)."""
    from wholebody.balance import newton_euler_residual

    path = _write(squat, tmp_path / "log.h5")
    got = check_log(
        profile.robot, path, profile.contacts, CheckOptions(chunk_size=100, conventions=False)
    )
    q, v, a, _ = squat.for_robot(profile.robot)
    res = newton_euler_residual(
        profile.robot, q, v, a, profile.contacts, squat.contact_wrenches.reshape(len(squat), -1)
    )
    np.testing.assert_allclose(got.residual_force, res.force, rtol=0, atol=1e-9)


def test_chunked_conventions_flag_a_fault_in_one_chunk(tmp_path, profile, squat):
    """A w-x-y-z quaternion in the second half: the merged check fails and names the chunk."""
    q = squat.q.copy()
    q[500:, 3:7] = q[500:, [6, 3, 4, 5]]
    traj = replace(squat, q=q)
    path = _write(traj, tmp_path / "log.parquet")
    report = check_log(
        profile.robot, path, profile.contacts, CheckOptions(chunk_size=500, diagnose_causes=False)
    )
    check = report.conventions["velocity_matches_configuration"]
    assert not check.passed
    assert check.message.startswith("samples 500..999:")
    assert check.evidence["failing_chunks"] == [[500, 999]]
    assert report.verdict == "inconsistent"


def test_chunk_size_is_checked(tmp_path, profile, squat):
    path = _write(squat, tmp_path / "log.h5")
    with pytest.raises(InvalidArgumentError, match="chunk_size must be an integer >= 1, got 0"):
        check_log(profile.robot, path, profile.contacts, CheckOptions(chunk_size=0))
    with pytest.raises(InvalidArgumentError, match="chunk_size must be an integer >= 1"):
        check_trajectory(profile.robot, squat, profile.contacts, CheckOptions(chunk_size=2.5))
