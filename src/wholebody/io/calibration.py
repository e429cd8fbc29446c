"""Sensor calibration: constant offsets, gains and small mount rotations of force-torque
sensors and force plates, and joint-torque offsets, fitted from logs and applied to logs.

The model of a contact's reading (``w_log``, world axes at the contact frame origin) and of
a joint torque reading:

.. math::

    w_{true} = (1 + \\gamma)\\, w_{log} + (R\\,\\delta) \\times w_{log} - R\\, o, \\qquad
    \\tau_{true} = \\tau_{log} - o_\\tau

applied to the force and the moment parts alike (``(R delta) x w`` means
``((R delta) x f, (R delta) x tau)``). ``o = (o_f, o_tau)`` is the offset [N, N m] and
``delta`` the mount rotation [rad], both in the contact frame's axes (``R``: contact frame
to world, per sample) for a sensor on the robot (``axes = "contact"``), or in world axes
(``R = 1``) for a force plate (``axes = "world"``). The rotation is first order (small
angles): the model is linear in every parameter, so fits are exact for logs that follow it.
``gamma`` is a relative gain error (the reading is ``1 / (1 + gamma)`` of the truth).

A :class:`Calibration` is written as TOML (``docs/identification.md``)::

    format = "wholebody-calibration"
    version = 1

    [contacts.left_sole]
    axes = "contact"                  # or "world" (a force plate)
    force_offset = [5.0, 0.0, 0.0]    # [N], subtracted
    moment_offset = [0.0, 0.5, 0.0]   # [N m] about the contact frame origin, subtracted
    gain = 0.0                        # relative
    rotation = [0.0, 0.0, 0.0]        # [rad], small

    [torque_offsets]                  # [N m] (or N), subtracted
    left_knee = 0.3

:func:`wholebody.identify.fit_inertial_parameters` fits one from logs (with mass and CoM
corrections where asked; :class:`wholebody.identify.SensorModel` chooses the parameters it
estimates); :meth:`Calibration.apply` returns a corrected
:class:`~wholebody.trajectory.Trajectory`. A robot profile names its calibration file
(``calibration`` key, :mod:`wholebody.io.profile`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidArgumentError, OutputError, ProfileError
from ..limits import check_regular_text_file
from ..robot.batch import frame_placements_rows
from ..robot.core import Robot
from ..trajectory import Trajectory
from ._calibration_schema import AXES, FORMAT, check_calibration

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["ContactCalibration", "Calibration", "AXES"]

Array = NDArray[np.float64]


def _vector(value: ArrayLike, n: int, what: str) -> Array:
    arr = np.asarray(value, dtype=float)
    if arr.shape != (n,) or not np.isfinite(arr).all():
        raise InvalidArgumentError(f"{what} must be {n} finite numbers, got {value!r}")
    return arr


@dataclass(frozen=True)
class ContactCalibration:
    """Calibration of one contact's wrench sensor (see the module docstring for the model).

    Attributes
    ----------
    force_offset : ndarray, shape (3,)
        ``o_f`` [N], in ``axes``.
    moment_offset : ndarray, shape (3,)
        ``o_tau`` [N m] about the contact frame origin, in ``axes``.
    gain : float
        ``gamma``, relative (0: none).
    rotation : ndarray, shape (3,)
        ``delta`` [rad], small, in ``axes``.
    axes : {"contact", "world"}
        The contact frame's axes (a sensor on the robot) or world axes (a force plate).
    """

    force_offset: Array = field(default_factory=lambda: np.zeros(3))
    moment_offset: Array = field(default_factory=lambda: np.zeros(3))
    gain: float = 0.0
    rotation: Array = field(default_factory=lambda: np.zeros(3))
    axes: str = "contact"

    def __post_init__(self) -> None:
        object.__setattr__(self, "force_offset", _vector(self.force_offset, 3, "force_offset"))
        object.__setattr__(self, "moment_offset", _vector(self.moment_offset, 3, "moment_offset"))
        object.__setattr__(self, "rotation", _vector(self.rotation, 3, "rotation"))
        if not np.isfinite(self.gain):
            raise InvalidArgumentError(f"gain must be finite, got {self.gain!r}")
        object.__setattr__(self, "gain", float(self.gain))
        if self.axes not in AXES:
            raise InvalidArgumentError(f"axes must be one of {AXES}, got {self.axes!r}")

    @property
    def offset(self) -> Array:
        """``(o_f, o_tau)``, shape (6,) [N, N m]."""
        return np.concatenate([self.force_offset, self.moment_offset])

    @property
    def needs_orientation(self) -> bool:
        """True when applying it needs the contact frame's orientation (contact axes)."""
        return self.axes == "contact" and bool(np.any(self.offset) or np.any(self.rotation))

    def corrected(self, wrenches: Array, rotations: Array | None = None) -> Array:
        """Corrected wrenches ``w_true`` from readings (N, 6), world axes at the contact origin.

        ``rotations`` (N, 3, 3): contact frame to world, needed for ``axes="contact"``.
        """
        w = np.asarray(wrenches, dtype=float)
        if self.axes == "contact" and self.needs_orientation:
            if rotations is None:
                raise InvalidArgumentError(
                    "a contact-axes calibration needs the contact frames' orientations"
                )
            delta = rotations @ self.rotation
            offset = np.concatenate(
                [rotations @ self.force_offset, rotations @ self.moment_offset], axis=1
            )
        else:
            delta = np.broadcast_to(self.rotation, (len(w), 3))
            offset = np.broadcast_to(self.offset, (len(w), 6))
        out = (1.0 + self.gain) * w - offset
        out[:, :3] += np.cross(delta, w[:, :3])
        out[:, 3:] += np.cross(delta, w[:, 3:])
        return out


@dataclass(frozen=True)
class Calibration:
    """Sensor calibrations of a robot's contacts and joint torques.

    Attributes
    ----------
    contacts : dict of str to ContactCalibration
        By contact name (as in the log and the profile).
    torque_offsets : dict of str to float
        By joint name [N m, or N for prismatic joints], subtracted from the logged torques.
    frames : dict of str to str
        Contact name -> robot frame (for contact-axes calibrations; defaults to the name).
    """

    contacts: dict[str, ContactCalibration] = field(default_factory=dict)
    torque_offsets: dict[str, float] = field(default_factory=dict)
    frames: dict[str, str] = field(default_factory=dict)

    @property
    def is_identity(self) -> bool:
        """True when applying it changes nothing."""
        return not any(
            np.any(c.offset) or c.gain or np.any(c.rotation) for c in self.contacts.values()
        ) and not any(self.torque_offsets.values())

    def apply(self, traj: Trajectory, robot: Robot | None = None) -> Trajectory:
        """A copy of ``traj`` with its contact wrenches and torques corrected.

        Parameters
        ----------
        traj : Trajectory
            Contacts the calibration names must be in the log; others are left as they are.
        robot : Robot, optional
            Needed when a contact calibration is in the contact frame's axes (for the frames'
            orientations per sample); the log's joints are mapped to it by name.

        Raises
        ------
        InvalidArgumentError
            A calibrated contact or joint the log lacks, or a contact-axes calibration (or a
            log with wrenches stated about other points) without ``robot``.
        """
        missing = [n for n in self.contacts if n not in traj.contact_names]
        if missing:
            raise InvalidArgumentError(
                f"{traj.source}: calibrated contacts {missing} are not in the log; "
                f"its contacts: {list(traj.contact_names)}"
            )
        if traj.has_points:  # calibrations are fitted on wrenches at the frame origins
            if robot is None:
                raise InvalidArgumentError(
                    f"{traj.source}: the log states its wrenches about other points (point "
                    "fields): pass robot= to apply() so they are moved to the contact frame "
                    "origins first"
                )
            traj = traj.at_frame_origins(
                robot, {n: self.frames.get(n, n) for n in traj.contact_names}
            )
        W = traj.contact_wrenches.copy()
        rotations: dict[str, Array] = {}
        need = [n for n, c in self.contacts.items() if c.needs_orientation]
        if need:
            if robot is None:
                raise InvalidArgumentError(
                    f"contacts {need} are calibrated in their own axes: pass robot= to "
                    "apply() for the frames' orientations"
                )
            q, _, _, _ = traj.for_robot(robot)
            rotations = _frame_rotations(robot, q, [self.frames.get(n, n) for n in need], need)
        for name, cal in self.contacts.items():
            k = traj.contact_names.index(name)
            W[:, k] = cal.corrected(W[:, k], rotations.get(name))
        tau = traj.tau
        if self.torque_offsets and any(self.torque_offsets.values()):
            if tau is None:
                raise InvalidArgumentError(
                    f"{traj.source}: torque offsets given but the log has no torques"
                )
            unknown = [j for j in self.torque_offsets if j not in traj.joint_names]
            if unknown:
                raise InvalidArgumentError(
                    f"{traj.source}: torque offsets for joints {unknown} not in the log"
                )
            tau = tau.copy()
            for joint, value in self.torque_offsets.items():
                tau[:, traj.joint_names.index(joint)] -= value
        return replace(
            traj, contact_wrenches=W, tau=tau, metadata={**traj.metadata, "calibrated": True}
        )

    # --- TOML -------------------------------------------------------------------------------

    def to_toml(self) -> str:
        """The calibration as TOML text (see the module docstring)."""

        def vec(x: Array) -> str:
            return "[" + ", ".join(repr(float(v)) for v in x) + "]"

        lines = [f'format = "{FORMAT}"', "version = 1", ""]
        for name, c in self.contacts.items():
            lines += [f"[contacts.{_key(name)}]", f'axes = "{c.axes}"']
            if name in self.frames and self.frames[name] != name:
                lines.append(f'frame = "{self.frames[name]}"')
            lines += [
                f"force_offset = {vec(c.force_offset)}    # [N], subtracted",
                f"moment_offset = {vec(c.moment_offset)}    # [N m] about the contact origin",
                f"gain = {float(c.gain)!r}",
                f"rotation = {vec(c.rotation)}    # [rad]",
                "",
            ]
        if self.torque_offsets:
            lines.append("[torque_offsets]    # [N m], subtracted")
            lines += [f"{_key(j)} = {float(v)!r}" for j, v in self.torque_offsets.items()]
            lines.append("")
        return "\n".join(lines)

    def save(self, path: str | Path) -> None:
        """Write the TOML file."""
        try:
            Path(path).write_text(self.to_toml())
        except OSError as exc:
            raise OutputError(f"cannot write the calibration {path}: {exc}") from exc

    @classmethod
    def from_toml(cls, text: str, source: str = "calibration") -> Calibration:
        """Parse TOML text (see the module docstring)."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ProfileError(f"{source}: not valid TOML: {exc}") from exc
        except RecursionError as exc:
            raise ProfileError(f"{source}: not valid TOML: nested too deeply") from exc
        checked = check_calibration(data, source)
        contacts, frames = {}, {}
        for name, entry in checked["contacts"].items():
            try:
                contacts[name] = ContactCalibration(
                    entry["force_offset"],
                    entry["moment_offset"],
                    entry["gain"],
                    entry["rotation"],
                    entry["axes"],
                )
            except InvalidArgumentError as exc:
                raise ProfileError(f"{source}: contacts.{name}: {exc}") from exc
            frames[name] = entry["frame"]
        return cls(contacts, checked["torque_offsets"], frames)

    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        """Read a TOML calibration file."""
        check_regular_text_file(Path(path), "a calibration file", ProfileError)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ProfileError(f"{path}: not UTF-8 text: {exc}") from exc
        except OSError as exc:
            raise ProfileError(
                f"{path}: cannot read the calibration: {exc.strerror or exc}"
            ) from exc
        return cls.from_toml(text, str(path))


def _key(name: str) -> str:
    return name if name.replace("_", "").replace("-", "").isalnum() else f'"{name}"'


def _frame_rotations(
    robot: Robot, q: Array, frames: list[str], names: list[str]
) -> dict[str, Array]:
    """Orientation (N, 3, 3), frame to world, of each frame over the samples of ``q``."""
    ids = [robot.frame_id(f) for f in frames]
    rotations = np.empty((len(q), len(ids), 3, 3))
    frame_placements_rows(robot, q, range(len(q)), ids, rotations=rotations)
    return {n: np.ascontiguousarray(rotations[:, j]) for j, n in enumerate(names)}
