"""Joint posture task with per-joint weights."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from ...errors import InvalidArgumentError, StateError
from ...robot import ControllerPass
from .._inputs import as_vector
from ._base import AccelerationTask, as_gains

Array = NDArray[np.float64]

#: Joints whose configuration is their coordinate (``difference(q0, q1) = q1 - q0``, one
#: ``q`` per ``v``): the posture error of a model made of them (after its free flyer) is a
#: subtraction of the joint coordinates, without a Pinocchio call.
_EUCLIDEAN_JOINTS = frozenset(
    f"JointModel{k}"
    for k in ("RX", "RY", "RZ", "RevoluteUnaligned", "PX", "PY", "PZ", "PrismaticUnaligned")
)


class PostureTask(AccelerationTask):
    """PD of the actuated joints to a reference configuration (the base is left free).

    Error ``difference(q, q_ref)[6:]`` (joint space, on the configuration manifold), desired
    acceleration ``a_ref + kp e + kd (v_ref - v[6:])``; cost
    ``weight * sum_j w_j (a_j - desired_j)^2`` (Jacobian ``[0 I]``, rows of the joints of
    nonzero weight).

    Parameters
    ----------
    kp, kd : float or array (nv - 6,)
        Gains [1/s^2], [1/s].
    weight : float
    joint_weights : array (nv - 6,), optional
        Per joint weights ``w_j >= 0`` (default ones); a zero frees that joint.
    name : str
    """

    def __init__(
        self,
        *,
        kp: ArrayLike,
        kd: ArrayLike,
        weight: float = 1.0,
        joint_weights: ArrayLike | None = None,
        name: str = "posture",
    ):
        super().__init__(name, 0, weight=weight)
        for gain, what in ((kp, "kp"), (kd, "kd")):  # checked now, sized at _bind
            as_gains(gain, np.size(gain), f"task {name!r}: {what}")
        self._kp, self._kd, self._jw = kp, kd, None
        if joint_weights is not None:  # a finite vector now, its size and signs at _bind
            self._jw = as_vector(joint_weights, None, f"task {name!r}: joint_weights")
        self._joint_weights: Array | None = None
        self._cost_weights, self._cost_version = np.zeros(0), -1  # weight * joint weights
        self._views: tuple[Array, ...] = (np.zeros(0), np.zeros(0))  # of add_cost_diagonal
        self._nq = 0  # the model's nq, known from the first update
        self.reference: Array | None = None
        self.reference_velocity: Array | None = None
        self.reference_acceleration: Array | None = None

    def set_reference(
        self,
        q: ArrayLike,
        velocity: ArrayLike | None = None,
        acceleration: ArrayLike | None = None,
    ) -> None:
        """Reference configuration (nq,) (its base part is ignored), joint velocities and
        accelerations (nv - 6,) [rad/s, rad/s^2].

        Raises
        ------
        InvalidArgumentError
            A value that is not finite, or (once the task has seen the robot) of the wrong
            size.
        """
        nq, nu = (self._nq, self.size) if self._nq else (None, None)
        self.reference = self._vector(q, nq, "reference")
        self.reference_velocity = self._vector(velocity, nu, "reference velocity")
        self.reference_acceleration = self._vector(acceleration, nu, "reference acceleration")

    def _vector(self, value: ArrayLike | None, size: int | None, what: str) -> Array | None:
        return None if value is None else as_vector(value, size, f"task {self.name!r}: {what}")

    @property
    def joint_weights(self) -> Array | None:
        """Per-joint weights (nv - 6,), >= 0 (None before the first update when none was
        given). Assign a new vector to change them: it is checked and kept as a read-only
        copy, and the joints of weight 0 leave the task's mask; one assigned before the
        first update is checked then."""
        return self._joint_weights

    @joint_weights.setter
    def joint_weights(self, value: ArrayLike) -> None:
        if self._joint_weights is None and self.size == 0:  # not sized yet: at _bind
            # A finite vector now (a copy), its size and signs at _bind.
            self._jw = as_vector(value, None, f"task {self.name!r}: joint_weights")
            return
        weights = np.array(as_gains(value, self.size, "joint_weights"))  # a copy
        weights.setflags(write=False)
        self._joint_weights = weights
        self.mask = weights > 0

    def _bound_weights(self) -> Array:
        weights = self._joint_weights
        if weights is None:
            raise StateError(f"task {self.name!r}: update it before forming its cost")
        return weights

    def _rescale(self) -> None:
        # sqrt(weight * w_j) per joint row (the stacked form of the cost).
        super()._rescale()
        if self._joint_weights is not None:
            self._row_scale *= np.sqrt(self._joint_weights)

    def _bind(self, kin: ControllerPass) -> None:
        nu = kin.nv - 6
        self._nq = kin.nq
        self.size = nu
        self.kp, self.kd = as_gains(self._kp, nu, "kp"), as_gains(self._kd, nu, "kd")
        self._joint_weights = None
        self.joint_weights = np.ones(nu) if self._jw is None else self._jw
        self.jacobian = np.zeros((nu, kin.nv))
        self.jacobian[:, 6:] = np.eye(nu)
        self.drift = np.zeros(nu)
        self._euclidean_model: pin.Model | None = None  # the model _euclidean is of
        self._euclidean = False
        self._joint_ref: tuple[Array | None, Array] = (None, np.zeros(0))

    def update(self, kin: ControllerPass) -> None:
        if self.jacobian.shape[1] != kin.nv:
            self._bind(kin)
        nu = self.size
        if self.reference is None:
            self.reference = kin.q.copy()
        if self.reference.shape != (kin.nq,):
            raise InvalidArgumentError(
                f"task {self.name!r}: reference must have shape ({kin.nq},), "
                f"got {self.reference.shape}"
            )
        if self._euclidean_model is not kin.model:
            model = self._euclidean_model = kin.model
            # A free-flyer root (q[:7] and v[:6]), then only joints whose q is their v.
            self._euclidean = (
                model.nq - 7 == nu
                and model.njoints > 1
                and model.joints[1].shortname() == "JointModelFreeFlyer"
                and all(j.shortname() in _EUCLIDEAN_JOINTS for j in model.joints[2:])
            )
        if self._euclidean:  # pin.difference's own expression for these joints: q_ref - q
            ref = self.reference
            if self._joint_ref[0] is not ref:  # a view of the reference's joints, made once
                self._joint_ref = (ref, ref[7:])
            self.error = np.subtract(self._joint_ref[1], kin.q[7:])
        else:
            self.error = pin.difference(kin.model, kin.q, self.reference)[6:]
        if self.reference_velocity is None:
            self.desired = self.kp * self.error - self.kd * kin.v[6:]
        else:
            vref = as_vector(self.reference_velocity, nu, f"task {self.name!r}: reference velocity")
            self.desired = self.kp * self.error + self.kd * (vref - kin.v[6:])
        if self.reference_acceleration is not None:
            self.desired += as_vector(
                self.reference_acceleration, nu, f"task {self.name!r}: reference acceleration"
            )

    def add_cost_diagonal(self, diagonal: Array, q: Array) -> None:
        """Add the cost to ``x^T P x / 2 + q^T x`` given a writable view of ``P``'s diagonal
        (the cost is diagonal): ``weight * w_j`` on each joint's acceleration (the rows that
        count), ``-weight w_j desired_j`` in ``q``."""
        if self._weight:
            if self._cost_version != self._scale_version:  # weight or joint weights changed
                self._bound_weights()
                self._cost_weights = np.square(self._row_scale)
                self._cost_version = self._scale_version
            views = self._views
            if views[0] is not diagonal or views[1] is not q:  # the joints' views, made once
                end = self.jacobian.shape[1]
                views = self._views = (diagonal, q, diagonal[6:end], q[6:end], np.zeros(end - 6))
            _, _, d, qj, w = views
            d += self._cost_weights
            np.multiply(self._cost_weights, self.desired, out=w)
            qj -= w

    def residual(self, a: ArrayLike) -> Array:
        return (np.asarray(a, dtype=float)[6:] - self.desired)[self.mask]
