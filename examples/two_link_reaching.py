"""Minimum-jerk reaching with the seed's two-link arm (seed 001): the torque split.

The hand moves from the arm hanging down to the upper arm forward and the elbow at 90
degrees, slowly (4 s) and fast (0.5 s), and fast in the horizontal plane (g = 0). The joint
torques are split into inertial ``M q''``, Coriolis-centripetal ``C q'``, gravity ``G`` and
external parts by ``Robot.torque_terms`` and checked against the seed's closed-form M, C, G
evaluated directly. As in the seed: slow, the torques mostly hold gravity; fast, the
interaction (Coriolis) torques exceed the gravitational ones over much of the movement.

Run: python examples/two_link_reaching.py  (saves two_link_reaching.png with matplotlib)
"""

from __future__ import annotations

import numpy as np

import wholebody as wb
from wholebody.check.plots import optional_pyplot, output_dir
from wholebody.models import dempster_arm_parameters

P = dempster_arm_parameters(1.70, 70.0)
L1, L2, D1, D2, M1, M2, I1, I2 = (P[k] for k in ("L1", "L2", "d1", "d2", "m1", "m2", "I1", "I2"))


def minimum_jerk(start, end, duration, n=201):
    """Endpoint positions of a minimum-jerk movement (Flash and Hogan 1985)."""
    t = np.linspace(0.0, duration, n)
    s = t / duration
    shape = 10 * s**3 - 15 * s**4 + 6 * s**5
    return t, np.asarray(start) + np.outer(shape, np.asarray(end) - np.asarray(start))


def inverse_kinematics(points):
    """Joint angles (from the horizontal; elbow flexing upwards) reaching the points."""
    x, y = points[:, 0], points[:, 1]
    c2 = np.clip((x**2 + y**2 - L1**2 - L2**2) / (2 * L1 * L2), -1.0, 1.0)  # coerced, as the seed
    q2 = np.arccos(c2)
    q1 = np.arctan2(y, x) - np.arctan2(L2 * np.sin(q2), L1 + L2 * np.cos(q2))
    return np.column_stack([q1, q2])


def seed_terms(q, qd, qdd, g):
    """The seed's closed form, evaluated directly: M q'', C, G per sample."""
    c2, s2 = np.cos(q[:, 1]), np.sin(q[:, 1])
    m11 = I1 + I2 + L1**2 * M2 + 2 * L1 * D2 * M2 * c2 + D1**2 * M1 + D2**2 * M2
    m12 = I2 + L1 * D2 * M2 * c2 + D2**2 * M2
    m22 = I2 + D2**2 * M2
    inertial = np.column_stack(
        [m11 * qdd[:, 0] + m12 * qdd[:, 1], m12 * qdd[:, 0] + m22 * qdd[:, 1]]
    )
    coriolis = np.column_stack(
        [
            -L1 * D2 * M2 * (2 * qd[:, 0] + qd[:, 1]) * s2 * qd[:, 1],
            L1 * D2 * M2 * s2 * qd[:, 0] ** 2,
        ]
    )
    c1, c12 = np.cos(q[:, 0]), np.cos(q[:, 0] + q[:, 1])
    gravity = g * np.column_stack([L1 * M2 * c1 + D1 * M1 * c1 + D2 * M2 * c12, D2 * M2 * c12])
    return inertial, coriolis, gravity


def simulate_case(duration: float, g: float):
    robot = wb.load("two_link_arm")
    robot.gravity_vector = [0.0, 0.0, -g]
    t, points = minimum_jerk([0.0, -L1 - L2], [L1, L2], duration)
    q = inverse_kinematics(points)
    dt = t[1] - t[0]
    qd = np.gradient(q, dt, axis=0)  # central differences, as the seed
    qdd = np.gradient(qd, dt, axis=0)
    terms = [robot.torque_terms(qi, vi, ai) for qi, vi, ai in zip(q, qd, qdd)]
    ours = {
        k: np.array([getattr(x, k) for x in terms])
        for k in ("inertial", "coriolis", "gravity", "external")
    }
    seed = dict(zip(("inertial", "coriolis", "gravity"), seed_terms(q, qd, qdd, g)))
    error = max(float(np.abs(ours[k] - seed[k]).max()) for k in seed)
    return t, ours, error


def main() -> dict[str, float]:
    cases = {
        "slow (4 s)": (4.0, 9.81),
        "fast (0.5 s)": (0.5, 9.81),
        "fast, horizontal (g = 0)": (0.5, 0.0),
    }
    results = {}
    worst = 0.0
    for label, (duration, g) in cases.items():
        t, terms, error = simulate_case(duration, g)
        worst = max(worst, error)
        peaks = {k: float(np.abs(v).max()) for k, v in terms.items()}
        results[label] = (t, terms, peaks)
        print(
            f"{label:26s} peak |torque| [N m]: inertial {peaks['inertial']:5.2f}, "
            f"Coriolis {peaks['coriolis']:5.2f}, gravity {peaks['gravity']:5.2f}"
        )
    print(f"wholebody vs the seed's closed-form M, C, G: max difference {worst:.1e} N m")

    plt = optional_pyplot()
    if plt is not None:
        out = output_dir()
        fig, axes = plt.subplots(3, 2, figsize=(10, 9), sharex="row")
        for row, (label, (t, terms, _)) in enumerate(results.items()):
            for joint in range(2):
                ax = axes[row, joint]
                for key, name in (
                    ("inertial", "Mass/Inertia"),
                    ("coriolis", "Centripetal/Coriolis"),
                    ("gravity", "Gravitational"),
                    ("external", "External"),
                ):
                    ax.plot(t, terms[key][:, joint], label=name)
                total = sum(
                    terms[k][:, joint] for k in ("inertial", "coriolis", "gravity", "external")
                )
                ax.plot(t, total, "k--", lw=2, label="Muscular (sum)")
                ax.set_title(f"{label}: joint {joint + 1}", fontsize=10)
                ax.set_ylabel("torque [N m]")
            axes[row, 1].legend(fontsize=7)
        for ax in axes[-1]:
            ax.set_xlabel("time [s]")
        fig.tight_layout()
        fig.savefig(out / "two_link_reaching.png", dpi=100)
    slow, fast = results["slow (4 s)"][2], results["fast (0.5 s)"][2]
    # Cross-check: the library's terms equal the seed's closed form; and the seed's findings.
    assert worst < 1e-9
    assert slow["gravity"] > 5 * slow["coriolis"]  # slow: the torques mostly hold gravity
    assert fast["coriolis"] > fast["gravity"]  # fast: interaction torques exceed gravity
    assert results["fast, horizontal (g = 0)"][2]["gravity"] == 0.0
    return {"max_difference": worst}


if __name__ == "__main__":
    main()
