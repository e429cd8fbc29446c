"""Helpers shared by the benchmark scripts: the robot, synthetic logs, a profile file."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

import wholebody as wb
from wholebody.trajectory import Trajectory


def benchmark_robot() -> tuple[wb.Robot, str, tuple[str, str]]:
    """G1 (nv = 35) when example-robot-data is installed, else the shipped humanoid; its feet."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return wb.load("g1"), "g1", ("left_ankle_roll_link", "right_ankle_roll_link")
        except wb.errors.MissingDependencyError:
            return wb.load("humanoid"), "humanoid", ("left_sole", "right_sole")


def synthetic_log(robot: wb.Robot, feet: tuple[str, ...], n: int, seed: int = 0) -> Trajectory:
    """n samples of random states and foot wrenches (2000 distinct configurations, repeated)."""
    rng = np.random.default_rng(seed)
    unique = np.array([robot.random_configuration(rng) for _ in range(2000)])
    Q = unique[np.arange(n) % len(unique)]
    V = rng.normal(size=(n, robot.nv))
    A = rng.normal(size=(n, robot.nv))
    W = rng.normal(scale=50.0, size=(n, len(feet), 6)) + [0, 0, 300.0, 0, 0, 0]
    return Trajectory(np.arange(n) * 1e-3, Q, V, A, None, tuple(robot.joint_names), tuple(feet), W)


def write_profile(path: Path, name: str, feet: tuple[str, ...]) -> Path:
    """A robot profile with rectangular feet (0.2 x 0.1 m, mu 0.8)."""
    path.write_text(
        f'robot = "{name}"\n'
        + "".join(
            f'[[contacts]]\nframe = "{f}"\ntype = "surface"\nhalf_length = 0.1\nhalf_width '
            "= 0.05\nmu = 0.8\n"
            for f in feet
        )
    )
    return path
