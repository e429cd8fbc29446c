"""Contact-wrench estimation: QP backends compared, and batch time per sample.

1. Backend table: every installed qpsolvers backend on the same problems (Newton-Euler and
   full-dynamics modes; 2 rectangular feet = 12 unknowns, 32 cone rows; 8 point contacts =
   24 unknowns, 32 rows): share of verified solutions, largest difference to daqp's, and
   median time of ``qpsolvers.solve_problem``.
2. Batch: ``estimate_contact_wrenches_batch`` on a 35-dof humanoid (G1 when installed) with
   two rectangular feet, Newton-Euler mode and the default backend: median wall time per
   sample (Pinocchio pass, assembly, solve, verification) beside the bare daqp solve time
   measured inside the same run, and their sum (the floor). Goal <= 30 us per sample.

Run: python benchmarks/bench_estimation.py [--batch | --schedule]
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import qpsolvers
from _common import benchmark_robot

import wholebody as wb
from wholebody.contacts import PointContact, SurfaceContact
from wholebody.estimation import build_estimation_problem, estimate_contact_wrenches_batch
from wholebody.friction import wrench_cone_generators

warnings.simplefilter("ignore")
X, Y, MU = 0.12, 0.05, 0.8


def samples(robot, contacts, n, rng, base_height):
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
    print(f"backends on the shipped humanoid, {n} samples per set; verified = found and checked")
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


def raw_daqp_per_sample(problems, repeats=3):
    """Median-free floor of the solve: the samples' QPs (built beforehand by
    ``build_estimation_problem``), solved one after another by daqp's own ``Model``, updated
    per sample (the way batch estimation calls it): best of ``repeats``, seconds per sample."""
    import daqp

    n = problems[0].ne_matrix.shape[1]
    m = 6 + problems[0].cones.shape[0]
    AB = np.array([np.vstack([p.ne_matrix, p.cones]) for p in problems])
    UB = np.zeros((len(problems), m))
    UB[:, :6] = [p.ne_target for p in problems]
    LB = np.full((len(problems), m), -1e30)
    LB[:, :6] = UB[:, :6]
    sense = np.zeros(m, dtype=np.int32)
    sense[:6] = 5
    H, f = np.eye(n), np.zeros(n)
    best = np.inf
    for _ in range(repeats):
        model = daqp.Model()
        model.setup(H, f, AB[0], UB[0], LB[0], sense)
        t0 = time.thread_time()
        for i in range(len(problems)):
            model.update(A=AB[i], bupper=UB[i], blower=LB[i])
            x, _, flag, _ = model.solve()
        best = min(best, time.thread_time() - t0)
    return best / len(problems)


def bare_pass(robot, Q, V, A, fids):
    """The Pinocchio calls of the pass alone (momentum rate + frame placements), no copies."""
    import pinocchio as pin

    m, d = robot.model, robot.model.createData()
    rate, place = pin.computeCentroidalMomentumTimeVariation, pin.updateFramePlacement
    t0 = time.thread_time()
    for i in range(len(Q)):
        rate(m, d, Q[i], V[i], A[i])
        for f in fids:
            place(m, d, f)
    return time.thread_time() - t0


def batch_time(n=5000, repeats=5):
    """Batch estimation per sample beside its parts, interleaved (best of ``repeats`` each):
    the Pinocchio pass alone (bare calls, and ``Robot.contact_pass``), the pass plus daqp's
    own solve of the same QPs (the floor), and ``estimate_contact_wrenches_batch``. CPU time
    of this thread (one core; robust on a shared machine)."""
    rng = np.random.default_rng(1)
    robot, name, frames = benchmark_robot()
    height = 0.78 if name == "g1" else 0.94
    feet = [SurfaceContact(f, half_length=X, half_width=Y, mu=MU) for f in frames]
    data = samples(robot, feet, 500, rng, height)
    idx = np.arange(n) % len(data)
    Q = np.array([data[i][0] for i in idx])
    V = np.array([data[i][1] for i in idx])
    A = np.array([data[i][2] for i in idx])
    fids = [robot.frame_id(c.frame) for c in feet]
    problems = [build_estimation_problem(robot, q, v, a, feet) for q, v, a, _ in data]
    best = best_pass = best_bare = best_raw = np.inf
    for _ in range(repeats):
        t0 = time.thread_time()
        batch = estimate_contact_wrenches_batch(robot, Q, V, A, feet)
        best = min(best, time.thread_time() - t0)
        t0 = time.thread_time()
        for i in range(n):
            robot.contact_pass(Q[i], V[i], A[i], fids, jacobians=False)
        best_pass = min(best_pass, time.thread_time() - t0)
        best_bare = min(best_bare, bare_pass(robot, Q, V, A, fids))
        best_raw = min(best_raw, raw_daqp_per_sample(problems, repeats=1))
    us = 1e6 / n
    per_sample, bare, pass_ = best * us, best_bare * us, best_pass * us
    raw = 1e6 * best_raw
    floor = bare + raw
    print(
        f"\nbatch estimation, {robot.name} (nv={robot.nv}), 2 rectangular feet, "
        f"Newton-Euler mode, daqp, {n} samples, best of {repeats} (interleaved, thread CPU time)"
    )
    print(f"  Pinocchio pass alone, bare calls:          {bare:6.1f} us")
    print(f"  Pinocchio pass alone, Robot.contact_pass:  {pass_:6.1f} us")
    print(f"  raw daqp (Model.update + solve), same QPs: {raw:6.1f} us")
    print(f"  floor, bare pass + raw daqp:               {floor:6.1f} us")
    print(f"  estimate_contact_wrenches_batch:           {per_sample:6.1f} us   (goal <= 30 us)")
    print(
        f"  ratios: batch / bare pass {per_sample / bare:.2f}x, batch / contact_pass "
        f"{per_sample / pass_:.2f}x, batch / floor {per_sample / floor:.2f}x (goal <= 2x)"
    )
    print(
        f"  of which daqp (update + solve) inside the batch, median: "
        f"{1e6 * np.nanmedian(batch.solve_time):4.1f} us; verified: {batch.found.mean():.1%}, "
        f"largest Newton-Euler residual {np.nanmax(batch.residual_force):.1e} N"
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
            t0 = time.perf_counter()
            estimate_contact_wrenches_batch(robot, Q, V, A, feet, **kw)
            best[label] = min(best[label], time.perf_counter() - t0)
    print(
        f"\nschedule cost, {robot.name} (nv={robot.nv}), 2 feet, Newton-Euler mode, daqp, "
        f"{n} samples, best of {repeats} (interleaved)"
    )
    base = best["no mask"]
    for label, t in best.items():
        print(f"  {label:26s} {1e6 * t / n:6.1f} us/sample   ratio {t / base:.3f}")


if __name__ == "__main__":
    import sys

    if "--schedule" in sys.argv:
        schedule_cost()
    elif "--batch" in sys.argv:
        batch_time()
    else:
        backend_table()
        batch_time()
        schedule_cost()
