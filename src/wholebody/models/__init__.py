"""The robot models wholebody ships, and where to find example-robot-data's.

``models/`` in the repository holds the URDF files; installed wheels carry them as
``wholebody/_models``. :func:`path` finds either.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

#: The names of the shipped models (``models/NAME.urdf``), in the order ``SHIPPED`` writes them.
SHIPPED_NAMES = ("pendulum", "two_link_arm", "humanoid", "human_dempster")

if TYPE_CHECKING:
    from ._build import (
        HUMANOID_SOLE_HALF_LENGTH,
        HUMANOID_SOLE_HALF_WIDTH,
        HUMANOID_STANDING_HEIGHT,
        SHIPPED,
        dempster_arm_parameters,
    )
    from .anthropometric import (
        DEMPSTER,
        anthropometric_human,
        anthropometric_human_urdf,
        sole_half_sizes,
        standing_height,
    )

# Imported on first access (PEP 562): loading a robot by name needs only the shipped files,
# not the code that writes them (``SHIPPED``: name -> the function that writes its URDF) nor
# the anthropometric models.
_LAZY = {
    "SHIPPED": "_build",
    "dempster_arm_parameters": "_build",
    "HUMANOID_SOLE_HALF_LENGTH": "_build",
    "HUMANOID_SOLE_HALF_WIDTH": "_build",
    "HUMANOID_STANDING_HEIGHT": "_build",
    "DEMPSTER": "anthropometric",
    "anthropometric_human": "anthropometric",
    "anthropometric_human_urdf": "anthropometric",
    "sole_half_sizes": "anthropometric",
    "standing_height": "anthropometric",
}

__all__ = [
    "DEMPSTER",
    "anthropometric_human",
    "anthropometric_human_urdf",
    "sole_half_sizes",
    "standing_height",
    "SHIPPED",
    "SHIPPED_NAMES",
    "path",
    "models_dir",
    "data_dir",
    "dempster_arm_parameters",
    "HUMANOID_SOLE_HALF_LENGTH",
    "HUMANOID_SOLE_HALF_WIDTH",
    "HUMANOID_STANDING_HEIGHT",
]


def models_dir() -> Path:
    """The folder holding the shipped URDF files."""
    here = Path(__file__).resolve()
    for candidate in (here.parent.parent / "_models", here.parents[3] / "models"):
        if (candidate / "humanoid.urdf").is_file():
            return candidate
    raise FileNotFoundError("wholebody's models folder is missing from this installation")


def data_dir() -> Path:
    """The folder holding the shipped logs (``data/`` in the repository)."""
    here = Path(__file__).resolve()
    for candidate in (here.parent.parent / "_data", here.parents[3] / "data"):
        if (candidate / "humanoid_squat.npz").is_file():
            return candidate
    raise FileNotFoundError("wholebody's data folder is missing from this installation")


def path(name: str) -> Path:
    """Path of a shipped URDF: ``"pendulum"``, ``"two_link_arm"`` or ``"humanoid"``."""
    if name not in SHIPPED_NAMES:
        raise KeyError(f"no shipped model {name!r}; shipped: {sorted(SHIPPED_NAMES)}")
    return models_dir() / f"{name}.urdf"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
