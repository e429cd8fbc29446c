"""The fast path of batch estimation: Newton-Euler mode with daqp. Private to
:mod:`wholebody.estimation._samples`.

Samples go in chunks: the Pinocchio pass of every sample of the chunk first
(:func:`wholebody.robot.batch.centroidal_frames_rows`), then the QP data of the whole chunk
in numpy (the six Newton-Euler rows, the cones in world axes, the targets), then one daqp
update and solve per sample on rows of those arrays (no per-sample assembly in Python). The
daqp model is set up once and updated per sample, starting each solve from the previous
sample's working set, as :class:`~wholebody.estimation.solvers.BatchSolver` does.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..friction import ContactSet
from ..robot.batch import centroidal_frames_rows
from ..robot.core import Robot
from ..spatial import cross
from .assembly import newton_euler_identifiability
from .known import KnownWrenches
from .solvers import solve_soft

__all__ = ["NewtonEulerDaqp", "newton_euler_rows", "world_face_rows", "CHUNK"]

Array = NDArray[np.float64]
#: Samples whose QP data is built at once (about 3.6 kB per sample for two soles).
CHUNK = 1024
_NO_LOWER = -1e30  # daqp's "no lower bound" on the cone rows, as BatchSolver uses


def newton_euler_rows(cset: ContactSet, positions: Array, point: Array) -> Array:
    """:meth:`ContactSet.newton_euler_matrix` of many samples at once, shape (C, 6, n).

    ``positions`` (C, k, 3) contact frame origins, ``point`` (C, 3), world [m]. Rows: total
    force, then total moment about ``point`` (world axes) of the stacked wrenches.
    """
    C = positions.shape[0]
    out = np.zeros((C, 6, cset.n))
    d = positions - point[:, None, :]  # lever arms (C, k, 3)
    for j, (c, cols) in enumerate(zip(cset.contacts, cset.cols, strict=True)):
        s = cols.start
        for a in range(3):
            out[:, a, s + a] = 1.0
        if c.size == 6:
            for a in range(3):
                out[:, 3 + a, s + 3 + a] = 1.0
        dx, dy, dz = d[:, j, 0], d[:, j, 1], d[:, j, 2]
        # skew(d) = [[0, -dz, dy], [dz, 0, -dx], [-dy, dx, 0]]
        out[:, 3, s + 1], out[:, 3, s + 2] = -dz, dy
        out[:, 4, s], out[:, 4, s + 2] = dz, -dx
        out[:, 5, s], out[:, 5, s + 1] = -dy, dx
    return out


def world_face_rows(cset: ContactSet, rotations: Array, out: Array) -> None:
    """:meth:`ContactSet.face_matrix` of many samples, written into ``out`` (C, n_rows, n)
    (zero outside the blocks). ``rotations`` (C, k, 3, 3) world from contact frame: each
    3-column part of a contact's local face rows ``L`` becomes ``L R^T`` in world axes (the
    same values as ``face_matrix`` to the last bit or two: the products are summed in another
    order)."""
    C = rotations.shape[0]
    for j, (L, rows, cols) in enumerate(zip(cset.local_faces, cset.rows, cset.cols, strict=True)):
        r = L.shape[0]
        R = rotations[:, j].reshape(C * 3, 3)  # rows R[n, a, :]
        for p in range(0, L.shape[1], 3):
            c0 = cols.start + p
            # (R L_p^T)[n, a, r] = sum_c R[n, a, c] L[r, c] = (L_p R^T)[n, r, a]
            block = (R @ L[:, p : p + 3].T).reshape(C, 3, r)
            out[:, rows, c0 : c0 + 3] = block.transpose(0, 2, 1)


@dataclass
class NewtonEulerDaqp:
    """The per-sample results the fast path writes (rows of the batch's arrays)."""

    com: Array
    rate: Array
    positions: Array  # (N, k + frames, 3): contacts, then the known wrenches' frames
    rotations: Array  # (N, k, 3, 3)
    wrenches: Array
    times: Array
    rank: NDArray[np.int64]
    ident: NDArray[np.bool_]
    fallback: NDArray[np.bool_]
    why: dict[int, str]

    def run(
        self,
        robot: Robot,
        cset: ContactSet,
        Q: Array,
        V: Array,
        A: Array,
        rows: list[int],
        frame_ids: list[int],
        known: KnownWrenches,
        act: NDArray[np.bool_],
        masked: NDArray[np.bool_],
        cmask: Array,
        n_active: NDArray[np.int_],
        regularization: float,
        limit: float,
        progress: bool = False,
    ) -> None:
        """Estimate the samples ``rows`` (see the module docstring)."""
        import daqp

        k, n, m = len(cset), cset.n, 6 + cset.n_rows
        all_soles = all(size == 6 for size in cset.sizes)
        weight_force = robot.mass * robot.gravity_vector
        e = len(known)
        H, f = np.eye(n), np.zeros(n)
        sense = np.zeros(m, dtype=np.int32)
        sense[:6] = 5  # equality rows
        model: Any = None
        if e:
            at_origin = np.isnan(known.point[:, :, 0])  # (N, e)
            f_all = known.wrench[:, :, :3]
            lever = np.where(at_origin[..., None], 0.0, known.point)
            F = f_all.sum(axis=1)  # (N, 3)
            T0 = (known.wrench[:, :, 3:] + cross(lever, f_all)).sum(axis=1)
            origin_cols = [j for j in range(e) if at_origin[:, j].any()]
            pass_row = np.cumsum(known.framed) - 1
            origin_rows = [int(pass_row[j]) for j in origin_cols]
            f_origin = np.where(at_origin[:, origin_cols, None], f_all[:, origin_cols], 0.0)
        perf_counter = time.perf_counter
        starts: Any = range(0, len(rows), CHUNK)
        if progress:
            from ..parallel import progress_bar

            starts = progress_bar(
                starts, desc="estimating", total=len(starts), unit="samples", unit_scale=CHUNK
            )
        for start in starts:
            chunk = rows[start : start + CHUNK]
            idx = np.asarray(chunk, dtype=np.intp)
            C = len(chunk)
            centroidal_frames_rows(
                robot, Q, V, A, chunk, frame_ids, self.com, self.rate, self.positions,
                self.rotations, n_rotations=k,
            )  # fmt: skip
            com = self.com[idx]
            E = newton_euler_rows(cset, self.positions[idx, :k], com)
            if masked[idx].any():
                E = np.where(masked[idx, None, None], E * cmask[idx, None, :], E)
            AB = np.zeros((C, m, n))
            AB[:, :6] = E
            world_face_rows(cset, self.rotations[idx], AB[:, 6:])
            rate = self.rate[idx]
            T = np.empty((C, 6))
            np.subtract(rate[:, :3], weight_force, out=T[:, :3])
            T[:, 3:] = rate[:, 3:]
            if e:
                # The known wrenches' sum about the CoM: sum tau + sum p x f - c x F, with p
                # from this pass for frame origins (elementwise, in this order).
                Fx, Fy, Fz = F[idx].T
                mx, my, mz = T0[idx].T
                cx, cy, cz = com.T
                mx = mx - (cy * Fz - cz * Fy)
                my = my - (cz * Fx - cx * Fz)
                mz = mz - (cx * Fy - cy * Fx)
                for r, col in zip(origin_rows, range(len(origin_cols)), strict=True):
                    px, py, pz = self.positions[idx, k + r].T
                    fo = f_origin[idx, col]
                    mx = mx + (py * fo[:, 2] - pz * fo[:, 1])
                    my = my + (pz * fo[:, 0] - px * fo[:, 2])
                    mz = mz + (px * fo[:, 1] - py * fo[:, 0])
                T[:, 0] -= Fx
                T[:, 1] -= Fy
                T[:, 2] -= Fz
                T[:, 3] -= mx
                T[:, 4] -= my
                T[:, 5] -= mz
            UB = np.zeros((C, m))
            UB[:, :6] = T
            LB = np.full((C, m), _NO_LOWER)
            LB[:, :6] = T
            active_counts = n_active[idx].tolist()
            masked_rows = masked[idx].tolist()
            wrenches, times = self.wrenches, self.times
            for c, i in enumerate(chunk):
                if not all_soles:
                    self.rank[i], self.ident[i] = newton_euler_identifiability(cset, E[c], act[i])
                t0 = perf_counter()
                x: Array | None
                if active_counts[c] == 0:  # nothing can carry a wrench: zero, checked later
                    x = np.zeros(n)
                    self.fallback[i] = float(np.abs(T[c]).max()) > limit
                else:
                    if model is None:
                        model = daqp.Model()
                        model.setup(H, f, AB[c], UB[c], LB[c], sense)
                    else:
                        model.update(None, None, AB[c], UB[c], LB[c])  # A, bupper, blower
                    x, _, flag, _ = model.solve()
                    if not (flag > 0 and math.isfinite(x.dot(x))):
                        model = None  # a failed solve may leave the workspace in a bad state
                        self.fallback[i] = True
                        # The least-squares fallback is ill-conditioned (its answer moves
                        # with the last bit of the faces): ContactSet's own face matrix.
                        x, soft = solve_soft(
                            E[c].copy(),
                            T[c].copy(),
                            cset.face_matrix(self.rotations[i]),
                            cset.row_norms,
                            "daqp",
                            regularization,
                            limit,
                        )
                        self.why[i] = "; ".join(r for r in (f"daqp exit flag {flag}", soft) if r)
                times[i] = perf_counter() - t0
                if x is not None:
                    wrenches[i] = x * cmask[i] if masked_rows[c] else x
