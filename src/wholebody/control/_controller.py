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

Each tick is one :meth:`WholeBodyController.update` (one Pinocchio pass,
:meth:`wholebody.Robot.controller_pass`, every task and row refreshed from it into buffers
kept from tick to tick) and one :meth:`WholeBodyController.solve`. Contacts are added and
removed on the live controller; the stacked layout is rebuilt only when the set of contacts
changes.

The solve returns the QP's optimum in one of two exact ways:

1. The last tick's active set: one LU solve of the KKT system of the equality rows and of
   the inequality rows that were active (at the bounds they were at), accepted only when the
   KKT conditions hold (every row met within 1e-9 of the robot's weight, the active rows'
   multipliers of the right sign; stationarity to the LU's backward error): it is then the
   optimum of the convex QP. At 1 kHz the active set rarely changes from one tick to the
   next. When the cost is block diagonal (no task but the built-in ones couples the
   wrenches: ``P = diag(P_aa, D)``), the wrenches are eliminated from that system first;
   with one surface contact and no active inequality row (single support), the wrench
   through the floating-base rows and the base accelerations through the contact rows
   (their 6 x 6 base block is invertible), which leaves one Cholesky solve over the joint
   accelerations.
   A refused candidate (with the wrenches eliminated) is repaired, at most twice: the rows
   whose multipliers have the wrong sign dropped, the rows its solution breaks added, and
   that set's system solved and checked the same way (joint bounds that start or stop
   biting change the set by a row or two from one tick to the next).
2. Otherwise daqp (exact active-set) on the rows, *lazy* constraints (:class:`TorqueLimits`)
   left out when the solution without them meets them (it is then the optimum with them);
   else the QP is solved again with them, and with them at once from then on until none of
   their rows is active.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import daqp
import numpy as np
import pinocchio as pin
import qpsolvers
import scipy.linalg
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
    JointBounds,
    NormalForceBounds,
    TorqueLimits,
)
from .tasks import AccelerationTask, ContactForceTask, PostureTask

__all__ = ["WholeBodyController", "ControlSolution"]

Array = NDArray[np.float64]
_DAQP_EQUALITY = 5
_DAQP_FLAGS = {-1: "infeasible", -2: "cycling", -3: "unbounded", -4: "iteration limit"}
_daqp_solve = daqp.solve
# ufunc reductions: ndarray.max()/.min() go through a Python wrapper (~0.5 us more each).
_max, _min = np.maximum.reduce, np.minimum.reduce
_dgesv = scipy.linalg.lapack.dgesv
_dposv = scipy.linalg.lapack.dposv
#: Active-set repairs tried after a refused candidate before daqp (each one reduced KKT
#: solve, ~40-90 us in the loop, against daqp's ~100 us with the joint bounds' rows).
_REPAIRS = 2
#: Constraints that write the same entries of their rows at every tick of a layout (the rest
#: of their rows stays zero): their rows are not zeroed before each fill.
_OWN_PATTERN = (FrictionCones, NormalForceBounds, TorqueLimits, JointBounds)


class _Rows:
    """The QP's buffers for one layout and one set of constraints, reused tick to tick:
    ``lower <= C x <= upper`` (equality rows first, lazy constraints' rows last), the cost
    ``P`` (with a writable view of its diagonal), ``q`` and daqp's row senses; each
    constraint's views of its rows."""

    def __init__(self, kin: TickKinematics, layout: ControlLayout, constraints: list[Constraint]):
        self.layout = layout
        n = layout.n
        me = 6 + (n - layout.nv)
        ordered = [c for c in constraints if not c.lazy] + [c for c in constraints if c.lazy]
        sizes = [c.rows(kin, layout) for c in ordered]
        m = me + sum(sizes)
        self.m = m
        self.C = np.zeros((m, n))
        self.lower, self.upper = np.zeros(m), np.zeros(m)
        self.me = me
        self.sense = np.zeros(m, dtype=np.int32)
        self.sense[:me] = _DAQP_EQUALITY
        layout.rhs = self.lower[6:me]  # the contacts' rows' right-hand side, written there
        self.kdJv = np.zeros(me - 6)
        self.spans: list[tuple[str, slice]] = [
            ("dynamics", slice(0, 6)),
            ("contacts", slice(6, me)),
        ]
        self.fills: list[tuple[Constraint, Array, Array, Array]] = []
        self.lazy: list[tuple[Constraint, Array, Array, Array]] = []
        #: Rows of constraints that do not rewrite their whole pattern each tick: zeroed first.
        self.zeroed: list[Array] = []
        r = me
        for c, k in zip(ordered, sizes, strict=True):
            rows = slice(r, r + k)
            if k:
                views = (c, self.C[rows], self.lower[rows], self.upper[rows])
                (self.lazy if c.lazy else self.fills).append(views)
                if not c.lazy and type(c) not in _OWN_PATTERN:
                    self.zeroed.append(self.C[rows])
            self.spans.append((c.name, rows))
            r += k
        #: Rows of the QP without the lazy constraints (a prefix of C).
        self.m_core = m - sum(k for c, k in zip(ordered, sizes, strict=True) if c.lazy)
        self.C_core = self.C[: self.m_core]
        self.lower_core, self.upper_core = self.lower[: self.m_core], self.upper[: self.m_core]
        self.lazy_constraints = [c for c, *_ in self.lazy]
        self.lazy_filled = False
        self.lazy_needed = False  # the last tick's solution needed the lazy rows
        nv = layout.nv
        self.P = np.zeros((n, n))
        self.P_diagonal = np.einsum("ii->i", self.P)  # a writable view
        self.q = np.zeros(n)  # with the generic tasks' terms (for daqp)
        # The cost without the generic tasks (block diagonal then): P_aa (nv, nv), the
        # wrench block's diagonal and q (their tick's values once `objective` is set).
        self.P_aa = np.zeros((nv, nv))
        self.P_aa_diagonal = np.einsum("ii->i", self.P_aa)
        self.q_structured = np.zeros(n)
        self.q_structured_a = self.q_structured[:nv]
        # The last tick's active inequality rows and their sides (+1 upper, -1 lower), and
        # whether to try them first (the KKT system, buffers per number of rows).
        self.active = np.zeros(0, dtype=np.intp)
        self.side = np.zeros(0)
        self.warm = True
        self._kkt: dict[int, tuple[Array, Array]] = {}
        self._reduced: dict[int, _ReducedKKT] = {}
        self._views: _RowViews | None = None
        #: One surface contact: the null-space solve applies (no active inequality row).
        self.single_surface = len(layout.contacts) == 1 and layout.n - layout.nv == 6
        self._null: _NullSpace | None = None
        # The KKT checks' buffers: C x and the rows' gaps (m_core,).
        self.cx, self.gap = np.zeros(m), np.zeros(m)

    def kkt_buffers(self, k: int) -> tuple[Array, Array]:
        """The KKT matrix and right-hand side over ``(a, w, lam)`` with ``k`` active
        inequality rows."""
        buffers = self._kkt.get(k)
        if buffers is None:
            size = self.layout.n + self.me + k
            buffers = self._kkt[k] = np.zeros((size, size)), np.zeros(size)
        return buffers

    def views(self, kin: TickKinematics) -> _RowViews:
        """The views of these rows and of the pass's arrays that a tick reads and writes,
        made again only when the pass's arrays are new ones (its model was copied)."""
        views = self._views
        if views is None or views.M is not kin.mass_matrix or views.h is not kin.nonlinear_effects:
            views = self._views = _RowViews(self, kin)
        return views

    def null_space(self) -> _NullSpace:
        """The single-surface-contact solve's buffers and views (made once)."""
        if self._null is None:
            self._null = _NullSpace(self)
        return self._null

    def reduced_kkt(self, k: int) -> _ReducedKKT:
        """The reduced KKT system's buffers and views with ``k`` active inequality rows."""
        kkt = self._reduced.get(k)
        if kkt is None:
            kkt = self._reduced[k] = _ReducedKKT(self, k)
        return kkt

    def set_active(self, rows: NDArray[np.intp], side: Array) -> None:
        """The active set to try first at the next tick (at most n rows with the equality
        rows, else none is tried)."""
        self.active, self.side = rows, side
        self.warm = self.me + len(rows) <= self.layout.n


class _RowViews:
    """Views of the rows' buffers and of the pass's arrays for one tick's writes, made once
    (slicing costs per tick)."""

    def __init__(self, qp: _Rows, kin: TickKinematics):
        layout, me = qp.layout, qp.me
        nv = layout.nv
        self.M, self.h = M, h = kin.mass_matrix, kin.nonlinear_effects
        self.M_b, self.h_b, self.M_j, self.h_j = M[:6], h[:6], M[6:], h[6:]
        self.M_bb = M[:6, :6]
        Jc = layout.jacobian
        self.Jc_base_T, self.Jc_j = Jc[:, :6].T, Jc[:, 6:]
        C = qp.C
        self.C_base_a, self.C_base_w, self.C_contacts_a = C[:6, :nv], C[:6, nv:], C[6:me, :nv]
        self.lower_base, self.lower_eq, self.upper_eq = qp.lower[:6], qp.lower[:me], qp.upper[:me]


class _ReducedKKT:
    """The buffers of the KKT system with the wrenches eliminated (``k`` active inequality
    rows), ``[[P_aa, A_a^T], [A_a, -S]] [a; lam] = [-q_a; b]``, and every view of them and
    of the rows' buffers that a tick writes or reads, made once (slicing costs per tick)."""

    def __init__(self, qp: _Rows, k: int):
        layout = qp.layout
        nv, n, me, mc = layout.nv, layout.n, qp.me, qp.m_core
        m = me + k
        self.K = K = np.zeros((nv + m, nv + m))
        self.KT = K.T
        self.rhs = rhs = np.zeros(nv + m)
        self.W = W = np.zeros((m, n - nv))  # the rows' wrench columns
        self.WT = W.T
        self.WD = np.zeros((n - nv, m))  # -D^-1 W^T
        self.K_P, self.K_A, self.K_AT, self.K_S = K[:nv, :nv], K[nv:, :nv], K[:nv, nv:], K[nv:, nv:]
        self.A_T = self.K_A.T
        self.A_eq, self.A_in = self.K_A[:me], self.K_A[me:]
        self.W_eq, self.W_in = W[:me], W[me:]
        self.rhs_a, self.b = rhs[:nv], rhs[nv:]
        self.b_eq, self.b_in = self.b[:me], self.b[me:]
        C = qp.C
        self.C_eq_a, self.C_eq_w, self.upper_eq = C[:me, :nv], C[:me, nv:], qp.upper[:me]
        self.P_aa_T = qp.P_aa.T
        self.qs_a, self.qs_w = qp.q_structured[:nv], qp.q_structured[nv:]
        self.C_core, self.upper_core, self.lower_core = C[:mc], qp.upper[:mc], qp.lower[:mc]
        self.cx, self.gap = qp.cx[:mc], qp.gap[:mc]


def _largest_gap(C: Array, lower: Array, upper: Array, x: Array, cx: Array, gap: Array) -> float:
    """The largest violation of ``lower <= C x <= upper`` at ``x`` (``|C x - b|`` on equality
    rows, whose bounds are equal; NaN when ``x`` is not finite), through the buffers ``cx`` and
    ``gap`` (m,)."""
    C.dot(x, out=cx)
    np.subtract(cx, upper, out=gap)
    np.subtract(lower, cx, out=cx)
    np.maximum(gap, cx, out=gap)
    return float(_max(gap))


class _NullSpace:
    """The buffers of the solve with one surface contact and no active inequality row.

    The floating-base rows ``M_b a + h_b = J_b^T w`` give ``w = G^T (M_b a + h_b)`` and the
    contact rows ``J_c a = rhs`` give ``a_b = G (rhs - J_j a_j)``, ``G = J_b^-1`` (``J_b``
    the contact Jacobian's 6 x 6 base block). So ``a = Z a_j + z`` and ``w = T a_j + t``
    with ``Z = [-G J_j; I]``, ``z = (G rhs, 0)``, ``T = G^T M_b Z``,
    ``t = G^T (M_bb G rhs + h_b)``; stacked ``Zs = [Z; T]`` (n, nv - 6) and ``zt = (z, t)``
    (n,), ``x = Zs a_j + zt``. The cost ``x^T diag(P_aa, D) x / 2 + q^T x`` becomes
    ``a_j^T H a_j / 2 + g^T a_j`` with ``H = Zs^T Y``, ``Y = diag(P_aa, D) Zs``, and
    ``g = Zs^T (diag(P_aa, D) zt + q)``: ``H a_j = -g`` (one Cholesky).

    On a free flyer ``J_b = [[R, B], [0, R]]`` (world-aligned rows, the base's own axes in
    ``v``: ``R`` the base orientation, ``B = -[p_c - p_b]_x R``), so
    ``G = [[R^T, -R^T B R^T], [0, R^T]]``, formed from the blocks read in ``J_b`` in four
    small products (a LAPACK call costs ~10 us in the closed loop, its code evicted between
    ticks); were ``J_b`` not of that form, the equality rows would be broken and the
    solution refused by the row check."""

    def __init__(self, qp: _Rows):
        layout = qp.layout
        nv, n, mc = layout.nv, layout.n, qp.m_core
        nu = nv - 6
        self.G = G = np.zeros((6, 6))  # its lower-left block stays zero
        self.G_tl, self.G_tr, self.G_br = G[:3, :3], G[:3, 3:], G[3:, 3:]
        self.RB, self.RBR = np.zeros((3, 3)), np.zeros((3, 3))
        self.Zs = Zs = np.zeros((n, nu))
        Zs[6:nv] = np.eye(nu)
        self.ZsT, self.Z, self.Z_top, self.T = Zs.T, Zs[:nv], Zs[:6], Zs[nv:]
        self.Y = Y = np.zeros((n, nu))
        self.PZ, self.DT = Y[:nv], Y[nv:]
        self.GM = np.zeros((6, nv))
        self.H = np.zeros((nu, nu))
        self.HT = self.H.T  # LAPACK reads column-major: H is symmetric
        self.y = y = np.zeros(n)
        self.y_a, self.y_w = y[:nv], y[nv:]
        self.g = np.zeros(nu)
        self.zt = zt = np.zeros(n)
        self.z_b, self.t = zt[:6], zt[nv:]
        self.u = np.zeros(6)
        Jc = layout.jacobian
        self.Jc_b, self.Jc_j, self.rhs = Jc[:, :6], Jc[:, 6:], layout.rhs
        self.R_T, self.B, self.R2_T = Jc[:3, :3].T, Jc[:3, 3:6], Jc[3:6, 3:6].T
        self.P_aa, self.P_ab = qp.P_aa, qp.P_aa[:, :6]
        self.q_a = qp.q_structured[:nv]
        C = qp.C
        self.C_core, self.upper_core, self.lower_core = C[:mc], qp.upper[:mc], qp.lower[:mc]
        self.cx, self.gap = qp.cx[:mc], qp.gap[:mc]


class _TaskStack:
    """The dense acceleration tasks' rows stacked, for their cost
    ``sum_i w_i ||S_i (J_i a - r_i)||^2`` (``r_i = desired - drift``) formed at once.

    Each tick the tasks' ``J_i`` and ``-r_i`` are copied, unscaled, into ``J`` and ``nr``;
    with ``s2`` the rows' weights (``w_i`` on the rows that count, 0 elsewhere),
    ``SJ = diag(s2) J`` (one product over contiguous rows), ``P_aa = J^T SJ`` and
    ``q_a = SJ^T nr``."""

    def __init__(self, tasks: list[AccelerationTask], nv: int):
        sizes = [t.size for t in tasks]
        rows = sum(sizes)
        self.s2_column = np.zeros((rows, 1))
        self.s2 = self.s2_column[:, 0]
        self.J = np.zeros((rows, nv))
        self.JT = self.J.T
        self.nr = np.zeros(rows)
        self.SJ = np.zeros((rows, nv))
        #: Per task: its rows of J, nr and s2.
        self.items: list[tuple[AccelerationTask, Array, Array, Array]] = []
        at = 0
        for t, k in zip(tasks, sizes, strict=True):
            sl = slice(at, at + k)
            self.items.append((t, self.J[sl], self.nr[sl], self.s2[sl]))
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
        self.kin = TickKinematics(robot)
        self.dt = float(dt)
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise InvalidArgumentError(f"dt must be a positive period [s], got {dt!r}")
        if not (np.isfinite(regularization) and regularization >= 0):
            raise InvalidArgumentError(
                f"regularization must be finite and >= 0, got {regularization!r}"
            )
        self.regularization = float(regularization)
        # Tolerance of the KKT checks of an active-set solve [N-scale]: 1e-9 of the weight.
        self._tolerance = 1e-9 * max(1.0, float(robot.weight))
        self.pyramid_faces = int(pyramid_faces)
        self.tasks: list[AccelerationTask | ContactForceTask] = []
        self.constraints: list[Constraint] = [FrictionCones(), NormalForceBounds()]
        if torque_limits is not False:
            limits = robot.model.effortLimit[6:] if torque_limits is None else torque_limits
            self.constraints.append(TorqueLimits(np.asarray(limits, dtype=float)))
        self._contacts: dict[str, ContactState] = {}
        self._layout: ControlLayout | None = None
        self._rows: _Rows | None = None
        self._stack: _TaskStack | None = None
        self._other_tasks: list[Any] = []
        self._diagonal_tasks: list[Any] = []
        self._removing: set[str] = set()  # contacts ramping down
        self._diagonal_key: list[Any] = []
        self._diagonal = np.zeros(0)
        self._diagonal_a = self._diagonal
        self._wrench_inverse: Array | None = None
        self._minus_wrench_inverse = np.zeros((0, 1))
        self._wrench_diagonal, self._wrench_column = np.zeros(0), np.zeros((0, 1))
        self._diagonal_plan: tuple[Any, Any, list[tuple[Any, slice | None]]] | None = None
        self._motion_tasks: list[AccelerationTask] = []
        self.time: float | None = None
        self._last: ControlSolution | None = None
        #: The last rejected active-set candidate: its x and active rows' multipliers.
        self._rejected: tuple[Array, Array | None] | None = None
        self._ready = False
        self._spans: list[tuple[str, slice]] = []

    # --- tasks and constraints --------------------------------------------------------------

    def add_task(self, task: Any) -> Any:
        """Add a task (an :class:`AccelerationTask` or a :class:`ContactForceTask`); returns it."""
        if not isinstance(task, (AccelerationTask, ContactForceTask)):
            raise InvalidArgumentError(f"not a task: {type(task).__name__}")
        if any(t.name == task.name for t in self.tasks):
            raise InvalidArgumentError(f"a task named {task.name!r} is already there")
        self.tasks.append(task)
        self._stack = None
        return task

    def remove_task(self, name: str) -> None:
        """Remove the task called ``name``."""
        self.tasks.remove(self.task(name))
        self._stack = None

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
        """One tick's pass at ``(q, v)`` and time ``t`` [s] (default: the last time + dt):
        ends finished contact ramps, refreshes every task, contact and constraint row."""
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
        if self._stack is None:
            self._sort_tasks()
        for task in self._motion_tasks:
            task.update(kin)
        self._assemble(kin, layout)
        self._ready = True

    def _sort_tasks(self) -> None:
        """Split the tasks: dense ones (the base class's cost) stacked, the others called."""
        for task in self.tasks:  # a first update sizes tasks that depend on the robot
            if isinstance(task, AccelerationTask) and task.jacobian.shape[1] != self.kin.nv:
                task.update(self.kin)
        self._motion_tasks = [t for t in self.tasks if isinstance(t, AccelerationTask)]
        dense = [t for t in self._motion_tasks if type(t).add_cost is AccelerationTask.add_cost]
        # Tasks whose cost is diagonal (their class's own add_cost): added to P's diagonal.
        self._diagonal_tasks = [
            t
            for t in self.tasks
            if type(t).add_cost in (PostureTask.add_cost, ContactForceTask.add_cost)
        ]
        self._other_tasks = [
            t
            for t in self.tasks
            if not any(t is d for d in dense) and not any(t is d for d in self._diagonal_tasks)
        ]
        self._stack = _TaskStack(dense, self.kin.nv)

    def _assemble(self, kin: TickKinematics, layout: ControlLayout) -> None:
        qp = self._rows
        if qp is None or qp.layout is not layout:
            qp = self._rows = _Rows(kin, layout, self.constraints)
            self._spans = qp.spans
        me = qp.me
        C, lower, upper = qp.C, qp.lower, qp.upper
        v = qp.views(kin)
        # Floating base: M_b a - J_b^T w = -h_b.
        v.C_base_a[...] = v.M_b
        np.negative(v.h_b, out=v.lower_base)
        if me > 6:
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
        self._C, self._lower, self._upper, self._me = C, lower, upper, me

    def _fill_lazy(self) -> None:
        """Write the lazy constraints' rows of the last update (once per update)."""
        qp = self._rows
        if qp is None or qp.lazy_filled:
            return
        kin, layout = self.kin, qp.layout
        for c, Cr, lo, up in qp.lazy:
            Cr[:] = 0.0
            c.fill(kin, layout, Cr, lo, up)
        qp.lazy_filled = True

    def _objective(self) -> bool:
        """The tick's cost without the generic tasks: ``P_aa`` (the dense tasks' product
        and the diagonal's acceleration part), the diagonal (regularization and diagonal
        tasks) and ``q``, into the rows' buffers. Returns whether ``q`` has wrench terms."""
        qp = self._rows
        assert qp is not None
        nv = self.kin.nv
        Paa, qv = qp.P_aa, qp.q_structured
        qv.fill(0.0)
        stack = self._stack
        if stack is not None and stack.items:
            versions, subtract = stack.versions, np.subtract
            # Each task's rows copied unscaled, then weighted all at once.
            for i, (task, Ji, nri, s2i) in enumerate(stack.items):
                if task.size != len(nri):  # a task resized since it was stacked
                    self._stack = None
                    self._sort_tasks()
                    return self._objective()
                if versions[i] != task._scale_version:
                    np.square(task._row_scale, out=s2i)
                    versions[i] = task._scale_version
                Ji[...] = task.jacobian  # (np.copyto goes through a Python dispatcher)
                subtract(task.drift, task.desired, out=nri)
            SJ = np.multiply(stack.J, stack.s2_column, out=stack.SJ)
            stack.JT.dot(SJ, out=Paa)
            stack.nr.dot(SJ, out=qp.q_structured_a)
        else:
            Paa.fill(0.0)
        # The diagonal tasks' quadratic part and the regularization: kept from tick to tick
        # while their weights and the contact columns are the same.
        # Which diagonal tasks count and on which columns: fixed while the rows (the
        # layout's contacts) and the stack (the task list) are the same objects.
        plan = self._diagonal_plan
        if plan is None or plan[0] is not qp or plan[1] is not self._stack:
            plan = self._diagonal_plan = (qp, self._stack, self._plan_diagonal())
        key: list[Any] = [qp, self._stack, self.regularization]
        key += [task.cost_key() for task, _ in plan[2]]
        wrench_terms = False
        if key != self._diagonal_key:
            self._diagonal = self._diagonal_of(qp, plan[2])
            self._diagonal_a = self._diagonal[:nv]
            self._diagonal_key = key
            wrench_diagonal = self._diagonal[nv:]
            # 1 / D of the wrench block, for the KKT system with the wrenches eliminated
            # (None when a wrench has no cost: then the full system).
            self._wrench_inverse = 1.0 / wrench_diagonal if np.all(wrench_diagonal > 0) else None
            if self._wrench_inverse is not None:
                self._minus_wrench_inverse = -self._wrench_inverse[:, None]  # a column
                self._wrench_diagonal = wrench_diagonal
                self._wrench_column = wrench_diagonal[:, None]
        qp.P_aa_diagonal += self._diagonal_a
        for task, columns in plan[2]:
            if columns is None:
                task.cost_linear(qv)
            elif task.reference is not None:
                task.cost_linear(qv, columns)
                wrench_terms = True
        return wrench_terms

    def _plan_diagonal(self) -> list[tuple[Any, slice | None]]:
        """The diagonal tasks that count, each with its contact's columns (None for a task on
        the accelerations); a force task whose contact is not active is left out."""
        plan: list[tuple[Any, slice | None]] = []
        for task in self._diagonal_tasks:
            if isinstance(task, ContactForceTask):
                state = self._contacts.get(task.contact)
                if state is not None:
                    plan.append((task, state.columns))
            else:
                plan.append((task, None))
        return plan

    def _cost(self, objective_formed: bool = False) -> tuple[Array, Array]:
        """The whole cost ``(P, q)`` of this tick (with the generic tasks), for daqp;
        ``objective_formed``: :meth:`_objective` has run for this tick's tasks already."""
        qp = self._rows
        assert qp is not None
        nv = self.kin.nv
        if not objective_formed:
            self._objective()
        P, qv = qp.P, qp.q
        P.fill(0.0)
        P[:nv, :nv] = qp.P_aa
        qp.P_diagonal[nv:] = self._diagonal[nv:]
        qv[:] = qp.q_structured
        contacts = self._contacts
        for task in self._other_tasks:
            if isinstance(task, ContactForceTask):
                state = contacts.get(task.contact)
                if state is not None:
                    task.add_cost(P, qv, state.columns)
            else:
                task.add_cost(P, qv)
        return P, qv

    def _diagonal_of(self, qp: _Rows, plan: list[tuple[Any, slice | None]]) -> Array:
        """The regularization and the quadratic parts of the diagonal tasks that count
        (``plan``, :meth:`_plan_diagonal`), (n,)."""
        diagonal = np.full(qp.layout.n, self.regularization)
        for task, columns in plan:
            if columns is None:
                task.cost_diagonal(diagonal)
            else:
                task.cost_diagonal(diagonal, columns)
        return diagonal

    def _check_ready(self) -> None:
        if not self._ready or self._layout is None:
            raise StateError("WholeBodyController: call update(q, v, t) before solving")

    def solve(self) -> ControlSolution:
        """Solve the QP of the last :meth:`update`: its optimum, by the last tick's active set
        when the KKT conditions confirm it, else by daqp (exact active-set); see the module
        notes.

        Raises
        ------
        SolverError
            No solution at this state (daqp's exit flag in the message).
        """
        self._check_ready()
        qp = self._rows
        assert qp is not None
        # First the last tick's active set: the KKT system of the equality rows and of the
        # inequality rows active at the last solution (at their bounds). Its solution is the
        # QP's optimum when it meets every row and the multipliers of those inequality rows
        # have their signs (the KKT conditions, checked); else daqp. Without generic tasks
        # the cost is block diagonal (P_aa, a diagonal on the wrenches): the wrenches are
        # eliminated from the system (a smaller LU).
        formed = qp.warm and not qp.lazy_needed
        if formed:
            wrench_terms = self._objective()
            self._rejected = None
            if self._wrench_inverse is not None and not self._other_tasks:
                # One surface contact and no active row: the null-space solve (None when
                # a row is broken; False when it cannot run, then the reduced system).
                null = (
                    self._solve_null_space(wrench_terms)
                    if qp.single_surface and not len(qp.active)
                    else False
                )
                sol = self._solve_active_set_reduced(wrench_terms) if null is False else null
                # Rejected for a broken row or a multiplier of the wrong sign: the set that
                # the candidate's KKT check points to, at most twice (_repair_active_set).
                for _ in range(_REPAIRS):
                    if sol is not None or self._rejected is None:
                        break
                    if not self._repair_active_set():
                        break
                    self._rejected = None
                    sol = self._solve_active_set_reduced(wrench_terms)
                self._rejected = None
            else:
                sol = self._solve_active_set(*self._cost(objective_formed=True))
            if sol is not None:
                return sol
        P, qv = self._cost(objective_formed=formed)
        # Lazy constraints (torque limits) are left out when the solution without them meets
        # them: it is then the solution with them (a convex QP; the same optimum), else the
        # QP is solved again with every row. After a tick that needed them, every row at once.
        full = qp.lazy_needed or not qp.lazy
        if full:
            self._fill_lazy()
        sol, lam = self._solve_rows(P, qv, qp.m if full else qp.m_core)
        if not full and not all(
            c.satisfied(self.kin, qp.layout, sol.x, sol.torque) for c, *_ in qp.lazy
        ):
            qp.lazy_needed = full = True
            self._fill_lazy()
            sol, lam = self._solve_rows(P, qv, qp.m)
        if full:  # the lazy rows left out again from the tick after none is active
            qp.lazy_needed = not all(
                c.satisfied(self.kin, qp.layout, sol.x, sol.torque, margin=True)
                for c, *_ in qp.lazy
            )
        active = np.flatnonzero(lam[qp.me : qp.m_core]) + qp.me
        qp.set_active(active, np.sign(lam[active]))
        return sol

    def _repair_active_set(self) -> bool:
        """One primal-dual active-set step from a rejected candidate (``_rejected``: its
        ``x`` and its active rows' multipliers): keep the active rows whose multipliers
        have their signs, add the inequality rows that ``x`` breaks (at the bound broken).
        True when that gives another set (at most ``n`` rows with the equality rows) to try.
        Whatever set is tried, a solution is accepted only by the KKT checks: a wrong guess
        costs a solve, never a wrong answer."""
        qp = self._rows
        assert qp is not None and self._rejected is not None
        x, lam = self._rejected
        me, mc, tol = qp.me, qp.m_core, self._tolerance
        rows, side = qp.active, qp.side
        if len(rows) and lam is not None:
            keep = lam * side >= 0.0
            rows, side = rows[keep], side[keep]
        cx = qp.C[me:mc] @ x
        above = np.flatnonzero(cx - qp.upper[me:mc] > tol) + me
        below = np.flatnonzero(qp.lower[me:mc] - cx > tol) + me
        if not len(above) and not len(below) and len(rows) == len(qp.active):
            return False
        new = np.concatenate([rows, above, below])
        new_side = np.concatenate([side, np.ones(len(above)), -np.ones(len(below))])
        order = np.argsort(new, kind="stable")
        new, new_side = new[order], new_side[order]
        if len(np.unique(new)) != len(new):
            return False
        qp.set_active(new, new_side)
        return qp.warm

    def _solve_active_set(self, P: Array, qv: Array) -> ControlSolution | None:
        """The QP's optimum from the KKT system of the equality rows and the last tick's
        active inequality rows, or None when a KKT condition fails (or it is singular)."""
        qp = self._rows
        assert qp is not None
        n, me, mc = qp.layout.n, qp.me, qp.m_core
        C, lower, upper = qp.C, qp.lower, qp.upper
        rows, side = qp.active, qp.side
        k = len(rows)
        K, rhs = qp.kkt_buffers(k)
        # LAPACK reads K column-major: K^T is written here, so that K.T (no copy) is K.
        K[:n, :n] = P.T
        A = K[n:, :n]
        A[:me] = C[:me]
        rhs[n : n + me] = upper[:me]
        if k:
            A[me:] = C[rows]
            rhs[n + me :] = np.where(side > 0, upper[rows], lower[rows])
        K[:n, n:] = A.T
        K[n:, n:] = 0.0
        np.negative(qv, out=rhs[:n])
        _, _, z, info = _dgesv(K.T, rhs, overwrite_a=1, overwrite_b=1)
        if info != 0:
            return None
        # The KKT conditions. Stationarity and the rows solved for hold to the LU's backward
        # error (partial pivoting: the exact solution of a system within rounding of this
        # one, whose P is positive definite and whose rows daqp kept independent); checked
        # here, to 1e-9 of the robot's weight [N]: the equality rows and every inequality
        # row met (False for NaN too), the active rows' multipliers of the right sign.
        x = z[:n].copy()
        if not _largest_gap(C[:mc], lower[:mc], upper[:mc], x, qp.cx[:mc], qp.gap[:mc]) <= (
            self._tolerance
        ):
            return None
        # An active upper bound pushes back (multiplier >= 0), a lower one (<= 0), in the
        # system's convention P x + q + A^T lam = 0.
        if k and not _min(z[n + me :] * side) >= 0.0:
            return None
        return self._within_lazy(x)

    def _solve_active_set_reduced(self, wrench_terms: bool) -> ControlSolution | None:
        """:meth:`_solve_active_set` for a block-diagonal cost, ``P = diag(P_aa, D)``: the
        wrenches eliminated, ``w = -D^-1 (q_w + A_w^T lam)``, from the KKT system

        ``[[P_aa, A_a^T], [A_a, -A_w D^-1 A_w^T]] [a; lam] = [-q_a; b + A_w D^-1 q_w]``

        (``A = [A_a, A_w]`` the rows solved for), the same conditions checked."""
        qp = self._rows
        dinv = self._wrench_inverse
        assert qp is not None and dinv is not None
        layout = qp.layout
        rows, side = qp.active, qp.side
        k = len(rows)
        r = qp.reduced_kkt(k)  # the buffers and their views, made once per k
        # LAPACK reads K column-major: K^T is written here, so that K.T (no copy) is K.
        r.K_P[...] = r.P_aa_T
        r.A_eq[...] = r.C_eq_a
        r.W_eq[...] = r.C_eq_w
        r.b_eq[...] = r.upper_eq
        if k:
            Ck = qp.C[rows]
            nv = layout.nv
            r.A_in[...] = Ck[:, :nv]
            r.W_in[...] = Ck[:, nv:]
            r.b_in[...] = np.where(side > 0, qp.upper[rows], qp.lower[rows])
        r.K_AT[...] = r.A_T
        # -D^-1 W^T into the wrench-rows buffer's transpose: S = W (-D^-1 W^T).
        WD = r.WD
        np.multiply(r.WT, self._minus_wrench_inverse, out=WD)
        np.matmul(r.W, WD, out=r.K_S)
        np.negative(r.qs_a, out=r.rhs_a)
        if wrench_terms:
            r.b -= r.qs_w @ WD
        _, _, z, info = _dgesv(r.KT, r.rhs, overwrite_a=1, overwrite_b=1)
        if info != 0:
            return None
        nv = layout.nv
        lam = r.b if z is r.rhs else z[nv:]  # solved in place (a contiguous buffer)
        x = np.empty(layout.n)
        x[:nv] = r.rhs_a if z is r.rhs else z[:nv]
        w = x[nv:]
        lam.dot(r.W, out=w)
        if wrench_terms:
            w += r.qs_w
        w *= -dinv
        # The KKT conditions, as in _solve_active_set (stationarity in a to the LU's
        # backward error, in w by construction). One gap for all rows: for the equality
        # rows (lower = upper) it is |C x - upper|.
        if (
            not _largest_gap(r.C_core, r.lower_core, r.upper_core, x, r.cx, r.gap)
            <= self._tolerance
        ):
            self._rejected = (x, lam[qp.me :] if k else None)
            return None
        if k and not _min(lam[qp.me :] * side) >= 0.0:
            self._rejected = (x, lam[qp.me :])
            return None
        return self._within_lazy(x)

    def _solve_null_space(self, wrench_terms: bool) -> ControlSolution | None | Literal[False]:
        """The QP's optimum with one surface contact and no active inequality row (see
        :class:`_NullSpace`): the equality rows hold by construction, the inequality rows
        are checked as in :meth:`_solve_active_set` (None when one is broken). False when
        ``H`` is not positive definite (the caller solves otherwise)."""
        qp = self._rows
        assert qp is not None
        kin = self.kin
        ns, v = qp.null_space(), qp.views(kin)
        # G = J_b^-1 from the blocks of J_b = [[R, B], [0, R']]: [[R^T, -R^T B R'^T], [0, R'^T]].
        G = ns.G
        ns.G_tl[...] = ns.R_T
        ns.G_br[...] = ns.R2_T
        RB = ns.R_T.dot(ns.B, out=ns.RB)
        np.negative(RB.dot(ns.R2_T, out=ns.RBR), out=ns.G_tr)
        Z_top, z_b, t, GT = ns.Z_top, ns.z_b, ns.t, G.T
        G.dot(ns.Jc_j, out=Z_top)
        np.negative(Z_top, out=Z_top)
        G.dot(ns.rhs, out=z_b)
        GT.dot(v.M_b, out=ns.GM)
        ns.GM.dot(ns.Z, out=ns.T)
        u = v.M_bb.dot(z_b, out=ns.u)
        u += v.h_b
        GT.dot(u, out=t)
        ns.P_aa.dot(ns.Z, out=ns.PZ)
        np.multiply(ns.T, self._wrench_column, out=ns.DT)
        ns.ZsT.dot(ns.Y, out=ns.H)
        ns.P_ab.dot(z_b, out=ns.y_a)
        np.multiply(self._wrench_diagonal, t, out=ns.y_w)
        y = ns.y
        if wrench_terms:
            y += qp.q_structured
        else:
            ns.y_a += ns.q_a
        g = ns.ZsT.dot(y, out=ns.g)
        _, s, info = _dposv(ns.HT, g, overwrite_a=1, overwrite_b=1)  # H s = g, a_j = -s
        if info != 0:
            return False
        x = ns.Zs.dot(s)  # a fresh array: the solution's own; x = zt - Zs s
        np.subtract(ns.zt, x, out=x)
        # Every row checked (the equality rows hold by construction), as in
        # _solve_active_set_reduced: one gap, |C x - b| on the equality rows.
        if (
            not _largest_gap(ns.C_core, ns.lower_core, ns.upper_core, x, ns.cx, ns.gap)
            <= self._tolerance
        ):
            self._rejected = (x, None)
            return None
        return self._within_lazy(x)

    def _within_lazy(self, x: Array) -> ControlSolution | None:
        """The solution of ``x`` when it meets every lazy constraint (torque limits, whose
        rows the solves left out), else None."""
        sol = self._solution(x)
        qp = self._rows
        assert qp is not None
        kin, layout = self.kin, qp.layout
        for c in qp.lazy_constraints:
            if not c.satisfied(kin, layout, x, sol.torque):
                return None
        return sol

    def _solve_rows(self, P: Array, qv: Array, m: int) -> tuple[ControlSolution, Array]:
        """daqp on the first ``m`` rows of the last update; the solution and the rows'
        multipliers (zero for inactive rows)."""
        qp = self._rows
        assert qp is not None
        sense = qp.sense[:m].copy()
        x, _, flag, info = _daqp_solve(P, qv, qp.C[:m], qp.upper[:m], qp.lower[:m], sense)
        if flag <= 0:
            self._fill_lazy()
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
        return self._solution(np.array(x, dtype=float)), np.asarray(info["lam"], dtype=float)

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
        layout, kin = self._layout or self.layout, self.kin  # the property only when unset
        nv = kin.nv
        a = x[:nv]  # views of x, a fresh array of this solution's own
        qp = self._rows
        if qp is not None and qp.layout is layout:
            v = qp.views(kin)
            tau = v.M_j.dot(a)
            tau += v.h_j
            if layout.n > nv:
                tau -= x[nv:].dot(v.Jc_j)
        else:
            tau = kin.mass_matrix[6:] @ a
            tau += kin.nonlinear_effects[6:]
            if layout.n > nv:
                tau -= x[nv:] @ layout.jacobian[:, 6:]
        wrenches = {s.name: x[s.columns] for s in layout.contacts}
        sol = ControlSolution(float(self.time or 0.0), x, a, tau, wrenches)
        self._last = sol
        return sol

    def problem(self) -> qpsolvers.Problem:
        """The QP of the last update as a :class:`qpsolvers.Problem` (fresh arrays; one-sided
        rows ``G x <= h``, equality rows ``A x = b``) for any qpsolvers backend."""
        self._check_ready()
        self._fill_lazy()
        P, qv = (x.copy() for x in self._cost())
        me = self._me
        C, lo, up = self._C[me:], self._lower[me:], self._upper[me:]
        has_up, has_lo = up < UNBOUNDED, lo > -UNBOUNDED
        G = np.vstack([C[has_up], -C[has_lo]])
        hv = np.concatenate([up[has_up], -lo[has_lo]])
        return qpsolvers.Problem(P, qv, G, hv, self._C[:me].copy(), self._upper[:me].copy())

    def solution_from(self, x: ArrayLike) -> ControlSolution:
        """The :class:`ControlSolution` of a vector ``x`` (n,) of the last update's layout."""
        self._check_ready()
        x = np.array(x, dtype=float)  # a copy: the solution's arrays are views of it
        if x.shape != (self.layout.n,):
            raise InvalidArgumentError(f"x must have shape ({self.layout.n},), got {x.shape}")
        return self._solution(x)

    def violations(self, x: ArrayLike) -> dict[str, float]:
        """How far ``x`` (n,) breaks each constraint row group of the last update: the
        largest ``max(lower - C x, C x - upper, 0)`` per group (``"dynamics"``,
        ``"contacts"``, then each constraint's name) [N, N m, m/s^2, ...]."""
        self._check_ready()
        self._fill_lazy()
        x = np.asarray(x, dtype=float)
        if x.shape != (self.layout.n,):
            raise InvalidArgumentError(f"x must have shape ({self.layout.n},), got {x.shape}")
        cx = self._C @ x
        gap = np.maximum(self._lower - cx, cx - self._upper)
        return {name: float(max(gap[s].max(initial=0.0), 0.0)) for name, s in self._spans}

    def rows(self) -> tuple[Array, Array, Array]:
        """``(C, lower, upper)`` of the last update (equality rows first: lower = upper); the
        controller's buffers, which the next update overwrites (copy them to keep them)."""
        self._check_ready()
        self._fill_lazy()
        return self._C, self._lower, self._upper

    def names(self) -> Sequence[str]:
        """Names of the tasks, in order."""
        return [t.name for t in self.tasks]
