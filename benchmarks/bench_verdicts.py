"""Verdicts on injected faults: detected (inconsistent) and named (the right cause first, or
tied with it), with logged accelerations, differentiated ones, and differentiated from a
noisy ``v``; false alarms on the clean logs (float64 and float32).

The log is the shipped squat (``data/humanoid_squat.npz``, MuJoCo, 500 Hz, 2 s). "noisy"
adds white noise of std sigma to every column of ``v`` and re-integrates ``q`` from it on the
manifold (``q`` and ``v`` agree, as an encoder's would). Twelve faults: a common gain x1.2, one
sensor x1.3, +5 % mass, lags of 5, 10, 20 ms, a 30 N sensor offset, one sole's sign, the
soles swapped, a 60 N push for 0.3 s, the CoM 3 cm off, wrenches in the soles' axes. On this
symmetric, level stance the last two but one (swapped soles, soles' axes) change nothing
the balance can see.

Run: python benchmarks/bench_verdicts.py            (the suite; about 2 minutes)
     python benchmarks/bench_verdicts.py example    (the worked example of docs/diagnosis.md)
"""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

import wholebody as wb
from wholebody.check.analysis import check_trajectory
from wholebody.contacts import SurfaceContact
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH as X
from wholebody.models import HUMANOID_SOLE_HALF_WIDTH as Y
from wholebody.trajectory import Trajectory

warnings.simplefilter("ignore")
ROOT = Path(__file__).resolve().parents[1]
FEET = [SurfaceContact(f, half_length=X, half_width=Y, mu=1.0) for f in ("left_sole", "right_sole")]


def load() -> tuple[wb.Robot, Trajectory]:
    robot = wb.load("humanoid")
    traj = Trajectory.load(ROOT / "data" / "humanoid_squat.npz")
    q, v, a, _ = traj.for_robot(robot)
    return robot, dataclasses.replace(
        traj, q=q, v=v, a=a, tau=None, joint_names=tuple(robot.joint_names)
    )


def noisy(robot: wb.Robot, traj: Trajectory, sigma: float, seed: int = 1) -> Trajectory:
    rng = np.random.default_rng(seed)
    v = traj.v + rng.normal(0.0, sigma, traj.v.shape)
    q = np.empty_like(traj.q)
    q[0] = traj.q[0]
    for i, dt in enumerate(np.diff(traj.time)):
        q[i + 1] = pin.integrate(robot.model, q[i], v[i + 1] * dt)
    return dataclasses.replace(traj, q=q, v=v, a=None)


def float32(traj: Trajectory) -> Trajectory:
    def cast(x):
        return None if x is None else x.astype(np.float32).astype(np.float64)

    return dataclasses.replace(
        traj,
        time=cast(traj.time),
        q=cast(traj.q),
        v=cast(traj.v),
        a=cast(traj.a),
        contact_wrenches=cast(traj.contact_wrenches),
    )


def faults(robot: wb.Robot, traj: Trajectory) -> dict[str, tuple[np.ndarray, set[str]]]:
    W = traj.contact_wrenches
    N = len(W)
    R = np.array([[robot.placements(q, c.frame).se3().rotation for c in FEET] for q in traj.q])
    out: dict[str, tuple[np.ndarray, set[str]]] = {
        "gain x1.2": (1.2 * W, {"force_gain", "mass_error"})
    }
    g = W.copy()
    g[:, 0] *= 1.3
    out["one gain x1.3"] = (g, {"force_gain"})
    out["mass +5 %"] = (1.05 * W, {"mass_error", "force_gain"})
    for ms in (5, 10, 20):
        s = max(1, int(round(ms / 2)))
        out[f"lag {ms} ms"] = (
            np.concatenate([np.repeat(W[:1], s, axis=0), W[:-s]]),
            {"time_offset"},
        )
    o = W.copy()
    o[:, 0, 2] += 30.0
    out["offset 30 N"] = (o, {"sensor_offset"})
    f = W.copy()
    f[:, 1] *= -1
    out["sign one sole"] = (f, {"sign_flip"})
    out["soles swapped"] = (W[:, ::-1].copy(), {"swapped_contacts"})
    p = W.copy()
    p[N // 3 : N // 3 + 150, 0, 0] += 60.0
    out["push 60 N"] = (p, {"missing_force"})
    c = W.copy()
    c[..., 3:] += np.cross(np.array([0.03, 0.0, 0.0]), W[..., :3])
    out["CoM 3 cm"] = (c, {"com_offset", "wrong_point"})
    loc = W.copy()
    loc[..., :3] = np.einsum("nkji,nkj->nki", R, W[..., :3])
    loc[..., 3:] = np.einsum("nkji,nkj->nki", R, W[..., 3:])
    out["soles' axes"] = (loc, {"axes"})
    return out


def named(report: wb.Report, causes: set[str]) -> bool:
    if not report.diagnosis:
        return False
    best = report.diagnosis[0]
    return best.cause in causes or bool(set(best.parameters.get("alternative_causes", [])) & causes)


def suite() -> None:
    robot, base = load()
    modes = {
        "logged a": base,
        "differentiated": dataclasses.replace(base, a=None),
        "noisy v 0.002": noisy(robot, base, 0.002),
        "noisy v 0.005": noisy(robot, base, 0.005),
    }
    print(f"{'mode':16s} {'clean':24s} {'clean float32':24s} detected  named  s/check")
    for mode, traj in modes.items():
        t0 = time.perf_counter()
        clean = check_trajectory(robot, traj, FEET).verdict
        clean32 = check_trajectory(robot, float32(traj), FEET).verdict
        det = nam = 0
        cases = faults(robot, traj)
        missed = []
        for name, (W, causes) in cases.items():
            r = check_trajectory(robot, dataclasses.replace(traj, contact_wrenches=W), FEET)
            hit = r.verdict == "inconsistent"
            ok = hit and named(r, causes)
            det += hit
            nam += ok
            if not ok:
                best = r.diagnosis[0].cause if r.diagnosis else "-"
                missed.append(f"{name}: {r.verdict} ({best})")
        per = (time.perf_counter() - t0) / (len(cases) + 2)
        print(
            f"{mode:16s} {clean:24s} {clean32:24s} {det:3d}/{len(cases)}  "
            f"{nam:3d}/{len(cases)}  {per:.2f}"
        )
        for m in missed:
            print(f"{'':16s}   missed or misnamed: {m}")


def example() -> None:
    """The worked example of docs/diagnosis.md."""
    robot, base = load()
    traj = noisy(robot, base, 0.005, seed=0)
    for label, W in (
        ("clean, noisy v", traj.contact_wrenches),
        ("wrenches x1.5, noisy v", 1.5 * traj.contact_wrenches),
    ):
        report = check_trajectory(robot, dataclasses.replace(traj, contact_wrenches=W), FEET)
        print(f"--- {label}")
        print(report.format_summary())
        if report.diagnosis:
            best = report.diagnosis[0]
            print(
                f"criterion {best.criterion:.1f} ({best.n_parameters} parameters), runner-up "
                f"{best.runner_up} margin {best.margin:.1f}"
            )
            for f in report.diagnosis[1:6]:
                print(
                    f"    {f.cause:18s} explains {f.explained:.3f}, {f.n_parameters} "
                    f"parameters, criterion {f.criterion:.1f}"
                )
    W = base.contact_wrenches.copy()
    W[1:] = np.nan
    report = check_trajectory(robot, dataclasses.replace(base, contact_wrenches=W), FEET)
    print("--- wrenches NaN on 999 of 1000 samples")
    print(report.format_summary())


if __name__ == "__main__":
    if sys.argv[1:] == ["example"]:
        example()
    else:
        suite()
