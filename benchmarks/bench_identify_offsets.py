"""Three logs fitted together, every link's mass and CoM with per-log 6D sensor offsets and lags
(``wholebody fit a.npz b.npz c.npz --mass --com --offsets``): accuracy over sets of logs, not
speed.

Each set: a clean log, one whose right-foot sensor reads an offset of (3, -2, 10) N and (0.3,
-0.2, 0.1) N m in the foot's axes, one whose wrenches lag the motion by 7 samples (7 ms), at
1 kHz with AR(1) noise (coefficient 0.9) of 0.5 N / 0.05 N m on each foot's wrench and
0.05 N m on the torques; the robot's torso 5 % heavier with its CoM 2 cm off (the humanoid's
``torso``, Talos's ``torso_2_link``). Printed per set: the right-foot offset's error, the lag
read; then over the sets: the largest errors, how often the offsets' 95 % intervals (3 logs x 2
feet x 6) contain the truth, the RMS of their z-scores, and how often the fit is better than
the URDF on held-out windows.

Run: python benchmarks/bench_identify_offsets.py [SETS] [SAMPLES] [humanoid|talos]
     (defaults 10, 1500, humanoid: about 1 minute on a quiet core). Results are in
     benchmarks/results_identify_offsets.txt.
"""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import wholebody as wb
from wholebody.contacts import SurfaceContact
from wholebody.identify import fit_inertial_parameters
from wholebody.identify.calibrate import SensorModel

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests._identify_logs import FEET, humanoid_text, perturbed_urdf, smooth_log  # noqa: E402

BIAS = np.array([3.0, -2.0, 10.0, 0.3, -0.2, 0.1])
NAMES = [f"force_offset_{a}" for a in "xyz"] + [f"moment_offset_{a}" for a in "xyz"]


def main() -> None:
    sets = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1500
    which = sys.argv[3] if len(sys.argv) > 3 else "humanoid"
    warnings.simplefilter("ignore")
    if which == "talos":
        nominal = wb.load("talos")
        text, link = Path(str(nominal.source)).read_text(), "torso_2_link"
        soles = ["left_sole_link", "right_sole_link"]
        contacts = [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=1.0) for f in soles]
    else:
        nominal = wb.load("humanoid")
        text, link = humanoid_text(), "torso"
        soles, contacts = ["left_sole", "right_sole"], FEET
    truth = wb.Robot.from_urdf_string(perturbed_urdf(text, link, 1.05, (0.02, 0.0, 0.0)))
    right = soles[1]
    kw = dict(noise=(0.5, 0.05, 0.05), rho=0.9, dt=1e-3)
    print(f"{which}: {sets} sets of 3 logs x {n} samples, every link's mass and CoM, offsets, lags")
    covered = total = better = 0
    z, worst_f, worst_m, worst_lag, cpu = [], 0.0, 0.0, 0.0, 0.0
    for k in range(sets):
        base = 500 + 10 * k
        logs = [
            dataclasses.replace(smooth_log(truth, soles, n, seed=base + 1, **kw), source="clean"),
            dataclasses.replace(
                smooth_log(truth, soles, n, seed=base + 2, bias={right: BIAS}, **kw),
                source="offset",
            ),
            dataclasses.replace(
                smooth_log(truth, soles, n, seed=base + 3, lag_samples=7, **kw), source="lag"
            ),
        ]
        c0 = time.process_time()
        fit = fit_inertial_parameters(
            nominal,
            logs,
            contacts,
            parameters="mass_com",
            sensors=SensorModel(offsets=True),
            lags=True,
        )
        cpu += time.process_time() - c0
        error = fit.calibrations["offset"].contacts[right].offset - BIAS
        worst_f = max(worst_f, float(np.abs(error[:3]).max()))
        worst_m = max(worst_m, float(np.abs(error[3:]).max()))
        lag_errors = [fit.lags["lag"] - 0.007, fit.lags["clean"], fit.lags["offset"]]
        worst_lag = max(worst_lag, max(abs(e) for e in lag_errors))
        better += fit.recommended
        for log in ("clean", "offset", "lag"):
            for contact in soles:
                for a, name in enumerate(NAMES):
                    value = BIAS[a] if (log, contact) == ("offset", right) else 0.0
                    p = fit[f"{log}:{contact}.{name}"]
                    lo, hi = p.interval(0.95)
                    covered += lo <= value <= hi
                    total += 1
                    z.append((p.estimate - value) / p.std_error)
        print(
            f"set {k:2d}: right-foot offset error force "
            + " ".join(f"{e:+.3f}" for e in error[:3])
            + " N, moment "
            + " ".join(f"{e:+.4f}" for e in error[3:])
            + f" N m; lag {1e3 * fit.lags['lag']:.3f} ms",
            flush=True,
        )
    zz = np.array(z)
    print(
        f"largest error: force {worst_f:.3f} N, moment {worst_m:.4f} N m, "
        f"lag {1e3 * worst_lag:.3f} ms"
    )
    print(
        f"95 % intervals containing the truth: {covered} of {total} "
        f"({100 * covered / total:.1f} %); z-scores' RMS {np.sqrt(np.mean(zz**2)):.3f}"
    )
    print(
        f"recommended (not worse than the URDF on held-out windows): {better} of {sets}; "
        f"{cpu / sets:.1f} s CPU per set"
    )


if __name__ == "__main__":
    main()
