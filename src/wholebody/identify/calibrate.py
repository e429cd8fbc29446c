"""Which sensor parameters a calibration fit estimates (:class:`SensorModel`).

The calibration itself (the model of a sensor's reading,
:class:`~wholebody.io.calibration.Calibration`, its TOML file and its application to a log) is
:mod:`wholebody.io.calibration`, where a robot profile reads it too;
:func:`wholebody.identify.fit_inertial_parameters` fits one (``sensors=``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import InvalidArgumentError
from ..io.calibration import AXES

__all__ = ["SensorModel"]


@dataclass(frozen=True)
class SensorModel:
    """Which sensor parameters :func:`~wholebody.identify.fit_inertial_parameters` estimates
    (``sensors=``; the model: :class:`~wholebody.io.calibration.Calibration`).

    Attributes
    ----------
    offsets : bool or sequence of str
        6D offsets of every contact (True) or of the named ones.
    gains : bool or sequence of str
        Relative gain errors.
    rotations : bool or sequence of str
        Small mount rotations.
    torque_offsets : bool or sequence of str
        Joint-torque offsets of every joint (True) or the named ones (needs torques in the logs).
    axes : {"contact", "world"} or mapping of str to that
        Axes of the offsets and rotations, for all contacts or per contact.
    per_log : bool
        With several logs, each log has its own contact offsets, gains and rotations (a
        sensor re-zeroed between recordings; the default), or all logs share them (False).
        Joint-torque offsets are shared.
    """

    offsets: bool | Sequence[str] = True
    gains: bool | Sequence[str] = False
    rotations: bool | Sequence[str] = False
    torque_offsets: bool | Sequence[str] = False
    axes: str | Mapping[str, str] = "contact"
    per_log: bool = True

    def contacts_for(self, what: str, names: Sequence[str]) -> list[str]:
        """The contacts of ``names`` whose ``what`` ("offsets", "gains", "rotations") is fitted."""
        value = getattr(self, what)
        if value is True:
            return list(names)
        if value is False:
            return []
        unknown = [n for n in value if n not in names]
        if unknown:
            raise InvalidArgumentError(
                f"sensor model: {what} for unknown contacts {unknown}; contacts: {list(names)}"
            )
        return [n for n in names if n in value]

    def axes_of(self, name: str) -> str:
        axes = self.axes if isinstance(self.axes, str) else self.axes.get(name, "contact")
        if axes not in AXES:
            raise InvalidArgumentError(
                f"sensor model: axes of {name!r} must be one of {AXES}, got {axes!r}"
            )
        return axes
