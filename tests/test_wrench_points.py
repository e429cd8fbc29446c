"""Wrenches at stated points: moments about a point fixed in the contact frame, per-sample
world points, point forces with positions, pushes at a point; in every log format.

Independent references: the logs here are built by hand from a consistent log (the shipped
squat, wrenches about the sole origins) with raw Pinocchio placements (``forwardKinematics``
+ ``updateFramePlacement`` on a fresh ``Data``, not :meth:`Robot.placements`) and
``np.cross``; :meth:`Trajectory.at_frame_origins` must give the original wrenches back, and
the checks must find the moved logs consistent. No MuJoCo.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from wholebody.check import CheckOptions
from wholebody.check.analysis import check_log, check_trajectory, estimate_trajectory
from wholebody.errors import ContactNotFoundError, LogFormatError
from wholebody.io import open_log
from wholebody.io.profile import load_profile
from wholebody.models import models_dir
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
FORMATS = [".npz", ".csv", ".parquet", ".h5"]
#: Points fixed in the sole frames (an ankle above and behind the sole) [m].
ANKLE = np.array([[0.02, -0.01, 0.08], [-0.03, 0.015, 0.07]])
#: Sole corners in the sole frame [m] (the profile's half sizes do not matter here).
CORNERS = np.array([[0.1, 0.05, 0.0], [-0.1, 0.05, 0.0], [-0.1, -0.05, 0.0], [0.1, -0.05, 0.0]])


def _format_available(suffix: str) -> None:
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    if suffix == ".h5":
        pytest.importorskip("h5py")


@pytest.fixture(scope="module")
def profile():
    return load_profile(models_dir() / "humanoid.toml")


@pytest.fixture(scope="module")
def squat() -> Trajectory:
    return Trajectory.load(ROOT / "data" / "humanoid_squat.npz")


def _model_q(traj: Trajectory, model: pin.Model) -> np.ndarray:
    """``q`` in the model's joint order, by name (plain indexing)."""
    col = {n: i for i, n in enumerate(traj.joint_names)}
    order = [col[model.names[j]] for j in range(2, model.njoints)]
    return np.concatenate([traj.q[:, :7], traj.q[:, 7:][:, order]], axis=1)


def _raw_placements(robot, traj: Trajectory, frame: str) -> tuple[np.ndarray, np.ndarray]:
    """Origins (N, 3) and rotations (N, 3, 3) of ``frame`` by raw Pinocchio calls."""
    model = robot.model
    data = model.createData()
    fid = model.getFrameId(frame)
    Q = _model_q(traj, model)
    org, R = np.empty((len(Q), 3)), np.empty((len(Q), 3, 3))
    for i, q in enumerate(Q):
        pin.forwardKinematics(model, data, q)
        pin.updateFramePlacement(model, data, fid)
        org[i], R[i] = data.oMf[fid].translation, data.oMf[fid].rotation
    return org, R


@pytest.fixture(scope="module")
def soles(profile, squat):
    """Raw placements of the two soles over the squat: {name: (org, R)}."""
    return {c.frame: _raw_placements(profile.robot, squat, c.frame) for c in profile.contacts}


def _about(W: np.ndarray, arm: np.ndarray) -> np.ndarray:
    """Wrenches (N, 6) about the origin moved to origin + arm (N, 3): tau - arm x f."""
    out = W.copy()
    out[:, 3:] -= np.cross(arm, W[:, :3])
    return out


def _corner_forces(W: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """Four forces (N, 4, 3) at ``arms`` (N, 4, 3) from the origin whose sum is the wrench
    W (N, 6): the minimum-norm solution of the 6 x 12 linear system, per sample."""
    out = np.empty((len(W), 4, 3))
    for i in range(len(W)):
        A = np.zeros((6, 12))
        for c in range(4):
            A[:3, 3 * c : 3 * c + 3] = np.eye(3)
            A[3:, 3 * c : 3 * c + 3] = pin.skew(arms[i, c])
        out[i] = np.linalg.lstsq(A, W[i], rcond=None)[0].reshape(4, 3)
    return out


# --- the conversion against hand-computed shifts ------------------------------------------------


def test_nothing_to_convert_returns_the_same_log(profile, squat):
    assert not squat.has_points
    assert squat.at_frame_origins(profile.robot, profile.contacts) is squat


def test_points_fixed_in_the_soles_move_back_to_the_origins(profile, squat, soles):
    """Moments about an ankle point fixed in each sole frame (tau_P = tau_O - (R p) x f by
    hand) convert back to the logged wrenches to 1e-12 N m, and the residual equals the
    original log's to 1e-12."""
    W = squat.contact_wrenches.copy()
    for j, name in enumerate(squat.contact_names):
        org, R = soles[name]
        W[:, j] = _about(W[:, j], np.einsum("nij,j->ni", R, ANKLE[j]))
    moved = replace(squat, contact_wrenches=W, contact_points_local=ANKLE)
    assert moved.has_points
    back = moved.at_frame_origins(profile.robot, profile.contacts)
    assert not back.has_points and back.contact_points_local is None
    np.testing.assert_allclose(back.contact_wrenches, squat.contact_wrenches, rtol=0, atol=1e-12)
    ref = check_trajectory(profile.robot, squat, profile.contacts)
    got = check_trajectory(profile.robot, moved, profile.contacts)
    assert got.verdict == ref.verdict == "consistent"
    np.testing.assert_allclose(got.residual_force, ref.residual_force, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.residual_moment, ref.residual_moment, rtol=0, atol=1e-12)
    # The point matters: read as if about the origins, the same numbers are inconsistent.
    wrong = check_trajectory(
        profile.robot, replace(moved, contact_points_local=None), profile.contacts
    )
    assert wrong.verdict == "inconsistent"


def test_contacts_as_a_mapping_and_by_frame_name(profile, squat, soles):
    W = squat.contact_wrenches.copy()
    org, R = soles["left_sole"]
    W[:, 0] = _about(W[:, 0], np.einsum("nij,j->ni", R, ANKLE[0]))
    points = np.vstack([ANKLE[0], np.zeros(3)])  # the right sole about its origin
    moved = replace(squat, contact_wrenches=W, contact_points_local=points)
    for contacts in (None, {"left_sole": "left_sole"}):  # only the left sole needs a frame
        back = moved.at_frame_origins(profile.robot, contacts)
        np.testing.assert_allclose(
            back.contact_wrenches, squat.contact_wrenches, rtol=0, atol=1e-12
        )
    with pytest.raises(ContactNotFoundError, match="contact 'left_sole' not found"):
        moved.at_frame_origins(profile.robot, {"right_sole": "right_sole"})


def test_world_points_per_sample_like_a_cop_log(profile, squat, soles):
    """Moments about a point that moves in the world each sample (a CoP-referenced log)."""
    rng = np.random.default_rng(0)
    W = squat.contact_wrenches.copy()
    P = np.empty((len(squat), 2, 3))
    for j, name in enumerate(squat.contact_names):
        org, R = soles[name]
        local = rng.uniform(-0.1, 0.1, size=(len(squat), 3)) * [1, 0.5, 0]
        arm = np.einsum("nij,nj->ni", R, local)
        P[:, j] = org + arm
        W[:, j] = _about(W[:, j], arm)
    moved = replace(squat, contact_wrenches=W, contact_points_world=P)
    back = moved.at_frame_origins(profile.robot, profile.contacts)
    np.testing.assert_allclose(back.contact_wrenches, squat.contact_wrenches, rtol=0, atol=1e-12)
    assert check_trajectory(profile.robot, moved, profile.contacts).verdict == "consistent"


def test_point_forces_sum_back_into_their_contact(profile, squat, soles):
    """Each sole's wrench given as four corner forces (world positions), nothing in
    contact_wrenches: the conversion sums them back (1e-9 N, N m: the split is a
    least-squares solve)."""
    forces, positions = [], []
    for j, name in enumerate(squat.contact_names):
        org, R = soles[name]
        arms = np.einsum("nij,cj->nci", R, CORNERS)
        forces.append(_corner_forces(squat.contact_wrenches[:, j], arms))
        positions.append(org[:, None, :] + arms)
    moved = Trajectory.from_arrays(
        squat.time,
        squat.q,
        squat.v,
        a=squat.a,
        tau=squat.tau,
        joint_names=squat.joint_names,
        contact_wrenches={n: np.zeros((len(squat), 6)) for n in squat.contact_names},
        point_forces=dict(zip(squat.contact_names, forces, strict=True)),
        point_force_positions=dict(zip(squat.contact_names, positions, strict=True)),
    )
    assert moved.point_force_contacts == ("left_sole",) * 4 + ("right_sole",) * 4
    back = moved.at_frame_origins(profile.robot, profile.contacts)
    np.testing.assert_allclose(back.contact_wrenches, squat.contact_wrenches, rtol=0, atol=1e-9)
    # Force parts: a plain sum, exact up to the split's rounding.
    np.testing.assert_allclose(
        back.contact_wrenches[..., :3],
        np.stack([f.sum(axis=1) for f in forces], axis=1),
        rtol=0,
        atol=1e-12,
    )
    assert check_trajectory(profile.robot, moved, profile.contacts).verdict == "consistent"


def _pushed(profile, squat, soles):
    """The squat with a push on the torso at a point fixed in it, compensated on the left
    sole: (log with the push at world points, the push's world points, the local point)."""
    robot = profile.robot
    O_t, R_t = _raw_placements(robot, squat, "torso")
    local = np.array([0.1, -0.05, 0.2])
    p = O_t + np.einsum("nij,j->ni", R_t, local)
    N = len(squat)
    f = np.column_stack([3 * np.sin(np.arange(N) / 50), np.full(N, -2.0), np.zeros(N)])
    W = squat.contact_wrenches.copy()
    org, _ = soles["left_sole"]
    W[:, 0, :3] -= f
    W[:, 0, 3:] -= np.cross(p - org, f)
    log = Trajectory.from_arrays(
        squat.time,
        squat.q,
        squat.v,
        a=squat.a,
        tau=squat.tau,
        joint_names=squat.joint_names,
        contact_wrenches={n: W[:, j] for j, n in enumerate(squat.contact_names)},
        external_wrenches={"torso": f},
        external_points_world={"torso": p},
    )
    return log, p, local


def test_a_push_at_a_world_point_or_at_a_point_fixed_in_a_link(profile, squat, soles):
    log, p, local = _pushed(profile, squat, soles)
    O_t, _ = _raw_placements(profile.robot, squat, "torso")
    for pushed in (log, replace(log, external_points_world=None, external_points_local=[local])):
        back = pushed.at_frame_origins(profile.robot, profile.contacts)
        E = back.external_wrenches
        np.testing.assert_allclose(E[:, 0, :3], log.external_wrenches[:, 0, :3], rtol=0, atol=0)
        np.testing.assert_allclose(
            E[:, 0, 3:], np.cross(p - O_t, log.external_wrenches[:, 0, :3]), rtol=0, atol=1e-12
        )
        report = check_trajectory(profile.robot, pushed, profile.contacts)
        assert report.verdict == "consistent"
        assert np.nanmax(np.abs(report.residual_force)) < 1e-9
        assert np.nanmax(np.abs(report.residual_moment)) < 1e-9
    wrong = replace(log, external_points_world=None)  # the push read as at the torso origin
    lever = np.linalg.norm(np.cross(p - O_t, log.external_wrenches[:, 0, :3]), axis=1)
    residual = check_trajectory(profile.robot, wrong, profile.contacts).residual_moment
    np.testing.assert_allclose(np.linalg.norm(residual, axis=1), lever, rtol=0, atol=1e-9)


def test_nan_points_under_zero_forces_are_ignored_and_flag_otherwise(profile, squat):
    """A foot in the air logs no point (NaN) and no force: the converted wrench is zero. A NaN
    point under a non-zero force makes that sample's wrench NaN: the check flags it alone."""
    cut = squat.select(slice(0, 50))
    P = np.zeros((50, 2, 3))
    W = cut.contact_wrenches.copy()
    W[10, 1] = 0.0
    P[10, 1] = np.nan
    P[20, 0] = np.nan
    moved = replace(cut, contact_wrenches=W, contact_points_world=P)
    back = moved.at_frame_origins(profile.robot, profile.contacts)
    np.testing.assert_array_equal(back.contact_wrenches[10, 1], np.zeros(6))
    assert np.isnan(back.contact_wrenches[20, 0, 3:]).all()
    assert np.isfinite(np.delete(back.contact_wrenches, 20, axis=0)).all()
    report = check_trajectory(
        profile.robot, moved, profile.contacts, CheckOptions(diagnose_causes=False)
    )
    assert report.flagged[20] and report.flagged.sum() == 1


# --- every format: saved, reloaded, checked --------------------------------------------------


def _rich_log(profile, squat, soles) -> Trajectory:
    """Left sole about an ankle point fixed in it; right sole as four corner point forces
    plus a remainder wrench about the ankle; a push at a point fixed in the torso."""
    log, _, local = _pushed(profile, squat, soles)
    W = log.contact_wrenches.copy()
    org, R = soles["left_sole"]
    W[:, 0] = _about(W[:, 0], np.einsum("nij,j->ni", R, ANKLE[0]))
    org, R = soles["right_sole"]
    arms = np.einsum("nij,cj->nci", R, CORNERS)
    half = 0.5 * W[:, 1]  # half as corner forces, half as a wrench about the ankle
    F = _corner_forces(half, arms)
    W[:, 1] = _about(half, np.einsum("nij,j->ni", R, ANKLE[1]))
    return replace(
        log,
        contact_wrenches=W,
        contact_points_local=ANKLE,
        point_forces=F,
        point_force_positions=org[:, None, :] + arms,
        point_force_contacts=("right_sole",) * 4,
        external_points_world=None,
        external_points_local=local[None],
    )


@pytest.mark.parametrize("suffix", FORMATS)
def test_a_rich_log_checks_consistent_in_every_format(tmp_path, profile, squat, soles, suffix):
    """Saved, reloaded, checked in memory and streamed in chunks: consistent to 1e-9."""
    _format_available(suffix)
    log = _rich_log(profile, squat, soles)
    path = tmp_path / f"rich{suffix}"
    log.save(path)
    loaded = Trajectory.load(path)
    np.testing.assert_array_equal(loaded.point_forces, log.point_forces)
    np.testing.assert_array_equal(loaded.contact_points_local, ANKLE)
    in_memory = check_trajectory(profile.robot, loaded, profile.contacts)
    streamed = check_log(profile.robot, path, profile.contacts, CheckOptions(chunk_size=170))
    for report in (in_memory, streamed):
        assert report.verdict == "consistent"
        assert np.nanmax(np.abs(report.residual_force)) < 1e-9
        assert np.nanmax(np.abs(report.residual_moment)) < 1e-9
    np.testing.assert_allclose(
        streamed.residual_force, in_memory.residual_force, rtol=0, atol=1e-12
    )
    with open_log(path) as reader:
        assert reader.has_points
        converted = reader.at_frame_origins(profile.robot, profile.contacts)
        assert not converted.has_points
        part = converted.read(100, 300)
    whole = loaded.at_frame_origins(profile.robot, profile.contacts)
    np.testing.assert_allclose(
        part.contact_wrenches, whole.contact_wrenches[100:300], rtol=0, atol=0
    )


def test_estimation_converts_the_points_first(profile, squat, soles):
    """The estimate of a rich log equals the estimate of the same log at the origins."""
    log = _rich_log(profile, squat, soles).select(slice(0, 40))
    ref = estimate_trajectory(
        profile.robot, log.at_frame_origins(profile.robot, profile.contacts), profile.contacts
    )
    got = estimate_trajectory(profile.robot, log, profile.contacts)
    assert not got.has_points
    np.testing.assert_allclose(got.contact_wrenches, ref.contact_wrenches, rtol=0, atol=1e-9)


def _as_point_forces(profile, squat) -> Trajectory:
    """The squat with each sole's force given as one point force at the sole origin (its
    moment left in contact_wrenches): physically the same log."""
    robot = profile.robot
    W = squat.contact_wrenches
    N = len(squat)
    origins = {
        c.name: robot.placements(squat.for_robot(robot)[0], [c.frame]).positions[:, 0]
        for c in profile.contacts
    }
    return Trajectory.from_arrays(
        squat.time,
        squat.q,
        squat.v,
        a=squat.a,
        tau=squat.tau,
        joint_names=squat.joint_names,
        contact_wrenches={
            n: np.c_[np.zeros((N, 3)), W[:, j, 3:]] for j, n in enumerate(squat.contact_names)
        },
        point_forces={n: W[:, j, :3] for j, n in enumerate(squat.contact_names)},
        point_force_positions=origins,
    )


def test_convention_checks_and_calibration_convert_the_points_first(profile, squat):
    """Every public consumer of a log's wrenches sees the same numbers for the same physics:
    the convention checks (loaded contacts still and on the ground), the expected error of
    differentiated accelerations, and a sensor calibration."""
    from wholebody.conventions import check_conventions, expected_residual_error
    from wholebody.errors import InvalidArgumentError
    from wholebody.io.calibration import Calibration, ContactCalibration

    robot, contacts = profile.robot, profile.contacts
    moved = _as_point_forces(profile, squat)
    assert moved.has_points
    ref, got = check_conventions(robot, squat, contacts), check_conventions(robot, moved, contacts)
    for a, b in zip(ref.all_checks, got.all_checks, strict=True):
        assert (a.name, a.passed, a.message) == (b.name, b.passed, b.message)
    ea, eb = (
        expected_residual_error(robot, squat, contacts),
        expected_residual_error(robot, moved, contacts),
    )
    np.testing.assert_allclose(eb.force_error, ea.force_error, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(eb.moment_error, ea.moment_error, rtol=1e-9, atol=1e-9)
    cal = Calibration(
        contacts={c.name: ContactCalibration(gain=-0.2, axes="world") for c in contacts}
    )
    np.testing.assert_allclose(
        cal.apply(moved, robot).contact_wrenches,
        cal.apply(squat, robot).contact_wrenches,
        rtol=0,
        atol=1e-9,
    )
    with pytest.raises(InvalidArgumentError, match="pass robot="):
        cal.apply(moved)


# --- every point field round-trips in every format ------------------------------------------

ODD = ["plain", "with,comma", 'with "quotes"', "with:colon", "épaule", "sp ace", "x:estimated"]


def _random_points_log(seed: int) -> Trajectory:
    """Random sizes, odd names, each point field present or not, extreme values (NaN and
    infinities in the per-sample fields; the points fixed in frames are finite)."""
    rng = np.random.default_rng(seed)
    N, k, e = int(rng.integers(1, 30)), int(rng.integers(1, 4)), int(rng.integers(0, 3))
    names = rng.permutation(ODD)
    contacts = tuple(f"c{i}:{n}" for i, n in enumerate(names[:k]))
    frames = tuple(f"f{i}:{n}" for i, n in enumerate(names[k : k + e]))

    def arr(*shape, finite=False):
        x = rng.standard_normal(shape) * 10.0 ** rng.integers(-300, 300, shape)
        if not finite and x.size:
            x.flat[rng.integers(0, x.size, 2)] = [np.nan, -np.inf]
        return x

    m = int(rng.integers(0, 5))
    local = rng.random() < 0.5
    ext_local = rng.random() < 0.5
    return Trajectory(
        time=np.sort(rng.uniform(-1e3, 1e3, N)),
        q=arr(N, 8),
        v=arr(N, 7),
        a=None,
        tau=None,
        joint_names=("j",),
        contact_names=contacts,
        contact_wrenches=arr(N, k, 6),
        external_frames=frames,
        external_wrenches=arr(N, e, 6) if e else None,
        metadata={"seed": seed},
        contact_points_local=arr(k, 3, finite=True) if local else None,
        contact_points_world=None if local else arr(N, k, 3),
        point_forces=arr(N, m, 3) if m else None,
        point_force_positions=arr(N, m, 3) if m else None,
        point_force_contacts=tuple(rng.choice(contacts, m)) if m else (),
        external_points_local=arr(e, 3, finite=True) if e and ext_local else None,
        external_points_world=arr(N, e, 3) if e and not ext_local else None,
    )


@pytest.mark.parametrize("suffix", FORMATS)
def test_every_point_field_survives_a_round_trip_in_every_format(tmp_path, suffix):
    _format_available(suffix)
    seen = set()
    for seed in range(16):
        traj = _random_points_log(seed)
        path = tmp_path / f"log{seed}{suffix}"
        traj.save(path)
        back = Trajectory.load(path)
        for field in dataclasses.fields(Trajectory):
            if field.name == "source":
                continue
            mine, theirs = getattr(traj, field.name), getattr(back, field.name)
            if isinstance(mine, np.ndarray):
                np.testing.assert_array_equal(theirs, mine, err_msg=f"{suffix} {field.name}")
                assert theirs.dtype == mine.dtype
                seen.add(field.name)
            else:
                assert theirs == mine, (suffix, field.name, seed)
        with open_log(path) as log:  # chunks carry their rows of the per-sample fields
            if len(traj) > 2:
                part = log.read(1, len(traj) - 1)
                for name in ("contact_points_world", "point_forces", "external_points_world"):
                    if getattr(traj, name) is not None:
                        np.testing.assert_array_equal(
                            getattr(part, name), getattr(traj, name)[1:-1]
                        )
    assert seen >= {
        "contact_points_local",
        "contact_points_world",
        "point_forces",
        "point_force_positions",
        "external_points_local",
        "external_points_world",
    }


# --- bad inputs --------------------------------------------------------------------------------


def _small(**points) -> Trajectory:
    N = 3
    return Trajectory(
        np.arange(N, dtype=float),
        np.tile([0, 0, 1, 0, 0, 0, 1.0], (N, 1)),
        np.zeros((N, 6)),
        None,
        None,
        (),
        ("left", "right"),
        np.zeros((N, 2, 6)),
        **points,
    )


@pytest.mark.parametrize(
    "points, message",
    [
        ({"contact_points_local": np.zeros((2, 2))}, "'contact_points_local' must have shape"),
        ({"contact_points_local": [[0, 0, np.nan], [0, 0, 0]]}, "the point of 'left' is"),
        ({"contact_points_world": np.zeros((3, 1, 3))}, "'contact_points_world' must have shape"),
        (
            {"contact_points_local": np.zeros((2, 3)), "contact_points_world": np.zeros((3, 2, 3))},
            "give 'contact_points_local' or 'contact_points_world', not both",
        ),
        (
            {
                "point_forces": np.zeros((3, 1, 3)),
                "point_force_positions": np.zeros((3, 1, 3)),
                "point_force_contacts": ("nose",),
            },
            "'point_force_contacts' names 'nose', which is not a contact",
        ),
        (
            {"point_forces": np.zeros((3, 1, 3)), "point_force_contacts": ("left",)},
            "'point_forces' is given without 'point_force_positions'",
        ),
        (
            {
                "point_forces": np.zeros((3, 2, 3)),
                "point_force_positions": np.zeros((3, 2, 3)),
                "point_force_contacts": ("left",),
            },
            r"'point_forces' must have shape \(3, 1, 3\)",
        ),
        ({"point_force_contacts": ("left",)}, "'point_force_contacts' is given without"),
        ({"external_points_local": np.zeros((0, 3))}, "given without external_wrenches"),
    ],
)
def test_bad_point_fields_name_the_field(points, message):
    with pytest.raises(LogFormatError, match=message):
        _small(**points)


def test_from_arrays_refuses_arrays_for_mappings():
    N = 3
    base = dict(
        time=np.arange(N, dtype=float),
        q=np.tile([0, 0, 1, 0, 0, 0, 1.0], (N, 1)),
        v=np.zeros((N, 6)),
        joint_names=(),
    )
    with pytest.raises(LogFormatError, match="contact_wrenches must be a mapping .* ndarray"):
        Trajectory.from_arrays(**base, contact_wrenches=np.zeros((N, 2, 6)))
    good = {"left": np.zeros((N, 6))}
    cases = [
        ({"point_forces": np.zeros((N, 3)), "point_force_positions": {}}, "point_forces must be"),
        ({"contact_points_local": np.zeros(3)}, "contact_points_local must be a mapping"),
        ({"contact_points_world": {"left": np.zeros((N, 2))}}, "must have shape"),
        ({"contact_points_world": {}}, r"missing \['left'\]"),
        ({"contact_points_local": {"nose": [0, 0, 0]}}, "names 'nose', which is not one"),
        (
            {"point_forces": {"left": np.zeros((N, 3))}, "point_force_positions": None},
            "point_forces needs point_force_positions",
        ),
        (
            {
                "point_forces": {"left": np.zeros((N, 2, 3))},
                "point_force_positions": {"left": np.zeros((N, 3))},
            },
            "has shape",
        ),
        (
            {
                "point_forces": {"nose": np.zeros((N, 3))},
                "point_force_positions": {"nose": np.zeros((N, 3))},
            },
            "point_forces names 'nose'",
        ),
        ({"external_points_world": {"torso": np.zeros((N, 3))}}, "names 'torso'"),
    ]
    for kwargs, message in cases:
        with pytest.raises(LogFormatError, match=message):
            Trajectory.from_arrays(**base, contact_wrenches=good, **kwargs)


def test_bad_point_fields_in_files_name_the_field(tmp_path):
    log = _small(
        point_forces=np.ones((3, 2, 3)),
        point_force_positions=np.zeros((3, 2, 3)),
        point_force_contacts=("left", "right"),
    )
    log.save(tmp_path / "p.npz")
    fields = dict(np.load(tmp_path / "p.npz"))
    del fields["point_force_contacts"]
    np.savez(tmp_path / "p.npz", **fields)
    with pytest.raises(LogFormatError, match="'point_forces' needs 'point_force_contacts'"):
        Trajectory.load(tmp_path / "p.npz")
    fields["point_force_contacts"] = np.array(["left", "nose"])
    np.savez(tmp_path / "p.npz", **fields)
    with pytest.raises(LogFormatError, match="'point_force_contacts' names 'nose'"):
        Trajectory.load(tmp_path / "p.npz")
    del fields["point_force_positions"]
    np.savez(tmp_path / "p.npz", **fields)
    with pytest.raises(LogFormatError, match="'point_forces' needs 'point_force_positions'"):
        Trajectory.load(tmp_path / "p.npz")
    log.save(tmp_path / "p.csv")
    text = (tmp_path / "p.csv").read_text()
    (tmp_path / "gap.csv").write_text(text.replace("point_force:1:", "point_force:2:"))
    with pytest.raises(LogFormatError, match=r"missing j = \[1\]"):
        Trajectory.load(tmp_path / "gap.csv")
    world = _small(contact_points_world=np.zeros((3, 2, 3)))
    world.save(tmp_path / "w.csv")
    text = (tmp_path / "w.csv").read_text()
    (tmp_path / "w1.csv").write_text(text.replace("contact_point:right:", "contact_point:nose:"))
    with pytest.raises(LogFormatError, match=r"unknown \['nose'\], missing \['right'\]"):
        Trajectory.load(tmp_path / "w1.csv")
    local = _small(contact_points_local=np.ones((2, 3)))
    local.save(tmp_path / "l.csv")
    text = (tmp_path / "l.csv").read_text()
    (tmp_path / "l1.csv").write_text(text.replace('{"left": ', '{"nose": '))
    with pytest.raises(LogFormatError, match="'contact_points_local' names 'nose'"):
        Trajectory.load(tmp_path / "l1.csv")
