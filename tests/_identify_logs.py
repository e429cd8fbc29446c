"""Logs with known truth for the identification tests: inverse dynamics (``pin.rnea``) of a
model built from a perturbed URDF, independent of the fitting code."""

from __future__ import annotations

import re

import numpy as np
import pinocchio as pin

import wholebody as wb
from wholebody.contacts import SurfaceContact
from wholebody.models import HUMANOID_SOLE_HALF_LENGTH, HUMANOID_SOLE_HALF_WIDTH, models_dir
from wholebody.trajectory import Trajectory

FEET = [
    SurfaceContact(
        f, half_length=HUMANOID_SOLE_HALF_LENGTH, half_width=HUMANOID_SOLE_HALF_WIDTH, mu=1.0
    )
    for f in ("left_sole", "right_sole")
]


def _search(pattern: str, text: str) -> re.Match[str]:
    match = re.search(pattern, text, re.S)
    assert match is not None, pattern
    return match


def humanoid_text() -> str:
    return (models_dir() / "humanoid.urdf").read_text()


def perturbed_urdf(
    text: str,
    link: str,
    mass_scale: float = 1.0,
    com_shift=(0.0, 0.0, 0.0),
    inertia_scale=1.0,
) -> str:
    """The URDF with one link's mass scaled, its CoM moved and its inertia (about the CoM)
    scaled by ``inertia_scale``: a number, or a (3,) per diagonal entry (ixx, iyy, izz; the
    products scaled by the geometric mean of their pair)."""
    block = _search(r'<link name="%s">.*?</link>' % link, text).group(0)
    xyz = np.array(
        [float(x) for x in _search(r'<origin[^>]*\bxyz="([^"]+)"', block).group(1).split()]
    )
    new = re.sub(
        r'(<mass value=")([^"]+)',
        lambda m: m.group(1) + repr(float(m.group(2)) * mass_scale),
        block,
    )
    new = re.sub(
        r'(<origin[^>]*\bxyz=")[^"]+"',
        lambda m: m.group(1) + " ".join(repr(float(v)) for v in xyz + com_shift) + '"',
        new,
        count=1,
    )
    k = np.broadcast_to(np.asarray(inertia_scale, dtype=float), (3,))
    factor = {
        "xx": k[0],
        "yy": k[1],
        "zz": k[2],
        "xy": np.sqrt(k[0] * k[1]),
        "xz": np.sqrt(k[0] * k[2]),
        "yz": np.sqrt(k[1] * k[2]),
    }
    new = re.sub(
        r'(i(xx|xy|xz|yy|yz|zz)=")([^"]+)',
        lambda m: m.group(1) + repr(float(m.group(3)) * float(factor[m.group(2)])),
        new,
    )
    return text.replace(block, new)


def inverse_dynamics_log(
    truth: wb.Robot, n: int = 200, seed: int = 0, *, static: bool = False, split: float = 0.6
) -> Trajectory:
    """States drawn at random (upright, still base when ``static``), the contact wrenches that
    ``rnea`` of ``truth`` needs, shared between the feet, and the joint torques that remain."""
    rng = np.random.default_rng(seed)
    m, d = truth.model, truth.model.createData()
    fids = [truth.frame_id(c.frame) for c in FEET]
    Q, V, A, T, W = [], [], [], [], []
    for _ in range(n):
        q = truth.neutral()
        q[:3] = rng.normal(0, 0.1, 3) + [0, 0, 0.9]
        if static:
            q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0, 0, rng.uniform(-1, 1))).coeffs()
            v, a = np.zeros(m.nv), np.zeros(m.nv)
        else:
            q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(*rng.uniform(-0.3, 0.3, 3))).coeffs()
            v, a = rng.normal(0, 0.5, m.nv), rng.normal(0, 2.0, m.nv)
        q[7:] = rng.uniform(-0.6, 0.6, m.nq - 7)
        full = pin.rnea(m, d, q, v, a)
        pin.forwardKinematics(m, d, q)
        pin.updateFramePlacements(m, d)
        Rb, pb = d.oMi[1].rotation, d.oMi[1].translation
        f, moment = Rb @ full[:3], Rb @ full[3:6]
        ws = [
            share * np.r_[f, moment + np.cross(pb - d.oMf[fid].translation, f)]
            for fid, share in zip(fids, (split, 1 - split), strict=True)
        ]
        pin.computeJointJacobians(m, d, q)
        tau = full - sum(
            pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED).T @ w
            for fid, w in zip(fids, ws, strict=True)
        )
        assert np.abs(tau[:6]).max() < 1e-8
        Q.append(q)
        V.append(v)
        A.append(a)
        T.append(tau[6:])
        W.append(ws)
    W_ = np.array(W)
    return Trajectory.from_arrays(
        np.arange(n) * 0.01,
        np.array(Q),
        np.array(V),
        joint_names=truth.joint_names,
        contact_wrenches={"left_sole": W_[:, 0], "right_sole": W_[:, 1]},
        a=np.array(A),
        tau=np.array(T),
    )


def add_contact_bias(
    traj: Trajectory, robot: wb.Robot, contact: str, bias: np.ndarray
) -> Trajectory:
    """Readings = truth + bias, the bias (f, tau) constant in the contact frame's axes."""
    import dataclasses

    q, _, _, _ = traj.for_robot(robot)
    W = traj.contact_wrenches.copy()
    k = traj.contact_names.index(contact)
    for i in range(len(traj)):
        R = robot.placements(q[i], contact).se3().rotation
        W[i, k] += np.r_[R @ bias[:3], R @ bias[3:]]
    return dataclasses.replace(traj, contact_wrenches=W)


def smooth_log(
    truth: wb.Robot,
    feet: list[str],
    n: int = 2000,
    *,
    dt: float = 1e-3,
    seed: int = 0,
    amplitude: float = 0.25,
    base_amplitude: float = 0.05,
    lag_samples: int = 0,
    bias: dict[str, np.ndarray] | None = None,
    noise: tuple[float, float, float] = (0.0, 0.0, 0.0),
    rho: float = 0.0,
) -> Trajectory:
    """A time series at ``1 / dt`` Hz: joints and base moving by sums of sines (0.2-1.5 Hz),
    ``q`` integrated from ``v`` (midpoint), ``a = dv/dt`` exact; the feet share the wrench
    that ``rnea`` of ``truth`` needs (a slowly varying split), the rest is the joint torques.

    ``lag_samples``: the logged wrenches are the true ones that many samples earlier (the
    first samples repeat). ``bias``: per foot a (6,) offset in the foot frame's axes.
    ``noise``: (force [N], moment [N m], torque [N m]) standard deviations of AR(1) noise with
    coefficient ``rho`` (0: white).
    """
    rng = np.random.default_rng(seed)
    m, d = truth.model, truth.model.createData()
    nv = m.nv
    freq = rng.uniform(0.2, 1.5, (3, nv))
    phase = rng.uniform(0, 2 * np.pi, (3, nv))
    amp = np.full(nv, amplitude)
    amp[:3] = base_amplitude
    amp[3:6] = base_amplitude * 2
    t = np.arange(n) * dt

    def vel(tt: float) -> np.ndarray:
        w = 2 * np.pi * freq
        return (amp * w * np.cos(w * tt + phase)).sum(axis=0) / 3

    def acc(tt: float) -> np.ndarray:
        w = 2 * np.pi * freq
        return (-amp * w * w * np.sin(w * tt + phase)).sum(axis=0) / 3

    q = truth.neutral()
    q[2] = 1.0
    fids = [truth.frame_id(f) for f in feet]
    Q, V, A, T, W = [], [], [], [], []
    for i, ti in enumerate(t):
        if i:
            q = pin.integrate(m, q, vel(ti - dt / 2) * dt)
        v, a = vel(ti), acc(ti)
        full = pin.rnea(m, d, q, v, a)
        pin.forwardKinematics(m, d, q)
        pin.updateFramePlacements(m, d)
        Rb, pb = d.oMi[1].rotation, d.oMi[1].translation
        f, moment = Rb @ full[:3], Rb @ full[3:6]
        split = 0.5 + 0.3 * np.sin(2 * np.pi * 0.4 * ti)
        ws = [
            share * np.r_[f, moment + np.cross(pb - d.oMf[fid].translation, f)]
            for fid, share in zip(fids, (split, 1 - split), strict=True)
        ]
        pin.computeJointJacobians(m, d, q)
        tau = full - sum(
            pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED).T @ w
            for fid, w in zip(fids, ws, strict=True)
        )
        if bias:
            for k, foot in enumerate(feet):
                if foot in bias:
                    R = d.oMf[fids[k]].rotation
                    ws[k] = ws[k] + np.r_[R @ bias[foot][:3], R @ bias[foot][3:]]
        Q.append(q.copy())
        V.append(v)
        A.append(a)
        T.append(tau[6:])
        W.append(ws)
    W_ = np.array(W)
    T_ = np.array(T)
    if lag_samples:
        W_ = np.concatenate([np.repeat(W_[:1], lag_samples, axis=0), W_[:-lag_samples]])
    if any(noise):
        e = np.empty((n, W_.shape[1] * 6 + T_.shape[1]))
        e[0] = rng.normal(size=e.shape[1])
        white = rng.normal(size=e.shape)
        for i in range(1, n):
            e[i] = rho * e[i - 1] + np.sqrt(1 - rho**2) * white[i]
        k = W_.shape[1]
        scale = np.r_[np.tile([noise[0]] * 3 + [noise[1]] * 3, k), [noise[2]] * T_.shape[1]]
        e *= scale
        W_ = W_ + e[:, : 6 * k].reshape(n, k, 6)
        T_ = T_ + e[:, 6 * k :]
    return Trajectory.from_arrays(
        t,
        np.array(Q),
        np.array(V),
        joint_names=truth.joint_names,
        contact_wrenches={f: W_[:, k] for k, f in enumerate(feet)},
        a=np.array(A),
        tau=T_,
    )


def _from_inverse_dynamics(
    truth: wb.Robot, feet: list[str], t: np.ndarray, Q: np.ndarray, V: np.ndarray, A: np.ndarray
) -> Trajectory:
    """The log of the states (Q, V, A) at times ``t``: the feet share the wrench that ``rnea``
    of ``truth`` needs (a slowly varying split), the joint torques are the rest."""
    m, d = truth.model, truth.model.createData()
    fids = [truth.frame_id(f) for f in feet]
    W = np.empty((len(t), len(feet), 6))
    T = np.empty((len(t), m.nv - 6))
    for i, ti in enumerate(t):
        full = pin.rnea(m, d, Q[i], V[i], A[i])
        pin.computeJointJacobians(m, d, Q[i])
        pin.updateFramePlacements(m, d)
        Rb, pb = d.oMi[1].rotation, d.oMi[1].translation
        f, moment = Rb @ full[:3], Rb @ full[3:6]
        split = 0.5 + 0.2 * np.sin(2 * np.pi * 0.3 * ti)
        gen = np.zeros(m.nv)
        for k, (fid, share) in enumerate(zip(fids, (split, 1 - split), strict=True)):
            W[i, k] = share * np.r_[f, moment + np.cross(pb - d.oMf[fid].translation, f)]
            gen += pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED).T @ W[i, k]
        T[i] = (full - gen)[6:]
    return Trajectory.from_arrays(
        t,
        Q,
        V,
        joint_names=truth.joint_names,
        contact_wrenches={f: W[:, k] for k, f in enumerate(feet)},
        a=A,
        tau=T,
    )


#: Talos's soles.
TALOS_FEET = ["left_sole_link", "right_sole_link"]


def talos_squat(
    truth: wb.Robot,
    n: int = 4000,
    *,
    dt: float = 1e-3,
    period: float = 2.0,
    depth: float = 0.9,
    lean: float = 0.25,
) -> Trajectory:
    """Talos squatting with its soles flat and still on the ground, exactly: the knees bend
    from 0.2 rad by up to ``depth`` [rad] and back every ``period`` [s], the hips and ankles
    share the bend so that the trunk leans forward by up to ``lean`` [rad] at the bottom; the
    elbows fold with the squat, the arms and the head sway a little. The base's pose follows
    from the left sole held at its first placement, its velocity and acceleration from
    ``J_sole v = 0`` and ``J_sole a + Jdot_sole v = 0`` (exact; the right sole, a mirror image,
    stays still too). Wrenches and torques from ``rnea`` of ``truth``, the feet sharing the
    load."""
    m, d = truth.model, truth.model.createData()
    t = np.arange(n) * dt
    w = 2 * np.pi / period
    # s(t) = (1 - cos w t) / 2 and its derivatives: the squat's phase, 0 standing, 1 at the bottom.
    s = np.stack([(1 - np.cos(w * t)) / 2, w * np.sin(w * t) / 2, w * w * np.cos(w * t) / 2])
    sway = np.stack(
        [np.sin(2 * w * t), 2 * w * np.cos(2 * w * t), -4 * w * w * np.sin(2 * w * t)]
    )  # arms and head, twice the squat's rate
    J = np.zeros((3, n, m.nv - 6))  # joint positions, velocities, accelerations

    def idx(name: str) -> int:
        return m.joints[truth.joint_id(name)].idx_v - 6

    knee = 0.2 * np.eye(3)[0][:, None] + depth * s
    lean_s = lean * s
    for side in ("left", "right"):
        J[:, :, idx(f"leg_{side}_4_joint")] = knee
        J[:, :, idx(f"leg_{side}_3_joint")] = -0.5 * knee - lean_s
        J[:, :, idx(f"leg_{side}_5_joint")] = -0.5 * knee
        J[:, :, idx(f"arm_{side}_4_joint")] = -0.4 * np.eye(3)[0][:, None] - 0.6 * s
        sign = 1.0 if side == "left" else -1.0
        J[:, :, idx(f"arm_{side}_2_joint")] = sign * (0.2 * np.eye(3)[0][:, None] + 0.1 * sway)
    J[:, :, idx("head_1_joint")] = 0.1 * sway
    fid = truth.frame_id(TALOS_FEET[0])
    Q = np.empty((n, m.nq))
    V = np.empty((n, m.nv))
    A = np.empty((n, m.nv))
    oMf0 = None
    for i in range(n):
        q = truth.neutral()
        q[7:] = J[0, i]
        pin.framesForwardKinematics(m, d, q)
        bMf = d.oMf[fid]  # the base at the origin
        if oMf0 is None:
            oMf0 = pin.SE3(np.eye(3), np.array([0.0, 0.1, 0.0]))
        oMb = oMf0 * bMf.inverse()
        q[:3], q[3:7] = oMb.translation, pin.Quaternion(oMb.rotation).coeffs()
        v = np.r_[np.zeros(6), J[1, i]]
        pin.computeJointJacobians(m, d, q)
        pin.updateFramePlacements(m, d)
        Jf = pin.getFrameJacobian(m, d, fid, pin.LOCAL)
        v[:6] = -np.linalg.solve(Jf[:, :6], Jf[:, 6:] @ v[6:])
        a = np.r_[np.zeros(6), J[2, i]]
        pin.forwardKinematics(m, d, q, v, np.zeros(m.nv))
        drift = pin.getFrameAcceleration(m, d, fid, pin.LOCAL).vector
        a[:6] = -np.linalg.solve(Jf[:, :6], Jf[:, 6:] @ a[6:] + drift)
        Q[i], V[i], A[i] = q, v, a
    return _from_inverse_dynamics(truth, TALOS_FEET, t, Q, V, A)


def ar1(rng: np.random.Generator, shape: tuple[int, ...], rho: float) -> np.ndarray:
    """Unit-variance AR(1) noise of coefficient ``rho`` along the first axis."""
    e = np.empty(shape)
    white = rng.normal(size=shape)
    e[0] = white[0]
    for i in range(1, shape[0]):
        e[i] = rho * e[i - 1] + np.sqrt(1 - rho**2) * white[i]
    return e


def measured(
    traj: Trajectory,
    seed: int,
    *,
    encoder: float = 1e-5,
    base: tuple[float, float] = (5e-4, 5e-4),
    velocity: float = 3e-3,
    wrench: tuple[float, float] = (1.0, 0.08),
    torque: float = 0.3,
    rho: tuple[float, float, float] = (0.99, 0.9, 0.9),
) -> Trajectory:
    """The log as a real robot's logging pipeline gives it, without accelerations: white
    encoder noise ``encoder`` [rad] on the joints; a state estimator's base pose, AR(1)
    (coefficient ``rho[0]``) of ``base`` = (position [m], orientation [rad, rotation vector in
    the base frame]); filtered velocities, AR(1) (``rho[1]``) of ``velocity`` on every
    component of ``v``; force sensors, AR(1) (``rho[2]``) of ``wrench`` = (force [N], moment
    [N m]); white torque-sensing noise ``torque`` [N m]."""
    import dataclasses

    rng = np.random.default_rng(seed)
    n = len(traj)
    q = traj.q.copy()
    q[:, 7:] += encoder * rng.normal(size=q[:, 7:].shape)
    q[:, :3] += base[0] * ar1(rng, (n, 3), rho[0])
    turn = base[1] * ar1(rng, (n, 3), rho[0])
    for i in range(n):
        R = pin.Quaternion(q[i, 3:7]).toRotationMatrix() @ pin.exp3(turn[i])
        q[i, 3:7] = pin.Quaternion(R).coeffs()
    v = traj.v + velocity * ar1(rng, traj.v.shape, rho[1])
    W = traj.contact_wrenches.copy()
    e = ar1(rng, (n, W.shape[1], 6), rho[2])
    W[..., :3] += wrench[0] * e[..., :3]
    W[..., 3:] += wrench[1] * e[..., 3:]
    tau = None if traj.tau is None else traj.tau + torque * rng.normal(size=traj.tau.shape)
    return dataclasses.replace(traj, q=q, v=v, a=None, tau=tau, contact_wrenches=W)
