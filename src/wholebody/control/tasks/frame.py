"""Frame pose task (SE3), world-aligned axes at the frame origin."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike

from ...robot import ControllerPass
from .._inputs import as_placement, as_vector
from ._base import ZERO6, AccelerationTask, as_gains, pd_acceleration


class FrameTask(AccelerationTask):
    """Track a frame's placement, twist and acceleration (6 axes, maskable).

    All six axes are world-aligned at the frame origin (``LOCAL_WORLD_ALIGNED``, the
    project's convention): ``(x, y, z, rx, ry, rz)``. The error is
    ``(p_ref - p, R log3(R^T R_ref))`` [m, rad] and the desired acceleration
    ``a_ref + kp * error + kd * (v_ref - v)`` with the frame twist ``v = J v_q``.

    Parameters
    ----------
    frame : str
        Robot frame.
    kp, kd : float or array (6,)
        Gains [1/s^2], [1/s], per axis or one for all.
    weight : float
    mask : array of bool (6,), optional
        Axes that count (world-aligned); default all.
    name : str, optional
        Default ``frame``.

    Notes
    -----
    Set the reference with :meth:`set_reference` (an SE3 or a (4, 4) matrix) before the
    first update, or let :meth:`update` take the frame's current placement.
    """

    def __init__(
        self,
        frame: str,
        *,
        kp: ArrayLike,
        kd: ArrayLike,
        weight: float = 1.0,
        mask: ArrayLike | None = None,
        name: str | None = None,
    ):
        super().__init__(name or frame, 6, weight=weight, mask=mask)
        self.frame = str(frame)
        self.frames = (self.frame,)
        self.kp, self.kd = as_gains(kp, 6, "kp"), as_gains(kd, 6, "kd")
        self.reference: pin.SE3 | None = None
        self.reference_velocity = ZERO6
        self.reference_acceleration = ZERO6
        self.placement = pin.SE3.Identity()
        self.twist = np.zeros(6)
        self._fid: int | None = None
        self._ref: pin.SE3 | None = None  # the reference whose arrays (views) are cached
        self._ref_p, self._ref_R = np.zeros(3), np.eye(3)
        self._err_p, self._err_r = self.error[:3], self.error[3:]

    def set_reference(
        self,
        placement: pin.SE3 | ArrayLike,
        velocity: ArrayLike | None = None,
        acceleration: ArrayLike | None = None,
    ) -> None:
        """Reference placement (world), twist and acceleration ``(linear, angular)`` in
        world-aligned axes at the frame origin [m/s, rad/s; m/s^2, rad/s^2]; zeros if omitted.

        Raises
        ------
        InvalidArgumentError
            A placement that is not finite or whose rotation is not one, or a twist or
            acceleration that is not a finite vector of 6.
        """
        self.reference = as_placement(placement, f"task {self.name!r}: reference")
        self.reference_velocity = (
            ZERO6 if velocity is None else as_vector(velocity, 6, f"task {self.name!r}: velocity")
        )
        self.reference_acceleration = (
            ZERO6
            if acceleration is None
            else as_vector(acceleration, 6, f"task {self.name!r}: acceleration")
        )
        self._feedforward(ZERO6)

    def update(self, kin: ControllerPass) -> None:
        if self._fid is None:
            self._fid = kin.frame_id(self.frame)
        M, J, drift = kin.frame(self._fid)
        self.placement = M  # a fresh SE3 (the pass's placements are copies)
        if self.reference is None:
            self.reference = M.copy()
        ref = self.reference
        if ref is not self._ref:  # SE3 arrays are views: in-place edits of ref follow
            self._ref, self._ref_p, self._ref_R = ref, ref.translation, ref.rotation
        self.jacobian, self.drift = J, drift
        self.twist = twist = J.dot(kin.v)  # ndarray.dot: less dispatch than matmul
        err = self.error
        if self._err_p.base is not err:  # views of error, made once
            self._err_p, self._err_r = err[:3], err[3:]
        np.subtract(self._ref_p, M.translation, out=self._err_p)
        # R log3(R^T R_ref) = log3(R_ref R^T): the rotation error in world axes.
        self._err_r[...] = pin.log3(self._ref_R.dot(M.rotation.T))
        self.desired = pd_acceleration(self.kp, self.kd, err, twist, self._feedforward(ZERO6))
