"""The whole-body controller: tasks, constraints and contacts that change at run time.

Decision variables ``x = (a, w)``: the generalized accelerations ``a`` (nv) and the wrenches
``w`` of the *active* contacts, stacked in the order they were added (world axes at each
contact frame's origin; 3 per point, 6 per surface contact).

.. math::

    \\min_x \\sum_i \\omega_i \\| S_i (J_i a + \\dot J_i v - a^*_i) \\|^2
    + \\sum_c \\omega_c \\| w_c - w^*_c \\|^2_{W_c} + \\epsilon \\|x\\|^2
    \\quad \\text{s.t.} \\quad
    \\begin{cases}
    M_b a + h_b = J_b^T w & \\text{(floating base, 6)} \\\\
    J_c a + \\dot J_c v = k_p e_c - k_d J_c v & \\text{(each contact held, drift stabilised)} \\\\
    \\text{lower} \\le C x \\le \\text{upper} & \\text{(cones, normal forces, torques, joints)}
    \\end{cases}

Each tick is one :meth:`WholeBodyController.update` (one Pinocchio pass, every task and row
refreshed from it) and one :meth:`WholeBodyController.solve` (daqp on the stacked buffers).
Contacts are added and removed on the live controller; the stacked layout is rebuilt only
when the set of contacts changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import daqp
import numpy as np
import pinocchio as pin
import qpsolvers
from numpy.typing import ArrayLike, NDArray

from ..contacts import Contact, PointContact, SurfaceContact
from ..errors import InvalidArgumentError, SolverError, StateError
from ..friction import ContactSet
from ..robot import Robot
from ._contact_state import ContactState
from ._layout import ControlLayout
from ._tick import TickKinematics
from .constraints import (
    UNBOUNDED,
    Constraint,
    FrictionCones,
    NormalForceBounds,
    TorqueLimits,
)
from .tasks import AccelerationTask, ContactForceTask

__all__ = ["WholeBodyController", "ControlSolution"]

Array = NDArray[np.float64]
_DAQP_EQUALITY = 5
_DAQP_FLAGS = {-1: "infeasible", -2: "cycling", -3: "unbounded", -4: "iteration limit"}


@dataclass(frozen=True)
class ControlSolution:
    """One tick's answer.

    Attributes
    ----------
    time : float
        [s]
    x : ndarray (n,)
        ``(a, w)``.
    acceleration : ndarray (nv,)
        ``a`` (base part in the base frame, as ``v``).
    torque : ndarray (nv - 6,)
        ``tau = S (M a + h - J^T w)`` [N m].
    wrenches : dict of str to ndarray
        Each active contact's wrench (3,) or (6,), world axes at its frame origin [N, N m].
    """

    time: float
    x: Array
    acceleration: Array
    torque: Array
    wrenches: dict[str, Array]


class WholeBodyController:
    """Task-space inverse dynamics with run-time contacts, solved by daqp each tick.

    Parameters
    ----------
    robot : Robot
        Floating-base robot.
    dt : float
        Control period [s], the default step of the time between updates.
    torque_limits : array (nv - 6,) or None or False
        ``|tau| <= torque_limits`` [N m]; None takes the model's effort limits, False none.
    regularization : float
        ``epsilon`` of the objective.
    pyramid_faces : int
        Faces of the inner friction pyramids of point contacts.

    Examples
    --------
    >>> ctrl = WholeBodyController(robot, dt=1e-3)                   # doctest: +SKIP
    >>> for sole in soles: ctrl.add_contact(sole, kp=10.0, kd=7.0)   # doctest: +SKIP
    >>> com = ctrl.add_task(ComTask(kp=25.0, kd=10.0))               # doctest: +SKIP
    >>> ctrl.update(q, v, t)                                         # doctest: +SKIP
    >>> sol = ctrl.solve()                                           # doctest: +SKIP
    """

    def __init__(
        self,
        robot: Robot,
        *,
        dt: float = 1e-3,
        torque_limits: ArrayLike | None | bool = None,
        regularization: float = 1e-8,
        pyramid_faces: int = 4,
    ):
        self.robot = robot
        self.kin = TickKinematics(robot)
        self.dt = float(dt)
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise InvalidArgumentError(f"dt must be a positive period [s], got {dt!r}")
        if not (np.isfinite(regularization) and regularization >= 0):
            raise InvalidArgumentError(
                f"regularization must be finite and >= 0, got {regularization!r}"
            )
        self.regularization = float(regularization)
        self.pyramid_faces = int(pyramid_faces)
        self.tasks: list[AccelerationTask | ContactForceTask] = []
        self.constraints: list[Constraint] = [FrictionCones(), NormalForceBounds()]
        if torque_limits is not False:
            limits = robot.model.effortLimit[6:] if torque_limits is None else torque_limits
            self.constraints.append(TorqueLimits(np.asarray(limits, dtype=float)))
        self._contacts: dict[str, ContactState] = {}
        self._layout: ControlLayout | None = None
        self.time: float | None = None
        self._last: ControlSolution | None = None
        self._ready = False

    # --- tasks and constraints --------------------------------------------------------------

    def add_task(self, task: Any) -> Any:
        """Add a task (an :class:`AccelerationTask` or a :class:`ContactForceTask`); returns it."""
        if not isinstance(task, (AccelerationTask, ContactForceTask)):
            raise InvalidArgumentError(f"not a task: {type(task).__name__}")
        if any(t.name == task.name for t in self.tasks):
            raise InvalidArgumentError(f"a task named {task.name!r} is already there")
        self.tasks.append(task)
        return task

    def remove_task(self, name: str) -> None:
        """Remove the task called ``name``."""
        self.tasks.remove(self.task(name))

    def task(self, name: str) -> Any:
        """The task called ``name``."""
        for t in self.tasks:
            if t.name == name:
                return t
        raise InvalidArgumentError(f"no task named {name!r}; tasks: {[t.name for t in self.tasks]}")

    def add_constraint(self, constraint: Constraint) -> Constraint:
        """Add an inequality constraint (e.g. :class:`JointBounds`); returns it."""
        if not isinstance(constraint, Constraint):
            raise InvalidArgumentError(f"not a constraint: {type(constraint).__name__}")
        if any(c.name == constraint.name for c in self.constraints):
            raise InvalidArgumentError(f"a constraint named {constraint.name!r} is already there")
        self.constraints.append(constraint)
        self._layout = None
        return constraint

    def remove_constraint(self, name: str) -> None:
        """Remove the constraint called ``name``."""
        for c in self.constraints:
            if c.name == name:
                self.constraints.remove(c)
                self._layout = None
                return
        raise InvalidArgumentError(f"no constraint named {name!r}")

    # --- contacts ---------------------------------------------------------------------------

    def add_contact(
        self,
        contact: Contact,
        *,
        kp: float = 0.0,
        kd: float = 0.0,
        min_normal_force: float = 0.0,
        max_normal_force: float = np.inf,
        ramp: float = 0.0,
        ramp_force: float | None = None,
        reference: pin.SE3 | None = None,
    ) -> ContactState:
        """Make a contact active from the next update on.

        Parameters
        ----------
        contact : PointContact or SurfaceContact
        kp, kd : float
            Drift stabilisation gains [1/s^2], [1/s] of the contact frame's acceleration.
        min_normal_force, max_normal_force : float
            Bounds of the normal force [N] once fully active.
        ramp : float
            Duration [s] over which the maximum normal force rises from zero.
        ramp_force : float, optional
            The bound's value at the end of the ramp [N]; default the robot's weight.
        reference : pinocchio.SE3, optional
            The placement held; default the frame's placement at the next update.
        """
        if not isinstance(contact, (PointContact, SurfaceContact)):
            raise InvalidArgumentError(
                f"contact must be a PointContact or SurfaceContact, got {type(contact).__name__}"
            )
        if contact.name in self._contacts:
            raise InvalidArgumentError(f"contact {contact.name!r} is already active")
        self.robot.frame_id(contact.frame)  # a typed error names an unknown frame now
        if not (np.isfinite(ramp) and ramp >= 0):
            raise InvalidArgumentError(f"ramp must be a duration >= 0 [s], got {ramp!r}")
        state = ContactState(
            contact,
            kp=kp,
            kd=kd,
            min_normal_force=min_normal_force,
            max_normal_force=max_normal_force,
            ramp=ramp,
            ramp_force=self.robot.weight if ramp_force is None else ramp_force,
            reference=reference,
        )
        self._contacts[contact.name] = state
        self._layout = None
        return state

    def remove_contact(self, name: str, *, ramp: float = 0.0) -> None:
        """Remove a contact, at once (``ramp = 0``) or after ramping its maximum normal force
        from the last solution's normal force to zero over ``ramp`` seconds from the next
        update (the contact stays held meanwhile and leaves at the first update at or after
        the ramp's end, when the bound is zero)."""
        state = self._contacts.get(name)
        if state is None:
            raise InvalidArgumentError(
                f"no active contact {name!r}; active: {list(self._contacts)}"
            )
        if not (np.isfinite(ramp) and ramp >= 0):
            raise InvalidArgumentError(f"ramp must be a duration >= 0 [s], got {ramp!r}")
        if ramp == 0:
            del self._contacts[name]
            self._layout = None
            return
        f0 = state.max_normal_force
        if self._last is not None and name in self._last.wrenches:
            f = self._last.wrenches[name][:3]
            f0 = float(state.placement.rotation @ state.normal @ f)
        state.start_removal(ramp, f0)

    @property
    def contacts(self) -> dict[str, ContactState]:
        """The active contacts (ramping ones included), by name, in column order."""
        return dict(self._contacts)

    # --- per tick ---------------------------------------------------------------------------

    @property
    def layout(self) -> ControlLayout:
        """The current columns of ``x`` (rebuilt when the contacts change)."""
        if self._layout is None:
            self._layout = self._make_layout()
        return self._layout

    def _make_layout(self) -> ControlLayout:
        nv = self.kin.nv
        states = list(self._contacts.values())
        start = nv
        for s in states:
            s.columns = slice(start, start + s.size)
            start += s.size
        cs = (
            ContactSet([s.contact for s in states], pyramid_faces=self.pyramid_faces)
            if states
            else None
        )
        layout = ControlLayout(nv, start, slice(0, nv), slice(nv, start), states, cs)
        if cs is not None:
            layout.rotations = np.zeros((len(states), 3, 3))
            layout.faces = np.zeros((cs.n_rows, cs.n))
        return layout

    def update(self, q: ArrayLike, v: ArrayLike, t: float | None = None) -> None:
        """One tick's pass at ``(q, v)`` and time ``t`` [s] (default: the last time + dt):
        ends finished contact ramps, refreshes every task, contact and constraint row."""
        t = (0.0 if self.time is None else self.time + self.dt) if t is None else float(t)
        self.time = t
        for name in [n for n, s in self._contacts.items() if s.finished(t)]:
            del self._contacts[name]
            self._layout = None
        kin = self.kin
        kin.update(q, v)
        layout = self.layout
        layout.time = t
        for s in layout.contacts:
            s.normal_force_bounds(t)  # starts the ramps begun since the last update
            s.update(kin)
        for task in self.tasks:
            if isinstance(task, AccelerationTask):
                task.update(kin)
        self._assemble(kin, layout)
        self._ready = True

    def _assemble(self, kin: TickKinematics, layout: ControlLayout) -> None:
        nv, n = kin.nv, layout.n
        me = 6 + sum(s.size for s in layout.contacts)
        sizes = [c.rows(kin, layout) for c in self.constraints]
        m = me + sum(sizes)
        C = np.zeros((m, n))
        lower, upper = np.empty(m), np.empty(m)
        M, h = kin.mass_matrix, kin.nonlinear_effects
        # Floating base: M_b a - J_b^T w = -h_b.
        C[:6, :nv] = M[:6]
        lower[:6] = upper[:6] = -h[:6]
        r = 6
        for s in layout.contacts:
            C[:6, s.columns] = -s.jacobian[:, :6].T
            # Contact held: J a = desired - drift.
            C[r : r + s.size, :nv] = s.jacobian
            lower[r : r + s.size] = upper[r : r + s.size] = s.desired - s.drift
            r += s.size
        self._spans: list[tuple[str, slice]] = [
            ("dynamics", slice(0, 6)),
            ("contacts", slice(6, me)),
        ]
        for c, k in zip(self.constraints, sizes, strict=True):
            if k:
                c.fill(kin, layout, C[r : r + k], lower[r : r + k], upper[r : r + k])
            self._spans.append((c.name, slice(r, r + k)))
            r += k
        self._C, self._lower, self._upper, self._me = C, lower, upper, me

    def _cost(self) -> tuple[Array, Array]:
        layout = self.layout
        n = layout.n
        P = np.zeros((n, n))
        qv = np.zeros(n)
        P.flat[:: n + 1] = self.regularization
        for task in self.tasks:
            if isinstance(task, ContactForceTask):
                state = self._contacts.get(task.contact)
                if state is not None:
                    task.add_cost(P, qv, state.columns)
            else:
                task.add_cost(P, qv)
        return P, qv

    def _check_ready(self) -> None:
        if not self._ready or self._layout is None:
            raise StateError("WholeBodyController: call update(q, v, t) before solving")

    def solve(self) -> ControlSolution:
        """Solve the QP of the last :meth:`update` (daqp, exact active-set).

        Raises
        ------
        SolverError
            No solution at this state (daqp's exit flag in the message).
        """
        self._check_ready()
        P, qv = self._cost()
        sense = np.zeros(len(self._upper), dtype=np.int32)
        sense[: self._me] = _DAQP_EQUALITY
        x, _, flag, _ = daqp.solve(P, qv, self._C, self._upper, self._lower, sense)
        if flag <= 0:
            culprits = self._culprits(P, qv) if flag == -1 else []
            hint = (
                f"without {' or '.join(culprits)} it has one"
                if culprits
                else "relax the tasks or constraints"
            )
            raise SolverError(
                f"WholeBodyController: daqp found no solution at t = {self.time} s (exit flag "
                f"{flag}: {_DAQP_FLAGS.get(flag, 'failed')}); {hint}"
            )
        return self._solution(np.asarray(x, dtype=float))

    def _culprits(self, P: Array, qv: Array) -> list[str]:
        """The inequality groups whose removal alone makes the QP feasible (on failure only)."""
        out = []
        for name, rows in self._spans[2:]:
            if rows.stop == rows.start:
                continue
            keep = np.ones(len(self._upper), dtype=bool)
            keep[rows] = False
            sense = np.zeros(int(keep.sum()), dtype=np.int32)
            sense[: self._me] = _DAQP_EQUALITY
            _, _, flag, _ = daqp.solve(
                P, qv, self._C[keep], self._upper[keep], self._lower[keep], sense
            )
            if flag > 0:
                out.append(name)
        return out

    def _solution(self, x: Array) -> ControlSolution:
        layout, kin = self.layout, self.kin
        a = x[: kin.nv].copy()
        tau = kin.mass_matrix[6:] @ a + kin.nonlinear_effects[6:]
        wrenches = {}
        for s in layout.contacts:
            w = x[s.columns].copy()
            tau -= s.jacobian[:, 6:].T @ w
            wrenches[s.name] = w
        sol = ControlSolution(float(self.time or 0.0), x.copy(), a, tau, wrenches)
        self._last = sol
        return sol

    def problem(self) -> qpsolvers.Problem:
        """The QP of the last update as a :class:`qpsolvers.Problem` (fresh arrays; one-sided
        rows ``G x <= h``, equality rows ``A x = b``) for any qpsolvers backend."""
        self._check_ready()
        P, qv = self._cost()
        me = self._me
        C, lo, up = self._C[me:], self._lower[me:], self._upper[me:]
        has_up, has_lo = up < UNBOUNDED, lo > -UNBOUNDED
        G = np.vstack([C[has_up], -C[has_lo]])
        hv = np.concatenate([up[has_up], -lo[has_lo]])
        return qpsolvers.Problem(P, qv, G, hv, self._C[:me].copy(), self._upper[:me].copy())

    def solution_from(self, x: ArrayLike) -> ControlSolution:
        """The :class:`ControlSolution` of a vector ``x`` (n,) of the last update's layout."""
        self._check_ready()
        x = np.asarray(x, dtype=float)
        if x.shape != (self.layout.n,):
            raise InvalidArgumentError(f"x must have shape ({self.layout.n},), got {x.shape}")
        return self._solution(x)

    def violations(self, x: ArrayLike) -> dict[str, float]:
        """How far ``x`` (n,) breaks each constraint row group of the last update: the
        largest ``max(lower - C x, C x - upper, 0)`` per group (``"dynamics"``,
        ``"contacts"``, then each constraint's name) [N, N m, m/s^2, ...]."""
        self._check_ready()
        x = np.asarray(x, dtype=float)
        if x.shape != (self.layout.n,):
            raise InvalidArgumentError(f"x must have shape ({self.layout.n},), got {x.shape}")
        cx = self._C @ x
        gap = np.maximum(self._lower - cx, cx - self._upper)
        return {name: float(max(gap[s].max(initial=0.0), 0.0)) for name, s in self._spans}

    def rows(self) -> tuple[Array, Array, Array]:
        """``(C, lower, upper)`` of the last update (equality rows first: lower = upper)."""
        self._check_ready()
        return self._C, self._lower, self._upper

    def names(self) -> Sequence[str]:
        """Names of the tasks, in order."""
        return [t.name for t in self.tasks]
