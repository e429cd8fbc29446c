"""The identification problem: the parameters' map to Pinocchio's dynamic parameters and
the sensor parameters (``x(theta)`` and its derivative), and the logs' usable samples (each
sample's features are in :mod:`~wholebody.identify.features`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..contacts import Contact
from ..errors import InvalidArgumentError, LogFormatError
from ..robot.core import Robot
from ..trajectory import Trajectory
from .calibrate import SensorModel
from .links import LinkInertia, link_parameters
from .parameters import Param
from .rigid import (
    EYE3,
    INERTIA_COMPONENTS,
    MIN_EXTENT,
    PIN_COLS,
    PIN_ROWS,
    SYM_BASIS,
    ZERO3,
    dynamic,
    second_moment,
    sqrtm_psd,
    symmetric,
)
from .smoothing import Smoothing, choose_smoothing

__all__ = [
    "Problem",
    "PreparedLog",
    "prepare_logs",
]

Array = NDArray[np.float64]


# --- the problem --------------------------------------------------------------------------------


class Problem:
    """Parameters, their map to ``x = (pi, sensor parameters, 1)`` and its derivative.

    Each link's rigid body is parametrised so that it stays physically consistent for every
    ``theta`` (positive-definite pseudo-inertia, Wensing, Kim, Slotine 2017):

    * mass ``m = m_0 e^s`` (per group of links), positive;
    * CoM ``c = c_0 + d`` in link axes;
    * the second moment of the mass about the CoM, ``Sigma = tr(I_C)/2 1 - I_C``, as
      ``Sigma = A expm(S) A`` with ``A = Sigma_0^(1/2)`` and ``S`` symmetric (6 parameters),
      positive definite for every ``S``; ``I_C = tr(Sigma) 1 - Sigma``.

    Mass and rotational inertia are separate (the inertia about the CoM is kept when only the
    mass is fitted) unless ``density=True`` (the inertia scales with the mass).
    """

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
        inertia_links: Sequence[int] = (),
        density: bool = False,
        log_names: Sequence[str] = ("log",),
    ):
        self.robot, self.links = robot, links
        self.mass_groups, self.com_links = mass_groups, com_links
        self.inertia_links = list(inertia_links)
        self.density = density
        self.contacts = contacts
        self.log_names = list(log_names)
        # Links touched by inertial parameters.
        self.touched = sorted(
            {i for _, ids in mass_groups for i in ids} | set(com_links) | set(self.inertia_links)
        )
        # Second moments about the CoM: the URDF's, and a positive-definite one to start from.
        self.sigma0: dict[int, Array] = {}
        self.inconsistent: list[str] = []
        for i in self.touched:
            sig, ok = second_moment(links[i].mass, links[i].inertia_com)
            self.sigma0[i] = sig
            if not ok:
                self.inconsistent.append(links[i].name)
        self.sqrt_sigma0 = {i: sqrtm_psd(s) for i, s in self.sigma0.items()}
        params = _inertial_parameters(links, mass_groups, com_links, self.inertia_links, prior_std)
        self.n_inertial = len(params)
        self.sensor_axes: dict[str, str] = {}
        if sensors is not None:
            sensor_params, self.sensor_axes = _sensor_parameters(
                robot, contacts, sensors, use_torques, prior_std, self.log_names
            )
            params += sensor_params
        self.params = params
        self.p = len(params)
        self.sigma = np.array([p.prior_std for p in params])
        self.prior_factor = self._prior_factor()
        self.prior_factor_inv = np.linalg.inv(self.prior_factor)
        # Each touched link's first parameter of each kind.
        self.link_group = {i: g for g, (_, ids) in enumerate(mass_groups) for i in ids}
        self.link_com = {i: len(mass_groups) + 3 * k for k, i in enumerate(com_links)}
        first_inertia = len(mass_groups) + 3 * len(com_links)
        self.link_inertia = {i: first_inertia + 6 * k for k, i in enumerate(self.inertia_links)}
        self._fixed_parameters()
        self._cache: tuple[bytes, Array, Array] | None = None

    def _fixed_parameters(self) -> None:
        """The bodies' dynamic parameters less the touched links' (``pi_fixed``); only the
        bodies the parameters touch keep their regressor columns (``used``), the others'
        (fixed) parameters are folded into the constant column (``unused``, ``pi_unused``)."""
        model = self.robot.model
        pi0 = np.concatenate(
            [model.inertias[j].toDynamicParameters() for j in range(1, model.njoints)]
        )
        self.pi_fixed = pi0.copy()
        for i in self.touched:
            lk = self.links[i]
            self.pi_fixed[10 * (lk.joint - 1) : 10 * lk.joint] -= lk.transform @ link_parameters(
                lk.mass, lk.com, lk.inertia_com
            )
        bodies = sorted({self.links[i].joint for i in self.touched})
        self.used = np.array([10 * (j - 1) + k for j in bodies for k in range(10)], dtype=int)
        mask = np.ones(len(pi0), dtype=bool)
        mask[self.used] = False
        self.unused = np.flatnonzero(mask)
        self.pi_unused = pi0[self.unused]
        self.n_pi_full = len(pi0)
        self.n_pi = len(self.used)

    def _prior_factor(self) -> Array:
        """``L`` (p, p) with the prior ``theta ~ N(0, L L^T)`` (block diagonal).

        Mass: ``sigma_mass`` on the log scale. CoM of link ``i``: covariance
        ``sigma_com^2 Sigma_0 / m_0`` (the link's own extent along each principal axis, at
        least 1 cm). Inertia: ``sigma_inertia`` on each coordinate of ``S``. With
        ``sigma_mass = sigma_inertia = sigma`` and ``sigma_com = sigma / sqrt 2`` this is the
        second-order expansion of the entropic (log-det) divergence of Lee, Wensing, Park 2020
        between the link's pseudo-inertia and the URDF's, divided by ``sigma^2 / 2``.
        """
        L = np.diag(self.sigma.astype(float))
        for k, i in enumerate(self.com_links):
            lk = self.links[i]
            block = self.sigma0[i] / lk.mass
            w, V = np.linalg.eigh(block)
            w = np.maximum(w, MIN_EXTENT**2)
            col = len(self.mass_groups) + 3 * k
            L[col : col + 3, col : col + 3] = self.sigma[col] * (V * np.sqrt(w)) @ V.T
        return L

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
        if i in self.link_inertia:
            A = self.sqrt_sigma0[i]
            S = symmetric(theta[self.link_inertia[i] : self.link_inertia[i] + 6])
            w, V = np.linalg.eigh(S)
            sig = A @ (V * np.exp(w)) @ V.T @ A
            inertia = np.trace(sig) * np.eye(3) - sig
        elif lk.name in self.inconsistent:  # the URDF's is no rigid body: the nearest one
            sig = self.sigma0[i]
            inertia = np.trace(sig) * np.eye(3) - sig
        else:
            inertia = lk.inertia_com
        if self.density and i not in self.link_inertia:
            inertia = inertia * scale
        return lk.mass * scale, com, inertia

    def inertia_derivatives(self, theta: Array, i: int) -> Array:
        """``d I_C / d theta`` (6, 3, 3) of link ``i``'s six inertia coordinates."""
        A = self.sqrt_sigma0[i]
        S = symmetric(theta[self.link_inertia[i] : self.link_inertia[i] + 6])
        w, V = np.linalg.eigh(S)
        ew = np.exp(w)
        diff = w[:, None] - w[None, :]
        same = np.abs(diff) < 1e-12
        phi = np.where(same, ew[:, None], (ew[:, None] - ew[None, :]) / np.where(same, 1, diff))
        out = np.empty((6, 3, 3))
        for k in range(6):
            E = SYM_BASIS[k]
            dexp = V @ ((V.T @ E @ V) * phi) @ V.T  # Frechet derivative of expm at S along E
            dsig = A @ dexp @ A
            out[k] = np.trace(dsig) * np.eye(3) - dsig
        return out

    def x_and_derivative(self, theta: Array) -> tuple[Array, Array]:
        """``x(theta)`` (C,) and ``dx/dtheta`` (C, p): the touched bodies' dynamic
        parameters, the sensor parameters and 1."""
        key = np.asarray(theta, dtype=float).tobytes()
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1].copy(), self._cache[2].copy()
        ni = self.n_inertial
        full, D_full = self._pi_and_derivative(theta)
        C = self.n_columns
        x = np.empty(C)
        D = np.zeros((C, self.p))
        x[: self.n_pi] = full[self.used]
        D[: self.n_pi] = D_full[self.used]
        x[self.n_pi : C - 1] = theta[ni:]
        D[self.n_pi : C - 1, ni:] = np.eye(self.p - ni)
        x[-1] = 1.0
        self._cache = (key, x, D)
        return x.copy(), D.copy()

    def pi_full(self, theta: Array) -> Array:
        """All bodies' dynamic parameters (10 nb,) at ``theta`` (no derivative)."""
        x = self.pi_fixed.copy()
        for i in self.touched:
            lk = self.links[i]
            m, c, inertia_c = self.link_state(theta, i)
            x[10 * (lk.joint - 1) : 10 * lk.joint] += lk.transform @ dynamic(m, c, inertia_c)
        return x

    def x_only(self, theta: Array) -> Array:
        """``x(theta)`` (C,) without its derivative."""
        full = self.pi_full(theta)
        x = np.empty(self.n_columns)
        x[: self.n_pi] = full[self.used]
        x[self.n_pi : -1] = theta[self.n_inertial :]
        x[-1] = 1.0
        return x

    def _pi_and_derivative(self, theta: Array) -> tuple[Array, Array]:
        """All bodies' dynamic parameters (10 nb,) and their derivative (10 nb, p)."""
        x = self.pi_fixed.copy()
        D = np.zeros((self.n_pi_full, self.p))
        for i in self.touched:
            lk = self.links[i]
            m, c, inertia_c = self.link_state(theta, i)
            pi_l = dynamic(m, c, inertia_c)
            rows = slice(10 * (lk.joint - 1), 10 * lk.joint)
            x[rows] += lk.transform @ pi_l
            cols: list[int] = []
            local: list[Array] = []
            if i in self.link_group:
                d_mass = dynamic(m, c, ZERO3) if not self.density else pi_l
                if self.density and i in self.link_inertia:
                    d_mass = dynamic(m, c, ZERO3)
                cols.append(self.link_group[i])
                local.append(d_mass)
            if i in self.link_com:
                for k in range(3):
                    # d/dc_k of m c and of m (|c|^2 1 - c c^T)
                    dI = 2 * c[k] * EYE3
                    dI[k, :] -= c
                    dI[:, k] -= c
                    dI *= m
                    d = np.zeros(10)
                    d[1 + k] = m
                    d[4:] = dI[PIN_ROWS, PIN_COLS]
                    cols.append(self.link_com[i] + k)
                    local.append(d)
            if i in self.link_inertia:
                for k, dI in enumerate(self.inertia_derivatives(theta, i)):
                    d = np.zeros(10)
                    d[4:] = dI[PIN_ROWS, PIN_COLS]
                    cols.append(self.link_inertia[i] + k)
                    local.append(d)
            if cols:
                D[rows, cols] += lk.transform @ np.array(local).T
        return x, D


def _inertial_parameters(
    links: list[LinkInertia],
    mass_groups: list[tuple[str, list[int]]],
    com_links: list[int],
    inertia_links: list[int],
    prior_std: Mapping[str, float],
) -> list[Param]:
    """The links' parameters: each group's mass scale, then each link's CoM shift (x, y, z),
    then each link's six inertia coordinates."""
    params = [
        Param(f"{gname}.mass", "mass", gname, "kg", prior_std["mass"]) for gname, _ in mass_groups
    ]
    for i in com_links:
        for a, ax in enumerate("xyz"):
            name = links[i].name
            params.append(Param(f"{name}.com_{ax}", "com", name, "m", prior_std["com"], a))
    for i in inertia_links:
        for a, comp in enumerate(INERTIA_COMPONENTS):
            name = links[i].name
            params.append(
                Param(f"{name}.inertia_{comp}", "inertia", name, "kg m^2", prior_std["inertia"], a)
            )
    return params


def _sensor_parameters(
    robot: Robot,
    contacts: list[Contact],
    sensors: SensorModel,
    use_torques: bool,
    prior_std: Mapping[str, float],
    log_names: list[str],
) -> tuple[list[Param], dict[str, str]]:
    """The sensors' parameters (per log when ``sensors.per_log`` and there are several logs:
    named ``LOG:...``): each contact's offsets, gains and mount rotations, then the joint
    torques' offsets; and the axes each contact's sensor parameters are stated in."""
    names = [c.name for c in contacts]
    axes: dict[str, str] = {}
    params: list[Param] = []
    per_log = sensors.per_log and len(log_names) > 1
    for log in list(range(len(log_names))) if per_log else [None]:
        prefix = "" if log is None else f"{log_names[log]}:"
        for n in sensors.contacts_for("offsets", names):
            axes[n] = sensors.axes_of(n)
            for kind, unit in (("force_offset", "N"), ("moment_offset", "N m")):
                for a, ax in enumerate("xyz"):
                    name = f"{prefix}{n}.{kind}_{ax}"
                    params.append(Param(name, kind, n, unit, prior_std[kind], a, log))
        for n in sensors.contacts_for("gains", names):
            params.append(Param(f"{prefix}{n}.gain", "gain", n, "", prior_std["gain"], 0, log))
        for n in sensors.contacts_for("rotations", names):
            axes[n] = sensors.axes_of(n)
            for a, ax in enumerate("xyz"):
                name = f"{prefix}{n}.rotation_{ax}"
                params.append(Param(name, "rotation", n, "rad", prior_std["rotation"], a, log))
    if sensors.torque_offsets is not False:
        if not use_torques:
            raise InvalidArgumentError(
                "torque offsets need joint torques: the logs have none, or use_torques=False"
            )
        joints = (
            robot.joint_names if sensors.torque_offsets is True else list(sensors.torque_offsets)
        )
        unknown = [j for j in joints if j not in robot.joint_names]
        if unknown:
            raise InvalidArgumentError(f"torque offsets for unknown joints {unknown}")
        for j in joints:
            params.append(
                Param(f"{j}.torque_offset", "torque_offset", j, "N m", prior_std["torque_offset"])
            )
    return params, axes


# --- per-sample features ----------------------------------------------------------------------


@dataclass
class PreparedLog:
    """The usable samples of one log, in the robot's joint order: ``q`` (N, nq), ``v`` and
    ``a`` (N, nv), ``tau`` (N, nv - 6) or None, contact wrenches ``W`` (N, k, 6) and external
    wrenches ``E`` (N, e, 6) or None (world axes at their frames' origins, [N, N m]); with
    ``smoothing``, the fit reads its equations through that low-pass, at ``samples``."""

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
    t: Array | None = None  # sample times [s]
    smoothing: Smoothing | None = None  # the low-pass the fit reads the log through

    @property
    def samples(self) -> NDArray[np.intp]:
        """The samples the fit's equations are centred on (every one without smoothing)."""
        n = len(self.q)
        return np.arange(n) if self.smoothing is None else self.smoothing.centres(n)


def prepare_logs(
    robot: Robot,
    logs: Sequence[Trajectory],
    contacts: list[Contact],
    use_torques: bool,
    smoothing: bool | None = None,
) -> list[PreparedLog]:
    """Check the logs against ``contacts`` and keep their usable samples (accelerations by
    central differences where a log has none; samples flagged non-finite or invalid left out),
    each with the low-pass its equations are read through (:mod:`~wholebody.identify.smoothing`):
    with ``smoothing`` None, for logs whose accelerations are differentiated; True: for every
    log; False: for none.

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
        differentiated = traj.a is None or bool(traj.accelerations_estimated)
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
        t = np.asarray(traj.time, dtype=float)[ok]
        smooth = differentiated if smoothing is None else smoothing
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
                t,
                choose_smoothing(t, checked["v"][ok]) if smooth else None,
            )
        )
    return out
