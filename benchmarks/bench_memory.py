"""Peak memory of a check: in memory (the whole log loaded) and streamed from Parquet / HDF5.

Each measurement runs in a fresh subprocess and reports its peak RSS (``VmHWM``) beside
the size of the log's arrays (time, q, v, a, wrenches) in memory. The streamed peak should not
grow with the log's length; the in-memory peak beyond the arrays should stay under 1 GB.

Run: python benchmarks/bench_memory.py [N ...]      (default 250000 500000 1000000)
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

from _common import benchmark_robot, synthetic_log

warnings.simplefilter("ignore")

CHILD = r"""
import resource, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {bench!r})
from _common import benchmark_robot
from wholebody.check.analysis import check_log, check_trajectory
from wholebody.contacts import SurfaceContact
from wholebody.trajectory import Trajectory
robot, name, feet = benchmark_robot()
contacts = [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.8) for f in feet]
def hwm():  # this process' peak RSS [MB] (ru_maxrss would include the parent's at fork)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
base = hwm()
t0 = time.perf_counter()
if {mode!r} == "memory":
    report = check_trajectory(robot, Trajectory.load({path!r}), contacts)
else:
    report = check_log(robot, {path!r}, contacts)
wall = time.perf_counter() - t0
peak = hwm()
print(f"{{peak:.0f}} {{base:.0f}} {{wall:.1f}} {{report.verdict}}")
"""


def measure(mode: str, path: Path) -> tuple[float, float, float, str]:
    code = CHILD.format(bench=str(Path(__file__).parent), mode=mode, path=str(path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    peak, base, wall, verdict = out.stdout.split()
    return float(peak), float(base), float(wall), verdict


def main(sizes: list[int]) -> None:
    robot, name, feet = benchmark_robot()
    print(
        f"robot {name} (nv={robot.nv}), 2 surface contacts, chunk_size 50,000; "
        "peak RSS of a fresh process (imports and robot included)"
    )
    for n in sizes:
        traj = synthetic_log(robot, feet, n)
        arrays_mb = (
            sum(x.nbytes for x in (traj.time, traj.q, traj.v, traj.a, traj.contact_wrenches))
            / 2**20
        )
        with tempfile.TemporaryDirectory() as tmp:
            paths = {}
            for suffix in (".npz", ".parquet", ".h5"):
                paths[suffix] = Path(tmp) / f"log{suffix}"
                traj.save(paths[suffix])
            del traj  # this process' copy is not measured
            for mode, suffix in (("memory", ".npz"), ("streamed", ".parquet"), ("streamed", ".h5")):
                peak, base, wall, verdict = measure(mode, paths[suffix])
                extra = (
                    f" = arrays {arrays_mb:,.0f} MB + {peak - arrays_mb:,.0f} MB"
                    if mode == "memory"
                    else ""
                )
                print(
                    f"{n:>9,} samples  {mode:8s} {suffix:8s} peak {peak:7,.0f} MB "
                    f"(after imports {base:5,.0f} MB){extra}  {wall:6.1f} s  {n / wall:8,.0f}/s  "
                    f"{verdict}",
                    flush=True,
                )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [250_000, 500_000, 1_000_000])
