"""Optional dependencies: import one, or say which extra installs it."""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import MissingDependencyError


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module``, or raise :class:`MissingDependencyError` naming the ``pip`` line."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(
            f"{purpose} need {module.split('.')[0]}: pip install 'wholebody[{extra}]'"
        ) from None
