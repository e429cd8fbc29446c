"""The strict schema step of calibration files (:mod:`wholebody.io.calibration`): every key,
type and range checked before a :class:`~wholebody.io.calibration.Calibration` is built, each
refusal a :class:`~wholebody.errors.ProfileError` naming the file and the key."""

from __future__ import annotations

import difflib
import math
from typing import Any

from ..errors import ProfileError

FORMAT = "wholebody-calibration"
VERSIONS = (1,)
TOP_KEYS = ("format", "version", "contacts", "torque_offsets")
CONTACT_KEYS = ("axes", "frame", "force_offset", "moment_offset", "gain", "rotation")
AXES = ("contact", "world")


def _unknown(keys: Any, allowed: tuple[str, ...], where: str) -> None:
    for key in keys:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), list(allowed), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ProfileError(
                f"{where}: unknown key {key!r}{hint} (allowed: {', '.join(allowed)})"
            )


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProfileError(f"{where} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ProfileError(f"{where} must be a finite number, got {value!r}")
    return float(value)


def _vector(value: Any, where: str) -> list[float]:
    if not isinstance(value, list) or len(value) != 3:
        raise ProfileError(f"{where} must be an array of 3 numbers, got {value!r}")
    return [_number(x, f"{where}[{i}]") for i, x in enumerate(value)]


def check_calibration(data: dict[str, Any], source: str) -> dict[str, Any]:
    """The parsed TOML of a calibration file, checked and normalised.

    Returns
    -------
    dict
        ``contacts``: name -> dict(force_offset, moment_offset, gain, rotation, axes,
        frame) with defaults filled; ``torque_offsets``: joint -> float.

    Raises
    ------
    ProfileError
        An unknown table or key (``[torque_offset]``), another format or version, a value
        that is not a finite number (``true``, ``nan``, ``"0.1"``), a contact entry that is
        not a table; the message names the file and the key.
    """
    _unknown(data, TOP_KEYS, source)
    fmt = data.get("format", FORMAT)
    if fmt != FORMAT:
        raise ProfileError(f"{source}: 'format' is {fmt!r}, expected {FORMAT!r}")
    version = data.get("version", 1)
    if isinstance(version, bool) or version not in VERSIONS:
        raise ProfileError(
            f"{source}: 'version' is {version!r}; this wholebody reads version "
            f"{', '.join(map(str, VERSIONS))}"
        )
    contacts = data.get("contacts", {})
    if not isinstance(contacts, dict):
        raise ProfileError(
            f"{source}: 'contacts' must be a table of [contacts.NAME] tables, got "
            f"{type(contacts).__name__} {contacts!r}"
        )
    out: dict[str, Any] = {"contacts": {}, "torque_offsets": {}}
    for name, entry in contacts.items():
        where = f"{source}: contacts.{name}"
        if not isinstance(entry, dict):
            raise ProfileError(
                f"{where} must be a table ([contacts.{name}]), got {type(entry).__name__} {entry!r}"
            )
        _unknown(entry, CONTACT_KEYS, where)
        axes = entry.get("axes", "contact")
        if axes not in AXES:
            raise ProfileError(f"{where}: 'axes' must be 'contact' or 'world', got {axes!r}")
        frame = entry.get("frame", name)
        if not isinstance(frame, str) or not frame:
            raise ProfileError(f"{where}: 'frame' must be a non-empty string, got {frame!r}")
        zero = [0.0, 0.0, 0.0]
        gain = _number(entry.get("gain", 0.0), f"{where}: 'gain'")
        if gain <= -1.0:  # the reading would be 1 / (1 + gain) times the truth
            raise ProfileError(f"{where}: 'gain' must be > -1 (a relative error), got {gain!r}")
        out["contacts"][name] = {
            "force_offset": _vector(entry.get("force_offset", zero), f"{where}: 'force_offset'"),
            "moment_offset": _vector(entry.get("moment_offset", zero), f"{where}: 'moment_offset'"),
            "gain": gain,
            "rotation": _vector(entry.get("rotation", zero), f"{where}: 'rotation'"),
            "axes": axes,
            "frame": frame,
        }
    torques = data.get("torque_offsets", {})
    if not isinstance(torques, dict):
        raise ProfileError(
            f"{source}: 'torque_offsets' must be a table (joint = number), got "
            f"{type(torques).__name__} {torques!r}"
        )
    for joint, value in torques.items():
        out["torque_offsets"][joint] = _number(value, f"{source}: torque_offsets.{joint}")
    return out
