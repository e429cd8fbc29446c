"""Causes in the frames of the log: a force sensor whose axes are turned against its contact
frame (mounted a few degrees off), and gravity not along the log's vertical (the ground, or
the log's world frame, tilted). Both fitted, each angle with its standard error.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.transform import Rotation

from .core import (
    DiagnosisData,
    Finding,
    finding_of,
    format_names,
    format_value,
    format_vector,
    skew_batch,
)

__all__ = ["sensor_rotations", "gravity_tilt", "MAX_SENSOR_ANGLE", "MAX_TILT"]

Array = NDArray[np.float64]

#: A fitted sensor rotation beyond this [rad] is no mounting error (an axis convention: its
#: own cause).
MAX_SENSOR_ANGLE = np.deg2rad(45.0)
#: A fitted tilt of gravity beyond this [rad] is no tilted ground.
MAX_TILT = np.deg2rad(30.0)
#: Gauss-Newton iterations of the sensor rotations (each step is exact to first order).
_ITERATIONS = 6


def _rotated(d: DiagnosisData, E: Array) -> Array:
    """The wrenches (S, k, 6) read by sensors turned by ``E`` (k, 3, 3) in their contact
    frames, brought back: ``R E R^T w`` for force and moment."""
    local = d.local(d.wrenches)
    turned = np.concatenate(
        [
            np.einsum("kij,skj->ski", E, local[..., :3]),
            np.einsum("kij,skj->ski", E, local[..., 3:]),
        ],
        axis=2,
    )
    return d.world(turned)


def _fit_rotations(d: DiagnosisData, which: list[int]) -> tuple[Array, Array, Array]:
    """Rotations ``E`` (k, 3, 3) of the sensors ``which`` fitted by Gauss-Newton on the
    residual (the others identity), their rotation vectors (len(which), 3) and standard
    errors [rad]. Refitted on training windows, it starts from the fit on the whole log."""
    key = ("sensor_rotation", tuple(which))
    E = np.broadcast_to(np.eye(3), (d.k, 3, 3)).copy()
    if d.train is not None and key in d.cache:
        E = d.cache[key].copy()
    se = np.full((len(which), 3), np.nan)
    lever = d.positions - d.com[:, None]
    for _ in range(_ITERATIONS):
        W = _rotated(d, E)
        r = d.residual(W)
        local = d.local(W)  # u = R^T w, after the current rotation
        D = np.zeros((len(d.time), 6, 3 * len(which)))
        for c, j in enumerate(which):
            R = d.rotations[:, j]
            # d(R exp([delta]) R^T w) = -R [u] delta with u = R^T w (the current wrench).
            df = -R @ skew_batch(local[:, j, :3])
            dm = -R @ skew_batch(local[:, j, 3:])
            D[:, :3, 3 * c : 3 * c + 3] = df
            D[:, 3:, 3 * c : 3 * c + 3] = dm + skew_batch(lever[:, j]) @ df
        # A yaw seen only in small tangential forces is still determined: a low cut.
        fit = d.fit(r, D, d.all_rows, rtol=1e-6)
        step = fit.theta.reshape(len(which), 3)
        se = fit.std_error.reshape(len(which), 3)
        for c, j in enumerate(which):
            E[j] = Rotation.from_rotvec(step[c]).as_matrix() @ E[j]
        if np.abs(step).max(initial=0.0) < 1e-9:  # [rad]
            break
    if d.train is None:
        d.cache[key] = E.copy()
    vectors = np.array([Rotation.from_matrix(E[j]).as_rotvec() for j in which])
    return E, vectors, se


def sensor_rotations(d: DiagnosisData) -> list[Finding]:
    """A force sensor whose axes are turned against its contact frame: its wrench (force
    and moment about the contact origin) is logged in the turned axes as if in the contact's.
    Fitted for all contacts together (3 angles each) and for each alone (3 angles)."""
    if not d.k or len(d.time) < 3:
        return []
    variants = [list(range(d.k))] + ([[j] for j in range(d.k)] if d.k > 1 else [])
    out = []
    for which in variants:
        E, vectors, se = _fit_rotations(d, which)
        names = [d.names[j] for j in which]
        angles = np.linalg.norm(vectors, axis=1)
        if not np.all(np.isfinite(angles)) or angles.max(initial=0.0) > MAX_SENSOR_ANGLE:
            out.append(
                Finding(
                    "sensor_rotation",
                    0.0,
                    f"fitted sensor rotations of "
                    f"{format_vector(angles, 'degrees', np.rad2deg(1.0))} ({format_names(names)}) "
                    f"are beyond {np.rad2deg(MAX_SENSOR_ANGLE):.0f}: not a mounting error",
                    {"contacts": names},
                )
            )
            continue
        parts = []
        for name, vec, err in zip(names, vectors, se, strict=True):
            words = ", ".join(
                f"{axis} {format_value(v, e, '', np.rad2deg(1.0), 2).strip()}"
                for axis, v, e in zip(("roll", "pitch", "yaw"), vec, err, strict=True)
            )
            parts.append(f"{name!r} ({words}) degrees")
        out.append(
            finding_of(
                d,
                "sensor_rotation",
                d.hypothesis(_rotated(d, E)),
                "the force-torque readings are in axes turned against the contact frame (a "
                "sensor mounted off its nominal orientation; rotation vector in the contact's "
                f"axes): {'; '.join(parts)}",
                n_parameters=3 * len(which),
                uncertainty={"rotation_vectors": se.tolist()},
                contacts=names,
                rotation_vectors=vectors.tolist(),
                angles_degrees=np.rad2deg(vectors).tolist(),
            )
        )
    return out


def gravity_tilt(d: DiagnosisData) -> list[Finding]:
    """Gravity along another direction than the log's vertical, of the same size: the
    ground (or the log's world frame) tilted. Gravity acts at the CoM, so the residual
    changes by ``m (g' - g)`` in force and not at all in moment about the CoM; ``g'`` of
    least squares on the sphere ``|g'| = |g|`` is along ``m g - mean(f_r)``."""
    g = np.asarray(d.gravity, dtype=float)
    size = float(np.linalg.norm(g))
    rows = d.training(d.all_rows)
    if size <= 0 or not len(rows):
        return []
    mean_force = np.nanmean(d.smoothed(d.base_residual)[rows, :3], axis=0)
    target = d.mass * g - mean_force
    if not np.all(np.isfinite(target)) or np.linalg.norm(target) <= 0:
        return []
    tilted = size * target / np.linalg.norm(target)
    axis = np.cross(g, tilted)
    angle = float(np.arctan2(np.linalg.norm(axis), g @ tilted))
    if angle > MAX_TILT:
        return [
            Finding(
                "gravity_tilt",
                0.0,
                f"a fitted tilt of gravity of {np.rad2deg(angle):.1f} degrees is beyond "
                f"{np.rad2deg(MAX_TILT):.0f}: not a tilted ground",
                {"tilt_degrees": float(np.rad2deg(angle))},
            )
        ]
    vector = axis / max(float(np.linalg.norm(axis)), 1e-300) * angle
    # Standard errors from the linearised fit (rotation delta: d(m g') = -m [g] delta); the
    # component along g changes nothing and is unobservable.
    D = np.zeros((len(d.time), 6, 3))
    D[:, :3, :] = -d.mass * skew_batch(np.broadcast_to(tilted, (len(d.time), 3)))
    se = d.fit(d.base_residual + _force(d, tilted - g), D, d.all_rows).std_error
    corrected = d.base_residual + _force(d, tilted - g)
    horizontal = d.mass * np.linalg.norm(tilted - g)
    about = ", ".join(
        f"about {axis_name} {format_value(v, e, '', np.rad2deg(1.0), 2).strip()}"
        for axis_name, v, e in zip("xy", vector[:2], se[:2], strict=True)
    )
    total_se = float(np.sqrt(np.nansum(se[:2] ** 2)))
    return [
        finding_of(
            d,
            "gravity_tilt",
            corrected,
            "gravity is not along the log's vertical: tilted by "
            f"{format_value(angle, total_se, 'degrees', np.rad2deg(1.0), 2)} ({about} degrees, "
            "world axes): the ground, or the log's world frame, is tilted (a constant force "
            f"of {horizontal:.3g} N through the CoM would look the same)",
            n_parameters=2,
            uncertainty={"tilt_vector": se.tolist(), "tilt_degrees": float(np.rad2deg(total_se))},
            tilt_vector=vector.tolist(),
            tilt_degrees=float(np.rad2deg(angle)),
            gravity=tilted.tolist(),
        )
    ]


def _force(d: DiagnosisData, df: Array) -> Array:
    """(S, 6): ``m df`` in force, nothing in moment (a force through the CoM)."""
    out = np.zeros((len(d.time), 6))
    out[:, :3] = d.mass * df
    return out
