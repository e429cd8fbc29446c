"""The whole-body controller: tasks, constraints and contacts that change at run time, hard or
soft, in strict priority levels.

Decision variables ``x = (a, w, s)``: the generalized accelerations ``a`` (nv), the wrenches
``w`` of the *active* contacts, stacked in the order they were added (world axes at each
contact frame's origin; 3 per point, 6 per surface contact), and the slacks ``s`` of the
soft constraints (one per row).

.. math::

    \\text{level } k: \\min_x \\sum_{i \\in k} \\omega_i \\| S_i (J_i x + \\dot J_i v - x^*_i) \\|^2
    + \\sum_{c \\in k} (\\omega_c \\mathbf{1}^T s_c + \\|s_c\\|^2 / 2) + \\epsilon \\|x\\|^2
    \\quad \\text{s.t.} \\quad
    \\begin{cases}
    M_b a + b_b = J_b^T w & \\text{(floating base, 6)} \\\\
    J_c a + \\dot J_c v = k_p e_c - k_d J_c v & \\text{(each rigid contact held)} \\\\
    S_i (J_i x + \\dot J_i v) = S_i x^*_i & \\text{(each hard task)} \\\\
    \\text{lower} \\le C x \\le \\text{upper} & \\text{(hard cones, forces, torques, joints)} \\\\
    \\text{lower} - s \\le C x \\le \\text{upper} + s, \\; s \\ge 0 & \\text{(soft ones)} \\\\
    \\text{each higher level's optimum kept} & \\text{(its tasks' values, its slacks)}
    \\end{cases}

with ``b = h - sum_e J_e^T w_e`` (the measured external wrenches of the update). Every task,
contact and constraint has a *priority*: 0 makes it hard (an equality, a rigid contact, a
bound that holds), 1, 2, ... a weighted cost of that level. A soft contact's cost is its
rows' squared residual; a soft constraint's is ``weight * s + s^2 / 2`` for each row's
violation ``s``: an exact penalty, its rows met exactly whenever they can be and the weight
exceeds what meeting them costs the level (their multiplier; on a level above the tasks
they compete with, what it costs the level's regularization alone).

Levels are solved in order, each on the points that keep the optimum of those above: their
tasks' values (``diag(w) J x``, the rows of their cost) and their soft constraints'
slacks at most theirs; with one level (the default, priority 1) this is one QP. A level
above the lowest is regularized by at least 1e-6, about the last tick's solution: there the
regularization only picks one of the level's optima (moving the values it keeps by its
order); a smaller one left such a level, whose few tasks leave most of ``x`` to it, too
ill-conditioned for daqp, and one about zero picked wrenches at a cone's apex (a foot
unloaded), a degenerate start for the levels below.

Each tick is one :meth:`WholeBodyController.update`, which builds the tick's QP (one
Pinocchio pass, :meth:`wholebody.Robot.controller_pass`, the one check of the state; every
task, contact and constraint row refreshed from it into buffers kept from tick to tick), and
one :meth:`WholeBodyController.solve`. Contacts are added and removed on the live
controller; the stacked layout is rebuilt only when the set of contacts changes.

Each level's QP is solved by daqp (an exact dual active-set method) in its own workspace
(``daqp.Model``): set up once per layout, then updated in place each tick and warm-started
from the last tick's working set (at 1 kHz the active set rarely changes from one tick to
the next). A lower level's QP holds every row and the rows kept (see
:mod:`wholebody.control._qp`). *Lazy* constraints (:class:`TorqueLimits`) stay out
of daqp's rows while the answer without them meets them (the optimum of a relaxation that
is feasible is the optimum), in a second workspace with them from a tick that needs them
until none is near its bound. Every solution is checked before it is used: each row (the
floating-base equations, the contacts held, the hard tasks, the cones and bounds, the kept
rows) met within 1e-9 of the robot's weight. A failed solve or check is solved again from a
cold workspace with daqp's other settings, and failing again, raises a
:class:`~wholebody.errors.SolverError` that names the constraint groups (hard tasks and
constraints) without which the QP has a solution, or the groups the answer breaks (a lower
level, which always has a solution, keeps the level above's instead: see its notes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import daqp
import numpy as np
import pinocchio as pin
import qpsolvers
from numpy.typing import ArrayLike, NDArray

from ..contacts import Contact, PointContact, SurfaceContact
from ..errors import ContactNotFoundError, InvalidArgumentError, SolverError, StateError
from ..friction import ContactSet
from ..robot import ControllerPass, Robot
from ._contact_state import ContactState
from ._inputs import as_placement, as_vector
from ._layout import ControlLayout
from ._qp import QP, Level
from .constraints import (
    UNBOUNDED,
    Constraint,
    FrictionCones,
    NormalForceBounds,
    TorqueLimits,
)
from .tasks import AccelerationTask

__all__ = ["WholeBodyController", "ControlSolution"]

Array = NDArray[np.float64]
_DAQP_FLAGS = {-1: "infeasible", -2: "cycling", -3: "unbounded", -4: "iteration limit"}
#: The least regularization of a priority level above the lowest. There it only picks a
#: point among the level's optima (the rows it keeps for the levels below are its tasks'
#: values, which it moves by its order); with less, a level whose few tasks leave most of
#: ``x`` to it was too ill-conditioned for daqp, which reported feasible QPs infeasible.
UPPER_REGULARIZATION = 1e-6


@dataclass(slots=True)
class ControlSolution:
    """One tick's answer (its arrays are views of ``x``).

    Attributes
    ----------
    time : float
        [s]
    x : ndarray (n,)
        ``(a, w, s)``.
    acceleration : ndarray (nv,)
        ``a`` (base part in the base frame, as ``v``).
    torque : ndarray (nv - 6,)
        ``tau = S (M a + b - J^T w)`` [N m], ``b = h - sum_e J_e^T w_e``.
    wrenches : dict of str to ndarray
        Each active contact's wrench (3,) or (6,), world axes at its frame origin [N, N m].
    slacks : dict of str to ndarray
        Each soft constraint's slacks (rows,): how far each of its rows is past its bound
        (zero where it holds).
    """

    time: float
    x: Array
    acceleration: Array
    torque: Array
    wrenches: dict[str, Array]
    slacks: dict[str, Array]


def _priority(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise InvalidArgumentError(
            f"{what}: priority must be an integer >= 0 (0 hard, 1, 2, ... the levels of "
            f"the cost), got {value!r}"
        )
    return int(value)


def _time(value: float) -> float:
    try:
        t = float(value)
    except (TypeError, ValueError):
        t = math.nan  # refused below
    if not math.isfinite(t):
        raise InvalidArgumentError(f"t must be a finite time [s], got {value!r}")
    return t


def _soft_weight(value: float, priority: int, what: str) -> float:
    w = float(value)
    if not (np.isfinite(w) and (w > 0 or priority == 0)):
        raise InvalidArgumentError(f"{what}: weight must be finite and > 0, got {value!r}")
    return w


class WholeBodyController:
    """Task-space inverse dynamics with run-time contacts, hard or soft tasks, contacts and
    constraints, in strict priority levels; one exact QP solve per level and tick.

    Parameters
    ----------
    robot : Robot
        Floating-base robot.
    dt : float
        Control period [s], the default step of the time between updates.
    torque_limits : array (nv - 6,) or None or False
        ``|tau| <= torque_limits`` [N m]; None takes the model's effort limits, False none.
    regularization : float
        ``epsilon`` of the objective (of the lowest priority level; the levels above it
        take at least 1e-6).
    pyramid_faces : int
        Faces of the inner friction pyramids of point contacts.

    Examples
    --------
    >>> ctrl = WholeBodyController(robot, dt=1e-3)                   # doctest: +SKIP
    >>> for sole in soles: ctrl.add_contact(sole, kp=10.0, kd=7.0)   # doctest: +SKIP
    >>> com = ctrl.add_task(ComTask(kp=25.0, kd=10.0))               # doctest: +SKIP
    >>> ctrl.add_task(PostureTask(kp=50.0, kd=14.0), priority=2)     # doctest: +SKIP
    >>> ctrl.add_constraint(JointBounds(robot, dt=1e-3, acceleration_limit=30.0),
    ...                     priority=1, weight=1e3)                  # doctest: +SKIP
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
        self.tasks: list[AccelerationTask] = []
        self.constraints: list[Constraint] = [FrictionCones(), NormalForceBounds()]
        if torque_limits is not False:
            limits = robot.model.effortLimit[6:] if torque_limits is None else torque_limits
            self.constraints.append(TorqueLimits(np.asarray(limits, dtype=float)))
        self._contacts: dict[str, ContactState] = {}
        self._known: dict[str, Contact] = {}  # every contact ever added, by name
        self._layout: ControlLayout | None = None
        self._qp: QP | None = None
        self._removing: set[str] = set()  # contacts ramping down
        self._frame_ids: dict[str, int] = {}  # of the external wrenches' frames
        self.time: float | None = None
        self._last: ControlSolution | None = None
        self._ready = False

    # --- tasks and constraints --------------------------------------------------------------

    def add_task(self, task: AccelerationTask, *, priority: int = 1) -> Any:
        """Add a task; returns it.

        Parameters
        ----------
        task : AccelerationTask or WrenchTask
        priority : int
            0: a hard constraint, ``S (J x + drift) = S desired`` (its weight unused); 1, 2,
            ...: a weighted cost of that priority level, 1 the highest (levels are solved
            in order, each keeping the optimum of those above). Remove and add the task
            again to change it.

        Raises
        ------
        InvalidArgumentError
            Not a task, a name already there, a bad priority, or a contact the task cannot
            act on.
        FrameNotFoundError, ContactNotFoundError
            A frame the robot does not have, a contact never added to this controller.
        """
        if not isinstance(task, AccelerationTask):
            raise InvalidArgumentError(f"not a task: {type(task).__name__}")
        if any(t.name == task.name for t in self.tasks):
            raise InvalidArgumentError(f"a task named {task.name!r} is already there")
        p = _priority(priority, f"task {task.name!r}")
        for frame in task.frames:
            self.robot.frame_id(frame)  # a typed error names an unknown frame now
        if task.contact is not None:
            contact = self._known.get(task.contact)
            if contact is None:
                raise ContactNotFoundError(task.contact, self._known)
            task._check_contact(contact)
        task.priority = p
        self.tasks.append(task)
        self._qp = None
        if task.over_wrenches:
            self._layout = None  # (re)binds every wrench task to the contacts' columns
        return task

    def remove_task(self, name: str) -> None:
        """Remove the task called ``name``."""
        self.tasks.remove(self.task(name))
        self._qp = None

    def task(self, name: str) -> Any:
        """The task called ``name``."""
        for t in self.tasks:
            if t.name == name:
                return t
        raise InvalidArgumentError(f"no task named {name!r}; tasks: {[t.name for t in self.tasks]}")

    def add_constraint(
        self, constraint: Constraint, *, priority: int = 0, weight: float = 1.0
    ) -> Constraint:
        """Add an inequality constraint (e.g. :class:`JointBounds`); returns it.

        Parameters
        ----------
        constraint : Constraint
        priority : int
            0: hard (its rows hold, or the solve fails naming it); 1, 2, ...: soft, each row
            ``lower <= C x <= upper`` given a slack ``s >= 0`` (``lower - s <= C x <= upper
            + s``) that costs ``weight * s + s^2 / 2`` on that priority level: the rows hold
            exactly whenever they can and ``weight`` exceeds their multiplier (what holding
            them costs the level; on a level above the tasks they compete with, its
            regularization alone).
        weight : float
            The soft constraint's cost per unit of violation (> 0) [1 / the rows' unit].
        """
        if not isinstance(constraint, Constraint):
            raise InvalidArgumentError(f"not a constraint: {type(constraint).__name__}")
        if any(c.name == constraint.name for c in self.constraints):
            raise InvalidArgumentError(f"a constraint named {constraint.name!r} is already there")
        what = f"constraint {constraint.name!r}"
        constraint.priority = _priority(priority, what)
        constraint.weight = _soft_weight(weight, constraint.priority, what)
        self.constraints.append(constraint)
        self._qp = None
        return constraint

    def remove_constraint(self, name: str) -> None:
        """Remove the constraint called ``name``."""
        for c in self.constraints:
            if c.name == name:
                self.constraints.remove(c)
                self._qp = None
                return
        raise InvalidArgumentError(f"no constraint named {name!r}")

    def constraint(self, name: str) -> Constraint:
        """The constraint called ``name``."""
        for c in self.constraints:
            if c.name == name:
                return c
        names = [c.name for c in self.constraints]
        raise InvalidArgumentError(f"no constraint named {name!r}; constraints: {names}")

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
        priority: int = 0,
        weight: float = 1.0,
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
        priority : int
            0: rigid (the contact's acceleration rows are equalities); 1, 2, ...: soft,
            those rows a cost of that priority level with ``weight``.
        weight : float
            A soft contact's weight (> 0) [1/(m/s^2)^2].
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
        if reference is not None:
            reference = as_placement(reference, f"contact {contact.name!r}: reference")
        what = f"contact {contact.name!r}"
        p = _priority(priority, what)
        state = ContactState(
            contact,
            kp=kp,
            kd=kd,
            min_normal_force=min_normal_force,
            max_normal_force=max_normal_force,
            ramp=ramp,
            ramp_force=self.robot.weight if ramp_force is None else ramp_force,
            reference=reference,
            priority=p,
            weight=_soft_weight(weight, p, what),
        )
        self._contacts[contact.name] = state
        self._known[contact.name] = contact
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
        """The current columns of ``(a, w)`` (rebuilt when the contacts change)."""
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
        layout.bias = np.zeros(nv)
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
        for task in self.tasks:
            if task.over_wrenches:
                task.bind(layout)  # type: ignore[attr-defined]
        self._qp = None
        return layout

    def update(
        self,
        q: ArrayLike,
        v: ArrayLike,
        t: float | None = None,
        *,
        external_wrenches: Mapping[str, ArrayLike] | None = None,
    ) -> None:
        """Build the tick's QP at ``(q, v)`` and time ``t`` [s] (default: the last time + dt).

        The state is checked here, once (the pass's call), and trusted by every task and
        constraint. Ends finished contact ramps; refreshes every task, contact and
        constraint row and each level's cost from the tasks' weights and references as
        they are now.

        Parameters
        ----------
        q, v : arrays (nq,), (nv,)
        t : float, optional
        external_wrenches : mapping of str to array (6,) or (3,), optional
            Measured wrenches on the robot other than its contacts' (a hand pushed, a known
            load), this tick's: frame name -> ``(f, tau)`` in world axes at the frame's
            origin, or a force alone [N, N m]. They enter the dynamics
            (``M a + h = S^T tau + J_c^T w + sum_e J_e^T w_e``).
        """
        if t is None:
            t = 0.0 if self.time is None else self.time + self.dt
        else:
            t = _time(t)
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
        self._bias(layout, external_wrenches)
        for s in layout.contacts:
            s.bounds = s.normal_force_bounds(t)  # (starts the ramps begun since the last update)
            s.update(kin)
        for task in self.tasks:
            task.update(kin)
        qp = self._qp
        if qp is None or qp.layout is not layout:
            qp = self._qp = QP(kin, layout, self.tasks, self.constraints)
        self._assemble(kin, qp)
        levels = qp.levels
        levels[-1].cost(self.regularization)
        if len(levels) > 1:  # at least UPPER_REGULARIZATION above (see the module notes)
            upper = max(self.regularization, UPPER_REGULARIZATION)
            for level in levels[:-1]:
                level.cost(upper, qp.x_last)
        self._ready = True

    def _bias(self, layout: ControlLayout, external: Mapping[str, ArrayLike] | None) -> None:
        """``layout.bias = h - sum_e J_e^T w_e`` of this tick."""
        kin, bias = self.kin, layout.bias
        bias[...] = kin.nonlinear_effects
        if not external:
            return
        if not isinstance(external, Mapping):
            raise InvalidArgumentError(
                "external_wrenches must be a mapping {frame: wrench}, got "
                f"{type(external).__name__}"
            )
        for frame, wrench in external.items():
            fid = self._frame_ids.get(frame)
            if fid is None:
                fid = self._frame_ids[frame] = kin.frame_id(frame)
            w = as_vector(wrench, None, f"external wrench on frame {frame!r}")
            if w.shape not in ((6,), (3,)):
                raise InvalidArgumentError(
                    f"external wrench on frame {frame!r} must be (f, tau) (6,) or a force (3,) "
                    f"[N, N m], got shape {w.shape}"
                )
            J = kin.jacobian(fid)
            bias -= w.dot(J[: len(w)])

    def _assemble(self, kin: ControllerPass, qp: QP) -> None:
        """The tick's rows: the floating base's, the contacts', the hard tasks' and each
        constraint's."""
        layout, v = qp.layout, qp.views(kin)
        # Floating base: M_b a - J_b^T w = -b_b.
        v.C_base_a[...] = v.M_b
        np.negative(v.h_b, out=v.lower_base)
        if layout.contacts:
            # Contacts held: J_c a = desired - drift (rows stacked by the contacts' updates),
            # every contact's PD at once: desired = kp e - kd J v. The right-hand side is
            # written straight into the rows' bounds when every contact is rigid
            # (layout.rhs is a view of them).
            Jc = layout.jacobian
            desired = layout.desired
            np.multiply(layout.kp, layout.error, out=desired)
            kdJv = Jc.dot(kin.v, out=qp.kdJv)  # ndarray.dot: less dispatch than matmul
            kdJv *= layout.kd
            desired -= kdJv
            np.negative(v.Jc_base_T, out=v.C_base_w)
            rigid = qp.rigid_rows
            if rigid is None:
                np.subtract(desired, layout.drift, out=layout.rhs)
                v.C_contacts_a[...] = Jc
            elif len(rigid):
                np.subtract(desired[rigid], layout.drift[rigid], out=v.lower_contacts)
                v.C_contacts_a[...] = Jc[rigid]
        for task, Cr, rhs in qp.hard:
            Cr[...] = task.jacobian
            np.subtract(task.desired, task.drift, out=rhs)
            if not task._full:  # the rows that do not count: 0 = 0
                Cr *= task._mask[:, None]
                rhs *= task._mask
        v.upper_eq[...] = v.lower_eq
        for Cr in qp.zeroed:
            Cr[:] = 0.0
        for c, Cr, lo, up in qp.fills:
            c.fill(kin, layout, Cr, lo, up)
        for _, _, Ca, Cb in qp.soft:
            Cb[...] = Ca
        qp.lazy_filled = False

    def _fill_lazy(self, qp: QP) -> None:
        """Write the lazy constraints' rows of this tick (once per update)."""
        if not qp.lazy_filled:
            for c, Cr, lo, up in qp.lazy_fills:
                Cr[:] = 0.0
                c.fill(self.kin, qp.layout, Cr, lo, up)
            qp.lazy_filled = True

    def _check_ready(self) -> QP:
        if not self._ready or self._qp is None:
            raise StateError("WholeBodyController: call update(q, v, t) before solving")
        return self._qp

    def solve(self) -> ControlSolution:
        """Solve the QP of the last :meth:`update`, level by level: daqp's optimum of each,
        checked (see the module notes).

        Raises
        ------
        SolverError
            No solution at this state (daqp's exit flag and the constraint groups without
            which there is one in the message), or daqp's answer breaks a row.
        """
        qp = self._check_ready()
        levels = qp.levels
        if len(levels) > 1:
            self._fill_lazy(qp)  # the lower levels copy every row
        tau = None
        for level in levels:
            if level.above:
                level.load(qp)
            level.x, tau = self._solve_level(qp, level)
            if level is not levels[-1]:
                level.keep(qp)
        x = levels[-1].x
        assert x is not None
        qp.x_last = x
        return self._solution(x, self._torque(x) if tau is None else tau)

    def _solve_level(self, qp: QP, level: Level) -> tuple[Array, Array | None]:
        """One level's checked optimum, with the lazy rows where its optimum without them
        breaks them (and then until none is near its bound); its torques where computed."""
        # The lazy constraints' rows (torque limits) left out while the solution without
        # them meets them: it is then the optimum with them (the optimum of a relaxation,
        # feasible). After a tick that needed them, with them until none is near its bound.
        lazy = level.lazy_needed or not qp.lazy_fills or bool(level.above)  # (all rows)
        x = self._solve_checked(qp, level, lazy)
        if not qp.lazy_fills:
            return x, None
        kin, layout, tau = self.kin, qp.layout, self._torque(x)
        if not lazy and not all(c.satisfied(kin, layout, x, tau) for c, *_ in qp.lazy_fills):
            level.lazy_needed = True
            x = self._solve_checked(qp, level, True)
            tau = self._torque(x)
        if level.lazy_needed:
            level.lazy_needed = not all(
                c.satisfied(kin, layout, x, tau, margin=True) for c, *_ in qp.lazy_fills
            )
        return x, tau

    def _solve_checked(self, qp: QP, level: Level, lazy: bool) -> Array:
        """daqp's optimum of a level's rows (with the lazy constraints' or without), every
        one of them met within the tolerance; else once more from a cold workspace; else a
        SolverError."""
        if lazy and not level.above:
            self._fill_lazy(qp)
        tol = self._tolerance
        x, flag = level.solve(lazy)
        gap = np.nan if x is None else level.largest_gap(x, lazy)
        if not gap <= tol:
            # Again from a cold workspace, with daqp's other tolerance (see _qp).
            level.workspaces[lazy] = None
            level.tight[lazy] = not level.tight[lazy]
            x, flag = level.solve(lazy)
            gap = np.nan if x is None else level.largest_gap(x, lazy)
        if level.above and not gap <= tol:
            # A lower level's QP has a solution, x_above (its rows widened to hold it):
            # where daqp finds none (within the check), its feasible set is degenerate (more
            # rows meet at x_above than it has freedoms, pinning it there, as a foot
            # unloaded at its cone's apex): x_above it is.
            assert level.x_above is not None
            return level.x_above
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
        """The hard groups (tasks, constraints) whose removal alone makes the first level's
        QP feasible (on failure only)."""
        qp = self._qp
        assert qp is not None
        self._fill_lazy(qp)
        level = qp.levels[0]
        soft = {c.name for c, *_ in qp.soft}
        out = []
        for name, rows in qp.spans[2:]:
            if rows.stop == rows.start or name in soft:
                continue
            keep = np.ones(qp.m, dtype=bool)
            keep[rows] = False
            _, _, flag, _ = daqp.solve(
                level.P, level.q, qp.C[keep], qp.upper[keep], qp.lower[keep], qp.sense[keep]
            )
            if flag > 0:
                out.append(name)
        return out

    def _torque(self, x: Array) -> Array:
        """``tau = S (M a + b - J_c^T w)`` (nv - 6,) of ``x`` of the last update's QP."""
        qp = self._qp
        assert qp is not None
        layout, v = qp.layout, qp.views(self.kin)
        nv, n = layout.nv, layout.n
        tau = v.M_j.dot(x[:nv])
        tau += v.h_j
        if n > nv:
            tau -= x[nv:n].dot(v.Jc_j)
        return tau

    def _solution(self, x: Array, tau: Array) -> ControlSolution:
        """The solution of ``x`` (n,) of the last update's QP (its arrays views of ``x``)."""
        qp = self._qp
        assert qp is not None
        layout = qp.layout
        wrenches = {s.name: x[s.columns] for s in layout.contacts}
        slacks = {c.name: x[columns] for c, columns, *_ in qp.soft}
        sol = ControlSolution(layout.time, x, x[: layout.nv], tau, wrenches, slacks)
        self._last = sol
        return sol

    def problem(self) -> qpsolvers.Problem:
        """The first priority level's QP of the last update (the whole problem with one
        level) as a :class:`qpsolvers.Problem` (fresh arrays; one-sided rows ``G x <= h``,
        equality rows ``A x = b``) for any qpsolvers backend."""
        qp = self._check_ready()
        self._fill_lazy(qp)
        me, level = qp.me, qp.levels[0]
        C, lo, up = qp.C[me:], qp.lower[me:], qp.upper[me:]
        has_up, has_lo = up < UNBOUNDED, lo > -UNBOUNDED
        G = np.vstack([C[has_up], -C[has_lo]])
        hv = np.concatenate([up[has_up], -lo[has_lo]])
        return qpsolvers.Problem(
            level.P.copy(), level.q.copy(), G, hv, qp.C[:me].copy(), qp.upper[:me].copy()
        )

    def solution_from(self, x: ArrayLike) -> ControlSolution:
        """The :class:`ControlSolution` of a vector ``x`` (n,) of the last update's QP."""
        n = self._check_ready().n
        x = np.array(x, dtype=float)  # a copy: the solution's arrays are views of it
        if x.shape != (n,):
            raise InvalidArgumentError(f"x must have shape ({n},), got {x.shape}")
        return self._solution(x, self._torque(x))

    def violations(self, x: ArrayLike) -> dict[str, float]:
        """How far ``x`` (n,) breaks each constraint row group of the last update: the
        largest ``max(lower - C x, C x - upper, 0)`` per group (``"dynamics"``,
        ``"contacts"``, each hard task's name, then each constraint's name; a soft
        constraint's rows with their slacks) [N, N m, m/s^2, ...]."""
        qp = self._check_ready()
        self._fill_lazy(qp)
        x = np.asarray(x, dtype=float)
        if x.shape != (qp.n,):
            raise InvalidArgumentError(f"x must have shape ({qp.n},), got {x.shape}")
        cx = qp.C @ x
        gap = np.maximum(qp.lower - cx, cx - qp.upper)
        return {name: float(max(gap[s].max(initial=0.0), 0.0)) for name, s in qp.spans}

    def rows(self) -> tuple[Array, Array, Array]:
        """``(C, lower, upper)`` of the last update (equality rows first: lower = upper),
        the first priority level's (without the kept rows of a hierarchy); the controller's
        buffers, which the next update overwrites (copy them to keep them)."""
        qp = self._check_ready()
        self._fill_lazy(qp)
        return qp.C, qp.lower, qp.upper

    def cost(self, level: int = 0) -> tuple[Array, Array]:
        """``(P, q)`` of the last update's cost ``x^T P x / 2 + q^T x`` of a priority level
        (``level`` its index in order, 0 the highest); the controller's buffers, which the
        next update overwrites (copy them to keep them)."""
        qp = self._check_ready()
        if not 0 <= level < len(qp.levels):
            raise InvalidArgumentError(f"level must be in [0, {len(qp.levels)}), got {level!r}")
        return qp.levels[level].P, qp.levels[level].q

    @property
    def priorities(self) -> list[int]:
        """The priority levels of the costs, in the order they are solved (of the last
        update; ``[1]`` before it)."""
        return [1] if self._qp is None else [level.priority for level in self._qp.levels]

    def names(self) -> Sequence[str]:
        """Names of the tasks, in order."""
        return [t.name for t in self.tasks]
