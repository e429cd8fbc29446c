"""ROS 2 bags (sqlite3 and MCAP storage) read back as Trajectories.

The bags are written here with rosbags' own writer from analytic signals: joint states at
500 Hz (the time base), odometry at 200 Hz with stamps offset by -1.3 ms, two force-torque
topics at 1 kHz offset by -0.6 ms, in the ankle links (not the soles). References:

- values at the joint-state stamps: the arrays written, exactly;
- interpolated odometry: the analytic signal, within the linear-interpolation bound
  ``h^2 / 8 max|f''|`` (h = 5 ms), with ``max|f''|`` from the analytic signal on a fine grid;
- the twist: written in the base frame (REP 105), so ``v`` is the analytic ``R^T dp/dt``;
- wrenches: Pinocchio's ``SE3.act`` on a ``pin.Force`` (a different algorithm from the
  reader's cross product), with per-sample ``Robot.placements``.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import wholebody
from wholebody.errors import (
    ExtrapolationError,
    InvalidArgumentError,
    MissingDependencyError,
    ProfileError,
    RecordingError,
    StateWarning,
)

rosbags = pytest.importorskip("rosbags")
from rosbags.rosbag2 import StoragePlugin, Writer  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402

from wholebody.io.recordings import (  # noqa: E402
    RosbagMapping,
    read_rosbag,
    read_rosbag_recording,
)

TS = get_typestore(Stores.ROS2_HUMBLE)
T = TS.types
T0_NS = 1_700_000_000_123_456_789  # a 2023 wall-clock stamp: float seconds would lose ~0.2 us
DURATION = 0.3
JS_RATE, ODOM_RATE, FT_RATE = 500, 200, 1000
ODOM_OFFSET_NS, FT_OFFSET_NS = -1_300_000, -600_000
W = 2 * math.pi * 1.5  # rad/s of every sinusoid
SENSORS = {"left_sole": "left_ankle_link", "right_sole": "right_ankle_link"}
MAPPING = {
    "joint_states": "/joint_states",
    "base_pose": "/odom",
    "wrenches": [
        {"topic": "/left_ft", "contact": "left_sole"},
        {"topic": "/right_ft", "contact": "right_sole"},
    ],
}


@pytest.fixture(scope="module")
def robot():
    return wholebody.load("humanoid")


def joint_position(t: np.ndarray, nj: int) -> np.ndarray:
    k = np.arange(nj)
    return 0.2 * np.sin(W * t[:, None] + 0.3 * k)


def base_pose(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position (N, 3) [m] and quaternion x-y-z-w (N, 4) of a yawing, swaying base."""
    pos = np.stack([0.05 * np.sin(W * t), 0.03 * np.cos(W * t), 0.8 + 0.01 * np.sin(W * t)], 1)
    yaw = 0.3 * np.sin(W * t)
    quat = np.stack([0 * t, 0 * t, np.sin(yaw / 2), np.cos(yaw / 2)], 1)
    return pos, quat


def base_twist_base_axes(t: np.ndarray) -> np.ndarray:
    """The analytic (v, omega) of :func:`base_pose` in base axes."""
    dp = np.stack([0.05 * W * np.cos(W * t), -0.03 * W * np.sin(W * t), 0.01 * W * np.cos(W * t)])
    yaw = 0.3 * np.sin(W * t)
    c, s = np.cos(yaw), np.sin(yaw)
    v = np.stack([c * dp[0] + s * dp[1], -s * dp[0] + c * dp[1], dp[2]], 1)
    omega = np.stack([0 * t, 0 * t, 0.3 * W * np.cos(W * t)], 1)
    return np.concatenate([v, omega], 1)


def sensor_wrench(t: np.ndarray, side: int) -> np.ndarray:
    """(N, 6) wrench in the sensor frame, about its origin [N, N m]."""
    k = np.arange(6)
    return (100.0 if side else 80.0) * (0.1 + np.sin(W * t[:, None] + k)) + 300.0 * (k == 2)


def stamp(ns: int):
    return T["builtin_interfaces/msg/Time"](sec=ns // 10**9, nanosec=ns % 10**9)


def header(ns: int, frame: str = ""):
    return T["std_msgs/msg/Header"](stamp=stamp(ns), frame_id=frame)


def vec3(x):
    return T["geometry_msgs/msg/Vector3"](x=float(x[0]), y=float(x[1]), z=float(x[2]))


def pose_msg(p, q):
    G = "geometry_msgs/msg/"
    return T[G + "Pose"](
        position=T[G + "Point"](x=float(p[0]), y=float(p[1]), z=float(p[2])),
        orientation=T[G + "Quaternion"](x=float(q[0]), y=float(q[1]), z=float(q[2]), w=float(q[3])),
    )


def grid(rate: int, offset_ns: int = 0, duration: float = DURATION) -> np.ndarray:
    n = int(round(duration * rate)) + 1
    return T0_NS + offset_ns + np.arange(n, dtype=np.int64) * (10**9 // rate)


def seconds(ns: np.ndarray, origin: int = T0_NS) -> np.ndarray:
    return (ns - origin).astype(float) * 1e-9


def write_bag(
    path: Path,
    storage: StoragePlugin,
    joints: list[str],
    *,
    odom_offset_ns: int = ODOM_OFFSET_NS,
    odom_type: str = "nav_msgs/msg/Odometry",
    odom_hole: tuple[float, float] | None = None,
    js_outlier: tuple[int, int] | None = None,
) -> None:
    with Writer(path, version=9, storage_plugin=storage) as w:

        def put(topic: str, msgtype: str, ns_list, make):
            con = w.add_connection(topic, msgtype, typestore=TS)
            for i, ns in enumerate(ns_list):
                # receive time 2 ms after the stamp: header stamps must win
                w.write(con, int(ns) + 2_000_000, TS.serialize_cdr(make(i, int(ns)), msgtype))

        js = grid(JS_RATE)
        P = joint_position(seconds(js), len(joints))
        if js_outlier is not None:  # (message, shift [ns]): one header stamped wrong
            js = js.copy()
            js[js_outlier[0]] += js_outlier[1]
        V = np.gradient(P, seconds(js), axis=0)  # any values: they are read back exactly
        E = 10 * P
        put(
            "/joint_states",
            "sensor_msgs/msg/JointState",
            js,
            # names reversed: the reader must map by name
            lambda i, ns: T["sensor_msgs/msg/JointState"](
                header=header(ns),
                name=joints[::-1],
                position=P[i, ::-1].copy(),
                velocity=V[i, ::-1].copy(),
                effort=E[i, ::-1].copy(),
            ),
        )
        od = grid(ODOM_RATE, odom_offset_ns, DURATION + 0.01)
        if odom_hole is not None:  # messages lost in transit
            od = od[(seconds(od) <= odom_hole[0]) | (seconds(od) >= odom_hole[1])]
        pos, quat = base_pose(seconds(od))
        tw = base_twist_base_axes(seconds(od))
        if odom_type == "nav_msgs/msg/Odometry":
            G = "geometry_msgs/msg/"
            put(
                "/odom",
                odom_type,
                od,
                lambda i, ns: T[odom_type](
                    header=header(ns, "odom"),
                    child_frame_id="root_link",
                    pose=T[G + "PoseWithCovariance"](
                        pose=pose_msg(pos[i], quat[i]), covariance=np.zeros(36)
                    ),
                    twist=T[G + "TwistWithCovariance"](
                        twist=T[G + "Twist"](linear=vec3(tw[i, :3]), angular=vec3(tw[i, 3:])),
                        covariance=np.zeros(36),
                    ),
                ),
            )
        else:  # PoseStamped + TwistStamped in world axes
            R = np.array([pin.Quaternion(q[3], q[0], q[1], q[2]).matrix() for q in quat])
            tw_world = np.concatenate(
                [np.einsum("nij,nj->ni", R, tw[:, :3]), np.einsum("nij,nj->ni", R, tw[:, 3:])], 1
            )
            put(
                "/odom",
                odom_type,
                od,
                lambda i, ns: T[odom_type](
                    header=header(ns, "odom"), pose=pose_msg(pos[i], quat[i])
                ),
            )
            put(
                "/twist",
                "geometry_msgs/msg/TwistStamped",
                od,
                lambda i, ns: T["geometry_msgs/msg/TwistStamped"](
                    header=header(ns, "odom"),
                    twist=T["geometry_msgs/msg/Twist"](
                        linear=vec3(tw_world[i, :3]), angular=vec3(tw_world[i, 3:])
                    ),
                ),
            )
        ft = grid(FT_RATE, FT_OFFSET_NS, DURATION + 0.002)
        for side, (topic, frame) in enumerate(
            [("/left_ft", SENSORS["left_sole"]), ("/right_ft", SENSORS["right_sole"])]
        ):
            Wr = sensor_wrench(seconds(ft), side)
            put(
                topic,
                "geometry_msgs/msg/WrenchStamped",
                ft,
                lambda i, ns, Wr=Wr, frame=frame: T["geometry_msgs/msg/WrenchStamped"](
                    header=header(ns, frame),
                    wrench=T["geometry_msgs/msg/Wrench"](
                        force=vec3(Wr[i, :3]), torque=vec3(Wr[i, 3:])
                    ),
                ),
            )


def interpolation_bound(signal, h: float) -> float:
    """Largest error of linear interpolation with step h of ``signal(t)`` (N, k): h^2 / 8 times
    max |f''| over the recording (by second differences on a 10 us grid, plus 2 %)."""
    fine = np.arange(-0.01, DURATION + 0.01, 1e-5)
    f2 = np.diff(signal(fine), 2, axis=0) / 1e-10
    return float(np.abs(f2).max()) * 1.02 * h * h / 8


@pytest.fixture(
    scope="module", params=[StoragePlugin.SQLITE3, StoragePlugin.MCAP], ids=["sqlite3", "mcap"]
)
def bag(request, tmp_path_factory, robot):
    path = tmp_path_factory.mktemp("bags") / f"run_{request.param.name.lower()}"
    write_bag(path, request.param, list(robot.joint_names))
    return path


def test_bag_reads_back_the_arrays_it_was_written_from(bag, robot):
    rec = read_rosbag_recording(bag, MAPPING, robot)
    traj = rec.trajectory
    js = grid(JS_RATE)
    t = seconds(js)
    nj = robot.nv - 6
    # Time base = joint-state header stamps, from the first one, exact to the nanosecond.
    np.testing.assert_allclose(traj.time, t, rtol=0, atol=1e-12)
    assert traj.metadata["time_origin"] == str(np.datetime64(T0_NS, "ns"))
    # Joints in the messages' order (written reversed); mapped to the robot by name.
    assert traj.joint_names == tuple(robot.joint_names)[::-1]
    q, v, _, tau = traj.for_robot(robot)
    # Joint values at their own stamps: exact.
    P = joint_position(t, nj)
    np.testing.assert_array_equal(q[:, 7:], P)
    np.testing.assert_array_equal(tau, 10 * P)
    np.testing.assert_array_equal(v[:, 6:], np.gradient(P, t, axis=0))
    # Odometry at 200 Hz, offset 1.3 ms: interpolated; the analytic pose within the bound.
    pos, quat = base_pose(t)
    h = 1.0 / ODOM_RATE
    tol_pos = interpolation_bound(lambda x: base_pose(x)[0], h)
    np.testing.assert_allclose(traj.q[:, :3], pos, rtol=0, atol=tol_pos)
    # Slerp of a yaw-only rotation is linear in yaw: the angle to the analytic rotation is
    # within the bound of the yaw (1e-7: arccos near 1).
    angle = 2 * np.arccos(np.clip(np.abs(np.einsum("ij,ij->i", traj.q[:, 3:7], quat)), 0, 1))
    yaw_bound = interpolation_bound(lambda x: 0.3 * np.sin(W * x)[:, None], h)
    assert angle.max() <= yaw_bound + 1e-7
    np.testing.assert_allclose(np.linalg.norm(traj.q[:, 3:7], axis=1), 1.0, rtol=0, atol=1e-12)
    tw = base_twist_base_axes(t)
    tol_twist = interpolation_bound(base_twist_base_axes, h)
    np.testing.assert_allclose(traj.v[:, :6], tw, rtol=0, atol=tol_twist)
    assert traj.metadata["base_frame"] == "root_link"
    # The raw stamps are kept: the odometry's own 200 Hz stamps, 1.3 ms after the origin.
    od = rec.topic_times["/odom"]
    assert od.used == "header"
    np.testing.assert_allclose(od.times[:3], [-1.3e-3, 3.7e-3, 8.7e-3], rtol=0, atol=1e-12)
    np.testing.assert_allclose(od.receive_delay(), 2e-3, rtol=0, atol=1e-12)
    summary = traj.metadata["topic_times"]["/left_ft"]
    assert summary["count"] == len(grid(FT_RATE, 0, DURATION + 0.002))
    assert summary["median_period"] == pytest.approx(1e-3, abs=1e-12)


def test_bag_wrenches_are_world_axes_at_the_contact_frame_origin(bag, robot):
    traj = read_rosbag(bag, MAPPING, robot)
    t = traj.time
    # Reference: each sensor sample at the joint stamps (the 1 kHz stream is linear between
    # its samples; the bound below covers it), moved by Pinocchio's SE3 action.
    q_robot = traj.for_robot(robot)[0]
    for side, (contact, sensor) in enumerate(SENSORS.items()):
        ws = sensor_wrench(t, side)
        expected = np.empty_like(ws)
        for i in range(0, len(t), 7):
            oMs = robot.placements(q_robot[i], sensor).se3()
            oMc = robot.placements(q_robot[i], contact).se3()
            at_contact = (oMc.inverse() * oMs).act(pin.Force(ws[i, :3], ws[i, 3:]))
            world = pin.SE3(oMc.rotation, np.zeros(3)).act(at_contact)  # world axes, same point
            expected[i] = np.concatenate([world.linear, world.angular])
        rows = slice(0, len(t), 7)
        # Linear interpolation of the 1 kHz sensor stream (h = 1 ms), the moment's bound
        # grown by the force's times a lever arm of at most 0.3 m.
        tol = interpolation_bound(lambda x, side=side: sensor_wrench(x, side), 1e-3) * 1.3
        np.testing.assert_allclose(
            traj.contact_wrench(contact)[rows], expected[rows], rtol=0, atol=tol
        )


def test_world_axes_twist_is_converted_once_to_the_base_frame(tmp_path, robot):
    path = tmp_path / "posestamped"
    write_bag(
        path, StoragePlugin.MCAP, list(robot.joint_names), odom_type="geometry_msgs/msg/PoseStamped"
    )
    mapping = dict(MAPPING, base_twist="/twist", twist_axes="world")
    traj = read_rosbag(path, mapping, robot)
    tw = base_twist_base_axes(traj.time)
    tol = interpolation_bound(base_twist_base_axes, 1 / ODOM_RATE)
    np.testing.assert_allclose(traj.v[:, :6], tw, rtol=0, atol=tol)
    with pytest.raises(RecordingError, match="'/twist': give twist_axes"):
        read_rosbag(path, dict(MAPPING, base_twist="/twist"), robot)


def test_a_uniform_rate_and_a_profile_section(bag, robot, tmp_path):
    profile = tmp_path / "lab.toml"
    profile.write_text(
        'robot = "humanoid"\n'
        '[[contacts]]\nframe = "left_sole"\nhalf_length = 0.1\nhalf_width = 0.05\nmu = 1\n'
        '[[contacts]]\nframe = "right_sole"\nhalf_length = 0.1\nhalf_width = 0.05\nmu = 1\n'
        '[recording]\njoint_states = "/joint_states"\nbase_pose = "/odom"\nrate = 250.0\n'
        '[[recording.wrenches]]\ntopic = "/left_ft"\ncontact = "left_sole"\n'
        'frame = "left_ankle_link"\n'
    )
    traj = read_rosbag(bag, profile)
    # The span every topic covers: the joint states' (the others start earlier, end later).
    np.testing.assert_allclose(traj.time, np.arange(round(DURATION * 250) + 1) / 250.0, atol=1e-12)
    assert traj.metadata["time_base"] == "250.0 Hz"
    assert traj.contact_names == ("left_sole",)
    P = joint_position(traj.time, robot.nv - 6)[:, ::-1]
    tol = interpolation_bound(lambda x: joint_position(x, robot.nv - 6), 1 / JS_RATE)
    np.testing.assert_allclose(traj.q[:, 7:], P, rtol=0, atol=tol)


# --- bad inputs ---------------------------------------------------------------------------


def test_missing_topic_names_it(bag, robot):
    with pytest.raises(RecordingError, match="no topic '/imu'.*topics: /joint_states") as e:
        read_rosbag(bag, dict(MAPPING, imu="/imu"), robot)
    assert e.value.name == "/imu"


def test_wrong_message_type_names_the_topic(bag, robot):
    with pytest.raises(
        RecordingError, match="topic '/odom' has message type nav_msgs/msg/Odometry"
    ):
        read_rosbag(bag, {"joint_states": "/odom"}, robot)


def test_extrapolation_is_refused_naming_the_topic(tmp_path, robot):
    path = tmp_path / "late_odom"  # odometry 20 ms late
    write_bag(path, StoragePlugin.SQLITE3, list(robot.joint_names), odom_offset_ns=20_000_000)
    uncropped = dict(MAPPING, crop=False)
    with pytest.raises(ExtrapolationError, match="topic '/odom' starts 0.02 s after") as e:
        read_rosbag(path, uncropped, robot)
    assert e.value.name == "/odom"
    assert e.value.covered[0] == pytest.approx(0.02, abs=1e-12)
    # Within the tolerance: accepted (end values held), only when crop = false.
    assert len(read_rosbag(path, dict(uncropped, tolerance=0.021), robot)) == len(grid(JS_RATE))


def test_the_default_crop_holds_no_end_value_and_says_what_it_cut(tmp_path, robot):
    """Streams that start and end at different times: the time base keeps only the joint
    stamps where every topic has started and not ended (nothing held), and the metadata and a
    warning say how many samples were cut at each end and because of which topic."""
    path = tmp_path / "late_odom"
    write_bag(path, StoragePlugin.SQLITE3, list(robot.joint_names), odom_offset_ns=20_000_000)
    js = grid(JS_RATE)
    with pytest.warns(StateWarning, match="cropped .* before '/odom' starts"):
        traj = read_rosbag(path, MAPPING, robot)
    first_odom = T0_NS + 20_000_000
    ends = [grid(FT_RATE, FT_OFFSET_NS, DURATION + 0.002)[-1], js[-1]]
    kept = js[(js >= first_odom) & (js <= min(ends))]
    assert len(traj) == kept.size
    assert traj.metadata["time_origin"] == str(np.datetime64(int(kept[0]), "ns"))
    cut = traj.metadata["cropped"]
    assert cut["samples_before"] == int((js < first_odom).sum()) == 10
    assert cut["samples_after"] == js.size - 10 - kept.size
    assert cut["started_last"] == "/odom"
    assert cut["start_s"] == pytest.approx(0.02, abs=1e-12)


def test_wrenches_in_sensor_frames_need_a_robot(bag):
    with pytest.raises(InvalidArgumentError, match="/left_ft: .*needs the robot"):
        read_rosbag(bag, MAPPING)


def test_unknown_sensor_frame_names_the_topic(bag, robot):
    mapping = dict(
        MAPPING, wrenches=[{"topic": "/left_ft", "contact": "left_sole", "frame": "left_ankel"}]
    )
    with pytest.raises(RecordingError, match="/left_ft: frame 'left_ankel' not found"):
        read_rosbag(bag, mapping, robot)


def test_mapping_errors_name_the_key():
    with pytest.raises(
        ProfileError, match="unknown key 'joint_state'; did you mean 'joint_states'"
    ):
        RosbagMapping.from_dict({"joint_states": "/js", "joint_state": "/js"})
    with pytest.raises(ProfileError, match="'twist_axes' must be one of 'base', 'world'"):
        RosbagMapping.from_dict({"joint_states": "/js", "twist_axes": "odom"})
    with pytest.raises(ProfileError, match=r"wrenches\[0\]: give 'contact' .* or 'external'"):
        RosbagMapping.from_dict({"joint_states": "/js", "wrenches": [{"topic": "/ft"}]})


def test_missing_bag_and_missing_dependency(tmp_path, monkeypatch):
    with pytest.raises(wholebody.errors.LogFileError, match="no such bag"):
        read_rosbag(tmp_path / "nope", {"joint_states": "/js"})
    monkeypatch.setitem(__import__("sys").modules, "rosbags.highlevel", None)
    with pytest.raises(MissingDependencyError, match=r"wholebody\[ros\]"):
        read_rosbag(tmp_path / "nope", {"joint_states": "/js"})


def test_the_docs_profile_sections_parse():
    """The TOML blocks of docs/recordings.md are valid sections (the recipe does not drift)."""
    import re
    import sys

    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    from wholebody.io.recordings import LerobotMapping

    text = (Path(__file__).resolve().parents[1] / "docs" / "recordings.md").read_text()
    blocks = [tomllib.loads(b) for b in re.findall(r"```toml\n(.*?)```", text, re.S)]
    assert len(blocks) == 2
    rec = RosbagMapping.from_dict(blocks[0]["recording"])
    topics = ("/joint_states", "/odom", "/imu", "/left_foot/ft", "/right_foot/ft", "/push")
    assert rec.topics() == topics
    assert rec.wrenches[0].frame == "left_ft_sensor" and rec.wrenches[1].frame is None
    assert rec.wrenches[2].external == "torso_link" and rec.wrenches[2].contact == ""
    le = LerobotMapping.from_dict(blocks[1]["lerobot"])
    assert (le.q.column, le.q.start, le.q.stop) == ("observation.state", 7, 36)
    assert le.wrenches[1].frame == "right_ft_sensor"
    assert le.wrenches[2].external == "right_hand"


def test_unset_header_stamps_fall_back_to_receive_times(tmp_path):
    path = tmp_path / "no_stamps"
    receive = T0_NS + np.array([0, 2_000_000, 4_100_000, 6_000_000])
    with Writer(path, version=9, storage_plugin=StoragePlugin.SQLITE3) as w:
        con = w.add_connection("/js", "sensor_msgs/msg/JointState", typestore=TS)
        for i, ns in enumerate(receive):
            msg = T["sensor_msgs/msg/JointState"](
                header=header(0),  # a driver that never sets its stamps
                name=["a"],
                position=np.array([float(i)]),
                velocity=np.array([0.5]),
                effort=np.array([], dtype=float),
            )
            w.write(con, int(ns), TS.serialize_cdr(msg, "sensor_msgs/msg/JointState"))
    rec = read_rosbag_recording(path, {"joint_states": "/js"})
    np.testing.assert_array_equal(rec.trajectory.time, seconds(receive))
    np.testing.assert_array_equal(rec.trajectory.q[:, 7], [0.0, 1.0, 2.0, 3.0])
    assert rec.trajectory.tau is None  # no efforts in the messages
    assert rec.topic_times["/js"].used == "receive"
    assert np.isnan(rec.topic_times["/js"].header).all()
    assert rec.trajectory.metadata["base"].startswith("not recorded")


def test_samples_inside_a_gap_are_flagged_not_made_up(tmp_path, robot):
    """Odometry lost for 60 ms (12 messages at 200 Hz): the joint-state samples inside the
    hole get NaN base values (the checks flag them) and a warning, not an interpolation
    across the hole; the others are read as usual."""
    from wholebody.check import CheckOptions
    from wholebody.check.analysis import check_trajectory
    from wholebody.contacts import SurfaceContact
    from wholebody.errors import StateWarning

    path = tmp_path / "holes"
    write_bag(path, StoragePlugin.MCAP, list(robot.joint_names), odom_hole=(0.1, 0.16))
    with pytest.warns(StateWarning, match=r"/odom \(\d+ samples, longest gap 0.065 s\)"):
        traj = read_rosbag(path, MAPPING, robot)
    t = traj.time + seconds(np.array([grid(JS_RATE)[0]]))[0]
    # Odometry stamps around the hole: the last before 0.1 s and the first after 0.16 s.
    od = seconds(grid(ODOM_RATE, ODOM_OFFSET_NS, DURATION + 0.01))
    before, after = od[od <= 0.1].max(), od[od >= 0.16].min()
    inside = (t > before) & (t < after)
    assert inside.sum() == traj.metadata["gaps"]["/odom"]["samples"] > 20
    assert np.isnan(traj.q[inside, :7]).all() and np.isnan(traj.v[inside, :6]).all()
    assert np.isfinite(traj.q[~inside]).all() and np.isfinite(traj.q[inside, 7:]).all()
    soles = [SurfaceContact(c, half_length=0.1, half_width=0.05, mu=1.0) for c in SENSORS]
    report = check_trajectory(
        robot, traj.with_accelerations(), soles, CheckOptions(diagnose_causes=False)
    )
    assert report.flagged[inside].all() and report.n_checked >= (~inside).sum() - 4
    # A larger max_gap accepts the hole (interpolated across, no NaN).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wide = read_rosbag(path, {**MAPPING, "max_gap": 0.1}, robot)
    assert np.isfinite(wide.q).all() and "gaps" not in wide.metadata


def test_imu_is_aligned_beside_the_trajectory(tmp_path):
    """An IMU at 400 Hz, offset by 0.7 ms, on joint states at 500 Hz: the orientation is
    slerped (a rotation about z at constant rate is exactly a slerp: 1e-12), rates and
    accelerations interpolated linearly (exact for the linear signals written here); the IMU
    frame is kept."""
    path = tmp_path / "imu"
    js, imu_ns = grid(JS_RATE), grid(400, 700_000, DURATION + 0.01)
    rate = 0.8  # rad/s about z
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        con = w.add_connection("/js", "sensor_msgs/msg/JointState", typestore=TS)
        for ns in js.tolist():
            msg = T["sensor_msgs/msg/JointState"](
                header=header(ns),
                name=["a"],
                position=np.zeros(1),
                velocity=np.zeros(1),
                effort=np.zeros(1),
            )
            w.write(con, ns, TS.serialize_cdr(msg, "sensor_msgs/msg/JointState"))
        con = w.add_connection("/imu", "sensor_msgs/msg/Imu", typestore=TS)
        for ns in imu_ns.tolist():
            s = seconds(np.array([ns]))[0]
            yaw = rate * s
            msg = T["sensor_msgs/msg/Imu"](
                header=header(ns, "imu_link"),
                orientation=T["geometry_msgs/msg/Quaternion"](
                    x=0.0, y=0.0, z=math.sin(yaw / 2), w=math.cos(yaw / 2)
                ),
                orientation_covariance=np.zeros(9),
                angular_velocity=vec3([0.0, 0.0, rate]),
                angular_velocity_covariance=np.zeros(9),
                linear_acceleration=vec3([1.0 + 2.0 * s, 0.0, 9.81]),
                linear_acceleration_covariance=np.zeros(9),
            )
            w.write(con, ns, TS.serialize_cdr(msg, "sensor_msgs/msg/Imu"))
    # The default crop leaves out the one joint sample before the IMU's first message.
    with pytest.warns(StateWarning, match="1 samples"):
        cropped = read_rosbag_recording(path, {"joint_states": "/js", "imu": "/imu"})
    assert len(cropped.trajectory) == js.size - 1
    rec = read_rosbag_recording(path, {"joint_states": "/js", "imu": "/imu", "crop": False})
    t = seconds(js)
    assert rec.imu is not None and rec.trajectory.metadata["imu_frame"] == "imu_link"
    quat = np.asarray(rec.imu["orientation"])
    # The first joint-state sample precedes the IMU's first message by 0.7 ms: within the
    # tolerance, the IMU's first value is held there (never extrapolated).
    t_held = t.copy()
    t_held[0] = seconds(imu_ns[:1])[0]
    yaw = rate * t_held
    ref = np.stack([0 * t, 0 * t, np.sin(yaw / 2), np.cos(yaw / 2)], 1)
    np.testing.assert_allclose(quat * np.sign(quat[:, 3:]), ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rec.imu["angular_velocity"][:, 2], rate, rtol=0, atol=1e-15)
    np.testing.assert_allclose(
        rec.imu["linear_acceleration"][:, 0], 1.0 + 2.0 * t_held, rtol=0, atol=1e-12
    )


def test_a_gap_in_poses_whose_twist_is_differentiated_stays_flagged(tmp_path, robot):
    """PoseStamped with a hole and differentiate = true: the twist is differentiated on the
    aligned poses; samples next to the hole are NaN (flagged), the rest finite."""
    path = tmp_path / "pose_hole"
    write_bag(
        path,
        StoragePlugin.MCAP,
        list(robot.joint_names),
        odom_type="geometry_msgs/msg/PoseStamped",
        odom_hole=(0.1, 0.16),
    )
    with pytest.warns(StateWarning, match="/odom"):
        traj = read_rosbag(path, {**MAPPING, "differentiate": True}, robot)
    holes = np.isnan(traj.q[:, 0])
    assert 20 < holes.sum() < 40 and np.isnan(traj.v[holes, :6]).all()
    assert np.isfinite(traj.v[~holes, 3:6][2:-2]).sum() > 0
    assert "base twist" in traj.metadata["estimated"]


def test_a_wrench_topic_maps_as_an_external_wrench(bag, robot):
    """A force-torque topic mapped with ``external``: stored as the external wrench at that
    frame's origin in world axes (reference: Pinocchio's SE3 action of the sensor reading),
    not as a contact."""
    mapping = dict(
        MAPPING,
        wrenches=[
            {"topic": "/left_ft", "contact": "left_sole"},
            {"topic": "/right_ft", "external": "right_ankle_link"},
        ],
    )
    traj = read_rosbag(bag, mapping, robot)
    assert traj.contact_names == ("left_sole",)
    assert traj.external_frames == ("right_ankle_link",)
    assert traj.metadata["topic_times"]["/right_ft"]["field"] == "external:right_ankle_link"
    q_robot = traj.for_robot(robot)[0]
    ws = sensor_wrench(traj.time, 1)
    # Per-component interpolation bound; a rotation mixes components: sqrt(3) times it.
    tol = interpolation_bound(lambda x: sensor_wrench(x, 1), 1e-3) * math.sqrt(3)
    for i in range(0, len(traj), 11):
        oMs = robot.placements(q_robot[i], "right_ankle_link").se3()
        world = pin.SE3(oMs.rotation, np.zeros(3)).act(pin.Force(ws[i, :3], ws[i, 3:]))
        expected = np.concatenate([world.linear, world.angular])
        np.testing.assert_allclose(traj.external_wrenches[i, 0], expected, rtol=0, atol=tol)
    with pytest.raises(ProfileError, match="'contact_frame' applies with 'contact'"):
        read_rosbag(
            bag,
            dict(
                MAPPING,
                wrenches=[{"topic": "/left_ft", "external": "x", "contact_frame": "y"}],
            ),
            robot,
        )


def test_contact_frame_is_honoured_with_every_axes_value(robot):
    """axes = 'world' with a contact_frame other than the contact's: the moment is moved from
    that frame's origin to the contact frame's (reference: Pinocchio's SE3 action); axes =
    'sensor' with a contact_frame that contradicts the profile's contact is refused."""
    from wholebody.io.recordings._assemble import AlignedWrench, assemble
    from wholebody.io.recordings.mapping import WrenchSource

    rng = np.random.default_rng(3)
    N = 6
    qj = 0.2 * rng.standard_normal((N, robot.nv - 6))
    base = (np.zeros((N, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (N, 1)), np.zeros((N, 6)))
    W = 50 * rng.standard_normal((N, 6))
    spec = WrenchSource("left_sole", "/f", contact_frame="left_ankle_link", axes="world")
    args = (np.arange(N) * 0.01, robot.joint_names, qj, np.zeros_like(qj), None, base)
    traj = assemble(
        *args,
        [AlignedWrench(spec, W, None)],
        robot=robot,
        contact_frames={"left_sole": "left_sole"},
        metadata={},
        source="test",
    )
    q_robot = traj.for_robot(robot)[0]
    for i in range(N):
        p_a = robot.placements(q_robot[i], "left_ankle_link").se3().translation
        p_s = robot.placements(q_robot[i], "left_sole").se3().translation
        moved = pin.SE3(np.eye(3), p_a - p_s).act(pin.Force(W[i, :3], W[i, 3:]))
        expected = np.concatenate([moved.linear, moved.angular])
        np.testing.assert_allclose(traj.contact_wrench("left_sole")[i], expected, atol=1e-12)
    sensor = WrenchSource("left_sole", "/f", contact_frame="left_ankle_link", frame="pelvis")
    with pytest.raises(ProfileError, match="contact_frame 'left_ankle_link' is not the frame"):
        assemble(
            *args,
            [AlignedWrench(sensor, W, "pelvis")],
            robot=robot,
            contact_frames={"left_sole": "left_sole"},
            metadata={},
            source="test",
        )


def test_an_external_wrench_enters_the_check_as_the_same_physics(bag, robot):
    """The same force-torque stream mapped as a contact (at the right sole) or as an external
    wrench (at the right ankle): the Newton-Euler residual of the check is the same to
    round-off, so the external wrench reaches the check at its own frame's origin."""
    from wholebody.check import CheckOptions
    from wholebody.check.analysis import check_trajectory
    from wholebody.contacts import SurfaceContact

    left = SurfaceContact("left_sole", half_length=0.12, half_width=0.05, mu=1.0)
    right = SurfaceContact("right_sole", half_length=0.12, half_width=0.05, mu=1.0)
    as_contact = read_rosbag(bag, MAPPING, robot).with_accelerations()
    pushed = dict(
        MAPPING,
        wrenches=[
            {"topic": "/left_ft", "contact": "left_sole"},
            {"topic": "/right_ft", "external": "right_ankle_link"},
        ],
    )
    as_external = read_rosbag(bag, pushed, robot).with_accelerations()
    a = check_trajectory(robot, as_contact, [left, right], CheckOptions(diagnose_causes=False))
    b = check_trajectory(robot, as_external, [left], CheckOptions(diagnose_causes=False))
    scale = robot.mass * 9.81
    assert np.isfinite(a.residual_force).all() and np.isfinite(b.residual_moment).all()
    np.testing.assert_allclose(b.residual_force, a.residual_force, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(b.residual_moment, a.residual_moment, rtol=0, atol=1e-9 * scale)


def test_an_unstamped_push_topic_maps_as_an_external_wrench(tmp_path):
    """A push recorded as geometry_msgs/msg/Wrench (no header): taken at its receive times,
    interpolated onto the joint stamps (exact for a force linear in time), kept in world axes
    at the external frame's origin; the trajectory's range is cropped to the push's."""
    path = tmp_path / "push"
    js = grid(JS_RATE)
    push_ns = grid(100, 1_000_000, DURATION)  # 100 Hz, 1 ms after the joint states start
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        con = w.add_connection("/js", "sensor_msgs/msg/JointState", typestore=TS)
        for ns in js.tolist():
            msg = T["sensor_msgs/msg/JointState"](
                header=header(ns),
                name=["a"],
                position=np.zeros(1),
                velocity=np.zeros(1),
                effort=np.zeros(1),
            )
            w.write(con, ns, TS.serialize_cdr(msg, "sensor_msgs/msg/JointState"))
        con = w.add_connection("/push", "geometry_msgs/msg/Wrench", typestore=TS)
        for ns in push_ns.tolist():
            s = seconds(np.array([ns]))[0]
            msg = T["geometry_msgs/msg/Wrench"](
                force=vec3([10.0 + 100.0 * s, 0.0, 0.0]), torque=vec3([0.0, 0.0, 1.0])
            )
            w.write(con, ns, TS.serialize_cdr(msg, "geometry_msgs/msg/Wrench"))
    mapping = {
        "joint_states": "/js",
        "wrenches": [{"topic": "/push", "external": "torso", "axes": "world"}],
    }
    with pytest.warns(StateWarning, match="cropped"):
        traj = read_rosbag(path, mapping)
    assert traj.external_frames == ("torso",) and traj.contact_names == ()
    assert traj.metadata["topic_times"]["/push"]["stamps"] == "receive"
    origin = np.datetime64(traj.metadata["time_origin"], "ns") - np.datetime64(T0_NS, "ns")
    t = traj.time + origin.astype(np.int64) * 1e-9  # seconds since the first joint stamp
    np.testing.assert_allclose(traj.external_wrenches[:, 0, 0], 10.0 + 100.0 * t, atol=1e-9)
    np.testing.assert_allclose(traj.external_wrenches[:, 0, 5], 1.0, atol=1e-15)
    with pytest.raises(RecordingError, match="give the sensor frame as 'frame'"):
        read_rosbag(path, dict(mapping, wrenches=[{"topic": "/push", "external": "torso"}]))


def test_an_outlier_stamp_is_flagged_not_cropped(tmp_path, robot):
    """Issue 37 (a regression): a joint-state message stamped 100 s late was cut off with the
    time base's end (a warning about the crop); it is kept as a sample of NaN fields (flagged
    by the checks), named in a warning and in ``metadata["outlier_stamps"]``."""
    path = tmp_path / "outlier"
    write_bag(path, StoragePlugin.SQLITE3, list(robot.joint_names), js_outlier=(40, 100 * 10**9))
    clean = tmp_path / "clean"
    write_bag(clean, StoragePlugin.SQLITE3, list(robot.joint_names))
    with pytest.warns(StateWarning, match=r"1 message\(s\) of '/joint_states' stamped far"):
        traj = read_rosbag(path, MAPPING, robot)
    reference = read_rosbag(clean, MAPPING, robot)
    assert len(traj) == len(reference)  # one sample moved to the end, none dropped
    (i,) = traj.metadata["outlier_stamps"]["samples"]
    assert i == len(traj) - 1
    assert traj.metadata["outlier_stamps"]["times_s"][0] == pytest.approx(traj.time[i], abs=1e-9)
    assert traj.time[i] > 100.0
    assert np.isnan(traj.q[i]).all() and np.isnan(traj.contact_wrenches[i]).all()
    assert np.isfinite(traj.q[:i]).all()
    assert "cropped" not in traj.metadata or traj.metadata["cropped"]["samples_after"] == 0
