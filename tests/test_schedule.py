"""Contact schedules inferred from MuJoCo logs of the shipped humanoid match the simulator's.

The reference is the simulator: a foot is in contact where MuJoCo's contact force on it is
non-zero. The "step" scenario shifts the pelvis over the left foot, lifts the right foot
(lift-off, with a short re-contact), puts it down again (touch-down) and rocks; single
support lasts ~0.6 s.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

import wholebody as wb
from wholebody.contacts import SurfaceContact
from wholebody.errors import ContactNotFoundError, InvalidArgumentError
from wholebody.estimation import estimate_contact_wrenches
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH as X
from wholebody.models import HUMANOID_SOLE_HALF_WIDTH as Y
from wholebody.schedule import (
    ContactSchedule,
    enforce_min_durations,
    infer_contact_schedule,
    infer_schedule_combined,
    infer_schedule_dynamic,
    infer_schedule_kinematic,
    plot_schedule,
)

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("left_sole", "right_sole")
#: The soles as built (MuJoCo's boxes): the kinematic method uses their corners.
SOLES = [SurfaceContact(f, half_length=X, half_width=Y, mu=1.0) for f in NAMES]
#: For dynamics, the soles declared 5 mm larger: MuJoCo puts edge contact points of a tilted
#: box slightly outside its face (the CoP reaches 0.02 mm beyond it), so the simulator's
#: wrench lies just outside the exact rectangle's cone at lift-off and touch-down.
DECLARED = [SurfaceContact(f, half_length=X + 0.005, half_width=Y + 0.005, mu=1.0) for f in NAMES]
#: Kinematic parameters for a simulator whose contacts act at zero distance.
KINEMATIC = {
    "height_on": 0.0,
    "height_off": 0.001,
    "lift_speed": 0.005,
    "min_contact": 0.005,
    "min_flight": 0.005,
}
SMOOTH = {"min_contact": 0.005, "min_flight": 0.005}
TOL = 1e-6  # [N], [N m]


def _smooth(x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    return x * x * (3 - 2 * x)


def step_angles(t: float) -> dict[str, float]:
    """Shift over the left foot (0-0.8 s), lift the right foot (1.0-1.3 s), put it down
    (1.5-1.8 s)."""
    phi = -0.055 * _smooth(t / 0.8)
    lift = _smooth((t - 1.0) / 0.3) - _smooth((t - 1.5) / 0.3)
    angles = {
        "left_hip_roll": phi,
        "left_ankle_roll": -phi,
        "right_hip_roll": phi,
        "right_ankle_roll": -phi,
    }
    for side in ("left", "right"):
        angles |= {f"{side}_hip_pitch": -0.25, f"{side}_knee": 0.5, f"{side}_ankle_pitch": -0.25}
    angles |= {
        "right_hip_pitch": -0.25 - 0.3 * lift,
        "right_knee": 0.5 + 0.6 * lift,
        "right_ankle_pitch": -0.25 - 0.3 * lift,
    }
    return angles


def simulation_module():
    pytest.importorskip("mujoco")
    sys.path.insert(0, str(ROOT / "examples"))
    import mujoco_humanoid_simulation as sim

    sim.SCENARIOS.setdefault("step", step_angles)
    return sim


@lru_cache(maxsize=4)
def mujoco_log(scenario: str = "step", duration: float = 2.2, push: tuple | None = None):
    """(q, v, a, tau, W, t, external) of a MuJoCo log in the robot's order; W (N, 2, 6)."""
    sim = simulation_module()
    robot = wb.load("humanoid")
    p = None if push is None else (push[0], push[1], np.array(push[2]))
    traj = sim.simulate(robot, duration, push=p, every=2, scenario=scenario)
    q, v, a, tau = traj.for_robot(robot)
    ext = None if push is None else traj.external_wrenches[:, 0]
    return q, v, a, tau, traj.contact_wrenches, traj.time, ext


def simulator_schedule(W) -> np.ndarray:
    return W[:, :, 2] > 0


def transitions(mask: np.ndarray) -> list[tuple[int, int, int]]:
    """(sample, contact, new value) of every change."""
    out = []
    for j in range(mask.shape[1]):
        for i in np.flatnonzero(np.diff(mask[:, j].astype(int))).tolist():
            out.append((i + 1, j, int(mask[i + 1, j])))
    return out


def assert_matches_simulator(active, truth, lasting=3, within=2):
    """>= 99 % of entries agree; every inferred transition is within ``within`` samples of
    a true one of the same contact and kind, and every true transition between states that
    last ``lasting`` samples or more has an inferred one within ``within`` samples (blips
    of one or two samples are below the minimum durations)."""
    assert np.mean(active == truth) >= 0.99
    inferred, true = transitions(active), transitions(truth)
    for i, j, value in inferred:
        assert any(j2 == j and v2 == value and abs(i2 - i) <= within for i2, j2, v2 in true), (
            f"inferred transition at sample {i} of contact {j} to {value} is not the simulator's"
        )
    for i, j, value in true:
        before, after = truth[max(i - lasting, 0) : i, j], truth[i : i + lasting, j]
        if (after == value).all() and (before != value).all() and i >= lasting:
            assert any(
                j2 == j and v2 == value and abs(i2 - i) <= within for i2, j2, v2 in inferred
            ), f"missed transition at sample {i}, contact {j}"


@pytest.fixture(scope="module")
def step_log():
    return mujoco_log()


def test_the_step_log_has_single_support_lift_off_and_touch_down(step_log):
    *_, W, t, _ = step_log
    truth = simulator_schedule(W)
    kinds = {(j, value) for _, j, value in transitions(truth)}
    assert {(1, 0), (1, 1)} <= kinds  # the right foot lifts off and touches down
    assert (~truth[:, 1]).sum() > 250 and truth[:, 0].all() or (~truth[:, 0]).sum() < 5


def test_kinematic_schedule_matches_the_simulator(humanoid, step_log):
    q, v, _, _, W, t, _ = step_log
    schedule = infer_schedule_kinematic(humanoid, q, v, SOLES, time=t, **KINEMATIC)
    assert schedule.method == "kinematic" and schedule.contact_names == NAMES
    assert_matches_simulator(schedule.active, simulator_schedule(W))
    # Evidence: the stance foot stays within a few millimetres of the ground; the swing
    # foot rises by centimetres.
    height = schedule.evidence["height"]
    assert np.abs(height[:, 0]).max() < 0.005 and height[:, 1].max() > 0.02
    assert schedule.confidence.shape == (len(t), 2)
    assert 0.0 <= schedule.confidence.min() and schedule.confidence.max() <= 1.0


def test_kinematic_heights_against_the_corners(humanoid, step_log):
    """The lowest corner's height is the minimum over the four corners placed by Pinocchio
    (an independent loop over frame placements)."""
    from wholebody.schedule import contact_heights

    q, v, *_ = step_log
    rows = [0, 540, 700]
    height, speed = contact_heights(humanoid, q[rows], v[rows], SOLES)
    for n, i in enumerate(rows):
        for j, c in enumerate(SOLES):
            M = humanoid.placements(q[i], c.frame).se3()
            corners = [M.act(np.array([sx * X, sy * Y, 0.0])) for sx in (-1, 1) for sy in (-1, 1)]
            assert height[n, j] == pytest.approx(min(p[2] for p in corners), abs=1e-12)
    # Speed by finite differences of the height over one 2 ms step, at the swing foot.
    h2, _ = contact_heights(humanoid, q[[699, 701]], v[[699, 701]], SOLES)
    assert speed[2, 1] == pytest.approx((h2[1, 1] - h2[0, 1]) / 0.004, rel=0.05, abs=1e-4)


def _window(log, start, stop):
    q, v, a, tau, W, t, _ = log
    rows = slice(start, stop)
    return q[rows], v[rows], a[rows], tau[rows], W[rows], t[rows]


@pytest.mark.parametrize("window", [(500, 600), (800, 900)], ids=["lift-off", "touch-down"])
def test_dynamic_schedule_with_torques_matches_the_simulator(humanoid, step_log, window):
    q, v, a, tau, W, t = _window(step_log, *window)
    schedule = infer_schedule_dynamic(
        humanoid, q, v, a, DECLARED, time=t, tau=tau, residual_tolerance=1.0, **SMOOTH
    )
    assert schedule.method == "dynamic" and schedule.parameters["mode"] == "full_dynamics"
    assert_matches_simulator(schedule.active, simulator_schedule(W))


@pytest.mark.parametrize("window", [(500, 600), (800, 900)], ids=["lift-off", "touch-down"])
def test_combined_schedule_matches_the_simulator(humanoid, step_log, window):
    q, v, a, tau, W, t = _window(step_log, *window)
    schedule = infer_schedule_combined(
        humanoid,
        q,
        v,
        a,
        DECLARED,
        time=t,
        tau=tau,
        residual_tolerance=1.0,
        height_on=0.001,
        height_off=0.002,
        **SMOOTH,
    )
    assert schedule.method == "combined"
    assert_matches_simulator(schedule.active, simulator_schedule(W))


@pytest.mark.parametrize("method", ["dynamic", "combined"])
def test_whole_log_dynamic_and_combined(humanoid, step_log, method):
    q, v, a, tau, W, t, _ = step_log
    options = {"residual_tolerance": 1.0, **SMOOTH}
    if method == "combined":
        options |= {"height_on": 0.001, "height_off": 0.002}
    schedule = infer_contact_schedule(
        humanoid, q, v, a, DECLARED, time=t, method=method, tau=tau, **options
    )
    assert_matches_simulator(schedule.active, simulator_schedule(W))


def test_newton_euler_dynamic_schedule_is_the_smallest_set(humanoid, step_log):
    """Without torques the smallest set is what the motion needs: in single support the
    stance foot alone, in double support with the CoP between the feet both."""
    q, v, a, _, W, t = _window(step_log, 0, 1100)
    rows = np.r_[100:140, 640:700]
    schedule = infer_schedule_dynamic(
        humanoid,
        q[rows],
        v[rows],
        a[rows],
        DECLARED,
        time=t[rows],
        residual_tolerance=1.0,
        min_contact=0.0,
        min_flight=0.0,
    )
    assert schedule.active[:40].all()  # quiet double support: both are needed
    assert schedule.active[40:, 0].all() and not schedule.active[40:, 1].any()
    assert not schedule.unexplained.any()


def test_estimates_with_the_inferred_schedule_are_exact_in_single_support(humanoid, step_log):
    """Newton-Euler mode with the inferred schedule: the stance foot's wrench equals the
    simulator's to 1e-6 N (and the foot in the air carries exactly zero)."""
    q, v, a, _, W, t, _ = step_log
    schedule = infer_schedule_kinematic(humanoid, q, v, SOLES, time=t, **KINEMATIC)
    batch = estimate_contact_wrenches(humanoid, q, v, a, DECLARED, active=schedule.active)
    truth = simulator_schedule(W)
    single = (schedule.active.sum(axis=1) == 1) & (schedule.active == truth).all(axis=1)
    assert single.sum() > 250
    err = np.abs(batch.wrenches - W.reshape(len(t), -1))[single]
    assert err.max() <= TOL
    assert (batch.status[single] == "found").all()
    assert batch.identifiable[single].all() and not batch.split_from_regularization[single].any()
    assert (batch.wrench("right_sole")[single] == 0.0).all()
    # Both feet declared active: the foot in the air gets a share (the old behaviour).
    blind = estimate_contact_wrenches(humanoid, q[single], v[single], a[single], DECLARED)
    assert np.abs(blind.wrench("right_sole")[:, 2]).max() > 10.0


def test_a_push_is_flagged_unless_given(humanoid):
    q, v, a, tau, W, t, ext = mujoco_log("stand", 0.5, (0.3, 0.4, (0.0, 60.0, 0.0)))
    pushed = (t >= 0.3) & (t < 0.4)
    blind = infer_schedule_dynamic(
        humanoid, q, v, a, DECLARED, time=t, tau=tau, residual_tolerance=1.0, **SMOOTH
    )
    assert blind.unexplained[pushed].mean() > 0.9
    assert not blind.unexplained[t < 0.29].any()
    assert "a push, or a contact not declared" in blind.reasons[int(np.flatnonzero(pushed)[5])]
    told = infer_schedule_dynamic(
        humanoid,
        q,
        v,
        a,
        DECLARED,
        time=t,
        tau=tau,
        external_wrenches={"torso": ext},
        residual_tolerance=1.0,
        **SMOOTH,
    )
    assert not told.unexplained[t > 0.02].any()
    assert told.active[t > 0.02].all()


def test_min_durations():
    t = np.arange(12) * 0.01
    mask = np.array([1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 0], dtype=bool)
    out = enforce_min_durations(mask, t, min_contact=0.02, min_flight=0.02)
    # The one-sample gap closes; the lone contact at sample 9 (10 ms) goes; ends are kept.
    assert out.astype(int).tolist() == [1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]


def test_schedule_object_and_figure(tmp_path):
    t = np.arange(6) * 0.1
    active = np.array([[1, 1], [1, 1], [1, 0], [1, 0], [1, 1], [1, 1]], dtype=bool)
    schedule = ContactSchedule.from_active(NAMES, t, active)
    assert schedule.transitions() == [
        (pytest.approx(0.2), "right_sole", "break"),
        (pytest.approx(0.4), "right_sole", "make"),
    ]
    assert schedule.column("right_sole").tolist() == [True, True, False, False, True, True]
    assert schedule.agreement(active) == 1.0
    assert "right_sole: active 66.7 % of samples, 2 transitions" in schedule.summary()
    with pytest.raises(ContactNotFoundError, match="nope"):
        schedule.column("nope")
    pytest.importorskip("matplotlib")
    path = tmp_path / "schedule.png"
    fig = plot_schedule(schedule, normal_forces=np.ones((6, 2)) * 300.0, path=str(path))
    assert path.stat().st_size > 1000 and len(fig.axes) == 2


def test_bad_arguments(humanoid):
    q = np.tile(humanoid.neutral(), (3, 1))
    v = np.zeros((3, humanoid.nv))
    t = np.arange(3) * 0.01
    with pytest.raises(InvalidArgumentError, match=r"height_on \(0.02 m\) must not exceed"):
        infer_schedule_kinematic(humanoid, q, v, SOLES, time=t, height_on=0.02, height_off=0.01)
    with pytest.raises(
        InvalidArgumentError, match="time must increase \\[s\\]: the finite stamps do not increase"
    ):
        infer_schedule_kinematic(humanoid, q, v, SOLES, time=t[::-1])
    with pytest.raises(InvalidArgumentError, match="method must be one of"):
        infer_contact_schedule(humanoid, q, v, v, SOLES, time=t, method="magic")
    many = [
        SurfaceContact("left_sole", half_length=X, half_width=Y, mu=1.0, name=f"c{i}")
        for i in range(7)
    ]
    with pytest.raises(InvalidArgumentError, match="at most 6 candidates, got 7"):
        infer_schedule_dynamic(humanoid, q, v, v, many, time=t)
    with pytest.raises(InvalidArgumentError, match=r"active must have shape \(6, 2\)"):
        ContactSchedule.from_active(NAMES, np.arange(6), np.ones((6, 3)))


def test_contacts_command_writes_the_schedule_and_figure(humanoid, step_log, tmp_path, capsys):
    """The handler the CLI wires (``wholebody contacts LOG ...``), on a saved MuJoCo log."""
    import argparse

    from wholebody.cli.contacts import add_contacts_command, run_contacts_command
    from wholebody.trajectory import Trajectory

    q, v, a, tau, W, t, _ = step_log
    rows = slice(500, 600)
    traj = Trajectory.from_arrays(
        t[rows],
        q[rows],
        v[rows],
        joint_names=humanoid.joint_names,
        contact_wrenches={n: W[rows, j] for j, n in enumerate(NAMES)},
        a=a[rows],
        tau=tau[rows],
    )
    log = tmp_path / "step.npz"
    traj.save(log)
    parser = argparse.ArgumentParser()
    add_contacts_command(parser.add_subparsers())
    specs = [f"{n}:surface:{X + 0.005}:{Y + 0.005}:1.0" for n in NAMES]
    out, fig = tmp_path / "schedule.npz", tmp_path / "schedule.png"
    args = parser.parse_args(
        [
            "contacts",
            str(log),
            "--robot",
            "humanoid",
            "--contact",
            specs[0],
            "--contact",
            specs[1],
            "--height-on",
            "0.001",
            "--height-off",
            "0.002",
            "--min-contact",
            "0.005",
            "--min-flight",
            "0.005",
            "--residual-tolerance",
            "1.0",
            "--method",  # the default (auto) would take the log's forces
            "combined",
            "-o",
            str(out),
        ]
        + (["--plot", str(fig)] if _has_matplotlib() else [])
    )
    assert args.func(args) == 0 and args.func is run_contacts_command
    schedule = ContactSchedule.load(out)
    assert schedule.method == "combined" and schedule.contact_names == NAMES
    assert_matches_simulator(schedule.active, simulator_schedule(W[rows]))
    assert "contact schedule (combined, 100 samples)" in capsys.readouterr().out
    if _has_matplotlib():
        assert fig.stat().st_size > 1000


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
