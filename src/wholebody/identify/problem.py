"""The identification problem: the parameters' map to Pinocchio's dynamic parameters and
the sensor parameters (``x(theta)`` and its derivative), the logs' usable samples, and each
sample's features (``r = F x`` is the residual of its rows)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pinocchio as pin
from numpy.typing import NDArray

from ..contacts import Contact
from ..errors import InvalidArgumentError, LogFormatError
from ..robot.core import Robot
from ..trajectory import Trajectory
from .calibrate import Calibration, ContactCalibration, SensorModel
from .links import LinkInertia, link_parameters
from .parameters import Param

__all__ = [
    "Problem",
    "PreparedLog",
    "prepare_logs",
    "features",
    "row_groups",
    "fitted_calibration",
]

Array = NDArray[np.float64]


# --- the problem --------------------------------------------------------------------------------


class Problem:
    """Parameters, their map to ``x = (pi, sensor parameters, 1)`` and its derivative."""

    def __init__(
        self,
        robot: Robot,
        links: list[LinkInertia],
        mass_groups: list[tuple[str, list[int]]],
        com_links: list[int],
        contacts: list[Contact],
        sensors: SensorModel | None,
        use_torques: bool,
        prior_std: Mapping[str, float],
    ):
        self.robot, self.links = robot, links
        self.mass_groups, self.com_links = mass_groups, com_links
        self.contacts = contacts
        nb = robot.model.njoints - 1
        self.n_pi = 10 * nb
        params: list[Param] = []
        for gname, _ in mass_groups:
            params.append(Param(f"{gname}.mass", "mass", gname, "kg", prior_std["mass"]))
        for i in com_links:
            for a, ax in enumerate("xyz"):
                params.append(
                    Param(
                        f"{links[i].name}.com_{ax}", "com", links[i].name, "m", prior_std["com"], a
                    )
                )
        self.n_inertial = len(params)
        names = [c.name for c in contacts]
        self.sensor_axes: dict[str, str] = {}
        if sensors is not None:
            for n in sensors.contacts_for("offsets", names):
                self.sensor_axes[n] = sensors.axes_of(n)
                for a, ax in enumerate("xyz"):
                    params.append(
                        Param(
                            f"{n}.force_offset_{ax}",
                            "force_offset",
                            n,
                            "N",
                            prior_std["force_offset"],
                            a,
                        )
                    )
                for a, ax in enumerate("xyz"):
                    params.append(
                        Param(
                            f"{n}.moment_offset_{ax}",
                            "moment_offset",
                            n,
                            "N m",
                            prior_std["moment_offset"],
                            a,
                        )
                    )
            for n in sensors.contacts_for("gains", names):
                params.append(Param(f"{n}.gain", "gain", n, "", prior_std["gain"]))
            for n in sensors.contacts_for("rotations", names):
                self.sensor_axes[n] = sensors.axes_of(n)
                for a, ax in enumerate("xyz"):
                    params.append(
                        Param(f"{n}.rotation_{ax}", "rotation", n, "rad", prior_std["rotation"], a)
                    )
            if sensors.torque_offsets is not False:
                if not use_torques:
                    raise InvalidArgumentError(
                        "torque offsets need joint torques: the logs have none, or "
                        "use_torques=False"
                    )
                joints = (
                    robot.joint_names
                    if sensors.torque_offsets is True
                    else list(sensors.torque_offsets)
                )
                unknown = [j for j in joints if j not in robot.joint_names]
                if unknown:
                    raise InvalidArgumentError(f"torque offsets for unknown joints {unknown}")
                for j in joints:
                    params.append(
                        Param(
                            f"{j}.torque_offset",
                            "torque_offset",
                            j,
                            "N m",
                            prior_std["torque_offset"],
                        )
                    )
        self.params = params
        self.p = len(params)
        self.sigma = np.array([p.prior_std for p in params])
        # Links touched by inertial parameters, and the fixed rest of pi.
        touched = sorted({i for _, ids in mass_groups for i in ids} | set(com_links))
        self.touched = touched
        self.link_group = {i: g for g, (_, ids) in enumerate(mass_groups) for i in ids}
        self.link_com = {i: len(mass_groups) + 3 * k for k, i in enumerate(com_links)}
        model = robot.model
        pi0 = np.concatenate(
            [model.inertias[j].toDynamicParameters() for j in range(1, model.njoints)]
        )
        self.pi_fixed = pi0.copy()
        for i in touched:
            lk = links[i]
            self.pi_fixed[10 * (lk.joint - 1) : 10 * lk.joint] -= lk.transform @ link_parameters(
                lk.mass, lk.com, lk.inertia_com
            )

    @property
    def n_columns(self) -> int:
        return self.n_pi + (self.p - self.n_inertial) + 1

    def link_state(self, theta: Array, i: int) -> tuple[float, Array, Array]:
        """Mass, CoM (link axes) and inertia about the CoM of link ``i`` at ``theta``."""
        lk = self.links[i]
        scale = math.exp(theta[self.link_group[i]]) if i in self.link_group else 1.0
        com = lk.com + (
            theta[self.link_com[i] : self.link_com[i] + 3] if i in self.link_com else 0.0
        )
        return lk.mass * scale, com, lk.inertia_com * scale

    def x_and_derivative(self, theta: Array) -> tuple[Array, Array]:
        """``x(theta)`` (C,) and ``dx/dtheta`` (C, p)."""
        C, ni = self.n_columns, self.n_inertial
        x = np.zeros(C)
        D = np.zeros((C, self.p))
        x[: self.n_pi] = self.pi_fixed
        for i in self.touched:
            lk = self.links[i]
            m, c, inertia_c = self.link_state(theta, i)
            pi_l = link_parameters(m, c, inertia_c)
            rows = slice(10 * (lk.joint - 1), 10 * lk.joint)
            x[rows] += lk.transform @ pi_l
            if i in self.link_group:
                D[rows, self.link_group[i]] += lk.transform @ pi_l
            if i in self.link_com:
                for k in range(3):
                    e = np.zeros(3)
                    e[k] = 1.0
                    dI = m * (2 * c[k] * np.eye(3) - np.outer(e, c) - np.outer(c, e))
                    d = np.array(
                        [0.0, *(m * e), dI[0, 0], dI[0, 1], dI[1, 1], dI[0, 2], dI[1, 2], dI[2, 2]]
                    )
                    D[rows, self.link_com[i] + k] += lk.transform @ d
        x[self.n_pi : C - 1] = theta[ni:]
        D[self.n_pi : C - 1, ni:] = np.eye(self.p - ni)
        x[-1] = 1.0
        return x, D


# --- per-sample features ----------------------------------------------------------------------


@dataclass
class PreparedLog:
    """The usable samples of one log, in the robot's joint order: ``q`` (N, nq), ``v`` and
    ``a`` (N, nv), ``tau`` (N, nv - 6) or None, contact wrenches ``W`` (N, k, 6) and external
    wrenches ``E`` (N, e, 6) or None (world axes at their frames' origins, [N, N m])."""

    q: Array
    v: Array
    a: Array
    tau: Array | None
    W: Array
    E: Array | None
    ext_frames: tuple[str, ...]
    contact_order: list[int]  # problem contact index -> log column
    source: str
    n_bad: int


def prepare_logs(
    robot: Robot, logs: Sequence[Trajectory], contacts: list[Contact], use_torques: bool
) -> list[PreparedLog]:
    """Check the logs against ``contacts`` and keep their usable samples (accelerations by
    central differences where a log has none; samples flagged non-finite or invalid left out).

    Raises
    ------
    LogFormatError
        A log whose contacts do not match ``contacts``, or without torques when asked.
    """
    out = []
    names = [c.name for c in contacts]
    for traj in logs:
        traj = traj.at_frame_origins(robot, contacts)  # wrenches stated at other points
        missing = [n for n in names if n not in traj.contact_names]
        if missing:
            raise LogFormatError(
                f"{traj.source}: contacts {missing} have no wrenches in the log; "
                f"logged: {list(traj.contact_names)}"
            )
        undeclared = [n for n in traj.contact_names if n not in names]
        if undeclared:
            raise LogFormatError(
                f"{traj.source}: the log has contacts {undeclared} that are not declared; "
                f"declared: {names}"
            )
        if traj.a is None:
            traj = traj.with_accelerations()
        q, v, a, tau = traj.for_robot(robot)
        if use_torques and tau is None:
            raise LogFormatError(f"{traj.source}: use_torques=True but the log has no torques")
        assert a is not None  # with_accelerations above
        arrays: dict[str, Array] = {"q": q, "v": v, "a": a}
        if tau is not None and use_torques:
            arrays["tau"] = np.concatenate([np.zeros((len(q), 6)), tau], axis=1)
        checked, flagged, _ = robot.check_batch(**arrays)
        W, E = traj.contact_wrenches, traj.external_wrenches
        bad: NDArray[np.bool_] = np.asarray(flagged, dtype=bool)
        bad = bad | ~np.isfinite(W).reshape(len(q), -1).all(axis=1)
        if E is not None:
            bad = bad | ~np.isfinite(E).reshape(len(q), -1).all(axis=1)
        ok = ~bad
        out.append(
            PreparedLog(
                checked["q"][ok],
                checked["v"][ok],
                checked["a"][ok],
                None if tau is None or not use_torques else tau[ok],
                W[ok],
                None if E is None else E[ok],
                traj.external_frames,
                [traj.contact_names.index(n) for n in names],
                traj.source,
                int(bad.sum()),
            )
        )
    return out


def features(problem: Problem, log: PreparedLog, start: int, stop: int, rows: int) -> Array:
    """``F`` (n, rows, C) of samples ``start:stop``: ``r = F x`` is the residual of each row."""
    robot = problem.robot
    model, data = robot.model, robot.model.createData()
    contacts = problem.contacts
    frame_ids = [robot.frame_id(c.frame) for c in contacts] + [
        robot.frame_id(f) for f in log.ext_frames
    ]
    n, k = stop - start, len(contacts)
    nf = len(frame_ids)
    Y = np.empty((n, rows, problem.n_pi))
    J = np.empty((n, nf, 6, rows))
    Rot = np.empty((n, k, 3, 3))
    for s in range(n):
        i = start + s
        q = log.q[i]
        Y[s] = pin.computeJointTorqueRegressor(model, data, q, log.v[i], log.a[i])[:rows]
        pin.computeJointJacobians(model, data, q)
        for f, fid in enumerate(frame_ids):
            J[s, f] = pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED)[:, :rows]
            if f < k:
                Rot[s, f] = pin.updateFramePlacement(model, data, fid).rotation
    W = log.W[start:stop][:, log.contact_order]
    JT = np.swapaxes(J, 2, 3)  # (n, nf, rows, 6)
    b = np.einsum("nkrs,nks->nr", JT[:, :k], W)
    if log.E is not None:
        b += np.einsum("nkrs,nks->nr", JT[:, k:], log.E[start:stop])
    if rows > 6 and log.tau is not None:
        b[:, 6:] += log.tau[start:stop]
    cols = []
    names = [c.name for c in contacts]
    for p in problem.params[problem.n_inertial :]:
        if p.kind == "torque_offset":
            col = np.zeros((n, rows))
            col[:, model.joints[robot.joint_id(p.target)].idx_v] = 1.0
            cols.append(col)
            continue
        j = names.index(p.target)
        world = problem.sensor_axes.get(p.target) == "world"
        axis = np.zeros(3)
        axis[p.axis] = 1.0
        direction = np.broadcast_to(axis, (n, 3)) if world else Rot[:, j, :, p.axis]
        w6 = np.zeros((n, 6))
        if p.kind == "force_offset":
            w6[:, :3] = direction
        elif p.kind == "moment_offset":
            w6[:, 3:] = direction
        elif p.kind == "gain":
            w6 = -W[:, j]
        else:  # rotation: w_true gains (R delta) x w, so r gains -J^T (dir x w)... sign below
            w6[:, :3] = -np.cross(direction, W[:, j, :3])
            w6[:, 3:] = -np.cross(direction, W[:, j, 3:])
        cols.append(np.einsum("nrs,ns->nr", JT[:, j], w6))
    F = np.empty((n, rows, problem.n_columns))
    F[:, :, : problem.n_pi] = Y
    for c, col in enumerate(cols):
        F[:, :, problem.n_pi + c] = col
    F[:, :, -1] = -b
    return F


def row_groups(rows: int) -> list[tuple[str, slice]]:
    """The row groups (base ``force``, base ``moment``, joint ``torque``) of ``rows`` rows."""
    return [("force", slice(0, 3)), ("moment", slice(3, 6))] + (
        [("torque", slice(6, rows))] if rows > 6 else []
    )


def fitted_calibration(problem: Problem, theta: Array) -> Calibration:
    """The sensor :class:`~wholebody.calibrate.Calibration` of the parameters ``theta`` (p,)."""
    contacts: dict[str, dict[str, Any]] = {}
    torques: dict[str, float] = {}
    for k, p in enumerate(problem.params[problem.n_inertial :], start=problem.n_inertial):
        if p.kind == "torque_offset":
            torques[p.target] = float(theta[k])
            continue
        entry = contacts.setdefault(
            p.target,
            {
                "force_offset": np.zeros(3),
                "moment_offset": np.zeros(3),
                "gain": 0.0,
                "rotation": np.zeros(3),
            },
        )
        if p.kind == "gain":
            entry["gain"] = float(theta[k])
        else:
            entry[p.kind][p.axis] = theta[k]
    frames = {c.name: c.frame for c in problem.contacts if c.name in contacts}
    return Calibration(
        {
            n: ContactCalibration(**e, axes=problem.sensor_axes.get(n, "contact"))
            for n, e in contacts.items()
        },
        torques,
        frames,
    )
