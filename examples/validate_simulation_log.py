"""Validate a simulation log from Python: the workflow of ``wholebody check``.

Loads the shipped MuJoCo log of the humanoid squatting, checks it (every sample consistent),
then checks the same log with the forces delayed by 10 ms, as a logger on another clock
would record them, and shows how the report names the cause.

Run: python examples/validate_simulation_log.py  (writes reports and plots to ./out)
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np

from wholebody.check.analysis import check_trajectory
from wholebody.io.profile import load_profile
from wholebody.models import data_dir, models_dir
from wholebody.trajectory import Trajectory


def main() -> None:
    profile = load_profile(models_dir() / "humanoid.toml")  # the robot and its two feet
    traj = Trajectory.load(data_dir() / "humanoid_squat.npz")
    report = check_trajectory(profile.robot, traj, profile.contacts)
    print(report.format_summary())

    dt = float(np.median(np.diff(traj.time)))
    lag = int(round(0.010 / dt))
    delayed = dataclasses.replace(
        traj,
        contact_wrenches=np.roll(traj.contact_wrenches, lag, axis=0),
        source="humanoid_squat.npz, forces delayed 10 ms",
    )
    late = check_trajectory(profile.robot, delayed, profile.contacts)
    print()
    print(late.format_summary())

    out = Path(os.environ.get("WHOLEBODY_EXAMPLE_OUT", "out"))
    out.mkdir(parents=True, exist_ok=True)
    late.to_json(out / "delayed.report.json")
    try:
        late.plot(out / "delayed.report.png")
    except ImportError:
        print("no plot: pip install 'wholebody[plot]'")
    # Cross-check: the clean log is consistent; the delay is found to the sample.
    assert report.consistent and not report.diagnosis
    best = late.diagnosis[0]
    assert best.cause == "time_offset" and best.parameters["lag_samples"] == lag


if __name__ == "__main__":
    main()
