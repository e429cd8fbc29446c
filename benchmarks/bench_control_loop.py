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

Where the two libraries' parameters do not mean the same:

* TSID's angular-momentum task reads only ``Kp``, its gain on the momentum error
  (``dL_des = -Kp (L - L_ref)``): our ``AngularMomentumTask(kd=10)`` is its ``Kp = 10``
  (its ``Kd`` is unused); its drift ``dA_G/dt v`` is a finite difference over 1 ms;
* TSID's SE3 and contact tasks take their errors and gains in the frame's own axes, ours in
  world-aligned axes: the same law for the per-axis-equal gains used here;
* the force regularisation weighs TSID's 12 corner forces per sole, ours the sole's 6D
  wrench (world axes at its centre): the same weight, not the same cost;
* (extended set) TSID's joint-bounds task brakes about twice as hard as ours at the same
  state.

TSID's solver status is read at every tick: a status other than optimal stops its loop and
is reported (as ours stops on a ``SolverError``), never applied as torques.

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

TSID's PyPI wheels (1.10.0) were built against an earlier Pinocchio binary layout: with
pinocchio 4.1.0 ``tsid.RobotWrapper(model)`` fails (MemoryError) or crashes. The bench
probes that in a subprocess and, where it fails, says so and prints wholebody's figures
only; benchmarks/README.md says how to build TSID against the installed Pinocchio.

``--tasks extended`` adds, for both libraries with the same weights, gains and limits: joint
position, velocity and acceleration bounds as a constraint (a_max = 30 rad/s^2, the model's
position and velocity limits; wholebody's ``JointBounds`` with a 0.02 rad viability
margin; TSID's ``TaskJointPosVelAccBounds`` at priority 0, its position bounds moved
inwards by the margin), two right-arm joints' ranges tightened to the start
+- 0.03 rad, the right hand's SE3 task reaching 10 cm forward and up and back (period 1 s:
the tightened joints' bounds become active) and the head's orientation (an SE3 task masked
to its three angular axes; TSID 1.10 has no linear-momentum task). Every joint starts at
least 0.1 rad inside its range. With hard joint bounds a loop may find no solution (a
stance ankle nearing its limit against the contact) or fall: it stops there and says so.
``--bounds soft`` makes wholebody's joint bounds soft (priority 1, a slack costing
``SOFT_WEIGHT`` per rad/s^2 of violation: met exactly whenever they can be at that cost);
TSID's stay hard (its bounds task has no soft form).
The loops also print the largest joint position limit
violation of the simulated ``q`` and, for wholebody, the ticks with a joint acceleration
bound active.

``--hierarchy`` runs wholebody alone, the default tasks in one level and in three strict
priority levels (:class:`Levels`), and prints the three-level tick against the one-level
tick per phase (issue 38's bar: at most 2x).

Run: python benchmarks/bench_control_loop.py [SECONDS] [--robot talos|g1]
[--tasks default|extended] [--bounds hard|soft] [--hierarchy]   (standing,
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
    JointBounds,
    MinimumJerk,
    PostureTask,
    WholeBodyController,
)
from wholebody.errors import ModelWarning, SolverError  # noqa: E402
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
        "right_hand": "gripper_right_base_link",
        "head": "head_2_link",
        "tight": ("arm_right_1_joint", "arm_right_4_joint"),
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
        "right_hand": "right_rubber_hand",
        "head": "head_link",
        "tight": ("right_shoulder_pitch_joint", "right_elbow_joint"),
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
#: "default" (the task set above) or "extended" (see EXTENDED).
TASKS = "default"
#: The extended set's joint bounds for wholebody: "hard" or "soft" (see the notes).
BOUNDS = "hard"
SOFT_WEIGHT = 1e3
EXTENDED = """joint position, velocity and acceleration bounds (a constraint; two right-arm joints'
ranges tightened to the start +- 0.03 rad), the right hand's SE3 pose reaching out and back
(10 cm forward and up, period 1 s), the head's orientation (a masked SE3 task)"""


def configure(robot: str) -> None:
    """Run the loops on ``robot`` (a key of ROBOTS)."""
    global ROBOT, SOLES, HAND
    if robot not in ROBOTS:
        sys.exit(f"unknown robot {robot!r}; one of {sorted(ROBOTS)}")
    ROBOT, SOLES, HAND = robot, ROBOTS[robot]["soles"], ROBOTS[robot]["hand"]


def configure_bounds(bounds: str) -> None:
    """wholebody's joint bounds in the extended set: "hard" or "soft"."""
    global BOUNDS
    if bounds not in ("hard", "soft"):
        sys.exit(f"unknown bounds {bounds!r}; one of ['hard', 'soft']")
    BOUNDS = bounds


def configure_tasks(tasks: str) -> None:
    """Run the loops with the task set ``tasks`` ("default" or "extended")."""
    global TASKS
    if tasks not in ("default", "extended"):
        sys.exit(f"unknown task set {tasks!r}; one of ['default', 'extended']")
    TASKS = tasks


# The extended task set's joint bounds: acceleration limit [rad/s^2], viability margin [rad]
# (ours a parameter; TSID's position bounds moved inwards by it), the start's distance to
# each limit [rad] and the tightened joints' half range [rad].
ACC_LIMIT, MARGIN, INSIDE, TIGHT = 30.0, 0.02, 0.1, 0.03
REACH, REACH_PERIOD = np.array([0.10, 0.0, 0.10]), 1.0  # [m], [s]
HEAD_MASK = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])  # orientation only


class JointLimits:
    """The extended task set's joint limits (one-dof joints after the free flyer, v order):
    position bounds (the model's, the tightened joints' at the start +- TIGHT), velocity
    limits (the model's), as written for both libraries (before the margin)."""

    def __init__(self, robot, q0):
        model = robot.model
        nu = robot.nv - 6
        self.lower, self.upper = np.full(nu, -np.inf), np.full(nu, np.inf)
        self.velocity = np.asarray(model.velocityLimit[6:], float).copy()
        for j in range(2, model.njoints):
            joint = model.joints[j]
            if joint.nq == 1 and joint.nv == 1:
                i, iq = joint.idx_v - 6, joint.idx_q
                self.lower[i] = model.lowerPositionLimit[iq]
                self.upper[i] = model.upperPositionLimit[iq]
                if model.names[j] in ROBOTS[ROBOT]["tight"]:
                    self.lower[i] = q0[iq] - TIGHT
                    self.upper[i] = q0[iq] + TIGHT
        self.qi = np.array([model.joints[model.getJointId(n)].idx_q for n in robot.joint_names])

    def violation(self, q) -> float:
        """The largest position limit violation at ``q`` [rad] (<= 0: within them)."""
        x = q[self.qi]
        return float(np.max(np.maximum(x - self.upper, self.lower - x)))


FORCE_REG = 1e-6
#: The tick at most this many times TSID's in every phase, default task set (issue 34).
BAR = 1.2
#: A three-level hierarchy's tick at most this many times the one-level tick (issue 38).
HIERARCHY_BAR = 2.0
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
    if TASKS == "extended":  # every joint at least INSIDE from its limits (the viable set)
        lo, hi = robot.model.lowerPositionLimit[7:], robot.model.upperPositionLimit[7:]
        q0[7:] = np.clip(q0[7:], lo + INSIDE, hi - INSIDE)
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
        self.sole0 = robot.placements(q0, SOLES[1]).se3()
        self.lift = MinimumJerk(np.zeros(1), [STEP_HEIGHT], T_DOWN - T_UP, T_UP)
        self.lower = MinimumJerk([STEP_HEIGHT], np.zeros(1), T_TOUCH - 0.05 - T_DOWN, T_DOWN)

        self.hand0 = robot.placements(q0, ROBOTS[ROBOT]["right_hand"]).se3()

    def reach(self, t):
        """The right hand's reference: out by REACH and back, ``(1 - cos(2 pi t / T)) / 2``
        (placement, world-aligned twist and acceleration)."""
        w = 2 * np.pi / REACH_PERIOD
        M = self.hand0.copy()
        M.translation = M.translation + REACH * (1 - np.cos(w * t)) / 2
        vel = REACH * w * np.sin(w * t) / 2
        acc = REACH * w * w * np.cos(w * t) / 2
        return M, np.r_[vel, 0, 0, 0], np.r_[acc, 0, 0, 0]

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
    limit: float = -np.inf  # largest joint position limit violation [rad]
    bound_active: int = 0  # ticks with a joint acceleration bound active (wholebody)
    slack: float = 0.0  # the largest acceleration bound violation (soft bounds) [rad/s^2]
    slack_ticks: int = 0  # ticks with one
    fell: float | None = None  # [s] when the base fell below half its start height
    failed: str | None = None  # the controller's error that stopped the loop

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
    #: The priority levels of the CoM, of the hand, swing sole and angular momentum, and of
    #: the posture and force regularisation (one level: all 1).
    LEVELS = (1, 1, 1)

    def __init__(self, robot, planned, q0, plan):
        self.robot, self.planned, self.plan = robot, planned, plan
        ctrl = WholeBodyController(robot, dt=DT)
        for c in planned:
            ctrl.add_contact(c, kp=10.0, kd=6.0)
        first, second, third = self.LEVELS
        self.com = ctrl.add_task(ComTask(kp=25.0, kd=10.0, weight=1.0), priority=first)
        ctrl.add_task(AngularMomentumTask(kd=10.0, weight=1e-3), priority=second)
        posture = ctrl.add_task(PostureTask(kp=50.0, kd=14.0, weight=1e-3), priority=third)
        posture.set_reference(q0)
        ctrl.add_task(FrameTask(HAND, kp=100.0, kd=20.0, weight=1e-1), priority=second)
        for c in planned:
            ctrl.add_task(ContactForceTask(c.name, weight=FORCE_REG), priority=third)
        self.ctrl = ctrl
        self.swing: FrameTask | None = None
        self.sol = None
        self.reach: FrameTask | None = None
        self.bounds: JointBounds | None = None
        if TASKS == "extended":
            spec, lim = ROBOTS[ROBOT], JointLimits(robot, q0)
            self.bounds = ctrl.add_constraint(
                JointBounds(
                    robot,
                    dt=DT,
                    acceleration_limit=ACC_LIMIT,
                    position_lower=lim.lower,
                    position_upper=lim.upper,
                    velocity_limit=lim.velocity,
                    margin=MARGIN,
                ),
                priority=0 if BOUNDS == "hard" else 1,
                weight=SOFT_WEIGHT,
            )
            self.reach = ctrl.add_task(
                FrameTask(spec["right_hand"], kp=100.0, kd=20.0, weight=1e-1)
            )
            ctrl.add_task(
                FrameTask(spec["head"], kp=50.0, kd=14.0, weight=1e-2, mask=HEAD_MASK > 0)
            )

    def prepare(self, t):
        """References and contact events before the tick at ``t`` (not timed)."""
        ctrl, right = self.ctrl, self.planned[1]
        if self.reach is not None:
            self.reach.set_reference(*self.plan.reach(t))
        if self.plan.stepping:
            self.com.set_reference(*self.plan.com(t))
            if abs(t - T_LIFT) < DT / 2:
                ctrl.remove_contact(right.name, ramp=RAMP)
                swing = FrameTask(right.frame, kp=100.0, kd=20.0, name="swing")
                self.swing = ctrl.add_task(swing, priority=self.LEVELS[1])
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
        if self.bounds is not None:
            a, b = sol.acceleration[6:], self.bounds
            tol = 1e-9 * np.maximum(1.0, np.abs(a))
            if np.any((a - b.lower <= tol) | (b.upper - a <= tol)):
                stats.bound_active += 1
            slack = float(sol.slacks.get("joint_bounds", np.zeros(1)).max())
            if slack > 1e-9:
                stats.slack, stats.slack_ticks = max(stats.slack, slack), stats.slack_ticks + 1


class Levels(Ours):
    """The same tasks in three strict priority levels: the CoM; the hand, the swing sole and
    the angular momentum; the posture and the force regularisation."""

    name = "wholebody, three levels"
    LEVELS = (1, 2, 3)


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


#: TSID's solver statuses other than optimal (0): its HQPStatus.
TSID_STATUS = {-1: "unknown", 1: "infeasible", 2: "unbounded", 3: "iteration limit", 4: "error"}


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
        # TSID's angular-momentum task reads only Kp, its gain on the momentum error
        # (dL_des = -Kp (L - L_ref)): the same law as our AngularMomentumTask's kd.
        am.setKp(10.0 * np.ones(3))
        am.setKd(np.zeros(3))
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
        self.reach = None
        if TASKS == "extended":
            spec, lim = ROBOTS[ROBOT], JointLimits(robot, q0)
            joints = tsid.TaskJointPosVelAccBounds("joint_bounds", wrapper, DT, False)
            # TSID has no margin: its position bounds moved inwards by ours.
            joints.setPositionBounds(lim.lower + MARGIN, lim.upper - MARGIN)
            joints.setVelocityBounds(lim.velocity)
            joints.setAccelerationBounds(ACC_LIMIT * np.ones(robot.nv - 6))
            joints.setImposeBounds(True, True, True, True)
            form.addMotionTask(joints, 1.0, 0, 0.0)
            self.reach = tsid.TaskSE3Equality("reach", wrapper, spec["right_hand"])
            self.reach.setKp(100.0 * np.ones(6))
            self.reach.setKd(20.0 * np.ones(6))
            form.addMotionTask(self.reach, 1e-1, 1, 0.0)
            self.reach_sample = tsid.TrajectorySE3Constant("reach", plan.hand0).computeNext()
            head = tsid.TaskSE3Equality("head", wrapper, spec["head"])
            head.setKp(50.0 * np.ones(6))
            head.setKd(14.0 * np.ones(6))
            head.setMask(HEAD_MASK)
            form.addMotionTask(head, 1e-2, 1, 0.0)
            head_ref = wrapper.framePosition(data, model.getFrameId(spec["head"]))
            head_sample = tsid.TrajectorySE3Constant("head", head_ref).computeNext()
            head.setReference(head_sample)
            self.keep += [joints, self.reach, head, head_sample]
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

    @staticmethod
    def _set_se3(task, sample, M, twist, acc):
        """TSID's SE3 references: position as (p, R column-major), twist and acceleration in
        world axes (the task converts them to the frame's axes)."""
        sample.value(np.r_[M.translation, M.rotation.reshape(-1, order="F")])
        sample.derivative(twist)
        sample.second_derivative(acc)
        task.setReference(sample)

    def prepare(self, t):
        if self.reach is not None:
            self._set_se3(self.reach, self.reach_sample, *self.plan.reach(t))
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
            self._set_se3(self.swing, self.swing_sample, *self.plan.sole(t))
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
        if self.sol.status != 0:  # TSID's HQP_STATUS_OPTIMAL: its torques are not an answer
            status = TSID_STATUS.get(self.sol.status, "unknown")
            raise SolverError(f"TSID's solver status {self.sol.status}; {status}")
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
    limits = JointLimits(robot, q0) if TASKS == "extended" else None
    stats = Stats()
    clock = time.thread_time
    for k in range(int(round(seconds / DT))):
        t = k * DT
        q, v = smap.q(d.qpos), smap.v(d.qpos, d.qvel)
        if not (q[2] > q0[2] / 2):  # fallen (or the simulation diverged): stop, say when
            stats.fell = t
            break
        ctrl.prepare(t)
        t0 = clock()
        try:
            tau = ctrl.tick(q, v, t)
        except SolverError as exc:  # no solution (ours) or a solver status not optimal (TSID's)
            stats.failed = f"at t = {t:.3f} s: {str(exc).split(';')[-1].strip()}"
            break
        stats.ticks.append(clock() - t0)
        single = stepping and T_LIFT + RAMP + DT < t < T_TOUCH  # one contact in both QPs
        stats.phases.append("single" if single else "double")
        ctrl.check(checker, stats, q, v)
        stats.com_err.append(np.linalg.norm(plan.com(t)[0] - robot.com(q)))
        stats.min_base_z = min(stats.min_base_z, float(q[2]))
        if limits is not None:
            stats.limit = max(stats.limit, limits.violation(q))
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[dofs] = tau
        mujoco.mj_step(m, d)
    return stats


def describe(s: Stats) -> str:
    out = (
        f"CoM error RMS {s.com_rms_mm():.2f} mm, EoM residual <= {s.eom:.1e}, "
        f"cone rows <= {s.cone:.1e} N, lowest base {s.min_base_z:.3f} m"
    )
    if s.failed is not None:
        out += f", NO SOLUTION {s.failed} (its figures up to then, that tick not timed)"
    if s.fell is not None:
        out += f", FELL at t = {s.fell:.3f} s (its figures up to then)"
    if TASKS == "extended":
        out += f", joint limits exceeded by <= {s.limit:.1e} rad"
        if s.bound_active:
            out += f", a joint bound active in {s.bound_active} of {len(s.ticks)} ticks"
        if s.slack_ticks:
            out += f", soft bounds broken in {s.slack_ticks} ticks by <= {s.slack:.2g} rad/s^2"
    return out


def main(seconds: float = 1.0) -> None:
    print(
        f"bench_control_loop: {ROBOT} in MuJoCo at 1 kHz; pinocchio {pin.__version__}, numpy "
        f"{np.__version__}; tick = thread CPU time, median over the loop"
    )
    try:
        ours = loop(seconds, Ours)
    except wb.errors.MissingDependencyError as exc:
        print(f"skipped ({exc})")
        return
    problem = tsid_problem()
    theirs = loop(seconds, Tsid) if problem is None else None
    print(f"\nstanding, {seconds:g} s (CoM, momentum, posture, hand SE3, 2 x force reg., torque")
    print("limits, 2 soles)")
    if TASKS == "extended":
        print(f"and the extended task set: {EXTENDED}; wholebody's joint bounds {BOUNDS}")
    print(f"  wholebody WholeBodyController  {ours.median():6.0f} us per tick; {describe(ours)}")
    if theirs is not None:
        print(
            f"  TSID {tsid_version()} (HQuadProgFast)    {theirs.median():6.0f} us per tick; "
            f"{describe(theirs)}"
        )
    if theirs is None:
        print(f"  TSID: {problem}; no ratio")
        return
    print(f"  ratio wholebody / TSID: {verdict(ours.median() / theirs.median())}")
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
        print(f"  ratio wholebody / TSID, {phase} support: {verdict(ratio)}")


def hierarchy(seconds: float) -> None:
    """The one-level tick against the three-level one (:class:`Levels`), per phase."""
    print(
        f"bench_control_loop --hierarchy: {ROBOT} in MuJoCo at 1 kHz; the default tasks in one "
        "level and in three (CoM | hand, swing sole, angular momentum | posture, force "
        "regularisation); tick = thread CPU time, median over the loop"
    )
    runs = {
        kind: (loop(seconds, kind), loop(T_END, kind, stepping=True)) for kind in (Ours, Levels)
    }
    for kind, (stand, step) in runs.items():
        print(
            f"  {kind.name:24s} standing {stand.median():5.0f} us, double support "
            f"{step.median('double'):5.0f} us, single support {step.median('single'):5.0f} us; "
            f"{describe(step)}"
        )
    (one, one_step), (three, three_step) = runs.values()
    ratios = [three.median() / one.median()] + [
        three_step.median(p) / one_step.median(p) for p in ("double", "single")
    ]
    for phase, r in zip(("standing", "double support", "single support"), ratios, strict=True):
        met = "met" if r <= HIERARCHY_BAR else "NOT met"
        print(f"  three levels / one level, {phase}: {r:.2f}x (bar {HIERARCHY_BAR}x: {met})")


def verdict(ratio: float) -> str:
    """The ratio and whether it meets issue 34's bar (the default task set)."""
    if TASKS != "default":
        return f"{ratio:.2f}x"
    return f"{ratio:.2f}x (bar {BAR}x: {'met' if ratio <= BAR else 'NOT met'})"


def parse_args(argv: list[str]) -> list[str]:
    """``--robot NAME``, ``--tasks default|extended`` and ``--bounds hard|soft`` (configure
    the loops) taken out of ``argv``; the rest returned."""
    rest, it = [], iter(argv)
    for a in it:
        if a == "--robot":
            configure(next(it, ""))
        elif a.startswith("--robot="):
            configure(a.split("=", 1)[1])
        elif a == "--bounds":
            configure_bounds(next(it, ""))
        elif a.startswith("--bounds="):
            configure_bounds(a.split("=", 1)[1])
        elif a == "--tasks":
            configure_tasks(next(it, ""))
        elif a.startswith("--tasks="):
            configure_tasks(a.split("=", 1)[1])
        else:
            rest.append(a)
    return rest


if __name__ == "__main__":
    args = parse_args(sys.argv[1:])
    if "--hierarchy" in args:
        args.remove("--hierarchy")
        hierarchy(float(args[0]) if args else 1.0)
    else:
        main(float(args[0]) if args else 1.0)
