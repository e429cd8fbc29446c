"""One robot, one motion, every installed simulator: a table of residuals and verdicts.

The shipped humanoid, with four collision spheres under each foot (a contact every engine
models the same way) and an explicit ``<inertial>`` on every link (PyBullet gives a link
without one 1 kg), stands on a floor while a joint PD sways its hips. Each installed
engine simulates it and its recorder logs it (``docs/simulators.md``); ``check_trajectory``
checks every log against the same robot. Each engine balances to its own floor: round-off
for float64 engines (MuJoCo, PyBullet once its link damping is off, Drake SAP, MJX with
x64, Genesis with ``precision="64"``), float32 precision for MJX, MuJoCo Warp and Newton.

    python examples/cross_engine.py            # every installed engine
    WHOLEBODY_ENGINES=mujoco,drake python examples/cross_engine.py

Engines: ``mujoco``, ``pybullet``, ``drake``, ``mjx`` (float32), ``mjx64`` (float64),
``mujoco-warp`` (float32), ``newton`` (SolverMuJoCo, float32 state) and ``genesis``
(float64), each run when its package is installed and imports (``pip install -e
'.[engines]'`` in a clone; Genesis: ``'.[genesis]'``, which brings torch). An engine that is
not installed, does not import (Genesis without torch) or raises is a row of the table
saying why; the table is always printed. Exit code 1 only when an engine that ran is not
consistent at its floor.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import tempfile
import time
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import numpy as np

import wholebody as wb
from wholebody.check import CheckOptions
from wholebody.check.analysis import check_trajectory
from wholebody.contacts import SurfaceContact
from wholebody.trajectory import Trajectory

DT = 1e-3
DURATION = 0.3  # [s]
KP, KD = 300.0, 3.0  # joint PD [N m/rad], [N m s/rad]
#: Each engine's floor on this robot (median residual [N]) and what sets it.
FLOORS = {
    "mujoco": (1e-9, "round-off (solver tolerance 1e-12)"),
    "pybullet": (1e-9, "round-off (link damping set to 0 by the recorder)"),
    "drake": (1e-9, "round-off (SAP)"),
    "mjx": (5e-4, "float32 precision"),
    "mjx64": (1e-9, "round-off (x64, tolerance 1e-12)"),
    "mujoco-warp": (5e-4, "float32 precision"),
    "newton": (5e-4, "float32 precision (Newton's state)"),
    "genesis": (1e-9, "round-off (precision='64')"),
}


def sphere_feet_urdf(directory: Path) -> Path:
    """The shipped humanoid with four spheres under each foot, every link with <inertial>."""
    root = ET.parse(wb.load("humanoid").source).getroot()
    for link in root.iter("link"):
        for col in link.findall("collision"):
            link.remove(col)
        if link.get("name") in ("left_foot", "right_foot"):
            for x in (0.14, -0.08):
                for y in (0.045, -0.045):
                    col = ET.SubElement(link, "collision")
                    ET.SubElement(col, "origin", xyz=f"{x} {y} -0.06", rpy="0 0 0")
                    ET.SubElement(ET.SubElement(col, "geometry"), "sphere", radius="0.01")
        if link.find("inertial") is None:
            inertial = ET.SubElement(link, "inertial")
            ET.SubElement(inertial, "mass", value="0")
            ET.SubElement(inertial, "inertia", ixx="0", iyy="0", izz="0", ixy="0", ixz="0", iyz="0")
    path = directory / "humanoid_sphere_feet.urdf"
    ET.ElementTree(root).write(path)
    return path


def soles() -> list[SurfaceContact]:
    return [
        SurfaceContact(f, half_length=0.12, half_width=0.05, mu=1.0)
        for f in ("left_sole", "right_sole")
    ]


def initial_q(robot: wb.Robot, contacts: list[SurfaceContact]) -> np.ndarray:
    """Neutral joints, the spheres 0.1 mm above the floor."""
    q0 = robot.neutral()
    q0[2] = 1e-4 - min(robot.frame_position(q0, c.frame)[2] for c in contacts)
    return q0


def targets(robot: wb.Robot, t: float) -> np.ndarray:
    """The motion: the hips sway (roll) and the waist turns, the same in every engine."""
    target = np.zeros(len(robot.joint_names))
    for i, name in enumerate(robot.joint_names):
        if name.endswith("hip_roll"):
            target[i] = 0.05 * np.sin(2 * np.pi * 2.0 * t)
        elif name == "waist_yaw":
            target[i] = 0.2 * np.sin(2 * np.pi * 1.5 * t)
    return target


def run_mujoco(robot, path, contacts) -> tuple[Trajectory, wb.Robot]:
    import mujoco

    from wholebody.sim.mujoco import MujocoStateMap, mujoco_spec_for_robot
    from wholebody.sim.mujoco_recorder import MujocoRecorder

    build = mujoco_spec_for_robot(robot, contacts, contact_geoms=False, timestep=DT)
    m = build.compile()
    d = mujoco.MjData(m)
    smap = MujocoStateMap(robot, m)
    smap.qpos(initial_q(robot, contacts), out=d.qpos)
    jq, jv = smap.joint_qpos_indices, smap.joint_dof_indices
    rec = MujocoRecorder.from_build(build, m)
    for _ in range(int(DURATION / DT)):
        d.qfrc_applied[jv] = KP * (targets(robot, d.time) - d.qpos[jq]) - KD * d.qvel[jv]
        rec.record(d)  # runs mj_forward, then reads
        mujoco.mj_step(m, d)
    return rec.trajectory(), build.robot


def run_pybullet(robot, path, contacts) -> tuple[Trajectory, wb.Robot]:
    import pybullet as p

    from wholebody.sim.pybullet import PybulletRecorder

    client = p.connect(p.DIRECT)
    p.setGravity(0, 0, -9.81, physicsClientId=client)
    p.setTimeStep(DT, physicsClientId=client)
    plane = p.createCollisionShape(p.GEOM_PLANE, physicsClientId=client)
    p.createMultiBody(0, plane, physicsClientId=client)
    q0 = initial_q(robot, contacts)
    body = p.loadURDF(
        str(path), q0[:3], q0[3:7], flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client
    )
    rec = PybulletRecorder(robot, body, contacts, client=client)
    joints = [  # PyBullet joint indices in the robot's joint order, by name
        {
            p.getJointInfo(body, j, physicsClientId=client)[1].decode(): j
            for j in range(p.getNumJoints(body, physicsClientId=client))
        }[name]
        for name in robot.joint_names
    ]
    # Joint motors off (they would hold the joints with a hidden velocity controller).
    p.setJointMotorControlArray(
        body, joints, p.VELOCITY_CONTROL, forces=[0.0] * len(joints), physicsClientId=client
    )
    for n in range(int(DURATION / DT)):
        st = p.getJointStates(body, joints, physicsClientId=client)
        qj, vj = np.array([s[0] for s in st]), np.array([s[1] for s in st])
        tau = KP * (targets(robot, n * DT) - qj) - KD * vj
        p.setJointMotorControlArray(
            body, joints, p.TORQUE_CONTROL, forces=list(tau), physicsClientId=client
        )
        p.stepSimulation(physicsClientId=client)
        rec.record()  # after the step: the state before it, its forces
    p.disconnect(client)
    return rec.trajectory(), rec.robot


def run_drake(robot, path, contacts) -> tuple[Trajectory, wb.Robot]:
    from pydrake.geometry import HalfSpace
    from pydrake.math import RigidTransform
    from pydrake.multibody.parsing import Parser
    from pydrake.multibody.plant import AddMultibodyPlant, CoulombFriction, MultibodyPlantConfig
    from pydrake.systems.analysis import Simulator
    from pydrake.systems.framework import DiagramBuilder

    from wholebody.sim.drake import DrakeRecorder

    builder = DiagramBuilder()
    config = MultibodyPlantConfig(
        time_step=DT, discrete_contact_approximation="sap", contact_model="point"
    )
    plant, _ = AddMultibodyPlant(config, builder)
    Parser(plant).AddModels(str(path))
    plant.RegisterCollisionGeometry(
        plant.world_body(), RigidTransform(), HalfSpace(), "ground", CoulombFriction(1.0, 1.0)
    )
    plant.Finalize()
    simulator = Simulator(builder.Build())
    ctx = plant.GetMyMutableContextFromRoot(simulator.get_mutable_context())
    q0 = initial_q(robot, contacts)
    plant.SetFreeBodyPose(ctx, plant.GetBodyByName("pelvis"), RigidTransform(q0[:3]))
    rec = DrakeRecorder(robot, plant, contacts, ctx)
    joints = [plant.GetJointByName(name) for name in robot.joint_names]
    for n in range(1, int(DURATION / DT) + 1):
        q, v = plant.GetPositions(ctx), plant.GetVelocities(ctx)
        tau = np.zeros(plant.num_velocities())
        target = targets(robot, (n - 1) * DT)
        for j, joint in enumerate(joints):
            i, k = joint.position_start(), joint.velocity_start()
            tau[k] = KP * (target[j] - q[i]) - KD * v[k]
        plant.get_applied_generalized_force_input_port().FixValue(ctx, tau)
        simulator.AdvanceTo(n * DT)
        rec.record(ctx)  # after the step: its contact results and accelerations
    return rec.trajectory(), robot


def _x64(jax):
    """jax's float64 context (``jax.enable_x64(True)``; older jax: jax.experimental)."""
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    from jax.experimental import enable_x64

    return enable_x64()


def run_mjx(robot, path, contacts, x64: bool = False) -> tuple[Trajectory, wb.Robot]:
    import contextlib

    import jax
    import jax.numpy as jnp
    import mujoco
    from mujoco import mjx

    from wholebody.sim.mjx import MjxRecorder
    from wholebody.sim.mujoco import MujocoStateMap, mujoco_spec_for_robot

    build = mujoco_spec_for_robot(
        robot,
        contacts,
        contact_geoms=False,
        timestep=DT,
        solver_tolerance=1e-12 if x64 else 1e-6,
        solver_iterations=100,
    )
    m = build.compile()
    d = mujoco.MjData(m)
    smap = MujocoStateMap(robot, m)
    smap.qpos(initial_q(robot, contacts), out=d.qpos)
    jq, jv = smap.joint_qpos_indices, smap.joint_dof_indices
    with _x64(jax) if x64 else contextlib.nullcontext():
        mx, dx = mjx.put_model(m), mjx.put_data(m, d)
        rec = MjxRecorder.from_build(build, m)
        step = jax.jit(mjx.step)
        for n in range(int(DURATION / DT)):
            tau = KP * (targets(robot, n * DT) - dx.qpos[jq]) - KD * dx.qvel[jv]
            dx = dx.replace(qfrc_applied=jnp.zeros(m.nv).at[jv].set(tau))
            rec.record(mx, dx)  # mjx.forward on the device, then read on a host copy
            dx = step(mx, dx)
    return rec.trajectory(), build.robot


def run_mujoco_warp(robot, path, contacts) -> tuple[Trajectory, wb.Robot]:
    import mujoco
    import mujoco_warp as mjw

    from wholebody.sim.mjx import MujocoWarpRecorder
    from wholebody.sim.mujoco import MujocoStateMap, mujoco_spec_for_robot

    build = mujoco_spec_for_robot(
        robot,
        contacts,
        contact_geoms=False,
        timestep=DT,
        solver_tolerance=1e-6,
        solver_iterations=100,
    )
    m = build.compile()
    d = mujoco.MjData(m)
    smap = MujocoStateMap(robot, m)
    smap.qpos(initial_q(robot, contacts), out=d.qpos)
    jq, jv = smap.joint_qpos_indices, smap.joint_dof_indices
    wm, wd = mjw.put_model(m), mjw.put_data(m, d)
    rec = MujocoWarpRecorder.from_build(build, m)
    for n in range(int(DURATION / DT)):
        qpos, qvel = wd.qpos.numpy()[0], wd.qvel.numpy()[0]
        f = np.zeros((1, m.nv), dtype=np.float32)
        f[0, jv] = KP * (targets(robot, n * DT) - qpos[jq]) - KD * qvel[jv]
        wd.qfrc_applied.assign(f)
        rec.record(wm, wd)  # mujoco_warp.forward on the device, then read on a host copy
        mjw.step(wm, wd)
    return rec.trajectory(), build.robot


def run_newton(robot, path, contacts) -> tuple[Trajectory, wb.Robot]:
    import newton
    import warp as wp

    from wholebody.sim.newton import NewtonRecorder

    q0 = initial_q(robot, contacts)
    builder = newton.ModelBuilder()
    newton.solvers.SolverMuJoCo.register_custom_attributes(builder)
    builder.add_urdf(
        str(path),
        floating=True,
        enable_self_collisions=False,
        xform=wp.transform(wp.vec3(*q0[:3]), wp.quat_identity()),
    )
    builder.add_ground_plane()
    model = builder.finalize(device="cpu")
    solver = newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=True, use_mujoco_contacts=True)
    s0, s1, control = model.state(), model.state(), model.control()
    newton.eval_fk(model, model.joint_q, model.joint_qd, s0)
    pipe = newton.CollisionPipeline(
        model, rigid_contact_max=solver.get_max_contact_count(), soft_contact_max=0
    )
    nc = pipe.contacts()
    rec = NewtonRecorder(robot, model, solver, nc, contacts, s0, timestep=DT)
    labels = [str(n).rsplit("/", 1)[-1] for n in model.joint_label]
    q_start, qd_start = model.joint_q_start.numpy(), model.joint_qd_start.numpy()
    qi = np.array([q_start[labels.index(n)] for n in robot.joint_names])
    vi = np.array([qd_start[labels.index(n)] for n in robot.joint_names])
    for n in range(int(DURATION / DT)):
        f = np.zeros(model.joint_dof_count, dtype=np.float32)
        jq, jqd = s0.joint_q.numpy(), s0.joint_qd.numpy()
        f[vi] = KP * (targets(robot, n * DT) - jq[qi]) - KD * jqd[vi]
        control.joint_f.assign(f)
        solver.step(s0, s1, control, nc, DT, observables=rec.observables)
        rec.record(s1)  # after the step: the state before it, its forces
        s0, s1 = s1, s0
    return rec.trajectory(), robot


def run_genesis(robot, path, contacts) -> tuple[Trajectory, wb.Robot]:
    import genesis as gs

    from wholebody.sim.genesis import GenesisRecorder

    if not gs._initialized:
        gs.init(backend=gs.cpu, precision="64", logging_level="warning")
    q0 = initial_q(robot, contacts)
    scene = gs.Scene(
        sim_options=gs.options.SimOptions(dt=DT, gravity=(0.0, 0.0, -9.81)), show_viewer=False
    )
    plane = scene.add_entity(gs.morphs.Plane())
    entity = scene.add_entity(gs.morphs.URDF(file=str(path), pos=tuple(q0[:3]), fixed=False))
    scene.build()  # compiles Genesis' kernels (minutes on a CPU the first time)
    rec = GenesisRecorder(robot, entity, plane, contacts)
    dofs = [entity.get_joint(n).dof_start - entity.dof_start for n in robot.joint_names]
    qs = [entity.get_joint(n).q_start - entity.q_start for n in robot.joint_names]
    for n in range(int(DURATION / DT)):
        qpos, vel = entity.get_qpos().numpy(), entity.get_dofs_velocity().numpy()
        entity.control_dofs_force(KP * (targets(robot, n * DT) - qpos[qs]) - KD * vel[dofs], dofs)
        scene.step()
        rec.record()  # after the step: the state before it, its forces
    return rec.trajectory(), rec.robot


ENGINES: dict[str, tuple[tuple[str, ...], Callable[..., tuple[Trajectory, wb.Robot]]]] = {
    "mujoco": (("mujoco",), run_mujoco),
    "pybullet": (("pybullet",), run_pybullet),
    "drake": (("pydrake.multibody.plant",), run_drake),
    "mjx": (("jax", "mujoco.mjx"), run_mjx),
    "mjx64": (("jax", "mujoco.mjx"), lambda r, p, c: run_mjx(r, p, c, x64=True)),
    "mujoco-warp": (("warp", "mujoco_warp"), run_mujoco_warp),
    "newton": (("warp", "newton"), run_newton),
    "genesis": (("genesis",), run_genesis),
}


def unavailable(modules: tuple[str, ...]) -> str | None:
    """Why an engine cannot run here (None: it can): its package is not installed, or it is
    installed but does not import (Genesis without torch, a wheel for another Python)."""
    for module in modules:
        if importlib.util.find_spec(module.split(".")[0]) is None:
            return f"not installed ({module.split('.')[0]})"
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - any import failure is a reason to skip
            first = (str(exc).strip().splitlines() or [""])[0][:90]
            return f"installed but not importable: {type(exc).__name__}: {first}"
    return None


def run_one(name: str, robot, path, contacts) -> tuple[tuple[str, ...], bool]:
    """One engine's row of the table, and whether it failed the check (an engine that cannot
    run or raises is a row saying why, not a failure of the comparison)."""
    modules, run = ENGINES[name]
    reason = unavailable(modules)
    if reason is not None:
        return (name, "", "", "", "skipped", "", reason), False
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # engines' own chatter
            traj, check_robot = run(robot, path, contacts)
    except Exception as exc:  # noqa: BLE001 - reported in the table, the others still run
        first = (str(exc).strip().splitlines() or [""])[0][:90]
        return (name, "", "", "", "error", "", f"{type(exc).__name__}: {first}"), False
    seconds = time.perf_counter() - start
    # Drake's SAP regularises contact: single samples at contact changes balance to
    # millinewtons only, above the float64 floor; its log is checked at 1 % m g.
    options = CheckOptions(preset="physical") if name == "drake" else None
    report = check_trajectory(check_robot, traj, contacts, options)
    floor, why = FLOORS[name]
    median = float(np.median(report.force_norm))
    ok = report.verdict == "consistent" and median <= floor
    note = f"floor {floor:g} N: {why}" if ok else f"ABOVE the floor {floor:g} N ({why})"
    row = (
        name,
        traj.metadata.get("dtype", "float64"),
        f"{median:.2e}",
        f"{float(np.max(report.force_norm)):.2e}",
        report.verdict,
        f"{seconds:.0f} s",
        note,
    )
    return row, not ok


def main() -> int:
    """Print the table; 1 when an engine that ran is not consistent at its floor, else 0
    (engines not installed, not importable or failing to run are rows saying why)."""
    wanted = os.environ.get("WHOLEBODY_ENGINES")
    names = [n.strip() for n in wanted.split(",")] if wanted else list(ENGINES)
    unknown = [n for n in names if n not in ENGINES]
    if unknown:
        print(f"unknown engines {unknown}; known: {', '.join(ENGINES)}")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        path = sphere_feet_urdf(Path(tmp))
        robot, contacts = wb.Robot.from_urdf(path), soles()
        results = [run_one(name, robot, path, contacts) for name in names]
    rows = [r for r, _ in results]
    head = ("engine", "dtype", "median N", "max N", "verdict", "time", "note")
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip())
    return int(any(failed for _, failed in results))


if __name__ == "__main__":
    sys.exit(main())
