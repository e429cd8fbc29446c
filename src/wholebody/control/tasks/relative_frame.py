"""Relative pose of two frames (hand to hand): frame B's placement in frame A."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike

from ...robot import ControllerPass
from .._inputs import as_placement, as_vector
from ._base import AccelerationTask, as_gains


class RelativeFrameTask(AccelerationTask):
    """Track ``M_AB = M_A^-1 M_B``, the placement of frame B in frame A (6 axes, maskable).

    The task velocity is B's twist relative to A in B's own axes,
    ``V = V_B - X_BA V_A`` (body twists, ``(v, omega)``), with Jacobian
    ``J_B - X_BA J_A`` (local Jacobians). Its drift is
    ``dJ_B/dt v - X_BA dJ_A/dt v + V_B x (X_BA V_A)``. The error is
    ``log6(M_AB^-1 M_AB_ref)`` (B's axes, as TSID's SE3 task) and the desired acceleration
    ``a_ref + kp * error + kd * (v_ref - V)``.

    Parameters
    ----------
    frame_a, frame_b : str
        The reference frame A and the tracked frame B.
    kp, kd, weight, mask, name
        As :class:`FrameTask` (axes are B's own).
    """

    def __init__(
        self,
        frame_a: str,
        frame_b: str,
        *,
        kp: ArrayLike,
        kd: ArrayLike,
        weight: float = 1.0,
        mask: ArrayLike | None = None,
        name: str | None = None,
    ):
        super().__init__(name or f"{frame_b}_in_{frame_a}", 6, weight=weight, mask=mask)
        self.frame_a, self.frame_b = str(frame_a), str(frame_b)
        self.frames = (self.frame_a, self.frame_b)
        self.kp, self.kd = as_gains(kp, 6, "kp"), as_gains(kd, 6, "kd")
        self.reference: pin.SE3 | None = None
        self.reference_velocity = np.zeros(6)
        self.reference_acceleration = np.zeros(6)
        self.relative = pin.SE3.Identity()
        self.twist = np.zeros(6)
        self._ids: tuple[int, int] | None = None

    def set_reference(
        self,
        placement: pin.SE3 | ArrayLike,
        velocity: ArrayLike | None = None,
        acceleration: ArrayLike | None = None,
    ) -> None:
        """Reference ``M_AB`` and B's relative twist / acceleration in B's axes."""
        self.reference = as_placement(placement, f"task {self.name!r}: reference")
        self.reference_velocity = (
            np.zeros(6)
            if velocity is None
            else as_vector(velocity, 6, f"task {self.name!r}: velocity")
        )
        self.reference_acceleration = (
            np.zeros(6)
            if acceleration is None
            else as_vector(acceleration, 6, f"task {self.name!r}: acceleration")
        )

    def update(self, kin: ControllerPass) -> None:
        if self._ids is None:
            self._ids = (kin.frame_id(self.frame_a), kin.frame_id(self.frame_b))
        ia, ib = self._ids
        Ma, Mb = kin.placement(ia).copy(), kin.placement(ib).copy()
        Mab = Ma.actInv(Mb)
        self.relative = Mab
        if self.reference is None:
            self.reference = Mab.copy()
        X_ba = Mab.inverse().action  # motion transform from A's axes to B's
        Ja, Jb = kin.jacobian(ia, local=True), kin.jacobian(ib, local=True)
        self.jacobian = Jb - X_ba @ Ja
        va = pin.Motion(Ja @ kin.v)
        vb = pin.Motion(Jb @ kin.v)
        va_in_b = Mab.actInv(va)
        self.twist = (vb - va_in_b).vector
        self.drift = (
            kin.drift(ib, local=True) - X_ba @ kin.drift(ia, local=True) + vb.cross(va_in_b).vector
        )
        self.error[:] = pin.log6(Mab.actInv(self.reference)).vector
        self.desired = (
            self.reference_acceleration
            + self.kp * self.error
            + self.kd * (self.reference_velocity - self.twist)
        )
