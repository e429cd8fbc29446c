"""The joint rows of the equations of motion in the check (:mod:`wholebody.balance.joint_rows`):
the batch pass against plain Pinocchio (``rnea`` with external forces built from the joint
placements) and against the independent ``crba`` / ``nle`` route with frame Jacobians; each
joint's tolerance bound and its failing direction; joints not logged or passive stated; the
rows in text, JSON and HTML."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import wholebody as wb
from wholebody.balance.joint_rows import joint_levers, joint_rows, joint_tolerances
from wholebody.check.analysis import check_trajectory
from wholebody.check.options import CheckOptions
from wholebody.contacts import SurfaceContact
from wholebody.robot.batch import inverse_dynamics_rows

ROOT = Path(__file__).resolve().parents[1]
FEET = [
    SurfaceContact(f, half_length=0.12, half_width=0.05, mu=1.0)
    for f in ("left_sole", "right_sole")
]
TOL = 1e-9  # the batch pass against Pinocchio's own routes [N m], float64 round-off


@pytest.fixture(scope="module")
def squat() -> wb.Trajectory:
    return wb.Trajectory.load(ROOT / "data" / "humanoid_squat.npz")


def _random_case(robot: wb.Robot, n: int, frames: list[str], seed: int):
    rng = np.random.default_rng(seed)
    Q = np.array([robot.random_configuration(rng) for _ in range(n)])
    V, A = rng.normal(size=(n, robot.nv)), rng.normal(size=(n, robot.nv))
    W = rng.normal(scale=100.0, size=(n, len(frames), 6))
    ids = [robot.frame_id(f) for f in frames]
    R = np.empty((n, len(ids), 3, 3))
    for i in range(n):
        pin.forwardKinematics(robot.model, robot.data, Q[i])
        for c, fid in enumerate(ids):
            R[i, c] = pin.updateFramePlacement(robot.model, robot.data, fid).rotation
    return Q, V, A, W, ids, R


FRAMES = ["left_sole", "right_sole", "left_sole", "torso"]  # a repeat: two wrenches, one joint


def test_inverse_dynamics_rows_equal_rnea_with_forces_at_the_joints(humanoid):
    m, d = humanoid.model, humanoid.model.createData()
    Q, V, A, W, ids, R = _random_case(humanoid, 20, FRAMES, seed=1)
    out = np.full((len(Q), humanoid.nv), np.nan)
    inverse_dynamics_rows(humanoid, Q, V, A, range(len(Q)), ids, W, R, out)
    for i in range(len(Q)):
        pin.forwardKinematics(m, d, Q[i])
        pin.updateFramePlacements(m, d)
        fext = [pin.Force.Zero() for _ in range(m.njoints)]
        for c, fid in enumerate(ids):
            joint = m.frames[fid].parentJoint
            p = d.oMf[fid].translation  # the wrench at the frame origin, moved to the world's
            world = pin.Force(W[i, c, :3], W[i, c, 3:] + np.cross(p, W[i, c, :3]))
            fext[joint] = fext[joint] + d.oMi[joint].actInv(world)
        ref = pin.rnea(m, d, Q[i], V[i], A[i], fext)
        np.testing.assert_allclose(out[i], ref, rtol=0, atol=TOL)


def test_joint_rows_equal_the_crba_nle_route_and_the_jacobians_pinocchios(humanoid):
    m, d = humanoid.model, humanoid.model.createData()
    Q, V, A, W, ids, R = _random_case(humanoid, 20, FRAMES, seed=2)
    tau = np.random.default_rng(3).normal(size=(len(Q), humanoid.nv - 6))
    J = np.full((len(Q), len(ids), 6, humanoid.nv), np.nan)
    r = joint_rows(humanoid, Q, V, A, tau, range(len(Q)), ids, W, R, J)
    for i in range(len(Q)):
        M = pin.crba(m, d, Q[i])
        M = np.triu(M) + np.triu(M, 1).T
        h = pin.nonLinearEffects(m, d, Q[i], V[i])
        ext = np.zeros(humanoid.nv)
        for c, fid in enumerate(ids):
            Jc = pin.computeFrameJacobian(m, d, Q[i], fid, pin.LOCAL_WORLD_ALIGNED)
            np.testing.assert_allclose(J[i, c], Jc, rtol=0, atol=1e-12)
            ext += Jc.T @ W[i, c]
        ref = (M @ A[i] + h - ext)[6:] - tau[i]
        np.testing.assert_allclose(r[i], ref, rtol=0, atol=TOL)


def test_rows_not_listed_are_left_alone(humanoid):
    Q, V, A, W, ids, R = _random_case(humanoid, 4, FRAMES, seed=4)
    tau = np.zeros((4, humanoid.nv - 6))
    r = joint_rows(humanoid, Q, V, A, tau, [1, 3], ids, W, R)
    assert np.isnan(r[[0, 2]]).all() and np.isfinite(r[[1, 3]]).all()


def test_levers_bound_every_point_of_the_subtree(humanoid):
    m, d = humanoid.model, humanoid.model.createData()
    lever = joint_levers(humanoid)
    rng = np.random.default_rng(5)
    reached = np.zeros(len(lever))
    for _ in range(50):
        q = humanoid.random_configuration(rng)
        pin.forwardKinematics(m, d, q)
        pin.updateFramePlacements(m, d)
        for c, name in enumerate(humanoid.joint_names):
            j = humanoid.joint_id(name)
            o = d.oMi[j].translation
            points = [
                d.oMf[f].translation
                for f in range(m.nframes)
                if m.frames[f].parentJoint in m.subtrees[j]
            ]
            points += [d.oMi[k].act(m.inertias[k].lever) for k in m.subtrees[j]]
            reached[c] = max(reached[c], max(np.linalg.norm(p - o) for p in points))
    assert np.all(reached <= lever + 1e-12)
    # Tight within the chain's bends: the legs stretch to at least 70 % of the bound.
    assert np.all(reached >= 0.7 * lever)


def test_two_link_lever_and_tolerance_in_closed_form():
    # A planar two-link arm on a floating base: the shoulder carries both links.
    robot = wb.Robot.from_urdf(ROOT / "models" / "two_link_arm.urdf", floating_base=True)
    lever = joint_levers(robot)
    m = robot.model
    shoulder, elbow = (robot.joint_id(n) for n in robot.joint_names)
    step = np.linalg.norm(m.jointPlacements[elbow].translation)
    tips = [np.linalg.norm(f.placement.translation) for f in m.frames if f.parentJoint == elbow]
    tips.append(np.linalg.norm(m.inertias[elbow].lever))
    assert lever[1] == pytest.approx(max(tips), abs=1e-15)
    assert lever[0] >= step + lever[1] - 1e-15
    tol = joint_tolerances(robot, 0.01, 0.02)
    np.testing.assert_allclose(tol, robot.weight * (0.02 + 0.01 * lever), rtol=1e-15)


def _clean_rows(report: wb.check.Report) -> np.ndarray:
    """Samples whose joint rows all balance to round-off (every sample of the shipped log,
    whose torques hold the joint limits' forces)."""
    r = np.abs(report.joint_residual)
    return np.flatnonzero(np.nanmax(r, axis=1) < 1e-9)


def test_failing_direction_of_every_joint_tolerance(humanoid, squat):
    options = CheckOptions(diagnose_causes=False)
    clean = check_trajectory(humanoid, squat, FEET, options)
    assert clean.verdict == "consistent" and clean.failed == []
    tol = clean.joint_tolerance
    rows = _clean_rows(clean)
    nj = len(tol)
    assert len(rows) >= 3 * nj
    order = [squat.joint_names.index(j) for j in humanoid.joint_names]  # log column per joint
    for share, found in ((1.001, True), (0.999, False)):
        tau = squat.tau.copy()
        for j in range(nj):  # joint j wrong on three samples of its own, by share x its tolerance
            at = rows[3 * j : 3 * j + 3]
            tau[at, order[j]] -= share * tol[j] * np.array([1.0, -1.0, 1.0])
        report = check_trajectory(humanoid, dataclasses.replace(squat, tau=tau), FEET, options)
        over = report.joint_over
        if found:
            assert report.verdict == "inconsistent" and report.failed == ["joint_rows"]
            for j in range(nj):
                assert np.flatnonzero(over[:, j]).tolist() == rows[3 * j : 3 * j + 3].tolist()
        else:
            assert report.verdict == "consistent" and not over.any()


def test_torque_error_named_with_its_joint_in_text_json_and_html(humanoid, squat):
    tau = squat.tau.copy()
    knee = squat.joint_names.index("right_knee")
    tau[:, knee] += 30.0
    report = check_trajectory(humanoid, dataclasses.replace(squat, tau=tau), FEET)
    assert report.verdict == "inconsistent" and report.failed == ["joint_rows"]
    summary = json.loads(report.to_json())
    worst = summary["joint_rows"]["worst"][0]
    assert worst["joint"] == "right_knee" and worst["samples_over"] == len(squat)
    assert worst["max_abs_residual"] == pytest.approx(30.0, abs=1e-6)
    assert summary["failed"] == ["joint_rows"]
    joints = summary["joint_rows"]["joints"]  # every joint's evidence, robot order
    assert list(joints) == humanoid.joint_names
    assert joints["right_knee"] == {k: v for k, v in worst.items() if k != "joint"}
    assert all(j["samples_over"] == 0 for name, j in joints.items() if name != "right_knee")
    text = report.format_summary()
    assert "largest [N m]: right_knee 30" in text
    assert text.rstrip().endswith("verdict   INCONSISTENT: joint rows")
    html = report.to_html()
    assert "right_knee" in html and "joint rows" in html


def test_joints_not_logged_or_passive_are_stated(humanoid, squat):
    tau = squat.tau.copy()
    tau[:, squat.joint_names.index("waist_yaw")] = np.nan
    tau[:5, squat.joint_names.index("left_knee")] = np.nan
    passive = wb.Robot.from_model(humanoid.model.copy(), name="humanoid")
    passive.model.effortLimit[6 + humanoid.joint_names.index("right_elbow")] = 0.0
    report = check_trajectory(passive, dataclasses.replace(squat, tau=tau), FEET)
    said = report.joints_not_checked
    assert said["waist_yaw"] == "its torque is not logged (NaN)"
    assert said["left_knee"] == "its torque is not logged on 5 checked samples"
    assert said["right_elbow"].startswith("passive")
    assert report.verdict == "consistent"
    assert np.isnan(report.joint_residual[:, humanoid.joint_names.index("right_elbow")]).all()
    assert "not checked: " in report.format_summary()


def test_a_log_without_torques_has_no_joint_rows(humanoid, squat):
    report = check_trajectory(humanoid, dataclasses.replace(squat, tau=None), FEET)
    assert report.joint_names == [] and report.summary()["joint_rows"] is None
    assert report.format_summary().rstrip().endswith("verdict   consistent (wrench balance)")


def test_the_full_dynamics_estimate_meets_the_checks_joint_rows(humanoid, squat):
    # Estimation's full-dynamics rows (J_c^T x = M a + h - S^T tau, crba/Jacobian algebra) and
    # the check's (one rnea with the wrenches as external forces) are the same equations: the
    # estimated wrenches balance the check's joint rows within the joint tolerances that the
    # estimate's own tolerance (relative to m g) gives, on every joint the feet reach.
    from wholebody.estimation import estimate_contact_wrenches
    from wholebody.estimation.solvers import DEFAULT_TOLERANCE

    q, v, a, tau = squat.for_robot(humanoid)
    est = estimate_contact_wrenches(humanoid, q, v, a, FEET, tau=tau)
    assert est.mode == "full_dynamics" and est.found.all()
    W = np.stack([est.wrench(c.name) for c in FEET], axis=1)
    log = dataclasses.replace(squat, contact_wrenches=W)
    report = check_trajectory(humanoid, log, FEET, CheckOptions(diagnose_causes=False))
    tol = joint_tolerances(humanoid, DEFAULT_TOLERANCE, DEFAULT_TOLERANCE)
    legs = [
        j for j, n in enumerate(humanoid.joint_names) if "hip" in n or "knee" in n or "ankle" in n
    ]
    r = np.abs(report.joint_residual[:, legs])
    assert np.all(r <= tol[legs]), (r.max(axis=0), tol[legs])
    arms = [j for j in range(len(tol)) if j not in legs]
    np.testing.assert_allclose(
        report.joint_residual[:, arms],
        check_trajectory(humanoid, squat, FEET, CheckOptions(diagnose_causes=False)).joint_residual[
            :, arms
        ],
        rtol=0,
        atol=1e-9,
    )


def test_failing_direction_of_the_joint_rows_waiver(humanoid, squat):
    # Accelerations differentiated from v: the log's first samples are waived in the wrench
    # balance (their expected error covers the residual). A joint row there is waived within
    # its tolerance plus that error carried to the joint (e_m + e_f L_j), not beyond; the same
    # error on a sample that is not waived fails.
    options = CheckOptions(diagnose_causes=False)
    log = dataclasses.replace(squat, a=None)
    clean = check_trajectory(humanoid, log, FEET, options)
    assert clean.verdict == "consistent_except_unreliable" and clean.unreliable[3]
    knee = humanoid.joint_names.index("right_knee")
    column = squat.joint_names.index("right_knee")
    tol, lever = clean.joint_tolerance[knee], joint_levers(humanoid)[knee]
    bound = clean.bound_moment[3] + clean.bound_force[3] * lever
    assert bound > 0.2 * tol  # the waiver has room to be seen
    np.testing.assert_allclose(clean.joint_weights[knee], [1.0, lever], rtol=0, atol=1e-15)

    def with_row(i: int, target: float) -> wb.check.Report:
        tau = squat.tau.copy()  # the row made target [N m] at sample i
        r0 = clean.joint_residual[i, knee]
        tau[i, column] -= np.sign(r0) * (target - abs(r0))
        return check_trajectory(humanoid, dataclasses.replace(log, tau=tau), FEET, options)

    waived = with_row(3, tol + 0.9 * bound)
    assert waived.joint_over[3, knee] and waived.joint_waived[3, knee]
    assert waived.verdict == "consistent_except_unreliable" and waived.failed == []
    beyond = with_row(3, tol + 1.1 * bound)
    assert beyond.verdict == "inconsistent" and beyond.failed == ["joint_rows"]
    assert not beyond.joint_waived[3, knee]
    assert not clean.unreliable[500]
    elsewhere = with_row(500, 1.01 * tol)
    assert elsewhere.verdict == "inconsistent" and elsewhere.failed == ["joint_rows"]


def test_the_full_dynamics_estimate_has_the_checks_joint_rows(humanoid, squat):
    # The estimate's full-dynamics equations J_c^T x = b (its own pass: rnea(q, v, a), frame
    # Jacobians, b = rnea - S^T tau) and the check's joint rows (one rnea with the wrenches as
    # external forces) are one set of rows: with the log's wrenches for x, the estimate's
    # equation residual J_c^T x - b is minus the check's residual, row by row, at every
    # sample tested (the base rows: the check's residual about the base is not reported).
    from wholebody.estimation import build_estimation_problem

    report = check_trajectory(humanoid, squat, FEET, CheckOptions(diagnose_causes=False))
    q, v, a, tau = squat.for_robot(humanoid)
    assert np.isfinite(report.joint_residual).all()
    for i in (0, 250, 999):
        problem = build_estimation_problem(humanoid, q[i], v[i], a[i], FEET, tau=tau[i])
        x = squat.contact_wrenches[i].ravel()  # (f, tau) per sole, world axes at its origin
        rows = problem.data_matrix @ x - problem.data_target
        np.testing.assert_allclose(rows[6:], -report.joint_residual[i], rtol=0, atol=TOL)
