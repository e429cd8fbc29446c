"""Identification throughput: 10,000 samples of G1 (nv = 35), and Talos (nv = 38) with
every link's mass and CoM from three logs of 4000 samples with torques and per-log sensor
offsets, one core: the fit alone, and the same job as the CLI runs it (``wholebody fit
clean.npz offset.npz lag.npz --mass --com --offsets``: logs and profile read from files, each
log's lag estimated and read again with the fitted model, the logs refitted, the outputs
written), on logs with a right-foot sensor offset in one and a 7 ms wrench lag in another.

Run on one core: taskset -c 0 python benchmarks/bench_identify.py (the targets: under 10 s
for G1's floating-base rows with mass and CoM of every link; under 15 s for the Talos case).
The fit chooses its BLAS thread count for the matrix sizes; the line it prints says which.
Results are in benchmarks/results_identify.txt.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pinocchio as pin
from _common import benchmark_robot, synthetic_log

from wholebody.contacts import SurfaceContact  # noqa: E402
from wholebody.identify import fit_inertial_parameters  # noqa: E402
from wholebody.identify.calibrate import SensorModel  # noqa: E402


def consistent_log(robot, feet, n, seed=0):
    """Random states (from the shared synthetic log) with the foot wrenches and torques that
    inverse dynamics needs (half on each foot), plus noise (1 N, 0.1 N m, 0.1 N m)."""
    base = synthetic_log(robot, feet, n, seed)
    model, data = robot.model, robot.model.createData()
    fids = [robot.frame_id(f) for f in feet]
    W = np.empty((n, 2, 6))
    tau = np.empty((n, robot.nv - 6))
    for i in range(n):
        q = base.q[i]
        full = pin.rnea(model, data, q, base.v[i], base.a[i])
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        R, p = data.oMi[1].rotation, data.oMi[1].translation
        f, m = R @ full[:3], R @ full[3:6]
        gen = np.zeros(robot.nv)
        for k, fid in enumerate(fids):
            W[i, k] = 0.5 * np.r_[f, m + np.cross(p - data.oMf[fid].translation, f)]
            gen += pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED).T @ W[i, k]
        tau[i] = (full - gen)[6:]
    rng = np.random.default_rng(seed + 1)
    W[..., :3] += rng.normal(0, 1.0, W[..., :3].shape)
    W[..., 3:] += rng.normal(0, 0.1, W[..., 3:].shape)
    tau += rng.normal(0, 0.1, tau.shape)
    return type(base)(
        base.time, base.q, base.v, base.a, tau, base.joint_names, base.contact_names, W
    )


def talos_case() -> None:
    """Talos, every link's mass and CoM, three logs of 4000 samples with torques."""
    import dataclasses
    import warnings

    import wholebody as wb

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            robot = wb.load("talos")
        except wb.errors.MissingDependencyError:
            print("talos: example-robot-data not installed, skipped")
            return
    feet = ("left_sole_link", "right_sole_link")
    contacts = [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.8) for f in feet]
    logs = [
        dataclasses.replace(consistent_log(robot, feet, 4000, seed), source=f"log{seed}.npz")
        for seed in range(3)
    ]
    t0, c0 = time.perf_counter(), time.process_time()
    fit = fit_inertial_parameters(
        robot, logs, contacts, parameters="mass_com", sensors=SensorModel(offsets=True)
    )
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    idf = fit.identifiability
    print(
        f"{'talos: mass + CoM of every link, 3 x 4000, torques, per-log offsets':46s} "
        f"{dt:6.2f} s wall, {cpu:6.2f} s CPU  ({idf.n_parameters} parameters, rank {idf.rank}; "
        f"{fit.blas_threads})"
    )
    talos_cli_case(robot, feet, cpu)


#: The right foot's sensor offset in the ``offset`` log (force [N], moment [N m], foot axes).
BIAS = np.array([3.0, -2.0, 10.0, 0.3, -0.2, 0.1])
#: The ``lag`` log's wrenches trail the motion by this many samples (1 kHz).
LAG_SAMPLES = 7

_PROFILE = """robot = "talos"

[[contacts]]
frame = "left_sole_link"
type = "surface"
half_length = 0.1
half_width = 0.05
mu = 1.0

[[contacts]]
frame = "right_sole_link"
type = "surface"
half_length = 0.1
half_width = 0.05
mu = 1.0
"""


def talos_cli_case(robot: Any, feet: tuple[str, str], fit_cpu: float) -> None:
    """The CLI's job on three Talos logs of 4000 samples at 1 kHz (a torso 5 % heavier with
    its CoM 2 cm forward, AR(1) noise 0.5 N, 0.05 N m, 0.05 N m, coefficient 0.9): ``clean``,
    ``offset`` (the right foot's sensor offset :data:`BIAS`) and ``lag`` (wrenches
    :data:`LAG_SAMPLES` samples late); every link's mass and CoM, per-log offsets, lags."""
    import sys
    import tempfile
    from pathlib import Path

    import wholebody as wb
    from wholebody.cli.fit import run_fit
    from wholebody.io.calibration import Calibration

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests._identify_logs import perturbed_urdf, smooth_log

    text = Path(robot.source).read_text()
    truth = wb.Robot.from_urdf_string(perturbed_urdf(text, "torso_2_link", 1.05, (0.02, 0, 0)))
    kw: dict[str, Any] = dict(noise=(0.5, 0.05, 0.05), rho=0.9)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "talos.toml").write_text(_PROFILE)
        smooth_log(truth, list(feet), 4000, seed=1, **kw).save(folder / "clean.npz")
        smooth_log(truth, list(feet), 4000, seed=2, bias={"right_sole_link": BIAS}, **kw).save(
            folder / "offset.npz"
        )
        smooth_log(truth, list(feet), 4000, seed=3, lag_samples=LAG_SAMPLES, **kw).save(
            folder / "lag.npz"
        )
        logs = [folder / f"{n}.npz" for n in ("clean", "offset", "lag")]
        t0, c0 = time.perf_counter(), time.process_time()
        out = run_fit(
            logs,
            folder / "talos.toml",
            folder / "out",
            mass=True,
            com=True,
            offsets=True,
            lags=True,
        )
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        fit = out.result
        cal = Calibration.load(folder / "out" / "calibration-offset.toml")
        right = cal.contacts["right_sole_link"]
        error = np.r_[right.force_offset, right.moment_offset] - BIAS
    cv = fit.cross_validation
    print(
        f"{'talos: the same through the CLI (run_fit), lags':46s} "
        f"{dt:6.2f} s wall, {cpu:6.2f} s CPU  ({cpu / fit_cpu:.2f} x the fit alone; "
        f"{fit.blas_threads})"
    )
    lag, se = fit.lag_estimates["lag"]
    print(
        f"    lag log: {1e3 * lag:.3f} ms (truth {LAG_SAMPLES} ms, s.e. {1e3 * se:.3f} ms); "
        f"right-foot offset error: force {np.abs(error[:3]).max():.3f} N, moment "
        f"{np.abs(error[3:]).max():.4f} N m (largest component); held-out cost fitted / URDF "
        f"{cv.cost_fitted / cv.cost_nominal:.2e}"
        if cv is not None
        else ""
    )


def main() -> None:
    robot, name, feet = benchmark_robot()
    contacts = [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.8) for f in feet]
    n = 10_000
    log = consistent_log(robot, feet, n)
    log_tau = log
    print(f"robot {name} (nv={robot.nv}), {n:,} samples, 2 surface contacts, one core")
    cases: list[tuple[str, dict[str, Any], Any]] = [
        ("mass of every link, base rows", dict(parameters="mass", use_torques=False), log),
        (
            "mass + CoM of every link, base rows",
            dict(parameters="mass_com", use_torques=False),
            log,
        ),
        (
            "mass + CoM + 6D offsets, base rows",
            dict(parameters="mass_com", use_torques=False, sensors=SensorModel(offsets=True)),
            log,
        ),
        (
            "mass + CoM of every link, all rows (torques)",
            dict(parameters="mass_com", use_torques=True),
            log_tau,
        ),
    ]
    for label, options, traj in cases:
        t0, c0 = time.perf_counter(), time.process_time()
        fit = fit_inertial_parameters(robot, traj, contacts, **options)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        idf = fit.identifiability
        print(
            f"{label:46s} {dt:6.2f} s wall, {cpu:6.2f} s CPU  {n / dt:8,.0f} samples/s  "
            f"({idf.n_parameters} parameters, rank {idf.rank}; {fit.blas_threads})"
        )
    talos_case()


if __name__ == "__main__":
    main()
