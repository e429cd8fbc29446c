"""Newton-Euler wrench balance of the shipped humanoid on a motion with known foot wrenches.

The humanoid sways and squats for two seconds (analytic q(t), v(t), a(t)). At every sample
the two foot wrenches are made consistent by construction: the left foot carries a share
that varies smoothly, the right foot the rest of what the motion needs (the base rows of
inverse dynamics, RNEA). Their
Newton-Euler residual is zero to rounding. Then a classic logging mistake is injected — the
right foot's wrench with the wrong sign between 0.8 s and 1.2 s — and the residual shows it.

Prints the residuals; saves ``humanoid_wrench_balance.png`` with the ``plot`` extra.
Run: python examples/humanoid_wrench_balance.py
"""

from __future__ import annotations

import numpy as np

import wholebody as wb
from wholebody.balance import newton_euler_residual
from wholebody.check.plots import optional_pyplot, output_dir
from wholebody.contacts import SurfaceContact
from wholebody.models import (
    HUMANOID_SOLE_HALF_LENGTH,
    HUMANOID_SOLE_HALF_WIDTH,
    HUMANOID_STANDING_HEIGHT,
)
from wholebody.spatial import Wrench

T, N = 2.0, 401
OMEGA = 2 * np.pi * 0.75


def motion(robot: wb.Robot, t: float):
    """q, v, a at time t: base sway along y, squat of both legs (analytic derivatives)."""
    s, c = np.sin(OMEGA * t), np.cos(OMEGA * t)
    theta, dtheta, ddtheta = 0.2 + 0.1 * s, 0.1 * OMEGA * c, -0.1 * OMEGA**2 * s
    y, dy, ddy = 0.03 * s, 0.03 * OMEGA * c, -0.03 * OMEGA**2 * s
    joints = {}
    rates = np.zeros(robot.nv)
    accels = np.zeros(robot.nv)
    for side in ("left", "right"):
        for joint, k in (
            (f"{side}_hip_pitch", -1.0),
            (f"{side}_knee", 2.0),
            (f"{side}_ankle_pitch", -1.0),
        ):
            joints[joint] = k * theta
            idx = robot.model.joints[robot.joint_id(joint)].idx_v
            rates[idx], accels[idx] = k * dtheta, k * ddtheta
    height = HUMANOID_STANDING_HEIGHT - 0.8 * (1 - np.cos(theta))
    q = robot.q_from_named(joints, base_position=[0.0, y, height])
    # The base keeps the identity orientation, so base-frame and world velocities coincide.
    dh, ddh = (
        -0.8 * np.sin(theta) * dtheta,
        -0.8 * (np.cos(theta) * dtheta**2 + np.sin(theta) * ddtheta),
    )
    rates[:3], accels[:3] = [0.0, dy, dh], [0.0, ddy, ddh]
    return q, rates, accels


def main() -> None:
    robot = wb.load("humanoid")
    feet = [
        SurfaceContact(
            f, half_length=HUMANOID_SOLE_HALF_LENGTH, half_width=HUMANOID_SOLE_HALF_WIDTH, mu=0.8
        )
        for f in ("left_sole", "right_sole")
    ]
    t = np.linspace(0.0, T, N)
    Q, V, A, W = [], [], [], []
    for ti in t:
        q, v, a = motion(robot, ti)
        left_o, right_o = (
            robot.frame_position(q, "left_sole"),
            robot.frame_position(q, "right_sole"),
        )
        # What the feet must supply, from RNEA's base rows (base frame = world axes here,
        # about the base origin): a second algorithm, independent of the centroidal route.
        base_rows = robot.inverse_dynamics(q, v, a)[:6]
        need = Wrench.from_vector(base_rows, q[:3]).shift_to(right_o)
        share = 0.5 + 0.3 * np.sin(OMEGA * ti)
        left = Wrench(share * need.force, np.zeros(3), left_o)
        right = need - left.shift_to(right_o)
        Q.append(q), V.append(v), A.append(a), W.append(np.r_[left.as_vector(), right.as_vector()])
    Q, V, A, W = map(np.array, (Q, V, A, W))

    clean = newton_euler_residual(robot, Q, V, A, feet, W)
    bad = W.copy()
    flip = (t >= 0.8) & (t <= 1.2)
    bad[flip, 6:] *= -1.0  # right foot logged as the action on the ground, not the reaction
    broken = newton_euler_residual(robot, Q, V, A, feet, bad)

    print(f"{N} samples, weight {robot.weight:.1f} N")
    print(
        f"consistent log: max residual force {clean.force_norm.max():.2e} N, "
        f"moment {clean.moment_norm.max():.2e} N m"
    )
    print(
        "right foot sign-flipped in [0.8, 1.2] s: max residual "
        f"{broken.force_relative.max():.2f} m g "
        f"inside, {broken.force_norm[~flip].max():.1e} N outside"
    )

    plt = optional_pyplot()
    if plt is not None:
        out = output_dir()
        fig, ax = plt.subplots(2, 1, sharex=True, figsize=(8, 5))
        ax[0].plot(t, W[:, 2], label="left f_z")
        ax[0].plot(t, W[:, 8], label="right f_z")
        ax[0].set_ylabel("normal force [N]")
        ax[0].legend()
        ax[1].semilogy(t, np.maximum(clean.force_norm, 1e-16), label="consistent")
        ax[1].semilogy(t, np.maximum(broken.force_norm, 1e-16), label="right foot sign flipped")
        ax[1].set_ylabel("|residual force| [N]")
        ax[1].set_xlabel("time [s]")
        ax[1].legend()
        fig.tight_layout()
        fig.savefig(out / "humanoid_wrench_balance.png", dpi=100)
        print(f"saved {out / 'humanoid_wrench_balance.png'}")

    # Cross-check: wrenches built from RNEA's base rows balance the centroidal route to
    # rounding, and the injected sign flip is caught where it was injected.
    assert clean.force_norm.max() < 1e-9 and clean.moment_norm.max() < 1e-9
    assert broken.force_relative[flip].min() > 0.3 and broken.force_norm[~flip].max() < 1e-9


if __name__ == "__main__":
    main()
