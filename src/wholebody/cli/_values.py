"""Values of the command line shared by its commands: argparse types that refuse a bad value
before any work, and the robot named by ``--robot`` (or ``info``'s argument)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from ..models.loading import load
from ..robot.core import Robot

__all__ = ["positive_int", "tolerance", "load_robot"]


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def tolerance(text: str) -> float:
    """argparse type: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


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
