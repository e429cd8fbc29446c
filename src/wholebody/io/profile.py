"""Robot profiles: a lab's setup written once (TOML): the robot, added frames, contacts.

.. code-block:: toml

    robot = "humanoid"              # a name known to wholebody.load, or:
    # urdf = "robots/my_robot.urdf" # relative to this file
    # mjcf = "g1/scene.xml"         # or an MJCF (a Menagerie scene: the robot it includes)
    # floating_base = true          # with urdf or mjcf only
    # validate = "warn"             # with urdf or mjcf only: "raise", "warn" or "ignore"

    [[frames]]                      # optional: frames the URDF lacks
    name = "left_sole"
    parent = "left_ankle_roll_link"
    translation = [0.03, 0.0, -0.04]
    rpy = [0.0, 0.0, 0.0]           # or rotation = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]

    [[contacts]]
    frame = "left_sole"             # name defaults to the frame
    type = "surface"                # "surface" (half_length, half_width) or "point" (normal)
    half_length = 0.12
    half_width = 0.05
    # center = [0.02, 0.0]          # the rectangle's centre in the frame (default [0, 0])
    mu = 1.0

The schema is strict: an unknown key, a value of the wrong type, a duplicate contact name or a
frame that already exists raises :class:`~wholebody.errors.ProfileError` naming the file and the
entry, with a close match for a misspelt key. Every key is documented in ``docs/profile.md``.

The profile schema (``docs/profile.md``):

.. include:: ../../../docs/profile.md
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..contacts import Contact, PointContact, SurfaceContact
from ..errors import ContactError, ProfileError, WholebodyError
from ..models.loading import load
from ..robot.core import Robot
from ._toml import check_keys, number, read_toml, table, type_name, vector

if TYPE_CHECKING:
    from .calibration import Calibration

__all__ = ["RobotProfile", "load_profile", "parse_contact_spec", "SCHEMA"]

#: Keys allowed at each level, with their meaning (``docs/profile.md`` has the full table).
SCHEMA: dict[str, dict[str, str]] = {
    "top": {
        "robot": "a robot name known to wholebody.load",
        "urdf": "path of a URDF, relative to the profile",
        "mjcf": "path of an MJCF (MuJoCo XML, a Menagerie scene.xml too), relative to the profile",
        "floating_base": "bool, with urdf (default true) or mjcf (default: as the file says): "
        "add a free-flyer root",
        "validate": "'raise', 'warn' or 'ignore', with urdf or mjcf (default 'warn')",
        "frames": "array of tables: frames to add",
        "contacts": "array of tables: the contacts",
        "calibration": "path of a calibration file (TOML, wholebody.io.calibration), "
        "relative to the profile: check and estimate apply it to every log",
        "recording": "table: topics of ROS 2 bags / MCAP files (wholebody.io.recordings)",
        "lerobot": "table: columns of LeRobot-style datasets (wholebody.io.recordings)",
        "sensors": "table: the sensors' stated noise, a floor of the measured preset's",
    },
    "sensors": {
        "force_noise": "std per axis of each force sensor's force [N] >= 0",
        "moment_noise": "std per axis of each force sensor's moment [N m] >= 0",
    },
    "frames": {
        "name": "new frame name",
        "parent": "frame it is attached to",
        "translation": "3 numbers [m], position in the parent frame (default 0)",
        "rotation": "3x3 rotation matrix, rows, parent axes (default identity)",
        "rpy": "3 numbers [rad], roll-pitch-yaw as in URDF (default 0)",
    },
    "contacts": {
        "frame": "robot frame of the contact",
        "name": "label (default: the frame)",
        "type": "'surface' or 'point' (default 'surface')",
        "mu": "friction coefficient > 0",
        "half_length": "surface: half-size along the frame's x [m] > 0",
        "half_width": "surface: half-size along the frame's y [m] > 0",
        "center": "surface: 2 numbers [m], the rectangle's centre in the frame's x-y plane "
        "(default [0, 0]: the frame's origin)",
        "normal": "point: 3 numbers, normal in the frame's axes (default [0, 0, 1])",
        "ground_normal": "3 numbers, normal of the surface touched in world axes (friction checks "
        "about it; default: the frame's own normal)",
    },
}
ROTATION_TOLERANCE = 1e-6


@dataclass(frozen=True)
class RobotProfile:
    """A robot and its contacts, as a lab sets them up.

    Attributes
    ----------
    robot : Robot
        The robot, with the profile's frames added.
    contacts : tuple of Contact
        The declared contacts, in the profile's order.
    source : str
        The profile's path.
    calibration : Calibration or None
        Sensor calibration to apply to logs before checking or estimating
        (:meth:`wholebody.io.calibration.Calibration.apply`), from the ``calibration`` key.
    recording : RosbagMapping or None
        The ``[recording]`` section: which bag topic fills which field
        (:func:`wholebody.io.recordings.read_rosbag`).
    lerobot : LerobotMapping or None
        The ``[lerobot]`` section: which dataset column fills which field
        (:func:`wholebody.io.recordings.read_lerobot`).
    sensors : dict of str to float
        The ``[sensors]`` section: the force sensors' stated noise (``force_noise`` [N],
        ``moment_noise`` [N m], std per axis), the measured preset's floor
        (:attr:`wholebody.check.CheckOptions.sensor_noise`); empty when not stated.
    """

    robot: Robot
    contacts: tuple[Contact, ...]
    source: str
    calibration: Calibration | None = None
    recording: Any = None
    lerobot: Any = None
    sensors: Mapping[str, float] = dataclasses.field(default_factory=dict)


def _string(value: Any, key: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ProfileError(
            f"{where}: {key!r} must be a non-empty string, got {type_name(value)} {value!r}"
        )
    return value


def _tables(value: Any, key: str, where: str) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(x, dict) for x in value):
        raise ProfileError(
            f"{where}: {key!r} must be an array of tables ([[{key}]] entries), "
            f"got {type_name(value)}"
        )
    return value


def _rotation(entry: Mapping[str, Any], where: str) -> np.ndarray:
    if "rotation" in entry and "rpy" in entry:
        raise ProfileError(f"{where}: give 'rotation' or 'rpy', not both")
    if "rpy" in entry:
        return np.asarray(pin.rpy.rpyToMatrix(*vector(entry["rpy"], f"{where}: 'rpy'")))
    if "rotation" in entry:
        rows = entry["rotation"]
        if not isinstance(rows, list) or len(rows) != 3:
            raise ProfileError(
                f"{where}: 'rotation' must be a 3x3 matrix (3 rows of 3 numbers), got {rows!r}"
            )
        R = np.array([vector(row, f"{where}: 'rotation'[{i}]") for i, row in enumerate(rows)])
        err = float(np.abs(R.T @ R - np.eye(3)).max())
        if err > ROTATION_TOLERANCE or np.linalg.det(R) <= 0:
            raise ProfileError(
                f"{where}: 'rotation' is not a rotation matrix (|R^T R - I| = "
                f"{err:.2g}, det = {np.linalg.det(R):.6g}; tolerance "
                f"{ROTATION_TOLERANCE})"
            )
        u, _, vt = np.linalg.svd(R)  # nearest rotation: printed digits cost ~1e-7
        return np.asarray(u @ vt)
    return np.eye(3)


def _contact(entry: dict[str, Any], where: str) -> Contact:
    check_keys(entry, SCHEMA["contacts"], where)
    kind = entry.get("type", "surface")
    if kind not in ("surface", "point"):
        raise ProfileError(f"{where}: 'type' must be 'surface' or 'point', got {kind!r}")
    for key in ("frame", "mu") + (("half_length", "half_width") if kind == "surface" else ()):
        if key not in entry:
            raise ProfileError(f"{where}: missing key {key!r} (type {kind!r})")
    frame = _string(entry["frame"], "frame", where)
    name = _string(entry["name"], "name", where) if "name" in entry else ""
    mu = number(entry["mu"], f"{where}: 'mu'", positive=True)
    ground = (
        np.array(vector(entry["ground_normal"], f"{where}: 'ground_normal'"))
        if "ground_normal" in entry
        else None
    )
    try:
        if kind == "surface":
            if "normal" in entry:
                raise ProfileError(
                    f"{where}: 'normal' applies to point contacts; a surface "
                    "contact's normal is its frame's z axis"
                )
            center = vector(entry.get("center", [0.0, 0.0]), f"{where}: 'center'", 2)
            return SurfaceContact(
                frame,
                mu=mu,
                name=name,
                ground_normal=ground,
                half_length=number(entry["half_length"], f"{where}: 'half_length'", True),
                half_width=number(entry["half_width"], f"{where}: 'half_width'", True),
                center=(center[0], center[1]),
            )
        extra = [k for k in ("half_length", "half_width", "center") if k in entry]
        if extra:
            raise ProfileError(
                f"{where}: {extra[0]!r} applies to surface contacts, not to point contacts"
            )
        normal = vector(entry.get("normal", [0.0, 0.0, 1.0]), f"{where}: 'normal'")
        return PointContact(frame, mu=mu, normal=np.array(normal), name=name, ground_normal=ground)
    except ContactError as exc:
        raise ProfileError(f"{where}: {exc}") from exc


def _robot(data: dict[str, Any], path: Path) -> Robot:
    where = str(path)
    given = [k for k in ("robot", "urdf", "mjcf") if k in data]
    if len(given) > 1:
        raise ProfileError(
            f"{where}: give one of 'robot' (a name), 'urdf' or 'mjcf' (a path), not "
            f"{' and '.join(map(repr, given))}"
        )
    if "robot" in data:
        for key in ("floating_base", "validate"):
            if key in data:
                raise ProfileError(
                    f"{where}: {key!r} applies with 'urdf' or 'mjcf'; a named robot is "
                    "loaded as wholebody.load makes it"
                )
        return load(_string(data["robot"], "robot", where))
    if not given:
        raise ProfileError(f"{where}: give 'robot' (a name), 'urdf' or 'mjcf' (a path)")
    key = given[0]
    file = path.parent / _string(data[key], key, where)
    floating = data.get("floating_base", True if key == "urdf" else None)
    if floating is not None and not isinstance(floating, bool):
        raise ProfileError(
            f"{where}: 'floating_base' must be true or false, got "
            f"{type_name(floating)} {floating!r}"
        )
    validate = data.get("validate", "warn")
    if validate not in ("raise", "warn", "ignore"):
        close = difflib.get_close_matches(str(validate), ["raise", "warn", "ignore"], n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ProfileError(
            f"{where}: 'validate' must be 'raise', 'warn' or 'ignore', got {validate!r}{hint}"
        )
    root = _root_element(file, key, where)
    if key == "urdf" and root == "mujoco":
        raise ProfileError(
            f"{where}: 'urdf' names {file}, an MJCF file (<mujoco> root); write mjcf = "
            f"{data[key]!r} instead"
        )
    if key == "mjcf" and root != "mujoco":
        raise ProfileError(
            f"{where}: 'mjcf' names {file}, whose root element is <{root}>, not <mujoco>"
            + ("; write urdf = ... for a URDF" if root == "robot" else "")
        )
    if key == "mjcf":
        return Robot.from_mjcf(file, floating_base=floating, validate=validate)
    return Robot.from_urdf(file, floating_base=bool(floating), validate=validate)


def _root_element(file: Path, key: str, where: str) -> str:
    """The root element's tag of a robot file (read up to it, no further)."""
    import xml.etree.ElementTree as ET

    if not file.exists():
        raise ProfileError(f"{where}: {key!r}: no such file {file}")
    if not file.is_file():
        raise ProfileError(
            f"{where}: {key!r}: {file} is not a regular file (a directory, device or pipe)"
        )
    try:
        for _event, elem in ET.iterparse(file, events=("start",)):
            return str(elem.tag)
    except (ET.ParseError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{where}: {key!r}: {file} is not well-formed XML: {exc}") from exc
    except OSError as exc:
        raise ProfileError(f"{where}: {key!r}: cannot read {file}: {exc.strerror}") from exc
    raise ProfileError(f"{where}: {key!r}: {file} has no XML element")


def load_profile(path: str | Path) -> RobotProfile:
    """Read a TOML robot profile (schema in the module docstring and ``docs/profile.md``).

    Parameters
    ----------
    path : str or Path
        The profile; a ``urdf`` in it is relative to the profile's folder.

    Returns
    -------
    RobotProfile
        The robot with the profile's frames added, and the contacts.

    Raises
    ------
    ProfileError
        The file cannot be read or is not TOML; an unknown key (with a close match); a value
        of the wrong type; a duplicate contact name; a frame that exists already or whose
        parent is unknown; a contact on an unknown frame. The message names the file and the
        entry (``contacts[1]``).
    """
    path = Path(path)
    data = read_toml(path, "a profile", "profile")
    check_keys(data, SCHEMA["top"], str(path))
    robot = _robot(data, path)
    for i, frame in enumerate(_tables(data.get("frames", []), "frames", str(path))):
        where = f"{path}: frames[{i}]"
        check_keys(frame, SCHEMA["frames"], where)
        for key in ("name", "parent"):
            if key not in frame:
                raise ProfileError(f"{where}: missing key {key!r}")
        name = _string(frame["name"], "name", where)
        parent = _string(frame["parent"], "parent", where)
        placement = np.eye(4)
        placement[:3, :3] = _rotation(frame, where)
        translation = frame.get("translation", [0.0, 0.0, 0.0])
        placement[:3, 3] = vector(translation, f"{where}: 'translation'")
        if name in robot.frame_names:
            raise ProfileError(
                f"{where}: frame {name!r} already exists in robot "
                f"{robot.name!r}; choose another name"
            )
        try:
            robot.add_frame(name, parent, placement)
        except (WholebodyError, ValueError) as exc:
            raise ProfileError(f"{where}: {exc}") from exc
    entries = _tables(data.get("contacts", []), "contacts", str(path))
    contacts = tuple(_contact(c, f"{path}: contacts[{i}]") for i, c in enumerate(entries))
    if not contacts:
        raise ProfileError(f"{path}: no [[contacts]] entries")
    seen: dict[str, int] = {}
    for i, c in enumerate(contacts):
        if c.name in seen:
            raise ProfileError(
                f"{path}: contacts[{i}]: contact name {c.name!r} is already "
                f"used by contacts[{seen[c.name]}]; give each a distinct 'name'"
            )
        seen[c.name] = i
        try:
            robot.frame_id(c.frame)  # unknown frames fail here, with close matches
        except (WholebodyError, LookupError) as exc:
            raise ProfileError(f"{path}: contacts[{i}]: {exc}") from exc
    calibration = None
    if "calibration" in data:  # read only for a profile that names one
        from .calibration import Calibration

        file = path.parent / _string(data["calibration"], "calibration", str(path))
        try:
            calibration = Calibration.load(file)
        except (WholebodyError, OSError) as exc:
            raise ProfileError(f"{path}: calibration {str(file)!r}: {exc}") from exc
    recording = lerobot = None
    if "recording" in data or "lerobot" in data:
        from .recordings.mapping import LerobotMapping, RosbagMapping

        if "recording" in data:
            recording = RosbagMapping.from_dict(data["recording"], f"{path}: [recording]")
        if "lerobot" in data:
            lerobot = LerobotMapping.from_dict(data["lerobot"], f"{path}: [lerobot]")
    sensors: dict[str, float] = {}
    if "sensors" in data:
        where = f"{path}: [sensors]"
        sensor_table = table(data["sensors"], where)
        check_keys(sensor_table, SCHEMA["sensors"], where)
        sensors = {k: number(x, f"{where}: {k!r}") for k, x in sensor_table.items()}
        for key, value in sensors.items():
            if value < 0:
                raise ProfileError(f"{where}: {key!r} must be >= 0, got {value!r}")
    return RobotProfile(robot, contacts, str(path), calibration, recording, lerobot, sensors)


def parse_contact_spec(spec: str) -> Contact:
    """A contact from the command line: ``FRAME:surface:HALF_LENGTH:HALF_WIDTH:MU``, with
    ``:CX:CY`` appended for a sole whose centre is offset from the frame origin (contact frame
    [m]), or ``FRAME:point:MU``.

    Raises
    ------
    ProfileError
        A malformed spec, or a value that is not a positive number.
    """
    parts = spec.split(":")
    try:
        if len(parts) in (5, 7) and parts[1] == "surface":
            center = (float(parts[5]), float(parts[6])) if len(parts) == 7 else (0.0, 0.0)
            return SurfaceContact(
                parts[0],
                half_length=float(parts[2]),
                half_width=float(parts[3]),
                mu=float(parts[4]),
                center=center,
            )
        if len(parts) == 3 and parts[1] == "point":
            return PointContact(parts[0], mu=float(parts[2]))
    except (ValueError, ContactError) as exc:
        raise ProfileError(f"contact {spec!r}: {exc}") from exc
    raise ProfileError(
        f"contact {spec!r}: expected FRAME:surface:HALF_LENGTH:HALF_WIDTH:MU[:CX:CY] or "
        "FRAME:point:MU"
    )
