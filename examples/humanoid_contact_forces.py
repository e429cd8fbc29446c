"""A human standing on two feet (seeds 002, 003): wrenches, cones, estimates, support areas.

The anthropometric human (Dempster via Winter, 1.70 m, 70 kg) stands with its weight shifted
onto the left foot and one arm raised. The script computes its gravito-inertial wrench, the
contact wrench cone of each sole, the foot wrenches by QP (Newton-Euler mode: the total is
determined, the split is the least-norm one), each foot's centre of pressure, the ZMP, and
the static-equilibrium polygon, and draws them in one figure (feet, CoPs, CoM, polygon).

Run: python examples/humanoid_contact_forces.py  (saves humanoid_contact_forces.png)
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import ConvexHull

from wholebody.balance import gravito_inertial_wrench, zmp
from wholebody.check.plots import optional_pyplot, output_dir
from wholebody.contacts import SurfaceContact
from wholebody.estimation import estimate_contact_wrenches
from wholebody.friction import check_wrench_cone
from wholebody.friction.support import static_equilibrium_polygon
from wholebody.models import anthropometric_human, sole_half_sizes, standing_height
from wholebody.spatial import Wrench


def main() -> dict[str, float]:
    robot = anthropometric_human(1.70, 70.0)
    X, Y = sole_half_sizes(1.70)
    feet = [
        SurfaceContact(f, half_length=X, half_width=Y, mu=0.7) for f in ("left_sole", "right_sole")
    ]
    # Shift the pelvis 4 cm to the left (hip and ankle adduction keep the soles flat).
    shift = np.arcsin(0.04 / (standing_height(1.70) - 0.039 * 1.70))
    q = robot.q_from_named(
        {
            "left_hip_adduction": shift,
            "left_ankle_inversion": shift,
            "right_hip_adduction": -shift,
            "right_ankle_inversion": -shift,
            "right_shoulder_flexion": -1.2,
        },
        base_position=[0.0, 0.04, standing_height(1.70) * np.cos(shift)],
    )
    zero = np.zeros(robot.nv)
    w_gi = gravito_inertial_wrench(robot, q, zero, zero)
    est = estimate_contact_wrenches(robot, q, zero, zero, feet)
    polygon = static_equilibrium_polygon(robot, q, feet)
    com = robot.com(q)
    total = Wrench(np.zeros(3), np.zeros(3), com)
    for c in feet:
        total = total + Wrench.from_vector(
            est.wrenches[c.name], robot.frame_position(q, c.frame)
        ).shift_to(com)
    zmp_point = zmp(total)
    print(
        f"weight {robot.weight:.1f} N; gravito-inertial wrench at the CoM: "
        f"{np.array2string(w_gi.as_vector(), precision=2)}"
    )
    print(
        f"estimate: {est.status}, split from regularisation: {est.split_from_regularization} "
        "(without joint torques the six Newton-Euler equations fix the total, not the split: "
        "the least-norm split shares the load and carries the shift as CoP moments)"
    )
    for c in feet:
        w_local = est.wrenches_local[c.name]
        inside = check_wrench_cone(c, w_local)
        print(
            f"  {c.name}: f_z {w_local[2]:6.1f} N, CoP "
            f"{np.array2string(est.centres_of_pressure[c.name] * 100, precision=1)} cm, "
            f"cone margin {inside.margin[0]:.1f}"
        )
    print(
        f"ZMP {np.array2string(zmp_point[:2] * 100, precision=1)} cm; CoM "
        f"{np.array2string(com[:2] * 100, precision=1)} cm; "
        f"support polygon area {polygon.area * 1e4:.0f} cm^2, CoM margin "
        f"{polygon.margin(com) * 100:.1f} cm"
    )

    corners = []
    for c in feet:
        M = robot.placements(q, c.frame).se3()
        corners += [
            M.act(np.array([sx * X, sy * Y, 0.0]))[:2]
            for sx, sy in ((1, 1), (-1, 1), (-1, -1), (1, -1))
        ]
    corners = np.array(corners)
    plt = optional_pyplot()
    if plt is not None:
        out = output_dir()
        fig, ax = plt.subplots(figsize=(8.5, 6))
        for k in range(2):
            foot = corners[4 * k : 4 * k + 4]
            ax.fill(foot[:, 0], foot[:, 1], alpha=0.25, label=feet[k].name)
        poly = np.vstack([polygon.vertices, polygon.vertices[:1]])
        ax.plot(poly[:, 0], poly[:, 1], "k-", lw=1, label="static equilibrium polygon")
        for c in feet:
            M = robot.placements(q, c.frame).se3()
            p = M.act(np.r_[est.centres_of_pressure[c.name], 0.0])
            ax.plot(p[0], p[1], "o", label=f"CoP {c.name}")
        ax.plot(com[0], com[1], "k+", ms=14, mew=2, label="CoM")
        ax.plot(zmp_point[0], zmp_point[1], "rx", ms=10, label="ZMP")
        ax.set_aspect("equal")
        ax.set(xlabel="x [m]", ylabel="y [m]", title="human standing, weight on the left foot")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
        fig.tight_layout()
        fig.savefig(out / "humanoid_contact_forces.png", dpi=100)
    # Cross-checks: estimated foot wrenches carry the weight exactly; at rest the ZMP is under
    # the CoM; the polygon of flat feet is the convex hull of the soles; the CoM is inside.
    fz = sum(est.wrenches[c.name][2] for c in feet)
    assert est.found and abs(fz - robot.weight) < 1e-6
    assert np.allclose(zmp_point[:2], com[:2], atol=1e-9)
    assert abs(polygon.area - ConvexHull(corners).volume) < 1e-8
    assert polygon.margin(com) > 0
    return {"fz": fz}


if __name__ == "__main__":
    main()
