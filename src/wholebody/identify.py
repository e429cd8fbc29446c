"""Identification from logs: corrections to links' masses and centres of mass, and sensor
calibrations, fitted to the logged motion and contact wrenches.

The equations of motion are linear in the bodies' dynamic parameters ``pi`` (Pinocchio's
joint-torque regressor ``Y``, ``pin.computeJointTorqueRegressor``):

.. math::

    Y(q, v, a)\\, \\pi = S^T \\tau + \\sum_i J_i^T w_i

Its first six rows (the floating base) need no torques: the contact wrenches alone must
supply them. Stacked over every sample of every log, they identify what the motion excites;
with joint torques every row is used. The unknowns ``theta`` are *corrections* to the URDF:

* per link (or per group of links) a mass scale ``m = m_0 e^s`` (the link's density: its
  rotational inertia scales with it), so masses stay positive;
* per link a CoM shift ``c = c_0 + d`` in link axes, with the rotational inertia about the
  CoM kept, so the inertia stays physically realisable;
* sensor parameters (:mod:`wholebody.calibrate`): offsets, gains, mount rotations, joint-torque
  offsets, which enter the right-hand side linearly.

The fit minimises, over ``theta`` (Gauss-Newton, exact for logs without noise),

.. math::

    \\sum_g \\frac{\\lVert r_g(\\theta) \\rVert^2}{\\sigma_g^2}
    + \\lambda \\sum_k \\left(\\frac{\\theta_k}{\\sigma_{k}}\\right)^2

with rows grouped as base forces, base moments and joint torques, each with its noise level
``sigma_g`` estimated from the fit's residual (iterated), and a Gaussian prior centred on the
URDF (``sigma_k``: :data:`DEFAULT_PRIOR_STD`, weight ``lambda = prior_weight``). Standard
errors are sandwich (robust) estimates clustered by sample; the identifiability report
gives the information the logs carry about each parameter and names the directions they do
not excite. See ``docs/identification.md``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
import scipy.linalg
from numpy.typing import NDArray

from .calibrate import Calibration, ContactCalibration, SensorModel
from .contacts import Contact
from .errors import InvalidArgumentError, LogFormatError, OutputError, StateError
from .identify_links import LinkInertia, link_parameters, rewrite_urdf_inertials, robot_links
from .robot import Robot
from .trajectory import Trajectory

__all__ = [
    "fit_inertial_parameters",
    "IdentificationResult",
    "ParameterEstimate",
    "Identifiability",
    "DEFAULT_PRIOR_STD",
    "PARAMETER_SETS",
]

Array = NDArray[np.float64]
#: Prior standard deviations (the spread of the URDF's error one expects), per kind:
#: mass scale (log, ~ relative), CoM shift [m], force offset [N], moment offset [N m],
#: gain (relative), rotation [rad], torque offset [N m].
DEFAULT_PRIOR_STD = {
    "mass": 0.1,
    "com": 0.05,
    "force_offset": 20.0,
    "moment_offset": 2.0,
    "gain": 0.05,
    "rotation": 0.05,
    "torque_offset": 2.0,
}
#: Presets of ``parameters``.
PARAMETER_SETS = ("total_mass", "mass", "com", "mass_com")
#: A parameter counts as identified when the logs shrink its prior variance by this factor.
IDENTIFIED_SHARE = 0.99
#: Directions with less data information than this share of the largest are unobservable.
UNOBSERVABLE_RTOL = 1e-10
_GROUPS = ("force", "moment", "torque")
_CHUNK = 2000
_KEEP_BYTES = 256 * 2**20


# --- parameters ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Param:
    name: str
    kind: str  # mass | com | force_offset | moment_offset | gain | rotation | torque_offset
    target: str
    unit: str
    prior_std: float
    axis: int = 0


@dataclass(frozen=True)
class ParameterEstimate:
    """One fitted parameter, in physical units.

    Attributes
    ----------
    name : str
        ``"torso.mass"``, ``"torso.com_x"`` (link axes), ``"left_sole.force_offset_x"``
        (the calibration's axes), ``"left_sole.gain"``, ``"left_knee.torque_offset"``...
    kind : str
        ``mass``, ``com``, ``force_offset``, ``moment_offset``, ``gain``, ``rotation`` or
        ``torque_offset``.
    target : str
        The link, group, contact or joint.
    unit : str
    nominal : float
        The URDF's (or uncalibrated) value: a mass [kg], a CoM coordinate [m], 0 for sensors.
    estimate : float
    std_error : float
        Robust (sandwich) standard error of ``estimate``; inf when the logs do not determine
        it and no prior holds it.
    prior_std : float
        The prior's standard deviation, in the same unit.
    data_share : float
        ``1 - posterior variance / prior variance`` (with the prior at unit weight): 0 when the
        logs say nothing about it, 1 when they determine it.
    identified : bool
        ``data_share >= IDENTIFIED_SHARE``.
    """

    name: str
    kind: str
    target: str
    unit: str
    nominal: float
    estimate: float
    std_error: float
    prior_std: float
    data_share: float
    identified: bool

    @property
    def change(self) -> float:
        return self.estimate - self.nominal

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Two-sided normal interval ``estimate +- z std_error`` at ``level``."""
        from statistics import NormalDist

        z = NormalDist().inv_cdf(0.5 + level / 2)
        return self.estimate - z * self.std_error, self.estimate + z * self.std_error


@dataclass(frozen=True)
class Identifiability:
    """What the logs can identify, in prior-scaled parameters (``theta_k / sigma_k``).

    Attributes
    ----------
    rank : int
        Directions with data information above ``UNOBSERVABLE_RTOL`` of the largest.
    n_parameters : int
    condition : float
        ``sqrt(largest / smallest)`` eigenvalue over the observable directions of the
        information with each row group scaled to unit norm (the condition number of the
        prior-scaled regressor, groups on their own scales).
    information : ndarray, shape (n_parameters,)
        Eigenvalues of the data information, descending (1 = as much as the prior).
    unobservable : list of dict of str to float
        Directions the logs do not excite, each as parameter name -> component (the largest).
    weak : list of dict of str to float
        Directions with less information than the prior (held mostly by the prior).
    """

    rank: int
    n_parameters: int
    condition: float
    information: Array
    unobservable: list[dict[str, float]]
    weak: list[dict[str, float]]


def _parse_selection(
    links: list[LinkInertia],
    parameters: Any,
    only: Sequence[str] | None,
    groups: Mapping[str, Sequence[str]] | None,
) -> tuple[list[tuple[str, list[int]]], list[int]]:
    """Mass groups [(name, link indices)] and CoM links [index] from the arguments."""
    names = [lk.name for lk in links]
    index = {n: i for i, n in enumerate(names)}

    def resolve(seq: Sequence[str], what: str) -> list[int]:
        unknown = [n for n in seq if n not in index]
        if unknown:
            raise InvalidArgumentError(f"{what}: unknown links {unknown}; links with mass: {names}")
        return [index[n] for n in seq]

    if parameters is not None and parameters not in PARAMETER_SETS:
        raise InvalidArgumentError(
            f"parameters must be one of {PARAMETER_SETS} or None, got {parameters!r}"
        )
    chosen = list(range(len(links))) if only is None else resolve(only, "links")
    mass_groups: list[tuple[str, list[int]]] = []
    grouped: set[int] = set()
    for gname, members in (groups or {}).items():
        ids = resolve(members, f"group {gname!r}")
        if grouped & set(ids):
            raise InvalidArgumentError(
                f"group {gname!r}: links {[names[i] for i in grouped & set(ids)]} "
                "are already in another group"
            )
        grouped |= set(ids)
        mass_groups.append((gname, ids))
    if parameters == "total_mass":
        rest = [i for i in chosen if i not in grouped]
        if rest:
            mass_groups.append(("robot" if only is None else "links", rest))
    elif parameters in ("mass", "mass_com"):
        mass_groups += [(names[i], [i]) for i in chosen if i not in grouped]
    com = chosen if parameters in ("com", "mass_com") else []
    return mass_groups, com


# --- the problem --------------------------------------------------------------------------------


class _Problem:
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
        params: list[_Param] = []
        for gname, _ in mass_groups:
            params.append(_Param(f"{gname}.mass", "mass", gname, "kg", prior_std["mass"]))
        for i in com_links:
            for a, ax in enumerate("xyz"):
                params.append(
                    _Param(
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
                        _Param(
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
                        _Param(
                            f"{n}.moment_offset_{ax}",
                            "moment_offset",
                            n,
                            "N m",
                            prior_std["moment_offset"],
                            a,
                        )
                    )
            for n in sensors.contacts_for("gains", names):
                params.append(_Param(f"{n}.gain", "gain", n, "", prior_std["gain"]))
            for n in sensors.contacts_for("rotations", names):
                self.sensor_axes[n] = sensors.axes_of(n)
                for a, ax in enumerate("xyz"):
                    params.append(
                        _Param(f"{n}.rotation_{ax}", "rotation", n, "rad", prior_std["rotation"], a)
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
                        _Param(
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
class _Log:
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


def _prepare_logs(
    robot: Robot, logs: Sequence[Trajectory], contacts: list[Contact], use_torques: bool
) -> list[_Log]:
    out = []
    names = [c.name for c in contacts]
    for traj in logs:
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
            traj = traj.with_accelerations(robot)
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
            _Log(
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


def _features(problem: _Problem, log: _Log, start: int, stop: int, rows: int) -> Array:
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


def _row_groups(rows: int) -> list[tuple[str, slice]]:
    return [("force", slice(0, 3)), ("moment", slice(3, 6))] + (
        [("torque", slice(6, rows))] if rows > 6 else []
    )


# --- the result ---------------------------------------------------------------------------------


@dataclass
class IdentificationResult:
    """What :func:`fit_inertial_parameters` found.

    Attributes
    ----------
    parameters : list of ParameterEstimate
    identifiability : Identifiability
    noise : dict of str to float
        Estimated noise level of each row group: base ``force`` [N], base ``moment``
        [N m about the base origin], joint ``torque`` [N m].
    residual_rms_before, residual_rms_after : dict of str to float
        RMS of each row group's residual with the URDF (and uncalibrated sensors), and
        after the fit.
    residual_before, residual_after : dict of str to ndarray, shape (N_total,)
        Per-sample norms of each group's residual rows (base frame), the logs one after the
        other (samples flagged as unusable are left out).
    calibration : Calibration
        The fitted sensor calibration (identity when no sensor parameter was fitted).
    n_samples : int
        Samples used (over all logs).
    use_torques : bool
    """

    robot: Robot
    links: list[LinkInertia]
    parameters: list[ParameterEstimate]
    identifiability: Identifiability
    noise: dict[str, float]
    residual_rms_before: dict[str, float]
    residual_rms_after: dict[str, float]
    residual_before: dict[str, Array]
    residual_after: dict[str, Array]
    calibration: Calibration
    n_samples: int
    use_torques: bool
    sources: list[str]
    covariance: Array
    _link_states: dict[str, tuple[float, Array, Array]] = field(repr=False, default_factory=dict)
    _theta: Array = field(repr=False, default_factory=lambda: np.zeros(0))

    def __getitem__(self, name: str) -> ParameterEstimate:
        for p in self.parameters:
            if p.name == name:
                return p
        raise InvalidArgumentError(
            f"no parameter {name!r}; parameters: {[p.name for p in self.parameters]}"
        )

    # --- the corrected model -------------------------------------------------------------

    def changed_links(
        self, *, relative_mass: float = 1e-9, com: float = 1e-9
    ) -> dict[str, tuple[float, Array, Array]]:
        """Links whose mass or CoM changed: name -> (mass [kg], CoM in link axes [m], inertia
        about the CoM in link axes [kg m^2])."""
        out = {}
        by_name = {lk.name: lk for lk in self.links}
        for name, (m, c, inertia) in self._link_states.items():
            lk = by_name[name]
            if abs(m / lk.mass - 1) > relative_mass or np.abs(c - lk.com).max() > com:
                out[name] = (m, c, inertia)
        return out

    def corrected_robot(self) -> Robot:
        """A new :class:`Robot` with the fitted inertias (the model is copied)."""
        model = self.robot.model.copy()
        pis = {j: model.inertias[j].toDynamicParameters() for j in range(1, model.njoints)}
        by_name = {lk.name: lk for lk in self.links}
        for name, (m, c, inertia) in self._link_states.items():
            lk = by_name[name]
            pis[lk.joint] = pis[lk.joint] + lk.transform @ (
                link_parameters(m, c, inertia) - link_parameters(lk.mass, lk.com, lk.inertia_com)
            )
        for j, p in pis.items():
            model.inertias[j] = pin.Inertia.FromDynamicParameters(p)
        return Robot(model, name=self.robot.name, source=None)

    def corrected_urdf(self, urdf: str | Path | None = None) -> str:
        """The URDF text with only the changed links' ``<inertial>`` elements rewritten."""
        path = urdf if urdf is not None else self.robot.source
        if path is None or not str(path).endswith(".urdf"):
            raise InvalidArgumentError(
                f"robot {self.robot.name!r} was not loaded from a URDF file; pass urdf="
            )
        text = Path(path).read_text()
        by_name = {lk.name: lk for lk in self.links}
        changes = {}
        for name, (m, c, inertia) in self.changed_links().items():
            R = pin.rpy.rpyToMatrix(*by_name[name].rpy)
            changes[name] = (m, c, R.T @ inertia @ R)
        return rewrite_urdf_inertials(text, changes)

    def write_urdf(self, path: str | Path, *, urdf: str | Path | None = None) -> None:
        """Write :meth:`corrected_urdf` to ``path``."""
        try:
            Path(path).write_text(self.corrected_urdf(urdf))
        except OSError as exc:
            raise OutputError(f"cannot write the corrected URDF {path}: {exc}") from exc

    # --- reports -----------------------------------------------------------------------------

    def changes(self) -> list[str]:
        """A readable list: ``"torso: mass 18.00 -> 18.90 kg (+5.0 %), CoM x +30.0 mm"``,
        one line per changed link, then the sensor calibration."""
        lines = []
        by_name = {lk.name: lk for lk in self.links}
        for name, (m, c, _) in self.changed_links(relative_mass=1e-6, com=1e-6).items():
            lk = by_name[name]
            parts = []
            if abs(m / lk.mass - 1) > 1e-6:
                parts.append(f"mass {lk.mass:.2f} -> {m:.2f} kg ({100 * (m / lk.mass - 1):+.1f} %)")
            shift = c - lk.com
            moved = [
                f"{ax} {1e3 * d:+.1f} mm"
                for ax, d in zip("xyz", shift, strict=True)
                if abs(d) > 1e-6
            ]
            if moved:
                parts.append("CoM " + ", ".join(moved))
            lines.append(f"{name}: " + ", ".join(parts))
        for name, cal in self.calibration.contacts.items():
            parts = []
            if np.any(cal.force_offset):
                parts.append(
                    "force offset [" + ", ".join(f"{x:+.3f}" for x in cal.force_offset) + "] N"
                )
            if np.any(cal.moment_offset):
                parts.append(
                    "moment offset [" + ", ".join(f"{x:+.4f}" for x in cal.moment_offset) + "] N m"
                )
            if cal.gain:
                parts.append(f"gain {100 * cal.gain:+.2f} %")
            if np.any(cal.rotation):
                parts.append(
                    "rotation [" + ", ".join(f"{1e3 * x:+.2f}" for x in cal.rotation) + "] mrad"
                )
            if parts:
                lines.append(f"{name} sensor ({cal.axes} axes): " + ", ".join(parts))
        for joint, value in self.calibration.torque_offsets.items():
            if value:
                lines.append(f"{joint} torque offset {value:+.4f} N m")
        return lines

    def format_report(self) -> str:
        """The fit as text: residual before/after, changes, parameters, identifiability."""
        idf = self.identifiability
        lines = [
            f"fit       {self.n_samples} samples from {len(self.sources)} log(s), "
            f"{'all rows (torques)' if self.use_torques else 'floating-base rows (no torques)'}, "
            f"{idf.n_parameters} parameters"
        ]
        units = {"force": "N", "moment": "N m", "torque": "N m"}
        for g in self.residual_rms_before:
            lines.append(
                f"residual  {g:6s} RMS {self.residual_rms_before[g]:.4g} -> "
                f"{self.residual_rms_after[g]:.4g} {units[g]}"
            )
        lines.append(f"rank      {idf.rank} of {idf.n_parameters}, condition {idf.condition:.3g}")
        for d in idf.unobservable:
            lines.append(
                "not excited: "
                + ", ".join(f"{k} ({v:+.2f})" for k, v in d.items())
                + " (the logs cannot see this combination; it stays at the prior)"
            )
        for d in idf.weak:
            lines.append("weakly excited: " + ", ".join(f"{k} ({v:+.2f})" for k, v in d.items()))
        lines.append("changes:" if self.changes() else "changes:  none")
        lines += ["  " + c for c in self.changes()]
        lines.append("parameters (estimate +- standard error; * = not identified by the logs):")
        for p in self.parameters:
            flag = " " if p.identified else "*"
            lines.append(
                f" {flag} {p.name:34s} {p.nominal:+.5g} -> {p.estimate:+.6g} "
                f"+- {p.std_error:.2g} {p.unit}"
                f"  (data share {p.data_share:.3f})"
            )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        idf = self.identifiability
        return {
            "robot": self.robot.name,
            "sources": self.sources,
            "samples": self.n_samples,
            "use_torques": self.use_torques,
            "residual_rms_before": self.residual_rms_before,
            "residual_rms_after": self.residual_rms_after,
            "noise": self.noise,
            "changes": self.changes(),
            "changed_links": sorted(self.changed_links()),
            "identifiability": {
                "rank": idf.rank,
                "n_parameters": idf.n_parameters,
                "condition": idf.condition,
                "unobservable": idf.unobservable,
                "weak": idf.weak,
            },
            "parameters": [
                {
                    "name": p.name,
                    "kind": p.kind,
                    "target": p.target,
                    "unit": p.unit,
                    "nominal": p.nominal,
                    "estimate": p.estimate,
                    "std_error": p.std_error,
                    "prior_std": p.prior_std,
                    "data_share": p.data_share,
                    "identified": p.identified,
                }
                for p in self.parameters
            ],
            "calibration": self.calibration.to_toml(),
        }

    def to_json(self, path: str | Path | None = None) -> str:
        """:meth:`to_dict` as JSON; written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=2, default=float)
        if path is not None:
            try:
                Path(path).write_text(text)
            except OSError as exc:
                raise OutputError(f"cannot write {path}: {exc}") from exc
        return text


# --- the fit ------------------------------------------------------------------------------------


def fit_inertial_parameters(
    robot: Robot,
    logs: Trajectory | Sequence[Trajectory],
    contacts: Sequence[Contact],
    *,
    parameters: str | None = "mass_com",
    links: Sequence[str] | None = None,
    groups: Mapping[str, Sequence[str]] | None = None,
    sensors: SensorModel | None = None,
    use_torques: bool | None = None,
    prior_weight: float = 1.0,
    prior_std: Mapping[str, float] | None = None,
    urdf: str | Path | None = None,
    max_iterations: int = 50,
) -> IdentificationResult:
    """Fit corrections to links' masses and CoMs (and sensor calibrations) to logs.

    See the module docstring for the model, the cost and the prior.

    Parameters
    ----------
    robot : Robot
        Floating-base robot, loaded from the URDF to correct (``robot.source``, or ``urdf``).
    logs : Trajectory or sequence of Trajectory
        Fitted together (their excitation adds up). Logs without accelerations get them
        from ``v`` by central differences. Samples with non-finite values are left out.
    contacts : sequence of Contact
        One per contact of the logs, matched by name.
    parameters : {"mass_com", "mass", "com", "total_mass"} or None
        Per-link mass scales and CoM shifts, either alone, one mass scale for the whole
        robot, or none (a sensor-only fit).
    links : sequence of str, optional
        Restrict the per-link parameters to these links (default: every link with mass).
    groups : mapping of str to sequence of str, optional
        Named groups of links sharing one mass scale (e.g. ``{"arms": [...]}``).
    sensors : SensorModel, optional
        Sensor parameters to fit jointly (see :func:`wholebody.calibrate.fit_calibration`).
    use_torques : bool, optional
        Use the joint-torque rows; default: when every log has torques.
    prior_weight : float
        ``lambda`` >= 0: 1 is the stated prior (:data:`DEFAULT_PRIOR_STD`), 0 none (the
        unobservable directions then stay at the URDF: minimum-norm steps).
    prior_std : mapping, optional
        Overrides of :data:`DEFAULT_PRIOR_STD` by kind.
    urdf : path, optional
        The URDF the robot was built from, when ``robot.source`` is not it.

    Returns
    -------
    IdentificationResult

    Raises
    ------
    InvalidArgumentError
        Unknown links, parameter sets or options; no parameter to fit.
    LogFormatError
        A log whose contacts do not match ``contacts``, or without torques when asked.
    StateError
        No usable sample.
    """
    if not robot.has_floating_base:
        raise StateError("identification from logs needs a floating-base robot")
    if isinstance(logs, Trajectory):
        logs = [logs]
    logs = list(logs)
    if not logs:
        raise InvalidArgumentError("give at least one log")
    if not (math.isfinite(prior_weight) and prior_weight >= 0):
        raise InvalidArgumentError(
            f"prior_weight must be a finite number >= 0, got {prior_weight!r}"
        )
    stds = dict(DEFAULT_PRIOR_STD)
    for kind, value in (prior_std or {}).items():
        if kind not in stds:
            raise InvalidArgumentError(f"prior_std: unknown kind {kind!r}; kinds: {sorted(stds)}")
        if not (value > 0 and math.isfinite(value)):
            raise InvalidArgumentError(
                f"prior_std[{kind!r}] must be a positive number, got {value!r}"
            )
        stds[kind] = float(value)
    contacts = list(contacts)
    if use_torques is None:
        use_torques = all(t.tau is not None for t in logs)
    all_links = robot_links(robot, urdf)
    mass_groups, com_links = _parse_selection(all_links, parameters, links, groups)
    problem = _Problem(
        robot, all_links, mass_groups, com_links, contacts, sensors, use_torques, stds
    )
    if problem.p == 0:
        raise InvalidArgumentError("nothing to fit: choose parameters or sensor parameters")
    prepared = _prepare_logs(robot, logs, contacts, use_torques)
    n_total = sum(len(lg.q) for lg in prepared)
    if n_total == 0:
        raise StateError("no usable sample in the logs (all flagged as non-finite or invalid)")
    rows = robot.nv if use_torques else 6
    groups_rows = _row_groups(rows)

    # Pass 1: triangular factors of each row group's stacked features (QR, chunk by chunk).
    C = problem.n_columns
    keep = n_total * rows * C * 8 <= _KEEP_BYTES
    kept: list[Array] = []
    factors = {g: np.zeros((0, C)) for g, _ in groups_rows}
    counts = dict.fromkeys(factors, 0)

    def chunks() -> Iterator[Array]:
        if kept:
            yield from kept
            return
        for lg in prepared:
            for start in range(0, len(lg.q), _CHUNK):
                yield _features(problem, lg, start, min(start + _CHUNK, len(lg.q)), rows)

    for F in chunks():
        if keep:
            kept.append(F)
        for g, sl in groups_rows:
            block = F[:, sl].reshape(-1, C)
            counts[g] += len(block)
            factors[g] = scipy.linalg.qr(
                np.vstack([factors[g], block]), mode="r", overwrite_a=True, check_finite=False
            )[0][:C]  # (min(M, C), C)

    # Gauss-Newton in prior-scaled parameters, noise levels re-estimated.
    S = problem.sigma
    theta0 = np.zeros(problem.p)
    x0, _ = problem.x_and_derivative(theta0)
    rss0 = {g: float(np.sum((R @ x0) ** 2)) for g, R in factors.items()}
    scale = {"force": robot.weight, "moment": robot.weight, "torque": robot.weight}
    noise = {g: max(math.sqrt(rss0[g] / max(counts[g], 1)), 1e-12 * scale[g]) for g in factors}
    theta = theta0.copy()

    def cost(th: Array) -> float:
        xx, _ = problem.x_and_derivative(th)
        data = sum(float(np.sum((R @ xx) ** 2)) / noise[g] ** 2 for g, R in factors.items())
        return data + prior_weight * float(np.sum((th / S) ** 2))

    for _outer in range(6):
        current = cost(theta)
        x, D = problem.x_and_derivative(theta)
        # Steps stay in the directions the logs observe (each row group judged on its own
        # scale); the others keep their prior value.
        V_obs = _observable_basis({g: (R @ D) * S for g, R in factors.items()})[0]
        for _ in range(max_iterations):
            x, D = problem.x_and_derivative(theta)
            A = [np.sqrt(prior_weight) * np.eye(problem.p)]
            r = [np.sqrt(prior_weight) * theta / S]
            blocks = {g: (R @ D) * S for g, R in factors.items()}
            for g, R in factors.items():
                A.append(blocks[g] / noise[g])
                r.append(R @ x / noise[g])
            step = -V_obs @ np.linalg.lstsq(np.vstack(A) @ V_obs, np.concatenate(r), rcond=None)[0]
            # Backtracking: the mass scale and the CoM enter nonlinearly.
            for _half in range(30):
                trial = theta + step * S
                new_cost = cost(trial)
                if new_cost <= current * (1 + 1e-12) + 1e-300:
                    break
                step = step / 2
            progress = current - new_cost
            theta, current = trial, new_cost
            if np.abs(step).max() < 1e-11 or progress <= 1e-15 * current:
                break
        x, _ = problem.x_and_derivative(theta)
        dof_share = max(1.0 - problem.p / max(sum(counts.values()), 1), 1e-3)
        new = {
            g: max(
                math.sqrt(float(np.sum((R @ x) ** 2)) / max(counts[g] * dof_share, 1.0)),
                1e-12 * scale[g],
            )
            for g, R in factors.items()
        }
        converged = all(abs(new[g] / noise[g] - 1) < 1e-3 for g in noise)
        noise = new
        if converged:
            break

    # Information, identifiability and robust covariance (pass 2 over the samples).
    x, D = problem.x_and_derivative(theta)
    Jg = {g: (R @ D) * S / noise[g] for g, R in factors.items()}
    H_data = sum(J.T @ J for J in Jg.values())
    H = H_data + prior_weight * np.eye(problem.p)
    meat = np.zeros((problem.p, problem.p))
    before: dict[str, list[Array]] = {g: [] for g in factors}
    after: dict[str, list[Array]] = {g: [] for g in factors}
    DS = D * S
    for F in chunks():
        rx, r0 = F @ x, F @ x0  # (n, rows)
        score = np.zeros((len(F), problem.p))
        for g, sl in groups_rows:
            JF = F[:, sl] @ DS  # (n, rows_g, p)
            score += np.einsum("nrp,nr->np", JF, rx[:, sl]) / noise[g] ** 2
            before[g].append(np.linalg.norm(r0[:, sl], axis=1))
            after[g].append(np.linalg.norm(rx[:, sl], axis=1))
        meat += score.T @ score
    H_inv = _pinv_sym(H)
    cov_scaled = H_inv @ meat @ H_inv
    # Data share with the prior at unit weight: 1 - diag((H_data + 1)^-1).
    w_h, V_h = np.linalg.eigh(H_data)
    share = 1.0 - ((V_h**2) / (1.0 + np.clip(w_h, 0.0, None))).sum(axis=1)
    blocks = {g: (R @ D) * S for g, R in factors.items()}
    identifiability = _identifiability(blocks, H_data, [p.name for p in problem.params])
    V_null = _observable_basis(blocks)[1]
    unobserved = [int(i) for i in np.flatnonzero((V_null**2).sum(axis=1) > 0.5)]
    share[(V_null**2).sum(axis=1) > 0.5] = 0.0
    if prior_weight == 0:
        cov_scaled[unobserved, :] = np.inf
        cov_scaled[:, unobserved] = np.inf
    cov = cov_scaled * np.outer(S, S)

    # Physical values.
    estimates = []
    link_states = {all_links[i].name: problem.link_state(theta, i) for i in problem.touched}
    for k, p in enumerate(problem.params):
        se = math.sqrt(cov[k, k]) if np.isfinite(cov[k, k]) else math.inf
        if p.kind == "mass":
            ids = mass_groups[k][1]
            nominal = sum(all_links[i].mass for i in ids)
            value = nominal * math.exp(theta[k])
            se, prior = value * se, nominal * p.prior_std
        elif p.kind == "com":
            lk = next(lk for lk in all_links if lk.name == p.target)
            nominal = float(lk.com[p.axis])
            value, prior = nominal + theta[k], p.prior_std
        else:
            nominal, value, prior = 0.0, float(theta[k]), p.prior_std
        estimates.append(
            ParameterEstimate(
                p.name,
                p.kind,
                p.target,
                p.unit,
                nominal,
                float(value),
                float(se),
                float(prior),
                float(share[k]),
                bool(share[k] >= IDENTIFIED_SHARE),
            )
        )
    calibration = _calibration(problem, theta)

    def rms(parts: dict[str, list[Array]]) -> dict[str, float]:
        return {
            g: float(np.sqrt(np.mean(np.concatenate(v) ** 2 / (sl.stop - sl.start))))
            for (g, v), (_, sl) in zip(parts.items(), groups_rows, strict=True)
        }

    return IdentificationResult(
        robot=robot,
        links=all_links,
        parameters=estimates,
        identifiability=identifiability,
        noise=noise,
        residual_rms_before=rms(before),
        residual_rms_after=rms(after),
        residual_before={g: np.concatenate(v) for g, v in before.items()},
        residual_after={g: np.concatenate(v) for g, v in after.items()},
        calibration=calibration,
        n_samples=n_total,
        use_torques=use_torques,
        sources=[lg.source for lg in prepared],
        covariance=cov,
        _link_states=link_states,
        _theta=theta,
    )


def _pinv_sym(H: Array) -> Array:
    w, V = np.linalg.eigh(H)
    keep = w > UNOBSERVABLE_RTOL * max(w.max(initial=0.0), 1e-300)
    return (V[:, keep] / w[keep]) @ V[:, keep].T


def _normalised_information(blocks: dict[str, Array]) -> tuple[Array, Array]:
    """Eigenvalues (descending) and vectors of the information with each row group scaled to
    unit norm: a direction is unobservable when no group sees it, on that group's own scale
    (noise levels of different groups can differ by orders of magnitude)."""
    p = next(iter(blocks.values())).shape[1]
    info = np.zeros((p, p))
    for J in blocks.values():
        norm = float(np.linalg.norm(J, 2)) if J.size else 0.0
        if norm > 0:
            info += (J / norm).T @ (J / norm)
    w, V = np.linalg.eigh(info)
    return w[::-1], V[:, ::-1]


def _observable_basis(blocks: dict[str, Array]) -> tuple[Array, Array, Array]:
    """Orthonormal bases (p, r) of the observed and (p, p - r) unobserved directions."""
    w, V = _normalised_information(blocks)
    observable = w > UNOBSERVABLE_RTOL * max(float(w[0]) if len(w) else 0.0, 1e-300)
    return V[:, observable], V[:, ~observable], w


def _direction(v: Array, names: list[str], top: int = 4) -> dict[str, float]:
    v = v / v[np.argmax(np.abs(v))]
    order = np.argsort(-np.abs(v))[:top]
    return {names[i]: round(float(v[i]), 3) for i in order if abs(v[i]) > 0.05}


def _identifiability(blocks: dict[str, Array], H_data: Array, names: list[str]) -> Identifiability:
    w_norm, V = _normalised_information(blocks)
    top = max(float(w_norm[0]) if len(w_norm) else 0.0, 1e-300)
    observable = w_norm > UNOBSERVABLE_RTOL * top
    rank = int(observable.sum())
    condition = math.sqrt(top / w_norm[observable].min()) if rank else math.inf
    unobservable = [_direction(V[:, i], names) for i in np.flatnonzero(~observable)]
    w, U = np.linalg.eigh(H_data)
    w, U = w[::-1], U[:, ::-1]
    null = V[:, ~observable]
    weak = [
        _direction(U[:, i], names)
        for i in range(len(w))
        if w[i] < 1.0 and np.linalg.norm(null.T @ U[:, i]) < 0.5
    ]
    return Identifiability(
        rank, len(names), float(condition), np.clip(w, 0.0, None), unobservable, weak
    )


def _calibration(problem: _Problem, theta: Array) -> Calibration:
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
