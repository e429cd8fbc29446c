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

Each tick is one :meth:`WholeBodyController.update`, which builds the tick's QP (one
Pinocchio pass, :meth:`wholebody.Robot.controller_pass`, the one check of the state; every
task, contact and constraint row refreshed from it into buffers kept from tick to tick), and
one :meth:`WholeBodyController.solve`. Contacts are added and removed on the live
controller; the stacked layout is rebuilt only when the set of contacts changes.

The QP is solved by daqp (an exact dual active-set method) in its own workspace
(``daqp.Model``): set up once per layout, then updated in place each tick and
warm-started from the last tick's working set (at 1 kHz the active set rarely changes from
one tick to the next); the equality rows are eliminated first (daqp's ``eq_reduction``).
*Lazy* constraints (:class:`TorqueLimits`) stay out of daqp's rows while the answer without
them meets them (the optimum of a relaxation that is feasible is the optimum), in a second
workspace with them from a tick that needs them until none is near its bound. Every
solution is checked before it is returned: each row (the floating-base equations, the
contacts held, the cones and bounds) met within 1e-9 of the robot's weight. A failed solve
or check is solved again from a cold workspace, and failing again, raises a
:class:`~wholebody.errors.SolverError` that names the constraint groups without which the QP
has a solution, or the groups the answer breaks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
from ..robot import ControllerPass, Robot
from ._contact_state import ContactState
from ._layout import ControlLayout
from .constraints import (
    UNBOUNDED,
    Constraint,
    FrictionCones,
    JointBounds,
    NormalForceBounds,
    TorqueLimits,
)
from .tasks import AccelerationTask, ContactForceTask, PostureTask

__all__ = ["WholeBodyController", "ControlSolution"]

Array = NDArray[np.float64]
_DAQP_EQUALITY = 5
_DAQP_FLAGS = {-1: "infeasible", -2: "cycling", -3: "unbounded", -4: "iteration limit"}
#: daqp's settings: the equality rows (floating base, contacts) eliminated before the
#: active-set iterations on the inequality rows.
_DAQP_SETTINGS = {"eq_reduction": 1}
# A ufunc reduction: ndarray.max() goes through a Python wrapper.
_max = np.maximum.reduce
#: Constraints that write the same entries of their rows at every tick of a layout (the rest
#: of their rows stays zero): their rows are not zeroed before each fill.
_OWN_PATTERN = (FrictionCones, NormalForceBounds, TorqueLimits, JointBounds)


class _QP:
    """The QP of one layout and one set of constraints, its buffers reused tick to tick:
    ``lower <= C x <= upper`` (the equality rows first, ``lower = upper``), the cost
    ``x^T P x / 2 + q^T x``, daqp's row senses and its workspace; each constraint's views of
    its rows."""

    def __init__(self, kin: ControllerPass, layout: ControlLayout, constraints: list[Constraint]):
        self.layout = layout
        n, nv = layout.n, layout.nv
        me = 6 + (n - nv)
        ordered = [c for c in constraints if not c.lazy] + [c for c in constraints if c.lazy]
        sizes = [c.rows(kin, layout) for c in ordered]
        m = me + sum(sizes)
        self.m, self.me = m, me
        #: Rows without the lazy constraints' (a prefix of the rows).
        self.m_core = m - sum(k for c, k in zip(ordered, sizes, strict=True) if c.lazy)
        self.C = np.zeros((m, n))
        self.lower, self.upper = np.zeros(m), np.zeros(m)
        self.sense = np.zeros(m, dtype=np.intc)
        self.sense[:me] = _DAQP_EQUALITY
        layout.rhs = self.lower[6:me]  # the contacts' rows' right-hand side, written there
        self.kdJv = np.zeros(me - 6)
        self.spans: list[tuple[str, slice]] = [
            ("dynamics", slice(0, 6)),
            ("contacts", slice(6, me)),
        ]
        #: Each constraint's views of its rows, the lazy ones' apart (written when needed).
        self.fills: list[tuple[Constraint, Array, Array, Array]] = []
        self.lazy_fills: list[tuple[Constraint, Array, Array, Array]] = []
        #: Rows of constraints that do not rewrite their whole pattern each tick: zeroed first.
        self.zeroed: list[Array] = []
        r = me
        for c, k in zip(ordered, sizes, strict=True):
            rows = slice(r, r + k)
            if k:
                views = (c, self.C[rows], self.lower[rows], self.upper[rows])
                (self.lazy_fills if c.lazy else self.fills).append(views)
                if not c.lazy and type(c) not in _OWN_PATTERN:
                    self.zeroed.append(self.C[rows])
            self.spans.append((c.name, rows))
            r += k
        self.lazy_filled = False  # the lazy rows written for this tick
        self.P = np.zeros((n, n))
        self.P_diagonal = np.einsum("ii->i", self.P)  # a writable view
        self.q = np.zeros(n)
        #: The dense tasks' stack and the other tasks' cost calls on these buffers, and the
        #: controller's task list they were made from (made by the controller).
        self.stack: _TaskStack | None = None
        self.cost_calls: list[tuple[Callable[..., None], tuple[Any, ...]]] = []
        self.cost_tasks: list[AccelerationTask] | None = None
        #: daqp's workspaces (daqp.Model) of the rows without and with the lazy constraints',
        #: set up at their first solve; whether the last tick needed the lazy rows.
        self.workspaces: list[Any] = [None, None]
        self.lazy_needed = False
        mc = self.m_core
        C, lower, upper = self.C, self.lower, self.upper
        #: Per workspace: daqp's row arguments (A, bupper, blower, sense) and the check's
        #: (C, lower, upper and two buffers).
        self.rows = [
            (C[:mc], upper[:mc], lower[:mc], self.sense[:mc]),
            (C, upper, lower, self.sense),
        ]
        cx, gap = np.zeros(m), np.zeros(m)
        self.checks = [
            (C[:mc], lower[:mc], upper[:mc], cx[:mc], gap[:mc]),
            (C, lower, upper, cx, gap),
        ]
        self._views: _RowViews | None = None

    def views(self, kin: ControllerPass) -> _RowViews:
        """The views of these rows and of the pass's arrays that a tick reads and writes,
        made again only when the pass's arrays are new ones (its model was copied)."""
        views = self._views
        if views is None or views.M is not kin.mass_matrix or views.h is not kin.nonlinear_effects:
            views = self._views = _RowViews(self, kin)
        return views

    def solve(self, lazy: bool) -> tuple[Array | None, int]:
        """daqp on the rows, with the lazy constraints' (``lazy``) or without: ``(x, exit
        flag)`` (``x`` None on failure, a flag <= 0).

        The workspace is set up at its first call (or after a failure) and otherwise
        updated with the buffers' new values, keeping its last solve's working set."""
        work = self.workspaces[lazy]
        rows = self.rows[lazy]
        if work is None:
            work = self.workspaces[lazy] = daqp.Model()
            work.settings = _DAQP_SETTINGS
            flag, _ = work.setup(self.P, self.q, *rows)
        else:
            flag = work.update(self.P, self.q, *rows[:3])
        if flag >= 0:
            x, _, flag, _ = work.solve()
        if flag <= 0:
            self.workspaces[lazy] = None  # its next solve starts from a cold workspace
            return None, min(flag, 0)
        return x, flag

    def largest_gap(self, x: Array, lazy: bool) -> float:
        """The largest violation of the rows (with the lazy constraints' or without) at
        ``x``: ``max(C x - upper, lower - C x)``, ``|C x - b|`` on the equality rows; NaN
        when ``x`` is not finite."""
        C, lower, upper, cx, gap = self.checks[lazy]
        C.dot(x, out=cx)
        np.subtract(cx, upper, out=gap)
        np.subtract(lower, cx, out=cx)
        np.maximum(gap, cx, out=gap)
        return float(_max(gap))


class _RowViews:
    """Views of the rows' buffers and of the pass's arrays for one tick's writes, made once
    (slicing costs per tick)."""

    def __init__(self, qp: _QP, kin: ControllerPass):
        layout, me = qp.layout, qp.me
        nv = layout.nv
        self.M, self.h = M, h = kin.mass_matrix, kin.nonlinear_effects
        self.M_b, self.h_b, self.M_j, self.h_j = M[:6], h[:6], M[6:], h[6:]
        Jc = layout.jacobian
        self.Jc_base_T, self.Jc_j = Jc[:, :6].T, Jc[:, 6:]
        C = qp.C
        self.C_base_a, self.C_base_w, self.C_contacts_a = C[:6, :nv], C[:6, nv:], C[6:me, :nv]
        self.lower_base, self.lower_eq, self.upper_eq = qp.lower[:6], qp.lower[:me], qp.upper[:me]


class _TaskStack:
    """The dense acceleration tasks' rows stacked, for their cost
    ``sum_i w_i ||S_i (J_i a - r_i)||^2`` (``r_i = desired - drift``) formed at once.

    Each tick the tasks' ``J_i`` and ``-r_i`` are copied, unscaled, into ``J`` (over all
    ``n`` columns of ``x``, zero on the wrenches') and ``nr``; with ``s2`` the rows' weights
    (``w_i`` on the rows that count, 0 elsewhere), ``SJ = diag(s2) J`` (one product over
    contiguous rows), ``P = J^T SJ`` and ``q = SJ^T nr`` (the whole of both, at once)."""

    def __init__(self, tasks: list[AccelerationTask], nv: int, n: int):
        sizes = [t.size for t in tasks]
        rows = sum(sizes)
        self.s2_column = np.zeros((rows, 1))
        self.s2 = self.s2_column[:, 0]
        self.J = np.zeros((rows, n))
        self.JT = self.J.T
        self.nr = np.zeros(rows)
        self.SJ = np.zeros((rows, n))
        #: Per task: its rows of J (the acceleration columns), nr and s2.
        self.items: list[tuple[AccelerationTask, Array, Array, Array]] = []
        at = 0
        for t, k in zip(tasks, sizes, strict=True):
            sl = slice(at, at + k)
            self.items.append((t, self.J[sl, :nv], self.nr[sl], self.s2[sl]))
            at += k
        self.versions = [-1] * len(tasks)  # of the row weights copied into s2


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
    """Task-space inverse dynamics with run-time contacts, one exact QP solve per tick.

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
        #: The tick's one Pinocchio pass (its call checks the state: once per tick).
        self.kin = robot.controller_pass()
        self.dt = float(dt)
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise InvalidArgumentError(f"dt must be a positive period [s], got {dt!r}")
        if not (np.isfinite(regularization) and regularization >= 0):
            raise InvalidArgumentError(
                f"regularization must be finite and >= 0, got {regularization!r}"
            )
        self.regularization = float(regularization)
        # Tolerance of the solution's check [N-scale]: 1e-9 of the weight.
        self._tolerance = 1e-9 * max(1.0, float(robot.weight))
        self.pyramid_faces = int(pyramid_faces)
        self.tasks: list[AccelerationTask | ContactForceTask] = []
        self.constraints: list[Constraint] = [FrictionCones(), NormalForceBounds()]
        if torque_limits is not False:
            limits = robot.model.effortLimit[6:] if torque_limits is None else torque_limits
            self.constraints.append(TorqueLimits(np.asarray(limits, dtype=float)))
        self._contacts: dict[str, ContactState] = {}
        self._layout: ControlLayout | None = None
        self._qp: _QP | None = None
        self._dense: list[AccelerationTask] | None = None  # the tasks of the stacked cost
        self._other_tasks: list[Any] = []
        self._motion_tasks: list[AccelerationTask] = []
        self._removing: set[str] = set()  # contacts ramping down
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
        self._dense = None
        return task

    def remove_task(self, name: str) -> None:
        """Remove the task called ``name``."""
        self.tasks.remove(self.task(name))
        self._dense = None

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
            self._removing.discard(name)
            self._layout = None
            return
        f0 = state.max_normal_force
        if self._last is not None and name in self._last.wrenches:
            f = self._last.wrenches[name][:3]
            f0 = float(state.placement.rotation @ state.normal @ f)
        state.start_removal(ramp, f0)
        self._removing.add(name)

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
        r = start - nv
        layout.jacobian = np.zeros((r, nv))
        for name in ("drift", "error", "kp", "kd", "desired", "rhs"):
            setattr(layout, name, np.zeros(r))
        layout.rotations = np.zeros((len(states), 3, 3))
        row = 0
        for i, s in enumerate(states):
            rows = slice(row, row + s.size)
            s.bind(
                layout.jacobian[rows],
                layout.drift[rows],
                layout.error[rows],
                layout.kp[rows],
                layout.kd[rows],
                layout.desired[rows],
                layout.rotations[i],
            )
            row += s.size
        if cs is not None:
            layout.faces = np.zeros((cs.n_rows, cs.n))
        return layout

    def update(self, q: ArrayLike, v: ArrayLike, t: float | None = None) -> None:
        """Build the tick's QP at ``(q, v)`` and time ``t`` [s] (default: the last time + dt).

        The state is checked here, once (the pass's call), and trusted by every task and
        constraint. Ends finished contact ramps; refreshes every task, contact and
        constraint row and the cost from the tasks' weights and references as they are now.
        """
        t = (0.0 if self.time is None else self.time + self.dt) if t is None else float(t)
        self.time = t
        if self._removing:
            for name in [n for n in self._removing if self._contacts[n].finished(t)]:
                del self._contacts[name]
                self._removing.discard(name)
                self._layout = None
        kin = self.kin
        kin(q, v)
        layout = self._layout
        if layout is None:
            layout = self._layout = self._make_layout()
        layout.time = t
        for s in layout.contacts:
            s.bounds = s.normal_force_bounds(t)  # (starts the ramps begun since the last update)
            s.update(kin)
        if self._dense is None:
            self._sort_tasks()
        for task in self._motion_tasks:
            task.update(kin)
        qp = self._qp
        if qp is None or qp.layout is not layout:
            qp = self._qp = _QP(kin, layout, self.constraints)
        self._assemble(kin, qp)
        self._cost(qp)
        self._ready = True

    def _sort_tasks(self) -> None:
        """Split the tasks: dense ones (the base class's cost) stacked, the others called."""
        for task in self.tasks:  # a first update sizes tasks that depend on the robot
            if isinstance(task, AccelerationTask) and task.jacobian.shape[1] != self.kin.nv:
                task.update(self.kin)
        self._motion_tasks = [t for t in self.tasks if isinstance(t, AccelerationTask)]
        dense = [t for t in self._motion_tasks if type(t).add_cost is AccelerationTask.add_cost]
        self._other_tasks = [t for t in self.tasks if not any(t is d for d in dense)]
        self._dense = dense

    def _assemble(self, kin: ControllerPass, qp: _QP) -> None:
        """The tick's rows: the floating base's, the contacts' and each constraint's."""
        layout, v = qp.layout, qp.views(kin)
        # Floating base: M_b a - J_b^T w = -h_b.
        v.C_base_a[...] = v.M_b
        np.negative(v.h_b, out=v.lower_base)
        if qp.me > 6:
            # Contacts held: J_c a = desired - drift (rows stacked by the contacts' updates),
            # every contact's PD at once: desired = kp e - kd J v. The right-hand side is
            # written straight into the rows' bounds (layout.rhs is a view of them).
            Jc = layout.jacobian
            desired = layout.desired
            np.multiply(layout.kp, layout.error, out=desired)
            kdJv = Jc.dot(kin.v, out=qp.kdJv)  # ndarray.dot: less dispatch than matmul
            kdJv *= layout.kd
            desired -= kdJv
            np.subtract(desired, layout.drift, out=layout.rhs)
            np.negative(v.Jc_base_T, out=v.C_base_w)
            v.C_contacts_a[...] = Jc
        v.upper_eq[...] = v.lower_eq
        for Cr in qp.zeroed:
            Cr[:] = 0.0
        for c, Cr, lo, up in qp.fills:
            c.fill(kin, layout, Cr, lo, up)
        qp.lazy_filled = False

    def _fill_lazy(self, qp: _QP) -> None:
        """Write the lazy constraints' rows of this tick (once per update)."""
        if not qp.lazy_filled:
            for c, Cr, lo, up in qp.lazy_fills:
                Cr[:] = 0.0
                c.fill(self.kin, qp.layout, Cr, lo, up)
            qp.lazy_filled = True

    def _cost(self, qp: _QP) -> None:
        """The tick's cost into ``qp.P`` and ``qp.q``: the dense tasks' stacked product, the
        regularization, then each other task's own terms."""
        stack = qp.stack
        if stack is None or qp.cost_tasks is not self._dense:
            assert self._dense is not None
            stack = qp.stack = _TaskStack(self._dense, qp.layout.nv, qp.layout.n)
            qp.cost_calls, qp.cost_tasks = self._cost_calls(qp), self._dense
        if stack.items:
            versions, subtract = stack.versions, np.subtract
            # Each task's rows copied unscaled, then weighted all at once.
            for i, (task, Ji, nri, s2i) in enumerate(stack.items):
                if task.size != len(nri):  # a task resized since it was stacked
                    self._sort_tasks()
                    return self._cost(qp)
                if versions[i] != task._scale_version:
                    np.square(task._row_scale, out=s2i)
                    versions[i] = task._scale_version
                Ji[...] = task.jacobian  # (np.copyto goes through a Python dispatcher)
                subtract(task.drift, task.desired, out=nri)
            SJ = np.multiply(stack.J, stack.s2_column, out=stack.SJ)
            stack.JT.dot(SJ, out=qp.P)
            stack.nr.dot(SJ, out=qp.q)
        else:
            qp.P.fill(0.0)
            qp.q.fill(0.0)
        qp.P_diagonal += self.regularization
        for call, args in qp.cost_calls:
            call(*args)

    def _cost_calls(self, qp: _QP) -> list[tuple[Callable[..., None], tuple[Any, ...]]]:
        """The other tasks' cost calls on ``qp``'s buffers (a diagonal cost given ``P``'s
        diagonal); a force task whose contact is not active is left out."""
        calls: list[tuple[Callable[..., None], tuple[Any, ...]]] = []
        diagonal = (PostureTask.add_cost, ContactForceTask.add_cost)
        for task in self._other_tasks:
            P = qp.P_diagonal if type(task).add_cost in diagonal else qp.P
            call = task.add_cost_diagonal if P is qp.P_diagonal else task.add_cost
            if isinstance(task, ContactForceTask):
                state = self._contacts.get(task.contact)
                if state is not None:
                    calls.append((call, (P, qp.q, state.columns)))
            else:
                calls.append((call, (P, qp.q)))
        return calls

    def _check_ready(self) -> _QP:
        if not self._ready or self._qp is None:
            raise StateError("WholeBodyController: call update(q, v, t) before solving")
        return self._qp

    def solve(self) -> ControlSolution:
        """Solve the QP of the last :meth:`update`: daqp's optimum, checked (see the module
        notes).

        Raises
        ------
        SolverError
            No solution at this state (daqp's exit flag and the constraint groups without
            which there is one in the message), or daqp's answer breaks a row.
        """
        qp = self._check_ready()
        # The lazy constraints' rows (torque limits) left out while the solution without
        # them meets them: it is then the optimum with them (the optimum of a relaxation,
        # feasible). After a tick that needed them, with them until none is near its bound.
        lazy = qp.lazy_needed or not qp.lazy_fills
        sol = self._solution(self._solve_checked(qp, lazy))
        if qp.lazy_fills:
            kin, layout = self.kin, qp.layout
            if not lazy and not all(
                c.satisfied(kin, layout, sol.x, sol.torque) for c, *_ in qp.lazy_fills
            ):
                qp.lazy_needed = True
                sol = self._solution(self._solve_checked(qp, True))
            if qp.lazy_needed:
                qp.lazy_needed = not all(
                    c.satisfied(kin, layout, sol.x, sol.torque, margin=True)
                    for c, *_ in qp.lazy_fills
                )
        return sol

    def _solve_checked(self, qp: _QP, lazy: bool) -> Array:
        """daqp's optimum of the rows (with the lazy constraints' or without), every one of
        them met within the tolerance; else once more from a cold workspace; else a
        SolverError."""
        if lazy:
            self._fill_lazy(qp)
        tol = self._tolerance
        x, flag = qp.solve(lazy)
        gap = np.nan if x is None else qp.largest_gap(x, lazy)
        if not gap <= tol:
            qp.workspaces[lazy] = None  # again from a cold workspace
            x, flag = qp.solve(lazy)
            gap = np.nan if x is None else qp.largest_gap(x, lazy)
        if x is None:
            culprits = self._culprits() if flag == -1 else []
            hint = (
                f"without {' or '.join(culprits)} it has one"
                if culprits
                else "relax the tasks or constraints"
            )
            raise SolverError(
                f"WholeBodyController: daqp found no solution at t = {self.time} s (exit flag "
                f"{flag}: {_DAQP_FLAGS.get(flag, 'failed')}); {hint}"
            )
        if not gap <= tol:
            broken = [f"{k} by {g:.3g}" for k, g in self.violations(x).items() if g > tol]
            raise SolverError(
                f"WholeBodyController: daqp's solution at t = {self.time} s breaks "
                f"{', '.join(broken) or 'a row (not finite)'} (tolerance {tol:.3g})"
            )
        return x

    def _culprits(self) -> list[str]:
        """The inequality groups whose removal alone makes the QP feasible (on failure only)."""
        qp = self._qp
        assert qp is not None
        self._fill_lazy(qp)
        out = []
        for name, rows in qp.spans[2:]:
            if rows.stop == rows.start:
                continue
            keep = np.ones(qp.m, dtype=bool)
            keep[rows] = False
            _, _, flag, _ = daqp.solve(
                qp.P, qp.q, qp.C[keep], qp.upper[keep], qp.lower[keep], qp.sense[keep]
            )
            if flag > 0:
                out.append(name)
        return out

    def _solution(self, x: Array) -> ControlSolution:
        """The solution of ``x`` (n,) of the last update's QP (its arrays views of ``x``)."""
        qp = self._qp
        assert qp is not None
        layout, v = qp.layout, qp.views(self.kin)
        nv = layout.nv
        a = x[:nv]
        tau = v.M_j.dot(a)
        tau += v.h_j
        if layout.n > nv:
            tau -= x[nv:].dot(v.Jc_j)
        wrenches = {s.name: x[s.columns] for s in layout.contacts}
        sol = ControlSolution(layout.time, x, a, tau, wrenches)
        self._last = sol
        return sol

    def problem(self) -> qpsolvers.Problem:
        """The QP of the last update as a :class:`qpsolvers.Problem` (fresh arrays; one-sided
        rows ``G x <= h``, equality rows ``A x = b``) for any qpsolvers backend."""
        qp = self._check_ready()
        self._fill_lazy(qp)
        me = qp.me
        C, lo, up = qp.C[me:], qp.lower[me:], qp.upper[me:]
        has_up, has_lo = up < UNBOUNDED, lo > -UNBOUNDED
        G = np.vstack([C[has_up], -C[has_lo]])
        hv = np.concatenate([up[has_up], -lo[has_lo]])
        return qpsolvers.Problem(
            qp.P.copy(), qp.q.copy(), G, hv, qp.C[:me].copy(), qp.upper[:me].copy()
        )

    def solution_from(self, x: ArrayLike) -> ControlSolution:
        """The :class:`ControlSolution` of a vector ``x`` (n,) of the last update's QP."""
        n = self._check_ready().layout.n
        x = np.array(x, dtype=float)  # a copy: the solution's arrays are views of it
        if x.shape != (n,):
            raise InvalidArgumentError(f"x must have shape ({n},), got {x.shape}")
        return self._solution(x)

    def violations(self, x: ArrayLike) -> dict[str, float]:
        """How far ``x`` (n,) breaks each constraint row group of the last update: the
        largest ``max(lower - C x, C x - upper, 0)`` per group (``"dynamics"``,
        ``"contacts"``, then each constraint's name) [N, N m, m/s^2, ...]."""
        qp = self._check_ready()
        self._fill_lazy(qp)
        x = np.asarray(x, dtype=float)
        if x.shape != (qp.layout.n,):
            raise InvalidArgumentError(f"x must have shape ({qp.layout.n},), got {x.shape}")
        cx = qp.C @ x
        gap = np.maximum(qp.lower - cx, cx - qp.upper)
        return {name: float(max(gap[s].max(initial=0.0), 0.0)) for name, s in qp.spans}

    def rows(self) -> tuple[Array, Array, Array]:
        """``(C, lower, upper)`` of the last update (equality rows first: lower = upper); the
        controller's buffers, which the next update overwrites (copy them to keep them)."""
        qp = self._check_ready()
        self._fill_lazy(qp)
        return qp.C, qp.lower, qp.upper

    def cost(self) -> tuple[Array, Array]:
        """``(P, q)`` of the last update's cost ``x^T P x / 2 + q^T x``; the controller's
        buffers, which the next update overwrites (copy them to keep them)."""
        qp = self._check_ready()
        return qp.P, qp.q

    def names(self) -> Sequence[str]:
        """Names of the tasks, in order."""
        return [t.name for t in self.tasks]
