"""``wholebody check`` end to end on a long log, against the in-process batch residual.

Two 100,000-sample logs of a 35-dof humanoid (G1 when example-robot-data is installed, else
the shipped humanoid):

- **random**: random states and wrenches (``_common.synthetic_log``). It is inconsistent, so
  the diagnosis runs (about 2 s, fixed: it keeps at most 4000 samples). ``wholebody check``
  runs on it in a subprocess (file reading, kinematics, cones, CoP, diagnosis, summary), and
  ``check_trajectory`` in this process with and without the diagnosis and the convention
  checks;
- **consistent**: the robot standing on both feet (legs still, waist and arms swinging), the
  feet's wrenches estimated by QP so that every sample balances inside the cones: no sample
  is inconsistent, the diagnosis does not run.

In-process figures are the CPU time of this thread (one core), best of 3, interleaved with
``newton_euler_residual`` on the same arrays; the command's figure is its wall time and the
CPU time of its process (user + system), the one to compare on a shared machine.

Run: python benchmarks/bench_check.py [N]
"""

from __future__ import annotations

import gc
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from _common import benchmark_robot, synthetic_log, write_profile

import wholebody as wb
from wholebody.balance import newton_euler_residual
from wholebody.check import CheckOptions, check_trajectory
from wholebody.contacts import SurfaceContact
from wholebody.estimation import estimate_contact_wrenches
from wholebody.trajectory import Trajectory

warnings.simplefilter("ignore")
HALF_LENGTH, HALF_WIDTH, MU = 0.1, 0.05, 0.8
REPEATS = 3


def consistent_log(robot: wb.Robot, feet: tuple[str, ...], n: int) -> Trajectory:
    """Standing on both feet at 1 kHz: base and legs still, the other joints swinging
    (0.1-0.3 rad at 0.3-1.5 Hz, v and a their exact derivatives); the feet's wrenches are
    the least-norm Newton-Euler split inside the wrench cones (estimated by QP)."""
    rng = np.random.default_rng(1)
    t = np.arange(n, dtype=np.float64) * 1e-3
    names = list(robot.joint_names)
    still = [j for j, name in enumerate(names) if any(k in name for k in ("hip", "knee", "ankle"))]
    q0 = robot.q_from_named({}, base_position=[0.0, 0.0, 0.8])
    amp = rng.uniform(0.1, 0.3, len(names))
    amp[still] = 0.0
    w = 2 * np.pi * rng.uniform(0.3, 1.5, len(names))
    phase = rng.uniform(0, 2 * np.pi, len(names))
    arg = w * t[:, None] + phase
    Q = np.repeat(q0[None], n, axis=0)
    Q[:, 7:] += amp * np.sin(arg)
    V = np.zeros((n, robot.nv))
    A = np.zeros((n, robot.nv))
    V[:, 6:] = amp * w * np.cos(arg)
    A[:, 6:] = -amp * w * w * np.sin(arg)
    contacts = [
        SurfaceContact(f, half_length=HALF_LENGTH, half_width=HALF_WIDTH, mu=MU) for f in feet
    ]
    est = estimate_contact_wrenches(robot, Q, V, A, contacts)
    W = np.stack([est.wrench(c.name) for c in contacts], axis=1)
    return Trajectory(t, Q, V, A, None, tuple(names), tuple(feet), W)


def cpu(fn, *args, **kwargs):
    gc.collect()  # no collection of the previous variant's garbage inside this one
    t0 = time.thread_time()
    out = fn(*args, **kwargs)
    return time.thread_time() - t0, out


def main(n: int = 100_000) -> None:
    robot, name, feet = benchmark_robot()
    traj = synthetic_log(robot, feet, n)
    contacts = [
        SurfaceContact(f, half_length=HALF_LENGTH, half_width=HALF_WIDTH, mu=MU) for f in feet
    ]
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "long.npz"
        traj.save(log)
        profile = write_profile(Path(tmp) / "profile.toml", name, feet)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-m", "wholebody.cli", "check", str(log), "--config", str(profile)],
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cli_cpu = sum(getattr(after, f) - getattr(before, f) for f in ("ru_utime", "ru_stime"))
        peak_mb = after.ru_maxrss / 1024
        log_mb = log.stat().st_size / 2**20
    if result.returncode not in (0, 1):
        print(result.stderr)
        raise SystemExit(1)
    good = consistent_log(robot, feet, n)
    variants = {
        "random, check_trajectory (diagnosis runs)": (traj, CheckOptions()),
        "random, without the diagnosis": (traj, CheckOptions(diagnose_causes=False)),
        "random, without diagnosis and conventions": (
            traj,
            CheckOptions(diagnose_causes=False, conventions=False),
        ),
        "consistent, check_trajectory (no diagnosis)": (good, CheckOptions()),
    }
    best = dict.fromkeys(variants, np.inf)
    best_resid = np.inf
    verdicts = {}
    for _ in range(REPEATS):  # interleaved; the best of each
        for label, (log_, options) in variants.items():
            s, report = cpu(check_trajectory, robot, log_, contacts, options)
            best[label] = min(best[label], s)
            verdicts[label] = (report.verdict, len(report.diagnosis))
        s, _ = cpu(
            newton_euler_residual, robot, traj.q, traj.v, traj.a, contacts,
            traj.contact_wrenches.reshape(n, 12),
        )  # fmt: skip
        best_resid = min(best_resid, s)
    arrays = (traj.q, traj.v, traj.a, traj.contact_wrenches)
    arrays_mb = sum(x.nbytes for x in arrays if x is not None) / 2**20
    print(f"# load average {os.getloadavg()[0]:.2f} (2 shared cores)")
    print(
        f"robot {name} (nv={robot.nv}), {n:,} samples, 2 surface contacts; log file {log_mb:.0f} MB"
    )
    print(
        f"wholebody check, random log (subprocess, all included): {wall:5.1f} s "
        f"{n / wall:9,.0f} samples/s, CPU {cli_cpu:5.1f} s {n / cli_cpu:9,.0f} samples/s  "
        f"peak memory {peak_mb:,.0f} MB (arrays {arrays_mb:,.0f} MB)"
    )
    for label, s in best.items():
        verdict, findings = verdicts[label]
        print(f"{label:46s} {s:5.2f} s {n / s:9,.0f} samples/s  ({verdict}, {findings} findings)")
    print(
        f"{'newton_euler_residual (random log)':46s} {best_resid:5.2f} s "
        f"{n / best_resid:9,.0f} samples/s"
    )
    full = best["random, check_trajectory (diagnosis runs)"]
    print(f"ratio check_trajectory / residual (random log): {full / best_resid:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
