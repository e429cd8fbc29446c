"""MJCF read as MuJoCo reads it: includes resolved in the model's folder, repeated sections
merged, a Menagerie-style scene (floor, lights, an include of the robot) loaded as the robot.
References: MuJoCo's own compiler (body masses, joint names) where it is installed; the
command line and profiles take the same files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import wholebody
from wholebody.cli import main
from wholebody.errors import ModelWarning, ProfileError, SizeLimitError
from wholebody.io.profile import load_profile
from wholebody.limits import LIMITS, set_limits

ROBOT = """<mujoco model="tiny">
  <compiler angle="radian"/>
  <worldbody>
    <body name="pelvis" pos="0 0 1">
      <freejoint/>
      <inertial pos="0 0 0.05" mass="10" diaginertia="0.1 0.2 0.3"/>
      <include file="parts/leg.xml"/>
    </body>
  </worldbody>
</mujoco>
"""
LEG = """<mujoco model="leg">
  <body name="thigh" pos="0 0.1 -0.1">
    <joint name="hip" axis="0 1 0"/>
    <inertial pos="0 0 -0.2" mass="2.5" diaginertia="0.02 0.02 0.002"/>
    <body name="shin" pos="0 0 -0.4">
      <joint name="knee" axis="0 1 0"/>
      <inertial pos="0 0 -0.2" mass="1.5" diaginertia="0.01 0.01 0.001"/>
      <site name="sole" pos="0 0 -0.4"/>
    </body>
  </body>
</mujoco>
"""
SCENE = """<mujoco model="tiny scene">
  <include file="robot.xml"/>
  <statistic center="0 0 0.8" extent="1.5"/>
  <visual><headlight diffuse="0.6 0.6 0.6" ambient="0.3 0.3 0.3"/></visual>
  <asset>
    <texture type="skybox" builtin="gradient" rgb1="0.3 0.5 0.7" rgb2="0 0 0"
      width="64" height="64"/>
    <material name="groundplane" rgba="0.2 0.3 0.4 1"/>
  </asset>
  <worldbody>
    <light pos="0 0 3" dir="0 0 -1" directional="true"/>
    <geom name="floor" size="0 0 0.05" type="plane" material="groundplane"/>
  </worldbody>
</mujoco>
"""


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    (tmp_path / "parts").mkdir()
    (tmp_path / "robot.xml").write_text(ROBOT)
    (tmp_path / "parts" / "leg.xml").write_text(LEG)
    (tmp_path / "scene.xml").write_text(SCENE)
    return tmp_path


@pytest.mark.parametrize("file", ["robot.xml", "scene.xml"])
def test_included_bodies_are_part_of_the_robot(model_dir, file):
    robot = wholebody.Robot.from_mjcf(model_dir / file)
    assert robot.name == "tiny"  # the scene loads as the robot it includes
    assert list(robot.joint_names) == ["hip", "knee"]
    assert robot.mass == pytest.approx(14.0, abs=1e-12)
    assert "shin" in robot.frame_names


@pytest.mark.parametrize("file", ["robot.xml", "scene.xml"])
def test_masses_match_mujocos_own_compile(model_dir, file):
    mujoco = pytest.importorskip("mujoco")
    m = mujoco.MjModel.from_xml_path(str(model_dir / file))
    robot = wholebody.Robot.from_mjcf(model_dir / file)
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, i) for i in range(1, m.nbody)]
    for name, mass in zip(names, m.body_mass[1:], strict=True):
        frame = robot.model.frames[robot.model.getFrameId(name)]
        assert robot.model.inertias[frame.parentJoint].mass == pytest.approx(mass, abs=1e-12)
    assert robot.mass == pytest.approx(float(np.sum(m.body_mass)), abs=1e-12)


def test_the_command_line_and_profiles_take_mjcf(model_dir, capsys):
    assert main(["info", str(model_dir / "scene.xml")]) == 0
    assert "hip, knee" in capsys.readouterr().out
    (model_dir / "p.toml").write_text(
        'mjcf = "scene.xml"\n[[contacts]]\nframe = "shin"\ntype = "point"\nmu = 1.0\n'
    )
    profile = load_profile(model_dir / "p.toml")
    assert profile.robot.mass == pytest.approx(14.0)
    (model_dir / "u.toml").write_text(
        'urdf = "scene.xml"\n[[contacts]]\nframe = "shin"\ntype = "point"\nmu = 1.0\n'
    )
    with pytest.raises(ProfileError, match="write mjcf = 'scene.xml' instead"):
        load_profile(model_dir / "u.toml")


def test_the_depth_limit_is_configurable(tmp_path):
    n = LIMITS.model_depth + 1
    one = (
        '<body name="b{i}"><joint name="j{i}"/><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>'
    )
    body = "".join(one.format(i=i) for i in range(n)) + "</body>" * n
    (tmp_path / "c.xml").write_text(f"<mujoco><worldbody>{body}</worldbody></mujoco>")
    with pytest.raises(SizeLimitError, match=f"bodies nested {n} deep"):
        wholebody.Robot.from_mjcf(tmp_path / "c.xml")
    with set_limits(model_depth=n):
        assert wholebody.Robot.from_mjcf(tmp_path / "c.xml").nq == n
    assert LIMITS.model_depth == n - 1


def test_a_menagerie_humanoid_and_its_scene():
    menagerie = pytest.importorskip("mujoco_menagerie")
    try:
        folder = Path(menagerie.get("unitree_g1").path(progress=None))
    except Exception as exc:  # noqa: BLE001 - no network, no cache: nothing to test
        pytest.skip(f"Menagerie model not available: {exc}")
    robot = wholebody.Robot.from_mjcf(folder / "g1.xml")
    scene = wholebody.Robot.from_mjcf(folder / "scene.xml")
    assert scene.joint_names == robot.joint_names
    assert scene.mass == pytest.approx(robot.mass, rel=1e-12)


def test_check_and_contacts_run_on_an_mjcf_scene(model_dir, tmp_path, capsys):
    """A standing log of the scene's robot, its sole carrying the weight (force m g up, moment
    (c - p) x f about the sole's origin, from the CoM and the sole's position): `check --robot
    scene.xml` finds it consistent and `contacts` writes a schedule."""
    robot = wholebody.Robot.from_mjcf(model_dir / "scene.xml")
    N = 20
    q0 = np.zeros(robot.nq)
    q0[6] = 1.0  # identity quaternion (x, y, z, w)
    c = np.asarray(robot.com(q0)).reshape(3)
    p = robot.placements(q0, "sole").se3().translation
    f = np.array([0.0, 0.0, robot.mass * 9.81])
    wrench = np.concatenate([f, np.cross(c - p, f)])
    log = wholebody.Trajectory(
        time=np.arange(N) * 0.01,
        q=np.tile(q0, (N, 1)),
        v=np.zeros((N, robot.nv)),
        a=np.zeros((N, robot.nv)),
        tau=None,
        joint_names=robot.joint_names,
        contact_names=("sole",),
        contact_wrenches=np.tile(wrench, (N, 1, 1)),
    )
    log.save(tmp_path / "stand.npz")
    argv = ["--robot", str(model_dir / "scene.xml"), "--contact", "sole:surface:0.1:0.1:1.0"]
    assert main(["check", str(tmp_path / "stand.npz"), *argv]) == 0
    assert "consistent" in capsys.readouterr().out
    out = tmp_path / "s.npz"
    assert main(["contacts", str(tmp_path / "stand.npz"), *argv, "-o", str(out)]) == 0
    assert out.is_file()


def test_a_scene_with_objects_keeps_the_free_floating_robot(model_dir):
    """Pinocchio builds only the first body under <worldbody>: a box placed before the robot
    would silently replace it. The free-floating root body is kept, the others named."""
    scene = SCENE.replace(
        "<light",
        '<body name="table" pos="1 0 0.4"><geom type="box" size="0.5 0.5 0.4"/></body>\n    <light',
    ).replace('<include file="robot.xml"/>', "")
    scene = scene.replace("</worldbody>", '</worldbody>\n  <include file="robot.xml"/>')
    (model_dir / "objects.xml").write_text(scene)
    with pytest.warns(ModelWarning, match=r"the other root bodies \['table'\] are scene objects"):
        robot = wholebody.Robot.from_mjcf(model_dir / "objects.xml")
    assert list(robot.joint_names) == ["hip", "knee"]
    assert robot.mass == pytest.approx(14.0, abs=1e-12)
