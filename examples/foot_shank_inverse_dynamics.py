"""Ankle and knee joint forces and moments of a foot and shank (seed 000), two ways.

Seed 000 ("Matrix formalism of the Newton-Euler equations") solves a 12 x 12 linear
system for the ankle force F_A (world axes), the ankle moment M_A (foot axes), the knee
force F_K (world axes) and the knee moment M_K (shank axes), from the segments'
kinematics and the ground reaction force applied at the centre of pressure.

Here the same two segments are a small floating-base robot (the shank is the base, its
origin at the knee; a 3-dof ankle) and ``wholebody.balance.joint_reaction_wrenches`` gives
the wrench every joint transmits. The script prints both and asserts they agree.

Run: python examples/foot_shank_inverse_dynamics.py
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

import wholebody as wb
from wholebody.balance import joint_reaction_wrenches
from wholebody.check.plots import optional_pyplot, output_dir
from wholebody.models.urdf_writer import Link, Solid, chain, urdf_text
from wholebody.spatial import skew

SHANK_MASS, FOOT_MASS = 3.5, 1.0
SHANK_COM = np.array([0.0, 0.0, -0.18])  # from the knee [m]
ANKLE = np.array([0.0, 0.0, -0.40])  # from the knee [m]
FOOT_COM = np.array([0.05, 0.0, -0.04])  # from the ankle [m]
SHANK_SOLID, FOOT_SOLID = Solid("cylinder", (0.05, 0.40)), Solid("box", (0.24, 0.10, 0.06))


def foot_shank_urdf() -> str:
    shank = Link("shank", SHANK_MASS, tuple(SHANK_COM), SHANK_SOLID.inertia(SHANK_MASS))
    foot = Link("foot", FOOT_MASS, tuple(FOOT_COM), FOOT_SOLID.inertia(FOOT_MASS))
    # A 3-dof ankle as three hinges through one point (massless intermediate links).
    ankle = [
        ("ankle_x", "ankle_link_1", tuple(ANKLE), (1, 0, 0), (-1, 1)),
        ("ankle_y", "ankle_link_2", (0, 0, 0), (0, 1, 0), (-1, 1)),
        ("ankle_z", "foot", (0, 0, 0), (0, 0, 1), (-1, 1)),
    ]
    return urdf_text(
        "foot_shank", shank, chain("shank", ankle), {"foot": foot}, "foot and shank of seed 000"
    )


def segment_kinematics(robot: wb.Robot, q, v, a, body: str, com_local):
    """CoM acceleration (world axes), angular velocity and acceleration (segment axes), R."""
    model, data = robot.model, robot.data
    pin.forwardKinematics(model, data, q, v, a)
    pin.updateFramePlacements(model, data)
    fid = robot.frame_id(body)
    c = np.asarray(com_local, dtype=float)
    oMf = data.oMf[fid]
    twist = pin.getFrameVelocity(model, data, fid, pin.LOCAL)
    acc = pin.getFrameAcceleration(model, data, fid, pin.LOCAL)
    # Classical acceleration of the CoM point, in segment axes, then world axes.
    w, dw = twist.angular, acc.angular
    v_o, a_o = twist.linear, acc.linear
    a_com_local = a_o + np.cross(dw, c) + np.cross(w, v_o + np.cross(w, c))
    return oMf.rotation @ a_com_local, w, dw, oMf.rotation, oMf.act(c)


def seed_matrix_solution(robot, q, v, a, grf, cop):
    """The seed's 12 x 12 system, written as in seed 000 (R_X maps world to segment axes)."""
    g = robot.gravity_vector
    aF, wF, dwF, RF_world, cmF = segment_kinematics(robot, q, v, a, "foot", FOOT_COM)
    aS, wS, dwS, RS_world, cmS = segment_kinematics(robot, q, v, a, "shank", SHANK_COM)
    R_F, R_S = RF_world.T, RS_world.T  # the seed's rotation matrices: world -> segment
    I_F, I_S = FOOT_SOLID.inertia(FOOT_MASS), SHANK_SOLID.inertia(SHANK_MASS)
    ankle = robot.frame_position(q, "ankle_z")
    knee = robot.frame_position(q, "shank")
    Z, I3 = np.zeros((3, 3)), np.eye(3)
    M = np.block(
        [[FOOT_MASS * I3, Z, Z, Z], [Z, I_F, Z, Z], [Z, Z, SHANK_MASS * I3, Z], [Z, Z, Z, I_S]]
    )
    acc = np.r_[aF, dwF, aS, dwS]
    C = np.r_[np.zeros(3), -np.cross(wF, I_F @ wF), np.zeros(3), -np.cross(wS, I_S @ wS)]
    G = np.r_[FOOT_MASS * g, np.zeros(3), SHANK_MASS * g, np.zeros(3)]
    E = np.r_[grf, R_F @ np.cross(cop - cmF, grf), np.zeros(6)]
    B = np.block(
        [
            [I3, Z, Z, Z],
            [R_F @ skew(ankle - cmF), I3, Z, Z],
            [-I3, Z, I3, Z],
            [-R_S @ skew(ankle - cmS), -R_S @ R_F.T, R_S @ skew(knee - cmS), I3],
        ]
    )
    F_A, M_A_foot, F_K, M_K_shank = np.split(np.linalg.solve(B, M @ acc - C - G - E), 4)
    return F_A, M_A_foot, F_K, M_K_shank, R_F, R_S


def main() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "foot_shank.urdf"
        path.write_text(foot_shank_urdf())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the massless ankle links are intended
            robot = wb.Robot.from_urdf(path)
    robot.add_frame("cop", "foot", [0.08, 0.01, -0.07])
    rng = np.random.default_rng(0)
    q = robot.q_from_named(
        {"ankle_x": 0.1, "ankle_y": -0.2, "ankle_z": 0.05},
        base_position=[0.1, 0.0, 0.5],
        base_quaternion_xyzw=np.array([0.05, 0.1, 0.0, 0.99373])
        / np.linalg.norm([0.05, 0.1, 0.0, 0.99373]),
    )
    v, a = rng.normal(size=robot.nv), rng.normal(size=robot.nv)
    grf = np.array([40.0, -15.0, 700.0])  # ground reaction force [N], world axes
    cop = robot.frame_position(q, "cop")

    joints = joint_reaction_wrenches(robot, q, v, a, external_wrenches={"cop": grf})
    ankle, knee = joints["ankle_z"], joints["root_joint"]
    F_A, M_A_foot, F_K, M_K_shank, R_F, R_S = seed_matrix_solution(robot, q, v, a, grf, cop)

    print("ankle force F_A [N]      wholebody", ankle.force.round(4), " seed", F_A.round(4))
    print(
        "ankle moment M_A [N m]   wholebody",
        (R_F @ ankle.moment).round(4),
        " seed",
        M_A_foot.round(4),
        "(foot axes)",
    )
    print("knee force F_K [N]       wholebody", knee.force.round(4), " seed", F_K.round(4))
    print(
        "knee moment M_K [N m]    wholebody",
        (R_S @ knee.moment).round(4),
        " seed",
        M_K_shank.round(4),
        "(shank axes)",
    )
    errors = {
        "F_A": float(np.abs(ankle.force - F_A).max()),
        "M_A": float(np.abs(R_F @ ankle.moment - M_A_foot).max()),
        "F_K": float(np.abs(knee.force - F_K).max()),
        "M_K": float(np.abs(R_S @ knee.moment - M_K_shank).max()),
    }
    print("largest difference:", max(errors.values()))

    plt = optional_pyplot()
    if plt is not None:
        fig, ax = plt.subplots(1, 4, figsize=(12, 3))
        for axis, (title, ours, seed) in zip(
            ax,
            [
                ("ankle force F_A [N]", ankle.force, F_A),
                ("ankle moment M_A, foot axes [N m]", R_F @ ankle.moment, M_A_foot),
                ("knee force F_K [N]", knee.force, F_K),
                ("knee moment M_K, shank axes [N m]", R_S @ knee.moment, M_K_shank),
            ],
        ):
            x = np.arange(3)
            axis.bar(x - 0.2, ours, 0.4, label="wholebody")
            axis.bar(x + 0.2, seed, 0.4, label="seed 12x12 system")
            axis.set_xticks(x, ["x", "y", "z"])
            axis.set_title(title, fontsize=9)
        ax[0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(output_dir() / "foot_shank_inverse_dynamics.png", dpi=100)
    # Cross-check: the library's joint wrenches equal the seed's matrix solution.
    assert max(errors.values()) < 1e-9, errors
    return errors


if __name__ == "__main__":
    main()
