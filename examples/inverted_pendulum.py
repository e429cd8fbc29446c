"""The planar inverted pendulum of seed 001: inverse and forward dynamics.

A person swaying about the ankles as one segment (70 kg, 1.70 m, CoM at 0.935 m), with a
horizontal push at the top. Inverse dynamics by wholebody is compared with the seed's

    T = I_o alpha'' + m g d cos(alpha) + L F_ex sin(alpha) - L F_ey cos(alpha)

and the torque profile is then fed to forward dynamics, integrated by scipy's ``solve_ivp``,
which must give the motion back.

Run: python examples/inverted_pendulum.py  (saves inverted_pendulum.png with matplotlib)
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

import wholebody as wb
from wholebody.check.plots import optional_pyplot, output_dir

L, M, G = 1.70, 70.0, 9.81
D = 0.55 * L
I_O = M * (0.28 * L) ** 2 + M * D**2  # about the ankle (parallel axes)
F_EX, F_EY = 15.0, 0.0  # push at the top [N], in the plane (x horizontal, y up)


def motion(t):
    """Sway about the vertical: alpha = 90 deg + 3 deg sin(2 pi 0.5 t)."""
    w, amp = 2 * np.pi * 0.5, np.deg2rad(3.0)
    return np.pi / 2 + amp * np.sin(w * t), amp * w * np.cos(w * t), -amp * w * w * np.sin(w * t)


def seed_torque(alpha, alpha_dd):
    return (
        I_O * alpha_dd
        + M * G * D * np.cos(alpha)
        + L * F_EX * np.sin(alpha)
        - L * F_EY * np.cos(alpha)
    )


def main() -> dict[str, float]:
    robot = wb.load("pendulum")
    push = {"tip": np.array([F_EX, 0.0, F_EY])}  # the seed's (x, y) plane is our (x, z)
    t = np.linspace(0.0, 4.0, 401)
    alpha, alpha_d, alpha_dd = motion(t)
    tau = np.array(
        [
            robot.inverse_dynamics([a], [ad], [add], push)[0]
            for a, ad, add in zip(alpha, alpha_d, alpha_dd)
        ]
    )
    id_error = float(np.abs(tau - seed_torque(alpha, alpha_dd)).max())

    def rhs(time, state):
        a, ad = state
        torque = seed_torque(*[motion(time)[i] for i in (0, 2)])
        return [ad, robot.forward_dynamics([a], [ad], [torque], push)[0]]

    sol = solve_ivp(rhs, (t[0], t[-1]), [alpha[0], alpha_d[0]], t_eval=t, rtol=1e-10, atol=1e-12)
    fd_error = float(np.abs(sol.y[0] - alpha).max())
    print(f"ankle torque: {tau.min():.1f} .. {tau.max():.1f} N m (push {F_EX} N at {L} m)")
    print(f"inverse dynamics vs seed formula: max difference {id_error:.1e} N m")
    print(f"forward dynamics (solve_ivp) recovers the motion to {fd_error:.1e} rad")

    plt = optional_pyplot()
    if plt is not None:
        out = output_dir()
        fig, ax = plt.subplots(1, 2, figsize=(9, 3.2))
        ax[0].plot(t, np.rad2deg(alpha), label="prescribed")
        ax[0].plot(t, np.rad2deg(sol.y[0]), "--", label="forward dynamics")
        ax[0].set(xlabel="time [s]", ylabel="alpha [deg]")
        ax[0].legend()
        ax[1].plot(t, tau)
        ax[1].set(xlabel="time [s]", ylabel="ankle torque [N m]")
        fig.tight_layout()
        fig.savefig(out / "inverted_pendulum.png", dpi=100)
    # Cross-check against the seed's closed form and against integration.
    assert id_error < 1e-9 and fd_error < 1e-5
    return {"id_error": id_error, "fd_error": fd_error}


if __name__ == "__main__":
    main()
