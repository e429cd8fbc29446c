"""Any humanoid of example-robot-data stands in MuJoCo, and its log checks consistent.

The robot (default g1; talos, icub, romeo, simple_humanoid, human) is loaded with wholebody,
its soles declared as surface contacts (frames the URDF lacks are added), and
``mujoco_spec_for_robot`` builds the MuJoCo model: meshes stripped, the inertias MuJoCo
refuses repaired (in MuJoCo and in the robot used for the check), a collision box per sole,
no other collision geometry. A joint PD holds the initial posture (stiffness as an applied
joint force, damping as MuJoCo joint damping, which the implicit integrator handles on the
lightest links); both are internal forces. ``MujocoRecorder`` logs every step, and
``check_trajectory`` must find every sample consistent: Newton-Euler residual <= 1e-9 N and
1e-9 N m with MuJoCo's accelerations and a 1e-12 solver tolerance.

    python examples/mujoco_any_humanoid.py talos --duration 2

Needs the ``mujoco`` and ``robots`` extras.
"""

from __future__ import annotations

import argparse
import warnings
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

import wholebody as wb
from wholebody.check import CheckOptions
from wholebody.check.analysis import Report, check_trajectory
from wholebody.contacts import SurfaceContact
from wholebody.errors import ModelWarning
from wholebody.models.loading import example_robot_data_dir
from wholebody.sim.mujoco import (
    MujocoBuild,
    MujocoStateMap,
    import_mujoco,
    mujoco_spec_for_robot,
)
from wholebody.sim.mujoco_recorder import MujocoRecorder
from wholebody.trajectory import Trajectory

mujoco = import_mujoco()

DT = 0.001
#: Joint stiffness per kilogram of robot [N m / rad / kg] and damping time constant [s].
STIFFNESS_PER_KG, DAMPING_TIME = 40.0, 0.02
#: The check's tolerance [N] and [N m]; relative tolerances of check_trajectory are per m g.
RESIDUAL_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Setup:
    """How a robot stands: its soles (frame, parent, placement in the parent) and base pose."""

    soles: dict[str, tuple[str, pin.SE3] | None]  # None: the frame exists in the URDF
    half_length: float
    half_width: float
    base_rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    urdf: str | None = None  # for robots wholebody.load does not name


def _se3(translation, rotation=None) -> pin.SE3:
    return pin.SE3(np.eye(3) if rotation is None else rotation, np.array(translation, dtype=float))


_RX90 = pin.rpy.rpyToMatrix(np.pi / 2, 0.0, 0.0)
SETUPS = {
    "talos": Setup({"left_sole_link": None, "right_sole_link": None}, 0.10, 0.05),
    "icub": Setup({"l_sole": None, "r_sole": None}, 0.06, 0.025),
    "romeo": Setup({"l_sole": None, "r_sole": None}, 0.10, 0.045),
    "g1": Setup(
        {
            "left_sole": ("left_ankle_roll_link", _se3([0.035, 0.0, -0.035])),
            "right_sole": ("right_ankle_roll_link", _se3([0.035, 0.0, -0.035])),
        },
        0.085,
        0.03,
    ),
    "simple_humanoid": Setup(
        {
            "left_sole": ("l_ankle", _se3([0.0, 0.0, -0.1])),
            "right_sole": ("r_ankle", _se3([0.0, 0.0, -0.1])),
        },
        0.12,
        0.06,
        urdf="simple_humanoid_description/urdf/simple_humanoid.urdf",
    ),
    # The human model is y-up: its soles' z axes are the model's +y, and the base is turned
    # by +90 degrees about x to stand it up.
    "human": Setup(
        {
            "left_sole": ("left_foot", _se3([0.02, -0.07, 0.0], _RX90.T)),
            "right_sole": ("right_foot", _se3([0.02, -0.07, 0.0], _RX90.T)),
        },
        0.10,
        0.04,
        base_rotation=_RX90,
    ),
}


def load_standing_robot(name: str) -> tuple[wb.Robot, list[SurfaceContact], Setup]:
    """The robot with its sole frames added, its sole contacts and its setup."""
    setup = SETUPS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)  # known defects, repaired below
        if setup.urdf is not None:
            robot = wb.Robot.from_urdf(
                example_robot_data_dir() / setup.urdf, validate="warn", name=name
            )
        else:
            robot = wb.load(name)
    for frame, placement in setup.soles.items():
        if placement is not None:
            robot.add_frame(frame, placement[0], placement[1])
    contacts = [
        SurfaceContact(f, half_length=setup.half_length, half_width=setup.half_width, mu=1.0)
        for f in setup.soles
    ]
    return robot, contacts, setup


def stand(name: str = "g1", duration: float = 2.0) -> tuple[MujocoBuild, Trajectory, Report]:
    """Simulate the robot standing (PD hold of its initial posture) and check the log."""
    robot, contacts, setup = load_standing_robot(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)  # the repairs are in build.repairs
        build = mujoco_spec_for_robot(
            robot, contacts, other_collisions=False, inertia="repair", timestep=DT
        )
    build.spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    m = build.compile()
    d = mujoco.MjData(m)
    robot = build.robot  # the one with MuJoCo's (repaired) inertias
    # Initial posture: neutral joints, base turned upright, soles 0.5 mm above the floor.
    q0 = robot.neutral()
    q0[3:7] = pin.Quaternion(setup.base_rotation).coeffs()
    q0[2] = 5e-4 - min(robot.frame_position(q0, c.frame)[2] for c in contacts)
    rec = MujocoRecorder.from_build(build, m)
    smap = MujocoStateMap(robot, m)  # MuJoCo's conventions, converted in one place
    joints_q, joints_v = smap.joint_qpos_indices, smap.joint_dof_indices
    d.qpos[:] = 0.0
    smap.qpos(q0, out=d.qpos)
    target = d.qpos[joints_q].copy()
    kp = STIFFNESS_PER_KG * robot.mass
    m.dof_damping[joints_v] = kp * DAMPING_TIME
    for _ in range(int(round(duration / DT))):
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[joints_v] = kp * (target - d.qpos[joints_q])
        rec.record(d)
        mujoco.mj_step(m, d)
    traj = rec.trajectory(metadata={"robot": name, "scenario": "stand"})
    weight = robot.weight
    report = check_trajectory(
        robot,
        traj,
        contacts,
        CheckOptions(
            force_tolerance=RESIDUAL_TOLERANCE / weight,
            moment_tolerance=RESIDUAL_TOLERANCE / weight,
        ),
    )
    return build, traj, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("robot", nargs="?", default="g1", choices=sorted(SETUPS))
    parser.add_argument("--duration", type=float, default=2.0)
    args = parser.parse_args()
    build, traj, report = stand(args.robot, args.duration)
    for r in build.repairs:
        print(f"inertia repaired: {r}")
    print(report.format_summary())
    fz = traj.contact_wrenches[:, :, 2].sum(axis=1)
    print(
        f"max residual: {np.nanmax(report.force_norm):.2e} N, "
        f"{np.nanmax(report.moment_norm):.2e} N m; "
        f"final base height {traj.q[-1, 2]:.3f} m; final vertical force {fz[-1]:.1f} N "
        f"(weight {build.robot.weight:.1f} N)"
    )
    # Cross-check: MuJoCo's contact forces balance MuJoCo's motion through wholebody's model,
    # and the robot is still standing on its soles at the end.
    assert report.n_checked == len(traj)
    assert np.nanmax(report.force_norm) <= RESIDUAL_TOLERANCE
    assert np.nanmax(report.moment_norm) <= RESIDUAL_TOLERANCE
    assert abs(fz[-1] - build.robot.weight) < 0.05 * build.robot.weight
    assert not traj.metadata["undeclared_contact_force_N"]


if __name__ == "__main__":
    main()
