"""MJCF robots, the MuJoCo bridge on any humanoid, and the recorder.

References: the URDF robot (Pinocchio's URDF parser) for the MJCF robot; closed-form
wrenches for the recorder (a box resting on the floor: total contact force = weight, at a
known centre of pressure); Pinocchio's Newton-Euler balance for the recorded humanoid logs.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

import wholebody as wb
from wholebody.check import CheckOptions
from wholebody.contacts import SurfaceContact
from wholebody.errors import (
    InvalidArgumentError,
    InvalidInertiaError,
    MJCFParseError,
    ModelError,
    ModelFileNotFoundError,
    ModelWarning,
)

mujoco = pytest.importorskip("mujoco")
from wholebody import Robot  # noqa: E402

robot_from_mjcf = Robot.from_mjcf
from wholebody.sim.mujoco import mujoco_spec_for_robot  # noqa: E402
from wholebody.sim.mujoco_recorder import MujocoRecorder  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
HUMANOIDS = ["talos", "icub", "romeo", "g1", "simple_humanoid", "human"]
RESIDUAL_TOL = 1e-9  # N and N m


@pytest.fixture(scope="module")
def stand_example():
    pytest.importorskip("cmeel")  # example-robot-data ships through cmeel
    sys.path.insert(0, str(EXAMPLES))
    try:
        import mujoco_any_humanoid
    finally:
        sys.path.remove(str(EXAMPLES))
    return mujoco_any_humanoid


# --- MJCF --------------------------------------------------------------------------------


def _mjcf_from_urdf(urdf: str, tmp_path: Path) -> Path:
    """MJCF written by MuJoCo itself from the URDF (fixed links merged, free joint added).

    MuJoCo's writer prints 6 significant digits: the body poses, inertias and joint axes are
    written again from the compiled model's doubles so that the file is exact.
    """
    import xml.etree.ElementTree as ET

    spec = mujoco.MjSpec.from_file(urdf)
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.worldbody.first_body().add_freejoint()
    m = spec.compile()
    root = ET.fromstring(spec.to_xml())

    def text(x) -> str:
        return " ".join(repr(float(v)) for v in x)

    for body in root.iter("body"):
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, body.get("name"))
        body.set("pos", text(m.body_pos[b]))
        body.set("quat", text(m.body_quat[b]))
        inertial = body.find("inertial")
        assert inertial is not None
        inertial.set("pos", text(m.body_ipos[b]))
        inertial.set("quat", text(m.body_iquat[b]))
        inertial.set("mass", repr(float(m.body_mass[b])))
        inertial.set("diaginertia", text(m.body_inertia[b]))
        for joint in body.findall("joint"):
            if joint.get("name"):
                j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, joint.get("name"))
                joint.set("axis", text(m.jnt_axis[j]))
                joint.set("pos", text(m.jnt_pos[j]))
    path = tmp_path / "robot.xml"
    path.write_text(ET.tostring(root, encoding="unicode"))
    return path


def test_mjcf_robot_has_the_urdf_robots_dynamics(humanoid, tmp_path):
    robot = robot_from_mjcf(_mjcf_from_urdf(humanoid.source, tmp_path), name="from_mjcf")
    assert robot.has_floating_base and robot.name == "from_mjcf"
    assert robot.nv == humanoid.nv
    assert sorted(robot.joint_names) == sorted(humanoid.joint_names)
    assert robot.mass == pytest.approx(humanoid.mass, rel=0, abs=1e-12)
    # Joint order may differ: map columns by name.
    perm = [robot.joint_names.index(n) for n in humanoid.joint_names]
    vcols = np.r_[0:6, 6 + np.array(perm)]
    rng = np.random.default_rng(3)
    for _ in range(10):
        q = humanoid.random_configuration(rng)
        v = rng.normal(size=humanoid.nv)
        q_m = np.r_[q[:7], np.zeros(len(perm))]
        q_m[7 + np.array(perm)] = q[7:]
        v_m = np.zeros(robot.nv)
        v_m[vcols] = v
        M, M_m = humanoid.mass_matrix(q), robot.mass_matrix(q_m)
        assert_allclose(M_m[np.ix_(vcols, vcols)], M, rtol=0, atol=1e-9)
        assert_allclose(
            robot.nonlinear_effects(q_m, v_m)[vcols],
            humanoid.nonlinear_effects(q, v),
            rtol=0,
            atol=1e-9,
        )


def test_mjcf_errors_name_the_problem(tmp_path):
    with pytest.raises(ModelFileNotFoundError, match="MJCF file not found"):
        robot_from_mjcf(tmp_path / "nope.xml")
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody>")
    with pytest.raises(MJCFParseError, match="not well-formed XML"):
        robot_from_mjcf(bad)
    urdf = tmp_path / "robot.xml"
    urdf.write_text("<robot name='r'/>")
    with pytest.raises(MJCFParseError, match="root element is <robot>, expected <mujoco>"):
        robot_from_mjcf(urdf)


def test_mjcf_zero_inertia_is_refused_by_validate(tmp_path):
    path = tmp_path / "bad_inertia.xml"
    path.write_text(
        "<mujoco><worldbody><body name='b'><freejoint/>"
        "<inertial pos='0 0 0' mass='1' diaginertia='1 0.1 0.1'/></body></worldbody></mujoco>"
    )
    with pytest.raises(InvalidInertiaError, match="triangle inequality"):
        robot_from_mjcf(path)
    with pytest.warns(ModelWarning, match="triangle inequality"):
        robot_from_mjcf(path, validate="warn")


@pytest.mark.slow  # tries a download: skips without a network
def test_menagerie_humanoid_loads_or_skips():
    menagerie = pytest.importorskip("mujoco_menagerie")
    try:  # the package downloads the model at first use: no internet, no test
        folder = menagerie.get("unitree_g1").path(progress=None)
    except (menagerie.MenagerieError, OSError) as exc:
        pytest.skip(f"Menagerie model not available: {exc}")
    robot = robot_from_mjcf(folder / "g1.xml", validate="warn")
    assert robot.has_floating_base and robot.mass > 20
    assert "left_knee_joint" in robot.joint_names


# --- bridge ------------------------------------------------------------------------------


def test_bridge_refuses_bad_inertia_by_default_and_names_the_bodies(stand_example):
    robot, contacts, _ = stand_example.load_standing_robot("romeo")
    with pytest.raises(InvalidInertiaError, match="RShoulderYawLink.*triangle inequality"):
        mujoco_spec_for_robot(robot, contacts)


def test_repaired_inertias_are_the_same_in_mujoco_and_in_the_robot(stand_example):
    # The repaired robot's mass matrix equals MuJoCo's (reference: MuJoCo's own crba).
    from wholebody.sim.mujoco import MujocoStateMap, mujoco_mass_matrix

    robot, contacts, _ = stand_example.load_standing_robot("romeo")
    with pytest.warns(ModelWarning, match="inertias repaired"):
        build = mujoco_spec_for_robot(robot, contacts, inertia="repair")
    assert {r.body for r in build.repairs} == {"RShoulderYawLink", "RElbowYawLink"}
    for r in build.repairs:
        d = r.moments_after
        assert d[0] + d[1] >= d[2] and d.sum() > 0
    m = build.compile()
    data = mujoco.MjData(m)
    smap = MujocoStateMap(build.robot, m)
    q = build.robot.random_configuration(1)
    data.qpos[:] = 0
    data.qpos[:3], data.qpos[3:7] = q[:3], [q[6], q[3], q[4], q[5]]
    data.qpos[smap.joint_qpos_indices] = q[7:]
    # The inverse conversion agrees with the state written by hand (quaternion w-x-y-z).
    assert_allclose(smap.qpos(q), data.qpos, rtol=0, atol=0)
    mujoco.mj_forward(m, data)
    T = smap.velocity_map(data.qpos)
    M_mj = T.T @ mujoco_mass_matrix(m, data) @ T
    base = slice(0, 6)  # joint rows carry MuJoCo's armature; the base rows do not
    assert_allclose(M_mj[base], build.robot.mass_matrix(q)[base], rtol=0, atol=1e-9)
    assert not np.allclose(robot.mass_matrix(q)[base], M_mj[base], rtol=0, atol=1e-9)


@pytest.mark.parametrize("center", [(0.0, 0.0), (0.03, -0.01)])
def test_bridge_adds_sole_boxes_and_sites_at_the_sole_frames(stand_example, center):
    robot, contacts, _ = stand_example.load_standing_robot("talos")
    # An asymmetric sole: the box is centred on the rectangle, not on the frame origin.
    contacts = [dataclasses.replace(c, center=center) for c in contacts]
    build = mujoco_spec_for_robot(robot, contacts, other_collisions=False)
    m = build.compile()
    d = mujoco.MjData(m)
    q = robot.random_configuration(7)
    from wholebody.sim.mujoco import MujocoStateMap

    smap = MujocoStateMap(robot, m)
    d.qpos[:3], d.qpos[3:7] = q[:3], [q[6], q[3], q[4], q[5]]
    d.qpos[smap.joint_qpos_indices] = q[7:]
    mujoco.mj_forward(m, d)
    for c in contacts:
        site = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, build.contact_sites[c.name])
        pose = robot.placements(q, c.frame).se3()
        assert_allclose(d.site_xpos[site], pose.translation, rtol=0, atol=1e-12)
        assert_allclose(d.site_xmat[site].reshape(3, 3), pose.rotation, rtol=0, atol=1e-12)
        geom = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, build.contact_geoms[c.name])
        assert_allclose(m.geom_size[geom], [0.10, 0.05, 0.005], rtol=0, atol=1e-15)
        # The box's bottom face is the sole plane: its centre is half a thickness above the
        # rectangle's centre.
        R = pose.rotation
        box_centre = pose.translation + R[:, 0] * center[0] + R[:, 1] * center[1] + R[:, 2] * 0.005
        assert_allclose(d.geom_xpos[geom], box_centre, rtol=0, atol=1e-12)
        # MuJoCo merged the massless sole link into the ankle: the site's body is the ankle.
        body = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, m.site_bodyid[site])
        assert body == ("leg_left_6_link" if "left" in c.name else "leg_right_6_link")
    collide = (m.geom_contype != 0) | (m.geom_conaffinity != 0)
    names = {mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) for g in np.flatnonzero(collide)}
    assert names == {"wb_sole_left_sole_link", "wb_sole_right_sole_link", "wb_floor"}
    # Talos' collision meshes use package:// paths: stripped and listed.
    assert any("leg_left_6_link" in s and "package://" in s for s in build.stripped)


def test_contact_without_collision_geometry_warns(stand_example):
    robot, contacts, _ = stand_example.load_standing_robot("talos")
    build = mujoco_spec_for_robot(robot, contacts, contact_geoms=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build.compile()
    messages = sorted(str(w.message) for w in caught if issubclass(w.category, ModelWarning))
    assert len(messages) == 2  # one per sole, each naming its contact
    for message, side in zip(messages, ("left", "right"), strict=True):
        assert f"contact '{side}_sole_link'" in message and "no collision geometry" in message


def test_bridge_options_are_checked(humanoid):
    with pytest.raises(
        InvalidArgumentError, match="meshes must be 'strip' or 'resolve', got 'keep'"
    ):
        mujoco_spec_for_robot(humanoid, meshes="keep")
    with pytest.raises(InvalidArgumentError, match="inertia must be 'raise' or 'repair'"):
        mujoco_spec_for_robot(humanoid, inertia="fix")


def test_resolved_meshes_that_mujoco_cannot_read_are_stripped(stand_example):
    # simple_humanoid's package:// mesh resolves to an ASCII STL, which MuJoCo cannot decode.
    robot, contacts, _ = stand_example.load_standing_robot("simple_humanoid")
    build = mujoco_spec_for_robot(robot, contacts, meshes="resolve")
    assert build.stripped == (
        "BODY: package://example-robot-data/robots/simple_humanoid_description"
        "/meshes/box.stl (ASCII STL)",
    )
    assert build.compile().nmesh == 0


# --- recorder ----------------------------------------------------------------------------


def test_recorder_finds_contacts_by_site_or_refuses_with_the_fix(humanoid):
    m = mujoco_spec_for_robot(humanoid).compile()  # no contacts: no sites
    sole = SurfaceContact("left_sole", half_length=0.12, half_width=0.05, mu=1.0)
    with pytest.raises(ModelError, match="no site 'wb_contact_left_sole'.*mujoco_spec_for_robot"):
        MujocoRecorder(humanoid, m, [sole])


def test_recorded_wrench_of_a_standing_robot_is_its_weight_at_rest(stand_example):
    # Closed form at rest (after settling): sum of contact forces = m g, and the total moment
    # about the CoM is zero, so the CoP of the two soles lies under the CoM.
    build, traj, report = stand_example.stand("g1", 0.6)
    robot = build.robot
    W = traj.contact_wrenches[-1]
    assert_allclose(W[:, :3].sum(axis=0), [0, 0, robot.weight], rtol=0, atol=0.02 * robot.weight)
    assert traj.tau is not None and traj.tau.shape == (len(traj), robot.nv - 6)
    assert traj.joint_names == tuple(robot.joint_names)
    assert traj.a is not None and not traj.accelerations_estimated


@pytest.mark.parametrize("name", HUMANOIDS)
def test_humanoids_stand_in_mujoco_and_their_logs_check_consistent(stand_example, name):
    build, traj, report = stand_example.stand(name, 0.3)
    _check_standing(build, traj, report)


@pytest.mark.slow
@pytest.mark.parametrize("name", HUMANOIDS)
def test_humanoids_stand_two_seconds(stand_example, name):
    build, traj, report = stand_example.stand(name, 2.0)
    _check_standing(build, traj, report)


def _check_standing(build, traj, report):
    robot = build.robot
    assert report.n_checked == len(traj)
    assert np.all(np.isfinite(report.force_norm)) and np.all(np.isfinite(report.moment_norm))
    assert report.force_norm.max() <= RESIDUAL_TOL
    assert report.moment_norm.max() <= RESIDUAL_TOL
    assert report.consistent
    assert not traj.metadata["undeclared_contact_force_N"]
    fz = traj.contact_wrenches[-1, :, 2]
    assert np.all(fz > 0.1 * robot.weight)  # standing on both soles at the end
    assert abs(fz.sum() - robot.weight) < 0.05 * robot.weight


def test_recorder_without_forward_pass_is_inconsistent_after_a_step(stand_example):
    # The pitfall the recorder removes: after mj_step, qacc and the contact forces belong to
    # the previous state. Reading them with forward=False gives residuals far above 1e-9 N.
    robot, contacts, _ = stand_example.load_standing_robot("g1")
    build = mujoco_spec_for_robot(robot, contacts, other_collisions=False)
    m = build.compile()
    d = mujoco.MjData(m)
    rec = MujocoRecorder.from_build(build, m, forward=False)
    d.qpos[2] = 0.8
    for _ in range(200):
        mujoco.mj_step(m, d)
        rec.record(d)
    traj = rec.trajectory()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = wb.check_trajectory(
            build.robot, traj, contacts, CheckOptions(force_tolerance=RESIDUAL_TOL / robot.weight)
        )
    assert report.force_norm.max() > 1e-3
