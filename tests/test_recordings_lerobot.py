"""LeRobot-style Parquet datasets read back as Trajectories.

A tiny dataset (two episodes of the shipped humanoid) is written here with pyarrow in
LeRobot v2's layout (one file per episode) and v3's (episodes sharing a file). References:
the arrays written (float32 in the file, so compared after the same cast, exactly); the base
twist, written in world axes, against ``R^T`` with ``R`` from Pinocchio's quaternion; a
sensor-frame wrench against Pinocchio's ``SE3.act`` on a ``pin.Force``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import wholebody
from wholebody.errors import LogFormatError, ProfileError, RecordingError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from wholebody.io.recordings import (  # noqa: E402
    LerobotDataset,
    LerobotMapping,
    lerobot_episodes,
    read_lerobot,
)

FPS = 50
LENGTHS = (12, 9)  # frames per episode
MAPPING = {
    "q": "observation.state[7:]",
    "base_position": "observation.state[0:3]",
    "base_orientation": "observation.state[3:7]",
    "quaternion_order": "wxyz",
    "v": "observation.velocity[6:]",
    "base_linear_velocity": "observation.velocity[0:3]",
    "base_angular_velocity": "observation.velocity[3:6]",
    "twist_axes": "world",
    "tau": "observation.effort",
    "wrenches": [
        {"column": "observation.wrench[0:6]", "contact": "left_sole", "axes": "world"},
        {
            "column": "observation.wrench[6:12]",
            "contact": "right_sole",
            "frame": "right_ankle_link",
        },
    ],
}


@pytest.fixture(scope="module")
def robot():
    return wholebody.load("humanoid")


def episode_arrays(ep: int, n: int, nj: int) -> dict[str, np.ndarray]:
    """float32 arrays of one episode, as a dataset would store them."""
    rng = np.random.default_rng(ep)
    t = np.arange(n) / FPS
    quat_xyzw = rng.normal(size=(n, 4))
    quat_xyzw /= np.linalg.norm(quat_xyzw, axis=1, keepdims=True)
    state = np.concatenate(
        [rng.normal(size=(n, 3)), quat_xyzw[:, [3, 0, 1, 2]], rng.normal(size=(n, nj))], 1
    )
    return {
        "timestamp": t.astype(np.float32),
        "observation.state": state.astype(np.float32),
        "observation.velocity": rng.normal(size=(n, 6 + nj)).astype(np.float32),
        "observation.effort": rng.normal(size=(n, nj)).astype(np.float32),
        "observation.wrench": (100 * rng.normal(size=(n, 12))).astype(np.float32),
        "action": rng.normal(size=(n, nj)).astype(np.float32),
    }


def table_of(ep: int, arrays: dict[str, np.ndarray], first_index: int):
    n = len(arrays["timestamp"])
    cols = {
        k: pa.array(list(v), type=pa.list_(pa.float32())) if v.ndim == 2 else pa.array(v)
        for k, v in arrays.items()
    }
    cols["frame_index"] = pa.array(np.arange(n, dtype=np.int64))
    cols["episode_index"] = pa.array(np.full(n, ep, dtype=np.int64))
    cols["index"] = pa.array(first_index + np.arange(n, dtype=np.int64))
    return pa.table(cols)


def write_dataset(root: Path, robot, layout: str = "v2") -> dict[int, dict[str, np.ndarray]]:
    nj = robot.nv - 6
    joints = list(robot.joint_names)
    episodes = {ep: episode_arrays(ep, n, nj) for ep, n in enumerate(LENGTHS)}
    base = ["x", "y", "z", "qw", "qx", "qy", "qz"]
    info = {
        "codebase_version": "v2.1" if layout == "v2" else "v3.0",
        "fps": FPS,
        "chunks_size": 1000,
        "total_episodes": len(LENGTHS),
        "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
        if layout == "v2"
        else "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        "features": {
            "observation.state": {"dtype": "float32", "shape": [7 + nj], "names": base + joints},
            "observation.velocity": {"dtype": "float32", "shape": [6 + nj], "names": None},
            "observation.effort": {"dtype": "float32", "shape": [nj], "names": {"motors": joints}},
            "observation.wrench": {"dtype": "float32", "shape": [12], "names": None},
            "action": {"dtype": "float32", "shape": [nj], "names": joints},
            "timestamp": {"dtype": "float32", "shape": [1], "names": None},
        },
    }
    (root / "meta").mkdir(parents=True)
    (root / "meta" / "info.json").write_text(json.dumps(info))
    (root / "data" / "chunk-000").mkdir(parents=True)
    tables, first = [], 0
    for ep, arrays in episodes.items():
        tables.append(table_of(ep, arrays, first))
        first += len(arrays["timestamp"])
    if layout == "v2":
        for ep, table in enumerate(tables):
            pq.write_table(table, root / "data" / "chunk-000" / f"episode_{ep:06d}.parquet")
    else:
        pq.write_table(pa.concat_tables(tables), root / "data" / "chunk-000" / "file-000.parquet")
    return episodes


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, robot):
    root = tmp_path_factory.mktemp("lerobot") / "ds"
    return root, write_dataset(root, robot)


def check_episode(traj, arrays, robot, ep):
    f64 = {k: v.astype(np.float64) for k, v in arrays.items()}
    state, vel = f64["observation.state"], f64["observation.velocity"]
    assert traj.joint_names == tuple(robot.joint_names)
    assert traj.metadata["episode_index"] == ep
    np.testing.assert_array_equal(traj.time, f64["timestamp"])
    np.testing.assert_array_equal(traj.q[:, :3], state[:, :3])
    quat = state[:, [4, 5, 6, 3]]  # w-x-y-z in the file; normalised on reading
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    np.testing.assert_allclose(traj.q[:, 3:7], quat, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(traj.q[:, 7:], state[:, 7:])
    np.testing.assert_array_equal(traj.v[:, 6:], vel[:, 6:])
    np.testing.assert_array_equal(traj.tau, f64["observation.effort"])
    R = np.array([pin.Quaternion(q[3], q[0], q[1], q[2]).matrix() for q in quat])
    np.testing.assert_allclose(traj.v[:, :3], np.einsum("nji,nj->ni", R, vel[:, :3]), atol=1e-12)
    np.testing.assert_allclose(traj.v[:, 3:6], np.einsum("nji,nj->ni", R, vel[:, 3:6]), atol=1e-12)
    W = f64["observation.wrench"]
    np.testing.assert_array_equal(traj.contact_wrench("left_sole"), W[:, :6])
    for i in range(len(traj)):
        oMs = robot.placements(traj.q[i], "right_ankle_link").se3()
        oMc = robot.placements(traj.q[i], "right_sole").se3()
        at_c = (oMc.inverse() * oMs).act(pin.Force(W[i, 6:9], W[i, 9:12]))
        world = pin.SE3(oMc.rotation, np.zeros(3)).act(at_c)
        np.testing.assert_allclose(
            traj.contact_wrench("right_sole")[i],
            np.concatenate([world.linear, world.angular]),
            rtol=0,
            atol=1e-9,  # [N, N m] on wrenches of ~100 N
        )


def test_dataset_reads_back_equal_to_its_arrays(dataset, robot):
    root, episodes = dataset
    data = LerobotDataset(root, MAPPING, robot)
    assert data.episodes == (0, 1) and len(data) == 2
    for ep, traj in enumerate(lerobot_episodes(root, MAPPING, robot)):
        check_episode(traj, episodes[ep], robot, ep)
    check_episode(read_lerobot(root, MAPPING, episode=1, robot=robot), episodes[1], robot, 1)


def test_v3_layout_episodes_share_a_file(tmp_path, robot):
    episodes = write_dataset(tmp_path / "ds3", robot, layout="v3")
    data = LerobotDataset(tmp_path / "ds3", MAPPING, robot)
    assert data.episodes == (0, 1)
    check_episode(data.read(1), episodes[1], robot, 1)


def test_profile_section_and_differentiated_velocities(dataset, robot, tmp_path):
    root, episodes = dataset
    profile = tmp_path / "lab.toml"
    profile.write_text(
        'robot = "humanoid"\n'
        '[[contacts]]\nframe = "left_sole"\nhalf_length = 0.1\nhalf_width = 0.05\nmu = 1\n'
        '[lerobot]\nq = "action"\ndifferentiate = true\n'
    )
    traj = read_lerobot(root, profile, episode=0)
    act = episodes[0]["action"].astype(np.float64)
    t = episodes[0]["timestamp"].astype(np.float64)
    np.testing.assert_array_equal(traj.q[:, 7:], act)
    # Second-order central differences for uneven steps (float32 times are uneven), one-sided
    # at the ends: f'_i = (h1^2 f_{i+1} - h2^2 f_{i-1} + (h2^2 - h1^2) f_i) / (h1 h2 (h1 + h2)).
    h1, h2 = (t[1:-1] - t[:-2])[:, None], (t[2:] - t[1:-1])[:, None]
    central = (h1**2 * act[2:] - h2**2 * act[:-2] + (h2**2 - h1**2) * act[1:-1]) / (
        h1 * h2 * (h1 + h2)
    )
    np.testing.assert_allclose(traj.v[1:-1, 6:], central, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(traj.v[0, 6:], (act[1] - act[0]) / (t[1] - t[0]), rtol=1e-12)
    assert traj.metadata["estimated"] == ["joint velocities"]
    np.testing.assert_array_equal(traj.q[:, 3:7], np.tile([0, 0, 0, 1.0], (len(t), 1)))


# --- bad inputs ---------------------------------------------------------------------------


def test_unknown_column_names_it(dataset, robot):
    root, _ = dataset
    with pytest.raises(RecordingError, match="no column 'observation.torque' .*columns: ") as e:
        read_lerobot(root, dict(MAPPING, tau="observation.torque"), robot=robot)
    assert e.value.name == "observation.torque"


def test_bad_slice_missing_names_and_missing_episode(dataset, robot):
    root, _ = dataset
    with pytest.raises(RecordingError, match=r"base_position 'observation.state\[0:4\]' selects 4"):
        read_lerobot(root, dict(MAPPING, base_position="observation.state[0:4]"), robot=robot)
    with pytest.raises(RecordingError, match="gives no names for column 'observation.velocity'"):
        read_lerobot(root, {"q": "observation.velocity[6:]", "differentiate": True})
    with pytest.raises(RecordingError, match="no episode 7"):
        read_lerobot(root, MAPPING, episode=7, robot=robot)


def test_not_a_dataset_and_mapping_errors(tmp_path):
    with pytest.raises(LogFormatError, match="no meta/info.json"):
        LerobotDataset(tmp_path, {"q": "observation.state"})
    with pytest.raises(
        ProfileError, match="unknown key 'base_orientaton'; did you mean 'base_orientation'"
    ):
        LerobotMapping.from_dict({"q": "s", "base_orientaton": "s[3:7]"})
    with pytest.raises(ProfileError, match=r"'q' must be 'column' or 'column\[start:stop\]'"):
        LerobotMapping.from_dict({"q": "s[0:3"})
    with pytest.raises(ProfileError, match="give 'frame' .* or axes = 'world'"):
        LerobotMapping.from_dict({"q": "s", "wrenches": [{"column": "w", "contact": "c"}]})


def test_read_recording_dispatches_by_path(dataset, robot, tmp_path):
    from wholebody.io.recordings import read_recording, recording_kind

    root, episodes = dataset
    assert recording_kind(root) == "lerobot"
    assert recording_kind(tmp_path / "run.mcap") == "rosbag"
    assert recording_kind(tmp_path / "log.npz") is None
    traj = read_recording(root, MAPPING, robot, episode=1)
    np.testing.assert_array_equal(traj.q[:, 7:], episodes[1]["observation.state"][:, 7:])
    with pytest.raises(LogFormatError, match="log.npz: not a recording"):
        read_recording(tmp_path / "log.npz", MAPPING)
