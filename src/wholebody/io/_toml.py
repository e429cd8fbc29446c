"""Strict TOML for profiles and calibrations: the file read as UTF-8 TOML, and the checks of
its keys and values, each refusal a :class:`~wholebody.errors.ProfileError` naming the file and
the entry (with a close match for a misspelt key)."""

from __future__ import annotations

import difflib
import math
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import ProfileError
from ..limits import check_regular_text_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "tomllib",
    "parse_toml",
    "read_toml",
    "check_keys",
    "type_name",
    "number",
    "vector",
    "table",
]


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """TOML text as a dict; ``source`` names it in the message."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{source}: not valid TOML: {exc}") from exc
    except RecursionError as exc:
        raise ProfileError(f"{source}: not valid TOML: nested too deeply") from exc


def read_toml(path: Path, what: str, noun: str) -> dict[str, Any]:
    """A TOML file (``what``: "a profile"; ``noun``: "profile", for the messages)."""
    check_regular_text_file(path, what, ProfileError)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ProfileError(f"{path}: not UTF-8 text: {exc}") from exc
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read the {noun}: {exc.strerror or exc}") from exc
    return parse_toml(text, str(path))


def check_keys(keys: Iterable[Any], allowed: Iterable[str], where: str) -> None:
    """Refuse a key not in ``allowed``, with a close match when there is one."""
    allowed = list(allowed)
    for key in keys:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ProfileError(
                f"{where}: unknown key {key!r}{hint} (allowed: {', '.join(allowed)})"
            )


def type_name(value: Any) -> str:
    """``"a boolean"``, ``"an array"``, ...: a TOML value's type, for messages."""
    return {
        bool: "a boolean",
        str: "a string",
        int: "an integer",
        float: "a number",
        list: "an array",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def number(value: Any, where: str, positive: bool = False) -> float:
    """A finite number (``positive``: > 0); ``where`` names the entry."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProfileError(f"{where} must be a number, got {type_name(value)} {value!r}")
    if not math.isfinite(value) or (positive and value <= 0):
        raise ProfileError(
            f"{where} must be a {'positive ' if positive else ''}finite number, got {value!r}"
        )
    return float(value)


def vector(value: Any, where: str, n: int = 3) -> list[float]:
    """An array of ``n`` finite numbers."""
    if not isinstance(value, list) or len(value) != n:
        raise ProfileError(
            f"{where} must be an array of {n} numbers, got {type_name(value)} {value!r}"
        )
    return [number(x, f"{where}[{i}]") for i, x in enumerate(value)]


def table(value: Any, where: str) -> Mapping[str, Any]:
    """A table of keys."""
    if not isinstance(value, Mapping):
        raise ProfileError(f"{where}: must be a table of keys, got {type(value).__name__}")
    return value
