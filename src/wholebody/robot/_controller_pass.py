"""The one Pinocchio pass of a control tick (:meth:`Robot.controller_pass`):
``computeAllTerms`` once per call, the whole-body terms (M, h, CoM, momentum, its matrix and
drift) as views of its data, and each frame's placement, world-aligned Jacobian and drift
``dJ/dt v`` read from that same pass when asked: no second pass over the tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidArgumentError

if TYPE_CHECKING:
    from wholebody.robot.core import Robot

    from ._state import State

__all__ = ["ControllerPass", "controller_pass"]

Array = NDArray[np.float64]
_LWA, _LOCAL = pin.LOCAL_WORLD_ALIGNED, pin.LOCAL
_update_frame = pin.updateFramePlacement
_get_jacobian = pin.getFrameJacobian
_get_velocity = pin.getFrameVelocity
_get_acc = pin.getFrameAcceleration
_get_classical_acc = pin.getFrameClassicalAcceleration


class ControllerPass:
    """The terms of one state for a control tick, one ``computeAllTerms`` pass per call.

    Build it with :meth:`Robot.controller_pass` (a floating-base robot); call it with
    ``(q, v)``. It runs on its own ``pinocchio.Data`` (calls of the robot's other methods
    between two ticks leave it alone); its arrays are views of that data, which the next
    call overwrites.

    Attributes
    ----------
    q, v : ndarray, shapes (nq,), (nv,)
        The state of the last call (the checked arrays given, not copies).
    mass_matrix : ndarray, shape (nv, nv)
        ``M(q)``, full and symmetric.
    nonlinear_effects : ndarray, shape (nv,)
        ``h = C(q, v) v + g(q)`` [N, N m].
    com : ndarray, shape (3,)
        Centre of mass, world [m].
    com_velocity : ndarray, shape (3,)
        Its velocity, world [m/s].
    com_jacobian : ndarray, shape (3, nv)
        ``J_com = A_G[:3] / m``, world axes.
    momentum : ndarray, shape (6,)
        Centroidal momentum ``(P, L_G)``, world axes at the CoM [kg m/s, kg m^2/s].
    momentum_matrix : ndarray, shape (6, nv)
        ``A_G`` with ``A_G v = (P, L_G)``; ``A_G[:3] / m`` is the CoM Jacobian.
    momentum_drift : ndarray, shape (6,)
        ``dA_G/dt v`` [N, N m]: the momentum rate at ``a = 0``, so that
        ``d(P, L_G)/dt = A_G a + momentum_drift``.
    mass : float
        [kg]
    gravity : ndarray, shape (3,)
        [m/s^2], world.
    """

    def __init__(self, robot: Robot):
        if not robot.has_floating_base:
            raise InvalidArgumentError(
                f"the controller pass needs a floating-base robot; {robot.name!r} has a fixed base"
            )
        self.robot = robot
        nv = robot.nv
        self.nv, self.nq = nv, robot.nq
        self.mass = float(robot.mass)
        self.q, self.v = pin.neutral(robot.model), np.zeros(nv)
        self.momentum_drift = np.zeros(6)
        self._lower = robot._lower_mask  # the strict lower triangle (nv, nv), the robot's
        self._bind(robot._model)

    def _bind(self, model: pin.Model) -> None:
        """Own data for ``model`` and the views of it that the pass hands on (its arrays
        keep their memory from call to call)."""
        self._model = model
        self.gravity = np.array(model.gravity.linear, dtype=float)
        self._data = d = model.createData()
        pin.computeAllTerms(model, d, pin.neutral(model), np.zeros(model.nv))
        # Some Pinocchio versions fill only the upper triangle of data.M: find out once.
        self._upper_only = not np.array_equal(d.M, d.M.T)
        self.mass_matrix = d.M
        self.nonlinear_effects = d.nle
        self.com = d.com[0]
        self.com_velocity = d.vcom[0]
        self.com_jacobian = d.Jcom
        self.momentum = d.hg.vector
        self.momentum_matrix = d.Ag
        self._dAg = d.dAg  # a view of the data's member, kept (its memory stays)

    @property
    def model(self) -> pin.Model:
        """The model the pass runs on (the robot's)."""
        return self._model

    @property
    def data(self) -> pin.Data:
        """The pass's own data (not the robot's scratch data), holding the last pass."""
        return self._data

    def __call__(self, q: ArrayLike | State, v: ArrayLike | None = None) -> None:
        """The one pass at ``(q, v)``: arrays checked here, once per tick, or a
        :class:`~wholebody.robot.State` holding both (trusted, ``v`` not given)."""
        robot = self.robot
        q, v = robot._check_qv(q, v)
        if robot._model is not self._model:  # a frame added since: the model was copied
            self._bind(robot._model)
        # Looked up per call (not aliased): a test counts the passes by patching pinocchio.
        pin.computeAllTerms(self._model, self._data, q, v)
        self.q, self.v = q, v
        if self._upper_only:
            M = self.mass_matrix
            np.copyto(M, M.T, where=self._lower)
        # Momentum rate at a = 0: dA_G/dt v, with the pass's dA_G (one product).
        self._dAg.dot(v, out=self.momentum_drift)

    # --- frames, read from the pass -------------------------------------------------------

    def frame_id(self, name: str) -> int:
        """The id of a frame (a typed error names an unknown frame)."""
        return int(self.robot.frame_id(name))

    def frame(self, fid: int) -> tuple[pin.SE3, Array, Array]:
        """``(placement, jacobian, drift)`` of frame ``fid`` at the last pass, in one call.

        ``placement`` is the world placement (a fresh SE3: Pinocchio's binding returns a
        copy of the data's, which the next call leaves alone); ``jacobian`` (6, nv) and
        ``drift`` (6,) are world-aligned at the frame origin, ``(v, omega)`` rows, as
        :meth:`jacobian` and :meth:`drift`.
        """
        m, d = self._model, self._data
        return (
            _update_frame(m, d, fid),
            _get_jacobian(m, d, fid, _LWA),
            _get_classical_acc(m, d, fid, _LWA).vector,
        )

    def placement(self, fid: int) -> pin.SE3:
        """World placement of frame ``fid`` (one SE3 product on the pass's joint placements)."""
        return _update_frame(self._model, self._data, fid)

    def jacobian(self, fid: int, local: bool = False) -> Array:
        """Frame Jacobian (6, nv), ``(v, omega)`` rows; world-aligned axes at the frame origin,
        or the frame's own axes with ``local``."""
        return _get_jacobian(self._model, self._data, fid, _LOCAL if local else _LWA)

    def velocity(self, fid: int, local: bool = False) -> Array:
        """Frame twist ``(v, omega)`` (6,), axes as :meth:`jacobian` [m/s, rad/s]."""
        m, d = self._model, self._data
        return _get_velocity(m, d, fid, _LOCAL if local else _LWA).vector

    def drift(self, fid: int, local: bool = False) -> Array:
        """``dJ/dt v`` (6,) of :meth:`jacobian`: the frame's acceleration at ``a = 0``.

        World-aligned: the classical acceleration of the origin and ``d omega/dt`` (the time
        derivative of the world-aligned twist). Local: the spatial acceleration in the
        frame's axes (the time derivative of the body twist).
        """
        m, d = self._model, self._data
        if local:
            return _get_acc(m, d, fid, _LOCAL).vector
        return _get_classical_acc(m, d, fid, _LWA).vector


def controller_pass(robot: Robot) -> ControllerPass:
    """A :class:`ControllerPass` of this floating-base robot: call it with ``(q, v)`` once per
    control tick, then read its terms and its frames' placements, Jacobians and drifts.

    Examples
    --------
    >>> tick = robot.controller_pass()            # doctest: +SKIP
    >>> tick(q, v)                                # doctest: +SKIP
    >>> M, h = tick.mass_matrix, tick.nonlinear_effects  # doctest: +SKIP
    >>> placement, J, drift = tick.frame(robot.frame_id("left_sole"))  # doctest: +SKIP
    """
    return ControllerPass(robot)
