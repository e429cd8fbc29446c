"""The fast path of one-sample estimation: Newton-Euler mode with daqp, on buffers and a
daqp workspace kept per (robot, contact set). Private to
:mod:`wholebody.estimation.problem`.

One call: the state check, one Pinocchio pass (:class:`wholebody.robot.batch.LiveFrames`: CoM,
momentum rate, the contact frames' placements, read through views of ``data``), the six
Newton-Euler rows and the cones in world axes written in place into daqp's constraint matrix,
one daqp update and solve (warm-started from the previous call's working set, as the batch is
from the previous sample's), and the exact verification of the answer (every equation residual
and every normalised cone row within ``tolerance * m |g|``). A verified answer becomes a
:class:`ContactEstimate` whose derived fields (wrenches per contact, centres of pressure, the
Newton-Euler residual, cone margins) are computed at first read, by the same function as the
full path (:func:`~wholebody.estimation._estimate_paths.derived_fields`). Anything else (an
infeasible sample, a daqp failure, known wrenches, an active mask, joint torques, another
backend) returns None and the full path decides: it builds the
:class:`~wholebody.estimation.EstimationProblem`, solves, falls back and explains.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..contacts import Contact, PointContact, SurfaceContact
from ..friction import ContactSet
from ..robot.batch import LiveFrames
from ..robot.core import Robot
from ._estimate_paths import derived_fields
from .assembly import newton_euler_identifiability
from .results import ContactEstimate

__all__ = ["estimate_one", "SampleProblem"]

Array = NDArray[np.float64]
_clock = time.perf_counter
_largest = np.maximum.reduce
_NO_LOWER = -1e30  # daqp's "no lower bound" on the cone rows, as the batch uses
#: Workspaces kept per thread (each holds a contact set, ~40 x 12 buffers, a daqp model).
KEPT = 32
# skew(d) entries (0,1) (0,2) (1,0) (1,2) (2,0) (2,1) are d @ _SKEW (as ContactSet's).
_SKEW = np.array([[0, 0, 0, -1, 0, 1], [0, 1, 0, 0, -1, 0], [-1, 0, 1, 0, 0, 0]], dtype=float)
_SKEW_PAIRS = ((0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1))


class SampleProblem:
    """What the derived fields of one fast estimate read: the attributes and methods of an
    :class:`~wholebody.estimation.EstimationProblem` that
    :func:`~wholebody.estimation._estimate_paths.derived_fields` uses, on copies of this
    sample's arrays (Newton-Euler mode, no known wrenches, every contact active)."""

    __slots__ = (
        "contacts",
        "contact_set",
        "equations",
        "target",
        "cones",
        "positions",
        "rotations",
        "com",
        "momentum_rate",
        "mass",
        "gravity",
        "weight",
        "_cache",
    )
    known = None
    known_points = None

    def __init__(
        self,
        contacts: tuple[Contact, ...],
        cset: ContactSet,
        rows: Array,
        target: Array,
        positions: Array,
        rotations: Array,
        com: Array,
        rate: Array,
        robot: Robot,
    ):
        self.contacts, self.contact_set = contacts, cset
        self.equations, self.target, self.cones = rows[:6], target, rows[6:]
        self.positions, self.rotations, self.com, self.momentum_rate = (
            positions,
            rotations,
            com,
            rate,
        )
        self.mass, self.gravity, self.weight = robot.mass, robot._gravity, robot.weight
        self._cache: dict[str, Any] = {}

    @property
    def data_matrix(self) -> Array:
        return self.equations  # Newton-Euler mode: the hard equations are the data

    @property
    def data_target(self) -> Array:
        return self.target

    def _contact_set(self) -> ContactSet:
        return self.contact_set

    def _verify(self, x: Array) -> tuple[float, Array]:
        """The largest equation residual and the per-contact cone margins of ``x`` (the
        values of :meth:`ContactSet.linear_margins` with ``faces``, without its checks)."""
        eq_res = float(np.abs(self.equations @ x - self.target).max(initial=0.0))
        cset = self.contact_set
        starts = [r.start for r in cset.rows]
        return eq_res, -np.maximum.reduceat((self.cones @ x) / cset.row_norms, starts)


class _Workspace:
    """Buffers and a daqp model for one robot and one contact set, reused call after call.

    ``rows`` (6 + n_rows, n): the Newton-Euler rows, then the face rows in world axes (the
    values :meth:`ContactSet.face_matrix` gives, written in place); ``upper`` / ``lower``
    the bounds (the targets on the first six rows).
    """

    def __init__(self, robot: Robot, contacts: tuple[Contact, ...], pyramid_faces: int):
        self.robot, self.contacts = robot, contacts  # kept: the ids in the key stay theirs
        self.cset = cset = ContactSet(contacts, pyramid_faces=pyramid_faces)
        self.frame_ids = [robot.frame_id(c.frame) for c in contacts]
        n, m = cset.n, 6 + cset.n_rows
        self.n = n
        self.rows = np.zeros((m, n))
        self.rows[:6] = cset.newton_euler_matrix(np.zeros((len(cset), 3)), np.zeros(3))
        self.flat = self.rows.reshape(-1)  # a view: the changing entries are written through it
        # Every entry of ``rows`` that changes between samples is linear in the rotations
        # and the lever arms: ``rows.flat[entries] = K @ [R_1..R_k, d_1..d_k]`` (raveled),
        # one product per sample. Cone rows: G[r, c0 + 3p + a] = sum_c L[r, 3p + c] R[a, c]
        # (L R^T per 3-column part, as ContactSet.face_matrix); Newton-Euler rows 3-5:
        # skew(d) = [[0, -dz, dy], [dz, 0, -dx], [-dy, dx, 0]] per contact.
        k = len(contacts)
        entries: list[int] = []
        K_rows: list[Array] = []
        for j, (L, rws, cols) in enumerate(
            zip(cset.local_faces, cset.rows, cset.cols, strict=True)
        ):
            for r in range(L.shape[0]):
                for p in range(0, L.shape[1], 3):
                    for axis in range(3):
                        row = np.zeros(12 * k)
                        row[9 * j + 3 * axis : 9 * j + 3 * axis + 3] = L[r, p : p + 3]
                        entries.append((6 + rws.start + r) * n + cols.start + p + axis)
                        K_rows.append(row)
        for j, cols in enumerate(cset.cols):
            for (r, c), e in zip(_SKEW_PAIRS, _SKEW.T, strict=True):
                row = np.zeros(12 * k)
                row[9 * k + 3 * j : 9 * k + 3 * j + 3] = e
                entries.append((3 + r) * n + cols.start + c)
                K_rows.append(row)
        self.K = np.array(K_rows)
        self.entries = np.array(entries)
        self.values = np.empty(len(entries))
        # The product's input: rotations (k, 3, 3) then lever arms (k, 3), raveled.
        self.inputs = np.empty(12 * k)
        self.R_in = self.inputs[: 9 * k].reshape(k, 3, 3)
        self.d_in = self.inputs[9 * k :].reshape(k, 3)
        self.upper = np.zeros(m)
        self.lower = np.full(m, _NO_LOWER)
        self.sense = np.zeros(m, dtype=np.intc)
        self.sense[:6] = 5  # equality rows
        self.H, self.f = np.eye(n), np.zeros(n)
        self.inverse_norms = 1.0 / cset.row_norms
        self.check = np.empty(m)  # |E x - t| on the first six rows, G x / |g_r| on the others
        self.check_eq, self.check_cones = self.check[:6], self.check[6:]
        self.model: Any = None
        self.daqp: Any = None
        self.live: LiveFrames | None = None  # the pass, through views of the robot's data
        self.positions_shape = (len(cset), 3)
        self.all_soles = all(c.size == 6 for c in contacts)
        k = len(contacts)
        names = [c.name for c in contacts]
        self.unique = len(set(names)) == len(names)
        # The fields of a found estimate that do not depend on the sample (soles alone: rank
        # 6, a sole identifiable only when it is the only contact; see
        # newton_euler_identifiability).
        self.friction = {c.name: c.mu for c in contacts}
        self.active = dict.fromkeys(names, True)
        self.ident_soles = dict.fromkeys(names, k == 1)
        self.names = names
        self.found_fields = {  # each estimate's fields start as a copy of these
            "status": "found",
            "mode": "newton_euler",
            "solver": "daqp",
            "rank": 6,
            "identifiable": k == 1,
            "min_friction_scale": None,
            "reason": "",
            "intervals": None,
            # The wrenches alone, read from x without the other derived fields (made once
            # here: a bound method stored per estimate costs nothing per call).
            "_wrenches_of": self.wrenches_of,
        }

    def wrenches_of(self, x: Array) -> dict[str, Array]:
        """Contact name -> its wrench (or force) in ``x``, world axes at the frame origin."""
        return {name: x[cols].copy() for name, cols in zip(self.names, self.cset.cols)}

    def setup(self) -> bool:
        """A new daqp model on the current buffers (False when daqp refuses them)."""
        if self.daqp is None:
            import daqp

            self.daqp = daqp
        model = self.daqp.Model()
        try:
            ok = model.setup(self.H, self.f, self.rows, self.upper, self.lower, self.sense)[0] >= 0
        except Exception:  # the full path solves and reports the backend's reason
            ok = False
        self.model = model if ok else None
        return ok


_LOCAL = threading.local()


def _frozen(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.shape, x.tobytes())
    return x


def _workspace(robot: Robot, contacts: Sequence[Contact], pyramid_faces: int) -> _Workspace | None:
    """The workspace of this thread for ``robot`` and ``contacts``, found by the objects'
    identity, else by value (contacts are frozen dataclasses: equal ones have the same
    cones); None for what the fast path does not handle (no contacts, other types)."""
    try:
        by_id, by_value = _LOCAL.by_id, _LOCAL.by_value
    except AttributeError:
        by_id = _LOCAL.by_id = collections.OrderedDict()
        by_value = _LOCAL.by_value = collections.OrderedDict()
    key = (id(robot), pyramid_faces, *map(id, contacts))
    entry = by_id.get(key)
    if entry is not None:
        by_id.move_to_end(key)
        return entry[0]
    if not contacts or not all(type(c) in (SurfaceContact, PointContact) for c in contacts):
        return None
    contacts = tuple(contacts)
    value = (
        id(robot),
        pyramid_faces,
        tuple(
            (type(c), tuple(_frozen(getattr(c, f.name)) for f in dataclasses.fields(c)))
            for c in contacts
        ),
    )
    ws = by_value.get(value)
    if ws is None or ws.robot is not robot:
        ws = by_value[value] = _Workspace(robot, contacts, pyramid_faces)
        if len(by_value) > KEPT:
            by_value.popitem(last=False)
    else:
        by_value.move_to_end(value)
    # The entry keeps these contacts (and, through the workspace, the robot) alive: an id
    # in the key is not reused while the key is kept.
    by_id[key] = (ws, contacts)
    if len(by_id) > KEPT:
        by_id.popitem(last=False)
    return ws


def estimate_one(
    robot: Robot,
    q: Any,
    v: Any,
    a: Any,
    contacts: Sequence[Contact],
    pyramid_faces: int,
    tolerance: float,
) -> ContactEstimate | None:
    """One sample in Newton-Euler mode with daqp (see the module docstring): a found,
    verified estimate, or None for the full path to decide (bad input raises there)."""
    ws = _workspace(robot, contacts, pyramid_faces)
    if ws is None or not ws.unique:
        return None
    try:
        q, v, a = robot._check_qva(q, v, a)
    except Exception:  # the full path raises the same typed error, at its own checks
        return None
    live = ws.live
    if live is None or live.data is not robot._data or live.model is not robot._model:
        # Views made again when the data changes (a frame added copies model and data).
        live = ws.live = LiveFrames(robot, ws.frame_ids)
    # Fresh arrays per call: the estimate keeps them for its derived fields.
    P, R_in = np.empty(ws.positions_shape), ws.R_in
    try:
        live.centroidal_pass(q, v, a, P, R_in)
    except Exception:  # unchecked input (check_inputs False): the full path says what
        return None
    R = R_in.copy()
    com = live.com.copy()
    rate = live.rate.copy()
    # The rows' changing entries (cones in world axes, lever arms about the CoM): one product.
    np.subtract(P, com, out=ws.d_in)
    ws.flat[ws.entries] = np.dot(ws.K, ws.inputs, out=ws.values)
    upper, lower = ws.upper, ws.lower
    target = np.subtract(rate, robot._mg6, out=upper[:6])  # (dP/dt - m g, dL_G/dt)
    lower[:6] = target
    t0 = _clock()
    if ws.model is None:
        if not ws.setup():
            return None
    else:
        ws.model.update(None, None, ws.rows, upper, lower)  # A, bupper, blower
    try:
        x, _, exitflag, _ = ws.model.solve()  # a new array each solve
    except Exception:  # the full path solves again and reports daqp's reason
        ws.model = None
        return None
    elapsed = _clock() - t0
    if exitflag <= 0:
        ws.model = None  # a failed solve may leave the workspace in a bad state
        return None
    # The exact verification of the full path: every equation residual and every normalised
    # cone row within the limit (NaN fails the comparison).
    z, eq, cones = ws.check, ws.check_eq, ws.check_cones
    np.dot(ws.rows, x, out=z)
    np.subtract(eq, target, out=eq)
    np.abs(eq, out=eq)
    np.multiply(cones, ws.inverse_norms, out=cones)
    if not _largest(z) <= tolerance * robot._weight:
        return None
    fields = ws.found_fields.copy()
    fields["solve_time"] = elapsed
    fields["x"] = x
    fields["friction"] = ws.friction.copy()
    fields["active"] = ws.active.copy()
    if ws.all_soles:
        fields["identifiable_by_contact"] = ws.ident_soles.copy()
    else:
        rank, ident = newton_euler_identifiability(ws.cset, ws.rows[:6], None)
        fields["rank"], fields["identifiable"] = rank, bool(ident.all())
        fields["identifiable_by_contact"] = dict(zip(ws.names, ident.tolist(), strict=True))
    derive = partial(_derive, ws, robot, x.copy(), P, R, com, rate, target.copy(), ws.rows.copy())
    return ContactEstimate._derived_later(derive, fields)


def _derive(
    ws: _Workspace,
    robot: Robot,
    x: Array,
    positions: Array,
    rotations: Array,
    com: Array,
    rate: Array,
    target: Array,
    rows: Array,
) -> dict[str, Any]:
    """The derived fields of a fast estimate, at first read: those the full path gives."""
    sample = SampleProblem(
        ws.contacts, ws.cset, rows, target, positions, rotations, com, rate, robot
    )
    return derived_fields(sample, x, None, None, None)
