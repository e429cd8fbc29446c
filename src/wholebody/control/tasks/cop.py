"""Centre of pressure tasks: one surface contact's CoP, and the whole-body ZMP.

Both are linear in the contact wrenches once multiplied by the normal force: the CoP ``p`` of
a wrench with normal force ``f_n`` is tracked through ``f_n (p - p_ref)``, a moment [N m],
so a task's rows are ``J w`` with ``J`` from the tick's contact placements, and its drift
and desired value are zero. As a hard task (priority 0) the CoP is ``p_ref`` exactly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...contacts import Contact, SurfaceContact
from ...errors import InvalidArgumentError
from ...robot import ControllerPass
from .._inputs import as_vector
from ._base import WrenchTask

if TYPE_CHECKING:
    from .._contact_state import ContactState
    from .._layout import ControlLayout

Array = NDArray[np.float64]


class CopTask(WrenchTask):
    """Track the centre of pressure of one surface contact, in the contact frame.

    With ``(f_l, tau_l) = (R^T f, R^T tau)`` the contact's wrench in its frame's axes (``R``
    world from contact, ``z`` the normal) at the frame origin, the CoP is
    ``p = (-tau_l,y, tau_l,x) / f_l,z`` and the task's two rows are
    ``f_l,z (p - p_ref) = (-tau_l,y - p_ref,x f_l,z, tau_l,x - p_ref,y f_l,z)`` [N m]:
    ``weight * || S J w ||^2`` with ``J`` (2, 6) over the contact's wrench columns.

    Parameters
    ----------
    contact : str
        A surface contact of the controller (refused otherwise, when the task is added).
    reference : array (2,)
        ``p_ref`` in the contact frame [m]; default its origin.
    weight : float
    mask : array of bool (2,), optional
    name : str, optional
        Default ``"<contact>_cop"``.
    """

    def __init__(
        self,
        contact: str,
        *,
        reference: ArrayLike = (0.0, 0.0),
        weight: float = 1.0,
        mask: ArrayLike | None = None,
        name: str | None = None,
    ):
        self.contact = str(contact)
        super().__init__(name or f"{contact}_cop", 2, weight=weight, mask=mask)
        self.set_reference(reference)
        self._state: ContactState | None = None
        self._force, self._moment = slice(0, 0), slice(0, 0)

    def set_reference(self, position: ArrayLike) -> None:
        """``p_ref`` (2,) in the contact frame [m]."""
        self.reference = as_vector(position, 2, f"task {self.name!r}: reference")

    def _check_contact(self, contact: Contact) -> None:
        if not isinstance(contact, SurfaceContact):
            raise InvalidArgumentError(
                f"task {self.name!r}: contact {self.contact!r} is a "
                f"{type(contact).__name__}; a centre of pressure needs a SurfaceContact"
            )

    def bind(self, layout: ControlLayout) -> None:
        state = next((s for s in layout.contacts if s.name == self.contact), None)
        self._state = state
        self._resize(0 if state is None else 2, layout.n)
        if state is not None:
            self._check_contact(state.contact)
            start = state.columns.start
            self._force, self._moment = slice(start, start + 3), slice(start + 3, start + 6)

    def update(self, kin: ControllerPass) -> None:
        state = self._state
        if state is None:
            return
        R = state.placement.rotation
        J, (px, py) = self.jacobian, self.reference
        np.multiply(R[:, 2], -px, out=J[0, self._force])
        np.negative(R[:, 1], out=J[0, self._moment])
        np.multiply(R[:, 2], -py, out=J[1, self._force])
        J[1, self._moment] = R[:, 0]


class ZmpTask(WrenchTask):
    """Track the whole-body zero-moment point: the centre of pressure of all active
    contacts' wrenches on the horizontal plane ``z = height`` (world axes).

    With ``F`` the contacts' total force and ``T`` their total moment about
    ``(0, 0, height)``, the ZMP is ``p = (-T_y, T_x) / F_z`` and the task's rows are
    ``F_z (p - p_ref) = (-T_y - p_ref,x F_z, T_x - p_ref,y F_z)`` [N m], linear in the
    wrenches (each contact's lever arm from its frame origin at the tick). On flat ground
    this is the ZMP of the motion (the Newton-Euler equations make the contact wrench equal
    the gravito-inertial one).

    Parameters
    ----------
    reference : array (2,)
        ``p_ref`` (x, y) in the world [m].
    height : float
        The ground plane's height [m].
    weight : float
    mask : array of bool (2,), optional
    name : str
    """

    def __init__(
        self,
        *,
        reference: ArrayLike = (0.0, 0.0),
        height: float = 0.0,
        weight: float = 1.0,
        mask: ArrayLike | None = None,
        name: str = "zmp",
    ):
        super().__init__(name, 2, weight=weight, mask=mask)
        self.height = float(height)
        if not np.isfinite(self.height):
            raise InvalidArgumentError(f"task {self.name!r}: height must be finite, got {height!r}")
        self.set_reference(reference)
        self._states: list[tuple[ContactState, int]] = []

    def set_reference(self, position: ArrayLike) -> None:
        """``p_ref`` (2,), world x and y [m]."""
        self.reference = as_vector(position, 2, f"task {self.name!r}: reference")

    def bind(self, layout: ControlLayout) -> None:
        self._resize(2, layout.n)
        self._states = [(s, s.columns.start) for s in layout.contacts]
        for s, start in self._states:
            if not s.point:  # the moments' entries: T_x in row 1, -T_y in row 0
                self.jacobian[0, start + 4] = -1.0
                self.jacobian[1, start + 3] = 1.0

    def update(self, kin: ControllerPass) -> None:
        J, (px, py), h = self.jacobian, self.reference, self.height
        for s, start in self._states:
            dx, dy, dz = s.placement.translation.tolist()
            dz -= h
            J[0, start : start + 3] = (-dz, 0.0, dx - px)
            J[1, start : start + 3] = (0.0, -dz, dy - py)
