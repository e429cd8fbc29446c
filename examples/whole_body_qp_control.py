"""A whole-body inverse-dynamics QP holds the shipped humanoid through a squat and a push in MuJoCo.

Each control tick (1 kHz) builds and solves one QP (``wholebody.control.WholeBodyController``)
over the generalized accelerations ``a`` and the two soles' contact wrenches ``w``:

* equalities: the floating-base rows of the dynamics, ``M_b a + h_b = J_b^T w``, and the
  soles' accelerations ``J a + Jdot v = 0`` (the feet stay put; no drift stabilisation);
* inequalities: each sole's 16-row contact wrench cone in world axes (``ContactSet`` face
  matrices, mu = 0.7 where MuJoCo's floor has 1.0), its normal force and the joint torque
  limits on ``tau = S (M a + h - J^T w)``;
* objective: a CoM PD to a reference (``ComTask``; the squat: down 6 cm and up), damping of
  the centroidal angular momentum (``AngularMomentumTask``), a joint posture PD
  (``PostureTask``), a small regularisation.

The torques ``tau`` drive MuJoCo (``qfrc_applied`` on the joints); an 80 N sideways push is
applied to the torso for 0.1 s (``xfrc_applied``). ``MujocoRecorder`` logs the simulation,
``check_trajectory`` must find the log consistent, and the QP's contact wrenches of every
tick are checked against the cones afterwards (``ContactSet.check``), not trusted. The
figure (CoM, CoP in the support polygon, foot forces, cone utilisation) is written to
``--out`` (default $WHOLEBODY_EXAMPLE_OUT or ./out).

    python examples/whole_body_qp_control.py                 # 4 s
    python examples/whole_body_qp_control.py --duration 1.6  # the test's short run

Needs the ``mujoco`` extra (and ``plot`` for the figure).
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import qpsolvers

import wholebody as wb
from wholebody.check.analysis import Report, check_trajectory
from wholebody.check.plots import optional_pyplot, output_dir
from wholebody.contacts import SurfaceContact
from wholebody.control import (
    AngularMomentumTask,
    ComTask,
    PostureTask,
    WholeBodyController,
)
from wholebody.errors import ModelWarning
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH, HUMANOID_SOLE_HALF_WIDTH
from wholebody.sim.mujoco import MujocoStateMap, import_mujoco, mujoco_spec_for_robot
from wholebody.sim.mujoco_recorder import MujocoRecorder
from wholebody.trajectory import Trajectory

mujoco = import_mujoco()

DT = 0.001
SOLES = ("left_sole", "right_sole")
#: Friction of the floor in MuJoCo, and the smaller one the controller plans with.
MU_WORLD, MU_PLAN = 1.0, 0.7
#: The controller plans with soles this fraction of the real ones (CoP kept off the edges).
SOLE_PLAN_SCALE = 0.75
#: The squat's depth [m], the push [N] on the torso and its length [s].
SQUAT_DEPTH, PUSH_FORCE, PUSH_LENGTH = 0.06, np.array([0.0, 80.0, 0.0]), 0.1
#: Gains: CoM PD per axis [1/s^2, 1/s] (compliant sideways, stiff vertically),
#: angular-momentum damping [1/s], posture PD [1/s^2, 1/s].
KP_COM, KD_COM = np.array([25.0, 25.0, 100.0]), np.array([10.0, 10.0, 20.0])
KD_ANGULAR, KP_POSTURE, KD_POSTURE = 10.0, 50.0, 14.0
WEIGHTS = {"com": 1.0, "angular_momentum": 1e-3, "posture": 1e-3}
#: How far MuJoCo's soft contacts let the soles sink under the robot's weight [m]: the
#: simulation starts there, without an impact.
SINK = 7.5e-4
#: Verification tolerance of the QP's wrenches against the cones [N or N m].
CONE_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Scenario:
    """Timeline scaled to the duration: settle, squat (down and up), push, recover [s]."""

    duration: float

    @property
    def squat(self) -> tuple[float, float]:
        return 0.125 * self.duration, 0.625 * self.duration

    @property
    def push(self) -> tuple[float, float]:
        start = 0.7 * self.duration
        return start, start + PUSH_LENGTH

    def com_reference(self, t: float, c0: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """CoM position, velocity and acceleration references [m, m/s, m/s^2]."""
        t0, t1 = self.squat
        period = t1 - t0
        s = min(max((t - t0) / period, 0.0), 1.0)
        w = 2 * np.pi / period
        inside = 0.0 < s < 1.0
        pos, vel, acc = c0.copy(), np.zeros(3), np.zeros(3)
        pos[2] -= SQUAT_DEPTH * 0.5 * (1 - np.cos(2 * np.pi * s))
        if inside:
            vel[2] = -SQUAT_DEPTH * 0.5 * w * np.sin(2 * np.pi * s)
            acc[2] = -SQUAT_DEPTH * 0.5 * w * w * np.cos(2 * np.pi * s)
        return pos, vel, acc


@dataclass
class Run:
    """What the simulation gives: the checked log and the controller's own records."""

    robot: wb.Robot
    traj: Trajectory
    report: Report
    tick_us: np.ndarray  # (N,) QP build + solve per tick [us]
    qp_wrenches: np.ndarray  # (N, 2, 6) the QP's sole wrenches, world axes [N, N m]
    qp_rotations: np.ndarray  # (N, 2, 3, 3) sole orientations at each tick
    sole_positions: np.ndarray  # (N, 2, 3) sole frame origins [m]
    com: np.ndarray  # (N, 3) CoM [m]
    com_ref: np.ndarray  # (N, 3) its reference [m]
    controller: WholeBodyController
    scenario: Scenario


def simulate(duration: float = 4.0, *, solver: str = "daqp") -> Run:
    """Simulate the controlled humanoid for ``duration`` seconds and check the log."""
    scenario = Scenario(duration)
    robot = wb.load("humanoid")
    hl, hw = HUMANOID_SOLE_HALF_LENGTH, HUMANOID_SOLE_HALF_WIDTH
    contacts = [SurfaceContact(f, half_length=hl, half_width=hw, mu=MU_WORLD) for f in SOLES]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        build = mujoco_spec_for_robot(robot, contacts, other_collisions=False, timestep=DT)
    build.spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    m = build.compile()
    d = mujoco.MjData(m)
    robot = build.robot
    s = SOLE_PLAN_SCALE
    planned = [SurfaceContact(f, half_length=s * hl, half_width=s * hw, mu=MU_PLAN) for f in SOLES]
    ctrl = WholeBodyController(robot, dt=DT)
    for c in planned:
        ctrl.add_contact(c)
    com_task = ctrl.add_task(ComTask(kp=KP_COM, kd=KD_COM, weight=WEIGHTS["com"]))
    ctrl.add_task(AngularMomentumTask(kd=KD_ANGULAR, weight=WEIGHTS["angular_momentum"]))
    posture = ctrl.add_task(PostureTask(kp=KP_POSTURE, kd=KD_POSTURE, weight=WEIGHTS["posture"]))

    # Initial posture: knees bent, soles on the floor.
    bent = {"hip_pitch": -0.25, "knee": 0.5, "ankle_pitch": -0.25}
    q0 = robot.q_from_named({f"{s}_{j}": x for s in ("left", "right") for j, x in bent.items()})
    q0[2] = -robot.frame_position(q0, SOLES[0])[2] - SINK
    smap = MujocoStateMap(robot, m)
    jid = {n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in robot.joint_names}
    d.qpos[:3], d.qpos[3:7] = q0[:3], [q0[6], *q0[3:6]]
    for n, value in robot.named(q0).items():
        d.qpos[m.jnt_qposadr[jid[n]]] = value
    dofs = np.array([m.jnt_dofadr[jid[n]] for n in robot.joint_names])
    torso = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "torso")
    rec = MujocoRecorder.from_build(build, m, push_bodies=["torso"])

    posture.set_reference(q0)
    c0 = robot.com(q0)
    steps = int(round(duration / DT))
    tick_us = np.empty(steps)
    W = np.empty((steps, 2, 6))
    R = np.empty((steps, 2, 3, 3))
    P = np.empty((steps, 2, 3))
    com, com_ref = np.empty((steps, 3)), np.empty((steps, 3))
    for k in range(steps):
        t = k * DT
        q, v = smap.q(d.qpos), smap.v(d.qpos, d.qvel)
        ref, ref_vel, ref_acc = scenario.com_reference(t, c0)

        start = time.perf_counter()
        com_task.set_reference(ref, ref_vel, ref_acc)
        ctrl.update(q, v, t)
        if solver == "daqp":  # the controller's own solve (daqp's workspace, warm-started)
            sol = ctrl.solve()
        else:  # any other qpsolvers backend, through the qpsolvers.Problem
            solution = qpsolvers.solve_problem(ctrl.problem(), solver=solver)
            if not solution.found or solution.x is None:
                raise RuntimeError(f"t = {t:.3f} s: the QP has no solution ({solver})")
            sol = ctrl.solution_from(solution.x)
        tick_us[k] = 1e6 * (time.perf_counter() - start)

        tau = sol.torque
        W[k] = [sol.wrenches[f] for f in SOLES]
        for j, f in enumerate(SOLES):
            placement = ctrl.contacts[f].placement
            R[k, j], P[k, j] = placement.rotation, placement.translation
        c = com_task.position
        com[k], com_ref[k] = c, ref
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[dofs] = tau
        d.xfrc_applied[:] = 0.0
        if scenario.push[0] <= t < scenario.push[1]:
            d.xfrc_applied[torso, :3] = PUSH_FORCE
        rec.record(d, time=t)
        mujoco.mj_step(m, d)
    traj = rec.trajectory(metadata={"robot": "humanoid", "scenario": "QP squat and push"})
    report = check_trajectory(robot, traj, contacts)
    return Run(robot, traj, report, tick_us, W, R, P, com, com_ref, ctrl, scenario)


def support_polygon(positions: np.ndarray, rotations: np.ndarray) -> np.ndarray:
    """Convex hull (counter-clockwise, (m, 2)) of the soles' corners in the ground plane [m]."""
    hl, hw = HUMANOID_SOLE_HALF_LENGTH, HUMANOID_SOLE_HALF_WIDTH
    local = np.array([[hl, hw, 0], [-hl, hw, 0], [-hl, -hw, 0], [hl, -hw, 0]])
    corners = [p + local @ Rj.T for p, Rj in zip(positions, rotations, strict=True)]
    pts = np.concatenate(corners)[:, :2]
    pts = pts[np.lexsort((pts[:, 1], pts[:, 0]))]

    def half(points: np.ndarray) -> list[np.ndarray]:
        out: list[np.ndarray] = []
        for p in points:
            while len(out) >= 2 and _cross2(out[-1] - out[-2], p - out[-2]) <= 0:
                out.pop()
            out.append(p)
        return out

    lower, upper = half(pts), half(pts[::-1])
    return np.array(lower[:-1] + upper[:-1])


def _cross2(a: np.ndarray, b: np.ndarray) -> float:
    return float(a[0] * b[1] - a[1] * b[0])


def distance_inside(polygon: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Signed distance of points (N, 2) inside a counter-clockwise convex polygon [m]."""
    edges = np.roll(polygon, -1, axis=0) - polygon
    normals = np.c_[-edges[:, 1], edges[:, 0]] / np.linalg.norm(edges, axis=1)[:, None]
    return np.einsum("nmi,mi->nm", points[:, None, :] - polygon[None], normals).min(axis=1)


def ground_cop(wrenches: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """CoP of the total contact wrench on the plane z = 0, (N, 2) [m] (NaN without load)."""
    f = wrenches[..., :3]
    moment = (wrenches[..., 3:] + np.cross(positions, f)).sum(axis=1)
    fz = f[..., 2].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(fz[:, None] > 0, np.c_[-moment[:, 1], moment[:, 0]] / fz[:, None], np.nan)


def plot(run: Run, polygon: np.ndarray, cop: np.ndarray, path: Path) -> None:
    """CoM vs reference, CoP in the support polygon, foot forces, cone utilisation."""
    plt = optional_pyplot()
    if plt is None:
        return
    t = run.traj.time
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    push = run.scenario.push
    ax = axes[0, 0]
    for i, name in enumerate("xyz"):
        ax.plot(t, run.com[:, i] - run.com[0, i], label=f"CoM {name} - initial")
        ax.plot(t, run.com_ref[:, i] - run.com[0, i], "--", color=f"C{i}", lw=0.8)
    ax.axvspan(*push, color="0.85", label="push")
    ax.set(xlabel="time [s]", ylabel="[m]", title="CoM (dashed: reference)")
    ax.legend(fontsize=8)
    ax = axes[0, 1]
    closed = np.vstack([polygon, polygon[:1]])
    ax.plot(closed[:, 0], closed[:, 1], "k-", label="support polygon")
    ax.plot(cop[:, 0], cop[:, 1], lw=0.8, label="CoP (MuJoCo's contact forces)")
    ax.plot(run.com[:, 0], run.com[:, 1], lw=0.8, label="CoM (ground projection)")
    ax.set(xlabel="x [m]", ylabel="y [m]", title="top view", aspect="equal")
    ax.legend(fontsize=8)
    ax = axes[1, 0]
    W = run.traj.contact_wrenches
    for j, name in enumerate(SOLES):
        ax.plot(t, W[:, j, 2], label=f"{name} f_z (MuJoCo)")
        ax.plot(t, run.qp_wrenches[:, j, 2], "--", lw=0.8, color=f"C{j}", label=f"{name} (QP)")
    ax.axhline(run.robot.weight, color="k", lw=0.5, label="weight")
    ax.axvspan(*push, color="0.85")
    ax.set(xlabel="time [s]", ylabel="[N]", title="vertical foot forces")
    ax.legend(fontsize=8)
    ax = axes[1, 1]
    for j, name in enumerate(SOLES):
        ax.plot(t, run.report.utilisation[:, j], label=f"{name} (MuJoCo, mu = {MU_WORLD})")
    qp = run.controller.layout.contact_set.check(run.qp_wrenches, run.qp_rotations)
    loaded = qp.normal_force > 0.01 * run.robot.weight  # utilisation means little unloaded
    for j, name in enumerate(SOLES):
        ax.plot(
            t,
            np.where(loaded[:, j], qp.utilisation[:, j], np.nan),
            "--",
            lw=0.8,
            label=f"{name} (QP, mu = {MU_PLAN})",
        )
    ax.axvspan(*push, color="0.85")
    ax.set(xlabel="time [s]", ylabel="|f_t| / (mu f_n)", title="friction cone utilisation")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"figure: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=4.0, help="simulated time [s]")
    parser.add_argument("--solver", default="daqp", help="qpsolvers backend")
    parser.add_argument("--out", default=None, help="output folder (default ./out)")
    args = parser.parse_args()
    run = simulate(args.duration, solver=args.solver)
    report = run.report
    print(report.format_summary())
    print(
        f"control tick (update + tasks + QP build + {args.solver} solve): median "
        f"{np.median(run.tick_us):.0f} us, 90th percentile "
        f"{np.percentile(run.tick_us, 90):.0f} us "
        f"over {len(run.tick_us)} ticks (nv = {run.robot.nv}, {run.controller.layout.n} unknowns)"
    )

    # Verification of the QP's answers against the cones it planned with, every tick.
    contact_set = run.controller.layout.contact_set
    cones = contact_set.check(run.qp_wrenches, run.qp_rotations, tol=CONE_TOLERANCE)
    worst_margin = float(np.nanmin(cones.margin))
    print(
        f"QP wrenches in their cones (mu = {MU_PLAN}): worst margin {worst_margin:.2e} "
        f"(tolerance -{CONE_TOLERANCE:g}), largest utilisation "
        f"{np.nanmax(cones.utilisation):.2f}"
    )

    # Balance: the CoM's ground projection and the CoP stay inside the support polygon,
    # the feet did not move, the robot did not fall.
    polygon = support_polygon(run.sole_positions[0], run.qp_rotations[0])
    cop = ground_cop(run.traj.contact_wrenches, run.sole_positions)
    com_inside = distance_inside(polygon, run.com[:, :2])
    cop_inside = distance_inside(polygon, cop)
    feet_moved = float(np.abs(run.sole_positions - run.sole_positions[0]).max())
    base_drop = float(run.traj.q[0, 2] - run.traj.q[:, 2].min())
    fz = run.traj.contact_wrenches[:, :, 2]
    print(
        f"CoM inside the support polygon by >= {1e3 * com_inside.min():.1f} mm, CoP by >= "
        f"{1e3 * np.nanmin(cop_inside):.1f} mm; feet moved <= {1e3 * feet_moved:.2f} mm; "
        f"base lowest {1e3 * base_drop:.0f} mm below its start; CoM tracking error <= "
        f"{1e3 * np.abs(run.com - run.com_ref).max():.1f} mm"
    )
    out = Path(args.out) if args.out else output_dir()
    out.mkdir(parents=True, exist_ok=True)
    plot(run, polygon, cop, out / "whole_body_qp_control.png")

    assert report.consistent, "the MuJoCo log is not consistent"
    assert report.n_checked == len(run.traj)
    assert worst_margin >= -CONE_TOLERANCE, f"QP wrench outside its cone by {-worst_margin:.3g}"
    assert com_inside.min() > 0.0 and np.nanmin(cop_inside) > -1e-3
    assert feet_moved < 5e-3, f"a foot moved by {feet_moved:.4f} m"
    assert base_drop < SQUAT_DEPTH + 0.03, f"the base dropped by {base_drop:.3f} m"
    assert fz.min() > 0.05 * run.robot.weight, "a foot lost contact"


if __name__ == "__main__":
    main()
