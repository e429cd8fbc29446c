"""The bases of the tasks: ``weight * || S (J a + dJ/dt v - a_des) ||^2`` on the
accelerations (:class:`AccelerationTask`), or on the accelerations and the contact wrenches
(:class:`WrenchTask`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import InvalidArgumentError
from ...robot import ControllerPass

if TYPE_CHECKING:
    from ...contacts import Contact
    from .._layout import ControlLayout

Array = NDArray[np.float64]


def _zeros(n: int) -> Array:
    z = np.zeros(n)
    z.setflags(write=False)
    return z


#: The references' "none given" (read-only): a task skips the terms of a reference that is
#: one of these (a reference set to other values is a new array).
ZERO3, ZERO6 = _zeros(3), _zeros(6)


def pd_acceleration(
    kp: Array, kd: Array, error: Array, rate: Array, feedforward: Array | None
) -> Array:
    """The desired acceleration ``kp e - kd v + feedforward`` (a fresh array), the
    feedforward ``kd v_ref + a_ref`` of the references (None when both are zero; see
    :meth:`AccelerationTask._feedforward`)."""
    desired = kp * error
    desired -= kd * rate
    if feedforward is not None:
        desired += feedforward
    return desired


def as_gains(value: ArrayLike, size: int, what: str) -> Array:
    """A scalar or per-axis gain vector (size,), finite and >= 0."""
    try:
        if np.iscomplexobj(value):
            raise TypeError
        g = np.array(value, dtype=float)
    except (TypeError, ValueError):
        g = np.full(size, np.nan)  # refused below
    if g.ndim == 0:
        g = np.full(size, float(g))
    if g.shape != (size,) or not np.all(np.isfinite(g)) or np.any(g < 0):
        raise InvalidArgumentError(
            f"{what} must be a finite non-negative scalar or a vector of {size}, got {value!r}"
        )
    return g


def as_weight(value: float, what: str = "weight") -> float:
    """A finite weight >= 0."""
    try:
        w = float(value)
    except (TypeError, ValueError):
        w = np.nan  # refused below
    if not (np.isfinite(w) and w >= 0):
        raise InvalidArgumentError(f"{what} must be finite and >= 0, got {value!r}")
    return w


class AccelerationTask:
    """A task on the generalized accelerations: ``weight * || S (J a + drift - desired) ||^2``.

    Subclasses fill, in :meth:`update` and from the tick's one pass only, the task Jacobian
    ``jacobian`` (m, nv), its ``drift`` ``dJ/dt v`` (m,) and the ``desired`` task-space
    acceleration (m,) of their PD law; ``mask`` (m,) selects the rows that count.

    The controller takes a task as a weighted cost of one of its priority levels, or as the
    equality ``S (J a + drift) = S desired`` (``priority`` 0, where ``weight`` is unused):
    see :meth:`~wholebody.control.WholeBodyController.add_task`.

    Attributes
    ----------
    name : str
    weight : float
        Non-negative weight of the task in the objective of its level (checked when set).
    mask : ndarray of bool, shape (m,)
        Rows (axes) that count (read-only array; assign a new mask or use
        :meth:`set_mask`).
    priority : int
        0: a hard constraint; 1, 2, ...: the priority level of its cost (1 the highest).
        Set by :meth:`~wholebody.control.WholeBodyController.add_task`.
    jacobian, drift, desired, error : ndarrays
        Of the last :meth:`update`; ``error`` is the task's position-level error (the PD's
        proportional term acts on it).
    """

    #: Whether ``jacobian`` spans the contact wrenches' columns too (:class:`WrenchTask`).
    over_wrenches = False
    #: The robot frames the task reads, and the contact it acts on (checked when added).
    frames: tuple[str, ...] = ()
    contact: str | None = None

    def __init__(self, name: str, size: int, *, weight: float, mask: ArrayLike | None = None):
        self.name = str(name)
        self.size = int(size)
        self.priority = 1
        self._weight = as_weight(weight, f"task {name!r}: weight")
        self._mask = np.ones(size, dtype=bool)
        self._mask.setflags(write=False)
        self._full = True
        self._row_scale = np.full(size, np.sqrt(self._weight))
        self._scale_version = 0  # bumped when the row scales change
        if mask is not None:
            self.set_mask(mask)
        self.desired = np.zeros(size)
        self.error = np.zeros(size)
        self.drift = np.zeros(size)
        self.jacobian: Array = np.zeros((size, 0))
        self._ff_key: tuple[object, ...] = (None, None, None)  # of _feedforward
        self._ff: Array | None = None

    @property
    def weight(self) -> float:
        """Non-negative weight of the task in the objective."""
        return self._weight

    @weight.setter
    def weight(self, value: float) -> None:
        self._weight = as_weight(value, f"task {self.name!r}: weight")
        self._rescale()

    @property
    def mask(self) -> NDArray[np.bool_]:
        """Rows (axes) that count, booleans (m,); set it with :meth:`set_mask` or assign."""
        return self._mask

    @mask.setter
    def mask(self, value: ArrayLike) -> None:
        self.set_mask(value)

    def set_mask(self, mask: ArrayLike) -> None:
        """Which of the task's ``size`` axes count (booleans or 0/1)."""
        m = np.asarray(mask)
        if m.shape != (self.size,):
            raise InvalidArgumentError(
                f"task {self.name!r}: mask must have {self.size} entries, got shape {m.shape}"
            )
        if m.dtype != bool and not (np.issubdtype(m.dtype, np.number) and np.isin(m, (0, 1)).all()):
            raise InvalidArgumentError(
                f"task {self.name!r}: mask must be booleans or 0/1, got {m.tolist()}"
            )
        self._mask = m.astype(bool)
        self._mask.setflags(write=False)  # changed through here, so the row scales follow
        self._full = bool(self._mask.all())
        self._rescale()

    def _rescale(self) -> None:
        # sqrt(weight) on the rows that count, 0 elsewhere: the controller stacks the rows
        # of every task as sqrt(w_i) S_i J_i and forms their cost with one product.
        if self._row_scale.shape != self._mask.shape:
            self._row_scale = np.empty(self._mask.shape)
        np.multiply(self._mask, np.sqrt(self._weight), out=self._row_scale)
        self._scale_version = getattr(self, "_scale_version", 0) + 1

    def update(self, kin: ControllerPass) -> None:  # pragma: no cover - abstract
        """Refresh ``jacobian``, ``drift``, ``error``, ``desired`` from the tick's pass."""
        raise NotImplementedError

    def _feedforward(self, zero: Array) -> Array | None:
        """``kd v_ref + a_ref`` of the task's ``kd``, ``reference_velocity`` and
        ``reference_acceleration`` (None when both references are ``zero``, none given),
        formed again only when one of them is a new array (as ``set_reference`` makes
        them, which forms it: off the tick)."""
        vref = self.reference_velocity  # type: ignore[attr-defined]
        aref = self.reference_acceleration  # type: ignore[attr-defined]
        kd = self.kd  # type: ignore[attr-defined]
        key = self._ff_key
        if key[0] is not vref or key[1] is not aref or key[2] is not kd:
            self._ff = None if vref is zero and aref is zero else kd * vref + aref
            self._ff_key = (vref, aref, kd)
        return self._ff

    def _check_contact(self, contact: Contact) -> None:
        """Refuse (a typed error) a contact the task cannot act on; called when it is added."""

    def residual(self, a: ArrayLike) -> Array:
        """``S (J a + drift - desired)`` for accelerations ``a`` (nv,), the masked rows."""
        return (self.jacobian @ np.asarray(a, dtype=float) + self.drift - self.desired)[self.mask]


class WrenchTask(AccelerationTask):
    """A task on the unknowns ``x = (a, w)`` of the controller's active contacts:
    ``weight * || S (J x + drift - desired) ||^2``, with ``jacobian`` (m, n) over the
    columns of :class:`~wholebody.control.ControlLayout` (the accelerations', then each
    active contact's wrench's, world axes at its frame origin).

    The controller binds the task to each new set of active contacts (:meth:`bind`) before
    its next :meth:`update`; there its rows may change (a task of a contact that is not
    active has none).
    """

    over_wrenches = True

    def bind(self, layout: ControlLayout) -> None:  # pragma: no cover - abstract
        """Take the columns of ``layout`` (called when the active contacts change)."""
        raise NotImplementedError

    def _resize(self, size: int, n: int) -> None:
        """``size`` rows over ``n`` columns: zero Jacobian, drift, desired and error; the
        mask kept when it has ``size`` entries (or there are none: a contact not active),
        else all rows."""
        if size and self._mask.shape != (size,):
            self.size = size
            self.set_mask(np.ones(size, dtype=bool))
        self.size = size
        self.jacobian = np.zeros((size, n))
        self.drift, self.desired, self.error = np.zeros(size), np.zeros(size), np.zeros(size)

    def residual(self, x: ArrayLike) -> Array:
        """``S (J x + drift - desired)`` for ``x`` (n,) of the current layout, the masked rows
        (none while the task's contact is not active)."""
        if not self.size:
            return np.zeros(0)
        return (self.jacobian @ np.asarray(x, dtype=float) + self.drift - self.desired)[self.mask]
