"""Values of the command line shared by its commands: argparse types that refuse a bad value
before any work, the robot named by ``--robot`` (or ``info``'s argument), and the robot and
contacts of ``--config`` or ``--robot`` and ``--contact``."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ProfileError
from ..models.loading import load
from ..robot.core import Robot

__all__ = [
    "positive_int",
    "finite",
    "tolerance",
    "positive",
    "share",
    "load_robot",
    "add_robot_arguments",
    "robot_and_contacts",
]


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _number(accept: Callable[[float], bool], need: str) -> Callable[[str], float]:
    """argparse type: a finite number that ``accept`` takes, else "must be ``need``"."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and accept(value)):
            raise argparse.ArgumentTypeError(f"must be {need}, got {text!r}")
        return value

    return parse


finite = _number(lambda x: True, "a finite number")
tolerance = _number(lambda x: x >= 0, "a finite number >= 0")
positive = _number(lambda x: x > 0, "a finite number > 0")
share = _number(lambda x: 0 <= x <= 1, "a share between 0 and 1")


def load_robot(spec: str) -> Robot:
    """A robot name, or a URDF or MJCF file (told apart by its root element)."""
    from ..errors import URDFParseError

    if Path(spec).suffix.lower() in (".urdf", ".xml", ".mjcf") or Path(spec).is_file():
        try:
            return load(Path(spec), validate="warn")
        except UnicodeDecodeError as exc:  # the file's bytes are not quoted
            raise URDFParseError(
                f"{spec}: not UTF-8 text (an invalid byte at offset {exc.start}); save the "
                "robot description as UTF-8"
            ) from None
    return load(spec)


def add_robot_arguments(p: argparse.ArgumentParser) -> None:
    """``--config``, or ``--robot`` and ``--contact``."""
    p.add_argument(
        "--config",
        metavar="PROFILE.toml",
        help="robot profile (TOML): robot, frames, contacts, log mapping (docs/profile.md)",
    )
    p.add_argument(
        "--robot",
        help="robot name (e.g. humanoid, g1), URDF or MJCF path; without --config, give the "
        "contacts with --contact",
    )
    p.add_argument(
        "--contact",
        action="append",
        metavar="SPEC",
        help="a contact, repeat per contact: FRAME:surface:HALF_LENGTH:HALF_WIDTH:MU[:CX:CY] "
        "(a rectangular sole; half sizes and centre CX, CY in the frame's x-y plane [m], MU "
        "friction coefficient [-]) or FRAME:point:MU [-]",
    )


def robot_and_contacts(args: argparse.Namespace) -> tuple[Robot, list[Any], Any]:
    """Robot, contacts and sensor calibration (or None) from ``--config``, or from ``--robot``
    and ``--contact``; the profile's ``[sensors]`` noise in ``args.sensor_noise`` (None
    without)."""
    from ..io.profile import load_profile, parse_contact_spec

    args.sensor_noise = None
    if args.config:
        profile = load_profile(args.config)
        args.sensor_noise = dict(profile.sensors) or None
        return profile.robot, list(profile.contacts), profile.calibration
    if not args.robot or not args.contact:
        raise ProfileError("give --config PROFILE.toml, or --robot and at least one --contact")
    return load_robot(args.robot), [parse_contact_spec(s) for s in args.contact], None
