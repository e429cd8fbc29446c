"""Robot profiles: a lab's setup written once (TOML): the robot, added frames, contacts.

.. code-block:: toml

    robot = "humanoid"              # a name known to wholebody.load, or:
    # urdf = "robots/my_robot.urdf" # relative to this file
    # floating_base = true

    [[frames]]                      # optional: frames the URDF lacks
    name = "left_sole"
    parent = "left_ankle_roll_link"
    translation = [0.03, 0.0, -0.04]

    [[contacts]]
    frame = "left_sole"             # name defaults to the frame
    type = "surface"                # "surface" (half_length, half_width) or "point" (normal)
    half_length = 0.12
    half_width = 0.05
    mu = 1.0
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .contacts import Contact, PointContact, SurfaceContact
from .errors import ContactError, ProfileError
from .loading import load
from .robot import Robot

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["RobotProfile", "load_profile", "parse_contact_spec", "ProfileError"]


@dataclass(frozen=True)
class RobotProfile:
    """A robot and its contacts, as a lab sets them up."""

    robot: Robot
    contacts: tuple[Contact, ...]
    source: str


def _contact(entry: dict[str, Any], where: str) -> Contact:
    kind = entry.get("type", "surface")
    try:
        if kind == "surface":
            return SurfaceContact(entry["frame"], half_length=entry["half_length"], half_width=entry["half_width"],
                                  mu=entry["mu"], name=entry.get("name", ""))
        if kind == "point":
            return PointContact(entry["frame"], mu=entry["mu"], normal=entry.get("normal", (0.0, 0.0, 1.0)),
                                name=entry.get("name", ""))
    except KeyError as exc:
        raise ProfileError(f"{where}: missing key {exc.args[0]!r} (type {kind!r})") from None
    except ContactError as exc:
        raise ProfileError(f"{where}: {exc}") from None
    raise ProfileError(f"{where}: type must be 'surface' or 'point', got {kind!r}")


def load_profile(path: str | Path) -> RobotProfile:
    """Read a TOML robot profile (see the module docstring)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such profile") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not valid TOML: {exc}") from None
    if "urdf" in data:
        robot = Robot.from_urdf(path.parent / data["urdf"], floating_base=data.get("floating_base", True),
                                validate=data.get("validate", "warn"))
    elif "robot" in data:
        robot = load(data["robot"])
    else:
        raise ProfileError(f"{path}: give 'robot' (a name) or 'urdf' (a path)")
    for i, frame in enumerate(data.get("frames", [])):
        try:
            robot.add_frame(frame["name"], frame["parent"], frame.get("translation", [0.0, 0.0, 0.0]))
        except KeyError as exc:
            raise ProfileError(f"{path}: frames[{i}] lacks {exc.args[0]!r}") from None
    contacts = tuple(_contact(c, f"{path}: contacts[{i}]") for i, c in enumerate(data.get("contacts", [])))
    if not contacts:
        raise ProfileError(f"{path}: no [[contacts]] entries")
    for c in contacts:
        robot.frame_id(c.frame)  # unknown frames fail here, with close matches
    return RobotProfile(robot, contacts, str(path))


def parse_contact_spec(spec: str) -> Contact:
    """A contact from the command line: ``FRAME:surface:HALF_LENGTH:HALF_WIDTH:MU`` or
    ``FRAME:point:MU``."""
    parts = spec.split(":")
    try:
        if len(parts) == 5 and parts[1] == "surface":
            return SurfaceContact(parts[0], half_length=float(parts[2]), half_width=float(parts[3]), mu=float(parts[4]))
        if len(parts) == 3 and parts[1] == "point":
            return PointContact(parts[0], mu=float(parts[2]))
    except ValueError as exc:
        raise ProfileError(f"contact {spec!r}: {exc}") from None
    raise ProfileError(f"contact {spec!r}: expected FRAME:surface:HALF_LENGTH:HALF_WIDTH:MU or FRAME:point:MU")
