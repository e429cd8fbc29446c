"""The robot models wholebody ships, and where to find example-robot-data's.

``models/`` in the repository holds the URDF files; installed wheels carry them as
``wholebody/_models``. :func:`path` finds either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names
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


__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)
