"""Where loaded contacts are (:mod:`wholebody.balance.placement`, checked by
:mod:`wholebody.conventions.placement`) and what in the configuration explains a misplaced one
(:mod:`wholebody.diagnosis.causes_placement`): the placement formula against closed forms (a
sole turned about its y axis at a known height, one rolling on its toe); the failing direction
of the tilt and height tolerances and of the check's waivers; on G1 (not in the repository,
swaying in MuJoCo) an ankle offset, a base height and a base orientation offset named and
fitted, soles the model tilts opposite ways said unexplained, the clean log's contacts
placed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from wholebody.balance.placement import ROLL_SHARE, TILT_TOLERANCE, Soles, sole_placement
from wholebody.check.analysis import check_trajectory
from wholebody.check.options import CheckOptions
from wholebody.contacts import PointContact, SurfaceContact
from wholebody.conventions import Ground
from wholebody.conventions.placement import placement_check

from ._joint_logs import sway

X, Y = 0.1, 0.05  # the test sole's half-length and half-width [m]
GRAVITY = np.array([0.0, 0.0, -9.81])


def _turned(angle: float) -> np.ndarray:
    """World from sole: turned by ``angle`` about y (the toe goes down for angle > 0)."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _placed(angle: float, height: float, cop_x: float, fz: float = 300.0):
    soles = Soles.of(
        [SurfaceContact("s", half_length=X, half_width=Y, mu=1.0), PointContact("p", mu=1.0)],
        Ground(0.0),
        GRAVITY,
    )
    R = np.stack([_turned(angle), np.eye(3)])[None]
    P = np.array([[[0.0, 0.0, height], [0.3, 0.0, 0.002]]])
    # A vertical force fz at the sole's point (cop_x, 0, 0): its moment about the origin.
    point = R[0, 0] @ np.array([cop_x, 0.0, 0.0])
    f = np.array([0.0, 0.0, fz])
    W = np.zeros((1, 2, 6))
    W[0, 0, :3], W[0, 0, 3:] = f, np.cross(point, f)
    W[0, 1, :3] = f
    return soles, sole_placement(soles, P, R, W)


def test_placement_in_closed_form():
    angle, height = 0.1, 0.01
    soles, p = _placed(angle, height, cop_x=0.0)
    s = np.sin(angle)
    # Corners at x = +-X: the toe (x = X) is X sin(angle) below the origin.
    assert p.low[0, 0] == pytest.approx(height - X * s, abs=1e-15)
    assert p.span[0, 0] == pytest.approx(2 * X * s, abs=1e-15)
    assert p.tilt[0, 0] == pytest.approx(angle, abs=1e-15)
    assert p.lift[0, 0] == pytest.approx(X * s, abs=1e-12)  # the CoP at the centre
    assert p.low[0, 1] == pytest.approx(0.002, abs=1e-15) and np.isnan(p.lift[0, 1])
    # Rolling on the toe: the load on the lowest edge.
    _, rolling = _placed(angle, height, cop_x=X)
    assert rolling.lift[0, 0] == pytest.approx(0.0, abs=1e-12)


def _check(angle: float, cop_x: float, lift: float = 0.0):
    """Twenty loaded samples of one sole placed so, its lowest point ``lift`` above the
    ground, checked (CoM 0.8 m above)."""
    soles, p = _placed(angle, lift + X * np.sin(abs(angle)), cop_x)
    rep = lambda x: np.repeat(x, 20, axis=0)  # noqa: E731
    placed = dataclasses.replace(
        p, **{k: rep(getattr(p, k)) for k in ("low", "lift", "span", "tilt", "normal_force")}
    )
    time = np.arange(20) * 0.01
    return placement_check(soles, placed, np.full(20, 0.8), time, ["s", "p"], weight=600.0)


@pytest.mark.parametrize("share, named", [(1.05, True), (0.95, False)])
def test_failing_direction_of_the_tilt_tolerance(share, named):
    check = _check(share * TILT_TOLERANCE, cop_x=0.0)
    assert check.failing == (["s"] if named else [])
    assert check.tilted[:, 0].all() == named


@pytest.mark.parametrize("share, named", [(1.05, True), (0.95, False)])
def test_failing_direction_of_the_height_tolerance(share, named):
    tol = _check(0.0, 0.0).evidence["height_tolerance_m"]
    check = _check(0.0, 0.0, lift=share * tol)
    assert check.failing == (["s"] if named else [])


def test_a_sole_rolling_on_its_edge_is_not_tilted():
    assert _check(0.3, cop_x=X).failing == []
    # The load a quarter of the way in from the lowest edge: still rolling; beyond, tilted.
    inside = X - 2 * X * ROLL_SHARE
    assert _check(0.3, cop_x=inside + 0.002).failing == []
    assert _check(0.3, cop_x=inside - 0.002).failing == ["s"]


@pytest.fixture(scope="module")
def g1():
    return sway("g1", duration=1.0)


GROUND = CheckOptions(ground=Ground(0.0))


def test_the_clean_log_places_its_contacts(g1):
    robot, contacts, traj = g1
    report = check_trajectory(robot, traj, contacts, GROUND)
    assert report.verdict == "consistent" and not report.placement.failing
    loaded = report.placement.loaded
    assert loaded.mean() > 0.95
    assert np.nanmax(report.placement.tilt[loaded]) < 0.2 * TILT_TOLERANCE
    assert np.nanmax(np.abs(report.placement.height[loaded])) < 2e-3  # soft contacts sink


def test_an_ankle_offset_is_named_and_fitted(g1):
    robot, contacts, traj = g1
    q = traj.q.copy()
    q[:, 7 + traj.joint_names.index("left_ankle_pitch_joint")] += 0.1
    # At the physical tolerances (1 % m g): at the engine's floor the moved foot fails the
    # balance and the joint rows too, and "wrong point" outranks the offset there (a known
    # gap: the ranking does not yet weigh the placement family against the wrench family).
    physical = dataclasses.replace(GROUND, preset="physical")
    report = check_trajectory(robot, dataclasses.replace(traj, q=q), contacts, physical)
    assert report.failed == ["contact_placement"] and report.placement.failing == ["left_sole"]
    line = next(f for f in report.diagnosis if f.cause == "contact_placement")
    worst = line.parameters["contacts"]["left_sole"]["tilted"]["worst"][2]
    assert worst == pytest.approx(0.1, abs=0.01) and "'left_sole' tilted " in line.message
    best = report.diagnosis[0]
    assert best.cause == "placement_joint_offset"
    assert best.parameters["joint"] == "left_ankle_pitch_joint"
    value, se = best.parameters["values"][0], best.uncertainty["values"][0]
    assert abs(value - 0.1) <= 3 * se and se < 0.005


def test_a_base_height_offset_is_named_and_fitted(g1):
    robot, contacts, traj = g1
    q = traj.q.copy()
    q[:, 2] += 0.03
    report = check_trajectory(robot, dataclasses.replace(traj, q=q), contacts, GROUND)
    assert "contact_placement" in report.failed and set(report.placement.failing) == {
        "left_sole",
        "right_sole",
    }
    best = report.diagnosis[0]
    assert best.cause == "placement_base_height"
    # The soft contacts' sinking (under a millimetre here) is in the fitted value.
    assert best.parameters["values"][0] == pytest.approx(0.03, abs=1.5e-3)
    # It explains the failed convention check too (the contacts off the ground).
    assert "loaded_contacts_on_ground" in best.parameters["explains_conventions"]


def test_a_base_orientation_offset_is_named_and_fitted(g1):
    # The logged base turned by 0.04 rad about the world x axis (an estimator's error), its
    # velocity kept consistent with it (the linear part in the turned base's axes), the
    # accelerations differentiated from it.
    import pinocchio as pin

    robot, contacts, traj = g1
    q, v = traj.q.copy(), traj.v.copy()
    turn = np.array([0.04, 0.0, 0.0])
    R = pin.exp3(turn)
    for i in range(len(q)):
        Rb = pin.Quaternion(q[i, 6], *q[i, 3:6]).toRotationMatrix()
        q[i, 3:7] = pin.Quaternion(R @ Rb).coeffs()
        v[i, :3] = Rb.T @ R.T @ Rb @ v[i, :3]
    log = dataclasses.replace(traj, q=q, v=v, a=None)
    report = check_trajectory(robot, log, contacts, GROUND)
    assert set(report.placement.failing) == {"left_sole", "right_sole"}
    best = report.diagnosis[0]
    assert best.cause == "placement_base_tilt", report.format_summary()
    values, se = np.array(best.parameters["values"]), np.array(best.uncertainty["values"])
    fitted = values @ np.array(best.parameters["axes"])  # the log's turn, world axes [rad]
    assert np.all(np.abs(fitted - turn) <= 3 * np.linalg.norm(se)), (fitted, se)
    assert np.all(se < 0.01) and "about the horizontal world axes (" in best.message


def test_soles_tilted_opposite_ways_are_said_unexplained(g1):
    # The model's sole frames turned by +-0.08 rad about their y axes (a kinematic mistake in
    # the model, not in the log): no one joint offset, base height or base orientation in the
    # configuration puts both soles flat, so the contacts are named and the cause is said
    # unexplained, with the best attempt.
    import pinocchio as pin

    import wholebody as wb

    robot, contacts, traj = g1
    model = robot.model.copy()
    for contact, angle in zip(contacts, (0.08, -0.08)):
        frame = model.frames[model.getFrameId(contact.frame)]
        turn = pin.exp3(np.array([0.0, angle, 0.0]))
        frame.placement = pin.SE3(frame.placement.rotation @ turn, frame.placement.translation)
        model.frames[model.getFrameId(contact.frame)] = frame
    bent = wb.Robot.from_model(model, name="g1")
    report = check_trajectory(bent, traj, contacts, GROUND)
    assert report.failed == ["contact_placement"]
    assert set(report.placement.failing) == {"left_sole", "right_sole"}
    best = report.diagnosis[0]
    assert best.cause == "unexplained" and best.ranking.unexplained, report.format_summary()
    tested = [f for f in report.diagnosis if f.cause.startswith("placement_")]
    assert {f.cause for f in tested} == {
        "placement_joint_offset",
        "placement_base_height",
        "placement_base_tilt",
    }
    assert all(f.explained < 0.1 for f in tested)


def _mixed(n_tilted: int, n: int, dt: float, fz: float = 300.0):
    """``n`` samples ``dt`` apart of the sole, the first ``n_tilted`` tilted 0.1 rad with
    their load inside the sole, the others flat on the ground; checked (CoM 0.8 m above)."""
    soles, tilted = _placed(0.1, X * np.sin(0.1), cop_x=0.0, fz=fz)
    _, flat = _placed(0.0, 0.0, cop_x=0.0, fz=fz)
    pick = np.where(np.arange(n) < n_tilted, 0, 1)
    fields = ("low", "lift", "span", "tilt", "normal_force")
    both = {k: np.concatenate([getattr(tilted, k), getattr(flat, k)]) for k in fields}
    placed = dataclasses.replace(tilted, **{k: v[pick] for k, v in both.items()})
    time = np.arange(n) * dt
    return placement_check(soles, placed, np.full(n, 0.8), time, ["s", "p"], weight=600.0)


def test_failing_direction_of_the_placement_waivers():
    # A contact is named when its misplaced loaded samples are more than MAX_VIOLATION_SHARE
    # (2 %) of its loaded samples and last MIN_VIOLATION_TIME (20 ms) in all: at 10 ms a
    # sample, 5 of 200 are named and 4 are not (the share); at 1 ms, 20 of 200 are named and
    # 19 are not (the time). A contact carrying less than LOAD_SHARE (10 %) of the weight is
    # not judged.
    from wholebody.conventions import LOAD_SHARE, MAX_VIOLATION_SHARE, MIN_VIOLATION_TIME

    assert (MAX_VIOLATION_SHARE, MIN_VIOLATION_TIME, LOAD_SHARE) == (0.02, 0.02, 0.1)
    assert _mixed(5, 200, 0.01).failing == ["s"] and _mixed(4, 200, 0.01).failing == []
    assert _mixed(20, 200, 0.001).failing == ["s"] and _mixed(19, 200, 0.001).failing == []
    load = LOAD_SHARE * 600.0
    assert _mixed(200, 200, 0.01, fz=1.01 * load).failing == ["s"]
    assert _mixed(200, 200, 0.01, fz=0.99 * load).failing == []
