"""The WholeBodyController tick on Talos (or G1) inside a MuJoCo closed loop, beside TSID's.

Task set (the one of the TSID side by side in DESIGN.md section 8): two 6D sole contacts
(planned 0.15 x 0.075 m, mu = 0.7; MuJoCo's soles 0.20 x 0.10 m), CoM, angular momentum,
joint posture, the left gripper's SE3 pose, force regularisation per sole, torque limits.
Talos (example-robot-data's reduced model) stands in MuJoCo with knees bent; each tick reads
the state, runs the controller and applies its torques.

The same task set, weights and gains are written for TSID 1.x (``import tsid``, where it is
installed) and run in its own closed loop in the same process: ``Contact6d`` (the sole's
four corners, the same pyramids, whose wrench cone is wholebody's 16-row surface cone),
``TaskComEquality``, ``TaskAMEquality``, ``TaskJointPosture``, ``TaskSE3Equality``, the
contacts' force regularisation (weights set to ones: wholebody's) and
``TaskActuationBounds``, solved by ``SolverHQuadProgFast``.

Timed, per tick, with the thread's CPU clock (less sensitive to a shared machine); the
median over the loop is printed:

* wholebody: ``WholeBodyController.update`` + ``solve`` (the torques are in the solution);
* TSID: ``computeProblemData`` + ``solver.solve`` + ``getActuatorForces``.

Outside the timed part, the same checks for both, with an independent Pinocchio pass at the
tick's state: the equations of motion ``M a + h = S^T tau + sum J_c^T w_c`` (largest
residual over the loop [N, N m]; TSID's wrenches are its point forces through the
contact's generator matrix, in the sole's axes), each contact wrench in wholebody's
surface cone (largest ``G w`` [N]), the CoM's RMS error to its reference computed from
the simulated ``q`` [mm], and the lowest base height (a fall would show).

Two scenarios: *standing* (the reference held), and *stepping*: the CoM moves over the
left sole (minimum jerk, 1 s), the right contact is removed with a 50 ms force ramp
(``remove_contact(name, ramp=...)``; TSID's ``removeRigidContact(name, transition_time)``),
the right sole lifts 3 cm and comes back under an SE3 task, the contact is added again and
the CoM returns. Tick medians are printed per phase (double / single support).

The old fixed-contact ``InverseDynamicsQP`` is timed in the standing loop for reference.

TSID's PyPI wheels (1.10.0) were built against an earlier Pinocchio binary layout: with
pinocchio 4.1.0 ``tsid.RobotWrapper(model)`` fails (MemoryError) or crashes. The bench
probes that in a subprocess and, where it fails, says so and prints wholebody's figures
only; benchmarks/README.md says how to build TSID against the installed Pinocchio.

Run: python benchmarks/bench_control_loop.py [SECONDS] [--robot talos|g1]   (standing,
default 1.0 s; stepping is 2.8 s; ``--robot g1``: Unitree G1, 29 dof, 33 kg, its sole frames
added 3.5 cm under the ankle roll links, the left hand's SE3 pose; the same tasks, gains
and schedule for both libraries)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

import wholebody as wb  # noqa: E402
from wholebody.contacts import SurfaceContact  # noqa: E402
from wholebody.control import (  # noqa: E402
    AngularMomentumTask,
    ComTask,
    ContactForceTask,
    FrameTask,
    InverseDynamicsQP,
    MinimumJerk,
    PostureTask,
    WholeBodyController,
)
from wholebody.errors import ModelWarning  # noqa: E402
from wholebody.friction import ContactSet  # noqa: E402

DT = 1e-3
#: The robots: model name, sole frames (added to the model where ``sole_parents`` is given,
#: at ``sole_offset`` in the parent's axes, the sole's plane and centre), the SE3 task's
#: hand frame, the joints bent at the start, MuJoCo's and the planned sole half sizes [m].
ROBOTS = {
    "talos": {
        "model": "talos",
        "soles": ("left_sole_link", "right_sole_link"),
        "hand": "gripper_left_base_link",
        "bent": {
            f"leg_{s}_{j}_joint": x
            for s in ("left", "right")
            for j, x in (("3", -0.3), ("4", 0.6), ("5", -0.3))
        },
        "real": (0.10, 0.05),
        "planned": (0.075, 0.0375),
    },
    # Unitree G1 (29 dof, 33 kg): the sole plane 3.5 cm below the ankle roll link, its
    # centre 3.5 cm ahead (the URDF's four contact spheres: x -0.05..0.12, y +-0.03,
    # z -0.03, radius 5 mm).
    "g1": {
        "model": "g1",
        "soles": ("left_sole", "right_sole"),
        "sole_parents": ("left_ankle_roll_link", "right_ankle_roll_link"),
        "sole_offset": (0.035, 0.0, -0.035),
        "hand": "left_rubber_hand",
        "bent": {
            f"{s}_{j}_joint": x
            for s in ("left", "right")
            for j, x in (("hip_pitch", -0.3), ("knee", 0.6), ("ankle_pitch", -0.3))
        },
        "real": (0.085, 0.03),
        "planned": (0.065, 0.025),
    },
}
ROBOT = "talos"
SOLES = ROBOTS[ROBOT]["soles"]
HAND = ROBOTS[ROBOT]["hand"]


def configure(robot: str) -> None:
    """Run the loops on ``robot`` (a key of ROBOTS)."""
    global ROBOT, SOLES, HAND
    if robot not in ROBOTS:
        sys.exit(f"unknown robot {robot!r}; one of {sorted(ROBOTS)}")
    ROBOT, SOLES, HAND = robot, ROBOTS[robot]["soles"], ROBOTS[robot]["hand"]


FORCE_REG = 1e-6
RAMP = 0.05  # [s] contact force ramp before the right sole lifts
# Stepping schedule [s]: CoM over the left sole, lift, swing up and down, touch-down, back.
T_SHIFT, T_LIFT, T_UP, T_DOWN, T_TOUCH, T_END = 0.0, 1.1, 1.15, 1.45, 1.8, 2.8
STEP_HEIGHT = 0.03  # [m]


def setup():
    """The robot in MuJoCo, its state map, the initial state and the planned contacts."""
    from wholebody.sim.mujoco import MujocoStateMap, import_mujoco, mujoco_spec_for_robot

    mujoco = import_mujoco()
    spec = ROBOTS[ROBOT]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        robot = wb.load(spec["model"])
        for sole, parent in zip(SOLES, spec.get("sole_parents", ()), strict=False):
            robot.add_frame(sole, parent, pin.SE3(np.eye(3), np.array(spec["sole_offset"])))
        hl, hw = spec["real"]
        real = [SurfaceContact(f, half_length=hl, half_width=hw, mu=1.0) for f in SOLES]
        build = mujoco_spec_for_robot(
            robot, real, other_collisions=False, inertia="repair", timestep=DT
        )
    build.spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    m = build.compile()
    d = mujoco.MjData(m)
    robot = build.robot
    q0 = robot.q_from_named(spec["bent"])
    q0[2] = 5e-4 - min(robot.frame_position(q0, f)[2] for f in SOLES)
    smap = MujocoStateMap(robot, m)
    jid = {n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in robot.joint_names}
    d.qpos[:3], d.qpos[3:7] = q0[:3], [q0[6], *q0[3:6]]
    for n, value in robot.named(q0).items():
        d.qpos[m.jnt_qposadr[jid[n]]] = value
    dofs = np.array([m.jnt_dofadr[jid[n]] for n in robot.joint_names])
    hl, hw = spec["planned"]
    planned = [SurfaceContact(f, half_length=hl, half_width=hw, mu=0.7) for f in SOLES]
    return mujoco, m, d, robot, smap, dofs, q0, planned


class Plan:
    """The CoM and swing-sole references of the stepping scenario (None: standing)."""

    def __init__(self, robot, q0, stepping: bool):
        self.stepping = stepping
        self.c0 = robot.com(q0)
        left = robot.frame_position(q0, SOLES[0])
        target = np.array([left[0], left[1], self.c0[2]])
        self.shift = MinimumJerk(self.c0, target, 1.0, T_SHIFT)
        self.back = MinimumJerk(target, self.c0, 1.0, T_TOUCH + 0.05)
        self.sole0 = robot.frame_placement(q0, SOLES[1])
        self.lift = MinimumJerk(np.zeros(1), [STEP_HEIGHT], T_DOWN - T_UP, T_UP)
        self.lower = MinimumJerk([STEP_HEIGHT], np.zeros(1), T_TOUCH - 0.05 - T_DOWN, T_DOWN)

    def com(self, t):
        if not self.stepping:
            return self.c0, np.zeros(3), np.zeros(3)
        return self.back(t) if t >= T_TOUCH else self.shift(t)

    def sole(self, t):
        """Swing sole reference: placement, twist and acceleration (world-aligned)."""
        z, dz, ddz = self.lower(t) if t >= T_DOWN else self.lift(t)
        M = self.sole0.copy()
        M.translation = M.translation + [0.0, 0.0, z[0]]
        return M, np.r_[0.0, 0.0, dz[0], 0, 0, 0], np.r_[0.0, 0.0, ddz[0], 0, 0, 0]


@dataclass
class Stats:
    ticks: list = field(default_factory=list)
    phases: list = field(default_factory=list)  # "double" / "single" per tick
    com_err: list = field(default_factory=list)
    eom: float = 0.0
    cone: float = 0.0
    min_base_z: float = np.inf

    def median(self, phase=None) -> float:
        t = np.array(self.ticks)
        if phase is not None:
            t = t[np.array(self.phases) == phase]
        return 1e6 * float(np.median(t)) if t.size else float("nan")

    def com_rms_mm(self) -> float:
        return 1e3 * float(np.sqrt(np.mean(np.square(self.com_err))))


class Checker:
    """Independent checks at a tick's state: equations of motion and the sole cones."""

    def __init__(self, robot, planned):
        self.model = robot.model
        self.data = robot.model.createData()
        self.nv = robot.nv
        self.fid = {c.name: robot.frame_id(c.frame) for c in planned}
        self.cones = {c.name: ContactSet([c]) for c in planned}

    def __call__(self, stats, q, v, a, tau, wrenches_world):
        """``wrenches_world``: name -> wrench (6,) in world axes at the frame origin."""
        m, d = self.model, self.data
        M = pin.crba(m, d, q)
        M = np.triu(M) + np.triu(M, 1).T
        r = M @ a + pin.nonLinearEffects(m, d, q, v)
        r[6:] -= tau
        pin.computeJointJacobians(m, d, q)
        pin.updateFramePlacements(m, d)
        for name, w in wrenches_world.items():
            fid = self.fid[name]
            J = pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED)
            r -= J.T @ w
            G = self.cones[name].face_matrix(d.oMf[fid].rotation[None])
            stats.cone = max(stats.cone, float(np.max(G @ w)))
        stats.eom = max(stats.eom, float(np.max(np.abs(r))))


# --- wholebody ---------------------------------------------------------------------------


class Ours:
    name = "wholebody"

    def __init__(self, robot, planned, q0, plan):
        self.robot, self.planned, self.plan = robot, planned, plan
        ctrl = WholeBodyController(robot, dt=DT)
        for c in planned:
            ctrl.add_contact(c, kp=10.0, kd=6.0)
        self.com = ctrl.add_task(ComTask(kp=25.0, kd=10.0, weight=1.0))
        ctrl.add_task(AngularMomentumTask(kd=10.0, weight=1e-3))
        posture = ctrl.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-3))
        posture.set_reference(q0)
        ctrl.add_task(FrameTask(HAND, kp=100.0, kd=20.0, weight=1e-1))
        for c in planned:
            ctrl.add_task(ContactForceTask(c.name, weight=FORCE_REG))
        self.ctrl = ctrl
        self.swing: FrameTask | None = None
        self.sol = None

    def prepare(self, t):
        """References and contact events before the tick at ``t`` (not timed)."""
        ctrl, right = self.ctrl, self.planned[1]
        if self.plan.stepping:
            self.com.set_reference(*self.plan.com(t))
            if abs(t - T_LIFT) < DT / 2:
                ctrl.remove_contact(right.name, ramp=RAMP)
                self.swing = ctrl.add_task(FrameTask(right.frame, kp=100.0, kd=20.0, name="swing"))
            if self.swing is not None:
                self.swing.set_reference(*self.plan.sole(t))
            if abs(t - T_TOUCH) < DT / 2:
                ctrl.remove_task("swing")
                self.swing = None
                ctrl.add_contact(right, kp=10.0, kd=6.0, ramp=RAMP)

    def tick(self, q, v, t):
        self.ctrl.update(q, v, t)
        self.sol = self.ctrl.solve()
        return self.sol.torque

    def check(self, checker, stats, q, v):
        sol = self.sol
        checker(stats, q, v, sol.acceleration, sol.torque, sol.wrenches)


class OldQP:
    name = "InverseDynamicsQP"

    def __init__(self, robot, planned, q0, plan):
        self.robot, self.q0 = robot, q0
        self.qp = InverseDynamicsQP(robot, planned)
        self.c_ref = robot.com(q0)
        self.names = [c.name for c in planned]
        self.x = None

    def prepare(self, t):
        pass

    def tick(self, q, v, t):
        qp, robot = self.qp, self.robot
        cd = qp.update(q, v)
        hg, c = cd.centroidal_momentum, cd.com
        acc = 25.0 * (self.c_ref - c) - 10.0 * hg[:3] / robot.mass
        tasks = [
            qp.com_task(acc, weight=1.0),
            qp.angular_momentum_task(-10.0 * hg[3:], weight=1e-3),
            qp.posture_task(self.q0, kp=50.0, kd=14.0, weight=1e-3),
        ]
        self.x = qp.split(qp.solve(tasks))
        return self.x[2]

    def check(self, checker, stats, q, v):
        a, w, tau = self.x[0], self.x[1], self.x[2]
        w = np.asarray(w).reshape(len(self.names), 6)
        checker(stats, q, v, a, tau, dict(zip(self.names, w, strict=True)))


# --- TSID --------------------------------------------------------------------------------


def tsid_problem() -> str | None:
    """None when TSID's Python binding works with this Pinocchio, else why not (one line).

    Run in a subprocess: a binding built against another Pinocchio layout may crash.
    """
    try:
        import tsid  # noqa: F401
    except ImportError:
        return "tsid is not installed (pip install 'wholebody[bench]'; see benchmarks/README.md)"
    probe = (
        "import pinocchio as pin, tsid\n"
        "tsid.RobotWrapper(pin.buildSampleModelHumanoid(), tsid.FLOATING_BASE_SYSTEM, False)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    if run.returncode == 0:
        return None
    lines = [x for x in (run.stderr or "").splitlines() if x.strip() and "Warning" not in x]
    why = lines[-1] if lines else f"exit status {run.returncode}"
    return (
        f"tsid imports but tsid.RobotWrapper(model) fails ({why}): its binary was built "
        f"against another Pinocchio than {pin.__version__}; build it from source "
        "(benchmarks/README.md)"
    )


def tsid_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tsid")
    except PackageNotFoundError:
        return "?"


class Tsid:
    name = "TSID"

    def __init__(self, robot, planned, q0, plan):
        import tsid

        self.tsid, self.robot, self.planned, self.plan = tsid, robot, planned, plan
        model = robot.model
        self.wrapper = wrapper = tsid.RobotWrapper(model, tsid.FLOATING_BASE_SYSTEM, False)
        self.form = form = tsid.InverseDynamicsFormulationAccForce("tsid", wrapper, False)
        form.computeProblemData(0.0, q0, np.zeros(robot.nv))
        data = form.data()  # a copy of TSID's pinocchio.Data (the binding returns it by value)
        # TSID's Python objects must outlive the formulation that refers to them.
        self.keep: list = []
        self.contacts = {}
        for c in planned:
            contact = self._contact(c)
            contact.setReference(wrapper.framePosition(data, model.getFrameId(c.frame)))
            form.addRigidContact(contact, FORCE_REG)
        self.com = com = tsid.TaskComEquality("com", wrapper)
        com.setKp(25.0 * np.ones(3))
        com.setKd(10.0 * np.ones(3))
        form.addMotionTask(com, 1.0, 1, 0.0)
        self.com_sample = tsid.TrajectoryEuclidianConstant("com", plan.c0).computeNext()
        com.setReference(self.com_sample)
        am = tsid.TaskAMEquality("am", wrapper)
        am.setKp(np.zeros(3))
        am.setKd(10.0 * np.ones(3))
        form.addMotionTask(am, 1e-3, 1, 0.0)
        am_ref = tsid.TrajectorySample(3)
        am.setReference(am_ref)
        posture = tsid.TaskJointPosture("posture", wrapper)
        posture.setKp(50.0 * np.ones(robot.nv - 6))
        posture.setKd(14.0 * np.ones(robot.nv - 6))
        form.addMotionTask(posture, 1e-3, 1, 0.0)
        posture_ref = tsid.TrajectoryEuclidianConstant("posture", q0[7:]).computeNext()
        posture.setReference(posture_ref)
        hand = tsid.TaskSE3Equality("hand", wrapper, HAND)
        hand.setKp(100.0 * np.ones(6))
        hand.setKd(20.0 * np.ones(6))
        form.addMotionTask(hand, 1e-1, 1, 0.0)
        hand_ref = wrapper.framePosition(data, model.getFrameId(HAND))
        hand_sample = tsid.TrajectorySE3Constant("hand", hand_ref).computeNext()
        hand.setReference(hand_sample)
        bounds = tsid.TaskActuationBounds("torque", wrapper)
        lim = model.effortLimit[6:]
        bounds.setBounds(-lim, lim)
        form.addActuationTask(bounds, 1.0, 0, 0.0)
        self.swing = tsid.TaskSE3Equality("swing", wrapper, planned[1].frame)
        self.swing.setKp(100.0 * np.ones(6))
        self.swing.setKd(20.0 * np.ones(6))
        self.swing_sample = tsid.TrajectorySE3Constant("swing", plan.sole0).computeNext()
        self.keep += [am, am_ref, posture, posture_ref, hand, hand_sample, bounds]
        self.solver = tsid.SolverHQuadProgFast("qp")
        self.solver.resize(form.nVar, form.nEq, form.nIn)
        self.sol = None
        self.tau = None
        self.swing_on = False

    def _contact(self, c):
        hl, hw = c.half_length, c.half_width
        corners = np.array([[hl, hl, -hl, -hl], [hw, -hw, hw, -hw], [0.0, 0.0, 0.0, 0.0]])
        contact = self.tsid.Contact6d(
            c.name, self.wrapper, c.frame, corners, np.array([0.0, 0.0, 1.0]), c.mu, 0.0, 1e4
        )
        contact.setKp(10.0 * np.ones(6))
        contact.setKd(6.0 * np.ones(6))
        contact.setRegularizationTaskWeightVector(np.ones(6))  # wholebody's weights
        self.contacts[c.name] = contact
        self.keep.append(contact)
        return contact

    def prepare(self, t):
        if not self.plan.stepping:
            return
        form, right = self.form, self.planned[1]
        pos, vel, acc = self.plan.com(t)
        s = self.com_sample
        s.value(pos)
        s.derivative(vel)
        s.second_derivative(acc)
        self.com.setReference(s)
        if abs(t - T_LIFT) < DT / 2:
            form.removeRigidContact(right.name, RAMP)
            form.addMotionTask(self.swing, 1.0, 1, 0.0)
            self.swing_on = True
        if self.swing_on:
            M, tw, ac = self.plan.sole(t)
            # TSID's SE3 references: position as (p, R column-major), twist and acceleration
            # in world axes (the task converts them to the frame's axes).
            s = self.swing_sample
            s.value(np.r_[M.translation, M.rotation.reshape(-1, order="F")])
            s.derivative(tw)
            s.second_derivative(ac)
            self.swing.setReference(s)
        if abs(t - T_TOUCH) < DT / 2:
            form.removeTask("swing", 0.0)
            self.swing_on = False
            contact = self.contacts[right.name]
            contact.setReference(
                self.wrapper.framePosition(form.data(), self.robot.frame_id(right.frame))
            )
            form.addRigidContact(contact, FORCE_REG)

    def tick(self, q, v, t):
        problem = self.form.computeProblemData(t, q, v)
        self.sol = self.solver.solve(problem)
        self.tau = self.form.getActuatorForces(self.sol)
        return self.tau

    def check(self, checker, stats, q, v):
        form, sol = self.form, self.sol
        a = form.getAccelerations(sol)
        wrenches = {}
        d = checker.data
        pin.framesForwardKinematics(checker.model, d, q)
        for name, contact in self.contacts.items():
            if not form.checkContact(name, sol):
                continue
            f = form.getContactForce(name, sol)
            local = contact.getForceGeneratorMatrix @ f  # sole axes, at its origin
            R = d.oMf[checker.fid[name]].rotation
            wrenches[name] = np.r_[R @ local[:3], R @ local[3:]]
        checker(stats, q, v, a, self.tau, wrenches)


# --- the loop ----------------------------------------------------------------------------


def loop(seconds: float, kind, stepping: bool = False) -> Stats:
    """One closed loop of controller class ``kind``; its tick times and checks."""
    mujoco, m, d, robot, smap, dofs, q0, planned = setup()
    plan = Plan(robot, q0, stepping)
    ctrl = kind(robot, planned, q0, plan)
    checker = Checker(robot, planned)
    stats = Stats()
    clock = time.thread_time
    for k in range(int(round(seconds / DT))):
        t = k * DT
        q, v = smap.q(d.qpos), smap.v(d.qpos, d.qvel)
        ctrl.prepare(t)
        t0 = clock()
        tau = ctrl.tick(q, v, t)
        stats.ticks.append(clock() - t0)
        single = stepping and T_LIFT + RAMP + DT < t < T_TOUCH  # one contact in both QPs
        stats.phases.append("single" if single else "double")
        ctrl.check(checker, stats, q, v)
        stats.com_err.append(np.linalg.norm(plan.com(t)[0] - robot.com(q)))
        stats.min_base_z = min(stats.min_base_z, float(q[2]))
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[dofs] = tau
        mujoco.mj_step(m, d)
    return stats


def describe(s: Stats) -> str:
    return (
        f"CoM error RMS {s.com_rms_mm():.2f} mm, EoM residual <= {s.eom:.1e}, "
        f"cone rows <= {s.cone:.1e} N, lowest base {s.min_base_z:.3f} m"
    )


def main(seconds: float = 1.0) -> None:
    print(
        f"bench_control_loop: {ROBOT} in MuJoCo at 1 kHz; pinocchio {pin.__version__}, numpy "
        f"{np.__version__}; tick = thread CPU time, median over the loop"
    )
    try:
        ours = loop(seconds, Ours)
    except wb.MissingDependencyError as exc:
        print(f"skipped ({exc})")
        return
    problem = tsid_problem()
    theirs = loop(seconds, Tsid) if problem is None else None
    old = loop(seconds, OldQP)
    print(f"\nstanding, {seconds:g} s (CoM, momentum, posture, hand SE3, 2 x force reg., torque")
    print("limits, 2 soles)")
    print(f"  wholebody WholeBodyController  {ours.median():6.0f} us per tick; {describe(ours)}")
    if theirs is not None:
        print(
            f"  TSID {tsid_version()} (HQuadProgFast)    {theirs.median():6.0f} us per tick; "
            f"{describe(theirs)}"
        )
    print(
        f"  wholebody InverseDynamicsQP    {old.median():6.0f} us per tick (CoM, momentum, "
        f"posture, torque limits); {describe(old)}"
    )
    if theirs is None:
        print(f"  TSID: {problem}; no ratio")
        return
    print(f"  ratio wholebody / TSID: {ours.median() / theirs.median():.2f}x")
    step_ours = loop(T_END, Ours, stepping=True)
    step_theirs = loop(T_END, Tsid, stepping=True)
    print(
        f"\nstepping, {T_END:g} s (CoM over the left sole, right contact removed with a "
        f"{1e3 * RAMP:g} ms ramp, a 3 cm step under an SE3 task, contact added back)"
    )
    for label, s in (("wholebody", step_ours), ("TSID     ", step_theirs)):
        print(
            f"  {label} double support {s.median('double'):6.0f} us, single support "
            f"{s.median('single'):6.0f} us per tick; {describe(s)}"
        )
    for phase in ("double", "single"):
        ratio = step_ours.median(phase) / step_theirs.median(phase)
        print(f"  ratio wholebody / TSID, {phase} support: {ratio:.2f}x")


def parse_args(argv: list[str]) -> list[str]:
    """``--robot NAME`` (configures the loops) taken out of ``argv``; the rest returned."""
    rest, it = [], iter(argv)
    for a in it:
        if a == "--robot":
            configure(next(it, ""))
        elif a.startswith("--robot="):
            configure(a.split("=", 1)[1])
        else:
            rest.append(a)
    return rest


if __name__ == "__main__":
    args = parse_args(sys.argv[1:])
    main(float(args[0]) if args else 1.0)
