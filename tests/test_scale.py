"""Several processes and many logs: the same answers, bit for bit, with bad parts reported."""

from __future__ import annotations

import dataclasses
import pickle
import time
from pathlib import Path

import numpy as np
import pytest

import wholebody as wb
from wholebody.balance import newton_euler_residual
from wholebody.check import CheckOptions
from wholebody.check.analysis import check_trajectory
from wholebody.check.many import check_many, connect, format_table
from wholebody.contacts import SurfaceContact
from wholebody.errors import ClusterError, InvalidArgumentError
from wholebody.estimation import estimate_contact_wrenches
from wholebody.parallel import ChunkFailure, run_chunks
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "data" / "humanoid_squat.npz"
FEET = [
    SurfaceContact(f, half_length=0.12, half_width=0.05, mu=1.0)
    for f in ("left_sole", "right_sole")
]


@pytest.fixture(scope="module")
def bad_log() -> Trajectory:
    """The shipped log with flagged samples and an inconsistent stretch."""
    traj = Trajectory.load(LOG)
    q, v, W = traj.q.copy(), traj.v.copy(), traj.contact_wrenches.copy()
    q[10, 3:7] = 0.0
    v[333, 4] = np.nan
    W[600:650, 1] *= -1
    return dataclasses.replace(traj, q=q, v=v, contact_wrenches=W)


def _same(a, b):
    np.testing.assert_array_equal(a, b)  # NaN == NaN here; exact equality otherwise


def test_robot_pickles():
    robot = wb.load("humanoid")
    robot.add_frame("probe", "left_sole", [0.1, 0.0, 0.0])
    again = pickle.loads(pickle.dumps(robot))
    q = robot.random_configuration(1)
    _same(again.mass_matrix(q), robot.mass_matrix(q))
    _same(again.frame_position(q, "probe"), robot.frame_position(q, "probe"))


def test_check_with_two_workers_equals_one(humanoid, bad_log):
    one = check_trajectory(humanoid, bad_log, FEET, CheckOptions(workers=1, chunk_size=128))
    two = check_trajectory(humanoid, bad_log, FEET, CheckOptions(workers=2, chunk_size=128))
    for field in (
        "residual_force",
        "residual_moment",
        "cone_margin",
        "utilisation",
        "cop",
        "normal_force",
        "flagged",
    ):
        _same(getattr(two, field), getattr(one, field))
    _same(two.violated_row, one.violated_row)
    assert two.reasons == one.reasons and list(one.reasons) == [10, 333]
    assert [f.message for f in two.diagnosis] == [f.message for f in one.diagnosis]
    # Chunking does not change anything either.
    _same(check_trajectory(humanoid, bad_log, FEET).residual_force, one.residual_force)


def test_residuals_and_estimates_with_two_workers_equal_one(humanoid, bad_log):
    q, v, a, tau = bad_log.for_robot(humanoid)
    W = bad_log.contact_wrenches.reshape(len(bad_log), -1)
    r1 = newton_euler_residual(humanoid, q, v, a, FEET, W)
    r2 = newton_euler_residual(humanoid, q, v, a, FEET, W, workers=2, chunk_size=300)
    _same(r2.force, r1.force)
    _same(r2.moment, r1.moment)
    assert r2.reasons == r1.reasons
    e1 = estimate_contact_wrenches(humanoid, q[:200], v[:200], a[:200], FEET)
    e2 = estimate_contact_wrenches(
        humanoid, q[:200], v[:200], a[:200], FEET, workers=2, chunk_size=64
    )
    _same(e2.wrenches, e1.wrenches)
    _same(e2.status, e1.status)
    assert e2.reasons == e1.reasons


def _explode(robot, start):
    if start == 2:
        raise RuntimeError("disk on fire")
    return start


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_chunk_is_reported_not_lost(workers):
    out = run_chunks(None, _explode, [((i, i + 1), (i,)) for i in range(4)], workers=workers)
    assert out[:2] == [0, 1] and out[3] == 3
    assert out[2] == ChunkFailure(2, 3, "RuntimeError: disk on fire")


ROW_KEYS = [
    "path",
    "error",
    "verdict",
    "consistent",
    "samples_in",
    "checked",
    "flagged",
    "max_residual_force_N",
    "max_residual_moment_Nm",
    "fraction_over_tolerance",
    "cone_violations",
    "share_checked",
    "bound_force_N",
    "bound_moment_Nm",
    "diagnosis",
    "text",
]


def test_check_many_locally(tmp_path, humanoid, bad_log):
    bad_log.save(tmp_path / "bad.npz")
    (tmp_path / "broken.npz").write_bytes(b"nope")
    dataclasses.replace(bad_log, q=np.full_like(bad_log.q, np.nan)).save(tmp_path / "nan.npz")
    paths = [LOG, tmp_path / "bad.npz", tmp_path / "broken.npz", tmp_path / "nan.npz"]
    rows = check_many(paths, humanoid, FEET, workers=2)
    assert [list(r) for r in rows] == [ROW_KEYS] * 4  # the same keys, in order, for every row
    assert [r["verdict"] for r in rows] == ["consistent", "inconsistent", "error", "unchecked"]
    assert [r["consistent"] for r in rows] == [True, False, None, False]
    assert "cannot read as .npz" in rows[2]["error"]
    assert rows[2]["text"] == f"{tmp_path / 'broken.npz'}: error: {rows[2]['error']}"
    assert all(
        rows[2][k] is None for k in ROW_KEYS if k not in ("path", "error", "verdict", "text")
    )
    assert rows[1]["flagged"] == 2 and "wrong sign" in rows[1]["diagnosis"]
    assert rows[0]["diagnosis"] is None and rows[0]["error"] is None
    # Nothing checked: counts, and None where a figure would have no sample behind it.
    assert (rows[3]["samples_in"], rows[3]["checked"], rows[3]["flagged"]) == (1000, 0, 1000)
    assert rows[3]["max_residual_force_N"] is None and rows[3]["fraction_over_tolerance"] is None
    assert rows == check_many(paths, humanoid, FEET, workers=1)
    table = format_table(rows).splitlines()
    assert table[4].startswith("nan.npz") and table[4].endswith("  -  UNCHECKED")
    assert table[-1] == "4 logs: 1 consistent, 1 inconsistent, 1 unchecked, 1 unreadable"
    assert (
        format_table(rows[:3]).splitlines()[-1]
        == "3 logs: 1 consistent, 1 inconsistent, 1 unreadable"
    )


def test_check_many_on_a_dask_local_cluster(tmp_path, humanoid, bad_log):
    distributed = pytest.importorskip("dask.distributed")
    bad_log.save(tmp_path / "bad.npz")
    paths = [LOG, tmp_path / "bad.npz"]
    local = check_many(paths, humanoid, FEET)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        remote = check_many(paths, humanoid, FEET, client=client)
        # A task that fails on the cluster (here: a contact that is not a Contact) is that
        # log's row, with the error; the call itself does not raise.
        failed = check_many(paths, humanoid, [object()], client=client)
    assert remote == local
    assert [r["verdict"] for r in failed] == ["error", "error"]
    assert [list(r) for r in failed] == [ROW_KEYS] * 2
    assert failed[0]["error"].startswith("Dask task failed: AttributeError:")


def test_an_unreachable_dask_scheduler_is_a_cluster_error_in_time():
    pytest.importorskip("dask.distributed")
    t0 = time.monotonic()
    with pytest.raises(
        ClusterError,
        match=r"cannot reach the Dask scheduler at '127.0.0.1:1' "
        r"within 1 s",
    ) as info:
        connect("127.0.0.1:1", timeout=1.0)
    assert time.monotonic() - t0 < 5.0
    assert isinstance(info.value.__cause__, OSError)
    with pytest.raises(
        InvalidArgumentError, match="timeout must be a positive number of seconds, got 0"
    ):
        connect("127.0.0.1:1", timeout=0)


def test_one_log_on_the_command_line_is_the_row_check_many_gives(monkeypatch, capsys):
    """The command line checks one log without the many-file runner (``check_file``): its
    row is check_many's, an unexpected failure included (``TYPE: message``, exit code 2)."""
    import json

    import wholebody.check.analysis as analysis
    from wholebody.cli import main
    from wholebody.io.profile import load_profile

    profile = load_profile(ROOT / "models" / "humanoid.toml")
    args = ["check", str(LOG), "--config", str(ROOT / "models" / "humanoid.toml"), "--json"]
    for failure in (None, RuntimeError("boom")):
        if failure is not None:

            def fail(*args, error=failure, **kwargs):
                raise error

            monkeypatch.setattr(analysis, "check_trajectory", fail)
        code = main(args)
        rows = json.loads(capsys.readouterr().out)
        many = check_many([str(LOG)], profile.robot, profile.contacts, workers=1)
        assert rows == json.loads(json.dumps(many, default=float))
        assert code == (0 if failure is None else 2)
    assert rows[0]["verdict"] == "error" and rows[0]["error"] == "RuntimeError: boom"
