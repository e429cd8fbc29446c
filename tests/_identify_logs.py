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
