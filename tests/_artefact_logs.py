"""Clean simulated logs for the artefact tests: one MuJoCo run at a fine step, from which logs
at 1 kHz and 500 Hz are cut (so that a force stream can be shifted by a known time that is
not a whole number of the log's samples)."""

from __future__ import annotations

import dataclasses
import functools
import sys
from pathlib import Path

import numpy as np

import wholebody as wb
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
FINE_DT = 0.0005  # [s]: 2 kHz, so that 7 ms is 14 fine steps


@functools.lru_cache(maxsize=4)
def fine_run(scenario: str = "squat", duration: float = 0.6) -> Trajectory:
    """The shipped humanoid simulated in MuJoCo at 2 kHz (exact to the solver's tolerance)."""
    sys.path.insert(0, str(ROOT / "examples"))
    import mujoco_humanoid_simulation as sim

    old = sim.DT
    sim.DT = FINE_DT
    try:
        return sim.simulate(wb.load("humanoid"), duration, scenario=scenario)
    finally:
        sim.DT = old


def cut(fine: Trajectory, every: int, *, lag_steps: int = 0, start: int = 200) -> Trajectory:
    """Every ``every``-th fine sample from ``start`` on (0.1 s: after the landing transient);
    the contact wrenches read ``lag_steps`` fine steps late (positive: they lag)."""
    idx = np.arange(start, len(fine.time), every)
    idx = idx[(idx - lag_steps >= 0) & (idx - lag_steps < len(fine.time))]
    W = fine.contact_wrenches[idx - lag_steps]
    return dataclasses.replace(
        fine,
        time=fine.time[idx],
        q=fine.q[idx],
        v=fine.v[idx],
        a=None if fine.a is None else fine.a[idx],
        tau=None if fine.tau is None else fine.tau[idx],
        contact_wrenches=W,
    )
