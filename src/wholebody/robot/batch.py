"""Pinocchio passes over many samples of one robot (the hot loops of the log checks, batch
estimation, the convention checks, the diagnosis and identification), and the configuration
difference of many samples on the manifold, vectorised in numpy.

Each ``*_rows`` function runs one pass per listed sample on the robot's scratch ``Data``. Their
arguments: ``Q`` (N, nq), ``V`` and ``A`` (N, nv), states **not checked** here (callers check
whole arrays with ``Robot.check_batch``); ``rows``, the sample indices in ``[0, N)`` to compute
(outputs given as arguments are written at the same rows, outputs returned follow the order
of ``rows``); ``frame_ids``, frame indices in ``[0, nframes)``, checked (Pinocchio aborts on
one out of range). Results are world axes, SI units, read through views that the ``Data`` keeps
alive (``data.com[0]``, ``data.dhg.vector``, ``data.oMf[i].translation``), overwritten by
every pass: one small copy each, no Python object built per sample.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pinocchio as pin
from numpy.typing import NDArray

from ..errors import InvalidArgumentError

if TYPE_CHECKING:
    from .core import Robot

__all__ = [
    "centroidal_frames_rows",
    "com_frames_rows",
    "centroidal_map_rows",
    "frame_placements_rows",
    "frame_motions_rows",
    "joint_motions_rows",
    "regressor_frames_rows",
    "LiveFrames",
    "configuration_difference",
    "consecutive_differences",
]

Array = NDArray[np.float64]
#: Sample indices: a sequence of ints or an integer array.
Samples = Sequence[int] | NDArray[np.integer]

_momentum_rate = pin.computeCentroidalMomentumTimeVariation
_update_frame = pin.updateFramePlacement
_LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def centroidal_frames_rows(
    robot: Robot,
    Q: Array,
    V: Array,
    A: Array,
    rows: Sequence[int],
    frame_ids: Sequence[int],
    com: Array,
    rate: Array,
    positions: Array,
    rotations: Array | None = None,
    n_rotations: int | None = None,
) -> None:
    """CoM, momentum rate at the CoM and frame placements of the listed samples.

    Parameters
    ----------
    com : ndarray, shape (N, 3)
        Out: centre of mass, world [m].
    rate : ndarray, shape (N, 6)
        Out: ``(dP/dt, dL_G/dt)`` at the CoM, world axes [N, N m]
        (``computeCentroidalMomentumTimeVariation``).
    positions : ndarray, shape (N, len(frame_ids), 3)
        Out: frame origins, world [m].
    rotations : ndarray, shape (N, r, 3, 3), optional
        Out: world-from-frame rotations of the first ``r`` frames.
    n_rotations : int, optional
        ``r`` (default: every frame).
    """
    model, data = robot.model, robot.data
    ids = robot._check_frame_ids(frame_ids)
    r = len(ids) if n_rotations is None else int(n_rotations)
    if rotations is None:
        r = 0
    com_view = data.com[0]
    rate_view = data.dhg.vector
    placed = [data.oMf[f] for f in ids]
    trans = [p.translation for p in placed]
    rots = [p.rotation for p in placed[:r]]
    pairs = list(enumerate(ids))
    for i in rows:
        _momentum_rate(model, data, Q[i], V[i], A[i])
        com[i] = com_view
        rate[i] = rate_view
        P = positions[i]
        for j, f in pairs:
            _update_frame(model, data, f)
            P[j] = trans[j]
        if r:
            Ri = rotations[i]  # type: ignore[index]
            for j in range(r):
                Ri[j] = rots[j]


def com_frames_rows(
    robot: Robot,
    Q: Array,
    rows: Iterable[int],
    frame_ids: Sequence[int],
    com: Array,
    positions: Array,
) -> None:
    """CoM and frame origins of the listed configurations (``centerOfMass``, which places the
    joints, then each frame; no velocities).

    Parameters
    ----------
    com : ndarray, shape (N, 3)
        Out: centre of mass, world [m].
    positions : ndarray, shape (N, len(frame_ids), 3)
        Out: frame origins, world [m].
    """
    model, data = robot.model, robot.data
    ids = robot._check_frame_ids(frame_ids)
    for i in rows:
        com[i] = pin.centerOfMass(model, data, Q[i], False)
        for c, fid in enumerate(ids):
            positions[i, c] = _update_frame(model, data, fid).translation


def centroidal_map_rows(
    robot: Robot,
    Q: Array,
    rows: Samples,
    frame_ids: Sequence[int],
) -> tuple[Array, Array, Array]:
    """The centroidal momentum map ``A_G(q)`` (``h_G = A_G v``, world axes at the CoM), the
    CoM and the frames' origins of the listed configurations.

    Returns
    -------
    Ag : ndarray, shape (len(rows), 6, nv)
        ``A_G``, rows ``(linear, angular)`` [kg, kg m^2 per unit of v].
    com : ndarray, shape (len(rows), 3)
        World [m].
    positions : ndarray, shape (len(rows), len(frame_ids), 3)
        Frame origins, world [m].
    """
    model, data = robot.model, robot.data
    ids = robot._check_frame_ids(frame_ids)
    n = len(rows)
    Ag = np.empty((n, 6, model.nv))
    com = np.empty((n, 3))
    positions = np.empty((n, len(ids), 3))
    for r, i in enumerate(rows):
        Ag[r] = pin.computeCentroidalMap(model, data, Q[i])
        pin.updateFramePlacements(model, data)
        com[r] = data.com[0]
        for c, fid in enumerate(ids):
            positions[r, c] = data.oMf[fid].translation
    return Ag, com, positions


def frame_placements_rows(
    robot: Robot,
    Q: Array,
    rows: Iterable[int],
    frame_ids: Sequence[int],
    positions: Array | None = None,
    rotations: Array | None = None,
) -> None:
    """Frame origins and world-from-frame rotations of the listed configurations (forward
    kinematics, then each frame).

    Parameters
    ----------
    positions : ndarray, shape (N, len(frame_ids), 3), optional
        Out: frame origins, world [m].
    rotations : ndarray, shape (N, len(frame_ids), 3, 3), optional
        Out: rotations, world from frame.
    """
    model, data = robot.model, robot.data
    ids = list(enumerate(robot._check_frame_ids(frame_ids)))
    for i in rows:
        pin.forwardKinematics(model, data, Q[i])
        for j, fid in ids:
            placement = _update_frame(model, data, fid)
            if positions is not None:
                positions[i, j] = placement.translation
            if rotations is not None:
                rotations[i, j] = placement.rotation


def frame_motions_rows(
    robot: Robot, Q: Array, V: Array, A: Array, frame_ids: Sequence[int]
) -> tuple[Array, Array]:
    """The frames' origins and the classical accelerations of those origins, every sample.

    Returns
    -------
    positions : ndarray, shape (n, len(frame_ids), 3)
        World [m].
    accelerations : ndarray, shape (n, len(frame_ids), 3)
        Classical (not spatial) accelerations of the origins, world axes [m/s^2].
    """
    model, data = robot.model, robot.data
    ids = robot._check_frame_ids(frame_ids)
    n, k = len(Q), len(ids)
    positions, accelerations = np.empty((n, k, 3)), np.empty((n, k, 3))
    for s in range(n):
        pin.forwardKinematics(model, data, Q[s], V[s], A[s])
        for c, fid in enumerate(ids):
            _update_frame(model, data, fid)
            positions[s, c] = data.oMf[fid].translation
            accelerations[s, c] = pin.getFrameClassicalAcceleration(model, data, fid, _LWA).linear
    return positions, accelerations


def joint_motions_rows(
    robot: Robot, Q: Array, V: Array, A: Array, joint_ids: Sequence[int]
) -> tuple[Array, Array, Array, Array, Array]:
    """The joint frames' (the links') origins, rotations, the classical accelerations of the
    origins and the angular velocities and accelerations, every sample; ``joint_ids`` in
    ``[1, njoints)``.

    Returns
    -------
    origins : ndarray, shape (n, m, 3)
        World [m].
    rotations : ndarray, shape (n, m, 3, 3)
        World from joint frame.
    accelerations : ndarray, shape (n, m, 3)
        Classical accelerations of the origins [m/s^2].
    omega, alpha : ndarray, shape (n, m, 3)
        Angular velocities [rad/s] and accelerations [rad/s^2].
    """
    model, data = robot.model, robot.data
    n, m = len(Q), len(joint_ids)
    origins, rotations = np.empty((n, m, 3)), np.empty((n, m, 3, 3))
    accelerations, omega, alpha = np.empty((n, m, 3)), np.empty((n, m, 3)), np.empty((n, m, 3))
    for s in range(n):
        pin.forwardKinematics(model, data, Q[s], V[s], A[s])
        for c, j in enumerate(joint_ids):
            origins[s, c] = data.oMi[j].translation
            rotations[s, c] = data.oMi[j].rotation
            accelerations[s, c] = pin.getClassicalAcceleration(model, data, j, _LWA).linear
            omega[s, c] = pin.getVelocity(model, data, j, _LWA).angular
            alpha[s, c] = pin.getAcceleration(model, data, j, _LWA).angular
    return origins, rotations, accelerations, omega, alpha


def regressor_frames_rows(
    robot: Robot,
    Q: Array,
    V: Array,
    A: Array,
    rows: Samples,
    frame_ids: Sequence[int],
    *,
    dofs: int,
    n_rotations: int = 0,
    out: tuple[Array, Array, Array] | None = None,
) -> tuple[Array, Array, Array]:
    """The joint-torque regressor, the frames' Jacobians and rotations of the listed samples
    (identification).

    .. math::

        \\tau = Y(q, v, a)\\,\\pi

    with ``pi`` the 10 inertial parameters of every joint's body (Pinocchio's order:
    ``m, m c, I`` about the joint origin).

    Parameters
    ----------
    dofs : int, keyword-only
        The velocity coordinates kept: the regressor's first ``dofs`` rows and the
        Jacobians' first ``dofs`` columns (6: a floating base's rows; nv: all).
    n_rotations : int, keyword-only
        The rotations of the first ``n_rotations`` frames.
    out : tuple of ndarray, optional
        ``(Y, J, R)`` of the shapes below to write into (buffers reused from chunk to chunk:
        no fresh pages per chunk); returned.

    Returns
    -------
    Y : ndarray, shape (len(rows), dofs, 10 (njoints - 1))
        Regressor rows [N or N m per unit of parameter].
    J : ndarray, shape (len(rows), len(frame_ids), 6, dofs)
        ``LOCAL_WORLD_ALIGNED`` frame Jacobians, rows ``(v, omega)``.
    R : ndarray, shape (len(rows), n_rotations, 3, 3)
        World-from-frame rotations.
    """
    model, data = robot.model, robot.data
    ids = robot._check_frame_ids(frame_ids)
    n = len(rows)
    shapes = ((n, dofs, 10 * (model.njoints - 1)), (n, len(ids), 6, dofs), (n, n_rotations, 3, 3))
    if out is None:
        Y, J, R = (np.empty(shape) for shape in shapes)
    else:
        if tuple(a.shape for a in out) != shapes:
            raise InvalidArgumentError(
                f"out: arrays of shapes {shapes} expected, got {tuple(a.shape for a in out)}"
            )
        Y, J, R = out
    for s, i in enumerate(rows):
        q = Q[i]
        Y[s] = pin.computeJointTorqueRegressor(model, data, q, V[i], A[i])[:dofs]
        pin.computeJointJacobians(model, data, q)  # also places the joints
        for f, fid in enumerate(ids):
            J[s, f] = pin.getFrameJacobian(model, data, fid, _LWA)[:, :dofs]
            if f < n_rotations:
                R[s, f] = _update_frame(model, data, fid).rotation
    return Y, J, R


class LiveFrames:
    """One sample's CoM, momentum rate and frame placements, read through views of a robot's
    ``Data`` made once: the pass of the one-sample estimate.

    Parameters
    ----------
    robot : Robot
    frame_ids : sequence of int
        Frame indices in ``[0, nframes)``.

    Attributes
    ----------
    com : ndarray, shape (3,)
        A live view: the CoM of the last pass, world [m] (copy it to keep it).
    rate : ndarray, shape (6,)
        A live view: ``(dP/dt, dL_G/dt)`` of the last pass, world axes [N, N m].
    """

    __slots__ = ("model", "data", "com", "rate", "frames")

    def __init__(self, robot: Robot, frame_ids: Sequence[int]):
        model, data = robot.model, robot.data
        ids = robot._check_frame_ids(frame_ids)
        self.model, self.data = model, data
        self.com = data.com[0]
        self.rate = data.dhg.vector
        placed = [data.oMf[f] for f in ids]
        self.frames = [
            (j, f, p.translation, p.rotation) for j, (f, p) in enumerate(zip(ids, placed))
        ]

    def current(self, robot: Robot) -> bool:
        """Whether the views are of the robot's current model and data (a frame added copies
        them: the views are then made again)."""
        return self.data is robot.data and self.model is robot.model

    def centroidal_pass(
        self, q: Array, v: Array, a: Array, positions: Array, rotations: Array
    ) -> None:
        """One pass (``computeCentroidalMomentumTimeVariation``, then each frame) on a checked
        state: :attr:`com` and :attr:`rate` are updated, the frames' origins (k, 3) and
        rotations (k, 3, 3) written into ``positions`` and ``rotations``."""
        model, data = self.model, self.data
        _momentum_rate(model, data, q, v, a)
        for j, fid, translation, rotation in self.frames:
            _update_frame(model, data, fid)
            positions[j] = translation
            rotations[j] = rotation


# --- the configuration difference on the manifold, vectorised -------------------------------

Rows = tuple[Array, ...]


def _normalized(x: Array, y: Array, z: Array, w: Array) -> Rows:
    n = np.sqrt(x * x + y * y + z * z + w * w)
    return x / n, y / n, z / n, w / n


def _relative_log(a: Rows, b: Rows) -> tuple[Rows, Array]:
    """Rotation vectors of ``conj(q_a) q_b`` (components x, y, z of N-long arrays) and their
    angle, for unit quaternions x-y-z-w given by components; the shorter way round."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    rx = aw * bx - ax * bw - ay * bz + az * by
    ry = aw * by + ax * bz - ay * bw - az * bx
    rz = aw * bz - ax * by + ay * bx - az * bw
    rw = aw * bw + ax * bx + ay * by + az * bz
    # q and -q are the same rotation; atan2 is accurate for tiny s, so angle / s only needs
    # s > 0 (the limit is 2 / |w|).
    s = np.sqrt(rx * rx + ry * ry + rz * rz)
    angle = 2.0 * np.arctan2(s, np.abs(rw))
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(s > 0, angle / np.where(s > 0, s, 1.0), 2.0 / np.abs(rw))
    scale = np.where(rw < 0, -scale, scale)
    return (scale * rx, scale * ry, scale * rz), angle


def _cross(a: Rows, b: Rows) -> tuple[Array, Array, Array]:
    """Cross products of vectors given by their component arrays."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _free_flyer_rows(a: Array, b: Array, out: Array) -> None:
    """SE(3) log of ``M_a^{-1} M_b`` for free-flyer blocks given as rows ``[p, quat x-y-z-w]``
    (7, N), written into ``out`` (6, N): component by component, no (N, 3, 3) temporaries."""
    qa = _normalized(a[3], a[4], a[5], a[6])
    qb = _normalized(b[3], b[4], b[5], b[6])
    omega, angle = _relative_log(qa, qb)
    ax, ay, az, aw = qa
    # R_a^T (p_b - p_a), base axes: rotate by conj(q_a) = (e, w) with e = -xyz_a:
    # u + w t + e x t, t = 2 e x u.
    u = (b[0] - a[0], b[1] - a[1], b[2] - a[2])
    e = (-ax, -ay, -az)
    t2 = tuple(2.0 * c for c in _cross(e, u))
    ext = _cross(e, t2)
    dp = tuple(u[i] + aw * t2[i] + ext[i] for i in range(3))
    # SE(3) log: translation part is V(omega)^{-1} dp with V^{-1} = I - W/2 + c W^2,
    # W = skew(omega), c = (1 - (t/2) cot(t/2)) / t^2 (a series below 1e-3, error t^4 / 30240).
    th = np.abs(angle)
    small = th < 1e-3
    ts = np.where(small, 1.0, th)
    half = 0.5 * ts
    coef = np.where(
        small,
        1.0 / 12.0 + th * th / 720.0,
        (1.0 - half * np.cos(half) / np.sin(half)) / (ts * ts),
    )
    wxd = _cross(omega, dp)
    wxwxd = _cross(omega, wxd)
    for i in range(3):
        out[i] = dp[i] - 0.5 * wxd[i] + coef * wxwxd[i]
        out[3 + i] = omega[i]


def _difference_rows(model: pin.Model, A: Array, B: Array) -> Array:
    """The tangents from ``A[:, i]`` to ``B[:, i]``, configurations as rows (nq, N): (nv, N).
    Each row of ``A`` and ``B`` must be contiguous (a row slice of a C-contiguous array)."""
    N = A.shape[1]
    out = np.empty((model.nv, N))
    for j in range(1, model.njoints):
        joint = model.joints[j]
        iq, iv, nq, nv = joint.idx_q, joint.idx_v, joint.nq, joint.nv
        name = joint.shortname()
        a, b = A[iq : iq + nq], B[iq : iq + nq]
        if nq == 1 and nv == 1:  # revolute, prismatic
            np.subtract(b[0], a[0], out=out[iv])
        elif name.startswith("JointModelRUB") or (nq == 2 and nv == 1):  # (cos, sin)
            c0, s0, c1, s1 = a[0], a[1], b[0], b[1]
            out[iv] = np.arctan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
        elif name == "JointModelFreeFlyer":
            _free_flyer_rows(a, b, out[iv : iv + 6])
        elif name == "JointModelSpherical":
            omega, _ = _relative_log(_normalized(*a), _normalized(*b))
            out[iv : iv + 3] = omega
        else:  # planar, composite, ...: Pinocchio, sample by sample
            for i in range(N):
                d = pin.difference(
                    model, np.ascontiguousarray(A[:, i]), np.ascontiguousarray(B[:, i])
                )
                out[iv : iv + nv, i] = d[iv : iv + nv]
    return out


def configuration_difference(robot: object, Q0: Array, Q1: Array) -> Array:
    """``pin.difference(model, Q0[i], Q1[i])`` for every row, vectorised in numpy.

    The tangent ``d`` with ``Q1 = integrate(Q0, d)``, in Pinocchio's joint conventions:

    - free flyer: the SE(3) log of ``M0^{-1} M1``: ``(V^{-1}(omega) R0^T (p1 - p0), omega)``
      with ``omega = log(R0^T R1)`` from the quaternion of the relative rotation (the
      shorter way round), both in the base frame (``V``: SO(3)'s left Jacobian);
    - revolute, prismatic, and other one-dof joints with ``nq == nv == 1``: ``q1 - q0``;
    - continuous (unbounded revolute, ``nq = 2``, ``(cos, sin)``):
      ``atan2(c0 s1 - s0 c1, c0 c1 + s0 s1)``;
    - spherical joints: the SO(3) log; planar and other joints fall back to Pinocchio,
      sample by sample.

    Parameters
    ----------
    robot : Robot
    Q0, Q1 : ndarray, shape (N, nq)

    Returns
    -------
    ndarray, shape (N, nv)
    """
    model = robot.model  # type: ignore[attr-defined]
    A = np.ascontiguousarray(np.asarray(Q0, dtype=float).T)
    B = np.ascontiguousarray(np.asarray(Q1, dtype=float).T)
    return _difference_rows(model, A, B).T


def consecutive_differences(robot: object, Q: Array) -> Array:
    """``pin.difference(model, Q[i], Q[i + 1])`` for ``i < N - 1``, as rows: shape
    (nv, N - 1) (one velocity coordinate per contiguous row, the layout of per-column
    statistics). See :func:`configuration_difference`."""
    QT = np.ascontiguousarray(np.asarray(Q, dtype=float).T)
    return _difference_rows(robot.model, QT[:, :-1], QT[:, 1:])  # type: ignore[attr-defined]
