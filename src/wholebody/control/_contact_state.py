"""A contact of a live controller: its phase, force ramp and drift stabilisation."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from numpy.typing import NDArray

from ..contacts import Contact, PointContact
from ..errors import InvalidArgumentError
from ..robot import ControllerPass

Array = NDArray[np.float64]


class ContactState:
    """One contact held by a :class:`~wholebody.control.WholeBodyController`.

    While active, the contact frame's acceleration is constrained to
    ``J a + dJ/dt v = kp e - kd J v`` (world-aligned axes at its origin; 3 rows for a point,
    6 for a surface contact), ``e`` the frame's error to the placement it had when it became
    active (``(p_ref - p, R log3(R^T R_ref))``): the PD stabilises the drift of a contact
    held in simulation or on hardware (``kp = kd = 0`` asks for zero acceleration). A *rigid*
    contact (``priority`` 0) holds these rows as equalities; a *soft* one makes them a cost
    ``weight * || J a + dJ/dt v - (kp e - kd J v) ||^2`` of its priority level (its wrench
    still bounded by its cone and normal force bounds).

    The normal force is bounded by ``f_min <= n^T f <= f_max(t)``. ``f_max(t)`` ramps:

    * ``"ramp_up"`` (after :meth:`WholeBodyController.add_contact` with ``ramp > 0``):
      ``min(max_normal_force, ramp_force (t - t0) / ramp)``, ``f_min`` zero, ``t0`` the
      time of the first update after the call;
    * ``"ramp_down"`` (after :meth:`WholeBodyController.remove_contact` with ``ramp > 0``):
      ``f_0 (1 - (t - t0) / ramp)`` from the normal force ``f_0`` of the last solution,
      ``f_min`` zero; the contact is removed at the first update with ``t >= t0 + ramp``,
      when ``f_max`` is zero, so its force leaves without a jump larger than
      ``f_0 dt / ramp``;
    * ``"active"``: ``[min_normal_force, max_normal_force]``.

    Attributes
    ----------
    contact : PointContact or SurfaceContact
    name : str
    kp, kd : float
        Drift stabilisation gains [1/s^2], [1/s].
    min_normal_force, max_normal_force : float
        [N]
    phase : str
        ``"ramp_up"``, ``"active"`` or ``"ramp_down"``.
    reference : pinocchio.SE3 or None
        The held placement (set at the first update while active).
    columns : slice
        The contact's wrench columns in ``x`` of the current layout.
    jacobian, drift, error, desired : ndarray, (r, nv), (r,), (r,), (r,)
        World-aligned, r = 3 or 6, of the last update: the Jacobian, ``dJ/dt v``, the
        error ``e`` to the reference and the PD's ``kp e - kd J v``.
    placement : pinocchio.SE3
        The frame's world placement at the last update.
    bounds : tuple of float
        ``(f_min, f_max)`` [N] of the last update.
    normal : ndarray (3,)
        The contact normal in the frame's axes.
    priority : int
        0 rigid, 1, 2, ...: soft, at that priority level.
    weight : float
        A soft contact's weight [1/(m/s^2)^2].
    """

    #: Its rows in a level's stack (a soft contact) are acceleration rows.
    over_wrenches = False

    def __init__(
        self,
        contact: Contact,
        *,
        kp: float,
        kd: float,
        min_normal_force: float,
        max_normal_force: float,
        ramp: float,
        ramp_force: float,
        reference: pin.SE3 | None,
        priority: int = 0,
        weight: float = 1.0,
    ):
        self.contact = contact
        self.name = contact.name
        self.point = isinstance(contact, PointContact)
        self.size = 3 if self.point else 6
        # Own buffers until the controller binds this contact to its stacked rows.
        self._bind_own()
        self.kp, self.kd = kp, kd
        self.priority, self.weight = int(priority), float(weight)
        # As rows of its level's stack (soft): the row scales a task has.
        self._row_scale, self._scale_version = np.full(self.size, np.sqrt(self.weight)), 0
        self.min_normal_force = float(min_normal_force)
        self.max_normal_force = float(max_normal_force)
        if not (0 <= self.min_normal_force <= self.max_normal_force):
            raise InvalidArgumentError(
                f"contact {self.name!r}: need 0 <= min_normal_force <= max_normal_force, got "
                f"{self.min_normal_force} and {self.max_normal_force}"
            )
        self.normal = (
            np.asarray(contact.normal, float)
            if isinstance(contact, PointContact)
            else np.array([0.0, 0.0, 1.0])
        )
        self.ramp_force = float(ramp_force)
        self.phase = "active"
        # A ramp starts at the first update after the call that began it.
        self.t0: float | None = None
        self.ramp, self.f0 = 0.0, 0.0
        if ramp > 0:
            self.phase, self.ramp = "ramp_up", float(ramp)
        self.reference = None if reference is None else reference.copy()
        self.columns = slice(0, 0)
        self.bounds = (self.min_normal_force, self.max_normal_force)
        self.fid = -1
        self.placement = pin.SE3.Identity()
        self._ref: pin.SE3 | None = None  # the reference whose arrays are cached below
        self._ref_p, self._ref_R = np.zeros(3), np.eye(3)

    def _bind_own(self, nv: int = 0) -> None:
        n = self.size
        self.bind(
            np.zeros((n, nv)),
            np.zeros(n),
            np.zeros(n),
            np.zeros(n),
            np.zeros(n),
            np.zeros(n),
            np.eye(3),
            owned=True,
        )

    def bind(
        self,
        jacobian: Array,
        drift: Array,
        error: Array,
        kp: Array,
        kd: Array,
        desired: Array,
        rotation: Array,
        *,
        owned: bool = False,
    ) -> None:
        """Make this contact's arrays views of a controller's stacked buffers (its rows):
        ``jacobian`` (size, nv), ``drift``, ``error``, the gains ``kp``, ``kd`` and
        ``desired`` (size,), and its orientation ``rotation`` (3, 3). :meth:`update` fills
        all but ``desired``, which the controller computes for every contact at once
        (``kp e - kd J v``), as :meth:`update` does itself while the contact is unbound."""
        gains = (self.kp, self.kd) if hasattr(self, "_kp") else (0.0, 0.0)
        self.jacobian, self.drift, self.error = jacobian, drift, error
        self._err_p, self._err_r = error[:3], error[3:]  # views, made once per binding
        self._kp, self._kd, self.desired, self._rotation = kp, kd, desired, rotation
        self._owned = owned
        self.kp, self.kd = gains

    @property
    def kp(self) -> float:
        """Stiffness of the drift stabilisation [1/s^2] (>= 0)."""
        return float(self._kp[0])

    @kp.setter
    def kp(self, value: float) -> None:
        self._kp[:] = self._gain(value, "kp")

    @property
    def kd(self) -> float:
        """Damping of the drift stabilisation [1/s] (>= 0)."""
        return float(self._kd[0])

    @kd.setter
    def kd(self, value: float) -> None:
        self._kd[:] = self._gain(value, "kd")

    def _gain(self, value: float, what: str) -> float:
        x = float(value)
        if not (np.isfinite(x) and x >= 0):
            raise InvalidArgumentError(f"contact {self.name!r}: {what} must be >= 0, got {x}")
        return x

    def start_removal(self, ramp: float, normal_force: float) -> None:
        """Begin the ramp down at the next update, from ``normal_force`` [N] over ``ramp`` [s]."""
        self.phase, self.t0, self.ramp = "ramp_down", None, float(ramp)
        self.f0 = max(float(normal_force), 0.0)

    def finished(self, time: float) -> bool:
        """True when a ramp down is over (the contact leaves at this update)."""
        return (
            self.phase == "ramp_down"
            and self.t0 is not None
            and time >= self.t0 + self.ramp - 1e-12
        )

    def normal_force_bounds(self, time: float) -> tuple[float, float]:
        """``(f_min, f_max)`` [N] at ``time`` (see the class notes)."""
        if self.t0 is None:
            self.t0 = float(time)
        s = (time - self.t0) / self.ramp if self.ramp > 0 else 1.0
        if self.phase == "ramp_down":
            return 0.0, self.f0 * max(1.0 - s, 0.0)
        if self.phase == "ramp_up":
            if s >= 1.0:
                self.phase = "active"
            else:
                return 0.0, min(self.max_normal_force, self.ramp_force * max(s, 0.0))
        return self.min_normal_force, self.max_normal_force

    def update(self, kin: ControllerPass) -> None:
        """Jacobian, drift, placement, orientation and position error from the tick's pass,
        into this contact's (bound) rows; ``desired`` too while unbound."""
        if self.fid < 0:
            self.fid = kin.frame_id(self.contact.frame)
        M, J, drift = kin.frame(self.fid)
        self.placement = M  # a fresh SE3 (the pass's placements are copies)
        if self.reference is None:
            self.reference = M.copy()
        ref = self.reference
        if ref is not self._ref:
            # SE3 arrays are views: in-place edits of the reference follow.
            self._ref, self._ref_p, self._ref_R = ref, ref.translation, ref.rotation
        n = self.size
        if self._owned and self.jacobian.shape[1] != J.shape[1]:
            self._bind_own(J.shape[1])
        if n == 6:
            self.jacobian[:] = J
            self.drift[:] = drift
        else:
            self.jacobian[:] = J[:3]
            self.drift[:] = drift[:3]
        err = self.error
        np.subtract(self._ref_p, M.translation, out=self._err_p)
        R = M.rotation
        if n == 6:
            self._err_r[...] = pin.log3(self._ref_R.dot(R.T))  # = R log3(R^T R_ref), world axes
        self._rotation[:] = R
        if self._owned:
            np.multiply(self._kp, err, out=self.desired)
            self.desired -= self._kd * (self.jacobian @ kin.v)
