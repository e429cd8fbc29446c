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

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidArgumentError, OutputError, ProfileError
from ..robot.batch import frame_placements_rows
from ..robot.core import Robot
from ..trajectory import Trajectory
from ._toml import check_keys, number, parse_toml, read_toml, vector

__all__ = ["ContactCalibration", "Calibration", "AXES"]

Array = NDArray[np.float64]

FORMAT = "wholebody-calibration"
VERSIONS = (1,)
AXES = ("contact", "world")


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
        return _calibration(parse_toml(text, source), source)

    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        """Read a TOML calibration file."""
        return _calibration(read_toml(Path(path), "a calibration file", "calibration"), str(path))


def _calibration(data: dict[str, Any], source: str) -> Calibration:
    """The calibration of a parsed TOML file, every key, type and range checked first.

    Raises
    ------
    ProfileError
        An unknown table or key (``[torque_offset]``), another format or version, a value
        that is not a finite number (``true``, ``nan``, ``"0.1"``), a contact entry that is
        not a table; the message names the file and the key.
    """
    check_keys(data, ("format", "version", "contacts", "torque_offsets"), source)
    fmt = data.get("format", FORMAT)
    if fmt != FORMAT:
        raise ProfileError(f"{source}: 'format' is {fmt!r}, expected {FORMAT!r}")
    version = data.get("version", 1)
    if isinstance(version, bool) or version not in VERSIONS:
        raise ProfileError(
            f"{source}: 'version' is {version!r}; this wholebody reads version "
            f"{', '.join(map(str, VERSIONS))}"
        )
    tables = {}
    for key, what in (
        ("contacts", "of [contacts.NAME] tables"),
        ("torque_offsets", "(joint = number)"),
    ):
        tables[key] = data.get(key, {})
        if not isinstance(tables[key], dict):
            raise ProfileError(
                f"{source}: {key!r} must be a table {what}, got "
                f"{type(tables[key]).__name__} {tables[key]!r}"
            )
    contacts, frames = {}, {}
    for name, entry in tables["contacts"].items():
        where = f"{source}: contacts.{name}"
        if not isinstance(entry, dict):
            raise ProfileError(
                f"{where} must be a table ([contacts.{name}]), got {type(entry).__name__} {entry!r}"
            )
        check_keys(
            entry, ("axes", "frame", "force_offset", "moment_offset", "gain", "rotation"), where
        )
        axes = entry.get("axes", "contact")
        if axes not in AXES:
            raise ProfileError(f"{where}: 'axes' must be 'contact' or 'world', got {axes!r}")
        frame = entry.get("frame", name)
        if not isinstance(frame, str) or not frame:
            raise ProfileError(f"{where}: 'frame' must be a non-empty string, got {frame!r}")
        gain = number(entry.get("gain", 0.0), f"{where}: 'gain'")
        if gain <= -1.0:  # the reading would be 1 / (1 + gain) times the truth
            raise ProfileError(f"{where}: 'gain' must be > -1 (a relative error), got {gain!r}")
        zero = [0.0, 0.0, 0.0]
        offsets = [
            np.array(vector(entry.get(k, zero), f"{where}: {k!r}"))
            for k in ("force_offset", "moment_offset", "rotation")
        ]
        contacts[name] = ContactCalibration(offsets[0], offsets[1], gain, offsets[2], axes)
        frames[name] = frame
    torques = {
        joint: number(value, f"{source}: torque_offsets.{joint}")
        for joint, value in tables["torque_offsets"].items()
    }
    return Calibration(contacts, torques, frames)


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
