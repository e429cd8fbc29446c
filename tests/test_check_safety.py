"""Log checks on extreme and malformed data: flagged with a reason, never counted as checked,
never a verdict without evidence, never a hang."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import pytest

from wholebody.check import CheckOptions
from wholebody.check.analysis import check_trajectory
from wholebody.contacts import SurfaceContact
from wholebody.errors import InvalidArgumentError
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH as X
from wholebody.models import HUMANOID_SOLE_HALF_WIDTH as Y
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
FEET = [SurfaceContact(f, half_length=X, half_width=Y, mu=1.0) for f in ("left_sole", "right_sole")]


@pytest.fixture(scope="module")
def squat() -> Trajectory:
    return Trajectory.load(ROOT / "data" / "humanoid_squat.npz")


def _with(traj: Trajectory, **arrays: np.ndarray) -> Trajectory:
    return dataclasses.replace(traj, **arrays)


def test_all_nan_log_is_unchecked_not_consistent(humanoid, squat):
    W = np.full_like(squat.contact_wrenches, np.nan)
    report = check_trajectory(humanoid, _with(squat, contact_wrenches=W), FEET)
    assert report.n_checked == 0 and report.verdict == "unchecked" and not report.consistent
    assert "UNCHECKED" in report.format_summary()
    assert report.summary()["verdict"] == "unchecked"


def test_diverged_samples_are_flagged_as_such_not_explained(humanoid, squat):
    W = squat.contact_wrenches.copy()
    W[500:510, 0, 2] = 1e12  # a simulation that blew up for 10 samples
    W[700, 1, 0] = 1e308  # would overflow in the algebra
    start = time.perf_counter()
    report = check_trajectory(humanoid, _with(squat, contact_wrenches=W), FEET)
    assert time.perf_counter() - start < 20.0
    assert sorted(report.reasons) == [*range(500, 510), 700]
    assert all("beyond physical magnitudes" in why for why in report.reasons.values())
    # The rest of the log is checked; the flagged samples carry no residual, but values
    # beyond physical magnitudes are evidence of a bad log: never "consistent".
    assert report.n_checked == len(squat) - 11 and report.verdict == "inconsistent"
    assert report.evidence.n_implausible == 11
    assert np.isnan(report.force_norm[500:510]).all() and not report.diagnosis


def test_huge_velocities_are_flagged_not_counted(humanoid, squat):
    V = squat.v.copy()
    V[10, 8] = 1e200
    report = check_trajectory(humanoid, _with(squat, v=V), FEET)
    assert 10 in report.reasons and report.n_checked == len(squat) - 1
    assert np.isfinite(report.force_norm[~report.flagged]).all()


@pytest.mark.parametrize(
    "options, fragment",
    [
        (
            {"force_tolerance": float("nan")},
            "force_tolerance must be a finite number >= 0, got nan",
        ),
        ({"moment_tolerance": -0.01}, "moment_tolerance must be a finite number >= 0, got -0.01"),
        ({"cone_tolerance": float("inf")}, "cone_tolerance must be a finite number >= 0, got inf"),
        ({"force_tolerance": "0.01"}, "force_tolerance must be a number, got str '0.01'"),
        ({"force_tolerance": True}, "force_tolerance must be a number, got bool True"),
        ({"workers": 0}, "workers must be an integer >= 1, got 0"),
    ],
)
def test_check_options_are_validated(options, fragment):
    with pytest.raises(
        InvalidArgumentError, match=fragment.replace("(", r"\(").replace(")", r"\)")
    ):
        CheckOptions(**options)


def test_duplicate_contact_names_are_refused(humanoid, squat):
    with pytest.raises(
        InvalidArgumentError, match=r"contact names must be unique; declared twice: \['left_sole'\]"
    ):
        check_trajectory(humanoid, squat, [FEET[0], FEET[0], FEET[1]])


def test_friction_about_the_ground_normal_not_the_tilted_foot():
    """A lightly loaded foot tilted 5 degrees on flat ground, its force at the friction limit
    of the ground: measured about the foot's own normal it looks like slipping; about the
    declared ground normal, the utilisation is exactly 1."""
    from scipy.spatial.transform import Rotation

    from wholebody.contacts import ground_aligned_rotations
    from wholebody.friction import ContactSet

    mu = 0.5
    tilt = Rotation.from_euler("y", 5, degrees=True).as_matrix()
    sole = SurfaceContact("left_sole", half_length=X, half_width=Y, mu=mu)
    on_ground = SurfaceContact(
        "left_sole", half_length=X, half_width=Y, mu=mu, ground_normal=[0, 0, 2.0]
    )
    f_n = 20.0
    wrench = np.array([[[-mu * f_n, 0.0, f_n, 0.0, 0.0, 0.0]]])  # world axes, at the sole centre
    R = tilt[None, None]
    naive = ContactSet([sole]).check(wrench, R)
    turned = ground_aligned_rotations(R[:, 0], on_ground.ground_normal)[:, None]
    exact = ContactSet([on_ground]).check(wrench, turned)
    assert naive.utilisation[0, 0] > 1.05
    assert exact.utilisation[0, 0] == pytest.approx(1.0, abs=1e-12)
    # The turned frame keeps the sole's heading: its x is the sole's x projected.
    np.testing.assert_allclose(turned[0, 0][:, 2], [0, 0, 1], atol=1e-15)
    np.testing.assert_allclose(turned[0, 0][:, 0], [1, 0, 0], atol=1e-15)


def test_ground_normal_on_nearly_flat_feet_changes_little(humanoid, squat):
    grounded = [
        SurfaceContact(c.frame, half_length=X, half_width=Y, mu=1.0, ground_normal=[0, 0, 1])
        for c in FEET
    ]
    a = check_trajectory(humanoid, squat, FEET)
    b = check_trajectory(humanoid, squat, grounded)
    # MuJoCo's soft contacts leave the soles tilted by a fraction of a degree.
    np.testing.assert_allclose(a.utilisation, b.utilisation, rtol=0, atol=0.01)
    assert b.verdict == "consistent"


def test_a_logged_schedule_is_used_by_the_check_and_the_estimate(humanoid, squat):
    """Inactive contacts have no cone to respect; estimates keep them at zero."""
    from wholebody.check.analysis import estimate_trajectory

    W = squat.contact_wrenches.copy()
    W[100:110, 1, :2] += [400.0, 0.0]  # tangential force far outside the cone (mu = 1)...
    W[100:110, 0, :2] += [-400.0, 0.0]  # ...balanced by the other foot: residual unchanged
    active = np.ones((len(squat), 2), dtype=bool)
    marked = dataclasses.replace(squat, contact_wrenches=W)
    assert check_trajectory(humanoid, marked, FEET).cone_violation[100:110, 1].all()
    # The same samples declared inactive for the right sole: its cone is not checked there.
    active[100:110, 1] = False
    report = check_trajectory(humanoid, dataclasses.replace(marked, contact_active=active), FEET)
    assert (
        not report.cone_violation[100:110, 1].any()
        and np.isnan(report.cone_margin[100:110, 1]).all()
    )
    # Estimation with the schedule: the inactive sole carries exactly nothing.
    est = estimate_trajectory(humanoid, dataclasses.replace(squat, contact_active=active), FEET)
    right = est.contact_wrench("right_sole:estimated")
    assert np.array_equal(right[100:110], np.zeros((10, 6)))
    assert est.contact_active.shape == (len(squat), 4)
