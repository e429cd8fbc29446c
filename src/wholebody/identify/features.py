"""Each sample's features for the fit (``r = F x`` is the residual of its rows), the row
groups, and the calibration of fitted sensor parameters."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..io.calibration import Calibration, ContactCalibration
from ..robot.batch import regressor_frames_rows
from .problem import PreparedLog, Problem

__all__ = [
    "Workspace",
    "features",
    "features_and_jacobians",
    "row_groups",
    "fitted_calibration",
]

Array = NDArray[np.float64]


class Workspace:
    """Named arrays reused from chunk to chunk and from pass to pass of a fit.

    A chunk's arrays (100 samples x 38 rows x 347 columns for Talos: 10 MB each) allocated
    afresh are page-faulted in afresh (the allocator hands such blocks back to the system
    between chunks): reused, they cost their pages once. An array handed out is valid until the
    next request of the same name. A smoothed log's features, few once decimated, are computed
    once and kept here for every pass.
    """

    def __init__(self) -> None:
        self._arrays: dict[str, Array] = {}
        #: Each smoothed log's features and Jacobians at its fitted samples, by (log id,
        #: rows, log index) (see :func:`features_and_jacobians`).
        self.smoothed: dict[tuple[int, int, int], tuple[PreparedLog, Array, Array]] = {}

    def array(self, name: str, shape: tuple[int, ...], axis: int = 0) -> Array:
        """An uninitialised float array of ``shape``: the first ``shape[axis]`` entries along
        ``axis`` of the C-contiguous buffer kept under ``name`` (made anew when it is too short
        there or its other dimensions differ); contiguous for ``axis`` 0."""
        buffer = self._arrays.get(name)
        others = shape[:axis] + shape[axis + 1 :]
        if (
            buffer is None
            or buffer.shape[:axis] + buffer.shape[axis + 1 :] != others
            or buffer.shape[axis] < shape[axis]
        ):
            buffer = np.empty(shape)
            self._arrays[name] = buffer
        return buffer[(slice(None),) * axis + (slice(0, shape[axis]),)]


def features(
    problem: Problem, log: PreparedLog, start: int, stop: int, rows: int, log_index: int = 0
) -> Array:
    """``F`` (n, rows, C) of samples ``start:stop`` of the log ``log_index``: ``r = F x`` is
    the residual of each row."""
    return features_and_jacobians(problem, log, np.arange(start, stop), rows, log_index)[0]


def features_and_jacobians(
    problem: Problem,
    log: PreparedLog,
    index: NDArray[np.intp],
    rows: int,
    log_index: int = 0,
    workspace: Workspace | None = None,
) -> tuple[Array, Array]:
    """The features ``F`` (n, rows, C) of the fitted samples ``index`` (n,) of ``log``
    (positions in ``log.samples``; see :func:`features`) and the transposed contact Jacobians
    ``J_c^T`` (n, k, rows, 6) of the problem's contacts (world-aligned, at the contact frames'
    origins): how each contact's logged wrench enters the rows, so how its noise does. With
    the log's smoothing, each sample's features are the low-pass of the raw samples' around
    it (:class:`~wholebody.identify.smoothing.Smoothing`), its Jacobians its own.

    With a ``workspace`` both are views of its buffers, valid until its next use for
    features: use them, do not keep them."""
    if log.smoothing is None:
        return _raw_features(problem, log, index, rows, log_index, workspace)
    F, JT = _smoothed(problem, log, rows, log_index, workspace)
    return F[index], JT[index]


#: Raw samples per regressor pass of a smoothed log.
_RAW_CHUNK = 100


def _smoothed(
    problem: Problem, log: PreparedLog, rows: int, log_index: int, workspace: Workspace | None
) -> tuple[Array, Array]:
    """The smoothed features and the contact Jacobians of every fitted sample of ``log``
    (one pass over its raw samples), kept in the ``workspace`` for the fit's other passes."""
    key = (id(log), rows, log_index)
    if workspace is not None and key in workspace.smoothed:
        return workspace.smoothed[key][1:]
    assert log.smoothing is not None
    F, JT = log.smoothing.apply(
        lambda raw: _raw_features(problem, log, raw, rows, log_index, workspace),
        log.samples,
        len(log.q),
        _RAW_CHUNK,
    )
    if workspace is not None:  # the log kept with them: its id is not reused while they are
        workspace.smoothed[key] = (log, F, JT)
    return F, JT


def _raw_features(
    problem: Problem,
    log: PreparedLog,
    index: NDArray[np.intp],
    rows: int,
    log_index: int,
    workspace: Workspace | None,
) -> tuple[Array, Array]:
    """The features and contact Jacobians of the raw samples ``index`` (positions in the
    log's arrays)."""
    robot = problem.robot
    model = robot.model
    contacts = problem.contacts
    frame_ids = [robot.frame_id(c.frame) for c in contacts] + [
        robot.frame_id(f) for f in log.ext_frames
    ]
    n, k = len(index), len(contacts)
    buffers = None
    if workspace is not None:
        buffers = (
            workspace.array("features Y", (n, rows, 10 * (model.njoints - 1))),
            workspace.array("features J", (n, len(frame_ids), 6, rows)),
            workspace.array("features R", (n, k, 3, 3)),
        )
    Y, J, Rot = regressor_frames_rows(
        robot, log.q, log.v, log.a, index, frame_ids, dofs=rows, n_rotations=k, out=buffers
    )
    W = log.W[index][:, log.contact_order]
    JT = np.swapaxes(J, 2, 3)  # (n, nf, rows, 6)
    b = np.einsum("nkrs,nks->nr", JT[:, :k], W)
    if log.E is not None:
        b += np.einsum("nkrs,nks->nr", JT[:, k:], log.E[index])
    if rows > 6 and log.tau is not None:
        b[:, 6:] += log.tau[index]
    shape = (n, rows, problem.n_columns)
    F = np.empty(shape) if workspace is None else workspace.array("features F", shape)
    # The used parameters' columns copied by runs of consecutive indices (slices, not a
    # gather: several times faster on these arrays).
    used = np.asarray(problem.used)
    cuts = np.flatnonzero(np.diff(used) != 1) + 1
    at = 0
    for run in np.split(used, cuts) if len(used) else []:
        F[:, :, at : at + len(run)] = Y[:, :, int(run[0]) : int(run[-1]) + 1]
        at += len(run)
    F[:, :, problem.n_pi : -1] = 0.0
    names = [c.name for c in contacts]
    for c, p in enumerate(problem.params[problem.n_inertial :], start=problem.n_pi):
        if p.log is not None and p.log != log_index:
            continue
        if p.kind == "torque_offset":
            F[:, model.joints[robot.joint_id(p.target)].idx_v, c] = 1.0
            continue
        j = names.index(p.target)
        world = problem.sensor_axes.get(p.target) == "world"
        axis = np.zeros(3)
        axis[p.axis] = 1.0
        direction = np.broadcast_to(axis, (n, 3)) if world else Rot[:, j, :, p.axis]
        w6 = np.zeros((n, 6))
        if p.kind == "force_offset":
            w6[:, :3] = direction
        elif p.kind == "moment_offset":
            w6[:, 3:] = direction
        elif p.kind == "gain":
            w6 = -W[:, j]
        else:  # rotation: w_true gains (R delta) x w, so r gains -J^T (dir x w)... sign below
            w6[:, :3] = -np.cross(direction, W[:, j, :3])
            w6[:, 3:] = -np.cross(direction, W[:, j, 3:])
        F[:, :, c] = np.einsum("nrs,ns->nr", JT[:, j], w6)
    unused = np.asarray(problem.unused, dtype=np.intp)
    if workspace is None:
        Y_unused = Y[:, :, unused]
    else:
        # In the layout NumPy's gather gives (the gathered axis outermost), so that the
        # product sums in the same order as without a workspace; valid indices: no clipping.
        Y_unused = workspace.array("features unused", (len(unused), n, rows), axis=1)
        Y_unused = Y_unused.transpose(1, 2, 0)
        np.take(Y, unused, axis=2, out=Y_unused, mode="clip")
    F[:, :, -1] = Y_unused @ problem.pi_unused - b
    return F, JT[:, :k]


def row_groups(rows: int) -> list[tuple[str, slice]]:
    """The row groups (base ``force``, base ``moment``, joint ``torque``) of ``rows`` rows."""
    return [("force", slice(0, 3)), ("moment", slice(3, 6))] + (
        [("torque", slice(6, rows))] if rows > 6 else []
    )


def fitted_calibration(problem: Problem, theta: Array, log: int = 0) -> Calibration:
    """The sensor :class:`~wholebody.io.calibration.Calibration` of log ``log`` at the
    parameters
    ``theta`` (p,) (shared sensor parameters and that log's own)."""
    contacts: dict[str, dict[str, Any]] = {}
    torques: dict[str, float] = {}
    for k, p in enumerate(problem.params[problem.n_inertial :], start=problem.n_inertial):
        if p.log is not None and p.log != log:
            continue
        if p.kind == "torque_offset":
            torques[p.target] = float(theta[k])
            continue
        entry = contacts.setdefault(
            p.target,
            {
                "force_offset": np.zeros(3),
                "moment_offset": np.zeros(3),
                "gain": 0.0,
                "rotation": np.zeros(3),
            },
        )
        if p.kind == "gain":
            entry["gain"] = float(theta[k])
        else:
            entry[p.kind][p.axis] = theta[k]
    frames = {c.name: c.frame for c in problem.contacts if c.name in contacts}
    return Calibration(
        {
            n: ContactCalibration(**e, axes=problem.sensor_axes.get(n, "contact"))
            for n, e in contacts.items()
        },
        torques,
        frames,
    )
