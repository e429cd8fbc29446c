"""Newton-Euler balance against independent routes: RNEA, ABA-generated samples, free fall."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose

from wholebody.balance import (
    centre_of_pressure,
    contact_wrench,
    gravito_inertial_wrench,
    joint_reaction_wrenches,
    newton_euler_residual,
    zmp,
)
from wholebody.contacts import PointContact, SurfaceContact
from wholebody.errors import ContactError, StateError
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH as X
from wholebody.models import HUMANOID_SOLE_HALF_WIDTH as Y
from wholebody.models import HUMANOID_STANDING_HEIGHT
from wholebody.spatial import PointMismatchError, Wrench, skew

FEET = [
    SurfaceContact("left_sole", half_length=X, half_width=Y, mu=0.8),
    SurfaceContact("right_sole", half_length=X, half_width=Y, mu=0.8),
]
TOL_N = 1e-9  # [N] and [N m]


def consistent_sample(robot, contacts, rng, *, external=None):
    """A state whose contact wrenches are consistent by construction.

    Contact wrenches and joint torques are drawn at random; the acceleration follows from
    forward dynamics (ABA), an algorithm independent of the centroidal route under test.
    """
    q = robot.random_configuration(rng)
    v = rng.normal(size=robot.nv)
    ext = {}
    W = []
    for c in contacts:
        w = rng.normal(scale=100.0, size=c.size)
        W.append(w)
        ext[c.frame] = w
    ext.update(external or {})
    tau = np.r_[np.zeros(6), rng.normal(scale=20.0, size=robot.nv - 6)]
    a = robot.forward_dynamics(q, v, tau, ext)
    return q, v, a, W


def test_centroidal_route_equals_rnea_base_rows(humanoid):
    # rnea's first six rows: the base-frame wrench at the base origin that contacts must supply.
    rng = np.random.default_rng(0)
    for _ in range(20):
        q, v, a = humanoid.random_configuration(rng), rng.normal(size=25), rng.normal(size=25)
        base = pin.XYZQUATToSE3(q[:7])
        w_gi = gravito_inertial_wrench(humanoid, q, v, a, at=base.translation)
        expected = humanoid.inverse_dynamics(q, v, a)[:6]
        R = base.rotation
        assert_allclose(np.r_[R.T @ -w_gi.force, R.T @ -w_gi.moment], expected, rtol=0, atol=TOL_N)


def test_free_fall_has_zero_gravito_inertial_wrench(humanoid):
    rng = np.random.default_rng(1)
    for _ in range(10):
        q, v = humanoid.random_configuration(rng), rng.normal(size=25)
        a = humanoid.forward_dynamics(q, v, np.zeros(25))
        w = gravito_inertial_wrench(humanoid, q, v, a)
        assert_allclose(w.as_vector(), np.zeros(6), rtol=0, atol=TOL_N)


def test_static_standing_total_vertical_force_is_weight(humanoid):
    q = humanoid.q_from_named({}, base_position=[0, 0, HUMANOID_STANDING_HEIGHT])
    zero = np.zeros(humanoid.nv)
    w_gi = gravito_inertial_wrench(
        humanoid, q, zero, zero, at=humanoid.frame_position(q, "right_sole")
    )
    # Any split: left takes an arbitrary wrench, right the rest (moved to its origin).
    w_left = np.array([3.0, -2.0, 250.0, 1.0, -4.0, 0.5])
    left = Wrench.from_vector(w_left, humanoid.frame_position(q, "left_sole"))
    right = -w_gi - left.shift_to(w_gi.point)
    W = [w_left, right.as_vector()]
    total = contact_wrench(humanoid, q, FEET, W)
    assert total.force[2] == pytest.approx(humanoid.mass * 9.81, rel=1e-13)
    r = newton_euler_residual(humanoid, q, zero, zero, FEET, W)
    assert r.force_norm < TOL_N and r.moment_norm < TOL_N


@pytest.mark.parametrize("kind", ["surface", "point", "push"])
def test_random_consistent_samples_have_zero_residual(humanoid, kind):
    rng = np.random.default_rng(2)
    if kind == "point":
        contacts = [
            PointContact(f, mu=0.7) for f in ("left_sole", "right_sole", "left_hand", "right_hand")
        ]
    else:
        contacts = FEET
    for _ in range(20):
        push = {}
        if kind == "push":
            w_push = rng.normal(scale=50.0, size=6)
            push = {"torso": w_push}
        q, v, a, W = consistent_sample(humanoid, contacts, rng, external=push)
        # The same push three ways: at the frame origin by name, as a Wrench about another
        # point, and as a (wrench, point) pair.
        ways = [push]
        if push:
            origin = humanoid.frame_position(q, "torso")
            moved = Wrench.from_vector(w_push, origin).shift_to([0.2, 0.1, 1.5])
            ways += [{"push": moved}, {"push": (moved.as_vector(), moved.point)}]
        for external_wrenches in ways:
            for at in ("com", "origin", rng.normal(size=3)):
                r = newton_euler_residual(
                    humanoid, q, v, a, contacts, W, at=at, external_wrenches=external_wrenches
                )
                assert r.force_norm < TOL_N and r.moment_norm < 1e-8, (r.force, r.moment)


def test_varignon_residual_moves_like_a_wrench(humanoid):
    # An inconsistent sample: its residual about P2 is its residual about P1 moved to P2.
    rng = np.random.default_rng(3)
    q, v, a, W = consistent_sample(humanoid, FEET, rng)
    W[0] = W[0] + rng.normal(scale=30.0, size=6)
    p1, p2 = rng.normal(size=3), rng.normal(size=3)
    r1 = newton_euler_residual(humanoid, q, v, a, FEET, W, at=p1)
    r2 = newton_euler_residual(humanoid, q, v, a, FEET, W, at=p2)
    assert r1.force_norm > 10.0
    assert_allclose(r1.wrench.shift_to(p2).as_vector(), r2.wrench.as_vector(), rtol=0, atol=1e-9)


def test_batch_equals_single_and_flags_bad_rows(humanoid):
    rng = np.random.default_rng(4)
    samples = [consistent_sample(humanoid, FEET, rng) for _ in range(12)]
    Q = np.array([s[0] for s in samples])
    V = np.array([s[1] for s in samples])
    A = np.array([s[2] for s in samples])
    Wst = np.array([np.concatenate(s[3]) for s in samples])
    Wst[3, 0] += 40.0  # an inconsistent but valid sample
    Q[5, 3:7] *= 1.5  # bad quaternion
    V[7, 2] = np.nan  # non-finite velocity
    Wst[9, 4] = np.inf  # non-finite wrench
    Q[10, 3:7] *= 1 + 3e-7  # renormalised silently in batch
    batch = newton_euler_residual(humanoid, Q, V, A, FEET, Wst)
    assert len(batch) == 12 and batch.n_checked == 9
    assert list(batch.reasons) == [5, 7, 9]
    assert "base quaternion norm" in batch.reasons[5]
    assert batch.reasons[7] == "v has non-finite values"
    assert batch.reasons[9] == "contact wrenches have non-finite values"
    assert np.isnan(batch.force_norm[[5, 7, 9]]).all()
    ok = ~batch.flagged
    ok[3] = False
    assert batch.force_norm[ok].max() < TOL_N
    assert batch.force[3] == pytest.approx([40.0, 0, 0])
    # The extra 40 N along x at the left sole's origin leaves, about the CoM, the moment of
    # that force: computed here from the frame and CoM positions alone.
    lever = humanoid.frame_position(Q[3], "left_sole") - humanoid.com(Q[3])
    assert_allclose(batch.moment[3], np.cross(lever, [40.0, 0, 0]), rtol=0, atol=1e-8)
    single = newton_euler_residual(humanoid, Q[3], V[3], A[3], FEET, Wst[3])
    assert_allclose(batch[3].wrench.as_vector(), single.wrench.as_vector(), rtol=0, atol=1e-12)
    assert batch.moment_relative[3] == pytest.approx(single.moment_norm / humanoid.weight)


def test_batch_shape_errors_name_the_problem(humanoid):
    Q = np.tile(humanoid.neutral(), (4, 1))
    Z = np.zeros((4, 25))
    with pytest.raises(StateError, match=r"v must have shape \(N, 25\), got \(4, 24\)"):
        newton_euler_residual(humanoid, Q, Z[:, :24], Z, FEET, np.zeros((4, 12)))
    with pytest.raises(StateError, match=r"contact wrenches have 3 samples, states have 4"):
        newton_euler_residual(humanoid, Q, Z, Z, FEET, np.zeros((3, 12)))
    with pytest.raises(
        StateError, match=r"contact 'left_sole' takes a wrench \(f, tau\) \(6,\) per sample"
    ):
        newton_euler_residual(humanoid, Q[0], Z[0], Z[0], FEET, [np.zeros(3), np.zeros(6)])


def test_joint_reaction_wrenches_close_at_the_base(humanoid):
    rng = np.random.default_rng(5)
    q, v, a, W = consistent_sample(humanoid, FEET, rng)
    joints = joint_reaction_wrenches(humanoid, q, v, a, FEET, W)
    assert_allclose(joints["root_joint"].as_vector(), np.zeros(6), atol=1e-8)
    assert list(joints) == ["root_joint", *humanoid.joint_names]
    # The leaf joints carry what their body needs: an arm's elbow transmits the forearm's
    # own gravito-inertial wrench (no contact on it), by Newton on that body alone.
    elbow = joints["left_elbow"]
    m_forearm = 1.6
    jid = humanoid.joint_id("left_elbow")
    model, data = humanoid.model, humanoid.data
    pin.forwardKinematics(model, data, q, v, a)
    oMi, c = data.oMi[jid], model.inertias[jid].lever
    # Classical acceleration of the forearm's CoM from the body's spatial velocity and
    # acceleration (joint frame), then Newton: f = m (a_c - g).
    vel, acc = data.v[jid], data.a[jid]
    a_c = (
        acc.linear
        + np.cross(acc.angular, c)
        + np.cross(vel.angular, vel.linear + np.cross(vel.angular, c))
    )
    f_expected = oMi.rotation @ (m_forearm * a_c) - m_forearm * humanoid.gravity_vector
    assert_allclose(elbow.force, f_expected, rtol=0, atol=1e-9)


def test_external_wrench_object_equals_vector_at_frame_origin(humanoid):
    rng = np.random.default_rng(6)
    q, v, a = humanoid.random_configuration(rng), rng.normal(size=25), rng.normal(size=25)
    w = rng.normal(size=6)
    origin = humanoid.frame_position(q, "left_hand")
    as_object = Wrench.from_vector(w, origin).shift_to([0.3, -0.2, 1.0])
    assert_allclose(
        humanoid.inverse_dynamics(q, v, a, {"left_hand": as_object}),
        humanoid.inverse_dynamics(q, v, a, {"left_hand": w}),
        rtol=0,
        atol=1e-9,
    )


def test_centre_of_pressure_and_zmp(humanoid):
    q = humanoid.q_from_named({"left_ankle_roll": 0.1}, base_position=[0.2, 0.1, 0.94])
    M = humanoid.placements(q, "left_sole").se3()
    cop_local = np.array([0.05, -0.02, 0.0])
    f = M.rotation @ np.array([10.0, -5.0, 300.0])
    point = M.act(cop_local)
    w = Wrench(f, np.zeros(3), point).shift_to(M.translation)
    cop = centre_of_pressure(humanoid, q, FEET[0], w.as_vector())
    assert_allclose(cop.local, cop_local[:2], atol=1e-14)
    assert_allclose(cop.world, point, atol=1e-14)
    # ZMP of a single vertical force is its foot on the plane.
    p = np.array([0.3, -0.1, 0.5])
    assert_allclose(
        zmp(Wrench([0, 0, 600.0], [0, 0, 0], p), height=0.0), [0.3, -0.1, 0.0], atol=1e-15
    )
    assert np.isnan(zmp(Wrench([0, 0, -1.0], [0, 0, 0], p))).all()


def test_wrench_algebra():
    a = Wrench([1.0, 2.0, 3.0], [0.1, 0.2, 0.3], [0.0, 0.0, 0.0])
    p = np.array([0.5, -1.0, 2.0])
    # Varignon against the definition: moment about p of a force applied at the origin.
    assert_allclose(a.shift_to(p).moment, a.moment + np.cross(-p, a.force), atol=1e-15)
    assert_allclose(a.shift_to(p).shift_to([0, 0, 0]).moment, a.moment, atol=1e-15)
    assert_allclose(skew([1.0, 2.0, 3.0]) @ [4.0, 5.0, 6.0], np.cross([1, 2, 3], [4, 5, 6]))
    with pytest.raises(PointMismatchError, match="cannot add wrenches about different points"):
        a + a.shift_to(p)
    assert_allclose((a + a).as_vector(), 2 * a.as_vector())
    M = pin.SE3(pin.rpy.rpyToMatrix(0.1, 0.2, 0.3), np.array([0.1, 0.2, 0.3]))
    local = a.in_frame(M)
    back = Wrench.from_local(local, M)
    assert_allclose(back.shift_to(a.point).as_vector(), a.as_vector(), atol=1e-14)


def test_contact_arguments_are_validated():
    with pytest.raises(ContactError, match="surface contact 'left_sole': mu must be a positive"):
        SurfaceContact("left_sole", half_length=0.1, half_width=0.05, mu=0.0)
    with pytest.raises(
        ContactError, match="half_width must be a positive finite number, got -0.05"
    ):
        SurfaceContact("left_sole", half_length=0.1, half_width=-0.05, mu=0.5)
    with pytest.raises(ContactError, match="normal must be a non-zero finite 3-vector"):
        PointContact("left_sole", mu=0.5, normal=[0, 0, 0])
    assert PointContact("x", mu=0.5, normal=[0, 0, 2.0]).normal[2] == 1.0


def test_residual_has_one_shape_convention(humanoid):
    rng = np.random.default_rng(7)
    q, v, a, W = consistent_sample(humanoid, FEET, rng)
    W[1] = W[1] + np.array([0.0, 0.0, 10.0, 0.0, 0.0, 0.0])
    single = newton_euler_residual(humanoid, q, v, a, FEET, W)
    batch = newton_euler_residual(
        humanoid, q[None], v[None], a[None], FEET, np.concatenate(W)[None]
    )
    assert single.force.shape == (3,) and batch.force.shape == (1, 3)
    assert isinstance(single.force_norm, float) and batch.force_norm.shape == (1,)
    assert single.force_norm == pytest.approx(10.0, abs=1e-9)
    assert_allclose(batch[0].wrench.as_vector(), single.wrench.as_vector(), rtol=0, atol=1e-12)


def test_a_known_push_balances_as_a_wrench_or_per_sample_rows(humanoid):
    rng = np.random.default_rng(8)
    w_push = rng.normal(scale=50.0, size=6)
    q, v, a, W = consistent_sample(humanoid, FEET, rng, external={"torso": w_push})
    push = Wrench.from_vector(w_push, humanoid.frame_position(q, "torso"))
    single = newton_euler_residual(humanoid, q, v, a, FEET, W, external_wrenches={"push": push})
    assert single.force_norm < TOL_N
    Q, V, A, Wst = q[None], v[None], a[None], np.concatenate(W)[None]
    batch = newton_euler_residual(
        humanoid, Q, V, A, FEET, Wst, external_wrenches={"torso": w_push[None]}
    )
    assert batch.force_norm[0] < TOL_N
    # Without the push the same samples do not balance: the wrench was used.
    assert newton_euler_residual(humanoid, q, v, a, FEET, W).force_norm > 1.0


def test_unphysical_wrenches_are_flagged_or_refused(humanoid):
    from wholebody.errors import InvalidArgumentError

    rng = np.random.default_rng(9)
    samples = [consistent_sample(humanoid, FEET, rng) for _ in range(4)]
    Q, V, A = (np.array([s[i] for s in samples]) for i in range(3))
    Wst = np.array([np.concatenate(s[3]) for s in samples])
    Wst[1, 2] = 1e12  # a diverged simulation
    Wst[2, 0] = 1e300  # would overflow in the cross products
    batch = newton_euler_residual(humanoid, Q, V, A, FEET, Wst)
    assert list(batch.reasons) == [1, 2]
    assert "beyond physical magnitudes (> 1000 m g)" in batch.reasons[1]
    assert batch.force_norm[[0, 3]].max() < TOL_N and np.isnan(batch.force_norm[[1, 2]]).all()
    with pytest.raises(
        StateError, match=r"contact wrenches reach 1e\+12 N .* beyond any physical magnitude"
    ):
        newton_euler_residual(humanoid, Q[1], V[1], A[1], FEET, Wst[1])
    with pytest.raises(
        InvalidArgumentError, match="at must be 'com', 'origin' or a point of shape"
    ):
        newton_euler_residual(humanoid, Q[0], V[0], A[0], FEET, Wst[0], at="ankle")
    with pytest.raises(
        InvalidArgumentError, match="at must be 'com', 'origin' or a point of shape"
    ):
        newton_euler_residual(humanoid, Q[0], V[0], A[0], FEET, Wst[0], at=object())
    with pytest.raises(InvalidArgumentError, match="workers must be at least 1, got 0"):
        newton_euler_residual(humanoid, Q, V, A, FEET, Wst, workers=0)


@pytest.mark.parametrize(
    "bad, shown",
    [
        (np.array(["x", 0, 0, 0, 0, 0], dtype=object), r"\[0\] = 'x' is not a real number"),
        (np.zeros(6, complex) + 1j, r"\[0\] = 1j is not a real number \(complex128 array\)"),
        (["1", "0", "0", "0", "0", "0"], r"\[0\] = '1' is not a real number"),
        (np.zeros(6, bool), r"\[0\] = False is not a real number \(bool array\)"),
        (np.ma.masked_array(np.zeros(6), mask=[1, 0, 0, 0, 0, 0]), r"\[0\] is masked"),
    ],
    ids=["object-string", "complex", "strings", "bool", "masked"],
)
def test_wrenches_that_are_not_real_numbers_are_refused_by_name(humanoid, bad, shown):
    # Each was accepted (numpy's conversion, a warning at most) or raised a raw ValueError.
    q, zero = humanoid.neutral(), np.zeros(humanoid.nv)
    good = np.zeros(6)
    with pytest.raises(StateError, match=r"the wrench of contact 'left_sole'" + shown):
        newton_euler_residual(humanoid, q, zero, zero, FEET, [bad, good])
    with pytest.raises(StateError, match=r"the wrench of contact 'left_sole'"):
        newton_euler_residual(
            humanoid, q[None], zero[None], zero[None], FEET, [np.asanyarray(bad)[None], good[None]]
        )
    with pytest.raises(StateError, match=r"external wrench 'torso'" + shown):
        newton_euler_residual(
            humanoid, q, zero, zero, FEET, [good, good], external_wrenches={"torso": bad}
        )
