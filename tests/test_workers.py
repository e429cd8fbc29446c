"""Worker processes that die or are interrupted: the rest completes, nothing is left behind.

A worker is killed deterministically by a module-level chunk function that sends SIGKILL to
its own process on a chosen chunk: always (the chunk is reported after its retry), or once,
remembered through a marker file (the retry succeeds). Ctrl-C is tested on a subprocess whose
workers sleep: it must exit within 2 s and leave no process of its group behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import wholebody.check.engine as engine  # where evaluate lives
from wholebody.check import CheckOptions, check_trajectory
from wholebody.contacts import SurfaceContact
from wholebody.errors import InvalidArgumentError
from wholebody.parallel import ChunkFailure, run_chunks
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "data" / "humanoid_squat.npz"
FEET = [
    SurfaceContact(f, half_length=0.12, half_width=0.05, mu=1.0)
    for f in ("left_sole", "right_sole")
]
CHUNKS = [((100 * i, 100 * i + 100), (i,)) for i in range(6)]
EXPECTED = [i * i + 0.5 for i in range(6)]  # what _square_or_die returns, computed here


def _square_or_die(robot, i, crash_at=-1, marker=None, how="kill"):
    """i * i + 0.5, except on chunk ``crash_at``: the worker process dies (every time, or only
    the first time when ``marker`` names a file, which records that it died once)."""
    if i == crash_at and (marker is None or not os.path.exists(marker)):
        if marker is not None:
            Path(marker).touch()
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(3)
    return i * i + 0.5


def _chunks(crash_at, marker=None, how="kill"):
    return [(bounds, (i, crash_at, marker, how)) for bounds, (i,) in CHUNKS]


def test_a_worker_killed_once_is_retried_and_nothing_is_lost(tmp_path):
    marker = tmp_path / "died-once"
    out = run_chunks(None, _square_or_die, _chunks(2, str(marker)), workers=2)
    assert marker.exists()  # the worker did die on chunk 2
    assert out == EXPECTED


def test_a_chunk_that_kills_its_worker_twice_is_reported_and_the_rest_completes():
    out = run_chunks(None, _square_or_die, _chunks(3), workers=2)
    assert out[:3] + out[4:] == EXPECTED[:3] + EXPECTED[4:]
    assert out[3] == ChunkFailure(
        300, 400, "worker process died (exit code -9) twice on samples 300..399"
    )


def test_the_exit_code_of_a_worker_that_exits_is_reported():
    out = run_chunks(None, _square_or_die, _chunks(0, how="exit"), workers=2)
    assert out[1:] == EXPECTED[1:]
    assert out[0].error == "worker process died (exit code 3) twice on samples 0..99"


def test_more_workers_than_chunks_and_every_chunk_dying():
    chunks = [((i, i + 1), (i, i)) for i in range(2)]  # chunk i crashes on i == i: all die
    out = run_chunks(None, _square_or_die, chunks, workers=4, item="log")
    assert out == [
        ChunkFailure(0, 1, "worker process died (exit code -9) twice on log 0"),
        ChunkFailure(1, 2, "worker process died (exit code -9) twice on log 1"),
    ]


def _unsendable(robot, i):
    """A result that does not pickle on chunk 1 (a local function), ``i`` elsewhere."""
    return (lambda: i) if i == 1 else i


def test_a_result_that_cannot_be_sent_back_is_that_chunks_failure():
    out = run_chunks(None, _unsendable, [((i, i + 1), (i,)) for i in range(3)], workers=2)
    assert out[0] == 0 and out[2] == 2
    assert (out[1].start, out[1].stop) == (1, 2)
    assert out[1].error.startswith("AttributeError: Can't pickle local object")


@pytest.mark.parametrize("workers", [0, -1, 1.5, True])
def test_workers_must_be_a_positive_integer(workers):
    with pytest.raises(
        InvalidArgumentError, match=f"workers must be a positive integer, got {workers!r}"
    ):
        run_chunks(None, _square_or_die, _chunks(-1), workers=workers)


_ORIGINAL_EVALUATE = engine.evaluate


def _evaluate_dies_on_short_chunk(robot, job):
    """engine.evaluate, except that the worker dies on the chunk of 100 samples (the last
    one, 900..999)."""
    if len(job.q) == 100:
        os.kill(os.getpid(), signal.SIGKILL)
    return _ORIGINAL_EVALUATE(robot, job)


def test_check_trajectory_flags_the_samples_of_a_dead_worker(monkeypatch, humanoid):
    """The killed chunk's samples are flagged with the reason; every other sample is what
    workers=1 gives, bit for bit (the reference runs in this process, without the patch)."""
    traj = Trajectory.load(LOG)
    one = check_trajectory(humanoid, traj, FEET, CheckOptions(workers=1, chunk_size=300))
    monkeypatch.setattr(engine, "evaluate", _evaluate_dies_on_short_chunk)
    two = check_trajectory(humanoid, traj, FEET, CheckOptions(workers=2, chunk_size=300))
    assert len(traj) == 1000
    np.testing.assert_array_equal(two.flagged, np.arange(1000) >= 900)
    assert set(two.reasons) == set(range(900, 1000))
    assert "worker process died (exit code -9) twice on samples 900..999" in two.reasons[950]
    np.testing.assert_array_equal(two.residual_force[:900], one.residual_force[:900])
    np.testing.assert_array_equal(two.cone_margin[:900], one.cone_margin[:900])
    assert np.isnan(two.residual_force[900:]).all()


# --- Ctrl-C -------------------------------------------------------------------------------

SLEEPER = textwrap.dedent("""
    import os, sys, time
    from wholebody.parallel import run_chunks

    def nap(robot, i, folder):
        open(os.path.join(folder, str(os.getpid())), "w").close()
        time.sleep(60)
        return i

    if __name__ == "__main__":
        try:
            run_chunks(None, nap, [((i, i + 1), (i, sys.argv[1])) for i in range(8)], workers=2)
        except KeyboardInterrupt:
            sys.exit(130)
        sys.exit(0)
""")


def processes_in_group(pgid: int) -> list[int]:
    """Live (not zombie) processes whose process group is ``pgid``, read from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def wait_for(condition, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return False


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("to_group", [True, False], ids=["terminal-ctrl-c", "parent-only"])
def test_ctrl_c_stops_the_workers_within_2_s(tmp_path, to_group):
    script = tmp_path / "sleeper.py"
    script.write_text(SLEEPER)
    started = tmp_path / "started"
    started.mkdir()
    proc = subprocess.Popen(
        [sys.executable, str(script), str(started)],
        env=environment(),
        start_new_session=True,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_for(lambda: len(list(started.iterdir())) == 2, 60), "workers did not start"
        workers = [int(p.name) for p in started.iterdir()]
        t0 = time.monotonic()
        if to_group:
            os.killpg(proc.pid, signal.SIGINT)  # what a terminal does
        else:
            os.kill(proc.pid, signal.SIGINT)
        rc = proc.wait(timeout=10)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert rc == 130, proc.stderr.read() if proc.stderr else ""
    assert elapsed < 2.0
    assert processes_in_group(proc.pid) == []
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
    assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_ctrl_c_stops_wholebody_check_within_2_s(tmp_path):
    """``wholebody check --workers 2`` on a 200,000-sample log (the shipped log repeated),
    interrupted from the terminal once both workers run: exit 130 with one line, in < 2 s, and
    no process of its group left."""
    traj = Trajectory.load(LOG)
    reps = 200
    assert traj.a is not None
    long = Trajectory(
        np.arange(reps * len(traj)) * 1e-3,
        np.tile(traj.q, (reps, 1)),
        np.tile(traj.v, (reps, 1)),
        np.tile(traj.a, (reps, 1)),
        None,
        traj.joint_names,
        traj.contact_names,
        np.tile(traj.contact_wrenches, (reps, 1, 1)),
    )
    long.save(tmp_path / "long.npz")
    del long
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wholebody.cli",
            "check",
            str(tmp_path / "long.npz"),
            "--config",
            str(ROOT / "models" / "humanoid.toml"),
            "--workers",
            "2",
        ],
        env=environment(),
        start_new_session=True,
        text=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert wait_for(lambda: len(processes_in_group(proc.pid)) >= 3, 60), "no workers"
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        rc = proc.wait(timeout=10)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.stderr is not None
    assert (rc, proc.stderr.read()) == (130, "wholebody: interrupted\n")
    assert elapsed < 2.0
    assert processes_in_group(proc.pid) == []
