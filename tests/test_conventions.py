"""Convention checks and the expected error of differentiated accelerations.

Each check is tested by injecting one mistake into clean logs (the shipped MuJoCo squat and
fresh MuJoCo simulations at 500 Hz and 1 kHz): the right check fails and names the right
hypothesis, and the clean logs pass every check. The expected-error model is tested against
a closed form (a step of acceleration between samples) and against MuJoCo logs with
lift-off and touch-down, where it must cover the residual of differentiated accelerations,
and must not cover a real fault (an unlogged 50 N push).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import wholebody as wb
from wholebody.balance import newton_euler_residual
from wholebody.contacts import PointContact, SurfaceContact
from wholebody.conventions import (
    ConventionReport,
    Ground,
    check_conventions,
    expected_residual_error,
)
from wholebody.errors import InvalidArgumentError, LogFormatError
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH as X
from wholebody.models import HUMANOID_SOLE_HALF_WIDTH as Y
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
FEET = [SurfaceContact(f, half_length=X, half_width=Y, mu=1.0) for f in ("left_sole", "right_sole")]
VELOCITY = "velocity_matches_configuration"


def _simulation():
    pytest.importorskip("mujoco")
    sys.path.insert(0, str(ROOT / "examples"))
    import mujoco_humanoid_simulation as sim

    return sim


@pytest.fixture(scope="module")
def logs(humanoid) -> dict[str, Trajectory]:
    """Clean logs: the shipped squat, and 1 s simulations of stand and squat at 1 kHz / 500 Hz."""
    sim = _simulation()
    out = {"shipped_squat": Trajectory.load(ROOT / "data" / "humanoid_squat.npz")}
    for scenario in ("stand", "squat"):
        for every, rate in ((1, "1khz"), (2, "500hz")):
            out[f"{scenario}_{rate}"] = sim.simulate(humanoid, 1.0, every=every, scenario=scenario)
    return out


@pytest.fixture(scope="module")
def single_support(humanoid) -> Trajectory:
    """The right foot lifts off at 1.2-1.6 s (500 Hz)."""
    return _simulation().simulate(humanoid, 2.0, every=2, scenario="single_support")


def yawed(traj: Trajectory, angle: float) -> Trajectory:
    """The same motion with the world turned about z: still a consistent log."""
    c, s = np.cos(angle), np.sin(angle)
    Rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    q = traj.q.copy()
    q[:, :3] = q[:, :3] @ Rz.T
    turn = pin.Quaternion(pin.utils.rpyToMatrix(0.0, 0.0, angle))
    for i in range(len(q)):
        x, y, z, w = q[i, 3:7]
        q[i, 3:7] = (turn * pin.Quaternion(w, x, y, z)).coeffs()  # coeffs: x, y, z, w
    W = traj.contact_wrenches.copy()
    W[:, :, :3] = W[:, :, :3] @ Rz.T
    W[:, :, 3:] = W[:, :, 3:] @ Rz.T
    return dataclasses.replace(traj, q=q, contact_wrenches=W)


def _rotations(quat_xyzw: np.ndarray) -> np.ndarray:
    return np.array([pin.Quaternion(w, x, y, z).toRotationMatrix() for x, y, z, w in quat_xyzw])


def inject(traj: Trajectory, mistake: str) -> Trajectory:
    """The log with one convention mistake (columns in the log's own joint order)."""
    q, v, t = traj.q.copy(), traj.v.copy(), traj.time.copy()
    R = _rotations(q[:, 3:7])
    if mistake in ("quaternion_wxyz", "mujoco"):
        q[:, 3:7] = q[:, [6, 3, 4, 5]]
    if mistake in ("base_linear_velocity_in_world", "mujoco"):
        v[:, :3] = np.einsum("nij,nj->ni", R, v[:, :3])
    if mistake == "base_angular_velocity_in_world":
        v[:, 3:6] = np.einsum("nij,nj->ni", R, v[:, 3:6])
    if mistake == "joint_positions_in_degrees":
        q[:, 7:] = np.degrees(q[:, 7:])
    if mistake == "joint_velocities_in_degrees":
        v[:, 6:] = np.degrees(v[:, 6:])
    if mistake == "time_in_milliseconds":
        t = 1000.0 * t
    if mistake == "joint_columns_permuted":
        names = list(traj.joint_names)
        cols = np.arange(len(names))
        a, b, c = (names.index(n) for n in ("left_hip_pitch", "left_knee", "right_hip_pitch"))
        cols[[a, b, c]] = cols[[b, c, a]]  # a 3-cycle of leg joints in v only
        v[:, 6:] = v[:, 6 + cols]
    return dataclasses.replace(traj, q=q, v=v, time=t)


# --- clean logs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["shipped_squat", "stand_1khz", "stand_500hz", "squat_1khz", "squat_500hz"]
)
@pytest.mark.parametrize("accelerations", ["logged", "differentiated"])
def test_clean_logs_pass_every_check(humanoid, logs, name, accelerations):
    traj = logs[name]
    if accelerations == "differentiated":
        traj = dataclasses.replace(traj, a=None).with_accelerations()
    report = check_conventions(humanoid, traj, FEET)
    assert isinstance(report, ConventionReport)
    assert report.passed, report.format_summary()
    assert [c.name for c in report.all_checks] == [
        VELOCITY,
        "loaded_contacts_still",
        "loaded_contacts_on_ground",
        "joint_positions_within_limits",
    ]
    assert report.findings == ()
    # The declared ground (z = 0) fits too: MuJoCo's soft contacts sink about 1 mm.
    assert check_conventions(humanoid, traj, FEET, ground=0.0).passed


def test_single_support_with_lift_off_passes(humanoid, single_support):
    report = check_conventions(humanoid, single_support, FEET, ground=Ground(0.0))
    assert report.passed, report.format_summary()


# --- v against dq/dt ------------------------------------------------------------------------


MISTAKES = {
    "quaternion_wxyz": ("quaternion_wxyz",),
    "base_linear_velocity_in_world": ("base_linear_velocity_in_world",),
    "base_angular_velocity_in_world": ("base_angular_velocity_in_world",),
    "mujoco": ("quaternion_wxyz", "base_linear_velocity_in_world"),
    "joint_positions_in_degrees": ("joint_positions_in_degrees",),
    "joint_velocities_in_degrees": ("joint_velocities_in_degrees",),
    "time_in_milliseconds": ("time_in_milliseconds",),
    "joint_columns_permuted": ("joint_columns_permuted",),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
@pytest.mark.parametrize("name", ["shipped_squat", "squat_1khz", "stand_500hz"])
def test_velocity_mistake_is_named(humanoid, logs, name, mistake):
    # Turned by 1.2 rad about z so that world and base axes differ (a robot facing +x with
    # a level base cannot show a base velocity left in world axes, and it would do no harm).
    traj = inject(yawed(logs[name], 1.2), mistake)
    report = check_conventions(humanoid, traj, FEET)
    check = report[VELOCITY]
    assert not check.passed
    assert check.hypotheses == MISTAKES[mistake], check.message
    assert " + ".join(MISTAKES[mistake]) in check.message
    assert check.fix
    assert check in report.findings
    if mistake == "joint_columns_permuted":
        # v's left_hip_pitch column holds the left knee's velocity, and so on round the cycle.
        moved = dict(check.evidence["permutation"])
        assert moved["left_knee"] == "right_hip_pitch" or moved["left_hip_pitch"] == "left_knee"
        assert set(moved) == {"left_hip_pitch", "left_knee", "right_hip_pitch"}
    if mistake == "time_in_milliseconds":
        assert check.evidence["time_scale"] == pytest.approx(1000.0, rel=0.02)


def test_unexplained_velocity_mismatch_names_the_columns(humanoid, logs):
    traj = logs["squat_500hz"]
    v = traj.v.copy()
    j = 6 + list(traj.joint_names).index("left_knee")
    v[:, j] = 0.5 * v[:, j] + 0.2 * np.sin(7.0 * traj.time)  # neither a scale nor a swap
    check = check_conventions(humanoid, dataclasses.replace(traj, v=v), FEET)[VELOCITY]
    assert not check.passed and check.hypotheses == ()
    assert "v does not match dq/dt (columns left_knee)" in check.message
    assert "no known convention mistake" in check.message
    assert check.evidence["columns"]["left_knee"]["share_beyond_bound"] > 0.5


def test_a_few_impact_samples_do_not_fail_the_velocity_check(humanoid, logs):
    # Three samples of v off by a large jump (a logged impact spike): under 5 % of samples.
    traj = logs["squat_500hz"]
    v = traj.v.copy()
    v[[100, 250, 400], 6:] += 1.0
    assert check_conventions(humanoid, dataclasses.replace(traj, v=v), FEET)[VELOCITY].passed


# --- loaded contacts -------------------------------------------------------------------------


def test_swapped_contact_wrenches_move_while_loaded(humanoid, single_support):
    traj = dataclasses.replace(single_support, contact_names=("right_sole", "left_sole"))
    report = check_conventions(humanoid, traj, FEET, ground=0.0)
    still = report["loaded_contacts_still"]
    assert not still.passed
    assert "'right_sole'" in still.message and "'left_sole'" not in still.message
    worst = still.evidence["contacts"]["right_sole"]["worst"][0]
    assert worst[2] > still.evidence["speed_tolerance_m_s"]
    assert worst[1] > 1.2  # after the right foot left the ground
    assert not report["loaded_contacts_on_ground"].passed  # the lifted foot is loaded


def test_ground_offset_and_wrong_contact_frame(humanoid, logs):
    traj = logs["squat_500hz"]
    tol = check_conventions(humanoid, traj, FEET)["loaded_contacts_on_ground"].evidence[
        "height_tolerance_m"
    ]
    assert 0.01 < tol < 0.02  # 2 % of the CoM height, 0.7-0.9 m
    check = check_conventions(humanoid, traj, FEET, ground=0.05)["loaded_contacts_on_ground"]
    assert not check.passed
    worst_offset = check.evidence["contacts"]["left_sole"]["worst"][0][2]
    assert worst_offset == pytest.approx(-0.051, abs=0.002)  # 50 mm + MuJoCo's ~1 mm sink
    # The ankle frames instead of the soles: on a common plane, but not on the declared ground.
    ankles = [
        SurfaceContact(f"{s}_ankle_roll", half_length=X, half_width=Y, mu=1.0, name=f"{s}_sole")
        for s in ("left", "right")
    ]
    assert check_conventions(humanoid, traj, ankles)["loaded_contacts_on_ground"].passed
    check = check_conventions(humanoid, traj, ankles, ground=0.0)["loaded_contacts_on_ground"]
    assert not check.passed and "the sole, not the ankle" in check.fix
    # One foot on a declared frame lower than the other: no common plane.
    mixed = [FEET[0], ankles[1]]
    assert not check_conventions(humanoid, traj, mixed)["loaded_contacts_on_ground"].passed


def test_bad_input(humanoid, logs):
    traj = logs["shipped_squat"]
    with pytest.raises(LogFormatError, match=r"contacts \['right_sole'\] that are not declared"):
        check_conventions(humanoid, traj, FEET[:1])
    with pytest.raises(InvalidArgumentError, match="ground must be a Ground"):
        check_conventions(humanoid, traj, FEET, ground="floor")
    with pytest.raises(InvalidArgumentError, match="ground normal must be a non-zero"):
        Ground(0.0, np.zeros(3))
    with pytest.raises(LogFormatError, match="at least 5 samples"):
        short = dataclasses.replace(
            traj,
            time=traj.time[:4],
            q=traj.q[:4],
            v=traj.v[:4],
            a=traj.a[:4],
            tau=traj.tau[:4],
            contact_wrenches=traj.contact_wrenches[:4],
        )
        check_conventions(humanoid, short, FEET)
    with pytest.raises(InvalidArgumentError, match="force_tolerance must be a finite number"):
        expected_residual_error(humanoid, traj, FEET, force_tolerance=-1.0)


def test_third_party_robot_kinematic_checks():
    """G1 (example-robot-data): a log integrated on the manifold, then a w-x-y-z quaternion."""
    robot = wb.load("g1")
    rng = np.random.default_rng(3)
    dt, N = 0.002, 500
    t = dt * np.arange(N)
    amp, freq = rng.normal(size=robot.nv) * 0.3, rng.uniform(0.3, 2.0, size=robot.nv)
    v = amp * np.sin(2 * np.pi * freq * t[:, None])
    q = np.empty((N, robot.nq))
    q[0] = robot.neutral()
    for i in range(N - 1):  # semi-implicit, like a simulator: q_{i+1} = q_i (+) dt v_{i+1}
        q[i + 1] = pin.integrate(robot.model, q[i], dt * v[i + 1])
    names = robot.joint_names
    contacts = [PointContact("left_ankle_roll_link", mu=1.0, name="left")]
    traj = Trajectory.from_arrays(
        t, q, v, joint_names=names, contact_wrenches={"left": np.zeros((N, 3))}
    )
    assert check_conventions(robot, traj, contacts).passed
    check = check_conventions(robot, inject(traj, "quaternion_wxyz"), contacts)[VELOCITY]
    assert check.hypotheses == ("quaternion_wxyz",)
    degrees = inject(traj, "joint_velocities_in_degrees")
    check = check_conventions(robot, degrees, contacts)[VELOCITY]
    assert check.hypotheses == ("joint_velocities_in_degrees",)


# --- expected error of differentiated accelerations -------------------------------------------


def _residual_of_differentiated(robot, traj):
    traj = dataclasses.replace(traj, a=None).with_accelerations()
    q, v, a, _ = traj.for_robot(robot)
    ext = None
    if traj.external_wrenches is not None:
        ext = {f: traj.external_wrenches[:, j] for j, f in enumerate(traj.external_frames)}
    wrenches = {n: traj.contact_wrenches[:, j] for j, n in enumerate(traj.contact_names)}
    return traj, newton_euler_residual(robot, q, v, a, FEET, wrenches, external_wrenches=ext)


def test_expected_error_closed_form_step(humanoid):
    """A base translating with a step of acceleration at a fraction s of a sample interval.

    The log is exact (positions and velocities from the closed form, the contact force the
    one that balances the motion), so the residual of differentiated accelerations is the
    differentiation error alone: ``Delta W (dt - s) / (2 dt)`` at the sample before the step
    and ``Delta W s / (2 dt)`` after. The model bounds it by half the jump at each.
    """
    dt, N, s = 0.002, 40, 0.3
    t = dt * np.arange(N)
    t_step = t[20] + s * dt
    a0, a1 = np.array([0.0, 0.0, 0.0]), np.array([0.5, 0.0, 2.0])
    acc = np.where((t >= t_step)[:, None], a1, a0)
    vel = np.where((t >= t_step)[:, None], a1 * (t - t_step)[:, None], 0.0)
    q = np.tile(humanoid.neutral(), (N, 1))
    q[:, :3] += np.where((t >= t_step)[:, None], 0.5 * a1 * ((t - t_step) ** 2)[:, None], 0.0)
    v = np.zeros((N, humanoid.nv))
    v[:, :3] = vel
    m, g = humanoid.mass, humanoid.gravity_vector
    f = m * (acc - g)
    com = np.array([humanoid.com(qi) for qi in q])
    sole = np.array([humanoid.frame_position(qi, "left_sole") for qi in q])
    wrench = np.concatenate([f, np.cross(com - sole, f)], axis=1)  # no moment about the CoM
    traj = Trajectory.from_arrays(
        t,
        q,
        v,
        joint_names=humanoid.joint_names,
        contact_wrenches={"left_sole": wrench, "right_sole": np.zeros((N, 6))},
    )
    traj, res = _residual_of_differentiated(humanoid, traj)
    jump = m * np.linalg.norm(a1 - a0)
    assert res.force_norm[20] == pytest.approx(jump * (1 - s) / 2, rel=1e-6)
    assert res.force_norm[21] == pytest.approx(jump * s / 2, rel=1e-6)
    interior = np.r_[1:20, 22 : N - 1]
    np.testing.assert_allclose(res.force_norm[interior], 0.0, rtol=0, atol=1e-8)
    err = expected_residual_error(humanoid, traj, FEET)
    assert err.force_parts["jump"][20] == pytest.approx(jump / 2, rel=1e-9)
    assert err.force_parts["jump"][21] == pytest.approx(jump / 2, rel=1e-9)
    assert np.all(res.force_norm <= err.force_error + 1e-9)
    assert np.all(res.moment_norm <= err.moment_error + 1e-9)


@pytest.mark.parametrize(
    "scenario,every",
    [
        ("single_support", 2),
        pytest.param("single_support", 1, marks=pytest.mark.slow),
        ("hop", 2),
        pytest.param("hop", 1, marks=pytest.mark.slow),
    ],
)
def test_expected_error_covers_clean_residual(humanoid, scenario, every):
    """Lift-off (single support) and touch-down (an upward 1000 N push of 60 ms, logged as a
    known external wrench, makes the robot hop and land): at 500 Hz and 1 kHz the residual of
    differentiated accelerations stays within the expected error plus 1e-3 m g."""
    sim = _simulation()
    if scenario == "hop":
        traj = sim.simulate(
            humanoid,
            1.0,
            every=every,
            scenario="stand",
            push=(0.3, 0.36, np.array([0.0, 0.0, 1000.0])),
        )
        assert traj.contact_wrenches[:, :, 2].sum(axis=1).min() == 0.0  # it left the ground
    else:
        traj = sim.simulate(humanoid, 2.0, every=every, scenario=scenario)
    traj, res = _residual_of_differentiated(humanoid, traj)
    err = expected_residual_error(humanoid, traj, FEET)
    tol = 1e-3 * humanoid.weight
    assert np.nanmax(res.force_norm - err.force_error) <= tol
    assert np.nanmax(res.moment_norm - err.moment_error) <= tol
    # Without the model, the residual does exceed the default tolerance (0.01 m g) somewhere,
    # and those samples are the ones the model calls unreliable.
    over = (res.force_norm > 0.01 * humanoid.weight) | (res.moment_norm > 0.01 * humanoid.weight)
    assert over.any() and np.all(err.unreliable[over])


def test_unlogged_push_is_not_covered(humanoid):
    sim = _simulation()
    traj = sim.simulate(
        humanoid, 0.8, every=2, scenario="stand", push=(0.3, 0.5, np.array([0.0, 50.0, 0.0]))
    )
    blind = dataclasses.replace(traj, external_frames=(), external_wrenches=None)
    blind, res = _residual_of_differentiated(humanoid, blind)
    err = expected_residual_error(humanoid, blind, FEET)
    during = (blind.time > 0.31) & (blind.time < 0.49)
    uncovered = res.force_norm[during] > err.force_error[during]
    assert uncovered.mean() > 0.95
    assert np.median(res.force_norm[during] - err.force_error[during]) > 40.0
    assert not err.unreliable[during].any()
