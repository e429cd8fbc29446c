"""The robot models wholebody ships, and where to find example-robot-data's.

``models/`` in the repository holds the URDF files; installed wheels carry them as
``wholebody/_models``. :func:`path` finds either.
"""

from __future__ import annotations

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
from .loading import SHIPPED_NAMES, data_dir, models_dir, path

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
