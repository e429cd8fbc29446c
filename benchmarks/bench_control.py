"""Single calls and the control tick against raw Pinocchio + numpy doing the same work.

For each public single-sample function, the raw code computes the same outputs with the
fewest Pinocchio calls and plain numpy (no input checks, explicit 3-term cross products);
both run in one process, interleaved (blocks of calls alternate between the two), and the
median per call over the blocks is reported with the ratio wholebody / raw. Results are
compared once (to 1e-9) before timing, so both sides do the same work; the timed calls
return their native results (no conversion is timed).

Robots: example-robot-data's G1 (nv = 35; sole frames added under the ankle-roll links,
0.085 x 0.03 m half sizes, as in examples/mujoco_any_humanoid.py) and the shipped humanoid
(nv = 25; soles 0.12 x 0.05 m). Two surface contacts, mu = 0.7.

The prebuilt estimate keeps daqp's workspace set up with the problem and checks every
answer (equations and cones) before calling it found; its wrenches per contact, residual and
margins are computed at first read. It is compared with a one-shot ``daqp.solve`` of the
same QP (setup included, as a script would call it) and with a daqp ``Model`` set up once
(the floor for repeated solves).

The controller tick is ``WholeBodyController.update`` + ``solve`` with the tasks of
examples/whole_body_qp_control.py (CoM, angular momentum, joint posture; torque limits, both
soles held); its raw reference assembles a QP with the same optimum from raw Pinocchio calls
(the CoM and momentum tasks on the contact wrenches, equal to the controller's on the
feasible set) and calls ``daqp.solve`` on it. Goal: under 300 us per tick on G1.

Run: python benchmarks/bench_control.py [REPEATS]   (default 200 blocks of 10 calls)
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")

import daqp  # noqa: E402
import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

import wholebody as wb  # noqa: E402
from wholebody.balance import (  # noqa: E402
    contact_wrench,
    gravito_inertial_wrench,
    newton_euler_residual,
)
from wholebody.balance.cop import centre_of_pressure  # noqa: E402
from wholebody.contacts import SurfaceContact  # noqa: E402
from wholebody.control import (  # noqa: E402
    AngularMomentumTask,
    ComTask,
    PostureTask,
    WholeBodyController,
)
from wholebody.estimation import build_estimation_problem  # noqa: E402
from wholebody.friction import ContactSet  # noqa: E402

LWA = pin.LOCAL_WORLD_ALIGNED
FLAG = 1.5  # ratios above this are marked
BLOCK = 10  # calls per timed block


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """3-vector cross product, explicit (np.cross costs ~20 us per call in numpy 2)."""
    return np.array(
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    )


def load(name: str) -> tuple[wb.Robot, list[SurfaceContact], np.ndarray]:
    """The robot, its two soles and a standing configuration (knees slightly bent)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = wb.load(name)
    if name == "g1":
        for side in ("left", "right"):
            robot.add_frame(
                f"{side}_sole",
                f"{side}_ankle_roll_link",
                pin.SE3(np.eye(3), np.array([0.035, 0.0, -0.035])),
            )
        half = (0.085, 0.03)
        bent = {"hip_pitch_joint": -0.2, "knee_joint": 0.4, "ankle_pitch_joint": -0.2}
        q = robot.q_from_named({f"{s}_{j}": x for s in ("left", "right") for j, x in bent.items()})
    else:
        half = (0.12, 0.05)
        bent = {"hip_pitch": -0.25, "knee": 0.5, "ankle_pitch": -0.25}
        q = robot.q_from_named({f"{s}_{j}": x for s in ("left", "right") for j, x in bent.items()})
    q[2] = -robot.frame_position(q, "left_sole")[2]
    contacts = [
        SurfaceContact(f"{s}_sole", half_length=half[0], half_width=half[1], mu=0.7)
        for s in ("left", "right")
    ]
    return robot, contacts, q


def cases(
    robot: wb.Robot, contacts: list[SurfaceContact], q: np.ndarray
) -> list[tuple[str, Callable[[], object], Callable[[], object], Callable[[object, object], None]]]:
    """(name, wholebody call, raw call, comparison of their outputs)."""
    model, data = robot.model, robot.data
    raw_data = model.createData()  # the raw side has its own Data, as a user's would
    rng = np.random.default_rng(0)
    v = rng.normal(scale=0.3, size=robot.nv)
    a = rng.normal(scale=0.3, size=robot.nv)
    fids = [model.getFrameId(c.frame) for c in contacts]
    mass = robot.mass
    mg = mass * model.gravity.linear
    W = np.array(
        [
            [5.0, -3.0, 0.5 * robot.weight, 2.0, -1.0, 0.3],
            [-4.0, 2.0, 0.5 * robot.weight, -1.5, 1.2, -0.2],
        ]
    )
    wrenches = [W[0], W[1]]

    def close(x: np.ndarray, y: np.ndarray) -> None:
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-9)

    # --- Newton-Euler residual at the CoM, 2 soles ------------------------------------
    def residual_wb():
        return newton_euler_residual(robot, q, v, a, contacts, wrenches)

    def residual_raw():
        pin.computeCentroidalMomentumTimeVariation(model, raw_data, q, v, a)
        com, dh = raw_data.com[0], raw_data.dhg
        f = mg - dh.linear
        m = -dh.angular
        for fid, w in zip(fids, W, strict=True):
            p = pin.updateFramePlacement(model, raw_data, fid).translation
            f = f + w[:3]
            m = m + w[3:] + cross(p - com, w[:3])
        return f, m

    # --- gravito-inertial wrench at the CoM -------------------------------------------
    def giw_wb():
        return gravito_inertial_wrench(robot, q, v, a)

    def giw_raw():
        pin.computeCentroidalMomentumTimeVariation(model, raw_data, q, v, a)
        dh = raw_data.dhg
        return mg - dh.linear, -dh.angular

    # --- contact wrench at the CoM -----------------------------------------------------
    def cw_wb():
        return contact_wrench(robot, q, contacts, wrenches)

    def cw_raw():
        com = pin.centerOfMass(model, raw_data, q)
        f, m = np.zeros(3), np.zeros(3)
        for fid, w in zip(fids, W, strict=True):
            p = pin.updateFramePlacement(model, raw_data, fid).translation
            f = f + w[:3]
            m = m + w[3:] + cross(p - com, w[:3])
        return f, m

    # --- centre of pressure of one sole -------------------------------------------------
    def cop_wb():
        return centre_of_pressure(robot, q, contacts[0], W[0])

    def cop_raw():
        pin.forwardKinematics(model, raw_data, q)
        M = pin.updateFramePlacement(model, raw_data, fids[0])
        R = M.rotation
        f, t = R.T @ W[0, :3], R.T @ W[0, 3:]
        local = np.array([-t[1] / f[2], t[0] / f[2]])
        return local, M.translation + R @ np.array([local[0], local[1], 0.0])

    # --- one estimate, problem built once ------------------------------------------------
    problem = build_estimation_problem(robot, q, v, a, contacts)
    qp = problem.qp
    assert qp.A is not None and qp.b is not None and qp.G is not None and qp.h is not None
    A_all = np.vstack([qp.A, qp.G])
    b_up = np.r_[qp.b, qp.h]
    b_lo = np.r_[qp.b, np.full(len(qp.h), -1e30)]
    sense = np.r_[np.full(len(qp.b), 5), np.zeros(len(qp.h))].astype(np.int32)
    H, f0 = 2 * qp.P, 2 * qp.q  # daqp minimises 0.5 x'Hx + f'x

    def est_wb():
        return problem.solve().x

    def est_raw():
        return daqp.solve(H, f0, A_all, b_up, b_lo, sense)[0]

    # The same QP on a daqp workspace set up once (what a prebuilt problem keeps): the raw
    # floor for repeated solves of one problem.
    workspace = daqp.Model()
    workspace.setup(H, f0, A_all, b_up, b_lo, sense.copy())

    def est_raw_workspace():
        return workspace.solve()[0]

    # --- face matrix update --------------------------------------------------------------
    cset = ContactSet(contacts)
    R = np.array([pin.updateFramePlacement(model, data, fid).rotation for fid in fids])
    buf = np.zeros((cset.n_rows, cset.n))
    raw_buf = np.zeros((cset.n_rows, cset.n))
    local = cset.local_faces

    def faces_wb():
        return cset.face_matrix(R, out=buf)

    def faces_raw():
        for j, (rows, cols) in enumerate(zip(cset.rows, cset.cols, strict=True)):
            L, Rt = local[j], R[j].T
            raw_buf[rows, cols.start : cols.start + 3] = L[:, :3] @ Rt
            raw_buf[rows, cols.start + 3 : cols.stop] = L[:, 3:] @ Rt
        return raw_buf

    def wrench_cmp(w, y):
        close(np.r_[w.force, w.moment], np.r_[y[0], y[1]])

    # --- the controller tick -------------------------------------------------------------
    tick_wb, tick_raw = controller_ticks(robot, contacts, q, 0.1 * v, q.copy())

    def tick_cmp(x, y):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-6)

    return [
        ("newton_euler_residual (2 soles)", residual_wb, residual_raw, wrench_cmp),
        ("gravito_inertial_wrench", giw_wb, giw_raw, wrench_cmp),
        ("contact_wrench (2 soles)", cw_wb, cw_raw, wrench_cmp),
        (
            "centre_of_pressure",
            cop_wb,
            cop_raw,
            lambda c, y: close(np.r_[c.local, c.world], np.r_[y[0], y[1]]),
        ),
        (
            "estimate, prebuilt problem (.solve)",
            est_wb,
            est_raw,
            lambda x, y: np.testing.assert_allclose(x, y, rtol=0, atol=1e-6),
        ),
        (
            "  the same, raw = daqp workspace (Model)",
            est_wb,
            est_raw_workspace,
            lambda x, y: np.testing.assert_allclose(x, y, rtol=0, atol=1e-6),
        ),
        ("ContactSet.face_matrix update", faces_wb, faces_raw, lambda x, y: close(x, y)),
        ("controller tick (update, solve)", tick_wb, tick_raw, tick_cmp),
    ]


def controller_ticks(robot, contacts, q, v, q_ref):
    """The example's tick through wholebody, and a QP of the same optimum assembled raw +
    ``daqp.solve``."""
    model = robot.model
    raw_data = model.createData()
    fids = [model.getFrameId(c.frame) for c in contacts]
    mass, g = robot.mass, model.gravity.linear
    kp_c, kd_c, kd_l, kp_p, kd_p = 25.0, 10.0, 10.0, 50.0, 14.0
    w_c, w_l, w_p = 1.0, 1e-3, 1e-3
    c_ref = robot.com(q)
    ctrl = WholeBodyController(robot)
    for c in contacts:
        ctrl.add_contact(c)
    ctrl.add_task(ComTask(kp=kp_c, kd=kd_c, weight=w_c)).set_reference(c_ref)
    ctrl.add_task(AngularMomentumTask(kd=kd_l, weight=w_l))
    ctrl.add_task(PostureTask(kp=kp_p, kd=kd_p, weight=w_p)).set_reference(q_ref)
    nv, n, eps = robot.nv, ctrl.layout.n, ctrl.regularization
    cset = ContactSet(contacts)
    faces = np.zeros((cset.n_rows, cset.n))
    nl, nc = nv - 6, cset.n_rows
    A = np.zeros((18, n))
    b = np.zeros(18)
    G = np.zeros((nc + 2 * nl, n))
    h = np.zeros(nc + 2 * nl)
    lim = model.effortLimit[6:]
    sense = np.r_[np.full(18, 5), np.zeros(nc + 2 * nl)].astype(np.int32)
    b_lo = np.r_[np.zeros(18), np.full(nc + 2 * nl, -1e30)]
    sum_f = np.zeros((3, 12))
    sum_f[:, 0:3] = sum_f[:, 6:9] = np.eye(3)

    def tick_wb():
        ctrl.update(q, v, 0.0)
        return ctrl.solve().x

    def tick_raw():
        d = raw_data
        pin.computeAllTerms(model, d, q, v)
        M, hv = d.M, d.nle  # computeAllTerms fills M fully in Pinocchio 3+ (checked below)
        R = np.empty((2, 3, 3))
        P = np.empty((2, 3))
        J = np.empty((12, nv))
        for i, fid in enumerate(fids):
            J[6 * i : 6 * i + 6] = pin.getFrameJacobian(model, d, fid, LWA)
            b[6 + 6 * i : 12 + 6 * i] = -pin.getFrameClassicalAcceleration(
                model, d, fid, LWA
            ).vector
            Mf = pin.updateFramePlacement(model, d, fid)
            R[i], P[i] = Mf.rotation, Mf.translation
        A[:6, :nv], A[:6, nv:], b[:6] = M[:6], -J[:, :6].T, -hv[:6]
        A[6:, :nv] = J
        for j, (rows, cols) in enumerate(zip(cset.rows, cset.cols, strict=True)):
            L = cset.local_faces[j]
            faces[rows, cols.start : cols.start + 3] = L[:, :3] @ R[j].T
            faces[rows, cols.start + 3 : cols.stop] = L[:, 3:] @ R[j].T
        G[:nc, nv:] = faces
        G[nc : nc + nl, :nv], G[nc : nc + nl, nv:] = M[6:], -J[:, 6:].T
        G[nc + nl :] = -G[nc : nc + nl]
        h[:nc] = 0.0
        h[nc : nc + nl], h[nc + nl :] = lim - hv[6:], lim + hv[6:]
        com, hg = d.com[0], d.hg
        c_acc = kp_c * (c_ref - com) - kd_c * hg.linear / mass
        # CoM task on the forces: sum f / m = c_acc - g; angular: sum (p - c) x f + tau.
        Ac = sum_f / mass
        Al = np.zeros((3, 12))
        for i in range(2):
            Al[:, 6 * i : 6 * i + 3] = pin.skew(P[i] - com)
            Al[:, 6 * i + 3 : 6 * i + 6] = np.eye(3)
        H = np.zeros((n, n))
        f = np.zeros(n)
        H[nv:, nv:] = w_c * Ac.T @ Ac + w_l * Al.T @ Al
        f[nv:] = -w_c * Ac.T @ (c_acc - g) - w_l * Al.T @ (-kd_l * hg.angular)
        err = pin.difference(model, q, q_ref)[6:]
        idx = np.arange(6, nv)
        H[idx, idx] += w_p
        f[6:nv] -= w_p * (kp_p * err - kd_p * v[6:])
        H[np.arange(n), np.arange(n)] += eps
        bu = np.r_[b, h]
        b_lo[:18] = b
        return daqp.solve(2 * H, 2 * f, np.vstack([A, G]), bu, b_lo, sense)[0]

    return tick_wb, tick_raw


def measure(name_cases, repeats: int) -> list[tuple[str, float, float]]:
    for name, f_wb, f_raw, cmp in name_cases:  # same outputs before timing
        try:
            cmp(f_wb(), f_raw())
        except AssertionError as exc:
            raise SystemExit(f"{name}: wholebody and raw disagree\n{exc}") from exc
    times: dict[str, tuple[list[float], list[float]]] = {c[0]: ([], []) for c in name_cases}
    clock = time.thread_time  # CPU time of this thread: less sensitive to a shared machine
    for _ in range(repeats):
        for name, f_wb, f_raw, _ in name_cases:
            for f, out in ((f_wb, times[name][0]), (f_raw, times[name][1])):
                t0 = clock()
                for _ in range(BLOCK):
                    f()
                out.append((clock() - t0) / BLOCK)
    return [
        (n, 1e6 * float(np.median(t[0])), 1e6 * float(np.median(t[1]))) for n, t in times.items()
    ]


def main(repeats: int = 200) -> None:
    print(
        f"bench_control: median of {repeats} interleaved blocks of {BLOCK} calls, one process; "
        f"pinocchio {pin.__version__}, numpy {np.__version__}"
    )
    for name in ("g1", "humanoid"):
        try:
            robot, contacts, q = load(name)
        except wb.errors.MissingDependencyError as exc:
            print(f"\n{name}: skipped ({exc})")
            continue
        rows = measure(cases(robot, contacts, q), repeats)
        print(
            f"\nrobot {name}: nq = {robot.nq}, nv = {robot.nv}, 2 soles "
            f"({contacts[0].half_length} x {contacts[0].half_width} m)"
        )
        print(f"{'call':44s} {'wholebody':>11s} {'raw':>9s} {'ratio':>7s}")
        for n, t_wb, t_raw in rows:
            mark = "  > 1.5x" if t_wb / t_raw > FLAG else ""
            print(f"{n:44s} {t_wb:8.1f} us {t_raw:6.1f} us {t_wb / t_raw:6.2f}x{mark}")
        tick = dict((n, t) for n, t, _ in rows)["controller tick (update, solve)"]
        print(
            f"controller tick goal < 300 us: {'met' if tick < 300 else 'NOT met'} ({tick:.0f} us)"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
