"""Faults during a long check: a worker killed mid-run, and Ctrl-C.

``wholebody check --workers 2`` runs in a subprocess (its own process group) on a synthetic
log of a 35-dof humanoid (G1 when installed), N samples in chunks of 50,000:

1. no fault: the reference wall time;
2. one worker killed (SIGKILL) a few seconds into the per-sample work: its chunk is retried on
   a fresh worker; the run completes with nothing flagged by the fault;
3. one worker killed, then the replacement that took over its chunk killed too: that chunk
   (50,000 samples) is flagged with the reason, the rest is checked;
4. Ctrl-C (SIGINT to the process group, as a terminal sends it) a few seconds in: the time
   from the signal to the exit of the command, and the processes of its group left after.

Workers are the processes whose parent is the command (read from /proc, Linux only).

Run: python benchmarks/bench_faults.py [N]   (default 1,000,000)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from _common import benchmark_robot, synthetic_log, write_profile

warnings.simplefilter("ignore")
SRC = Path(__file__).resolve().parents[1] / "src"


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def children(pid: int) -> list[int]:
    """Live child processes of ``pid``."""
    out = []
    for entry in Path("/proc").glob("[0-9]*"):
        fields = _stat(int(entry.name))
        if fields and int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry.name))
    return sorted(out)


def group(pgid: int) -> list[int]:
    """Live processes of the process group ``pgid``."""
    out = []
    for entry in Path("/proc").glob("[0-9]*"):
        fields = _stat(int(entry.name))
        if fields and int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(entry.name))
    return out


def wait_until(condition, timeout: float = 600.0, step: float = 0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(step)
    raise TimeoutError("condition not reached")


def start(log: Path, profile: Path, out: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wholebody.cli",
            "check",
            str(log),
            "--config",
            str(profile),
            "--workers",
            "2",
            "--json",
            "--out",
            str(out),
        ],
        env=env,
        start_new_session=True,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def two_workers(proc: subprocess.Popen) -> list[int]:
    return wait_until(lambda: (c := children(proc.pid)) and len(c) >= 2 and c)


def finish(proc: subprocess.Popen, t0: float, out: Path, log: Path) -> str:
    stdout, stderr = proc.communicate()
    wall = time.monotonic() - t0
    load = f" (load average {os.getloadavg()[1]:.1f})"
    if proc.returncode not in (0, 1):
        return f"exit {proc.returncode} after {wall:.1f} s: {stderr.strip()[-500:]}"
    row = json.loads(stdout)[0]
    reasons = json.loads((out / f"{log.stem}.report.json").read_text())["flagged_reasons"]
    shown = sorted(set(reasons.values()))
    return (
        f"exit {proc.returncode}, {wall:.1f} s; {row['samples_in']:,} samples = "
        f"{row['checked']:,} checked + {row['flagged']:,} flagged; verdict {row['verdict']}"
        + (f"; reason: {shown[0]}" if shown else "")
        + (f" (+{len(shown) - 1} other reasons)" if len(shown) > 1 else "")
        + load
    )


def main(n: int = 1_000_000) -> None:
    robot, name, feet = benchmark_robot()
    print(
        f"robot {name} (nv={robot.nv}); {n:,} samples, chunks of 50,000; "
        f"wholebody check --workers 2 --out (subprocess, wall time includes loading, the "
        f"diagnosis and writing the reports); CPUs: {os.cpu_count()}, shared with other users"
    )
    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        log = tmp / "faults.npz"
        synthetic_log(robot, feet, n, seed=2).save(log)
        profile = write_profile(tmp / "profile.toml", name, feet)

        t0 = time.monotonic()
        proc = start(log, profile, tmp / "ref")
        print(f"1. no fault:                     {finish(proc, t0, tmp / 'ref', log)}")

        t0 = time.monotonic()
        proc = start(log, profile, tmp / "once")
        victim = two_workers(proc)[0]
        time.sleep(3.0)
        os.kill(victim, signal.SIGKILL)
        print(
            f"2. one worker killed (t={time.monotonic() - t0:.1f} s): "
            f"{finish(proc, t0, tmp / 'once', log)}"
        )

        t0 = time.monotonic()
        proc = start(log, profile, tmp / "twice")
        first = two_workers(proc)
        time.sleep(3.0)
        os.kill(first[0], signal.SIGKILL)
        replacement = wait_until(lambda: [c for c in children(proc.pid) if c not in first])[0]
        time.sleep(1.0)  # it has taken the dead worker's chunk
        os.kill(replacement, signal.SIGKILL)
        print(
            f"3. worker and its replacement killed (t={time.monotonic() - t0:.1f} s): "
            f"{finish(proc, t0, tmp / 'twice', log)}"
        )

        t0 = time.monotonic()
        proc = start(log, profile, tmp / "ctrl-c")
        two_workers(proc)
        time.sleep(3.0)
        t_int = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate()
        stop = time.monotonic() - t_int
        left = group(proc.pid)
        print(
            f"4. Ctrl-C (t={t_int - t0:.1f} s): exit {proc.returncode} {stop:.2f} s after "
            f"SIGINT, stderr {stderr.strip()!r}, {len(left)} processes of its group left"
        )


if __name__ == "__main__":
    main(*[int(a) for a in sys.argv[1:]])
