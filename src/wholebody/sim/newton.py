"""Log a Newton simulation (``newton``, on Warp) into a :class:`~wholebody.Trajectory`.

What :class:`NewtonRecorder` does, and the Newton facts behind it (Newton 1.8):

* **which solvers.** Contact forces come from the solver's ``CONTACT_F`` observable.
  ``SolverMuJoCo`` provides it; Featherstone and SemiImplicit do not: a solver without it is
  refused at attach time, naming the solver. XPBD's contact impulses do not balance the
  momentum (8.5 N median residual on a standing G1): attaching to it warns.
* **contact forces.** ``CONTACT_F`` row ``i`` is the force on body0 (the body of
  ``rigid_contact_shape0[i]``) from body1, world axes, for the step just taken; the robot's
  share is taken with the sign of its side. Where it acts depends on the solver:
  ``SolverMuJoCo`` (both its MuJoCo Warp and MuJoCo CPU paths) writes MuJoCo's contact force
  and torsional moment, acting at the contact point (the midpoint of
  ``rigid_contact_point0`` and ``rigid_contact_point1``), although Newton's docstring says
  "referenced to the centre of mass of body0"; other solvers are read as that docstring
  says (checked only for ``SolverMuJoCo``).
* **read after the step.** ``record(state_out)`` after each ``solver.step(state_in,
  state_out, ..., observables=recorder.observables)`` (a step without it writes no forces:
  refused, never logged as zeros) logs the state before the step (kept from the previous
  call, or from attaching), ``a = (v_{n+1} - v_n) / dt`` in MuJoCo's integration
  coordinates (free-joint origin velocity in world axes, angular velocity in body axes) and
  the step's forces.
* **the base.** ``body_qd`` holds the centre of mass's velocity (world) and the angular
  velocity (world): moved to the body origin and converted once to Pinocchio's base axes.
* **precision.** Newton's state is float32: ``metadata["dtype"]`` says so (a float32 log
  balances to ~1e-4 N on a 60 kg robot).
* bodies and joints mapped by **name** (labels without their articulation prefix).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..contacts import Contact
from ..errors import ModelError, StateError, WholebodyWarning, require
from ..robot import Robot
from ..spatial import rotation_from_quat_xyzw
from ._common import (
    Recorder,
    base_acceleration_between_states,
    base_to_pinocchio,
    precision_metadata,
)

__all__ = ["NewtonRecorder", "import_newton"]


def import_newton() -> Any:
    """Import :mod:`newton` or raise :class:`MissingDependencyError` with the install line."""
    return require("newton", "newton", "Newton logs")


def _label(name: str) -> str:
    return str(name).rsplit("/", 1)[-1]


class NewtonRecorder(Recorder):
    """Records a Newton simulation of one robot, then gives it as a Trajectory.

    Parameters
    ----------
    robot : Robot
        The robot the log is for, loaded from the same file as the Newton model.
    model : newton.Model
        Finalized; the robot's root joint is a free joint.
    solver : newton.solvers.SolverBase
        A solver exposing the ``CONTACT_F`` observable (``SolverMuJoCo``); others are
        refused naming the solver.
    newton_contacts : newton.Contacts
        The contacts container passed to ``solver.step``.
    contacts : sequence of Contact
        Declared contacts (matched to Newton bodies by name, see
        :class:`~wholebody.sim._common.ContactMap`).
    state : newton.State
        The state the simulation starts from (after ``newton.eval_fk``).
    timestep : float
        The ``dt`` given to ``solver.step`` [s].

    Attributes
    ----------
    observables : newton.solvers.SolverBase.Observables
        Pass it to every ``solver.step(..., observables=recorder.observables)``.
    """

    engine = "Newton"
    parts = "bodies"

    def __init__(
        self,
        robot: Robot,
        model: Any,
        solver: Any,
        newton_contacts: Any,
        contacts: Sequence[Contact],
        state: Any,
        *,
        timestep: float,
    ):
        import_newton()
        if not robot.has_floating_base:
            raise ModelError("NewtonRecorder needs a floating-base robot")
        kind = solver.ObservableKind.CONTACT_F
        name = type(solver).__name__
        if kind not in solver.supported_observables:
            raise ModelError(
                f"Newton's {name} exposes no contact forces (no CONTACT_F observable): its logs "
                "cannot be checked; simulate with SolverMuJoCo"
            )
        if "XPBD" in name:
            warnings.warn(
                f"Newton's {name}: its contact impulses do not balance the momentum (newtons "
                "of residual on a standing robot, docs/simulators.md): the log will be "
                "inconsistent",
                WholebodyWarning,
                stacklevel=2,
            )
        self.robot, self.model, self.solver = robot, model, solver
        self.solver_name = name
        self._at_contact_point = name == "SolverMuJoCo"
        self._contacts = newton_contacts
        self.observables = solver.observables(contacts=newton_contacts, kinds={kind})
        self.timestep = float(timestep)
        labels = [_label(n) for n in model.body_label]
        joint_labels = [_label(n) for n in model.joint_label]
        jtypes = np.asarray(model.joint_type.numpy())
        q_start = np.asarray(model.joint_q_start.numpy())
        qd_start = np.asarray(model.joint_qd_start.numpy())
        child = np.asarray(model.joint_child.numpy())
        free = [j for j in range(len(jtypes)) if int(jtypes[j]) == int(_free_type())]
        if len(free) != 1:
            raise ModelError(f"the Newton model has {len(free)} free joints; one robot expected")
        self._root = int(child[free[0]])
        if not robot.model.existFrame(labels[self._root]):
            raise ModelError(f"Newton's root body {labels[self._root]!r} is not a robot frame")
        by_name = {n: j for j, n in enumerate(joint_labels)}
        qi, vi = [], []
        for jn in robot.joint_names:
            j = by_name.get(jn)
            if j is None or q_start[j + 1] - q_start[j] != 1:
                raise ModelError(
                    f"robot joint {jn!r} is not a one-coordinate joint of Newton's model"
                )
            qi.append(int(q_start[j]))
            vi.append(int(qd_start[j]))
        self._qi, self._vi = np.array(qi), np.array(vi)
        # The robot's bodies: every body of the articulation (all but the world's -1).
        self._map_contacts(robot, contacts, labels)
        self._shape_body = np.asarray(model.shape_body.numpy())
        self._body_com = np.asarray(model.body_com.numpy(), float)
        self._prev = self._state(state)
        self.dtype = np.dtype(state.body_q.numpy().dtype)
        self._unwritten()

    def _unwritten(self) -> None:
        """Mark the contact count -1 and the ``CONTACT_F`` rows NaN: a step that does not
        write them (no ``observables=`` given) leaves the marks, and :meth:`record` refuses
        them instead of logging zero forces."""
        f = self.observables.contact_f
        f.assign(np.full(f.numpy().shape, np.nan, dtype=f.numpy().dtype))
        self._contacts.rigid_contact_count.fill_(-1)

    def _state(self, state: Any) -> dict[str, Any]:
        bq = np.asarray(state.body_q.numpy(), float)
        bqd = np.asarray(state.body_qd.numpy(), float)
        r = self._root
        R = rotation_from_quat_xyzw(bq[r, 3:7])
        w = bqd[r, 3:6]
        lever = R @ self._body_com[r]  # origin -> centre of mass, world
        jq = np.asarray(state.joint_q.numpy(), float)
        jqd = np.asarray(state.joint_qd.numpy(), float)
        return {
            "p": bq[r, :3],
            "R": R,
            "w": w,
            "v": bqd[r, :3] - np.cross(w, lever),  # the origin's velocity, world
            "qj": jq[self._qi],
            "vj": jqd[self._vi],
            "rotations": np.array([rotation_from_quat_xyzw(x[3:7]) for x in bq]),
            "origins": bq[:, :3],
        }

    def record(self, state_out: Any) -> None:
        """Log the step just taken: call after each ``solver.step(state_in, state_out, ...)``
        with ``observables=recorder.observables``, giving it ``state_out``.

        Raises
        ------
        StateError
            No step since the last call, or a step without ``observables=`` (its contact forces
            were not written: the log would hold zeros).
        """
        s0, s1, dt = self._prev, self._state(state_out), self.timestep
        if np.array_equal(s0["p"], s1["p"]) and np.array_equal(s0["vj"], s1["vj"]):
            raise StateError(
                "NewtonRecorder.record: the state did not change since the last sample; call "
                "record(state_out) once after each solver.step"
            )
        q_base, v_base = base_to_pinocchio(s0["p"], s0["R"], s0["v"], s0["w"])
        # The engine's integration coordinates: the origin's velocity in world axes, the
        # angular velocity in base axes, each advanced by dt * acc.
        base = base_acceleration_between_states(
            s0["R"], s1["R"], (s0["v"], s1["v"]), (s0["w"], s1["w"]), v_base, dt
        )
        a = np.r_[base, (s1["vj"] - s0["vj"]) / dt]
        c = self._contacts
        n = int(np.asarray(c.rigid_contact_count.numpy())[0])
        F = np.asarray(self.observables.contact_f.numpy(), float)[: max(n, 0)]
        if n < 0 or np.isnan(F).any():
            raise StateError(
                "NewtonRecorder.record: the step wrote no contact forces (the CONTACT_F "
                "observable and the contact count are as record() left them): pass "
                "observables=recorder.observables to every solver.step"
            )
        self._unwritten()
        sh0 = np.asarray(c.rigid_contact_shape0.numpy())[:n]
        sh1 = np.asarray(c.rigid_contact_shape1.numpy())[:n]
        p0 = np.asarray(c.rigid_contact_point0.numpy(), float)[:n]
        p1 = np.asarray(c.rigid_contact_point1.numpy(), float)[:n]
        sums = self._sums()

        def world(body: int, local: Any) -> Any:  # a body-local point at x_n, world [m]
            if body < 0:
                return local
            return s0["origins"][body] + s0["rotations"][body] @ local

        for i in range(n):
            b0, b1 = int(self._shape_body[sh0[i]]), int(self._shape_body[sh1[i]])
            if (b0 >= 0) == (b1 >= 0):
                continue  # between two robot bodies (internal), or none
            if self._at_contact_point:
                ref = 0.5 * (world(b0, p0[i]) + world(b1, p1[i]))
            elif b0 >= 0:
                R0 = s0["rotations"][b0]
                ref = s0["origins"][b0] + R0 @ self._body_com[b0]
            else:
                ref = np.zeros(3)
            f, tau = F[i, :3], F[i, 3:]
            # About the world origin: the force on body0 at its reference point.
            if b0 >= 0:
                sums.add(b0, f, ref, tau)
            else:
                sums.add(b1, -f, ref, -tau)
        self._append(len(self) * dt, np.r_[q_base, s0["qj"]], np.r_[v_base, s0["vj"]], a, sums)
        self._prev = s1

    def _metadata(self) -> dict[str, Any]:
        import newton

        return {
            "simulator": f"Newton {getattr(newton, '__version__', '')} {self.solver_name}",
            "timestep": self.timestep,
            **precision_metadata(self.dtype),
        }


def _free_type() -> int:
    import newton

    return int(newton.JointType.FREE)
