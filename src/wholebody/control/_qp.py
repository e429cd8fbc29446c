"""A small inverse-dynamics QP for whole-body control: build, then solve.

Decision variables ``x = (a, w)``: the generalized accelerations ``a`` (nv; base part in the
base frame, as ``v``) and the contact wrenches ``w`` stacked in contact order, world axes at
each contact frame's origin (a force (3) per :class:`PointContact`, ``(f, tau)`` (6) per
:class:`SurfaceContact`, the layout of :class:`~wholebody.friction.ContactSet`). Joint
torques are recovered from the solution, ``tau = S (M a + h - J^T w)``.

.. math::

    \\min_x \\; \\sum_i \\omega_i \\| A_i x_{[c_i]} - b_i \\|^2 + \\epsilon \\|x\\|^2
    \\quad \\text{s.t.} \\quad
    \\begin{cases}
    M_b a + h_b = J_b^T w & \\text{(floating-base rows of the dynamics, 6)} \\\\
    J a + \\dot J v = 0 & \\text{(contacts do not move)} \\\\
    G(R) \\, w \\le 0 & \\text{(friction / contact wrench cones, world axes)} \\\\
    -\\tau_{max} \\le S (M a + h - J^T w) \\le \\tau_{max} & \\text{(torque limits)}
    \\end{cases}

Tasks are least-squares terms :class:`Task` on a slice ``c_i`` of ``x``; the
:class:`InverseDynamicsQP` gives the usual ones (centre of mass, angular momentum, posture)
from the terms of its last :meth:`~InverseDynamicsQP.update`, one Pinocchio pass.

>>> idqp = InverseDynamicsQP(robot, soles)                         # doctest: +SKIP
>>> idqp.update(q, v)                                              # doctest: +SKIP
>>> tasks = [idqp.com_task(com_acc, weight=1.0),
...          idqp.posture_task(q_ref, kp=100.0, kd=20.0, weight=1e-2)]  # doctest: +SKIP
>>> problem = idqp.problem(tasks)                                  # doctest: +SKIP
>>> x = qpsolvers.solve_problem(problem, solver="daqp").x         # doctest: +SKIP
>>> a, w, tau = idqp.split(x)                                      # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import daqp
import numpy as np
import pinocchio as pin
import qpsolvers
from numpy.typing import ArrayLike, NDArray

from ..contacts import Contact
from ..errors import InvalidArgumentError, SolverError, StateError
from ..friction import ContactSet
from ..robot import ContactDynamics, Robot

__all__ = ["Task", "InverseDynamicsQP"]

Array = NDArray[np.float64]
_DAQP_EQUALITY = 5  # daqp's sense flag of an equality row
_DAQP_FLAGS = {-1: "infeasible", -2: "cycling", -3: "unbounded", -4: "iteration limit"}


@dataclass(frozen=True)
class Task:
    """A least-squares term ``weight * ||matrix @ x[columns] - target||^2``.

    Attributes
    ----------
    name : str
    matrix : ndarray, shape (m, columns length)
    target : ndarray, shape (m,)
    weight : float
        Non-negative.
    columns : slice
        The columns of ``x = (a, w)`` the matrix acts on.
    """

    name: str
    matrix: Array
    target: Array
    weight: float
    columns: slice


class InverseDynamicsQP:
    """Inverse-dynamics QP of a floating-base robot standing on fixed contacts.

    Static work (frame ids, cone faces, buffers) is done once here; :meth:`update` does one
    Pinocchio pass per control tick and refreshes the constraints in place; :meth:`problem`
    adds the tasks and returns a :class:`qpsolvers.Problem` over ``x = (a, w)``.

    Parameters
    ----------
    robot : Robot
        Floating-base robot.
    contacts : sequence of PointContact or SurfaceContact
        The contacts held fixed, in the order of the wrench unknowns.
    torque_limits : array, shape (nv - 6,), optional
        Joint torque bounds ``|tau| <= torque_limits`` [N m or N]; default the model's
        effort limits (infinite or missing limits are dropped).
    regularization : float
        ``epsilon`` of the objective (on accelerations [m/s^2, rad/s^2] and wrenches
        [N, N m] alike).
    pyramid_faces : int
        Faces of the friction pyramids of point contacts (inner pyramids).

    Attributes
    ----------
    nv, n : int
        Velocity dimension and number of unknowns ``nv + contact_set.n``.
    acc, wrench : slice
        Columns of ``a`` and ``w`` in ``x``.
    contact_set : ContactSet
        The cones (face matrices in world axes, the Newton-Euler matrix).
    terms : ContactDynamics or None
        The last :meth:`update`'s terms (buffers overwritten by the next update).
    """

    def __init__(
        self,
        robot: Robot,
        contacts: Sequence[Contact],
        *,
        torque_limits: ArrayLike | None = None,
        regularization: float = 1e-8,
        pyramid_faces: int = 4,
    ):
        if not robot.has_floating_base:
            raise InvalidArgumentError(
                f"InverseDynamicsQP needs a floating-base robot; {robot.name!r} has a fixed base"
            )
        self.robot = robot
        self.contact_set = ContactSet(contacts, pyramid_faces=pyramid_faces)
        self.contacts = self.contact_set.contacts
        self._pass = robot.contact_dynamics_pass(
            [c.frame for c in self.contacts],
            point=[c.size == 3 for c in self.contacts],
            centroidal=True,
        )
        nv, nw = robot.nv, self.contact_set.n
        self.nv, self.n = nv, nv + nw
        self.acc, self.wrench = slice(0, nv), slice(nv, nv + nw)
        nu = nv - 6
        limits = np.asarray(
            robot.model.effortLimit[6:] if torque_limits is None else torque_limits, dtype=float
        )
        if limits.shape != (nu,):
            raise InvalidArgumentError(
                f"torque_limits must have shape ({nu},) (one per joint velocity), "
                f"got {limits.shape}"
            )
        if np.any(np.isnan(limits)) or np.any(limits <= 0):
            raise InvalidArgumentError(
                f"torque_limits must be positive [N m], got {limits.tolist()}"
            )
        if not (np.isfinite(regularization) and regularization >= 0):
            raise InvalidArgumentError(
                f"regularization must be finite and >= 0, got {regularization!r}"
            )
        self.regularization = float(regularization)
        # Finite limits only (URDFs write 'no limit' as huge numbers).
        self._limited = np.flatnonzero(limits < 1e10)
        # Rows of M and columns of J of the limited joints: a slice when all are (no copy).
        self._torque_rows: slice | NDArray[np.intp] = (
            slice(6, nv) if len(self._limited) == nu else 6 + self._limited
        )
        self._tau_max = limits[self._limited]
        self.torque_limits = limits
        nl, r, nc = len(self._limited), self._pass.rows, self.contact_set.n_rows
        # Equality rows A x = b, then inequality rows G x <= h, in one matrix: qpsolvers gets
        # the two views, daqp (in :meth:`solve`) the whole without a copy.
        me, mi = 6 + r, nc + 2 * nl
        self._rows = np.zeros((me + mi, self.n))
        self._upper = np.zeros(me + mi)
        self._lower = np.full(me + mi, -1e30)  # daqp's "no lower bound" on inequality rows
        self._sense = np.r_[np.full(me, _DAQP_EQUALITY), np.zeros(mi)].astype(np.int32)
        self._A, self._G = self._rows[:me], self._rows[me:]
        self._b, self._h = self._upper[:me], self._upper[me:]
        self._faces = np.zeros((nc, nw))
        self._ne = self.contact_set.newton_euler_matrix(
            np.zeros((len(self.contacts), 3)), np.zeros(3)
        )
        self._weight = robot.mass * robot.gravity_vector
        self._q, self._v = np.zeros(robot.nq), np.zeros(nv)
        self.terms: ContactDynamics | None = None

    # --- per tick -------------------------------------------------------------------------

    def update(self, q: ArrayLike, v: ArrayLike) -> ContactDynamics:
        """One Pinocchio pass at ``(q, v)``; refreshes the equality and inequality rows.

        Returns the pass's :class:`ContactDynamics` (with centroidal quantities), also kept
        as :attr:`terms`; its arrays are overwritten by the next update.
        """
        cd = self._pass(q, v)
        self._q[:] = q
        self._v[:] = v
        nv = self.nv
        A, b, G, h = self._A, self._b, self._G, self._h
        M, hv, J = cd.mass_matrix, cd.nonlinear_effects, cd.jacobian
        # Floating-base rows: M_b a - J_b^T w = -h_b.
        A[:6, :nv] = M[:6]
        A[:6, nv:] = -J[:, :6].T
        b[:6] = -hv[:6]
        # Contacts fixed: J a = -Jdot v.
        A[6:, :nv] = J
        b[6:] = -cd.drift
        # Cones on the wrenches.
        faces = self.contact_set.face_matrix(cd.rotations, out=self._faces)
        nc = faces.shape[0]
        G[:nc, nv:] = faces
        # Torque limits: tau = M_j a + h_j - J_j^T w.
        rows, nl = self._torque_rows, len(self._limited)
        if nl:
            upper, lower = G[nc : nc + nl], G[nc + nl :]
            upper[:, :nv] = M[rows]
            np.negative(J[:, rows].T, out=upper[:, nv:])
            np.negative(upper, out=lower)
            np.subtract(self._tau_max, hv[rows], out=h[nc : nc + nl])
            np.add(self._tau_max, hv[rows], out=h[nc + nl :])
        self.terms = cd
        return cd

    def _terms(self) -> ContactDynamics:
        if self.terms is None:
            raise StateError("InverseDynamicsQP: call update(q, v) before asking for tasks")
        return self.terms

    def com_task(self, com_acceleration: ArrayLike, *, weight: float = 1.0) -> Task:
        """Track a CoM acceleration [m/s^2] (world axes) through the contact forces.

        With the floating-base rows met, ``m c_ddot = sum_i f_i + m g`` exactly, so the task
        is the linear part of the Newton-Euler matrix: ``(1/m) sum f_i = c_ddot - g``.
        """
        self._terms()
        m = self.robot.mass
        target = np.asarray(com_acceleration, dtype=float) - self._weight / m
        return Task("com", self._ne[:3] / m, target, float(weight), self.wrench)

    def angular_momentum_task(self, rate: ArrayLike, *, weight: float = 1.0) -> Task:
        """Track a rate of the centroidal angular momentum ``dL_G/dt`` [N m] (world axes).

        ``dL_G/dt = sum_i (p_i - c) x f_i + tau_i``: the moment rows of the Newton-Euler
        matrix about the CoM of the last update (gravity has no moment about the CoM).
        """
        cd = self._terms()
        self.contact_set.newton_euler_matrix(cd.positions, cd.com, out=self._ne)  # type: ignore[arg-type]
        return Task(
            "angular_momentum",
            self._ne[3:],
            np.asarray(rate, dtype=float),
            float(weight),
            self.wrench,
        )

    def posture_task(self, q_ref: ArrayLike, *, kp: float, kd: float, weight: float = 1.0) -> Task:
        """PD to a reference configuration on the base orientation and the joints.

        Desired accelerations ``a[3:] = kp * e - kd * v[3:]`` with ``e`` the base orientation
        error ``log3(R^T R_ref)`` (base frame) and the joint errors ``q_ref - q`` [rad].
        ``kp`` [1/s^2], ``kd`` [1/s]. The base position is left to the CoM task.
        """
        self._terms()
        robot = self.robot
        q, v = self._q, self._v
        q_ref = robot._check_q(q_ref)
        err = pin.difference(robot.model, q, q_ref)[3:]
        target = kp * err - kd * v[3:]
        matrix = _identity(self.nv - 3)
        return Task("posture", matrix, target, float(weight), slice(3, self.nv))

    def acceleration_task(
        self, name: str, columns: slice, acceleration: ArrayLike, *, weight: float = 1.0
    ) -> Task:
        """Track accelerations ``a[columns]`` directly (e.g. some joints) [rad/s^2, m/s^2]."""
        start, stop, step = columns.indices(self.nv)
        if step != 1 or stop <= start:
            raise InvalidArgumentError(f"columns must be a non-empty slice of a, got {columns}")
        target = np.asarray(acceleration, dtype=float)
        if target.shape != (stop - start,):
            raise InvalidArgumentError(
                f"acceleration must have shape ({stop - start},), got {target.shape}"
            )
        return Task(name, _identity(stop - start), target, float(weight), slice(start, stop))

    def problem(self, tasks: Sequence[Task]) -> qpsolvers.Problem:
        """The QP of the last :meth:`update` with these tasks, over ``x = (a, w)``.

        Returns a :class:`qpsolvers.Problem`; ``P`` and ``q`` are fresh, the constraint
        arrays ``G, h, A, b`` are this object's buffers, overwritten by the next
        :meth:`update` (copy the problem to keep it). Solve it with any backend; daqp is
        exact and fast.
        """
        P, qv = self._cost(tasks)
        return qpsolvers.Problem(P, qv, self._G, self._h, self._A, self._b)

    def solve(self, tasks: Sequence[Task]) -> Array:
        """Solve the QP of the last :meth:`update` with these tasks by daqp.

        The same QP as :meth:`problem`, handed to daqp directly on this object's stacked
        constraint buffers: no copies and no conversion layer, about 40 us less per tick than
        ``qpsolvers.solve_problem(problem, solver="daqp")`` on G1. (A workspace hot-started
        from the previous tick's active set was measured too: with M and J changing every
        tick, its refactorisation costs as much as a fresh solve.)

        Returns
        -------
        x : ndarray, shape (n,)
            ``(a, w)``; :meth:`split` gives ``(a, w, tau)``.

        Raises
        ------
        SolverError
            The QP has no solution (e.g. the tasks ask for more than the cones and torque
            limits allow at this state); daqp's exit flag is in the message.
        """
        P, qv = self._cost(tasks)
        self._lower[: len(self._b)] = self._b  # equality rows: lower = upper = b
        x, _, flag, _ = daqp.solve(P, qv, self._rows, self._upper, self._lower, self._sense.copy())
        if flag <= 0:
            raise SolverError(
                f"InverseDynamicsQP: daqp found no solution at this state (exit flag {flag}: "
                f"{_DAQP_FLAGS.get(flag, 'failed')}); relax the tasks, the cones or the "
                "torque limits"
            )
        return np.asarray(x)

    def _cost(self, tasks: Sequence[Task]) -> tuple[Array, Array]:
        """``P, q`` of the objective ``x^T P x / 2 + q^T x`` (up to a constant)."""
        self._terms()
        n = self.n
        P = np.zeros((n, n))
        qv = np.zeros(n)
        P.flat[:: n + 1] = self.regularization
        for t in tasks:
            c = t.columns
            if t.weight < 0:
                raise InvalidArgumentError(f"task {t.name!r}: weight must be >= 0, got {t.weight}")
            A = t.matrix
            if A is _IDENTITIES.get(A.shape[0]):
                P.flat[c.start * (n + 1) : c.stop * (n + 1) : n + 1] += t.weight
                qv[c] -= t.weight * t.target
            else:
                P[c, c] += t.weight * (A.T @ A)
                qv[c] -= t.weight * (A.T @ t.target)
        return P, qv

    def split(self, x: ArrayLike) -> tuple[Array, Array, Array]:
        """``(a, w, tau)`` of a solution ``x``; ``tau = S (M a + h - J^T w)`` with the terms of
        the last update (nv - 6 joint torques [N m])."""
        cd = self._terms()
        x = np.asarray(x, dtype=float)
        if x.shape != (self.n,):
            raise InvalidArgumentError(f"x must have shape ({self.n},), got {x.shape}")
        a, w = x[self.acc], x[self.wrench]
        tau = cd.mass_matrix[6:] @ a + cd.nonlinear_effects[6:] - cd.jacobian[:, 6:].T @ w
        return a, w, tau


_IDENTITIES: dict[int, Array] = {}


def _identity(size: int) -> Array:
    eye = _IDENTITIES.get(size)
    if eye is None:
        eye = np.eye(size)
        eye.setflags(write=False)
        _IDENTITIES[size] = eye
    return eye
