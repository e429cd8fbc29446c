"""Contact-wrench estimation: the one route, for N samples and for one, beside its parts.

1. ``--batch``: ``estimate_contact_wrenches`` on N samples of a 35-dof humanoid (G1 when
   installed; two rectangular feet, Newton-Euler mode, daqp) per sample, beside the Pinocchio
   pass it needs (bare calls: the centroidal momentum rate and the two foot placements) and a
   native daqp solve of the same QPs (goal: batch <= 3.0x the pass); and one call per sample
   on 300 of them beside one sample of a batch of the same 300 (goal: <= 1.5x), also with
   the wrenches read.
2. ``--schedule``: the batch with an active mask (40 % single support) and a known push, as
   ratios to the batch without.
3. ``--backends``: every installed qpsolvers backend on the same problems (2 rectangular feet
   = 12 unknowns, 32 cone rows; 8 point contacts = 24 unknowns, 32 rows; both modes): share
   of verified answers, largest difference to daqp's, median time of a prebuilt solve.

Timings are the CPU time of this thread, best of several runs, the compared calls
interleaved (the machine is shared: only ratios within one run mean something).

Run: python benchmarks/bench_estimation.py [--batch] [--schedule] [--backends] (all without)
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import qpsolvers
from _common import benchmark_robot

import wholebody as wb
from wholebody.contacts import PointContact, SurfaceContact
from wholebody.estimation import build_estimation_problem, estimate_contact_wrenches
from wholebody.friction import wrench_cone_generators

warnings.simplefilter("ignore")
X, Y, MU = 0.12, 0.05, 0.8


def samples(robot, contacts, n, rng, base_height):
    """n states whose contact wrenches are inside their cones (forward dynamics from random
    torques and drawn wrenches): (q, v, a, tau) each."""
    out = []
    for _ in range(n):
        joints = {j: rng.uniform(-0.15, 0.15) for j in robot.joint_names}
        q = robot.q_from_named(joints, base_position=[0.0, 0.0, base_height], beyond_limits=True)
        v = rng.normal(scale=0.3, size=robot.nv)
        ext = {}
        for c in contacts:
            R = robot.placements(q, c.frame).se3().rotation
            if c.size == 6:
                gens = wrench_cone_generators(c.half_length, c.half_width, c.mu)
                local = gens @ rng.exponential(20.0, 16)
                ext[c.frame] = np.r_[R @ local[:3], R @ local[3:]]
            else:
                ext[c.frame] = R @ (np.array([0.2, -0.1, 1.0]) * rng.exponential(80.0))
        tau = rng.normal(scale=10.0, size=robot.nv - 6)
        a = robot.forward_dynamics(q, v, np.r_[np.zeros(6), tau], ext)
        out.append((q, v, a, tau))
    return out


def cpu(fn):
    """CPU time of this thread for ``fn()`` [s]."""
    t0 = time.thread_time()
    fn()
    return time.thread_time() - t0


def bare_pass(robot, Q, V, A, fids):
    """The Pinocchio calls of the pass alone (momentum rate + frame placements), no copies."""
    import pinocchio as pin

    m, d = robot.model, robot.model.createData()
    rate, place = pin.computeCentroidalMomentumTimeVariation, pin.updateFramePlacement

    def run():
        for i in range(len(Q)):
            rate(m, d, Q[i], V[i], A[i])
            for f in fids:
                place(m, d, f)

    return cpu(run)


def raw_daqp(problems):
    """The samples' QPs (built beforehand), solved one after another by daqp's own model,
    updated per sample: seconds."""
    import daqp

    n, m = problems[0].ne_matrix.shape[1], 6 + problems[0].cones.shape[0]
    AB = np.array([np.vstack([p.ne_matrix, p.cones]) for p in problems])
    UB = np.zeros((len(problems), m))
    UB[:, :6] = [p.ne_target for p in problems]
    LB = np.full((len(problems), m), -1e30)
    LB[:, :6] = UB[:, :6]
    sense = np.zeros(m, dtype=np.int32)
    sense[:6] = 5
    model = daqp.Model()
    model.setup(np.eye(n), np.zeros(n), AB[0], UB[0], LB[0], sense)

    def run():
        for i in range(len(problems)):
            model.update(A=AB[i], bupper=UB[i], blower=LB[i])
            model.solve()

    return cpu(run)


def batch_and_one(n=5000, n_one=300, repeats=7):
    """Per sample: the batch, its bare pass, daqp alone; one call per sample and one sample
    of a batch of the same ``n_one`` samples (all interleaved, best of ``repeats``)."""
    robot, name, frames = benchmark_robot()
    feet = [SurfaceContact(f, half_length=X, half_width=Y, mu=MU) for f in frames]
    data = samples(robot, feet, 500, np.random.default_rng(1), 0.78 if name == "g1" else 0.94)
    idx = np.arange(n) % len(data)
    Q, V, A = (np.array([data[i][j] for i in idx]) for j in range(3))
    q, v, a = Q[:n_one], V[:n_one], A[:n_one]
    fids = [robot.frame_id(f) for f in frames]
    problems = [build_estimation_problem(robot, *s[:3], feet) for s in data]
    runs = {
        "batch": lambda: cpu(lambda: estimate_contact_wrenches(robot, Q, V, A, feet)) / n,
        "pass": lambda: bare_pass(robot, Q, V, A, fids) / n,
        "daqp": lambda: raw_daqp(problems) / len(problems),
        "batch of 300": lambda: (
            cpu(lambda: estimate_contact_wrenches(robot, q, v, a, feet)) / n_one
        ),
        "one call": lambda: (
            cpu(
                lambda: [
                    estimate_contact_wrenches(robot, q[i], v[i], a[i], feet) for i in range(n_one)
                ]
            )
            / n_one
        ),
        "one call, wrenches read": lambda: (
            cpu(
                lambda: [
                    estimate_contact_wrenches(robot, q[i], v[i], a[i], feet).wrenches
                    for i in range(n_one)
                ]
            )
            / n_one
        ),
    }
    best = dict.fromkeys(runs, np.inf)
    for _ in range(repeats):
        for label, run in runs.items():
            best[label] = min(best[label], run())
    us = {label: 1e6 * t for label, t in best.items()}
    batch = estimate_contact_wrenches(robot, Q, V, A, feet)
    print(
        f"{name} (nv={robot.nv}), 2 rectangular feet, Newton-Euler mode, daqp; thread CPU time, "
        f"best of {repeats}, interleaved; verified {batch.found.mean():.1%}"
    )
    print(f"  bare pass (momentum rate + 2 placements) {us['pass']:6.1f} us")
    print(f"  daqp alone (update + solve), same QPs    {us['daqp']:6.1f} us")
    print(f"  batch of {n}, per sample               {us['batch']:6.1f} us")
    print(f"  batch of {n_one}, per sample                {us['batch of 300']:6.1f} us")
    print(f"  one call per sample                      {us['one call']:6.1f} us")
    print(f"  one call, wrenches read                  {us['one call, wrenches read']:6.1f} us")
    ratio = us["batch"] / us["pass"]
    single = us["one call"] / us["batch of 300"]
    read = us["one call, wrenches read"] / us["batch of 300"]
    print(f"  batch / pass {ratio:.2f}x (goal <= 3.0x{'' if ratio <= 3.0 else ': NOT met'})")
    print(
        f"  one call / batch sample {single:.2f}x (goal <= 1.5x"
        f"{'' if single <= 1.5 else ': NOT met'}); wrenches read {read:.2f}x"
    )


def schedule_cost(n=3000, repeats=7):
    """Batch time per sample with and without the active mask / known push, interleaved in
    one run (best of ``repeats`` each): the schedule's cost as a ratio."""
    rng = np.random.default_rng(2)
    robot, name, frames = benchmark_robot()
    height = 0.78 if name == "g1" else 0.94
    feet = [SurfaceContact(f, half_length=X, half_width=Y, mu=MU) for f in frames]
    # Double support, then the left foot alone, then the right alone: the motion of each
    # sample is made by the feet its mask leaves active (40 % single support).
    both = samples(robot, feet, 300, rng, height)
    left = samples(robot, feet[:1], 100, rng, height)
    right = samples(robot, feet[1:], 100, rng, height)
    all_on = np.ones((n, 2), dtype=bool)
    walking = all_on.copy()
    phase = (np.arange(n) // 50) % 5
    walking[phase == 1, 1] = False
    walking[phase == 3, 0] = False
    rows = [
        left[i % 100] if phase[i] == 1 else right[i % 100] if phase[i] == 3 else both[i % 300]
        for i in range(n)
    ]
    Q, V, A = (np.array([r[j] for r in rows]) for j in range(3))
    # A known push of zero (the motion stays the same; the push's algebra is what costs).
    push = {"pelvis" if name == "g1" else "torso": np.zeros((n, 3))}
    variants = {
        "no mask": {},
        "mask all active": {"active": all_on},
        "mask 40% single support": {"active": walking},
        "mask + known push": {"active": walking, "external_wrenches": push},
    }
    best = dict.fromkeys(variants, np.inf)
    for _ in range(repeats):
        for label, kw in variants.items():
            best[label] = min(
                best[label],
                cpu(lambda kw=kw: estimate_contact_wrenches(robot, Q, V, A, feet, **kw)),
            )
    print(
        f"\nschedule cost, {name}, 2 feet, Newton-Euler mode, daqp, {n} samples, best of {repeats}"
    )
    for label, t in best.items():
        print(f"  {label:26s} {1e6 * t / n:6.1f} us/sample   ratio {t / best['no mask']:.3f}")


def backend_table(n=100):
    rng = np.random.default_rng(0)
    robot = wb.load("humanoid")
    feet = [
        SurfaceContact(f, half_length=X, half_width=Y, mu=MU) for f in ("left_sole", "right_sole")
    ]
    corners = []
    for side in ("left", "right"):
        for i, (x, y) in enumerate([(X, Y), (-X, Y), (-X, -Y), (X, -Y)]):
            robot.add_frame(f"{side}_c{i}", f"{side}_sole", [x, y, 0.0])
            corners.append(PointContact(f"{side}_c{i}", mu=MU))
    print(f"\nbackends on the shipped humanoid, {n} samples per set; verified = found and checked")
    print(
        f"{'set':28s} {'backend':10s} {'verified':>9s} {'max |x - daqp| [N]':>19s} "
        f"{'median solve [us]':>18s}"
    )
    for label, contacts in (
        ("2 feet (12 var, 32 rows)", feet),
        ("8 points (24 var, 32 rows)", corners),
    ):
        data = samples(robot, contacts, n, rng, 0.94)
        for mode in ("newton_euler", "full_dynamics"):
            problems = [
                build_estimation_problem(
                    robot, q, v, a, contacts, tau=tau if mode == "full_dynamics" else None
                )
                for q, v, a, tau in data
            ]
            reference = [p.solve("daqp").x for p in problems]
            for solver in qpsolvers.available_solvers:
                ok, worst, times = 0, 0.0, []
                for p, ref in zip(problems, reference, strict=True):
                    t0 = time.perf_counter()
                    est = p.solve(solver, friction_scale=False)
                    times.append(time.perf_counter() - t0)
                    if est.found:
                        ok += 1
                        worst = max(worst, float(np.abs(est.x - ref).max()))
                print(
                    f"{label + ' ' + mode[:4]:28s} {solver:10s} {ok / n:8.0%} {worst:19.1e} "
                    f"{1e6 * np.median(times):18.0f}"
                )


if __name__ == "__main__":
    chosen = {"--batch", "--schedule", "--backends"} & set(sys.argv) or {
        "--batch",
        "--schedule",
        "--backends",
    }
    if "--batch" in chosen:
        batch_and_one()
    if "--schedule" in chosen:
        schedule_cost()
    if "--backends" in chosen:
        backend_table()
