"""Shared fixtures: small named robots and states."""

from __future__ import annotations

import numpy as np
import pytest

import wholebody as wb


@pytest.fixture(scope="session")
def humanoid() -> wb.Robot:
    return wb.load("humanoid")


@pytest.fixture(scope="session")
def two_link_arm() -> wb.Robot:
    return wb.load("two_link_arm")


@pytest.fixture(scope="session")
def pendulum() -> wb.Robot:
    return wb.load("pendulum")


def random_states(robot: wb.Robot, n: int, seed: int = 0):
    """``n`` reproducible random states (q, v, a) with unit-scale velocities."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        q = robot.random_configuration(rng)
        yield q, rng.normal(size=robot.nv), rng.normal(size=robot.nv)
