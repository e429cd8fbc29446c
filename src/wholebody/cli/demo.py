"""``wholebody demo``: check the shipped humanoid log, then the same log with a mistake.

The log (``data/humanoid_squat.npz``) is a MuJoCo simulation of the shipped humanoid
squatting, made by ``examples/mujoco_humanoid_simulation.py``. The demo checks it (every
sample consistent), then flips the sign of the right foot's wrenches, as a logger that
records the force on the ground would, and shows the diagnosis.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from ..check.analysis import check_trajectory
from ..io.profile import load_profile
from ..models import data_dir, models_dir
from ..trajectory import Trajectory


def run_demo(out_dir: Path) -> int:
    """Print both checks and write their reports and figures to ``out_dir``.

    Returns 0 when the shipped log is consistent and the sign-flipped one is not (the demo
    shows what it should), else 1.
    """
    profile = load_profile(models_dir() / "humanoid.toml")
    log = data_dir() / "humanoid_squat.npz"
    traj = Trajectory.load(log)
    # Name the log relative to where the demo runs (``data/...`` in a clone), as the README shows.
    relative = os.path.relpath(log)
    traj = dataclasses.replace(traj, source=log.name if relative.startswith("..") else relative)
    report = check_trajectory(profile.robot, traj, profile.contacts)
    print(report.format_summary())
    out_dir.mkdir(parents=True, exist_ok=True)
    report.to_json(out_dir / "report.json")
    report.to_csv(out_dir / "report.csv")
    written = ["report.json", "report.csv"]
    try:
        report.plot(out_dir / "report.png")
        written.append("report.png")
    except ImportError:
        print("(no plot: the extra wholebody[plot] installs matplotlib)")

    W = traj.contact_wrenches.copy()
    W[:, 1] *= -1.0
    broken = dataclasses.replace(
        traj, contact_wrenches=W, source=f"{log.name} with right_sole sign-flipped"
    )
    bad = check_trajectory(profile.robot, broken, profile.contacts)
    print()
    print(bad.format_summary())
    try:
        bad.plot(out_dir / "report_sign_flip.png")
        written.append("report_sign_flip.png")
    except ImportError:
        pass
    report.to_html(out_dir / "report.html")  # the page people open in a browser
    bad.to_html(out_dir / "report_sign_flip.html")
    written += ["report.html", "report_sign_flip.html"]
    print(f"\nwrote {', '.join(written)} to {out_dir}")
    return 0 if report.consistent and not bad.consistent else 1
