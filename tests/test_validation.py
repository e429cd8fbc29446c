"""Bad models and bad states give typed errors whose messages name the problem."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pinocchio as pin
import pytest

import wholebody as wb
from wholebody.errors import (
    FrameNotFoundError,
    InvalidArgumentError,
    InvalidInertiaError,
    InvalidJointError,
    JointNotFoundError,
    ModelError,
    ModelFileNotFoundError,
    ModelWarning,
    StateError,
    StateWarning,
    URDFParseError,
)

LINK = """  <link name="{name}">
    <inertial><origin xyz="0 0 0"/><mass value="{mass}"/>
      <inertia ixx="{ixx}" ixy="0" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/></inertial>
  </link>"""


def urdf(
    tmp_path,
    *,
    mass=1.0,
    inertia=(0.1, 0.1, 0.1),
    axis="0 0 1",
    jtype="revolute",
    extra_joint="",
    child_mass=None,
    base_mass=1.0,
):
    """A two-link robot with one joint, whose arm link can be made invalid."""
    ixx, iyy, izz = inertia
    arm = LINK.format(name="arm", mass=mass, ixx=ixx, iyy=iyy, izz=izz)
    limit = '<limit lower="-1" upper="1" effort="1" velocity="1"/>' if jtype == "revolute" else ""
    text = f"""<?xml version="1.0"?>
<robot name="test">
{LINK.format(name="base", mass=base_mass, ixx=0.1, iyy=0.1, izz=0.1)}
{arm}
  <joint name="hinge" type="{jtype}">
    <parent link="base"/><child link="arm"/><origin xyz="0 0 0.1"/>
    <axis xyz="{axis}"/>{limit}{extra_joint}
  </joint>
</robot>
"""
    path = tmp_path / "robot.urdf"
    path.write_text(text)
    return path


def test_missing_file(tmp_path):
    with pytest.raises(ModelFileNotFoundError, match="URDF file not found: .*nothing.urdf"):
        wb.Robot.from_urdf(tmp_path / "nothing.urdf")


def test_malformed_xml_gives_parser_reason(tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text('<robot name="x"><link name="a"></robot>')
    with pytest.raises(URDFParseError, match=r"not well-formed XML: mismatched tag: line 1"):
        wb.Robot.from_urdf(path)


def test_not_a_robot(tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text("<mujoco/>")
    with pytest.raises(URDFParseError, match="root element is <mujoco>, expected <robot>"):
        wb.Robot.from_urdf(path)


def test_pinocchio_rejection_is_wrapped(tmp_path):
    # A revolute joint without <limit>: urdfdom refuses it, and we pass its refusal on.
    path = tmp_path / "bad.urdf"
    path.write_text(
        '<robot name="x"><link name="a"/><link name="b"/><joint name="j" '
        'type="revolute"><parent link="a"/><child link="b"/></joint></robot>'
    )
    with pytest.raises(URDFParseError, match="Pinocchio cannot build the model"):
        wb.Robot.from_urdf(path)


def test_negative_mass(tmp_path):
    with pytest.raises(InvalidInertiaError, match="link 'arm' has negative mass -1 kg"):
        wb.Robot.from_urdf(urdf(tmp_path, mass=-1.0), floating_base=False)


def test_inertia_not_positive_definite(tmp_path):
    with pytest.raises(
        InvalidInertiaError, match="link 'arm' has an inertia matrix that is not positive"
    ):
        wb.Robot.from_urdf(urdf(tmp_path, inertia=(0.1, -0.1, 0.1)), floating_base=False)


def test_inertia_breaks_triangle_inequality(tmp_path):
    with pytest.raises(
        InvalidInertiaError, match="link 'arm' has principal moments .* triangle inequality"
    ):
        wb.Robot.from_urdf(urdf(tmp_path, inertia=(0.01, 0.01, 0.5)), floating_base=False)


def test_zero_joint_axis(tmp_path):
    with pytest.raises(InvalidJointError, match="joint 'hinge' has a zero-length axis"):
        wb.Robot.from_urdf(urdf(tmp_path, axis="0 0 0"), floating_base=False)


def test_massless_leaf_link_makes_mass_matrix_singular(tmp_path):
    with pytest.raises(
        InvalidInertiaError, match=r"link 'arm' \(joint 'hinge'\) .* mass matrix is singular"
    ):
        wb.Robot.from_urdf(urdf(tmp_path, mass=0.0, inertia=(0, 0, 0)), floating_base=True)


def test_zero_total_mass(tmp_path):
    path = urdf(tmp_path, mass=0.0, inertia=(0, 0, 0), base_mass=0.0)
    with pytest.raises(InvalidInertiaError, match="total mass is zero"):
        wb.Robot.from_urdf(path, floating_base=True)


def test_warn_policy_turns_errors_into_warnings(tmp_path):
    path = urdf(tmp_path, inertia=(0.01, 0.01, 0.5))
    with pytest.warns(ModelWarning, match="triangle inequality"):
        robot = wb.Robot.from_urdf(path, floating_base=False, validate="warn")
    assert robot.nv == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wb.Robot.from_urdf(path, floating_base=False, validate="ignore")
    with pytest.raises(ValueError, match="validate must be one of"):
        wb.Robot.from_urdf(path, validate="strict")


def test_mimic_joint_is_a_documented_warning(tmp_path):
    path = urdf(tmp_path, extra_joint='<mimic joint="hinge" multiplier="1"/>')
    with pytest.warns(ModelWarning, match=r"mimic joints \['hinge'\] are loaded as independent"):
        wb.Robot.from_urdf(path, floating_base=False)


def test_continuous_joint_takes_angles(tmp_path):
    robot = wb.Robot.from_urdf(urdf(tmp_path, jtype="continuous"), floating_base=False)
    assert (robot.nq, robot.nv) == (2, 1)
    q = robot.q_from_named({"hinge": 0.3})
    np.testing.assert_allclose(q, [np.cos(0.3), np.sin(0.3)], rtol=0, atol=1e-15)
    assert robot.named(q)["hinge"] == pytest.approx(0.3, abs=1e-15)
    with pytest.raises(
        StateError, match=r"\(cos, sin\) pair q\[0:2\] of a continuous joint has norm 2"
    ):
        robot.mass_matrix([2.0, 0.0])


def test_from_model_checks_bodies():
    model = pin.buildSampleModelHumanoid()
    wb.Robot.from_model(model)  # valid as built
    model.inertias[3] = pin.Inertia(-1.0, np.zeros(3), np.eye(3))
    with pytest.raises(InvalidInertiaError, match="negative mass"):
        wb.Robot.from_model(model)
    with pytest.raises(InvalidArgumentError, match="expected a pinocchio.Model, got str"):
        wb.Robot.from_model("robot.urdf")


# --- states -------------------------------------------------------------------------------


def test_wrong_length_and_shape(humanoid):
    with pytest.raises(StateError, match=r"q must have shape \(26,\), got \(25,\)"):
        humanoid.mass_matrix(np.zeros(25))
    with pytest.raises(StateError, match=r"v must have shape \(25,\), got \(2, 25\)"):
        humanoid.coriolis(humanoid.neutral(), np.zeros((2, 25)))
    with pytest.raises(StateError, match=r"a must have shape \(25,\)"):
        humanoid.inverse_dynamics(humanoid.neutral(), np.zeros(25), np.zeros(3))
    with pytest.raises(StateError, match=r"q\[0\] = 'a' is not a real number \(<U1 array\)"):
        humanoid.gravity(["a"] * 26)
    # A column vector is accepted.
    humanoid.gravity(humanoid.neutral().reshape(-1, 1))


def test_non_finite(humanoid):
    q = humanoid.neutral()
    q[10] = np.nan
    with pytest.raises(StateError, match=r"q has non-finite values at indices \[10\]"):
        humanoid.gravity(q)
    v = np.zeros(humanoid.nv)
    v[[0, 3]] = np.inf
    with pytest.raises(StateError, match=r"v has non-finite values at indices \[0, 3\]"):
        humanoid.nonlinear_effects(humanoid.neutral(), v)


def test_quaternion_checks(humanoid):
    q = humanoid.neutral()
    q[3:7] = 0.0
    with pytest.raises(StateError, match=r"base quaternion q\[3:7\] is zero"):
        humanoid.com(q)
    q[3:7] = [0, 0, 0, 1.01]
    with pytest.raises(
        StateError, match=r"base quaternion q\[3:7\] has norm 1.01, not 1 .*x-y-z-w"
    ):
        humanoid.com(q)
    q[3:7] = [0, 0, 0, 1 + 5e-7]
    with pytest.warns(StateWarning, match="renormalised"):
        checked = humanoid.state(q).q
    assert np.linalg.norm(checked[3:7]) == pytest.approx(1.0, abs=1e-15)
    assert q[6] == 1 + 5e-7  # the caller's array is not modified
    q[3:7] = [0, 0, 0, 1 + 1e-12]  # float noise: accepted silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        humanoid.com(q)


def test_unknown_frame_lists_close_matches(humanoid):
    with pytest.raises(
        FrameNotFoundError, match=r"frame 'left_sol' not found; did you mean 'left_sole'"
    ):
        humanoid.frame_jacobian(humanoid.neutral(), "left_sol")
    with pytest.raises(
        JointNotFoundError, match=r"joint 'left_knees' not found; did you mean 'left_knee'"
    ):
        humanoid.q_from_named({"left_knees": 0.1})
    err = FrameNotFoundError("sole", ["left_sole", "right_sole", "pelvis"])
    assert "left_sole" in str(err) and isinstance(err, LookupError)


def test_external_wrench_shape(humanoid):
    q = humanoid.neutral()
    with pytest.raises(
        StateError, match=r"external wrench on frame 'left_sole' must have shape \(6,\)"
    ):
        humanoid.inverse_dynamics(q, np.zeros(25), np.zeros(25), {"left_sole": [1.0, 2.0]})


def test_named_round_trip_and_add_frame(humanoid):
    q = humanoid.q_from_named({"left_knee": 0.5, "right_elbow": -0.3}, base_position=[0, 0, 0.9])
    named = humanoid.named(q)
    assert named["left_knee"] == 0.5 and named["right_elbow"] == -0.3 and named["waist_yaw"] == 0.0
    assert list(named) == humanoid.joint_names
    robot = wb.load("humanoid")
    robot.add_frame("left_toe", "left_sole", [0.12, 0.0, 0.0])
    q = robot.neutral()
    np.testing.assert_allclose(
        robot.frame_position(q, "left_toe") - robot.frame_position(q, "left_sole"),
        [0.12, 0, 0],
        atol=1e-15,
    )
    with pytest.raises(ModelError, match="frame 'left_toe' already exists"):
        robot.add_frame("left_toe", "left_sole", [0, 0, 0])


def test_random_configuration_is_reproducible_and_within_limits(humanoid):
    q1, q2 = humanoid.random_configuration(7), humanoid.random_configuration(7)
    np.testing.assert_array_equal(q1, q2)
    lo, hi = humanoid.model.lowerPositionLimit[7:], humanoid.model.upperPositionLimit[7:]
    assert np.all((q1[7:] >= lo) & (q1[7:] <= hi))
    assert np.linalg.norm(q1[3:7]) == pytest.approx(1.0, abs=1e-15)


def test_load_unknown_name():
    with pytest.raises(
        wb.errors.RobotNotFoundError,
        match=re.escape("robot 'talo' not found; did you mean 'talos'"),
    ):
        wb.load("talo")
