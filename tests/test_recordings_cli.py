"""A recording through the command line and ``wholebody.io.read_log``, end to end.

The shipped MuJoCo squat log (consistent to ~1e-11 N with logged accelerations) is written as
a ROS 2 bag in MCAP storage the way a robot would record it: joint states, odometry (twist in
the base frame, REP 105) and one force-torque topic per foot in the foot's own axes (rotated
from the log's world axes with raw Pinocchio placements). Read back, the arrays equal the log's
(1e-12), and ``wholebody check BAG --config PROFILE`` finds it consistent: the check
differentiates the accelerations (a bag carries none), so it runs with the measured-data
preset, whose tolerances cover the O(h^2) differentiation error. The same log with one foot's
force-torque topic sign-flipped is inconsistent (exit 1).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import wholebody
from wholebody.cli import main
from wholebody.errors import InvalidArgumentError
from wholebody.io import read_log
from wholebody.models import data_dir, models_dir
from wholebody.trajectory import Trajectory

pytest.importorskip("rosbags")
from rosbags.rosbag2 import StoragePlugin, Writer  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402

TS = get_typestore(Stores.ROS2_HUMBLE)
T = TS.types
T0_NS = 1_700_000_000_000_000_000
PROFILE_TAIL = """
[recording]
joint_states = "/joint_states"
base_pose = "/odom"

[[recording.wrenches]]
topic = "/left_ft"
contact = "left_sole"

[[recording.wrenches]]
topic = "/right_ft"
contact = "right_sole"
"""


def _vec3(x: np.ndarray):
    return T["geometry_msgs/msg/Vector3"](x=float(x[0]), y=float(x[1]), z=float(x[2]))


def _header(ns: int, frame: str):
    stamp = T["builtin_interfaces/msg/Time"](sec=ns // 10**9, nanosec=ns % 10**9)
    return T["std_msgs/msg/Header"](stamp=stamp, frame_id=frame)


def write_squat_bag(path: Path, robot: wholebody.Robot, flip_right: bool = False) -> Trajectory:
    """The shipped squat log as an MCAP bag; returns the log (robot joint order)."""
    log = Trajectory.load(data_dir() / "humanoid_squat.npz")
    q, v, _, tau = log.for_robot(robot)
    assert tau is not None
    model, data = robot.model, robot.model.createData()
    stamps = T0_NS + np.round(log.time * 1e9).astype(np.int64)
    G = "geometry_msgs/msg/"
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        js = w.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=TS)
        od = w.add_connection("/odom", "nav_msgs/msg/Odometry", typestore=TS)
        ft = {
            name: w.add_connection(topic, G + "WrenchStamped", typestore=TS)
            for name, topic in (("left_sole", "/left_ft"), ("right_sole", "/right_ft"))
        }
        for i, ns in enumerate(stamps.tolist()):
            msg = T["sensor_msgs/msg/JointState"](
                header=_header(ns, ""),
                name=list(robot.joint_names),
                position=q[i, 7:].copy(),
                velocity=v[i, 6:].copy(),
                effort=tau[i].copy(),
            )
            w.write(js, ns, TS.serialize_cdr(msg, "sensor_msgs/msg/JointState"))
            p, quat = q[i, :3], q[i, 3:7]
            pose = T[G + "Pose"](
                position=T[G + "Point"](x=float(p[0]), y=float(p[1]), z=float(p[2])),
                orientation=T[G + "Quaternion"](
                    x=float(quat[0]), y=float(quat[1]), z=float(quat[2]), w=float(quat[3])
                ),
            )
            odom = T["nav_msgs/msg/Odometry"](
                header=_header(ns, "odom"),
                child_frame_id="root",
                pose=T[G + "PoseWithCovariance"](pose=pose, covariance=np.zeros(36)),
                twist=T[G + "TwistWithCovariance"](
                    twist=T[G + "Twist"](linear=_vec3(v[i, :3]), angular=_vec3(v[i, 3:6])),
                    covariance=np.zeros(36),
                ),
            )
            w.write(od, ns, TS.serialize_cdr(odom, "nav_msgs/msg/Odometry"))
            pin.framesForwardKinematics(model, data, q[i])
            for k, name in enumerate(log.contact_names):
                R = data.oMf[model.getFrameId(name)].rotation
                wrench = log.contact_wrenches[i, k] * (-1.0 if flip_right and k == 1 else 1.0)
                f_local, tau_local = R.T @ wrench[:3], R.T @ wrench[3:]
                msg = T[G + "WrenchStamped"](
                    header=_header(ns, name),
                    wrench=T[G + "Wrench"](force=_vec3(f_local), torque=_vec3(tau_local)),
                )
                w.write(ft[name], ns, TS.serialize_cdr(msg, G + "WrenchStamped"))
    return log


@pytest.fixture(scope="module")
def robot() -> wholebody.Robot:
    return wholebody.load("humanoid")


@pytest.fixture(scope="module")
def profile_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("profile") / "humanoid_bag.toml"
    text = (models_dir() / "humanoid.toml").read_text()
    path.write_text(text + PROFILE_TAIL)
    return path


def test_read_log_reads_a_bag_equal_to_the_log(tmp_path, robot, profile_path):
    bag = tmp_path / "squat"
    log = write_squat_bag(bag, robot)
    traj = read_log(bag, mapping=profile_path)
    q, v, _, tau = traj.for_robot(robot)
    q_ref, v_ref, _, tau_ref = log.for_robot(robot)
    np.testing.assert_allclose(traj.time, log.time - log.time[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(q, q_ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(v, v_ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(tau, tau_ref, rtol=0, atol=1e-12)
    # Foot axes back to world axes at the sole origin: the log's wrenches.
    cols = [traj.contact_names.index(n) for n in log.contact_names]
    np.testing.assert_allclose(
        traj.contact_wrenches[:, cols], log.contact_wrenches, rtol=0, atol=1e-9
    )


def test_read_log_needs_a_mapping_for_a_recording(tmp_path, robot):
    bag = tmp_path / "squat"
    write_squat_bag(bag, robot)
    with pytest.raises(InvalidArgumentError, match="ROS bag: give the profile"):
        read_log(bag)


def test_cli_checks_a_bag(tmp_path, robot, profile_path, capsys):
    good, flipped = tmp_path / "good", tmp_path / "flipped"
    write_squat_bag(good, robot)
    write_squat_bag(flipped, robot, flip_right=True)
    args = ["check", "--config", str(profile_path), "--preset", "measured", "--json"]
    assert main([*args, str(good)]) == 0
    capsys.readouterr()
    assert main([*args, str(flipped)]) == 1
