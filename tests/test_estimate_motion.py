"""Estimation from motion alone: a log with ``q``, ``v`` (optionally ``a`` and ``tau``) and no
contact wrenches, through ``wholebody estimate`` and :func:`estimate_trajectory`.

The reference is the simulator: the shipped squat log (MuJoCo) and a single-support run were
logged with MuJoCo's contact wrenches, which the tests strip and then compare with what the
estimate recovers from the motion (and the joint torques). Also: the mode and the schedule
the report names, the output that checks with the same profile, a time stamp that is not
finite (flagged with its reason, the rest estimated), and logs without wrenches in every
format."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest

from wholebody import Trajectory
from wholebody.check.analysis import check_trajectory, estimate_trajectory
from wholebody.cli import main
from wholebody.errors import LogFormatError

from ._artefact_logs import ROOT
from .test_diagnosis import FEET

SHIPPED_LOG = ROOT / "data" / "humanoid_squat.npz"
PROFILE = str(ROOT / "models" / "humanoid.toml")


def _stripped(tmp_path: Path, drop: tuple[str, ...] = (), name: str = "bare.npz") -> Path:
    """The shipped log without its contact wrenches (and without the fields ``drop``)."""
    with np.load(SHIPPED_LOG, allow_pickle=False) as log:
        fields = {k: log[k] for k in log.files}
    for k in ("contact_names", "contact_wrenches", *drop):
        del fields[k]
    path = tmp_path / name
    np.savez(path, **fields)
    return path


@pytest.fixture(scope="module")
def logged() -> np.ndarray:
    """The shipped log's contact wrenches (N, 2, 6): MuJoCo's, left then right sole."""
    with np.load(SHIPPED_LOG, allow_pickle=False) as log:
        assert log["contact_names"].tolist() == ["left_sole", "right_sole"]
        return np.asarray(log["contact_wrenches"])


def test_the_stripped_squat_estimates_back_to_the_logged_wrenches(tmp_path, capsys, logged):
    out = tmp_path / "est.npz"
    assert main(["estimate", str(_stripped(tmp_path)), "--config", PROFILE, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "(full-dynamics mode: the joint torques and every equation of motion)" in text
    assert "schedule  from the kinematics (each contact's height above the ground at z = 0 m" in (
        text
    )
    assert "no logged wrenches" in text and "status    found 1000" in text
    assert "uncertain none" in text  # each foot identifiable from the joint torques
    assert "the log with the estimates as its contacts 'left_sole', 'right_sole'" in text
    est = Trajectory.load(out)
    assert est.contact_names == ("left_sole", "right_sole")
    assert est.contact_active is not None and est.contact_active.all()  # both feet down
    err = np.abs(est.contact_wrenches - logged)
    assert err[..., :3].max() <= 1e-6  # [N]
    assert err[..., 3:].max() <= 1e-6  # [N m]
    # The output is a log like any other: it checks with the same profile.
    assert main(["check", str(out), "--config", PROFILE, "--no-progress"]) == 0
    assert "verdict   consistent" in capsys.readouterr().out


def test_without_accelerations_they_are_differentiated_and_said(tmp_path, capsys, logged):
    out = tmp_path / "est.npz"
    bare = _stripped(tmp_path, drop=("a",))
    assert main(["estimate", str(bare), "--config", PROFILE, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "motion    accelerations differentiated from v (the log has none)" in text
    est = Trajectory.load(out)
    assert est.accelerations_estimated
    # Central differences of v at 1 kHz: the error is the differentiation's (largest at the
    # first samples, where the simulation starts from rest with a jump in v); 0.1 % of the
    # weight (644.5 N) on nine samples in ten.
    err = np.abs(est.contact_wrenches - logged).max(axis=(1, 2))
    assert np.median(err) <= 0.02 and np.percentile(err, 90) <= 0.65
    assert main(["check", str(out), "--config", PROFILE, "--no-progress"]) == 0
    assert "verdict   consistent" in capsys.readouterr().out


def test_without_torques_newton_euler_gives_the_total_and_says_the_split(tmp_path, capsys, logged):
    out = tmp_path / "est.npz"
    bare = _stripped(tmp_path, drop=("tau",))
    assert main(["estimate", str(bare), "--config", PROFILE, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "(Newton-Euler mode: no joint torques, the six equations of the whole body)" in text
    assert "status    underdetermined 1000" in text
    assert (
        "uncertain 'left_sole': its wrench is not determined by the equations on 1000 samples "
        "(the split between contacts comes from the regularisation" in text
    )
    est = Trajectory.load(out)
    assert est.metadata["estimation_unidentified"] == {"left_sole": 1000, "right_sole": 1000}
    # The total contact force is determined by the motion: it is MuJoCo's.
    total = est.contact_wrenches[..., :3].sum(axis=1) - logged[..., :3].sum(axis=1)
    assert np.abs(total).max() <= 1e-6
    # The split is the least-norm one, not MuJoCo's: the feet differ from the log by up to
    # about a newton (the squat is nearly symmetric).
    assert np.abs(est.contact_wrenches - logged)[..., :3].max() > 0.1
    assert main(["check", str(out), "--config", PROFILE, "--no-progress"]) == 0
    assert "verdict   consistent" in capsys.readouterr().out


def test_the_ground_is_where_declared(tmp_path, capsys, logged):
    """The whole log 1 m higher: the same estimate with ``--ground-height 1``; with the
    default ground no contact is near it, and the report says so."""
    with np.load(SHIPPED_LOG, allow_pickle=False) as log:
        fields = {k: log[k] for k in log.files if not k.startswith("contact_")}
    fields["q"] = fields["q"].copy()
    fields["q"][:, 2] += 1.0
    np.savez(tmp_path / "high.npz", **fields)
    out = tmp_path / "est.npz"
    args = ["estimate", str(tmp_path / "high.npz"), "--config", PROFILE, "-o", str(out)]
    assert main([*args, "--ground-height", "1"]) == 0
    assert "above the ground at z = 1 m" in capsys.readouterr().out
    np.testing.assert_allclose(Trajectory.load(out).contact_wrenches, logged, rtol=0, atol=1e-6)
    assert main(args) == 0
    assert (
        "schedule  every declared contact (no logged wrenches; no contact is within 0.005 m "
        "of the ground at z = 0 m on any sample: is the ground declared where it is?)"
    ) in capsys.readouterr().out


def test_a_swing_foot_is_in_the_air_by_the_kinematics(humanoid):
    """Single support (MuJoCo, 1 kHz), stripped: the kinematic schedule lifts the right foot,
    and where the estimate is found it is MuJoCo's to 1e-9 N, the swing foot's zero. The
    samples not found are those the logged wrenches leave unfound too (the same run with
    them: the force schedule)."""
    from .test_schedule_force import _run

    traj = _run("single_support", 1)
    bare = dataclasses.replace(traj, contact_names=(), contact_wrenches=np.zeros((len(traj), 0, 6)))
    est = estimate_trajectory(humanoid, bare, FEET)
    assert est.metadata["estimation_schedule"]["schedule"].startswith("from the kinematics")
    assert est.metadata["estimation_schedule"]["inactive_samples"]["right_sole"] > 0.25 * len(traj)
    with_forces = estimate_trajectory(humanoid, traj, FEET)
    assert with_forces.metadata["estimation_samples"] == est.metadata["estimation_samples"]
    found = np.ones(len(traj), dtype=bool)
    for rows in est.metadata["estimation_samples"].values():
        found[rows] = False
    assert found.sum() > 0.5 * len(traj)
    err = np.abs(est.contact_wrenches - traj.contact_wrenches)[found]
    assert err.max() <= 1e-9
    swing = found & ~est.contact_active[:, 1]
    assert swing.sum() > 100 and np.abs(est.contact_wrenches[swing, 1]).max() == 0.0


@pytest.mark.parametrize("stamp", [np.nan, np.inf])
@pytest.mark.parametrize("with_a", [True, False], ids=["a-logged", "a-differentiated"])
def test_a_time_stamp_that_is_not_finite_is_flagged_for_it(
    humanoid, with_a, stamp, tmp_path, capsys
):
    log = Trajectory.load(SHIPPED_LOG)
    time = log.time.copy()
    time[500] = stamp
    log = dataclasses.replace(log, time=time, a=log.a if with_a else None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said by the flags, not by numpy's warnings
        est = estimate_trajectory(humanoid, log, FEET)
    reason = "time stamp is not finite"
    neighbours = "a (differentiated from v) is not finite: a neighbouring sample's v or time"
    flagged = est.metadata["estimation_flagged"]
    if with_a:
        assert flagged == {reason: [500]}
    else:
        assert flagged[reason] == [500]
        (other,) = set(flagged) - {reason}
        assert other.startswith(neighbours) and flagged[other] == [499, 501]
    n = len(flagged[reason]) + (0 if with_a else 2)
    assert est.metadata["estimation_status"] == {"found": 1000 - n, "flagged": n}
    assert est.metadata["estimation_unidentified"] == {"left_sole": 0, "right_sole": 0}
    W = est.contact_wrenches[:, 2:]
    assert np.isnan(W[500]).all() and np.isfinite(np.delete(W, flagged[reason], axis=0)[:5]).all()
    if with_a:  # the rest is estimated as without the bad stamp
        np.testing.assert_allclose(
            np.delete(W, 500, axis=0),
            np.delete(log.contact_wrenches, 500, axis=0),
            rtol=0,
            atol=1e-6,
        )
    # The command names the sample and its reason.
    log.save(tmp_path / "nan.npz")
    out = str(tmp_path / "est.npz")
    assert main(["estimate", str(tmp_path / "nan.npz"), "--config", PROFILE, "-o", out]) == 0
    assert f"flagged   1 samples ({reason}): 500" in capsys.readouterr().out


@pytest.mark.parametrize("noise", [0.0, 0.5], ids=["exact", "tau-noise"])
@pytest.mark.parametrize("torques", [True, False], ids=["full-dynamics", "newton-euler"])
def test_a_wrong_schedule_is_flagged_with_the_contact_it_leaves_out(
    torques, noise, tmp_path, capsys
):
    """The squat with placeholder (zero) forces and a schedule that takes the right foot off
    on samples 200-399 while it stands and carries half the weight: those samples are
    flagged and name the foot (full-dynamics mode fits the equations in the least-squares
    sense and would call them found, 36 N m off the balance; Newton-Euler mode would put the
    whole weight on the left foot), also with joint torques noisy by 0.5 N m; the others are
    MuJoCo's wrenches. The right schedule on the same log flags nothing."""
    log = Trajectory.load(SHIPPED_LOG)
    rng = np.random.default_rng(3)
    tau = log.tau + rng.normal(scale=noise, size=log.tau.shape)
    log = dataclasses.replace(log, tau=tau)
    wrong = np.ones((len(log), 2), dtype=bool)
    wrong[200:400, 1] = False
    placeholder = np.zeros_like(log.contact_wrenches)
    bad = dataclasses.replace(log, contact_wrenches=placeholder, contact_active=wrong)
    args = ["estimate", str(tmp_path / "wrong.npz"), "--config", PROFILE, "-o"]
    bad.save(tmp_path / "wrong.npz")
    extra = [] if torques else ["--no-torques"]
    assert main([*args, str(tmp_path / "est.npz"), *extra]) == 0
    text = capsys.readouterr().out
    assert (
        "flagged   200 samples (the schedule leaves 'right_sole' without force while on the "
        "ground (within 0.005 m), and the motion needs it" in text
    )
    est = Trajectory.load(tmp_path / "est.npz")
    assert est.metadata["estimation_samples"]["flagged"] == list(range(200, 400))
    W = est.contact_wrenches[:, 2:]  # the estimates, beside the placeholders
    assert np.isnan(W[200:400]).all()
    if torques and not noise:  # each foot's wrench is determined: MuJoCo's elsewhere
        keep = np.r_[0:200, 400:1000]
        np.testing.assert_allclose(W[keep], log.contact_wrenches[keep], rtol=0, atol=1e-6)
    right = dataclasses.replace(bad, contact_active=np.ones_like(wrong))
    right.save(tmp_path / "right.npz")
    assert main([*args[:1], str(tmp_path / "right.npz"), *args[2:], str(tmp_path / "ok.npz")]) == 0
    assert "flagged" not in capsys.readouterr().out
    assert Trajectory.load(tmp_path / "ok.npz").metadata["estimation_status"] == {"found": 1000}


@pytest.mark.parametrize("torques", [True, False], ids=["full-dynamics", "newton-euler"])
def test_a_foot_on_the_ground_that_carries_nothing_is_no_conflict(humanoid, torques):
    """Control: the single support with the right foot hovering 0-2.3 mm above the floor
    with 0 N (MuJoCo), placeholder forces, the simulator's schedule (the right foot off
    while it carries nothing) and joint torques noisy by 0.05 N m: nothing is flagged,
    although the foot is within 5 mm of the ground and the noise leaves the least-squares fit
    off the balance by more than the verification limit, and some samples are infeasible
    for another cause (the same with the foot active)."""
    from .test_schedule_force import _run

    traj = _run("hover", 1)
    truth = traj.contact_wrenches[..., 2] > 0.0
    assert (~truth[:, 1]).sum() > 500  # the right foot carries nothing on 541 samples
    rng = np.random.default_rng(4)
    log = dataclasses.replace(
        traj,
        tau=traj.tau + rng.normal(scale=0.05, size=traj.tau.shape),
        contact_wrenches=np.zeros_like(traj.contact_wrenches),
        contact_active=truth,
    )
    est = estimate_trajectory(humanoid, log, FEET, use_torques=torques)
    assert est.metadata["estimation_schedule"]["schedule"].startswith("the log's")
    assert est.metadata["estimation_flagged"] == {}
    assert "flagged" not in est.metadata["estimation_status"]


@pytest.mark.parametrize("suffix", [".npz", ".h5", ".csv", ".parquet"])
def test_a_log_without_wrenches_reads_in_every_format(tmp_path, suffix, logged):
    if suffix == ".h5":
        pytest.importorskip("h5py")
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    log = Trajectory.load(_stripped(tmp_path))
    assert log.contact_names == () and log.contact_wrenches.shape == (1000, 0, 6)
    log.save(tmp_path / f"bare{suffix}")
    back = Trajectory.load(tmp_path / f"bare{suffix}")
    assert back.contact_names == () and back.contact_wrenches.shape == (1000, 0, 6)
    np.testing.assert_array_equal(back.q, log.q)
    np.testing.assert_array_equal(back.tau, log.tau)


def test_contact_names_without_wrenches_are_refused(tmp_path):
    with np.load(SHIPPED_LOG, allow_pickle=False) as log:
        fields = {k: log[k] for k in log.files if k != "contact_wrenches"}
    np.savez(tmp_path / "names.npz", **fields)
    with pytest.raises(LogFormatError, match=r"missing field\(s\) \['contact_wrenches'\]"):
        Trajectory.load(tmp_path / "names.npz")


def test_checking_a_log_without_wrenches_says_there_are_none(tmp_path, humanoid):
    log = Trajectory.load(_stripped(tmp_path))
    declared = r"declared contacts \['left_sole', 'right_sole'\] have no wrenches in the log"
    with pytest.raises(LogFormatError, match=declared):
        check_trajectory(humanoid, log, FEET)
