"""Log a running PyBullet simulation into a :class:`~wholebody.Trajectory`, correctly.

What :class:`PybulletRecorder` does, and the PyBullet facts behind it:

* **attach last.** The recorder reads the state at attach time as the first sample's state:
  attach after setting the initial state (``resetBaseVelocity``, ``resetJointState``),
  right before the first step.
* **read after the step.** PyBullet gives no accelerations; ``stepSimulation`` turns the
  state ``x_n`` into ``x_{n+1}`` with the contact forces of that step, which
  ``getContactPoints`` reports afterwards. Call :meth:`~PybulletRecorder.record` right after
  each ``stepSimulation``: the sample logged is ``q_n, v_n`` (kept from the previous call, or
  from attaching), ``a_n = (v_{n+1} - v_n) / dt`` and the step's contact forces.
* **contact forces.** A contact point of the robot (body A) with anything else gives
  ``normalForce * contactNormalOnB + lateralFriction1 * lateralFrictionDir1 +
  lateralFriction2 * lateralFrictionDir2``, the force on A, at ``positionOnA``, world axes
  (a point where the robot is body B gets the opposite). Points between two links of the
  robot are internal and skipped.
* **the base is its centre of mass.** ``getBasePositionAndOrientation`` and
  ``getBaseVelocity`` give the base's inertial frame, not the URDF link frame: the recorder
  moves them to the link origin with ``getDynamicsInfo``'s local inertial frame.
* **masses.** Without ``flags=p.URDF_USE_INERTIA_FROM_FILE`` PyBullet computes the inertia
  tensors from the collision shapes; a link without ``<inertial>`` gets 1 kg and a unit
  inertia whatever the flags. At attach time the recorder compares every body's mass,
  centre of mass and inertia with the robot's (Pinocchio's bodies: links welded together
  summed) and refuses a mismatch naming the links, or (``masses="repair"``) gives a copy of
  the robot PyBullet's values (:attr:`PybulletRecorder.robot`; PyBullet's multibody solver
  loses momentum with massless moving links, so it is the robot that changes).
* **link damping.** PyBullet damps every link's velocity by default (0.04, not readable
  back): the recorder sets it to 0 at attach (``link_damping="keep"`` warns instead). With
  it removed and the masses matched, a log balances to round-off (~1e-12 N).
* joints mapped by **name** (``getJointInfo``'s joint name, link name); quaternions are
  x-y-z-w in both.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pinocchio as pin

from ..contacts import Contact
from ..errors import (
    InvalidArgumentError,
    ModelError,
    StateError,
    WholebodyWarning,
    require,
)
from ..robot import Robot
from ..spatial import rotation_from_quat_xyzw
from ._common import (
    Recorder,
    base_acceleration_to_pinocchio,
    base_to_pinocchio,
    joints_in_robot_order,
    precision_metadata,
)

__all__ = ["PybulletRecorder", "import_pybullet"]


def import_pybullet() -> Any:
    """Import :mod:`pybullet` or raise :class:`MissingDependencyError` with the install line."""
    return require("pybullet", "pybullet", "PyBullet logs")


def _name(b: Any) -> str:
    return b.decode() if isinstance(b, bytes) else str(b)


class PybulletRecorder(Recorder):
    """Records a PyBullet simulation of a robot, then gives it as a Trajectory.

    Parameters
    ----------
    robot : Robot
        The robot the log is for, loaded from the same URDF as the PyBullet body.
    body : int
        The robot's PyBullet body id (from ``loadURDF``); it must have a free base.
    contacts : sequence of Contact
        Declared contacts: the forces on each link go to the contact on the same robot body
        (see :class:`~wholebody.sim._common.ContactMap`).
    client : int
        ``physicsClientId``.
    timestep : float, optional
        The simulation's time step [s]; read from ``getPhysicsEngineParameters`` by default.
        ``setTimeStep`` after attaching is not seen: attach after setting it.
    masses : {"raise", "repair"}
        What to do when PyBullet's link masses or inertias differ from the robot's (see the
        module docstring): raise :class:`ModelError` naming the links (default), or warn
        (ModelWarning) and give :attr:`robot` PyBullet's values on those bodies
        (:attr:`repairs` lists them): check the log with ``recorder.robot``. (Setting 0 kg
        in PyBullet instead makes its multibody solver lose momentum: the log cannot balance.)

    link_damping : {"zero", "keep"}
        PyBullet damps every link's velocity by default (``linearDamping`` and
        ``angularDamping`` 0.04), a force from the world that the log cannot hold and that
        ``getDynamicsInfo`` does not report: set both to 0 on every link at attach
        (default), or keep them with a warning (the log will not balance while moving).

    Attributes
    ----------
    robot : Robot
        The robot to check the log with: the one given, or a copy with PyBullet's inertias
        (``masses="repair"``).

    Examples
    --------
    >>> body = p.loadURDF(path, [0, 0, 0.9], flags=p.URDF_USE_INERTIA_FROM_FILE)  # doctest: +SKIP
    >>> rec = PybulletRecorder(robot, body, contacts)                           # doctest: +SKIP
    >>> for _ in range(1000):                                                  # doctest: +SKIP
    ...     apply_controls()
    ...     p.stepSimulation()
    ...     rec.record()
    >>> traj = rec.trajectory()                                                # doctest: +SKIP
    """

    engine = "PyBullet"

    def __init__(
        self,
        robot: Robot,
        body: int,
        contacts: Sequence[Contact],
        *,
        client: int = 0,
        timestep: float | None = None,
        masses: str = "raise",
        link_damping: str = "zero",
    ):
        p = import_pybullet()
        self._p = p
        if masses not in ("raise", "repair"):
            raise InvalidArgumentError(f"masses must be 'raise' or 'repair', got {masses!r}")
        if link_damping not in ("zero", "keep"):
            raise InvalidArgumentError(
                f"link_damping must be 'zero' or 'keep', got {link_damping!r}"
            )
        if not robot.has_floating_base:
            raise ModelError("PybulletRecorder needs a floating-base robot")
        self.robot, self.body, self.client = robot, int(body), int(client)
        kw = {"physicsClientId": self.client}
        try:
            base_name = _name(p.getBodyInfo(self.body, **kw)[0])
        except p.error as exc:
            raise InvalidArgumentError(f"PyBullet has no body {body} in client {client}") from exc
        if p.getDynamicsInfo(self.body, -1, **kw)[0] == 0.0:
            raise ModelError(
                "the PyBullet body has a fixed base (mass 0): load it with useFixedBase=False"
            )
        njoints = p.getNumJoints(self.body, **kw)
        infos = [p.getJointInfo(self.body, j, **kw) for j in range(njoints)]
        link_names = [base_name] + [_name(i[12]) for i in infos]
        moving = (p.JOINT_REVOLUTE, p.JOINT_PRISMATIC)
        joints = joints_in_robot_order(
            robot, {_name(i[1]): i for i in infos}, lambda i: i[2] in moving, self.engine
        )
        self._joints = [int(i[0]) for i in joints]
        self._map_contacts(robot, contacts, link_names)
        params = p.getPhysicsEngineParameters(**kw)  # read now: a log outlives its client
        self._iterations = int(params.get("numSolverIterations", -1))
        if timestep is None:
            timestep = float(params["fixedTimeStep"])
        if not (np.isfinite(timestep) and timestep > 0):
            raise InvalidArgumentError(f"timestep must be positive [s], got {timestep!r}")
        self.timestep = float(timestep)
        # PyBullet's multibody solver loses momentum with massless moving links: a repair
        # gives the robot PyBullet's values, not the reverse.
        self.robot = self._matched_masses(
            robot,
            self._link_inertias(),
            masses,
            ". Load with flags=p.URDF_USE_INERTIA_FROM_FILE (else PyBullet computes inertias "
            "from the collision shapes); links without <inertial> get 1 kg in PyBullet and 0 "
            "in the robot: give them an <inertial>, or attach with masses='repair' to give "
            "recorder.robot (and the log, checked with them by `wholebody check`) PyBullet's "
            "values",
        )
        # PyBullet damps every link's velocity (linearDamping = angularDamping = 0.04 by
        # default): a force from the world that no log holds. It cannot be read back, so it
        # is set to 0 here (or kept, with a warning).
        self.link_damping = link_damping
        if link_damping == "zero":
            for link in range(-1, njoints):
                p.changeDynamics(self.body, link, linearDamping=0.0, angularDamping=0.0, **kw)
        else:
            warnings.warn(
                "PyBullet's link damping is kept (0.04 unless changed): it acts on every moving "
                "link like an unlogged external force, and the log will not balance while the "
                "robot moves (link_damping='zero' removes it)",
                WholebodyWarning,
                stacklevel=2,
            )
        self._prev = self._state()

    # --- attach-time checks ----------------------------------------------------------

    def _link_inertias(self) -> list[pin.Inertia]:
        """Each PyBullet link's spatial inertia in its own (URDF link) frame."""
        p, kw = self._p, {"physicsClientId": self.client}
        out = []
        for j in range(-1, len(self.link_names) - 1):
            d = p.getDynamicsInfo(self.body, j, **kw)
            R = rotation_from_quat_xyzw(d[4])
            I_c = R @ np.diag(d[2]) @ R.T
            out.append(pin.Inertia(float(d[0]), np.asarray(d[3], float), I_c))
        return out

    # --- reading -------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        """The current state: base origin (not centre of mass), world-axes velocities."""
        p, kw = self._p, {"physicsClientId": self.client}
        pc, oc = p.getBasePositionAndOrientation(self.body, **kw)
        vc, w = p.getBaseVelocity(self.body, **kw)
        d = p.getDynamicsInfo(self.body, -1, **kw)
        R_c = rotation_from_quat_xyzw(oc)
        R_i = rotation_from_quat_xyzw(d[4])
        R = R_c @ R_i.T  # base link axes: PyBullet's base frame is its inertial frame
        r = R @ np.asarray(d[3], float)  # from the link origin to the centre of mass, world
        w = np.asarray(w, float)
        states = p.getJointStates(self.body, self._joints, **kw)
        return {
            "t": None,
            "R": R,
            "r": r,
            "p": np.asarray(pc, float) - r,
            "v_com": np.asarray(vc, float),
            "w": w,
            "v": np.asarray(vc, float) - np.cross(w, r),
            "qj": np.array([s[0] for s in states], float),
            "vj": np.array([s[1] for s in states], float),
        }

    def record(self, time: float | None = None) -> None:
        """Log the step just taken: call right after each ``stepSimulation``.

        The sample is the state before the step (``q_n``, ``v_n``), ``a_n = (v_{n+1} -
        v_n) / dt`` and the contact forces of the step, at time ``time`` (default: the number
        of steps recorded times ``dt`` [s]).
        """
        p, kw = self._p, {"physicsClientId": self.client}
        s0, s1, dt = self._prev, self._state(), self.timestep
        if (
            np.array_equal(s0["qj"], s1["qj"])
            and np.array_equal(s0["p"], s1["p"])
            and np.array_equal(s0["v_com"], s1["v_com"])
        ):
            raise StateError(
                "PybulletRecorder.record: the state did not change since the last sample; "
                "call record() once after each stepSimulation()"
            )
        q_base, v_base = base_to_pinocchio(s0["p"], s0["R"], s0["v"], s0["w"])
        # PyBullet integrates the centre of mass's velocity: its difference is exact; the
        # origin's acceleration follows at x_n (a_o = a_c - alpha x r - w x (w x r)).
        alpha = (s1["w"] - s0["w"]) / dt
        a_com = (s1["v_com"] - s0["v_com"]) / dt
        w0, r0 = s0["w"], s0["r"]
        a_origin = a_com - np.cross(alpha, r0) - np.cross(w0, np.cross(w0, r0))
        a = np.r_[
            base_acceleration_to_pinocchio(s0["R"], v_base, a_origin, alpha),
            (s1["vj"] - s0["vj"]) / dt,
        ]
        sums = self._sums()
        for c in p.getContactPoints(bodyA=self.body, **kw):
            a_is, b_is = c[1] == self.body, c[2] == self.body
            if a_is and b_is:
                continue  # self-collision: internal
            f = c[9] * np.asarray(c[7]) + c[10] * np.asarray(c[11]) + c[12] * np.asarray(c[13])
            if a_is:
                sums.add(c[3] + 1, f, c[5])
            else:
                sums.add(c[4] + 1, -f, c[6])
        t = len(self) * dt if time is None else float(time)
        self._append(t, np.r_[q_base, s0["qj"]], np.r_[v_base, s0["vj"]], a, sums)
        self._prev = s1

    def _metadata(self) -> dict[str, Any]:
        return {
            "simulator": f"PyBullet {self._p.getAPIVersion()}",
            "timestep": self.timestep,
            "solver_iterations": self._iterations,
            "accelerations": "(v[n+1] - v[n]) / dt of the engine's step",
            "mass_repairs": list(self.repairs),
            "link_damping": "set to 0 at attach" if self.link_damping == "zero" else "kept",
            **precision_metadata(np.float64),
        }
