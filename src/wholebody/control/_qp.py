"""The controller's QP for one set of contacts, tasks and constraints: its rows, its priority
levels' costs and daqp's workspaces, buffers kept from tick to tick.

Unknowns ``x = (a, w, s)``: the accelerations (nv), the active contacts' wrenches (the
layout's columns) and one slack per row of each soft constraint. Rows ``lower <= C x <=
upper``, the equality rows first (``lower = upper``)::

    dynamics (6) | rigid contacts | hard tasks || hard constraints | soft constraints | lazy
    || the kept rows of the levels above the lowest (for the levels below)

A soft constraint's ``k`` rows ``lower <= C_c x <= upper`` become ``3 k`` rows with its
slacks ``s``: ``C_c x - s <= upper``, ``C_c x + s >= lower`` and ``s >= 0``.

Each priority level has its cost ``x^T P x / 2 + q^T x``: its tasks' and soft contacts'
rows stacked (``sum_i || sqrt(w_i) S_i (J_i x - r_i) ||^2``), the diagonal costs of the
lowest level's posture and contact force tasks, ``sum(weight * s + s^2 / 2)`` for its soft
constraints' slacks (the unit quadratic part keeps daqp's problem well scaled: with the
regularization alone a slack's unconstrained optimum, ``-weight / epsilon``, cost the rows
their accuracy, and with ``weight * s^2 / 2`` a large weight the optimum's), and the
regularization. The first level solves on the QP's rows; a lower level on them and the rows
that keep each higher level ``j``'s optimum, ``diag(w) J_j x = diag(w) J_j x_j`` (its tasks'
values at its optimum ``x_j``), with its soft constraints' slacks ``s <= s_j`` (see
:class:`Level`).
"""

from __future__ import annotations

from typing import Any

import daqp
import numpy as np
from numpy.typing import NDArray

from ..robot import ControllerPass
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
from .tasks import ContactForceTask, PostureTask

Array = NDArray[np.float64]
_DAQP_EQUALITY = 5
#: daqp's settings, of the first level and of a lower one, each with a second choice that a
#: level failing its check is solved again with, cold, and keeps. The first level's equality
#: rows (floating base, contacts, hard tasks) enter daqp's working set from the start (its
#: elimination of them, ``eq_reduction``, broke soft rows by up to 1e-4 where the cost is
#: nearly singular), at its default primal tolerance (1e-6, on rows scaled in its own
#: variables) or a tight one (1e-10): where a level's tasks leave most of ``x`` to the
#: regularization the tight one reports feasible QPs infeasible, and elsewhere the default
#: one leaves rows broken by more than the controller's check allows. A lower level's kept
#: rows may depend on one another: daqp's elimination finds and leaves those out.
_DAQP_SETTINGS = (
    ({"eq_reduction": -1}, {"eq_reduction": -1, "primal_tol": 1e-10}),
    ({"eq_reduction": 1, "primal_tol": 1e-10}, {"eq_reduction": 1}),
)
# A ufunc reduction: ndarray.max() goes through a Python wrapper.
_max = np.maximum.reduce
#: Constraints that write the same entries of their rows at every tick of a layout (the rest
#: of their rows stays zero): their rows are not zeroed before each fill.
_OWN_PATTERN = (FrictionCones, NormalForceBounds, TorqueLimits, JointBounds)
#: Tasks whose cost is diagonal (on the lowest level, added to P's diagonal directly).
_DIAGONAL = (PostureTask, ContactForceTask)

#: A task or a soft contact in a stack: what the stack reads of it.
RowTask = Any
Fill = tuple[Constraint, Array, Array, Array]


class TaskStack:
    """Row tasks stacked for their cost ``sum_i w_i ||S_i (J_i x - r_i)||^2`` formed at once
    (``r_i = desired - drift``).

    Each tick the tasks' ``J_i`` and ``-r_i`` are copied, unscaled, into ``J`` (over the
    acceleration and wrench columns, zero on the wrenches' for acceleration tasks) and
    ``nr``; with ``s2`` the rows' weights (``w_i`` on the rows that count, 0 elsewhere),
    ``SJ = diag(s2) J``, ``P = J^T SJ`` and ``q = SJ^T nr`` (the whole of both, at once)."""

    def __init__(self, tasks: list[RowTask], nv: int, n0: int):
        sizes = [t.size for t in tasks]
        rows = sum(sizes)
        self.s2_column = np.zeros((rows, 1))
        self.s2 = self.s2_column[:, 0]
        self.J = np.zeros((rows, n0))
        self.JT = self.J.T
        self.nr = np.zeros(rows)
        self.SJ = np.zeros((rows, n0))
        #: Per task: its rows of J (its columns), nr and s2.
        self.items: list[tuple[RowTask, Array, Array, Array]] = []
        at = 0
        for t, k in zip(tasks, sizes, strict=True):
            sl = slice(at, at + k)
            end = n0 if t.over_wrenches else nv
            self.items.append((t, self.J[sl, :end], self.nr[sl], self.s2[sl]))
            at += k
        self.versions = [-1] * len(tasks)  # of the row weights copied into s2

    def form(self, P: Array, q: Array) -> None:
        """``P = J^T diag(s2) J`` and ``q = J^T diag(s2) nr`` of this tick's rows."""
        versions, subtract = self.versions, np.subtract
        for i, (task, Ji, nri, s2i) in enumerate(self.items):
            if versions[i] != task._scale_version:
                np.square(task._row_scale, out=s2i)
                versions[i] = task._scale_version
            Ji[...] = task.jacobian  # (np.copyto goes through a Python dispatcher)
            subtract(task.drift, task.desired, out=nri)
        SJ = np.multiply(self.J, self.s2_column, out=self.SJ)
        self.JT.dot(SJ, out=P)
        self.nr.dot(SJ, out=q)


class Level:
    """One priority level: its cost (``P``, ``q``), its rows, daqp's workspaces without and
    with the lazy rows, and whether the last tick needed them.

    The first level solves on the QP's rows. A lower level solves on the QP's rows (all of
    them: the lazy ones too) followed by the kept rows of the levels above, which keep
    their optimum: each one's ``diag(w) J x = diag(w) J x_j`` at its solution ``x_j`` (rows
    that may depend on one another: daqp finds those and leaves them out), with their soft
    constraints' slacks at most their values there. Its inequality rows are widened to hold
    the level above's solution ``x_above`` (which meets every row to within the check's
    tolerance): the level always has a solution."""

    def __init__(
        self,
        qp: QP,
        priority: int,
        tasks: list[RowTask],
        diagonal: list[RowTask],
        soft: list[tuple[Constraint, slice]],
        above: list[Level],
    ):
        n, n0, m = qp.n, qp.n0, qp.m
        self.priority = priority
        self.tasks = tasks
        self.P = np.zeros((n, n))
        self.P_diagonal = np.einsum("ii->i", self.P)  # a writable view
        self.q = np.zeros(n)
        # The stack's product over the acceleration and wrench columns (P itself when
        # there are no slack columns).
        self._P0, self._q0 = (self.P, self.q) if n == n0 else (np.zeros((n0, n0)), np.zeros(n0))
        self.stack = TaskStack(tasks, qp.layout.nv, n0)
        self.diagonal = diagonal
        self.slack_costs = [(columns, c.weight) for c, columns in soft]
        self.soft = soft
        self.above = above
        self.x: Array | None = None  # the level's solution of this tick
        self.x_above: Array | None = None
        #: Where this level's own kept rows are in the QP's rows (for the levels below), and
        #: their values at its solution.
        start = m + sum(len(level.stack.s2) for level in above)
        self.kept_rows = slice(start, start + len(self.stack.s2))
        self.kept_values = np.zeros(len(self.stack.s2))
        self.workspaces: list[Any] = [None, None]
        self.tight = [False, False]  # daqp's tolerance, per workspace (see _DAQP_SETTINGS)
        self.lazy_needed = False
        C, sense = qp.C_all, qp.sense_all
        if not above:
            lower, upper, mc, me = qp.lower, qp.upper, qp.m_core, m
        else:  # own bounds: the QP's widened, and the kept rows' values
            me = start
            lower, upper = np.zeros(me), np.zeros(me)
            mc = me  # (every row)
        #: Without and with the lazy rows: daqp's row arguments (A, bupper, blower, sense)
        #: and the check's (C, lower, upper and two buffers).
        self.rows = [
            (C[:mc], upper[:mc], lower[:mc], sense[:mc]),
            (C[:me], upper, lower, sense[:me]),
        ]
        cx, gap = np.zeros(me), np.zeros(me)
        self.checks = [
            (C[:mc], lower[:mc], upper[:mc], cx[:mc], gap[:mc]),
            (C[:me], lower, upper, cx, gap),
        ]
        self.lower, self.upper = lower, upper

    def cost(self, regularization: float, center: Array | None = None) -> None:
        """The tick's ``P`` and ``q`` (the tasks updated), the regularization
        ``regularization * ||x - center||^2 / 2`` (``center`` default zero)."""
        P0, q0 = self._P0, self._q0
        if self.stack.items:
            self.stack.form(P0, q0)
        else:
            P0.fill(0.0)
            q0.fill(0.0)
        if P0 is not self.P:
            n0 = len(q0)
            self.P.fill(0.0)
            self.P[:n0, :n0] = P0
            self.q[:n0] = q0
            self.q[n0:] = 0.0
        self.P_diagonal += regularization
        diagonal, q = self.P_diagonal, self.q
        if center is not None:
            q -= regularization * center
        for task in self.diagonal:
            task.add_cost_diagonal(diagonal, q)
        for columns, weight in self.slack_costs:
            q[columns] += weight
            diagonal[columns] += 1.0

    def keep(self, qp: QP) -> None:
        """Write this (solved, not the lowest) level's kept rows into the QP's buffer and
        their values at its solution (for the levels below)."""
        assert self.x is not None
        SJ = self.stack.SJ
        qp.C_all[self.kept_rows, : qp.n0] = SJ
        SJ.dot(self.x[: qp.n0], out=self.kept_values)

    def load(self, qp: QP) -> None:
        """The bounds of this (lower) level at this tick (see the class notes)."""
        me, m = qp.me, qp.m
        lower, upper = self.lower, self.upper
        lower[:m], upper[:m] = qp.lower, qp.upper
        for level in self.above:
            assert level.x is not None
            lower[level.kept_rows] = level.kept_values
            for c, columns in level.soft:
                upper[qp.slack_bounds[c.name]] = level.x[columns]
        upper[m:] = lower[m:]
        # The inequality rows widened to hold x_above (see the class notes).
        x = self.x_above = self.above[-1].x
        assert x is not None
        cx = qp.C[me:m].dot(x)
        np.maximum(upper[me:m], cx, out=upper[me:m])
        np.minimum(lower[me:m], cx, out=lower[me:m])

    def solve(self, lazy: bool) -> tuple[Array | None, int]:
        """daqp on the level's rows, with the lazy constraints' (``lazy``) or without:
        ``(x, exit flag)`` (``x`` None on failure, a flag <= 0).

        The workspace is set up at its first call (or after a failure) and otherwise
        updated with the buffers' new values, keeping its last solve's working set."""
        work = self.workspaces[lazy]
        rows = self.rows[lazy]
        if work is None:
            work = self.workspaces[lazy] = daqp.Model()
            work.settings = _DAQP_SETTINGS[bool(self.above)][self.tight[lazy]]
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


class QP:
    """The QP of one layout, one set of tasks and constraints and their priorities: the rows'
    buffers reused tick to tick (see the module notes), each constraint's views of its rows,
    the hard tasks' rows and the levels."""

    def __init__(
        self,
        kin: ControllerPass,
        layout: ControlLayout,
        tasks: list[Any],
        constraints: list[Constraint],
    ):
        self.layout = layout
        nv, n0 = layout.nv, layout.n
        rigid = [s for s in layout.contacts if s.priority == 0]
        hard_tasks = [t for t in tasks if t.priority == 0 and t.size]
        hard = [c for c in constraints if c.priority == 0]
        ordered = [c for c in hard if not c.lazy]
        soft = [c for c in constraints if c.priority > 0]
        lazy = [c for c in hard if c.lazy]
        sizes = {c.name: c.rows(kin, layout) for c in constraints}
        self.me_contacts = 6 + sum(s.size for s in rigid)
        self.me = me = self.me_contacts + sum(t.size for t in hard_tasks)
        ns = sum(sizes[c.name] for c in soft)
        self.n0, self.n = n0, n0 + ns
        m_hard = sum(sizes[c.name] for c in ordered)
        self.m_core = me + m_hard + 3 * ns
        self.m = m = self.m_core + sum(sizes[c.name] for c in lazy)
        soft_contacts = [s for s in layout.contacts if s.priority > 0]
        self.priorities = sorted(
            {t.priority for t in tasks if t.priority > 0}
            | {s.priority for s in soft_contacts}
            | {c.priority for c in soft}
        ) or [1]
        # The rows the levels above the lowest keep for the levels below, after the QP's.
        above = [*tasks, *soft_contacts]
        kept = sum(t.size for t in above if 0 < t.priority < self.priorities[-1])
        #: The QP's rows (C, lower, upper, sense: views of the first m rows) and every row
        #: with the kept ones (C_all, sense_all).
        self.C_all = np.zeros((m + kept, self.n))
        self.sense_all = np.full(m + kept, _DAQP_EQUALITY, dtype=np.intc)
        self.C, self.sense = self.C_all[:m], self.sense_all[:m]
        self.sense[me:] = 0
        self.lower, self.upper = np.zeros(m), np.zeros(m)
        self._contact_rows(layout, rigid)
        self.spans: list[tuple[str, slice]] = [
            ("dynamics", slice(0, 6)),
            ("contacts", slice(6, self.me_contacts)),
        ]
        #: Per hard task: its rows of C (its columns), of the right-hand side.
        self.hard: list[tuple[Any, Array, Array]] = []
        r = self.me_contacts
        for t in hard_tasks:
            end = n0 if t.over_wrenches else nv
            self.hard.append((t, self.C[r : r + t.size, :end], self.lower[r : r + t.size]))
            self.spans.append((t.name, slice(r, r + t.size)))
            r += t.size
        #: Each constraint's views of its rows (acceleration and wrench columns).
        self.fills: list[Fill] = []
        self.lazy_fills: list[Fill] = []
        #: Rows of constraints that do not rewrite their whole pattern each tick: zeroed first.
        self.zeroed: list[Array] = []
        for c in ordered:
            r = self._add_rows(c, r, sizes[c.name], self.fills)
        #: Per soft constraint: its slack columns, the C views of its first two blocks
        #: (the second a copy of the first); the slack bound rows' span by name.
        self.soft: list[tuple[Constraint, slice, Array, Array]] = []
        self.slack_bounds: dict[str, slice] = {}
        s = n0
        for c in soft:
            k = sizes[c.name]
            r = self._add_soft(c, r, k, slice(s, s + k))
            s += k
        for c in lazy:
            r = self._add_rows(c, r, sizes[c.name], self.lazy_fills)
        self.lazy_filled = False  # the lazy rows written for this tick
        self.kdJv = np.zeros(n0 - nv)
        #: The last solution (the regularization's centre of the levels above the lowest).
        self.x_last: Array | None = None
        self.levels = self._make_levels(tasks, soft, soft_contacts)
        self._views: RowViews | None = None

    def _contact_rows(self, layout: ControlLayout, rigid: list[ContactState]) -> None:
        """Where the rigid contacts' rows and right-hand side are: a view of the rows'
        bounds when every contact is rigid, else an index of the rigid rows."""
        self.rigid_rows: NDArray[np.intp] | None = None
        if len(rigid) == len(layout.contacts):
            layout.rhs = self.lower[6 : self.me_contacts]  # written there by the assembly
        else:
            index = [np.arange(s.columns.start, s.columns.stop) - layout.nv for s in rigid]
            self.rigid_rows = np.concatenate(index) if index else np.zeros(0, dtype=np.intp)

    def _add_rows(self, c: Constraint, r: int, k: int, fills: list[Fill]) -> int:
        n0 = self.n0
        if k:
            fills.append((c, self.C[r : r + k, :n0], self.lower[r : r + k], self.upper[r : r + k]))
            if not c.lazy and type(c) not in _OWN_PATTERN:
                self.zeroed.append(self.C[r : r + k, :n0])
        self.spans.append((c.name, slice(r, r + k)))
        return r + k

    def _add_soft(self, c: Constraint, r: int, k: int, columns: slice) -> int:
        """A soft constraint's three blocks of rows (see the module notes) from row ``r``,
        its slacks in ``columns``: the constant parts written here."""
        n0, C, lower, upper = self.n0, self.C, self.lower, self.upper
        a, b, s = slice(r, r + k), slice(r + k, r + 2 * k), slice(r + 2 * k, r + 3 * k)
        eye = np.eye(k)
        C[a, columns], C[b, columns], C[s, columns] = -eye, eye, eye
        lower[a], upper[b] = -UNBOUNDED, UNBOUNDED
        lower[s], upper[s] = 0.0, UNBOUNDED
        # The first block's C, the second block's lower bound and the first's upper bound
        # are the constraint's own rows; the second block's C is a copy of the first's.
        self.fills.append((c, C[a, :n0], lower[b], upper[a]))
        if type(c) not in _OWN_PATTERN:
            self.zeroed.append(C[a, :n0])
        self.soft.append((c, columns, C[a, :n0], C[b, :n0]))
        self.slack_bounds[c.name] = s
        self.spans.append((c.name, slice(r, r + 3 * k)))
        return r + 3 * k

    def _make_levels(
        self, tasks: list[Any], soft: list[Constraint], soft_contacts: list[ContactState]
    ) -> list[Level]:
        """The priority levels in order, each with its row tasks (its soft contacts as
        such), its diagonal tasks (on the lowest level only) and its soft constraints."""
        columns = {c.name: cols for c, cols, *_ in self.soft}
        levels: list[Level] = []
        for p in self.priorities:
            own = [t for t in tasks if t.priority == p and t.size]
            lowest = p == self.priorities[-1]
            diagonal = [t for t in own if lowest and isinstance(t, _DIAGONAL)]
            rows = [t for t in own if not any(t is d for d in diagonal)]
            rows += [s for s in soft_contacts if s.priority == p]
            mine = [(c, columns[c.name]) for c in soft if c.priority == p]
            levels.append(Level(self, p, rows, diagonal, mine, list(levels)))
        return levels

    def views(self, kin: ControllerPass) -> RowViews:
        """The views of these rows and of the pass's arrays that a tick reads and writes,
        made again only when the pass's arrays are new ones (its model was copied)."""
        views = self._views
        if views is None or views.M is not kin.mass_matrix:
            views = self._views = RowViews(self, kin)
        return views


class RowViews:
    """Views of the rows' buffers and of the pass's arrays for one tick's writes, made once
    (slicing costs per tick)."""

    def __init__(self, qp: QP, kin: ControllerPass):
        layout, me = qp.layout, qp.me_contacts
        nv = layout.nv
        self.M, h = kin.mass_matrix, layout.bias
        M = self.M
        self.M_b, self.h_b, self.M_j, self.h_j = M[:6], h[:6], M[6:], h[6:]
        Jc = layout.jacobian
        self.Jc_base_T, self.Jc_j = Jc[:, :6].T, Jc[:, 6:]
        C = qp.C
        self.C_base_a, self.C_base_w = C[:6, :nv], C[:6, nv : layout.n]
        self.C_contacts_a = C[6:me, :nv]
        self.lower_base, self.lower_contacts = qp.lower[:6], qp.lower[6:me]
        self.lower_eq, self.upper_eq = qp.lower[: qp.me], qp.upper[: qp.me]
