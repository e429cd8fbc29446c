"""The one route of contact-wrench estimation, for one sample and for N. Private to
:mod:`wholebody.estimation`.

A :class:`Workspace` holds what one robot and one set of contacts need (the contact set, the
map from a sample's pass to its QP rows, the QP workspace, the buffers of a chunk of
samples), made once and kept per thread. Samples go in chunks, one sample being a chunk of
one; for each chunk:

1. the Pinocchio pass of each sample (CoM, momentum rate, frame placements; in full-dynamics
   mode also the contact Jacobians and inverse dynamics);
2. the QP rows ``[E; G]`` and the rows that verify an answer: in Newton-Euler mode every
   entry that changes (the cones in world axes, the lever arms about the CoM, the targets)
   by one product over the chunk and one scatter into the chunk's buffer; in full-dynamics
   mode each sample's least-squares conditions from its SVD
   (:func:`~wholebody.estimation.assembly.assemble`);
3. :func:`solve_chunk`: one solve per sample on the QP workspace
   (:class:`~wholebody.estimation.solvers.QPWorkspace`: daqp's own model, updated per sample
   and warm-started from the previous sample's working set), the answers of the chunk
   verified at once (equations and normalised cone rows within ``tolerance * m |g|``), and
   for an answer not verified the closest wrenches inside the cones.
   :meth:`~wholebody.estimation.EstimationProblem.solve` runs the same function on its one
   problem.

The chunk's results stay in its buffers until the next chunk: N samples copy them out
chunk by chunk, one sample reads them.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..balance.newton_euler import (
    newton_euler_residual_arrays,
    wrench_sum,
    wrenches_in_log_layout,
)
from ..contacts import Contact
from ..errors import StateError
from ..friction import ContactSet
from ..robot.batch import LiveFrames
from ..robot.core import Robot
from .assembly import assemble, newton_euler_identifiability
from .known import KnownWrenches
from .solvers import QPWorkspace, solve_soft

__all__ = [
    "Options",
    "Chunk",
    "Pass",
    "Workspace",
    "workspace",
    "solve_chunk",
    "cone_margins",
    "NO_LOWER",
]

Array = NDArray[np.float64]
Bools = NDArray[np.bool_]
#: Samples per chunk at most.
CHUNK = 64
#: Multiply-adds of one product at most: OpenBLAS shares larger products between threads,
#: which costs far more than it saves at this size (the row products go in blocks).
ONE_THREAD = 250_000
#: daqp's "no lower bound" on the cone rows.
NO_LOWER = -1e30
#: Workspaces kept per thread (each holds a contact set, its row map and buffers).
KEPT = 32
_clock = time.perf_counter
_largest = np.maximum.reduce
# skew(d) entries (0,1) (0,2) (1,0) (1,2) (2,0) (2,1) are d @ _SKEW (as ContactSet's).
_SKEW = np.array([[0, 0, 0, -1, 0, 1], [0, 1, 0, 0, -1, 0], [-1, 0, 1, 0, 0, 0]], dtype=float)
_SKEW_PAIRS = ((0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1))


class Options(NamedTuple):
    """The settings of one estimation call."""

    solver: str
    regularization: float
    pyramid_faces: int
    tolerance: float
    friction_scale: bool
    noise: Any
    confidence: float


class Pass(NamedTuple):
    """Per sample, what the pass gives, world [m, N, N m]: ``positions`` (N, f, 3) the
    origins of the contacts' frames then of the known wrenches' frames, ``rotations``
    (N, f, 3, 3), ``com`` (N, 3), ``rate`` (N, 6) ``(dP/dt, dL_G/dt)``, ``known_points``
    (N, e, 3) the points the known wrenches are about."""

    positions: Array
    rotations: Array
    com: Array
    rate: Array
    known_points: Array

    @classmethod
    def empty(cls, N: int, f: int, e: int) -> Pass:
        return cls(
            np.empty((N, f, 3)),
            np.empty((N, f, 3, 3)),
            np.empty((N, 3)),
            np.empty((N, 6)),
            np.empty((N, e, 3)),
        )

    def rows(self, index: Any) -> Pass:
        """The samples ``index`` (a slice or an index array)."""
        return Pass(*(part[index] for part in self))

    def residual(
        self, contacts: Sequence[Contact], x: Array, known: Array, mass: float, gravity: Array
    ) -> tuple[Array, Array]:
        """The Newton-Euler residual about the CoM, force (N, 3) [N] and moment (N, 3) [N m],
        of the wrenches ``x`` (N, n) with the known ones ``known`` (N, e, 6) (balance's
        formula)."""
        W = wrenches_in_log_layout(contacts, x)
        points = self.positions[:, : len(contacts)]
        if known.shape[1]:
            W = np.concatenate([W, known], axis=1)
            points = np.concatenate([points, self.known_points], axis=1)
        return newton_euler_residual_arrays(
            W, points, self.com, self.rate, mass=mass, gravity=gravity
        )


class Chunk:
    """The QPs of up to ``size`` samples and their results, each sample's QP a row of one
    buffer (so that one scatter writes a chunk's changing entries).

    Per sample ``c``: ``rows[c]`` (m, n) ``[E; G]``, the equations ``E`` in the last
    ``n_eq`` of the first ``top`` rows (the rows above them zero); ``upper[c]`` /
    ``lower[c]`` (m,) their bounds (the targets ``t`` on the equations, 0 / very negative on
    the cones); ``check[c]`` (2 top + n_rows, n + 1) the rows ``[E, -t; -E, t; G / |g_r|,
    0]``, whose product with ``[x; 1]`` is within ``tolerance * m |g|`` exactly when ``x``
    meets the equations and the cones within it. Results: ``x`` (size, n + 1) the answers
    with a 1 appended (NaN where nothing came back), ``fallback`` whether the answer is the
    closest one inside the cones (the least-norm answer was not verified), ``times`` the
    backend's time [s], ``equations`` and ``data`` the largest residual of the hard and of
    the raw equations (full-dynamics mode), ``rank`` and ``ident`` (size, k) the rank of the
    equations and the contacts they determine, ``why`` what the backend said; ``kin`` (a
    :class:`Pass` of ``size``) what the pass gave.
    """

    def __init__(self, size: int, top: int, cset: ContactSet):
        n, n_rows = cset.n, cset.n_rows
        m, checks = top + n_rows, 2 * top + n_rows
        self.size, self.top, self.n, self.row_norms = size, top, n, cset.row_norms
        # The last entry of a row is scratch: the row products' entries that are not wanted
        # (the products of one contact's rotation with another's faces) are written there.
        self.buffer = np.zeros((size, m * n + 2 * m + checks * (n + 1) + 1))
        self.flat = self.buffer.reshape(-1)
        self.rows = self.buffer[:, : m * n].reshape(size, m, n)
        self.upper = self.buffer[:, m * n : m * n + m]
        self.lower = self.buffer[:, m * n + m : m * n + 2 * m]
        self.lower[:, top:] = NO_LOWER
        self.check = self.buffer[:, m * n + 2 * m : -1].reshape(size, checks, n + 1)
        self.views = [(self.rows[c], self.upper[c], self.lower[c]) for c in range(size)]
        self.x = np.ones((size, n + 1))
        self.fallback = np.zeros(size, dtype=bool)
        self.times, self.equations, self.data = np.full((3, size), np.nan)
        self.rank = np.zeros(size, dtype=np.int64)
        self.ident = np.zeros((size, len(cset)), dtype=bool)
        self.why: dict[int, str] = {}
        self.touched = False  # fallback or why hold something of an earlier chunk
        self.all_ranks = False  # rank and ident hold soles' with every contact active
        self.started: Any = None  # the set-up of the last call without mask or known wrench
        self.z = np.empty((0, checks))  # check @ [x; 1] of the last solve_chunk
        self.z1 = np.empty((1, checks))  # its buffer for one sample
        self.pass_ = self.framed = self.kin = Pass.empty(size, len(cset), 0)
        # Newton-Euler mode: the inputs of the row products and where their entries go (see
        # Workspace), sample after sample.
        self.inputs: Array | None = None
        self.rotations: Array | None = None
        self.face_entries: NDArray[np.intp] | None = None
        self.other_entries: NDArray[np.intp] | None = None
        # A full chunk's row products: its rotations (k, 3 size, 3) and inputs, the face
        # products and the other entries (size, entries), each with its flat view.
        self.products: tuple[Array, ...] = ()
        # The call the chunk serves (Workspace.start).
        self.live: Any = None
        self.qp: Any = None
        self.limit, self.regularization = 0.0, 0.0
        self.known: Any = None
        self.act: Bools | None = None
        self.n_active: list[int] | None = None
        self.masks: Array | None = None
        self.faces: Any = None  # faces(c): sample c's face matrix, for the fallback

    def keep(self) -> Any:
        """A copy of the pass of sample 0: the row products' inputs and rotations (Newton-Euler
        mode without known wrenches, see :meth:`Workspace.inputs_pass`), or the pass."""
        if self.kin is self.pass_ and self.inputs is not None:
            return self.inputs[:1].copy(), self.pass_.rotations[:1].copy()
        return Pass(*(part[:1].copy() for part in self.kin))

    def frames(self, f: int, e: int) -> Pass:
        """A pass for ``f`` frames and ``e`` known wrenches (in Newton-Euler mode, when
        there are known wrenches; :attr:`pass_` then holds the contacts' part)."""
        kin = self.framed
        if kin.positions.shape[1] != f or kin.known_points.shape[1] != e:
            kin = self.framed = Pass.empty(self.size, f, e)
        return kin

    def fill(self, c: int, E: Array, t: Array, G: Array) -> None:
        """Sample ``c``'s QP from its equations ``E x = t`` (r, n) and cones ``G`` (the
        check rows by the same values)."""
        top, r, n = self.top, len(t), self.n
        self.buffer[c] = 0.0
        self.rows[c, top - r : top], self.rows[c, top:] = E, G
        self.upper[c, top - r : top] = self.lower[c, top - r : top] = t
        self.lower[c, top:] = NO_LOWER
        check = self.check[c]
        check[top - r : top, :n], check[top - r : top, n] = E, -t
        check[2 * top - r : 2 * top, :n], check[2 * top - r : 2 * top, n] = -E, t
        check[2 * top :, :n] = G / self.row_norms[:, None]


def cone_margins(z: Array, top: int, cset: ContactSet) -> Array:
    """Per contact, the distance of answers to the nearest cone face (normalised rows,
    negative outside), from the check values ``z`` (..., 2 top + n_rows) of :class:`Chunk`:
    the values :meth:`ContactSet.linear_margins` gives, (..., k) [N or N m]."""
    starts = [r.start for r in cset.rows]
    return -np.maximum.reduceat(z[..., 2 * top :], starts, axis=-1)


def solve_chunk(
    qp: QPWorkspace,
    chunk: Chunk,
    C: int,
    n_eq: int,
    samples: Sequence[int],
    data: tuple[Array, Array] | None,
    faces: Callable[[int], Array],
    n_active: Sequence[int] | None,
    cmask: Array | None,
    limit: float,
    regularization: float,
) -> Array:
    """Solve, verify and fall back for the first C samples of ``chunk`` (its results);
    returns ``check @ [x; 1]`` of the final answers (C, 2 top + n_rows).

    ``n_eq``: each sample's equation rows (below ``top``: a chunk of one); ``samples``: the
    indices to solve; ``data``
    ``(A, b)``, (C, p, n) and (C, p): the mode's raw equations, for the fallback's least
    squares (None: they are the hard equations, Newton-Euler mode); ``faces(c)``: sample
    ``c``'s face matrix as :meth:`ContactSet.face_matrix` gives it (the fallback is
    ill-conditioned: its answer moves with the last bit of the faces); ``n_active`` (C,):
    how many contacts may carry a wrench (none: the answer is zero) and ``cmask`` (C, n) 1
    on their columns, 0 on the others (both None: all active).
    """
    X, why, n, top = chunk.x, chunk.why, chunk.n, chunk.top
    if chunk.touched:  # a fallback or a backend's reason in an earlier chunk
        chunk.fallback[:] = False
        why.clear()
        chunk.touched = False
    todo: Any = samples
    if n_active is not None:
        todo = [c for c in samples if n_active[c]]
        for c in samples:
            if not n_active[c]:  # nothing can carry a wrench: zero
                X[c, :n], chunk.times[c] = 0.0, 0.0
    views = chunk.views
    if n_eq != top:  # a chunk of one whose equations are the last n_eq of the top rows
        rows, upper, lower = views[0]
        views = [(rows[top - n_eq :], upper[top - n_eq :], lower[top - n_eq :])]
    qp.solve_all(views, todo, n_eq, X, chunk.times, why)
    chunk.touched = bool(why)
    if cmask is not None:
        X[:C, :n] *= cmask
    if C == 1:  # into the chunk's buffer (the caller copies what it keeps)
        z = chunk.z = chunk.z1
        np.dot(chunk.check[0], X[0], out=z[0])
    else:
        z = chunk.z = np.matmul(chunk.check[:C], X[:C, :, None])[:, :, 0]
    if n_active is None and _largest(z, None) <= limit:  # every answer verified (NaN: not)
        return z
    chunk.touched = True
    A, b = (chunk.rows[:C, :top], chunk.upper[:C, :top]) if data is None else data
    idle = () if n_active is None else [c for c in samples if n_active[c] == 0]
    for c in idle:  # no wrench: the raw equations decide
        chunk.fallback[c] = float(np.abs(b[c]).max(initial=0.0)) > limit
    equations, cones = z[:, : 2 * top].max(axis=1), z[:, 2 * top :].max(axis=1)
    for c in np.flatnonzero(~((equations <= limit) & (cones <= limit))).tolist():
        if c not in samples or c in idle:
            continue
        if c not in why:
            why[c] = (
                f"{qp.solver}'s least-norm answer misses the equations by "
                f"{equations[c]:.3g} or the cones by {cones[c]:.3g}"
            )
        _fall_back(qp, A[c], b[c], faces(c), chunk, c, limit, regularization)
        if cmask is not None:
            X[c, :n] *= cmask[c]
        z[c] = chunk.check[c] @ X[c]
    return z


def _fall_back(
    qp: QPWorkspace,
    A: Array,
    b: Array,
    G: Array,
    chunk: Chunk,
    c: int,
    limit: float,
    regularization: float,
) -> None:
    """The closest wrenches inside the cones for sample ``c``, whose least-norm answer was
    not verified: least squares on its raw equations ``A x = b``, regularised."""
    t0 = _clock()
    x, soft = solve_soft(A, b, G, chunk.row_norms, qp.solver, regularization, limit, qp.options)
    chunk.x[c, :-1] = np.nan if x is None else x
    chunk.fallback[c] = True
    chunk.why[c] = "; ".join(r for r in (chunk.why.get(c, ""), soft) if r)
    chunk.times[c] = np.nan_to_num(chunk.times[c]) + (_clock() - t0)


class Workspace:
    """What estimating with one robot and one set of contacts needs, made once.

    In Newton-Euler mode every entry of a sample's :class:`Chunk` row that changes between
    samples is linear in its contact rotations ``R_j``, contact origins ``p_j``, CoM ``c``
    and momentum rate ``h``: the cone entries are the rows of the ``R_j`` times ``faces``
    (each contact's columns of ``faces`` with its own rotation's rows), the others
    ``[p_1..p_k, c, h, 1] @ others``: two products and two scatters per chunk. Cone rows:
    ``G[r, c0 + 3p + a] = sum_c L[r, 3p + c] R[a, c]`` (``L R^T`` per 3-column part, as
    :meth:`ContactSet.face_matrix`); Newton-Euler rows: the identity blocks, and
    ``skew(p_j - c)`` on rows 3-5; targets ``t = h - m g``.
    """

    def __init__(self, robot: Robot, contacts: tuple[Contact, ...], pyramid_faces: int):
        names = [c.name for c in contacts]
        if len(set(names)) != len(names):
            raise StateError(f"contact names must be unique, got {names}")
        self.robot, self.contacts = robot, contacts  # kept: the ids in the key stay theirs
        self.cset = cset = ContactSet(contacts, pyramid_faces=pyramid_faces)
        self.frame_ids = tuple(robot.frame_id(c.frame) for c in contacts)
        self.all_soles = all(size == 6 for size in cset.sizes)
        self.chunks: dict[tuple[int, int], Chunk] = {}
        self.live: dict[tuple[int, ...], LiveFrames] = {}
        self.qp: QPWorkspace | None = None
        self.mg: Array | None = None
        self._row_map()
        self.block = max(1, ONE_THREAD // self.others.size)

    def _row_map(self) -> None:
        """The row products: the cones from the rows of each contact's rotation,
        ``faces`` (k, 3, columns), and the rest from ``[p_1..p_k, c, h, 1]``, ``others``
        (3 k + 10, entries); per product the buffer index of each entry of a sample's row
        (:attr:`face_entries`, :attr:`other_entries`), and for the rest the column of ``x``
        each entry multiplies (``n`` for entries a mask leaves alone) and the entries of the
        targets ``t = h - m g``."""
        cset = self.cset
        k, n = len(cset), cset.n
        layout = Chunk(1, 6, cset)
        at = {
            name: (view.ctypes.data - layout.buffer.ctypes.data) // 8
            for name, view in (("rows", layout.rows), ("check", layout.check))
        }
        at["upper"], at["lower"] = (
            at["rows"] + (6 + cset.n_rows) * n,
            at["rows"] + (6 + cset.n_rows) * (n + 1),
        )
        width = 3 * k + 10  # the inputs of the other entries: p_1..p_k, c, h, 1
        other_entries, others, columns = [], [], []

        def at_(view: str, r: int, c: int) -> int:
            return at[view] + r * {"rows": n, "check": n + 1}.get(view, 0) + c

        # faces (k, 3, columns): contact j's columns ``(half, r, p)`` hold ``L[r, 3 p + c]``
        # (and its normalised row, for the check); row ``a`` of ``R_j`` times them is the
        # entry ``G[r, c0 + 3 p + a]``. Contacts with fewer columns are padded with zeros,
        # their products written to the scratch entry.
        maps = []
        for L, rws in zip(cset.local_faces, cset.rows, strict=True):
            L3 = L.reshape(L.shape[0], -1, 3)  # L3[r, p, c] = L[r, 3 p + c]
            M = np.stack([L3, L3 / cset.row_norms[rws][:, None, None]]).transpose(3, 0, 1, 2)
            maps.append(M.reshape(3, -1))
        width_faces = max(M.shape[1] for M in maps)
        self.faces = np.zeros((k, 3, width_faces))
        scratch = layout.buffer.shape[1] - 1
        face_entries = np.full((k, 3, width_faces), scratch)  # buffer index per product entry
        for j, (M, L, cols, rws) in enumerate(
            zip(maps, cset.local_faces, cset.cols, cset.rows, strict=True)
        ):
            self.faces[j, :, : M.shape[1]] = M
            parts = L.shape[1] // 3
            for axis in range(3):
                for col in range(M.shape[1]):
                    half, rest = divmod(col, M.shape[1] // 2)
                    r, p = divmod(rest, parts)
                    view, top = ("rows", 6) if half == 0 else ("check", 12)
                    entry = at_(view, top + rws.start + r, cols.start + 3 * p + axis)
                    face_entries[j, axis, col] = entry
        self.face_entries = face_entries
        for j, cols in enumerate(cset.cols):
            identity = np.zeros(width)
            identity[-1] = 1.0
            for a in range(cols.stop - cols.start):  # identity blocks: force, and moment
                for view, r, sign in (("rows", a, 1), ("check", a, 1), ("check", 6 + a, -1)):
                    other_entries.append(at_(view, r, cols.start + a))
                    others.append(sign * identity)
                    columns.append(cols.start + a)
            for (r, c), e in zip(_SKEW_PAIRS, _SKEW.T, strict=True):  # skew(p_j - c)
                coef = np.zeros(width)
                coef[3 * j : 3 * j + 3], coef[3 * k : 3 * k + 3] = e, -e
                for view, rr, sign in (
                    ("rows", 3 + r, 1),
                    ("check", 3 + r, 1),
                    ("check", 9 + r, -1),
                ):
                    other_entries.append(at_(view, rr, cols.start + c))
                    others.append(sign * coef)
                    columns.append(cols.start + c)
        self.targets = []  # (entry, sign, axis) of t = h - m g
        for i in range(6):
            coef = np.zeros(width)
            coef[3 * k + 3 + i] = 1.0
            for view, r, c, sign in (
                ("upper", 0, i, 1),
                ("lower", 0, i, 1),
                ("check", i, n, -1),
                ("check", 6 + i, n, 1),
            ):
                self.targets.append((len(others), sign, i))
                other_entries.append(at_(view, r, c))
                others.append(sign * coef)
                columns.append(n)
        self.others = np.array(others).T.copy()
        self.other_entries = np.array(other_entries)
        self.entry_columns = np.array(columns)

    def gravity(self, mg: Array) -> None:
        """Make the targets ``h - m g`` read the robot's current ``(m g, 0)``."""
        if self.mg is not mg:
            for e, sign, i in self.targets:
                self.others[-1, e] = -sign * mg[i]
            self.mg = mg

    def chunk(self, size: int, top: int) -> Chunk:
        """The buffers of chunks of ``size`` samples with ``top`` equation rows at most (in
        Newton-Euler mode with the inputs of the row product, and the buffer indices of
        every sample's entries, sample after sample)."""
        key = (size, top)
        chunk = self.chunks.get(key)
        if chunk is None:
            chunk = self.chunks[key] = Chunk(size, top, self.cset)
            if top == 6:
                k, width = len(self.cset), chunk.buffer.shape[1]
                chunk.inputs = np.ones((size, 3 * k + 10))
                # Contact-major: each contact's rotations of the chunk, one product each.
                chunk.rotations = np.empty((k, size, 3, 3))
                chunk.pass_ = self.inputs_pass(chunk.inputs, chunk.rotations.transpose(1, 0, 2, 3))
                starts = width * np.arange(size)
                faces = self.face_entries[:, None] + starts[None, :, None, None]
                chunk.face_entries = faces.reshape(k, -1)  # (k, size 3 columns)
                chunk.other_entries = (self.other_entries + starts[:, None]).ravel()
                products = np.empty((k, 3 * size, self.faces.shape[2]))
                others = np.empty((size, self.others.shape[1]))
                chunk.products = (
                    chunk.rotations.reshape(k, 3 * size, 3),
                    chunk.inputs,
                    products,
                    products.reshape(k, -1),
                    others,
                    others.reshape(-1),
                )
        return chunk

    def inputs_pass(self, inputs: Array, rotations: Array) -> Pass:
        """The pass that the row products' inputs (C, 3 k + 10) and rotations (C, k, 3, 3)
        hold (views of them)."""
        C, k = len(inputs), len(self.cset)
        return Pass(
            inputs[:, : 3 * k].reshape(C, k, 3),
            rotations,
            inputs[:, 3 * k : 3 * k + 3],
            inputs[:, 3 * k + 3 : 3 * k + 9],
            np.empty((C, 0, 3)),
        )

    def frames(self, robot: Robot, frame_ids: tuple[int, ...]) -> LiveFrames:
        """The pass through views of the robot's data, made again when the data changes (a
        frame added copies model and data)."""
        live = self.live.get(frame_ids)
        if live is None or not live.current(robot):
            live = self.live[frame_ids] = LiveFrames(robot, frame_ids)
        return live

    def solver(self, solver: str) -> QPWorkspace:
        """The QP workspace of ``solver``, kept from call to call (daqp's warm start)."""
        qp = self.qp
        if qp is None or qp.solver != solver:
            qp = self.qp = QPWorkspace(solver, self.cset.n)
        return qp

    def start(
        self, robot: Robot, known: KnownWrenches, act: Bools | None, N: int, opt: Options
    ) -> Chunk:
        """The chunk of a Newton-Euler call on N samples, set up for it: the pass (the known
        wrenches' frames too), the QP workspace, the limit, the masks of ``act`` (N, k)
        (the contacts that may carry a wrench; None: all) and, for soles alone and no mask,
        the ranks (see :func:`newton_euler_identifiability`)."""
        chunk = self.chunk(min(N, CHUNK), 6)
        plain, last = act is None and not len(known), chunk.started  # the set-up reads these
        if (
            plain
            and last is not None
            and last[0] is robot._model
            and last[1] is robot._data
            and last[2] is robot._mg6
            and last[3] == opt
        ):  # as the last call: nothing to set up
            return chunk
        chunk.started = (robot._model, robot._data, robot._mg6, opt) if plain else None
        k, frame_ids = len(self.cset), self.frame_ids
        if known.frames:
            frame_ids += tuple(robot.frame_id(f) for f in known.frames)
        chunk.live, chunk.qp = self.frames(robot, frame_ids), self.solver(opt.solver)
        chunk.limit, chunk.regularization = opt.tolerance * robot.weight, opt.regularization
        self.gravity(robot._mg6)
        chunk.kin = chunk.frames(len(frame_ids), len(known)) if len(known) else chunk.pass_
        chunk.faces = partial(self._face_matrix, chunk.kin.rotations)
        chunk.known = known if len(known) else None
        chunk.act, chunk.n_active, chunk.masks = act, None, None
        if act is not None:
            chunk.n_active = act.sum(axis=1).tolist()
            chunk.masks = np.ones((N, self.cset.n + 1))
            chunk.masks[:, :-1] = np.repeat(act, self.cset.sizes, axis=1)
            chunk.all_ranks = False
        elif self.all_soles and not chunk.all_ranks:  # every contact active
            chunk.rank[:], chunk.ident[:], chunk.all_ranks = 6, k == 1, True
        return chunk

    def newton_euler(
        self, chunk: Chunk, Q: Any, V: Any, A: Any, s: int, e: int, samples: list[int]
    ) -> None:
        """Newton-Euler mode for samples ``s:e`` of the call ``chunk`` was started for
        (``Q``, ``V``, ``A``: rows of checked states; ``samples``: the ones to solve, as
        indices in the chunk): their results into ``chunk``."""
        kin, live, C = chunk.kin, chunk.live, e - s
        P, R, com, rate, _ = kin
        pass_, live_com, live_rate = live.centroidal_pass, live.com, live.rate
        for c in samples:
            i = s + c
            pass_(Q[i], V[i], A[i], P[c], R[c])
            com[c] = live_com
            rate[c] = live_rate
        k = len(self.cset)
        if not chunk.known and C == chunk.size and C <= self.block:
            # a full chunk: the products of its own inputs into its buffers (views made once)
            rotations, block, faces, face_values, others, other_values = chunk.products
            np.matmul(rotations, self.faces, out=faces)
            np.dot(block, self.others, out=others)
        else:
            if chunk.known:  # known wrenches
                block, rotations = self._known_inputs(kin, chunk.known, s, e)
            else:
                block, rotations = chunk.inputs[:C], chunk.rotations[:, :C]  # type: ignore[index]
            faces = np.matmul(rotations.reshape(k, 3 * C, 3), self.faces)
            if C <= self.block:
                others = np.dot(block, self.others)
            else:
                parts = range(0, C, self.block)
                others = np.concatenate(
                    [np.dot(block[b : b + self.block], self.others) for b in parts]
                )
            face_values, other_values = faces.reshape(k, -1), others.reshape(-1)
        masks, act = chunk.masks, chunk.act
        if masks is not None:
            others *= masks[s:e, self.entry_columns]
            self._ranks(chunk, act[s:e], samples)  # type: ignore[index]
        flat, face_entries, other_entries = chunk.flat, chunk.face_entries, chunk.other_entries
        assert face_entries is not None and other_entries is not None
        if C < chunk.size:  # the last chunk of a call
            face_entries = face_entries[:, : faces[0].size]
            other_entries = other_entries[: others.size]
        flat[face_entries] = face_values
        flat[other_entries] = other_values  # a view of others (the masks applied)
        if not self.all_soles:
            for c in samples:
                mask = None if act is None else act[s + c]
                identifiability = newton_euler_identifiability(self.cset, chunk.rows[c, :6], mask)
                chunk.rank[c], chunk.ident[c] = identifiability
        solve_chunk(
            chunk.qp, chunk, C, 6, samples, None, chunk.faces,
            None if masks is None else chunk.n_active[s:e],  # type: ignore[index]
            None if masks is None else masks[s:e, :-1], chunk.limit, chunk.regularization,
        )  # fmt: skip

    def _face_matrix(self, R: Array, c: int) -> Array:
        """Sample ``c``'s face matrix as :meth:`ContactSet.face_matrix` gives it."""
        return self.cset.face_matrix(R[c, : len(self.cset)])

    def newton_euler_chunks(
        self,
        robot: Robot,
        Q: Any,
        V: Any,
        A: Any,
        known: KnownWrenches,
        act: Bools | None,
        good: Sequence[int],
        opt: Options,
        progress: bool = False,
    ) -> Iterator[tuple[Chunk, int, int, list[int]]]:
        """Newton-Euler mode for the samples ``good`` (sorted) of N, chunk after chunk:
        after each, ``(chunk, s, e, samples)`` with the results of samples ``s:e``
        (``samples``: the solved ones, as indices in the chunk)."""
        N = len(Q)
        chunk = self.start(robot, known, act, N, opt)
        starts: Any = range(0, N, chunk.size)
        if progress:
            from ..parallel import progress_bar

            starts = progress_bar(
                starts, desc="estimating", total=len(starts), unit_scale=chunk.size
            )
        lo = 0  # good[lo:] are the samples from this chunk on
        for s in starts:
            e = min(s + chunk.size, N)
            hi = bisect.bisect_left(good, e, lo)
            samples, lo = [i - s for i in good[lo:hi]], hi
            self.newton_euler(chunk, Q, V, A, s, e, samples)
            yield chunk, s, e, samples

    def _ranks(self, chunk: Chunk, act: Bools, samples: Sequence[int]) -> None:
        """Soles alone: the rank of each sample's Newton-Euler rows and which contacts they
        determine, in closed form (see :func:`newton_euler_identifiability`)."""
        if self.all_soles:
            C, counts = len(act), act.sum(axis=1)
            chunk.rank[:C] = np.where(counts > 0, 6, 0)
            chunk.ident[:C] = ~act | (counts == 1)[:, None]

    def _known_inputs(self, kin: Pass, known: KnownWrenches, s: int, e: int) -> tuple[Array, Array]:
        """The row products' inputs and rotations of samples ``s:e`` with known wrenches (the
        pass ``kin`` also places their frames): the contacts' placements, and the momentum
        rate less the known wrenches' sum about the CoM (the contacts supply the rest); the
        points the known wrenches are about into the pass."""
        k, C = len(self.cset), e - s
        block = np.ones((C, 3 * k + 10))
        block[:, : 3 * k] = kin.positions[:C, :k].reshape(C, 3 * k)
        block[:, 3 * k : 3 * k + 3] = kin.com[:C]
        block[:, 3 * k + 3 : 3 * k + 9] = kin.rate[:C]
        points = kin.known_points[:C]
        points[:] = known.point[s:e]
        at_origin = np.isnan(points[:, :, 0])
        if at_origin.any():  # about the frame's origin, placed by this pass
            framed = kin.positions[:C, k:][:, known.frame_positions_index]
            points[at_origin] = framed[at_origin]
        f, m = wrench_sum(known.wrench[s:e], points, kin.com[:C])
        block[:, 3 * k + 3 : 3 * k + 6] -= f
        block[:, 3 * k + 6 : 3 * k + 9] -= m
        return block, np.ascontiguousarray(kin.rotations[:C, :k].transpose(1, 0, 2, 3))

    def full_dynamics(
        self,
        robot: Robot,
        Q: Any,
        V: Any,
        A: Any,
        tau: Array,
        known: KnownWrenches,
        act: Bools | None,
        good: Sequence[int],
        opt: Options,
        progress: bool = False,
    ) -> Iterator[tuple[Chunk, int, int, list[int]]]:
        """Full-dynamics mode (``tau`` (N, nv) generalized forces) for the samples ``good``,
        one at a time (each sample's equations come from its own SVD: a chunk of one, the
        equations in the last ``rank`` of ``n`` rows); yields as :meth:`newton_euler_chunks`."""
        cset, k, n = self.cset, len(self.cset), self.cset.n
        frame_ids = list(self.frame_ids) + [robot.frame_id(f) for f in known.frames]
        qp, limit = self.solver(opt.solver), opt.tolerance * robot.weight
        chunk = self.chunk(1, n)
        kin = chunk.kin = chunk.frames(len(frame_ids), len(known))
        iterator: Any = good
        if progress:
            from ..parallel import progress_bar

            iterator = progress_bar(good, desc="estimating", total=len(good))
        for i in iterator:
            sample = robot.contact_pass(Q[i], V[i], A[i], frame_ids, jacobians=True)
            kin.positions[0], kin.rotations[0] = sample.positions, sample.rotations
            kin.com[0], kin.rate[0] = sample.com, sample.momentum_rate
            w, kin.known_points[0] = known.sample(i, sample.positions[k:])
            mask = None if act is None or act[i].all() else act[i]
            asm = assemble(
                sample,
                cset,
                tau[i],
                w,
                robot.mass,
                robot.gravity_vector,
                known_points=kin.known_points[0],
                known_at_origins=known.at_frame_origins(i, sample.positions[k:]),
                active=mask,
            )
            chunk.rank[0], chunk.ident[0] = asm.rank, asm.identifiable
            chunk.fill(0, asm.equations, asm.target, asm.cones)
            active = None if mask is None else [int(mask.sum())]
            z = solve_chunk(
                qp, chunk, 1, asm.rank, [0], (asm.data_matrix[None], asm.data_target[None]),
                partial(_cones_of, asm.cones), active,
                None if mask is None else np.repeat(mask.astype(float), cset.sizes)[None],
                limit, opt.regularization,
            )  # fmt: skip
            x = chunk.x[0, :n]
            chunk.data[0] = np.abs(asm.data_matrix @ x - asm.data_target).max(initial=0.0)
            # With no contact active there are no equations in the QP: the raw ones decide.
            chunk.equations[0] = chunk.data[0] if active == [0] else z[0, : 2 * n].max()
            yield chunk, i, i + 1, [0]


def _cones_of(G: Array, c: int) -> Array:
    """The face matrix of a chunk of one (``c`` is 0)."""
    return G


_LOCAL = threading.local()


def _frozen(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.shape, x.tobytes())
    return x


def workspace(robot: Robot, contacts: Sequence[Contact], pyramid_faces: int) -> Workspace:
    """The workspace of this thread for ``robot`` and ``contacts``, found by the objects'
    identity, else by value (contacts are frozen dataclasses: equal ones have the same cones).

    Raises
    ------
    StateError
        No contacts, or two with the same name.
    InvalidArgumentError, FrameNotFoundError
        A contact that is not a point or surface contact, or not on a frame of the robot.
    """
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
    if not contacts:
        raise StateError("estimation needs at least one contact")
    contacts = tuple(contacts)
    value: Any = key
    if all(dataclasses.is_dataclass(c) for c in contacts):
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
        ws = by_value[value] = Workspace(robot, contacts, pyramid_faces)
        if len(by_value) > KEPT:
            by_value.popitem(last=False)
    else:
        by_value.move_to_end(value)
    # The entry keeps these contacts (and, through the workspace, the robot) alive: an id in
    # the key is not reused while the key is kept.
    by_id[key] = (ws, contacts)
    if len(by_id) > KEPT:
        by_id.popitem(last=False)
    return ws
