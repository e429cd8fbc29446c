"""The shipped humanoid in MuJoCo under ``WholeBodyController``: it balances, reaches with its
right hand to a target, survives a push, and takes two steps.

One controller lives through the whole run; its contacts change at run time:

* tasks: CoM (PD on a minimum-jerk reference), centroidal angular momentum damping, joint
  posture, right-hand position (a :class:`MinimumJerkSE3` reach), a swing-foot SE3 task
  (an :class:`SE3Spline` through a lifted waypoint) while a foot is in the air, and a small
  force regularisation per sole;
* constraints: the soles' wrench cones (mu = 0.7 planned, 1.0 in MuJoCo), normal force
  bounds, torque limits, joint position / velocity / acceleration bounds (viability margin);
* contacts: before lift-off a sole's maximum normal force ramps to zero over 0.1 s
  (``remove_contact(..., ramp=0.1)``); at touch-down it is added back with a 0.1 s ramp up;
  a held sole's acceleration has drift gains.

Two logs are written and checked by ``wholebody check`` (in the example's test): MuJoCo's
(``MujocoRecorder``: its own states, torques, contact forces and the push), and the
controller's (the states it was given, its accelerations, torques and sole wrenches), whose
forces must balance its own dynamics. The figure (CoM and its reference, feet, hand, vertical
forces of MuJoCo and of the QP) is written to ``--out``.

    python examples/humanoid_stepping_control.py            # 5.4 s simulated

Needs the ``mujoco`` extra (and ``plot`` for the figure).
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin

import wholebody as wb
from wholebody.check.analysis import Report, check_trajectory
from wholebody.check.plots import optional_pyplot, output_dir
from wholebody.contacts import SurfaceContact
from wholebody.control import (
    AngularMomentumTask,
    ComTask,
    ContactForceTask,
    ControlSolution,
    FrameTask,
    JointBounds,
    MinimumJerk,
    MinimumJerkSE3,
    PostureTask,
    SE3Spline,
    WholeBodyController,
)
from wholebody.errors import ModelWarning
from wholebody.friction import ContactSet
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH, HUMANOID_SOLE_HALF_WIDTH
from wholebody.sim.mujoco import MujocoStateMap, import_mujoco, mujoco_spec_for_robot
from wholebody.sim.mujoco_recorder import MujocoRecorder
from wholebody.trajectory import Trajectory

mujoco = import_mujoco()

DT = 0.001
SOLES = ("left_sole", "right_sole")
HAND = "right_hand"
MU_WORLD, MU_PLAN, SOLE_PLAN_SCALE = 1.0, 0.7, 0.75
#: How far MuJoCo's soft contacts let the soles sink under the robot's weight [m].
SINK = 7.5e-4
#: Reach: the hand's target relative to its start (world) [m], and its duration [s].
REACH, REACH_TIME = np.array([0.15, 0.0, 0.15]), 0.8
#: Push on the torso [N] and its length [s].
PUSH_FORCE, PUSH_LENGTH = np.array([0.0, 60.0, 0.0]), 0.1
#: Steps: length [m], foot lift [m]; durations [s] of a CoM shift, the wait for the CoM to
#: settle over the stance foot, a force ramp, a swing.
STEP, LIFT, SHIFT_TIME, HOLD, RAMP, SWING_TIME = 0.08, 0.04, 1.0, 0.3, 0.1, 0.6
#: Task gains and weights.
KP_COM, KD_COM, W_COM = np.array([25.0, 25.0, 100.0]), np.array([10.0, 10.0, 20.0]), 10.0
KP_SWING, KD_SWING, W_SWING = 400.0, 40.0, 1.0
#: Verification tolerance of the QP's wrenches against its cones [N or N m].
CONE_TOLERANCE = 1e-6


@dataclass
class Plan:
    """The timeline [s]: settle, reach, push, then per step shift / lift-off / swing."""

    reach: float = 0.3
    push: float = 1.3
    steps: list[tuple[str, float]] = field(default_factory=list)
    duration: float = 0.0

    def __post_init__(self) -> None:
        t = 1.8
        for foot in ("left_sole", "right_sole"):
            self.steps.append((foot, t))
            t += SHIFT_TIME + HOLD + RAMP + SWING_TIME + 0.1
        self.duration = t + SHIFT_TIME + 0.2


@dataclass
class Run:
    """What the simulation gives: the two logs, their reports, the controller's records."""

    robot: wb.Robot
    mujoco_log: Trajectory
    controller_log: Trajectory
    report: Report
    controller_report: Report
    tick_us: np.ndarray
    com: np.ndarray
    com_ref: np.ndarray
    feet: np.ndarray  # (N, 2, 3) sole positions
    hand: np.ndarray  # (N, 3)
    hand_target: np.ndarray  # (3,)
    #: Per lift-off, the QP's normal force [N] when the ramp began and at its last tick.
    liftoff_forces: list[tuple[float, float]]
    cone_margin: float
    plan: Plan


def simulate(plan: Plan | None = None) -> Run:
    """Run the scenario in MuJoCo and check both logs."""
    plan = plan or Plan()
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
    planned = {
        f: SurfaceContact(f, half_length=s * hl, half_width=s * hw, mu=MU_PLAN) for f in SOLES
    }

    # Initial posture: knees bent, elbows bent off their limit, soles on the floor.
    bent = {"hip_pitch": -0.25, "knee": 0.5, "ankle_pitch": -0.25}
    named = {f"{side}_{j}": x for side in ("left", "right") for j, x in bent.items()}
    named.update({"left_elbow": -0.4, "right_elbow": -0.4})
    q0 = robot.q_from_named(named)
    q0[2] = -robot.frame_position(q0, SOLES[0])[2] - SINK
    smap = MujocoStateMap(robot, m)
    jid = {n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in robot.joint_names}
    d.qpos[:3], d.qpos[3:7] = q0[:3], [q0[6], *q0[3:6]]
    for n, value in robot.named(q0).items():
        d.qpos[m.jnt_qposadr[jid[n]]] = value
    dofs = np.array([m.jnt_dofadr[jid[n]] for n in robot.joint_names])
    torso = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "torso")
    rec = MujocoRecorder.from_build(build, m, push_bodies=["torso"])

    # The controller, built once.
    ctrl = WholeBodyController(robot, dt=DT)
    for f in SOLES:
        ctrl.add_contact(planned[f], kp=20.0, kd=9.0)
    com = ctrl.add_task(ComTask(kp=KP_COM, kd=KD_COM, weight=W_COM))
    ctrl.add_task(AngularMomentumTask(kd=10.0, weight=1e-3))
    posture = ctrl.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-3))
    posture.set_reference(q0)
    hand = ctrl.add_task(FrameTask(HAND, kp=100.0, kd=20.0, weight=0.1, mask=[1, 1, 1, 0, 0, 0]))
    for f in SOLES:
        ctrl.add_task(ContactForceTask(f, weight=1e-5))
    ctrl.add_constraint(JointBounds(robot, dt=DT, acceleration_limit=200.0, margin=0.02))

    steps = int(round(plan.duration / DT))
    tick_us = np.empty(steps)
    com_log, com_ref = np.empty((steps, 3)), np.empty((steps, 3))
    feet, hand_log = np.empty((steps, 2, 3)), np.empty((steps, 3))
    W_qp = np.zeros((steps, 2, 6))
    R_qp = np.zeros((steps, 2, 3, 3))
    active = np.zeros((steps, 2), dtype=bool)
    qs, vs, accs, taus = (
        np.empty((steps, n)) for n in (robot.nq, robot.nv, robot.nv, robot.nv - 6)
    )
    reach: MinimumJerkSE3 | None = None
    com_move: MinimumJerk | None = None
    swing: SE3Spline | None = None
    swing_task: FrameTask | None = None
    swing_start: dict[str, pin.SE3] = {}
    events: dict[float, str] = {}
    for foot, t0 in plan.steps:
        events[round(t0, 6)] = f"shift:{foot}"
        lift = t0 + SHIFT_TIME + HOLD
        events[round(lift, 6)] = f"liftoff:{foot}"
        events[round(lift + RAMP, 6)] = f"swing:{foot}"
        events[round(lift + RAMP + SWING_TIME, 6)] = f"touchdown:{foot}"
    events[round(plan.steps[-1][1] + SHIFT_TIME + HOLD + RAMP + SWING_TIME + 0.1, 6)] = "center"
    liftoff: list[tuple[float, float]] = []
    pending_liftoff: tuple[str, float] | None = None
    last_force = 0.0
    sol = None
    # One update at the initial state gives the tasks their start (CoM, hand placement).
    ctrl.update(smap.q(d.qpos), smap.v(d.qpos, d.qvel), 0.0)
    hand_target = hand.placement.translation + REACH
    for k in range(steps):
        t = k * DT
        q, v = smap.q(d.qpos), smap.v(d.qpos, d.qvel)
        start = time.perf_counter()
        # Scenario events on the live controller, from the last tick's task and contact states.
        if abs(t - plan.reach) < DT / 2:
            goal = pin.SE3(hand.placement.rotation, hand_target)
            reach = MinimumJerkSE3(hand.placement, goal, REACH_TIME, t0=t)
        event = events.get(round(t, 6))
        if event is not None:
            kind, foot = (event.split(":") + [""])[:2]
            states = ctrl.contacts
            if kind == "shift":
                target = states[_other(foot)].placement.translation
                com_move = MinimumJerk(
                    com.position, np.r_[target[:2], com.reference[2]], SHIFT_TIME, t0=t
                )
            elif kind == "liftoff":
                ctrl.remove_contact(foot, ramp=RAMP)
                pending_liftoff = (foot, _normal_force(ctrl, sol, foot))
            elif kind == "swing":
                start_pose = swing_start[foot]
                end_pose = pin.SE3(start_pose.rotation, start_pose.translation + [STEP, 0, 0])
                mid = pin.SE3(start_pose.rotation, start_pose.translation + [STEP / 2, 0, LIFT])
                swing = SE3Spline(
                    [t, t + SWING_TIME / 2, t + SWING_TIME], [start_pose, mid, end_pose]
                )
                swing_task = ctrl.add_task(
                    FrameTask(foot, kp=KP_SWING, kd=KD_SWING, weight=W_SWING, name="swing")
                )
            elif kind == "touchdown":
                ctrl.remove_task("swing")
                swing_task, swing = None, None
                ctrl.add_contact(planned[foot], kp=20.0, kd=9.0, ramp=RAMP)
            elif kind == "center":
                mid = 0.5 * sum(c.placement.translation for c in states.values())
                com_move = MinimumJerk(
                    com.position, np.r_[mid[:2], com.reference[2]], SHIFT_TIME, t0=t
                )
        if reach is not None:
            hand.set_reference(*reach(t))
        if com_move is not None:
            com.set_reference(*com_move(t))
        if swing is not None and swing_task is not None:
            swing_task.set_reference(*swing(t))
        ctrl.update(q, v, t)
        for f, c in ctrl.contacts.items():
            swing_start[f] = c.placement
        sol = ctrl.solve()
        tick_us[k] = 1e6 * (time.perf_counter() - start)

        if pending_liftoff is not None and pending_liftoff[0] not in sol.wrenches:
            liftoff.append((pending_liftoff[1], last_force))
            pending_liftoff = None
        if pending_liftoff is not None:
            last_force = _normal_force(ctrl, sol, pending_liftoff[0])
        for j, f in enumerate(SOLES):
            if f in sol.wrenches:
                W_qp[k, j] = sol.wrenches[f]
                R_qp[k, j] = ctrl.contacts[f].placement.rotation
                active[k, j] = True
            feet[k, j] = _placement(ctrl, f).translation
        qs[k], vs[k], accs[k], taus[k] = q, v, sol.acceleration, sol.torque
        com_log[k], com_ref[k] = com.position, com.reference
        hand_log[k] = hand.placement.translation

        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[dofs] = sol.torque
        d.xfrc_applied[:] = 0.0
        if plan.push <= t < plan.push + PUSH_LENGTH:
            d.xfrc_applied[torso, :3] = PUSH_FORCE
        rec.record(d, time=t)
        mujoco.mj_step(m, d)

    mj_log = rec.trajectory(
        metadata={"robot": "humanoid", "scenario": "balance, reach, push, steps"}
    )
    ctrl_log = Trajectory(
        time=np.arange(steps) * DT,
        q=qs,
        v=vs,
        a=accs,
        tau=taus,
        joint_names=tuple(robot.joint_names),
        contact_names=SOLES,
        contact_wrenches=W_qp,
        contact_active=active,
        metadata={"robot": "humanoid", "source": "WholeBodyController"},
    )
    report = check_trajectory(robot, mj_log, contacts)
    controller_report = check_trajectory(robot, ctrl_log, list(planned.values()))
    rotations = np.where(active[..., None, None], R_qp, np.eye(3))
    check = ContactSet(list(planned.values())).check(W_qp, rotations, tol=CONE_TOLERANCE)
    margin = float(np.nanmin(np.where(active, check.margin, np.inf)))
    return Run(
        robot,
        mj_log,
        ctrl_log,
        report,
        controller_report,
        tick_us,
        com_log,
        com_ref,
        feet,
        hand_log,
        hand_target,
        liftoff,
        margin,
        plan,
    )


def _normal_force(ctrl: WholeBodyController, sol: ControlSolution, foot: str) -> float:
    """The QP's normal force on a sole [N]: along the sole's z axis, the force the ramp bounds."""
    normal = ctrl.contacts[foot].placement.rotation[:, 2]
    return float(normal @ sol.wrenches[foot][:3])


def _other(foot: str) -> str:
    return SOLES[1] if foot == SOLES[0] else SOLES[0]


def _placement(ctrl: WholeBodyController, frame: str) -> pin.SE3:
    """A frame's placement from the pass the controller's update just made (on the pass's own
    data: ``ctrl.kin``)."""
    return ctrl.kin.placement(ctrl.kin.frame_id(frame))


def plot(run: Run, path: Path) -> None:
    """CoM and its reference, feet, hand, vertical forces (MuJoCo and the QP)."""
    plt = optional_pyplot()
    if plt is None:
        print("no plot (matplotlib missing)")
        return
    t = run.mujoco_log.time
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    ax = axes[0, 0]
    for i, name in enumerate("xyz"):
        ax.plot(t, run.com[:, i], label=f"CoM {name}")
        ax.plot(t, run.com_ref[:, i], "--", color=f"C{i}", lw=0.8)
    ax.axvspan(run.plan.push, run.plan.push + PUSH_LENGTH, color="0.85", label="push")
    ax.set(xlabel="time [s]", ylabel="[m]", title="CoM (dashed: reference)")
    ax.legend(fontsize=8)
    ax = axes[0, 1]
    for j, f in enumerate(SOLES):
        ax.plot(t, run.feet[:, j, 0], label=f"{f} x")
        ax.plot(t, run.feet[:, j, 2], ":", color=f"C{j}", label=f"{f} z")
    ax.set(xlabel="time [s]", ylabel="[m]", title="feet")
    ax.legend(fontsize=8)
    ax = axes[1, 0]
    for i, name in enumerate("xyz"):
        ax.plot(t, run.hand[:, i] - run.hand_target[i], label=f"hand {name} - target")
    ax.set(xlabel="time [s]", ylabel="[m]", title="right hand to its target")
    ax.legend(fontsize=8)
    ax = axes[1, 1]
    W = run.mujoco_log.contact_wrenches
    for j, f in enumerate(SOLES):
        ax.plot(t, W[:, j, 2], label=f"{f} f_z (MuJoCo)")
        ax.plot(
            t,
            run.controller_log.contact_wrenches[:, j, 2],
            "--",
            lw=0.8,
            color=f"C{j}",
            label=f"{f} (QP)",
        )
    ax.axhline(run.robot.weight, color="k", lw=0.5, label="weight")
    ax.set(xlabel="time [s]", ylabel="[N]", title="vertical contact forces")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"figure: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="output folder (default ./out)")
    args = parser.parse_args()
    run = simulate()
    out = Path(args.out) if args.out else output_dir()
    out.mkdir(parents=True, exist_ok=True)
    run.mujoco_log.save(out / "stepping_mujoco.npz")
    run.controller_log.save(out / "stepping_controller.npz")
    print("MuJoCo log:\n" + run.report.format_summary())
    print("controller log:\n" + run.controller_report.format_summary())
    print(
        f"control tick (update + events + solve): median {np.median(run.tick_us):.0f} us, "
        f"90th percentile {np.percentile(run.tick_us, 90):.0f} us over {len(run.tick_us)} ticks"
    )
    hand_err = float(np.linalg.norm(run.hand[-1] - run.hand_target))
    advance = run.feet[-1, :, 0] - run.feet[0, :, 0]
    base_drop = float(run.mujoco_log.q[0, 2] - run.mujoco_log.q[:, 2].min())
    print(
        f"hand {1e3 * hand_err:.1f} mm from its target; feet advanced "
        f"{1e3 * advance[0]:.1f} and {1e3 * advance[1]:.1f} mm (step {1e3 * STEP:.0f} mm); "
        f"base lowest {1e3 * base_drop:.0f} mm below its start; QP wrenches in their cones "
        f"by >= {run.cone_margin:.2e}"
    )
    for f0, last in run.liftoff_forces:
        print(
            f"lift-off: normal force {f0:.1f} N at the ramp's start, {last:.3f} N at the last "
            f"tick before removal (the ramp allows {f0 * DT / RAMP:.3f} N)"
        )
    plot(run, out / "humanoid_stepping_control.png")

    assert run.report.consistent, "the MuJoCo log is not consistent"
    assert run.controller_report.consistent, "the controller's log is not consistent"
    assert run.cone_margin >= -CONE_TOLERANCE
    assert hand_err < 0.03, f"the hand is {hand_err:.3f} m from its target"
    assert np.all(np.abs(advance - STEP) < 0.02), f"feet advanced {advance}"
    assert base_drop < 0.05, f"the base dropped by {base_drop:.3f} m"
    assert len(run.liftoff_forces) == 2
    for f0, last in run.liftoff_forces:
        assert last <= f0 * DT / RAMP + 1e-6


if __name__ == "__main__":
    main()
