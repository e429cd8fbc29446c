"""Contact schedules from force and kinematics together (Schmitt trigger on the normal force,
kinematic gate, minimum dwell), their agreement with the simulator's truth on single-support
logs, the hovering swing foot that carries no force in the estimate, and what
``wholebody estimate`` and ``wholebody contacts`` print."""

from __future__ import annotations

import dataclasses
import functools
import sys

import numpy as np
import pytest

import wholebody as wb
from wholebody.check.analysis import estimate_trajectory
from wholebody.errors import InvalidArgumentError
from wholebody.schedule import infer_contact_schedule, infer_schedule_force, schmitt_trigger

from ._artefact_logs import ROOT
from .test_diagnosis import FEET


def test_schmitt_trigger_has_hysteresis():
    x = np.array([0, 5, 11, 8, 6, 4, 6, 11, 3])[:, None]
    assert schmitt_trigger(x, on=10, off=5)[:, 0].tolist() == [
        False, False, True, True, True, False, False, True, False
    ]  # fmt: skip
    with pytest.raises(InvalidArgumentError):
        schmitt_trigger(x, on=5, off=10)


@functools.lru_cache(maxsize=4)
def _run(scenario: str, every: int) -> wb.Trajectory:
    pytest.importorskip("mujoco")
    sys.path.insert(0, str(ROOT / "examples"))
    import mujoco_humanoid_simulation as sim

    if scenario == "hover" and "hover" not in sim.SCENARIOS:
        base = sim.SCENARIOS["single_support"]

        def hover(t: float) -> dict[str, float]:
            """The single support, the right foot raised 0-2.3 mm only (its force zero)."""
            angles = base(t)
            for j, k in (("hip_pitch", -0.3), ("knee", 0.6), ("ankle_pitch", -0.3)):
                lift = (angles[f"right_{j}"] - angles[f"left_{j}"]) / k
                angles[f"right_{j}"] = angles[f"left_{j}"] + 0.3 * k * lift
            return angles

        sim.SCENARIOS["hover"] = hover
    return sim.simulate(wb.load("humanoid"), 2.0, every=every, scenario=scenario)


@pytest.mark.parametrize("every", [1, 2], ids=["1kHz", "500Hz"])
def test_force_schedule_agrees_with_the_simulator_on_single_support(humanoid, every):
    traj = _run("single_support", every)
    q, v, _, _ = traj.for_robot(humanoid)
    truth = traj.contact_wrenches[..., 2] > 0.0  # the simulator's contact force
    schedule = infer_schedule_force(
        humanoid, q, v, FEET, time=traj.time, wrenches=traj.contact_wrenches
    )
    assert (schedule.active == truth).mean() >= 0.99
    assert (schedule.active == truth).mean(axis=0).min() >= 0.99
    assert truth[:, 1].mean() < 0.8  # the right foot is in the air for a while
    agreement = schedule.parameters["agreement"]
    assert set(agreement) == {"left_sole", "right_sole"} and agreement["left_sole"] == 1.0
    # Force and truth agree better than the kinematics alone (the 5 mm band lags lift-off).
    kinematic = infer_contact_schedule(
        humanoid, q, v, None, FEET, time=traj.time, method="kinematic"
    )
    assert (schedule.active == truth).mean() > (kinematic.active == truth).mean()


def test_kinematics_overrule_a_force_in_the_air(humanoid):
    traj = _run("single_support", 2)
    q, v, _, _ = traj.for_robot(humanoid)
    W = traj.contact_wrenches.copy()
    W[:, 1, 2] = 100.0  # a stale 100 N on the swing foot, also while it is 7 cm up
    schedule = infer_schedule_force(humanoid, q, v, FEET, time=traj.time, wrenches=W)
    height = schedule.evidence["height"][:, 1]
    assert not schedule.active[height > 0.02, 1].any()
    assert schedule.parameters["kinematics_overrode"] > 0


@pytest.mark.parametrize("every", [1, 2], ids=["1kHz", "500Hz"])
def test_a_hovering_swing_foot_carries_no_force_in_the_estimate(humanoid, every):
    traj = _run("hover", every)
    q, v, _, _ = traj.for_robot(humanoid)
    height = infer_schedule_force(
        humanoid, q, v, FEET, time=traj.time, wrenches=traj.contact_wrenches
    ).evidence["height"][:, 1]
    hovering = (traj.contact_wrenches[:, 1, 2] == 0.0) & (height > 0.0) & (height < 0.005)
    assert hovering.sum() > 0.1 * len(traj), "the right foot hovers 0-5 mm above the floor"
    est = estimate_trajectory(humanoid, traj, FEET, use_torques=False)
    fz = est.contact_wrenches[:, est.contact_names.index("right_sole:estimated"), 2]
    assert np.abs(fz[hovering]).max() <= 1.0
    # Every declared contact active (the old behaviour) gives it load: the test can fail.
    declared = estimate_trajectory(humanoid, traj, FEET, use_torques=False, schedule="declared")
    fz_all = declared.contact_wrenches[:, declared.contact_names.index("right_sole:estimated"), 2]
    assert np.abs(fz_all[hovering]).max() > 1.0
    assert "Schmitt" in est.metadata["estimation_schedule"]["schedule"]
    # A log that declares both feet in contact throughout: the hovering foot still gets none.
    claimed = dataclasses.replace(traj, contact_active=np.ones((len(traj), 2), dtype=bool))
    est = estimate_trajectory(humanoid, claimed, FEET, use_torques=False)
    fz = est.contact_wrenches[:, est.contact_names.index("right_sole:estimated"), 2]
    assert np.abs(fz[hovering]).max() <= 1.0
    assert "within the log's schedule" in est.metadata["estimation_schedule"]["schedule"]


def test_estimate_and_contacts_commands_report(humanoid, tmp_path, capsys):
    from wholebody.cli import main

    traj = _run("single_support", 2)
    log = tmp_path / "ss.npz"
    traj.save(log)
    profile = tmp_path / "p.toml"
    profile.write_text(
        'robot = "humanoid"\n'
        + "".join(
            f'[[contacts]]\nframe = "{f}"\ntype = "surface"\nhalf_length = {c.half_length}\n'
            f"half_width = {c.half_width}\nmu = 1.0\n"
            for f, c in zip(("left_sole", "right_sole"), FEET, strict=True)
        )
    )
    out = tmp_path / "est.npz"
    assert main(["estimate", str(log), "--config", str(profile), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "status    found" in text
    assert "contact   left_sole: normal force" in text and "contact   right_sole:" in text
    assert "uncertain" in text and "schedule  from the logged normal forces" in text
    assert f"written   {out}" in text
    assert (
        main(["contacts", str(log), "--config", str(profile), "-o", str(tmp_path / "s.npz")]) == 0
    )
    text = capsys.readouterr().out
    assert "evidence  right_sole: force and kinematics agree on" in text
    assert "contact schedule (force" in text  # auto: the log has the wrenches
    assert main(
        ["contacts", str(log), "--config", str(profile), "--method", "force", "-o",
         str(tmp_path / "f.npz")]
    ) == 0  # fmt: skip


def test_placeholder_forces_do_not_make_a_schedule(humanoid):
    """Zeros in place of the forces: the schedule comes from the kinematics alone, which
    agrees with the simulator's contact forces on most samples (the 5 mm band keeps a
    landing foot active a little before it touches)."""
    from wholebody.check.estimate_report import schedule_for_estimate

    traj = _run("single_support", 2)
    truth = traj.contact_wrenches[..., 2] > 0.0
    zeros = dataclasses.replace(traj, contact_wrenches=np.zeros_like(traj.contact_wrenches))
    mask, used = schedule_for_estimate(humanoid, zeros, FEET)
    assert "too little" in used["schedule"] and "from the kinematics" in used["schedule"]
    assert mask is not None and (mask == truth).mean(axis=0).min() >= 0.95
    assert not mask[:, 1].all()  # the swing foot is in the air for a while
