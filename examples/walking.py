"""Unitree G1 walks in MuJoCo under ``WholeBodyController`` on a capture-point reference.

The plan (``wholebody.control.trajectories``):

* footsteps: :meth:`FootstepPlan.straight`, six steps by default, each foot landing 15 cm
  ahead of the other (the last one beside it), 0.5 s single and 0.2 s double support;
* the ZMP: at the stance sole in single support, moved linearly between the soles in double
  support; the CoM: :class:`DcmTrajectory`, the linear inverted pendulum on that ZMP through
  its divergent component of motion (capture point; Pratt et al. 2006, Englsberger et al.
  2015), solved exactly per segment;
* swing soles: :class:`SwingFoot` (minimum jerk from lift-off to the foothold, 5 cm lift).

The controller (one for the whole walk): a CoM task on the DCM plan's CoM (its PD gains are
the DCM feedback ``p = p_ref + (1 + k / omega) (xi - xi_ref)`` of the pendulum written on
the CoM: ``kp = k omega``, ``kd = k + omega``), the pelvis's orientation, centroidal angular
momentum damping, the joint posture, a small force regularisation per sole, and a swing
sole's SE3 task while it is in the air; the soles' wrench cones (planned 13 x 5 cm, mu 0.5;
MuJoCo's soles 17 x 6 cm, mu 1.0), normal force bounds and torque limits. Before lift-off a
sole's maximum normal force ramps to zero over the end of the double support
(``remove_contact(..., ramp=...)``); at touch-down the sole is added back with a ramp up.
The torques go to MuJoCo (implicit-fast integrator, 1 kHz).

Two logs are written and checked: MuJoCo's (``MujocoRecorder``: its states, torques and
contact forces) against the real soles, and the controller's (the states it was given, its
accelerations, torques and sole wrenches) against the soles it planned with. The profiles
for ``wholebody check`` are written beside them (the G1's sole frames and the two sole
sizes), and the commands printed:

    python examples/walking.py                 # six steps, 6.9 s simulated
    python examples/walking.py --steps 2 --out /tmp/walk

Needs the ``mujoco`` and ``robots`` extras.
"""

from __future__ import annotations

import argparse
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

import wholebody as wb
from wholebody.check.analysis import Report, check_trajectory
from wholebody.check.plots import output_dir
from wholebody.contacts import SurfaceContact
from wholebody.control import (
    AngularMomentumTask,
    ComTask,
    ContactForceTask,
    ControlSolution,
    DcmTrajectory,
    Footstep,
    FootstepPlan,
    FrameTask,
    PostureTask,
    SwingFoot,
    WholeBodyController,
)
from wholebody.errors import ModelWarning
from wholebody.sim.mujoco import MujocoStateMap, import_mujoco, mujoco_spec_for_robot
from wholebody.sim.mujoco_recorder import MujocoRecorder
from wholebody.trajectory import Trajectory

mujoco = import_mujoco()

DT = 1e-3
SOLES = ("left_sole", "right_sole")
#: The G1's sole frames (its URDF has none): 3.5 cm below and ahead of the ankle roll links
#: (the URDF's four contact spheres span x -0.05..0.12, y +-0.03, z -0.03, radius 5 mm).
SOLE_PARENTS = {"left_sole": "left_ankle_roll_link", "right_sole": "right_ankle_roll_link"}
SOLE_OFFSET = (0.035, 0.0, -0.035)
#: Sole half sizes [m] and friction: MuJoCo's (real) and the controller's (planned, inside).
REAL, PLANNED = (0.085, 0.03, 1.0), (0.065, 0.025, 0.5)
#: The walk: step length [m], lift [m], single and double support [s], the rests before and
#: after [s], contact force ramps [s] (within the double support).
STEP, LIFT, SINGLE, DOUBLE, REST, RAMP = 0.15, 0.05, 0.5, 0.2, 1.0, 0.1
#: Time simulated after the plan's end [s] (the CoM settles over the feet).
SETTLE = 0.5
#: DCM feedback gain [1/s] (the CoM task's gains follow from it and omega) and CoM weight.
K_DCM, W_COM = 6.0, 10.0
KP_SWING, KD_SWING, W_SWING = 400.0, 40.0, 10.0
#: How far MuJoCo's soft contacts let the soles sink under the G1's weight [m]: the start
#: is at rest there (a drop from above makes a landing transient).
SINK = 7.2e-4
#: Knees bent at the start [rad].
BENT = {
    f"{s}_{j}_joint": x
    for s in ("left", "right")
    for j, x in (("hip_pitch", -0.3), ("knee", 0.6), ("ankle_pitch", -0.3))
}


def soles(size: tuple[float, float, float]) -> list[SurfaceContact]:
    hl, hw, mu = size
    return [SurfaceContact(f, half_length=hl, half_width=hw, mu=mu) for f in SOLES]


@dataclass
class Walk:
    """What the simulation gives: the two logs, their reports, the plan and the CoM."""

    robot: wb.Robot
    mujoco_log: Trajectory
    controller_log: Trajectory
    report: Report
    controller_report: Report
    plan: FootstepPlan
    com: np.ndarray  # (N, 3) the CoM of the simulated state [m]
    com_ref: np.ndarray  # (N, 3) the CoM reference [m]
    feet: np.ndarray  # (N, 2, 3) the soles' positions [m]

    def landings(self) -> np.ndarray:
        """Per step: the sole's distance to its foothold at touch-down (x-y) and its highest
        lift above its start during the swing [m], shape (steps, 2)."""
        out = []
        for step in self.plan.footsteps:
            j = SOLES.index(step.foot)
            k0, k1 = (int(round(t / DT)) for t in (step.lift_off, step.touch_down))
            xy = self.feet[k1, j, :2] - step.end.translation[:2]
            out.append((np.linalg.norm(xy), np.ptp(self.feet[k0 : k1 + 1, j, 2])))
        return np.array(out)

    def com_error(self) -> tuple[float, float]:
        """RMS and largest distance of the CoM to its reference over the walk [m]."""
        e = np.linalg.norm(self.com - self.com_ref, axis=1)
        return float(np.sqrt(np.mean(e**2))), float(e.max())


def g1() -> wb.Robot:
    """The G1 with its sole frames."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        robot = wb.load("g1")
    for sole, parent in SOLE_PARENTS.items():
        robot.add_frame(sole, parent, pin.SE3(np.eye(3), np.array(SOLE_OFFSET)))
    return robot


def profile(size: tuple[float, float, float]) -> str:
    """A ``wholebody check`` profile (TOML) of the G1 with these soles."""
    lines = ['robot = "g1"']
    for sole, parent in SOLE_PARENTS.items():
        lines += ["", "[[frames]]", f'name = "{sole}"', f'parent = "{parent}"']
        lines.append(f"translation = {list(SOLE_OFFSET)}")
    hl, hw, mu = size
    for sole in SOLES:
        lines += ["", "[[contacts]]", f'frame = "{sole}"', 'type = "surface"']
        lines += [f"half_length = {hl}", f"half_width = {hw}", f"mu = {mu}"]
    return "\n".join(lines) + "\n"


class Walker:
    """The controller and the plan's events on it, tick by tick."""

    def __init__(self, robot: wb.Robot, q0: np.ndarray, steps: int):
        self.ctrl = ctrl = WholeBodyController(robot, dt=DT)
        self.planned = {c.name: c for c in soles(PLANNED)}
        for c in self.planned.values():
            ctrl.add_contact(c, kp=20.0, kd=9.0)
        ctrl.update(q0, np.zeros(robot.nv), 0.0)
        feet = {f: s.placement for f, s in ctrl.contacts.items()}
        self.plan = FootstepPlan.straight(
            feet,
            steps=steps,
            length=STEP,
            first=SOLES[1],
            single_support=SINGLE,
            double_support=DOUBLE,
            rest=REST,
        )
        com0 = robot.com(q0)
        height = com0[2] - np.mean([M.translation[2] for M in feet.values()])
        self.dcm = DcmTrajectory(self.plan.zmp_times, self.plan.zmp_points, com0, height)
        w = self.dcm.omega
        self.com = ctrl.add_task(ComTask(kp=K_DCM * w, kd=K_DCM + w, weight=W_COM))
        ctrl.add_task(FrameTask("pelvis", kp=100.0, kd=20.0, weight=1.0, mask=[0, 0, 0, 1, 1, 1]))
        ctrl.add_task(AngularMomentumTask(kd=10.0, weight=1e-3))
        ctrl.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-3)).set_reference(q0)
        for f in SOLES:
            ctrl.add_task(ContactForceTask(f, weight=1e-6))
        #: Per tick: ("lift" (the ramp down begins), "swing" or "land", the step).
        self.events: dict[int, list[tuple[str, Footstep]]] = {}
        for step in self.plan.footsteps:
            self._at(step.lift_off - RAMP, ("lift", step))
            self._at(step.lift_off, ("swing", step))
            self._at(step.touch_down, ("land", step))
        self.swing: SwingFoot | None = None
        self.swing_task: FrameTask | None = None
        self.placements = dict(feet)  # each sole's placement at the last tick it was held

    def _at(self, t: float, event: tuple[str, Footstep]) -> None:
        self.events.setdefault(int(round(t / DT)), []).append(event)

    def tick(self, k: int, q: np.ndarray, v: np.ndarray) -> ControlSolution:
        """The plan's events at tick ``k``, the references, one update and solve."""
        t = k * DT
        ctrl = self.ctrl
        for kind, step in self.events.get(k, ()):
            if kind == "lift":
                ctrl.remove_contact(step.foot, ramp=RAMP)
            elif kind == "swing":  # the contact leaves at this update
                start = self.placements[step.foot]
                end = pin.SE3(
                    step.end.rotation, np.r_[step.end.translation[:2], start.translation[2]]
                )
                self.swing = SwingFoot(start, end, LIFT, step.touch_down - t, t0=t)
                self.swing_task = ctrl.add_task(
                    FrameTask(step.foot, kp=KP_SWING, kd=KD_SWING, weight=W_SWING, name="swing")
                )
            else:
                ctrl.remove_task("swing")
                self.swing = self.swing_task = None
                ctrl.add_contact(self.planned[step.foot], kp=20.0, kd=9.0, ramp=RAMP)
        self.com.set_reference(*self.dcm(t))
        if self.swing is not None and self.swing_task is not None:
            self.swing_task.set_reference(*self.swing(t))
        ctrl.update(q, v, t)
        for f, s in ctrl.contacts.items():
            self.placements[f] = s.placement
        return ctrl.solve()


def simulate(steps: int = 6) -> Walk:
    """Walk ``steps`` steps in MuJoCo; both logs recorded and checked."""
    robot = g1()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        build = mujoco_spec_for_robot(robot, soles(REAL), other_collisions=False, timestep=DT)
    build.spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    m = build.compile()
    d = mujoco.MjData(m)
    robot = build.robot
    q0 = robot.q_from_named(BENT)
    q0[2] = -SINK - robot.frame_position(q0, SOLES[0])[2]
    smap = MujocoStateMap(robot, m)
    smap.qpos(q0, out=d.qpos)
    dofs = smap.joint_dof_indices
    rec = MujocoRecorder.from_build(build, m)
    walker = Walker(robot, q0, steps)
    n = int(round((walker.plan.end + SETTLE) / DT))
    qs, vs, accs, taus = (np.empty((n, k)) for k in (robot.nq, robot.nv, robot.nv, robot.nv - 6))
    wrenches, active = np.zeros((n, 2, 6)), np.zeros((n, 2), dtype=bool)
    com, com_ref, feet = np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 2, 3))
    for k in range(n):
        q, v = smap.q(d.qpos), smap.v(d.qpos, d.qvel)
        sol = walker.tick(k, q, v)
        for j, f in enumerate(SOLES):
            if f in sol.wrenches:
                wrenches[k, j], active[k, j] = sol.wrenches[f], True
            feet[k, j] = walker.ctrl.kin.placement(walker.ctrl.kin.frame_id(f)).translation
        qs[k], vs[k], accs[k], taus[k] = q, v, sol.acceleration, sol.torque
        com[k], com_ref[k] = walker.com.position, walker.com.reference
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[dofs] = sol.torque
        rec.record(d, time=k * DT)
        mujoco.mj_step(m, d)
    mj_log = rec.trajectory(metadata={"robot": "g1", "scenario": f"walk, {steps} steps"})
    ctrl_log = Trajectory(
        time=np.arange(n) * DT,
        q=qs,
        v=vs,
        a=accs,
        tau=taus,
        joint_names=tuple(robot.joint_names),
        contact_names=SOLES,
        contact_wrenches=wrenches,
        contact_active=active,
        metadata={"robot": "g1", "source": "WholeBodyController"},
    )
    report = check_trajectory(robot, mj_log, soles(REAL))
    controller_report = check_trajectory(robot, ctrl_log, soles(PLANNED))
    return Walk(robot, mj_log, ctrl_log, report, controller_report, walker.plan, com, com_ref, feet)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6, help="steps to walk (default 6)")
    parser.add_argument("--out", default=None, help="output folder (default ./out)")
    args = parser.parse_args()
    walk = simulate(args.steps)
    out = Path(args.out) if args.out else output_dir()
    out.mkdir(parents=True, exist_ok=True)
    for name, log, size in (
        ("walking_mujoco", walk.mujoco_log, REAL),
        ("walking_controller", walk.controller_log, PLANNED),
    ):
        log.save(out / f"{name}.npz")
        (out / f"{name}.toml").write_text(profile(size))
        print(f"wholebody check {out / name}.npz --config {out / name}.toml")
    print("MuJoCo log:\n" + walk.report.format_summary())
    print("controller log:\n" + walk.controller_report.format_summary())
    rms, worst = walk.com_error()
    landings = walk.landings()
    # A step is walked when its sole lifted at least half the planned lift and landed within
    # 1 cm of its foothold.
    walked = int(np.sum((landings[:, 0] < 0.01) & (landings[:, 1] > LIFT / 2)))
    advance = walk.feet[-1, :, 0] - walk.feet[0, :, 0]
    print(
        f"steps walked: {walked} of {len(landings)}; landed <= {1e3 * landings[:, 0].max():.1f} "
        f"mm from the footholds; feet advanced {1e3 * advance[0]:.1f} and "
        f"{1e3 * advance[1]:.1f} mm (planned {1e3 * STEP * (args.steps - 1):.0f} mm)"
    )
    print(f"CoM tracking error: RMS {1e3 * rms:.2f} mm, max {1e3 * worst:.2f} mm")
    assert walk.report.consistent, "the MuJoCo log is not consistent"
    assert walk.controller_report.consistent, "the controller's log is not consistent"
    assert walked == args.steps, f"{walked} of {args.steps} steps walked"


if __name__ == "__main__":
    main()
