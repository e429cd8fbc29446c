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

import numpy as np

import wholebody as wb
from wholebody.balance import newton_euler_residuals
from wholebody.contacts import SurfaceContact
from wholebody.trajectory import Trajectory

warnings.simplefilter("ignore")


def main(n: int = 100_000) -> None:
    try:
        robot, name, feet = wb.load("g1"), "g1", ("left_ankle_roll_link", "right_ankle_roll_link")
    except wb.MissingDependencyError:
        robot, name, feet = wb.load("humanoid"), "humanoid", ("left_sole", "right_sole")
    rng = np.random.default_rng(0)
    unique = np.array([robot.random_configuration(rng) for _ in range(2000)])
    Q = unique[np.arange(n) % len(unique)]
    V = rng.normal(size=(n, robot.nv))
    A = rng.normal(size=(n, robot.nv))
    W = rng.normal(scale=50.0, size=(n, 2, 6)) + [0, 0, 300.0, 0, 0, 0]
    traj = Trajectory(np.arange(n) * 1e-3, Q, V, A, None, tuple(robot.joint_names), feet, W)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "long.npz"
        traj.save(log)
        profile = Path(tmp) / "profile.toml"
        profile.write_text(f'robot = "{name}"\n' + "".join(
            f'[[contacts]]\nframe = "{f}"\ntype = "surface"\nhalf_length = 0.1\nhalf_width = 0.05\nmu = 0.8\n'
            for f in feet))
        t0 = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", "wholebody.cli", "check", str(log), "--config", str(profile)],
                                capture_output=True, text=True)
        wall = time.perf_counter() - t0
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        log_mb = log.stat().st_size / 2**20
    if result.returncode not in (0, 1):
        print(result.stderr)
        raise SystemExit(1)
    contacts = [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.8) for f in feet]
    t0 = time.perf_counter()
    newton_euler_residuals(robot, Q, V, A, contacts, W.reshape(n, 12))
    inproc = time.perf_counter() - t0
    arrays_mb = (Q.nbytes + V.nbytes + A.nbytes + W.nbytes) / 2**20
    print(f"robot {name} (nv={robot.nv}), {n:,} samples, 2 surface contacts; log file {log_mb:.0f} MB")
    print(f"wholebody check (subprocess, all included): {wall:6.1f} s  {n / wall:9,.0f} samples/s  "
          f"peak memory {peak_mb:,.0f} MB (arrays alone {arrays_mb:,.0f} MB)")
    print(f"newton_euler_residuals in process:          {inproc:6.1f} s  {n / inproc:9,.0f} samples/s")
    print(f"ratio check / residual: {wall / inproc:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
