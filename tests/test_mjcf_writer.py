"""The corrected MJCF (``wholebody.robot.mjcf_writer``, ``wholebody fit`` on an MJCF robot).

References: MuJoCo's own compiler reading the written file (body masses, CoMs ``xipos``,
principal inertias ``body_inertia`` and axes ``ximat``, bodies welded together summed by
``body_weldid``), summed here with plain numpy; Pinocchio's MJCF parser reading it again;
the truth of a synthetic log (a perturbed MJCF), and ``wholebody check`` on that log.
"""

from __future__ import annotations

import json
import struct
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose

import wholebody as wb
from wholebody.cli import main
from wholebody.errors import InvalidArgumentError, ModelError
from wholebody.robot import mjcf_writer
from wholebody.robot.mjcf_writer import write_corrected_mjcf
from wholebody.trajectory import Trajectory

mujoco = pytest.importorskip("mujoco")

ROOT = Path(__file__).resolve().parents[1]
RTOL = 1e-9  # written file against the fitted model (the writer's read-back check is 1e-9)
INERTIA_ENTRIES = {
    "xx": (0, 0),
    "yy": (1, 1),
    "zz": (2, 2),
    "xy": (0, 1),
    "xz": (0, 2),
    "yz": (1, 2),
}

SCENE = """<mujoco model="scene">
  <!-- a scene: a textured floor, then the robot -->
  <compiler angle="degree"/>
  <asset>
    <texture name="grid" type="2d" file="assets/grid.png"/>
    <material name="floor" texture="grid"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" material="floor"/>
  </worldbody>
  <include file="parts/robot.xml"/>
</mujoco>
"""
# Inertial frames given as euler (degrees) and fullinertia; a hinge whose axis is off the body
# origin; a massive body welded to its parent (pad); an unnamed body with two joints (one
# Pinocchio composite joint) whose inertia comes from its geom; a massless welded body.
ROBOT = """<mujoco model="bot">
  <worldbody>
    <body name="base" pos="0 0 1">
      <freejoint name="root"/>
      <inertial pos="0.01 -0.02 0.05" euler="10 20 30" mass="10" diaginertia="0.1 0.2 0.25"/>
      <body name="thigh" pos="0 0.1 -0.1" quat="0.9 0.1 0.2 0.1">
        <joint name="hip" pos="0.02 0 0.03" axis="0 1 0"/>
        <inertial pos="0 0.01 -0.2" mass="2.5"
          fullinertia="0.03 0.028 0.004 0.001 -0.002 0.0005"/>
        <body name="pad" pos="0.05 0 -0.1" euler="5 10 15">
          <inertial pos="0.01 0.02 0" mass="0.5" diaginertia="0.001 0.002 0.0015"/>
        </body>
        <body pos="0 0 -0.4">
          <joint name="knee" axis="0 1 0"/>
          <joint name="knee_roll" axis="1 0 0"/>
          <geom type="box" size="0.04 0.05 0.2" pos="0 0 -0.2"/>
          <body name="sole" pos="0 0 -0.4"><site name="sole_site"/></body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _png(width: int = 2, height: int = 2) -> bytes:
    """A valid RGB PNG (MuJoCo reads the texture when it compiles)."""
    raw = b"".join(b"\x00" + bytes([200, 100, 50]) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


@pytest.fixture
def scene(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    (folder / "parts").mkdir(parents=True)
    (folder / "assets").mkdir()
    (folder / "assets" / "grid.png").write_bytes(_png())
    (folder / "parts" / "robot.xml").write_text(ROBOT)
    (folder / "scene.xml").write_text(SCENE)
    return folder / "scene.xml"


def _perturbed(robot: wb.Robot, seed: int, joints: list[str] | None = None) -> wb.Robot:
    """The robot with each joint body's mass, CoM and rotational inertia changed a little
    (a real rigid body: the inertia about the CoM scaled and rotated)."""
    rng = np.random.default_rng(seed)
    model = robot.model.copy()
    for j in range(1, model.njoints):
        if joints is not None and model.names[j] not in joints:
            continue
        Y = model.inertias[j]
        R = pin.exp3(rng.normal(0, 0.05, 3))
        model.inertias[j] = pin.Inertia(
            Y.mass * (1 + rng.uniform(0.02, 0.06)),
            Y.lever + rng.normal(0, 0.003, 3),
            R @ (Y.inertia * (1 + rng.uniform(0.02, 0.06))) @ R.T,
        )
    return wb.Robot(model, name="fitted")


# --- independent references -----------------------------------------------------------------


def _mujoco_group(m, d, body: int) -> tuple[float, np.ndarray, np.ndarray]:
    """MuJoCo's compiled bodies welded to ``body`` (``body_weldid``), summed in ``body``'s
    frame: (mass, first moment m c, rotational inertia about the frame origin)."""
    R0, p0 = d.xmat[body].reshape(3, 3), d.xpos[body]
    mass, h, inertia = 0.0, np.zeros(3), np.zeros((3, 3))
    for b in range(m.nbody):
        if m.body_weldid[b] != body:
            continue
        mb = float(m.body_mass[b])
        c = R0.T @ (d.xipos[b] - p0)
        R = R0.T @ d.ximat[b].reshape(3, 3)
        mass += mb
        h += mb * c
        inertia += R @ np.diag(m.body_inertia[b]) @ R.T + mb * (c @ c * np.eye(3) - np.outer(c, c))
    return mass, h, inertia


def _pinocchio_group(model: pin.Model, j: int, body: str) -> tuple[float, np.ndarray, np.ndarray]:
    """Joint ``j``'s body inertia expressed in the frame of MJCF body ``body``."""
    frame = model.frames[model.getFrameId(body, pin.FrameType.BODY)]
    Y = frame.placement.actInv(model.inertias[j])
    c = np.array(Y.lever)
    inertia = np.array(Y.inertia) + Y.mass * (c @ c * np.eye(3) - np.outer(c, c))
    return float(Y.mass), Y.mass * c, inertia


def _mujoco_body_of(m, model: pin.Model, j: int) -> tuple[int, str]:
    """MuJoCo's body carrying Pinocchio joint ``j`` and its Pinocchio body name."""
    joint = model.names[j].removeprefix("Composite_")
    body = int(m.jnt_bodyid[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, joint)])
    name = m.body(body).name or m.body(int(m.body_parentid[body])).name + "Bis"
    return body, name


def _assert_mujoco_has(path: Path, model: pin.Model) -> None:
    """Every Pinocchio joint body equals MuJoCo's bodies welded together, in MuJoCo's frame
    of the body carrying the joint (relative RTOL of the largest entry)."""
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    for j in range(1, model.njoints):
        body, name = _mujoco_body_of(m, model, j)
        got = _mujoco_group(m, d, body)
        want = _pinocchio_group(model, j, name)
        scale = max(want[0], np.abs(want[1]).max(), np.abs(want[2]).max())
        for g, w in zip(got, want, strict=True):
            assert_allclose(g, w, rtol=0, atol=RTOL * scale, err_msg=model.names[j])


def _assert_same_inertias(a: pin.Model, b: pin.Model) -> None:
    assert list(a.names) == list(b.names)
    for j in range(1, a.njoints):
        pa, pb = a.inertias[j].toDynamicParameters(), b.inertias[j].toDynamicParameters()
        assert_allclose(pa, pb, rtol=0, atol=RTOL * np.abs(pb).max(), err_msg=a.names[j])


# --- the writer ------------------------------------------------------------------------------


def test_written_inertias_are_what_mujoco_and_pinocchio_read(scene, tmp_path):
    """A scene including the robot, written corrected into another folder: MuJoCo compiles
    the copy (texture found through the rewritten asset folder) and every joint body, welded
    bodies summed, is the fitted one; the welded pad keeps its values; wholebody reads the
    copy back to the fitted model; the original files are untouched."""
    before = {p: p.read_bytes() for p in scene.parent.rglob("*.xml")}
    robot = wb.Robot.from_mjcf(scene)
    assert robot.model.names[3] == "Composite_knee"  # two joints, one Pinocchio joint
    fitted = _perturbed(robot, seed=1)
    out = tmp_path / "out" / "scene.corrected.xml"
    out.parent.mkdir()
    written = write_corrected_mjcf(robot, fitted, out)

    assert written.bodies == {"root": "base", "hip": "thigh", "Composite_knee": "thighBis"}
    welded = [n for n in written.notes if "'pad', 'thigh' are welded" in n]
    assert len(welded) == 1 and "written to 'thigh'" in welded[0]
    assert any("inlined (robot.xml)" in n for n in written.notes)
    _assert_mujoco_has(out, fitted.model)
    # The original model is MuJoCo's too (the reference sums the same way), and is not the fit
    # (the reference can fail).
    _assert_mujoco_has(scene, robot.model)
    with pytest.raises(AssertionError):
        _assert_mujoco_has(scene, fitted.model)
    m0 = mujoco.MjModel.from_xml_path(str(scene))
    m1 = mujoco.MjModel.from_xml_path(str(out))
    pad = mujoco.mj_name2id(m0, mujoco.mjtObj.mjOBJ_BODY, "pad")
    for field in ("body_mass", "body_ipos", "body_iquat", "body_inertia"):
        assert_allclose(getattr(m1, field)[pad], getattr(m0, field)[pad], rtol=0, atol=1e-15)
    assert m1.ntex == 1 and m1.ngeom == m0.ngeom  # the scene is kept
    again = wb.Robot.from_mjcf(out)
    _assert_same_inertias(again.model, fitted.model)
    text = out.read_text()
    assert "<include" not in text and "a scene: a textured floor" in text  # comments kept
    assert 'assetdir="../model"' in text
    assert {p: p.read_bytes() for p in scene.parent.rglob("*.xml")} == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["scene.corrected.xml"]


def test_unchanged_model_is_written_unchanged(scene, tmp_path):
    """Nothing fitted changed: the copy compiles to the same bodies in MuJoCo."""
    robot = wb.Robot.from_mjcf(scene)
    out = tmp_path / "same.xml"
    written = write_corrected_mjcf(robot, wb.Robot(robot.model.copy()), out)
    assert written.bodies == {}
    m0 = mujoco.MjModel.from_xml_path(str(scene))
    m1 = mujoco.MjModel.from_xml_path(str(out))
    for field in ("body_mass", "body_ipos", "body_iquat", "body_inertia", "body_pos"):
        assert_allclose(getattr(m1, field), getattr(m0, field), rtol=0, atol=0)


def test_a_link_the_mjcf_cannot_take_is_named_and_nothing_is_written(scene, tmp_path):
    """The hip's joint body is the thigh (2.5 kg) and the pad welded to it (0.5 kg): a fitted
    2.8 kg with its inertia far smaller leaves the thigh no real rigid body once the pad keeps
    its inertia: refused, naming the link, both bodies and the reason; no file, no leftover."""
    robot = wb.Robot.from_mjcf(scene)
    model = robot.model.copy()
    hip = model.getJointId("hip")
    Y = model.inertias[hip]
    model.inertias[hip] = pin.Inertia(2.8, Y.lever, Y.inertia * 0.2)
    out = tmp_path / "bad.xml"
    with pytest.raises(ModelError) as err:
        write_corrected_mjcf(robot, wb.Robot(model), out)
    message = str(err.value)
    assert "link 'hip' (MJCF body 'thigh', welded to 'pad')" in message
    assert "triangle inequality" in message and "--link" in message
    assert list(tmp_path.iterdir()) == [scene.parent]
    # The same change spread over a single body is written.
    alone = _perturbed(robot, seed=2, joints=["Composite_knee"])
    write_corrected_mjcf(robot, alone, out)
    _assert_mujoco_has(out, alone.model)


def test_a_mass_that_mujocos_boundmass_would_raise_is_refused(tmp_path):
    """``<compiler boundmass>``: MuJoCo (and Pinocchio) would raise a fitted mass below it."""
    path = tmp_path / "bound.xml"
    path.write_text(
        '<mujoco><compiler boundmass="0.4"/><worldbody><body name="base"><freejoint/>'
        '<inertial pos="0 0 0" mass="2" diaginertia="0.1 0.1 0.1"/>'
        '<body name="arm" pos="0 0 -0.2"><joint name="j" axis="0 1 0"/>'
        '<inertial pos="0 0 -0.1" mass="0.5" diaginertia="0.01 0.01 0.001"/></body>'
        "</body></worldbody></mujoco>"
    )
    robot = wb.Robot.from_mjcf(path)
    model = robot.model.copy()
    j = model.getJointId("j")
    Y = model.inertias[j]
    model.inertias[j] = pin.Inertia(0.3, Y.lever, Y.inertia)
    with pytest.raises(ModelError, match=r"link 'j' \(MJCF body 'arm'\): <compiler boundmass="):
        write_corrected_mjcf(robot, wb.Robot(model), tmp_path / "out.xml")
    assert not (tmp_path / "out.xml").exists()


def test_inertia_from_geoms_and_settotalmass(tmp_path):
    """``inertiafromgeom="true"`` ignores every ``<inertial>`` and ``settotalmass`` rescales
    every mass: in the copy the first is ``"auto"`` with the ignored ``<inertial>`` removed,
    the second is gone, so MuJoCo's bodies are the fitted model's, fitted or not (geoms:
    a box, a sphere, a box welded on; MuJoCo and Pinocchio integrate them alike)."""
    path = tmp_path / "geoms.xml"
    path.write_text(
        '<mujoco><compiler angle="degree" inertiafromgeom="true" settotalmass="20"/>'
        '<worldbody><body name="base" pos="0 0 1"><freejoint name="root"/>'
        '<inertial pos="0 0 0" mass="99" diaginertia="1 1 1"/>'
        '<geom type="box" size="0.1 0.2 0.05" pos="0.01 0 0" euler="0 0 30"/>'
        '<body name="arm" pos="0.1 0 0"><joint name="j1" axis="0 1 0" pos="0.01 0 0"/>'
        '<geom type="sphere" size="0.05" pos="0 0 -0.1"/>'
        '<body name="hand" pos="0 0 -0.2"><geom type="box" size="0.02 0.03 0.04"/></body>'
        "</body></body></worldbody></mujoco>"
    )
    robot = wb.Robot.from_mjcf(path)
    fitted = _perturbed(robot, seed=3, joints=["j1"])
    out = tmp_path / "geoms.corrected.xml"
    written = write_corrected_mjcf(robot, fitted, out)
    notes = " ".join(written.notes)
    assert 'inertiafromgeom="true"> made "auto"' in notes and "1 <inertial>" in notes
    assert "settotalmass='20'> removed" in notes
    _assert_mujoco_has(out, fitted.model)
    compiler = ET.parse(out).getroot().find("compiler")
    assert compiler is not None and compiler.get("inertiafromgeom") == "auto"
    assert compiler.get("settotalmass") is None
    _assert_same_inertias(wb.Robot.from_mjcf(out).model, fitted.model)


def test_third_party_humanoid(tmp_path):
    """MuJoCo's classic humanoid as pybullet_data ships it (capsules from ``fromto``, bodies
    with two or three joints, ``inertiafromgeom="true"``): every joint body changed, the copy
    compiled by MuJoCo is the fitted model (its geom inertias agree with Pinocchio's)."""
    pybullet_data = pytest.importorskip("pybullet_data")
    path = Path(pybullet_data.getDataPath()) / "mjcf" / "humanoid.xml"
    robot = wb.Robot.from_mjcf(path)
    fitted = _perturbed(robot, seed=5)
    written = write_corrected_mjcf(robot, fitted, tmp_path / "humanoid.corrected.xml")
    assert len(written.bodies) == robot.model.njoints - 1 == 12
    assert any('inertiafromgeom="true"> made "auto"' in n for n in written.notes)
    _assert_mujoco_has(path, robot.model)
    _assert_mujoco_has(written.path, fitted.model)


def test_read_back_check_refuses_a_wrong_file(scene, tmp_path, monkeypatch):
    """The failing direction of the read-back check: a writer that put 1 % too much mass
    into an <inertial> is caught, and no file is left."""
    robot = wb.Robot.from_mjcf(scene)
    fitted = _perturbed(robot, seed=4)
    right = mjcf_writer._write_inertial

    def wrong(body, m, com, inertia):
        right(body, 1.01 * m, com, inertia)

    monkeypatch.setattr(mjcf_writer, "_write_inertial", wrong)
    with pytest.raises(ModelError, match="read back does not give the fitted inertias"):
        write_corrected_mjcf(robot, fitted, tmp_path / "x.xml")
    assert not any(p.name.endswith(".xml") for p in tmp_path.iterdir())


def test_writer_arguments_are_checked(scene, tmp_path):
    robot = wb.Robot.from_mjcf(scene)
    with pytest.raises(InvalidArgumentError, match="not loaded from an MJCF file"):
        write_corrected_mjcf(wb.load("humanoid"), robot, tmp_path / "x.xml")
    with pytest.raises(InvalidArgumentError, match="other joints"):
        write_corrected_mjcf(robot, wb.load("humanoid"), tmp_path / "x.xml")
    with pytest.raises(InvalidArgumentError, match="one of the model's own files"):
        write_corrected_mjcf(robot, robot, scene.parent / "parts" / "robot.xml")


# --- wholebody fit on an MJCF robot ----------------------------------------------------------


def humanoid_mjcf(path: Path, torso_mass_scale: float = 1.0, torso_com_shift=(0, 0, 0)) -> Path:
    """The shipped humanoid as MJCF, written by MuJoCo from the URDF (bodies kept: the head
    stays welded to the torso), doubles written exactly; the torso optionally changed."""
    spec = mujoco.MjSpec.from_file(str(ROOT / "models" / "humanoid.urdf"))
    spec.compiler.fusestatic = False
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
        if inertial is not None:
            scale = torso_mass_scale if body.get("name") == "torso" else 1.0
            shift = np.array(torso_com_shift if body.get("name") == "torso" else (0, 0, 0))
            inertial.set("pos", text(m.body_ipos[b] + shift))
            inertial.set("quat", text(m.body_iquat[b]))
            inertial.set("mass", repr(float(m.body_mass[b]) * scale))
            inertial.set("diaginertia", text(m.body_inertia[b]))
        for joint in body.findall("joint"):
            if joint.get("name"):
                j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, joint.get("name"))
                joint.set("axis", text(m.jnt_axis[j]))
                joint.set("pos", text(m.jnt_pos[j]))
    path.write_text(ET.tostring(root, encoding="unicode"))
    return path


def squat_log_of(truth: wb.Robot) -> Trajectory:
    """The shipped humanoid's squat (feet flat, within their soles) as ``truth`` would need
    it: the base wrench that ``truth`` needs beyond the URDF humanoid's is shared by the feet
    as their vertical forces are, the joint torques recomputed (``pin.rnea``)."""
    log = Trajectory.load(ROOT / "data" / "humanoid_squat.npz")
    urdf = wb.load("humanoid")
    qn, vn, an, _ = log.for_robot(urdf)
    qt, vt, at, _ = log.for_robot(truth)
    mt, dt = truth.model, truth.model.createData()
    mn, dn = urdf.model, urdf.model.createData()
    feet = [truth.frame_id(f) for f in log.contact_names]
    W = log.contact_wrenches.copy()
    tau = np.empty((len(log), mt.nv - 6))
    for i in range(len(log)):
        extra = pin.rnea(mt, dt, qt[i], vt[i], at[i])[:6]
        extra -= pin.rnea(mn, dn, qn[i], vn[i], an[i])[:6]
        pin.forwardKinematics(mt, dt, qt[i])
        pin.updateFramePlacements(mt, dt)
        Rb, pb = dt.oMi[1].rotation, dt.oMi[1].translation
        f, moment = Rb @ extra[:3], Rb @ extra[3:]
        share = W[i, :, 2] / W[i, :, 2].sum()
        for k, fid in enumerate(feet):
            at_foot = moment + np.cross(pb - dt.oMf[fid].translation, f)
            W[i, k] += share[k] * np.r_[f, at_foot]
        pin.computeJointJacobians(mt, dt, qt[i])
        full = pin.rnea(mt, dt, qt[i], vt[i], at[i]) - sum(
            pin.getFrameJacobian(mt, dt, fid, pin.LOCAL_WORLD_ALIGNED).T @ W[i, k]
            for k, fid in enumerate(feet)
        )
        assert np.abs(full[:6]).max() < 1e-6  # the base rows balance: the wrenches are right
        tau[i] = full[6:]
    return Trajectory.from_arrays(
        log.time,
        qt,
        vt,
        joint_names=truth.joint_names,
        contact_wrenches={c: W[:, k] for k, c in enumerate(log.contact_names)},
        a=at,
        tau=tau,
    )


@pytest.fixture(scope="module")
def heavier_torso(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(profile of the MJCF humanoid, the truth's MJCF, the truth's squat log)."""
    tmp = tmp_path_factory.mktemp("heavier_torso")
    folder = tmp / "robot"
    folder.mkdir()
    humanoid_mjcf(folder / "humanoid.xml")
    truth = humanoid_mjcf(tmp / "truth.xml", 1.05, (0.02, 0.0, 0.0))
    squat_log_of(wb.Robot.from_mjcf(truth)).save(tmp / "squat.npz")
    contacts = (ROOT / "models" / "humanoid.toml").read_text().split("\n\n", 1)[1]
    profile = folder / "robot.toml"
    profile.write_text('mjcf = "humanoid.xml"\n\n' + contacts)
    return profile, truth, tmp / "squat.npz"


def test_fit_of_an_mjcf_robot_writes_a_corrected_mjcf_that_checks_consistent(
    heavier_torso, tmp_path, capsys
):
    """A squat of a humanoid whose torso is 5 % heavier with its CoM 2 cm forward than its
    MJCF says: ``wholebody check`` with the MJCF profile fails; ``wholebody fit --mass --com
    --inertia --link waist_yaw`` (the torso and the head welded to it: one link whose
    inertia about its CoM changes with the torso's mass) writes ``humanoid.corrected.xml``
    (the change on the torso, the head kept), whose torso MuJoCo reads with the truth's mass
    and CoM (relative 1e-6, 1e-6 m; its rotational inertia is partly unobserved in a squat),
    which wholebody reads back as the fit reported it, and with which ``wholebody check``
    passes through the written profile."""
    profile, truth_path, log = heavier_torso
    nominal = profile.parent / "humanoid.xml"
    assert main(["check", str(log), "--config", str(profile)]) == 1

    out = tmp_path / "fit"
    args = ["fit", str(log), "--config", str(profile), "--mass", "--com", "--inertia"]
    assert main([*args, "--link", "waist_yaw", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "'head', 'torso' are welded" in printed and "humanoid.corrected.xml" in printed
    text = (out / "profile.toml").read_text()
    assert 'mjcf = "humanoid.corrected.xml"' in text and str(tmp_path) not in text

    m_truth = mujoco.MjModel.from_xml_path(str(truth_path))
    m_fit = mujoco.MjModel.from_xml_path(str(out / "humanoid.corrected.xml"))
    m_nom = mujoco.MjModel.from_xml_path(str(nominal))
    torso, head = (mujoco.mj_name2id(m_fit, mujoco.mjtObj.mjOBJ_BODY, n) for n in ("torso", "head"))
    assert abs(m_fit.body_mass[torso] / m_truth.body_mass[torso] - 1) < 1e-6
    assert_allclose(m_fit.body_ipos[torso], m_truth.body_ipos[torso], rtol=0, atol=1e-6)
    for field in ("body_mass", "body_ipos", "body_iquat", "body_inertia"):
        assert_allclose(getattr(m_fit, field)[head], getattr(m_nom, field)[head], atol=0)
    others = [b for b in range(m_fit.nbody) if b != torso]
    assert_allclose(m_fit.body_mass[others], m_nom.body_mass[others], rtol=0, atol=0)

    fit = json.loads((out / "fit.json").read_text())
    report = {p["name"]: p["estimate"] for p in fit["parameters"]}
    back = wb.Robot.from_mjcf(out / "humanoid.corrected.xml").model
    Y = back.inertias[back.getJointId("waist_yaw")]
    assert Y.mass == pytest.approx(report["waist_yaw.mass"], rel=RTOL)
    com = [report[f"waist_yaw.com_{a}"] for a in "xyz"]
    assert_allclose(Y.lever, com, rtol=0, atol=RTOL)
    inertia = np.array(Y.inertia)
    for k, (a, b) in INERTIA_ENTRIES.items():
        got, want = inertia[a, b], report[f"waist_yaw.inertia_{k}"]
        assert got == pytest.approx(want, rel=0, abs=RTOL * inertia.max()), k

    capsys.readouterr()
    assert main(["check", str(log), "--config", str(out / "profile.toml")]) == 0
    assert "verdict   consistent" in capsys.readouterr().out


def test_fit_names_the_link_its_mjcf_cannot_take(heavier_torso, tmp_path, capsys, monkeypatch):
    """The failing direction through the command line: a fitted torso-and-head link lighter
    than the head alone cannot be written (the torso would have a negative mass): exit 2,
    the message names the link, its bodies and the report's file; the report is written, no
    model and no profile pointing at one."""
    from wholebody.identify.result import IdentificationResult

    right = IdentificationResult.corrected_robot

    def lighter(self):
        robot = right(self)
        j = robot.model.getJointId("waist_yaw")
        Y = robot.model.inertias[j]
        robot.model.inertias[j] = pin.Inertia(3.0, Y.lever, Y.inertia)
        return robot

    monkeypatch.setattr(IdentificationResult, "corrected_robot", lighter)
    profile, _, log = heavier_torso
    out = tmp_path / "fit"
    code = main(["fit", str(log), "--config", str(profile), "--mass", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "link 'waist_yaw' (MJCF body 'torso', welded to 'head')" in err
    assert "mass would be" in err and "fit.txt" in err and "Traceback" not in err
    assert (out / "fit.txt").exists() and (out / "fit.json").exists()
    assert not (out / "humanoid.corrected.xml").exists()
    assert not list(out.glob("profile*.toml"))


def test_load_and_fit_tell_mjcf_from_urdf_by_the_root_element(scene, tmp_path):
    """``wholebody.load(path)`` and ``wholebody fit`` use one rule, the root element: a URDF
    carrying MuJoCo's ``<mujoco>`` extension element (as URDFs written for MuJoCo do) loads
    as the URDF it is (it once loaded as MJCF, on a ``<mujoco`` anywhere in its first 4 KB),
    and an MJCF scene as MJCF."""
    from wholebody.robot.mjcf import is_mjcf

    text = (ROOT / "models" / "humanoid.urdf").read_text()
    head, sep, tail = text.partition("<link ")
    assert sep
    with_extension = head + '<mujoco><compiler discardvisual="false"/></mujoco>\n' + sep + tail
    urdf = tmp_path / "humanoid_for_mujoco.urdf"
    urdf.write_text(with_extension)
    assert not is_mjcf(urdf) and is_mjcf(scene)
    robot = wb.load(str(urdf))
    reference = wb.load("humanoid")
    assert (robot.nq, robot.nv) == (reference.nq, reference.nv)
    assert robot.mass == pytest.approx(reference.mass, rel=1e-12)
    assert wb.load(str(scene)).nv == wb.Robot.from_mjcf(scene).nv
