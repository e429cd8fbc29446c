"""Both cores and long logs: speed-up of ``workers=2`` and the memory of a 1,000,000-sample check.

1. ``check_trajectory`` and ``newton_euler_residual`` in this process with ``workers=1`` and
   ``workers=2`` on the same 200,000-sample log of a 35-dof humanoid (G1 when installed):
   samples/s and the speed-up, checking the results are identical.
2. ``wholebody check`` in a subprocess on a 1,000,000-sample log: wall time and peak memory
   (ru_maxrss), beside the size of the log's arrays in memory. Target: under 1 GB beyond them.

Run: python benchmarks/bench_scale.py [N_SPEEDUP] [N_MEMORY]
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
from _common import benchmark_robot, synthetic_log, write_profile

from wholebody.balance import newton_euler_residual
from wholebody.check import CheckOptions, check_trajectory
from wholebody.contacts import SurfaceContact
from wholebody.parallel import default_workers

warnings.simplefilter("ignore")


def main(n_speed: int = 200_000, n_memory: int = 1_000_000) -> None:
    robot, name, feet = benchmark_robot()
    contacts = [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.8) for f in feet]
    print(f"robot {name} (nv={robot.nv}); CPUs available: {default_workers()}")
    traj = synthetic_log(robot, feet, n_speed)
    W = traj.contact_wrenches.reshape(n_speed, -1)
    times = {}
    for workers in (1, 2):
        t0 = time.perf_counter()
        report = check_trajectory(
            robot, traj, contacts, CheckOptions(workers=workers, diagnose_causes=False)
        )
        times["check", workers] = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = newton_euler_residual(
            robot, traj.q, traj.v, traj.a, contacts, W, workers=workers, chunk_size=25_000
        )
        times["residual", workers] = time.perf_counter() - t0
        if workers == 1:
            ref_report, ref_res = report, res
    assert np.array_equal(report.residual_force, ref_report.residual_force, equal_nan=True)
    assert np.array_equal(res.force, ref_res.force, equal_nan=True)
    for what in ("check", "residual"):
        t1, t2 = times[what, 1], times[what, 2]
        print(
            f"{what:9s} {n_speed:,} samples: workers=1 {n_speed / t1:9,.0f}/s, workers=2 "
            f"{n_speed / t2:9,.0f}/s, "
            f"speed-up {t1 / t2:.2f}x (identical results)"
        )

    big = synthetic_log(robot, feet, n_memory, seed=1)
    arrays_mb = sum(x.nbytes for x in (big.time, big.q, big.v, big.a, big.contact_wrenches)) / 2**20
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "million.npz"
        big.save(log)
        del big
        profile = write_profile(Path(tmp) / "profile.toml", name, feet)
        t0 = time.perf_counter()
        result = subprocess.run(
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
            ],
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t0
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if result.returncode not in (0, 1):
        print(result.stderr[-2000:])
        raise SystemExit(1)
    print(
        f"wholebody check --workers 2, {n_memory:,} samples: {wall:.0f} s "
        f"({n_memory / wall:,.0f} samples/s), "
        f"peak memory {peak_mb:,.0f} MB = arrays {arrays_mb:,.0f} MB + "
        f"{peak_mb - arrays_mb:,.0f} MB "
        f"(target: under 1,024 MB beyond the arrays)"
    )


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*args)
