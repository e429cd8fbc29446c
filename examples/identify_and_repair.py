"""From diagnosis to repair: a heavier torso and a biased foot sensor, found and fixed.

The shipped humanoid is simulated in MuJoCo with its torso 5 % heavier than the URDF says,
squatting and then standing on its left foot. The left foot's force-torque sensor reads
5 N and 0.5 N m too much (constant, in the foot's axes). Then, with wholebody:

1. ``check_trajectory`` with the URDF finds the logs inconsistent;
2. ``fit_inertial_parameters`` fits the torso's mass and the left sensor's 6D offset from the
   two logs together (no joint torques used), with the identifiability report;
3. the corrected URDF is written (only the torso's ``<inertial>`` changes) and the
   calibration applied to the logs;
4. ``check_trajectory`` with the corrected robot finds every residual back at MuJoCo's
   floor (1e-6 N).

A figure shows the residual before and after. Needs the ``mujoco`` extra (and ``plot`` for
the figure). Run: python examples/identify_and_repair.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

import wholebody as wb
from wholebody.check.analysis import check_trajectory
from wholebody.check.plots import optional_pyplot, output_dir
from wholebody.identify import fit_inertial_parameters
from wholebody.identify.calibrate import SensorModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mujoco_humanoid_simulation import FEET_CONTACTS, simulate  # noqa: E402

TORSO_SCALE = 1.05
BIAS = np.array([5.0, 0.0, 0.0, 0.0, 0.5, 0.0])  # (f [N], tau [N m]) in the left sole's axes


def _search(pattern: str, text: str) -> re.Match[str]:
    match = re.search(pattern, text, re.S)
    assert match is not None, pattern
    return match


def heavier_torso_urdf(text: str, scale: float) -> str:
    """The URDF with the torso's mass and inertia scaled (the truth of the simulation)."""
    link = _search(r'<link name="torso">.*?</link>', text).group(0)
    new = re.sub(
        r'(<mass value=")([^"]+)', lambda m: m.group(1) + repr(float(m.group(2)) * scale), link
    )
    new = re.sub(
        r'(i(?:xx|xy|xz|yy|yz|zz)=")([^"]+)',
        lambda m: m.group(1) + repr(float(m.group(2)) * scale),
        new,
    )
    return text.replace(link, new)


def biased(traj: wb.Trajectory, robot: wb.Robot) -> wb.Trajectory:
    """The log with the left sensor's bias added (in the sole's axes, per sample)."""
    import dataclasses

    q, _, _, _ = traj.for_robot(robot)
    W = traj.contact_wrenches.copy()
    k = traj.contact_names.index("left_sole")
    for i in range(len(traj)):
        R = robot.placements(q[i], "left_sole").se3().rotation
        W[i, k, :3] += R @ BIAS[:3]
        W[i, k, 3:] += R @ BIAS[3:]
    return dataclasses.replace(
        traj, contact_wrenches=W, source=traj.metadata.get("scenario", "log")
    )


def main() -> None:
    out = output_dir()
    nominal = wb.load("humanoid")
    truth_path = out / "humanoid_heavier_torso.urdf"
    truth_path.write_text(heavier_torso_urdf(Path(str(nominal.source)).read_text(), TORSO_SCALE))
    truth = wb.Robot.from_urdf(truth_path, name="humanoid (torso +5 %)")
    logs = [
        biased(simulate(truth, 2.0, every=4, scenario=s), nominal)
        for s in ("squat", "single_support")
    ]

    # 1. Diagnose with the URDF.
    before = [check_trajectory(nominal, log, FEET_CONTACTS) for log in logs]
    print(before[0].format_summary())

    # 2. Fit the torso's mass and the left sensor's offset, both logs together.
    fit = fit_inertial_parameters(
        nominal,
        logs,
        FEET_CONTACTS,
        parameters="mass",
        links=["torso"],
        # One sensor, biased alike in both logs; the simulated torso is denser (its inertia
        # scaled with its mass), so the fit's mass carries its inertia along.
        sensors=SensorModel(offsets=["left_sole"], per_log=False),
        density=True,
        use_torques=False,
    )
    print()
    print(fit.format_report())

    # 3. Repair: the corrected URDF and the calibrated logs.
    fit.write_urdf(out / "humanoid.corrected.urdf")
    fit.calibration.save(out / "calibration.toml")
    corrected = wb.Robot.from_urdf(out / "humanoid.corrected.urdf")
    repaired = [fit.calibration.apply(log, nominal) for log in logs]
    after = [check_trajectory(corrected, log, FEET_CONTACTS) for log in repaired]
    print()
    print(after[0].format_summary())

    plt = optional_pyplot()
    if plt is not None:
        fig, axes = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
        for log, b, a in zip(logs, before, after, strict=True):
            label = log.metadata["scenario"]
            axes[0].semilogy(b.time, b.force_norm, label=f"{label}, URDF")
            axes[0].semilogy(a.time, np.maximum(a.force_norm, 1e-9), "--", label=f"{label}, fitted")
            axes[1].semilogy(b.time, b.moment_norm)
            axes[1].semilogy(a.time, np.maximum(a.moment_norm, 1e-9), "--")
        axes[0].set_ylabel("residual force [N]")
        axes[1].set_ylabel("residual moment [N m]")
        axes[1].set_xlabel("time [s]")
        axes[0].legend(fontsize=7)
        fig.suptitle("Newton-Euler residual before and after the fit")
        fig.tight_layout()
        fig.savefig(out / "identify_and_repair.png", dpi=100)

    # Cross-check: the truth is recovered and the repaired logs are consistent.
    torso = fit["torso.mass"]
    assert abs(torso.estimate / (18.0 * TORSO_SCALE) - 1) < 2e-3, torso
    offset = fit.calibration.contacts["left_sole"].offset
    assert (
        np.abs(offset[:3] - BIAS[:3]).max() < 0.05 and np.abs(offset[3:] - BIAS[3:]).max() < 5e-3
    ), offset
    # (The right foot's lift-off has a few cone violations in the clean log too: the residual
    # is what the model explains.)
    assert all(r.over_tolerance.mean() > 0.9 for r in before)
    assert not any(r.over_tolerance.any() for r in after)
    assert max(float(np.nanmax(r.force_norm)) for r in after) < 1e-6
    assert sorted(fit.changed_links()) == ["torso"]


if __name__ == "__main__":
    main()
