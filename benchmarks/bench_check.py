"""``wholebody check`` end to end on a long log, against the in-process batch residual.

Writes a 100,000-sample log of a 35-dof humanoid (G1 when example-robot-data is installed,
else the shipped humanoid) with random states and wrenches, runs ``wholebody check`` on it in
a subprocess (file reading, kinematics, cones, CoP, diagnosis, summary), and reports its
samples/s and peak memory beside ``newton_euler_residuals`` on the same arrays in this process.

Run: python benchmarks/bench_check.py [N]
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from _common import benchmark_robot, synthetic_log, write_profile

from wholebody.analysis import check_trajectory
from wholebody.balance import newton_euler_residuals
from wholebody.contacts import SurfaceContact

warnings.simplefilter("ignore")


def main(n: int = 100_000) -> None:
    robot, name, feet = benchmark_robot()
    traj = synthetic_log(robot, feet, n)
    Q, V, A, W = traj.q, traj.v, traj.a, traj.contact_wrenches
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "long.npz"
        traj.save(log)
        profile = write_profile(Path(tmp) / "profile.toml", name, feet)
        t0 = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-m", "wholebody.cli", "check", str(log), "--config", str(profile)],
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t0
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        log_mb = log.stat().st_size / 2**20
    if result.returncode not in (0, 1):
        print(result.stderr)
        raise SystemExit(1)
    contacts = [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.8) for f in feet]
    # In this process on one core, CPU time of the thread (robust on a shared machine),
    # interleaved: check, residual, check, residual; the best of each.
    check_cpu, inproc = [], []
    for _ in range(2):
        t0 = time.thread_time()
        check_trajectory(robot, traj, contacts)
        check_cpu.append(time.thread_time() - t0)
        t0 = time.thread_time()
        newton_euler_residuals(robot, Q, V, A, contacts, W.reshape(n, 12))
        inproc.append(time.thread_time() - t0)
    check_s, resid_s = min(check_cpu), min(inproc)
    arrays_mb = (Q.nbytes + V.nbytes + A.nbytes + W.nbytes) / 2**20
    print(
        f"robot {name} (nv={robot.nv}), {n:,} samples, 2 surface contacts; log file {log_mb:.0f} MB"
    )
    print(
        f"wholebody check (subprocess, all included): {wall:6.1f} s  {n / wall:9,.0f} samples/s  "
        f"peak memory {peak_mb:,.0f} MB (arrays alone {arrays_mb:,.0f} MB)"
    )
    print(
        f"check_trajectory in process (CPU, 1 core):  {check_s:6.1f} s  "
        f"{n / check_s:9,.0f} samples/s"
    )
    print(
        f"newton_euler_residuals in process (CPU):    {resid_s:6.1f} s  "
        f"{n / resid_s:9,.0f} samples/s"
    )
    print(f"ratio check_trajectory / residual: {check_s / resid_s:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
