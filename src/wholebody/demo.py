"""``wholebody demo``: the shipped humanoid, its equations of motion at a standing pose."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .loading import load
from .models import HUMANOID_STANDING_HEIGHT


def run_demo(out_dir: Path) -> int:
    robot = load("humanoid")
    print(robot.summary())
    q = robot.q_from_named({}, base_position=[0.0, 0.0, HUMANOID_STANDING_HEIGHT])
    g = robot.gravity(q)
    print(f"\nstanding at base height {HUMANOID_STANDING_HEIGHT} m:")
    print(f"  CoM                 {np.array2string(robot.com(q), precision=4)} m")
    print(f"  base rows of g(q)   {np.array2string(g[:6], precision=3, suppress_small=True)} (N, N m)")
    print(f"  weight m|g|         {robot.weight:.3f} N")
    return 0
