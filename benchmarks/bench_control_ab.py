"""Paired A/B of the WholeBodyController tick: this tree's against another tree's, and TSID's,
on the same states of one MuJoCo closed loop (Talos, bench_control_loop's task set).

On a shared machine the closed-loop tick moves by 10-20 % from run to run (other jobs evict
the caches), more than most changes to the tick. Here every tick's state is handed to the
three controllers in turn (this tree's torques are applied), each after the same cache
disturbance as in the bench (a MuJoCo step on a scratch copy and the bench's Pinocchio
checks), and the order of the two wholebody trees alternates from tick to tick, so the
load hits all three alike and the per-phase medians can be divided.

The other tree's ``wholebody`` package is copied to a temporary folder as
``wholebody_base`` (its absolute imports renamed) and imported beside this one; its copy of
bench_control_loop's controller is read from this tree's bench with the names swapped.

Run::

    git archive <rev> src | tar -x -C /tmp/base        # the other tree's src
    python benchmarks/bench_control_ab.py /tmp/base/src [SECONDS] [--robot talos|g1]
        [--tasks default|extended]

Printed per phase: medians [us] of this tree (new), the other (base) and TSID, and the
ratios; and the largest torque difference between the two trees (the same QP: rounding).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_control_loop as B  # noqa: E402


def base_package(src: Path) -> types.ModuleType:
    """The other tree's ``wholebody``, imported as ``wholebody_base``."""
    root = Path(tempfile.mkdtemp(prefix="wholebody-ab-"))
    shutil.copytree(src / "wholebody", root / "wholebody_base")
    pattern = re.compile(r"\b(from|import) wholebody(\.|\b)")
    for path in (root / "wholebody_base").rglob("*.py"):
        text = path.read_text()
        new = pattern.sub(r"\1 wholebody_base\2", text).replace('"wholebody.', '"wholebody_base.')
        if new != text:
            path.write_text(new)
    sys.path.insert(0, str(root))
    import wholebody_base

    return wholebody_base


def base_bench(wbb: types.ModuleType) -> types.ModuleType:
    """bench_control_loop's source with ``wholebody`` swapped for the other tree's."""
    text = (HERE / "bench_control_loop.py").read_text()
    text = re.sub(r"\b(from|import) wholebody(\.|\b)", r"\1 wholebody_base\2", text)
    module = types.ModuleType("bench_control_loop_base")
    module.__file__ = str(HERE / "bench_control_loop.py")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(text, module.__file__, "exec"), module.__dict__)
    return module


def run(seconds: float, stepping: bool, wbb: types.ModuleType, Bb: types.ModuleType) -> str:
    """One paired closed loop; its lines of medians and ratios."""
    mujoco, m, d, robot, smap, dofs, q0, planned = B.setup()
    plan = B.Plan(robot, q0, stepping)
    base_robot = wbb.Robot.from_model(robot.model, validate="ignore")
    base_planned = [
        Bb.SurfaceContact(c.frame, half_length=c.half_length, half_width=c.half_width, mu=c.mu)
        for c in planned
    ]
    ctrls = {
        "new": B.Ours(robot, planned, q0, plan),
        "base": Bb.Ours(base_robot, base_planned, q0, plan),
        "tsid": B.Tsid(robot, planned, q0, plan),
    }
    checker = B.Checker(robot, planned)
    scratch = mujoco.MjData(m)
    times: dict[str, list[float]] = {k: [] for k in ctrls}
    phases, diff, clock = [], 0.0, time.thread_time
    for k in range(int(round(seconds / B.DT))):
        t = k * B.DT
        q, v = smap.q(d.qpos), smap.v(d.qpos, d.qvel)
        taus = {}
        for name in ("tsid", "new", "base") if k % 2 else ("tsid", "base", "new"):
            c = ctrls[name]
            c.prepare(t)
            mujoco.mj_step(m, scratch)  # the loop's cache disturbance before every tick
            checker(B.Stats(), q, v, np.zeros(robot.nv), np.zeros(robot.nv - 6), {})
            t0 = clock()
            taus[name] = c.tick(q, v, t)
            times[name].append(clock() - t0)
        diff = max(diff, float(np.max(np.abs(taus["new"] - taus["base"]))))
        single = stepping and B.T_LIFT + B.RAMP + B.DT < t < B.T_TOUCH
        phases.append("single" if single else "double")
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[dofs] = taus["new"]
        mujoco.mj_step(m, d)
    ph = np.array(phases)
    out = []
    for p in ("double", "single") if stepping else ("double",):
        med = {k: 1e6 * float(np.median(np.array(x)[ph == p])) for k, x in times.items()}
        label = f"{p} support" if stepping else "standing"
        out.append(
            f"  {label}: new {med['new']:.0f} us, base {med['base']:.0f} us, TSID "
            f"{med['tsid']:.0f} us; new/base {med['new'] / med['base']:.3f}, new/TSID "
            f"{med['new'] / med['tsid']:.3f}, base/TSID {med['base'] / med['tsid']:.3f}"
        )
    out.append(f"  largest |tau_new - tau_base| {diff:.1e} N m")
    return "\n".join(out)


def main() -> None:
    args = B.parse_args(sys.argv[1:])  # --robot and --tasks configure this tree's bench
    if not args:
        sys.exit(__doc__)
    seconds = float(args[1]) if len(args) > 1 else 1.0
    problem = B.tsid_problem()
    if problem is not None:
        sys.exit(f"bench_control_ab needs TSID: {problem}")
    wbb = base_package(Path(args[0]).resolve())
    Bb = base_bench(wbb)
    Bb.configure(B.ROBOT)
    Bb.configure_tasks(B.TASKS)
    print(
        f"bench_control_ab: new = {Path(B.wb.__file__).parent}, base = "
        f"{Path(args[0]).resolve()}; robot {B.ROBOT}; tick = thread CPU time, median per phase "
        f"(OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')})"
    )
    print(f"stepping, {B.T_END:g} s")
    print(run(B.T_END, True, wbb, Bb))
    print(f"standing, {seconds:g} s")
    print(run(seconds, False, wbb, Bb))


if __name__ == "__main__":
    main()
