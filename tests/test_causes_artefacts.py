"""Artefacts of simulators and recorders, injected into clean simulated logs (the shipped
humanoid at 1 kHz and 500 Hz, with and without logged accelerations, and G1 from
example-robot-data): each is named with its fitted value within its interval, and clean logs
give no finding.

- links without ``<inertial>`` given 1 kg each (PyBullet): the contact forces of the heavier
  robot are computed from physics (each point mass's ``m (a - g)`` added to the wrench the
  ground must supply), not fitted;
- normal-only contact forces (PhysX-style): the tangential part dropped in the ground
  normal's axes;
- a held stream: the wrench topic ends early and its last value is repeated.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pinocchio as pin
import pytest

import wholebody as wb
from wholebody.check.analysis import check_trajectory
from wholebody.errors import ModelWarning
from wholebody.robot.validation import leaf_links, links_without_inertia, mimic_joints

from ._artefact_logs import ROOT, cut, fine_run
from .test_diagnosis import FEET

RATES = [pytest.param(2, id="1kHz"), pytest.param(4, id="500Hz")]
ACC = [pytest.param(True, id="a"), pytest.param(False, id="no-a")]


@pytest.fixture(scope="module")
def fine():
    pytest.importorskip("mujoco")
    return fine_run()


def _log(fine, every, logged_a):
    traj = cut(fine, every)
    return traj if logged_a else dataclasses.replace(traj, a=None)


def _with_link_masses(robot, traj, names, mass, contact=0):
    """The log of the same motion that a simulator giving ``mass`` [kg] to each link origin
    writes: the ground supplies ``m (a_i - g)`` more, about the world origin, moved to contact
    ``contact``; the joints' torques carry the masses too (``J_i^T m (a_i - g)``, less what
    contact ``contact``'s extra wrench supplies: ``J_c^T dW``)."""
    q, v, a, _ = traj.for_robot(robot)
    if a is None:
        a = np.gradient(v, traj.time, axis=0)
    model, data = robot.model, robot.model.createData()
    ids = [model.getFrameId(n, pin.FrameType.BODY) for n in names]
    frame = traj.contact_names[contact]
    c = model.getFrameId(frame)
    W = traj.contact_wrenches.copy()
    dtau = np.zeros((len(q), model.nv))
    g = robot.gravity_vector
    lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    for i in range(len(q)):
        pin.forwardKinematics(model, data, q[i], v[i], a[i])
        pin.computeJointJacobians(model, data, q[i])
        F, M = np.zeros(3), np.zeros(3)
        for fid in ids:
            pin.updateFramePlacement(model, data, fid)
            p = data.oMf[fid].translation
            acc = pin.getFrameClassicalAcceleration(model, data, fid, lwa).linear
            f = mass * (acc - g)
            F += f
            M += np.cross(p, f)
            dtau[i] += pin.getFrameJacobian(model, data, fid, lwa)[:3].T @ f
        origin = robot.frame_position(q[i], frame)
        dW = np.concatenate([F, M - np.cross(origin, F)])
        W[i, contact] += dW
        pin.updateFramePlacement(model, data, c)
        dtau[i] -= pin.getFrameJacobian(model, data, c, lwa).T @ dW
    if traj.tau is None:
        return dataclasses.replace(traj, contact_wrenches=W)
    column = {n: j for j, n in enumerate(robot.joint_names)}
    tau = traj.tau + dtau[:, 6:][:, [column[n] for n in traj.joint_names]]
    return dataclasses.replace(traj, contact_wrenches=W, tau=tau)


def _diagnose(robot, traj, W=None, contacts=FEET):
    if W is not None:
        traj = dataclasses.replace(traj, contact_wrenches=W)
    report = check_trajectory(robot, traj, contacts)
    assert report.verdict == "inconsistent", report.format_summary()
    return report.diagnosis[0], report


@pytest.mark.parametrize("logged_a", ACC)
@pytest.mark.parametrize("every", RATES)
def test_links_without_inertia_given_1_kg(humanoid, fine, every, logged_a):
    traj = _log(fine, every, logged_a)
    names = humanoid.links_without_inertia
    assert names == ["left_hand", "left_sole", "right_hand", "right_sole"]
    best, report = _diagnose(humanoid, _with_link_masses(humanoid, traj, names, 1.0))
    assert best.cause == "inertialess_links", report.format_summary()
    se = best.uncertainty["link_mass"]
    assert abs(best.parameters["link_mass"] - 1.0) <= max(3 * se, 0.02), best.message
    assert best.parameters["total_mass"] == pytest.approx(4.0, abs=max(12 * se, 0.08))
    assert best.parameters["links"] == names and "PyBullet" in best.message


@pytest.mark.parametrize("logged_a", ACC)
@pytest.mark.parametrize("every", RATES)
def test_normal_only_forces_in_the_ground_normal_axes(humanoid, fine, every, logged_a):
    traj = _log(fine, every, logged_a)
    W = traj.contact_wrenches.copy()
    W[..., :2] = 0.0  # the tangential (friction) force along the ground, world z up
    W[..., 5] = 0.0  # and the moment about the normal
    best, report = _diagnose(humanoid, traj, W)
    assert best.cause == "normal_force_only", report.format_summary()
    assert best.parameters["axes"] == "ground" and best.explained > 0.95


@pytest.mark.parametrize("logged_a", ACC)
def test_zero_friction_does_not_excuse_another_fault(humanoid, fine, logged_a):
    # Failing direction of the structural evidence that normal-only forces carry: the same
    # normal-only log with a force-sensor gain of 1.5 is named a gain (the zero friction
    # explains a few newtons of a residual of hundreds), never "normal force only".
    traj = _log(fine, 2, logged_a)
    W = traj.contact_wrenches.copy()
    W[..., :2] = 0.0
    W[..., 5] = 0.0
    best, report = _diagnose(humanoid, traj, 1.5 * W)
    assert best.cause != "normal_force_only", report.format_summary()
    only = [f for f in report.diagnosis if f.cause == "normal_force_only"]
    assert not only or only[0].structural_evidence == 0.0


def _squat(every, logged_a):
    from wholebody.trajectory import Trajectory

    squat = Trajectory.load(ROOT / "data" / "humanoid_squat.npz")  # 2 s at 500 Hz
    if every == 2:  # 1 kHz: the same motion resampled (forces and states together)
        t = np.arange(squat.time[0], squat.time[-1], 1e-3)
        squat = _resampled(squat, t)
    return squat if logged_a else dataclasses.replace(squat, a=None)


def _held_from(W, stop):
    """The wrench topic ends at row ``stop``: its last value is held to the log's end."""
    W = W.copy()
    W[stop:] = W[stop - 1]
    return W


@pytest.mark.parametrize("logged_a", ACC)
@pytest.mark.parametrize("every", RATES)
def test_a_held_stream_is_flagged_not_a_missing_force(humanoid, every, logged_a):
    """Held samples are flagged with the reason (not evidence) and the verdict rests on the
    rest; cropped to where the stream ends (``crop = true``), the same verdict, nothing held."""
    traj = _squat(every, logged_a)
    N = len(traj.time)
    n = N // 5  # the wrench topic ends 0.4 s early; its last value is held
    W = _held_from(traj.contact_wrenches, N - n)
    # At 1 % m g: the log is cut from a finer run (not the engine's own samples) and keeps
    # its simulator's name, whose floor it does not reach.
    physical = wb.CheckOptions(preset="physical")
    report = check_trajectory(
        humanoid, dataclasses.replace(traj, contact_wrenches=W), FEET, physical
    )
    held = np.flatnonzero(report.flagged)
    assert held.min() >= N - n and len(held) >= n - 2, report.format_summary()
    assert all("held" in report.reasons[int(i)] for i in held)
    assert report.verdict in ("consistent", "consistent_except_unreliable"), report.format_summary()
    assert not any(f.cause == "missing_force" for f in report.diagnosis)
    (note,) = [x for x in report.notes if x.cause == "held_stream"]
    assert set(note.parameters["flagged"]) == set(held.tolist())
    m = N - n
    cropped = dataclasses.replace(
        traj,
        time=traj.time[:m],
        q=traj.q[:m],
        v=traj.v[:m],
        a=None if traj.a is None else traj.a[:m],
        tau=None,
        contact_wrenches=W[:m],
    )
    report = check_trajectory(humanoid, cropped, FEET, physical)
    assert not report.flagged.any(), report.format_summary()
    assert report.verdict in ("consistent", "consistent_except_unreliable")


@pytest.mark.parametrize("logged_a", ACC)
def test_a_held_stream_does_not_excuse_a_fault(humanoid, logged_a):
    """Failing direction: a gain x1.2 on every reading, the stream held for its last 20 %:
    the held samples are flagged, the rest is still inconsistent and names the gain."""
    traj = _squat(4, logged_a)
    N = len(traj.time)
    W = _held_from(1.2 * traj.contact_wrenches, N - N // 5)
    report = check_trajectory(humanoid, dataclasses.replace(traj, contact_wrenches=W), FEET)
    assert report.flagged[N - N // 5 + 2 :].all()
    assert report.verdict == "inconsistent", report.format_summary()
    best = report.diagnosis[0]
    causes = {best.cause, *best.parameters.get("alternative_causes", [])}
    assert causes & {"force_gain", "mass_error"}, report.format_summary()


def test_a_mostly_held_stream_is_inconclusive(humanoid):
    """Held for 70 % of the log: too few samples remain for a verdict (inconclusive), never
    a missing force."""
    traj = _squat(4, True)
    N = len(traj.time)
    W = _held_from(traj.contact_wrenches, int(0.3 * N))
    report = check_trajectory(humanoid, dataclasses.replace(traj, contact_wrenches=W), FEET)
    assert report.verdict == "inconclusive", report.format_summary()
    assert report.flagged.sum() >= 0.69 * N
    assert not any(f.cause == "missing_force" for f in report.diagnosis)


def test_a_repeated_reading_the_balance_accepts_is_not_flagged(humanoid):
    """A reading repeated while the residual does not change (a still robot) is not flagged."""
    from wholebody.check.evidence import held_rows

    same = np.zeros((100, 1), dtype=bool)
    same[10:60, 0] = True
    r = np.zeros((100, 3))
    r[:, 0] = 1e-3 * np.sin(np.arange(100))  # noise well below the tolerance
    assert held_rows(same, r, np.arange(100) * 2e-3, ["left_sole"], 6.4) == {}
    r[10:60, 0] += np.linspace(0.0, 5.0, 50)  # the balance needs a change of 5 N
    out = held_rows(same, r, np.arange(100) * 2e-3, ["left_sole"], 6.4)
    assert sorted(out) == list(range(10, 60)) and "left_sole" in out[10]


def _resampled(traj, t):
    def interp(x):
        flat = x.reshape(len(traj.time), -1)
        out = np.stack([np.interp(t, traj.time, c) for c in flat.T], axis=1)
        return out.reshape((len(t),) + x.shape[1:])

    q = interp(traj.q)
    q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    return dataclasses.replace(
        traj,
        time=t,
        q=q,
        v=interp(traj.v),
        a=interp(traj.a),
        tau=None if traj.tau is None else interp(traj.tau),
        contact_wrenches=interp(traj.contact_wrenches),
    )


@pytest.mark.parametrize("logged_a", ACC)
@pytest.mark.parametrize("every", RATES)
def test_clean_logs_raise_no_finding_and_no_note(humanoid, fine, every, logged_a):
    report = check_trajectory(humanoid, _log(fine, every, logged_a), FEET)
    assert report.diagnosis == [] and report.notes == [], report.format_summary()


def test_held_stream_within_tolerance_is_a_note(humanoid, fine):
    traj = cut(fine, 2)
    W = traj.contact_wrenches.copy()
    W[-60:] = W[-61]
    report = check_trajectory(humanoid, dataclasses.replace(traj, contact_wrenches=W), FEET)
    assert report.verdict == "consistent"
    (note,) = [n for n in report.notes if n.cause == "held_stream"]
    assert note.parameters["note"] and len(note.parameters["flagged"]) == 60


# --- third-party robots ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def g1_standing():
    pytest.importorskip("mujoco")
    try:
        wb.load("g1")
    except wb.errors.MissingDependencyError:
        pytest.skip("example-robot-data is not installed")
    sys.path.insert(0, str(ROOT / "examples"))
    import mujoco_any_humanoid

    build, traj, report = mujoco_any_humanoid.stand("g1", 0.3)
    return build.robot, list(build.contacts), traj


def test_g1_links_without_inertia_and_normal_only(g1_standing):
    robot, contacts, traj = g1_standing
    names = robot.links_without_inertia
    assert sorted(names) == ["d435_link", "imu_in_pelvis", "imu_in_torso", "mid360_link"]
    best, report = _diagnose(robot, _with_link_masses(robot, traj, names, 1.0), None, contacts)
    assert best.cause == "inertialess_links", report.format_summary()
    assert best.parameters["total_mass"] == pytest.approx(4.0, abs=0.08)
    W = traj.contact_wrenches.copy()
    W[..., :2] = 0.0
    W[..., 5] = 0.0
    best, report = _diagnose(robot, traj, W, contacts)
    assert best.cause == "normal_force_only", report.format_summary()


def _inertialess_children(text):
    """Links of URDF ``text`` without ``<inertial>`` that are a joint's child (file order),
    read here from the XML."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(text)
    children = {j.find("child").get("link") for j in root.findall("joint")}
    return [
        link.get("name")
        for link in root.findall("link")
        if link.find("inertial") is None and link.get("name") in children
    ]


def test_inertialess_links_read_at_load_the_file_gone(tmp_path):
    """The links without ``<inertial>`` are read when the URDF is loaded: with the file renamed
    after loading, the shipped squat log with 1 kg per such link (added by physics, PyBullet's
    default) is still explained by them, fitted within 0.02 kg. They survive pickling (check
    workers) and the simulators' repaired copies (``with_model``); a robot loaded from text has
    them too. Failing direction: the same model without its file's word (``from_model``) has
    none, and the log is then not explained by them."""
    import pickle

    from wholebody.models import models_dir

    text = (models_dir() / "humanoid.urdf").read_text()
    expected = _inertialess_children(text)
    assert expected == ["left_hand", "left_sole", "right_hand", "right_sole"]
    path = tmp_path / "robot.urdf"
    path.write_text(text)
    with pytest.warns(ModelWarning, match="no <inertial>"):
        robot = wb.Robot.from_urdf(path, validate="warn")
    path.rename(tmp_path / "renamed.urdf")
    assert robot.links_without_inertia == robot.links_without_inertia == expected
    traj = wb.Trajectory.load(ROOT / "data" / "humanoid_squat.npz")
    heavy = _with_link_masses(robot, traj, expected, 1.0)
    best, report = _diagnose(robot, heavy)
    assert best.cause == "inertialess_links", report.format_summary()
    assert best.parameters["links"] == expected
    assert abs(best.parameters["link_mass"] - 1.0) <= 0.02, best.message
    assert pickle.loads(pickle.dumps(robot)).links_without_inertia == expected
    assert robot.with_model(robot.model.copy()).links_without_inertia == expected
    with pytest.warns(ModelWarning, match="no <inertial>"):
        assert wb.Robot.from_urdf_string(text, validate="warn").links_without_inertia == expected
    bare = wb.Robot.from_model(robot.model)
    assert bare.links_without_inertia == []
    best, report = _diagnose(bare, heavy)
    assert best.cause != "inertialess_links", report.format_summary()
    assert all(f.cause != "inertialess_links" for f in report.diagnosis)


def test_load_time_notes(recwarn):
    import xml.etree.ElementTree as ET

    urdf = ET.fromstring(
        """<robot name="r">
          <link name="base"><inertial><mass value="1"/>
            <inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
          <link name="sensor"/>
          <link name="finger"><inertial><mass value="1"/>
            <inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
          <link name="finger2"><inertial><mass value="1"/>
            <inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
          <joint name="s" type="fixed"><parent link="base"/><child link="sensor"/></joint>
          <joint name="f" type="revolute"><parent link="base"/><child link="finger"/>
            <limit lower="0" upper="1" effort="1" velocity="1"/></joint>
          <joint name="f2" type="fixed"><parent link="base"/><child link="finger2"/>
            <mimic joint="f"/></joint>
          <transmission name="t"><joint name="f"><mimic joint="x"/></joint></transmission>
        </robot>"""
    )
    assert links_without_inertia(urdf) == ["sensor"]
    assert leaf_links(urdf) == {"sensor", "finger", "finger2"}
    assert mimic_joints(urdf) == []  # a fixed joint's <mimic> and a transmission's are none


def test_talos_loads_without_a_false_mimic_warning():
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            wb.load("talos")
        except wb.errors.MissingDependencyError:
            pytest.skip("example-robot-data is not installed")
    assert not [w for w in caught if "mimic" in str(w.message)]


def test_g1_warns_of_its_links_without_inertia():
    from wholebody.errors import ModelWarning

    with pytest.warns(ModelWarning, match=r"4 links have no <inertial>.*pybullet: 1 kg"):
        try:
            wb.load("g1")
        except wb.errors.MissingDependencyError:
            pytest.skip("example-robot-data is not installed")


@pytest.fixture(scope="module", params=["g1", "talos"])
def third_party(request):
    pytest.importorskip("mujoco")
    try:
        wb.load(request.param)
    except wb.errors.MissingDependencyError:
        pytest.skip("example-robot-data is not installed")
    sys.path.insert(0, str(ROOT / "examples"))
    import mujoco_any_humanoid

    build, traj, report = mujoco_any_humanoid.stand(request.param, 0.3)
    assert report.verdict == "consistent" and report.notes == [], report.format_summary()
    return build.robot, list(build.contacts), traj


def test_third_party_artefacts_are_named(third_party):
    """On G1 and Talos standing in MuJoCo: a one-step force lag (a note, or the cause),
    normal-only forces, a held stream."""
    robot, contacts, traj = third_party
    W0 = traj.contact_wrenches
    dt = float(np.median(np.diff(traj.time)))
    late = dataclasses.replace(traj, contact_wrenches=W0[np.r_[0, np.arange(len(W0) - 1)]])
    report = check_trajectory(robot, late, contacts)
    found = report.diagnosis[0] if report.diagnosis else report.notes[0]
    assert found.cause == "time_offset", report.format_summary()
    assert found.parameters["lag_seconds"] == pytest.approx(dt, abs=0.05 * dt)
    W = W0.copy()
    W[..., :2] = 0.0
    W[..., 5] = 0.0
    best, report = _diagnose(robot, traj, W, contacts)
    assert best.cause == "normal_force_only", report.format_summary()


def test_a_cop_just_outside_the_sole_gets_a_diagnosis_line(humanoid):
    """The left sole declared 0.24 mm shorter than the CoP's furthest excursion along x (the
    balance itself within tolerance): inconsistent, and the diagnosis says which contact,
    how far (within 1 um) and when."""
    from wholebody.contacts import SurfaceContact

    traj = _squat(4, True)
    clean = check_trajectory(humanoid, traj, FEET)
    assert not any(f.cause == "cone_violation" for f in clean.diagnosis)
    x = np.abs(clean.cop[:, 0, 0] - FEET[0].center[0])
    half = float(np.nanmax(x)) - 0.24e-3
    outside = np.flatnonzero(x > half)
    small = [dataclasses.replace(FEET[0], half_length=half), FEET[1]]
    assert isinstance(small[0], SurfaceContact)
    report = check_trajectory(humanoid, traj, small)
    assert report.verdict == "inconsistent" and not report.over_tolerance.any()
    (line,) = [f for f in report.diagnosis if f.cause == "cone_violation"]
    left = line.parameters["contacts"]["left_sole"]
    # Counted beyond the cone's slack (1e-4 m g): among the samples outside the sole.
    assert 0 < left["samples"] <= len(outside) and "CoP outside the sole" in left["most_violated"]
    assert left["cop_beyond_sole"] == pytest.approx(0.24e-3, abs=1e-6)
    t = traj.time[outside]
    assert all(t[0] <= a <= b <= t[-1] for a, b in left["windows"])
    assert "right_sole" not in line.parameters["contacts"]
    assert "'left_sole'" in line.message and "0.24 mm" in line.message
