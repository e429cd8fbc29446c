"""One-pass contact dynamics for controllers: :meth:`Robot.contact_dynamics_pass`.

A controller tick needs, for one state, the terms of

    M(q) a + h(q, v) = S^T tau + J_c(q)^T w,      J_c a + dJ_c/dt v = (desired contact acc.)

for its contact frames. :class:`ContactDynamicsPass` resolves the frames once, computes every
term from one ``pinocchio.computeAllTerms`` pass and writes them into buffers that it reuses
from tick to tick.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidArgumentError

if TYPE_CHECKING:
    from wholebody.robot.core import Robot

Array = NDArray[np.float64]
_LWA = pin.LOCAL_WORLD_ALIGNED
_all_terms = pin.computeAllTerms
_get_jacobian = pin.getFrameJacobian
_get_acc = pin.getFrameClassicalAcceleration
_update_frame = pin.updateFramePlacement


@dataclass(frozen=True)
class ContactDynamics:
    """The terms of one state's contact dynamics (see :meth:`Robot.contact_dynamics_pass`).

    Rows of the stacked contact quantities follow the order of the frames: 6 rows
    ``(v, omega)`` for a surface frame, 3 rows ``v`` for a point frame. World axes at each
    frame's origin (``LOCAL_WORLD_ALIGNED``); SI units.

    Attributes
    ----------
    mass_matrix : ndarray, shape (nv, nv)
        ``M(q)``, full and symmetric.
    nonlinear_effects : ndarray, shape (nv,)
        ``h = C(q, v) v + g(q)`` [N, N m].
    jacobian : ndarray, shape (r, nv)
        Stacked contact Jacobians, world-aligned (r = 6 per surface frame, 3 per point).
    drift : ndarray, shape (r,)
        Stacked ``dJ/dt v``: classical accelerations of the frame origins at ``a = 0``
        [m/s^2, rad/s^2].
    selection : ndarray, shape (nu, nv)
        Actuation selection matrix ``S``: ``S^T tau`` maps joint torques (nu = nv - 6 with
        a floating base, nv without) to generalized forces.
    positions : ndarray, shape (k, 3)
        Frame origins, world [m].
    rotations : ndarray, shape (k, 3, 3)
        Frame orientations, world from frame.
    coriolis : ndarray, shape (nv,), or None
        ``C(q, v) v`` (with ``split=True``).
    gravity : ndarray, shape (nv,), or None
        ``g(q)``, the generalized gravity to compensate (with ``split=True``).
    com : ndarray, shape (3,), or None
        Centre of mass, world [m] (with ``centroidal=True``).
    com_jacobian : ndarray, shape (3, nv), or None
        CoM Jacobian, world axes (with ``centroidal=True``).
    centroidal_momentum : ndarray, shape (6,), or None
        ``(P, L_G)`` at the CoM, world axes [kg m/s, kg m^2/s] (with ``centroidal=True``).
    centroidal_matrix : ndarray, shape (6, nv), or None
        Centroidal momentum matrix ``A_G``: ``A_G v = (P, L_G)`` (with ``centroidal=True``).
    """

    mass_matrix: Array
    nonlinear_effects: Array
    jacobian: Array
    drift: Array
    selection: Array
    positions: Array
    rotations: Array
    coriolis: Array | None = None
    gravity: Array | None = None
    com: Array | None = None
    com_jacobian: Array | None = None
    centroidal_momentum: Array | None = None
    centroidal_matrix: Array | None = None

    def copy(self) -> ContactDynamics:
        """A copy whose arrays the next tick of the pass does not overwrite."""
        arrays: dict[str, Any] = {}
        for f in fields(self):
            x = getattr(self, f.name)
            arrays[f.name] = None if x is None else x.copy()
        return replace(self, **arrays)


class ContactDynamicsPass:
    """Contact dynamics for a fixed list of frames, one Pinocchio pass per call.

    Build it with :meth:`Robot.contact_dynamics_pass`; call it with ``(q, v)``. The returned
    :class:`ContactDynamics` holds this object's buffers: the next call overwrites them
    (use :meth:`ContactDynamics.copy` to keep one).

    Parameters
    ----------
    robot : Robot
        The robot (its model and scratch data are used).
    frames : sequence of str
        Contact frame names, in the order of the stacked rows.
    point : sequence of bool, optional
        Per frame: True for a point contact (3 Jacobian rows), False for a surface
        contact (6 rows). Default all False.
    split : bool
        Also give ``C(q, v) v`` and ``g(q)`` separately.
    centroidal : bool
        Also give the CoM, its Jacobian, the centroidal momentum and its matrix.
    """

    def __init__(
        self,
        robot: Robot,
        frames: Sequence[str],
        *,
        point: Sequence[bool] | None = None,
        split: bool = False,
        centroidal: bool = False,
    ):
        if isinstance(frames, str):
            raise InvalidArgumentError(
                f"frames must be a sequence of frame names, got the string {frames!r}"
            )
        self.frames = tuple(frames)
        self._robot = robot
        self._ids = [robot.frame_id(f) for f in self.frames]
        k, nv = len(self._ids), robot.nv
        point = tuple(bool(p) for p in point) if point is not None else (False,) * k
        if len(point) != k:
            raise InvalidArgumentError(f"point has {len(point)} entries for {k} frames")
        self.point = point
        starts = np.cumsum([0] + [3 if p else 6 for p in point])
        self._rows = [(int(s), 3 if p else 6) for s, p in zip(starts[:-1], point, strict=True)]
        r = int(starts[-1])
        self.split, self.centroidal = bool(split), bool(centroidal)
        # Some Pinocchio versions fill only the upper triangle of data.M: find out once.
        m, d = robot.model, robot.data
        _all_terms(m, d, pin.neutral(m), np.zeros(nv))
        self._upper_only = not np.array_equal(d.M, d.M.T)
        self._lower = np.tril(np.ones((nv, nv), dtype=bool), -1)
        self._M = np.empty((nv, nv))
        self._h = np.empty(nv)
        self._J = np.empty((r, nv))
        self._drift = np.empty(r)
        self._pos = np.empty((k, 3))
        self._rot = np.empty((k, 3, 3))
        nu = nv - 6 if robot.has_floating_base else nv
        self._S = np.zeros((nu, nv))
        self._S[:, nv - nu :] = np.eye(nu)
        self._S.setflags(write=False)
        self._cv = np.empty(nv) if split else None
        self._g = np.empty(nv) if split else None
        self._com = np.empty(3) if centroidal else None
        self._Jcom = np.empty((3, nv)) if centroidal else None
        self._hg = np.empty(6) if centroidal else None
        self._Ag = np.empty((6, nv)) if centroidal else None
        self._result = ContactDynamics(
            self._M,
            self._h,
            self._J,
            self._drift,
            self._S,
            self._pos,
            self._rot,
            self._cv,
            self._g,
            self._com,
            self._Jcom,
            self._hg,
            self._Ag,
        )

    @property
    def rows(self) -> int:
        """Number of stacked contact rows r (6 per surface frame, 3 per point frame)."""
        return int(self._J.shape[0])

    def __call__(self, q: ArrayLike, v: ArrayLike) -> ContactDynamics:
        """The contact dynamics at ``(q, v)``, shapes as in :class:`ContactDynamics`.

        ``q`` (nq,) and ``v`` (nv,) are checked like every state of the robot.
        """
        robot = self._robot
        q, v = robot._check_qv(q, v)
        m, d = robot._model, robot._data
        _all_terms(m, d, q, v)
        self._M[:] = d.M
        if self._upper_only:
            np.copyto(self._M, self._M.T, where=self._lower)
        self._h[:] = d.nle
        J, drift, pos, rot = self._J, self._drift, self._pos, self._rot
        for i, (fid, (s, n)) in enumerate(zip(self._ids, self._rows, strict=True)):
            J[s : s + n] = _get_jacobian(m, d, fid, _LWA)[:n]
            drift[s : s + n] = _get_acc(m, d, fid, _LWA).vector[:n]
            placement = _update_frame(m, d, fid)
            pos[i] = placement.translation
            rot[i] = placement.rotation
        if self._g is not None and self._cv is not None:
            self._g[:] = d.g
            np.subtract(self._h, self._g, out=self._cv)
        if self._com is not None:
            self._com[:] = d.com[0]
            self._Jcom[:] = d.Jcom  # type: ignore[index]
            self._hg[:] = d.hg.vector  # type: ignore[index]
            self._Ag[:] = d.Ag  # type: ignore[index]
        return self._result


def contact_dynamics_pass(
    robot: Robot,
    frames: Sequence[str],
    *,
    point: Sequence[bool] | None = None,
    split: bool = False,
    centroidal: bool = False,
) -> ContactDynamicsPass:
    """A callable ``(q, v) -> ContactDynamics`` for these contact frames, built once.

    One ``computeAllTerms`` pass per call gives ``M``, ``h`` (and ``C v``, ``g`` with
    ``split``), the stacked world-aligned contact Jacobian and drift, the actuation
    selection matrix, the frames' placements and, with ``centroidal``, the CoM, its
    Jacobian and the centroidal momentum and matrix. Buffers are reused between calls.

    Parameters
    ----------
    frames : sequence of str
        Contact frame names (resolved once; unknown names raise
        :class:`~wholebody.errors.FrameNotFoundError`).
    point : sequence of bool, optional
        Per frame, True for a point contact (3 rows: the origin's velocity), False for
        a surface contact (6 rows). Default all surface.
    split, centroidal : bool
        Optional outputs, see :class:`ContactDynamics`.

    Examples
    --------
    >>> feet = robot.contact_dynamics_pass(["left_sole", "right_sole"])  # doctest: +SKIP
    >>> cd = feet(q, v)                                                # doctest: +SKIP
    >>> cd.jacobian.shape                                              # doctest: +SKIP
    (12, 25)
    """
    return ContactDynamicsPass(robot, frames, point=point, split=split, centroidal=centroidal)


def contact_dynamics(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    frames: Sequence[str],
    *,
    point: Sequence[bool] | None = None,
    split: bool = False,
    centroidal: bool = False,
) -> ContactDynamics:
    """The contact dynamics at ``(q, v)`` for ``frames``, in fresh arrays.

    The convenience form of :meth:`contact_dynamics_pass` (which a control loop should
    build once): same outputs, not overwritten by later calls.
    """
    cdp = ContactDynamicsPass(robot, frames, point=point, split=split, centroidal=centroidal)
    return cdp(q, v)
