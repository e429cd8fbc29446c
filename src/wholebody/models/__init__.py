"""The robot models wholebody ships, and where to find example-robot-data's.

``models/`` in the repository holds the URDF files; installed wheels carry them as
``wholebody/_models``. :func:`path` finds either.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .loading import SHIPPED_NAMES, data_dir, models_dir, path

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


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
