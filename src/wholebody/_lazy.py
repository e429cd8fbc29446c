"""Names of a package face imported on first access (PEP 562), one mechanism for every face."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_names(
    package: str, namespace: dict[str, Any], lazy: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package face's ``__getattr__`` and ``__dir__`` (PEP 562): each name of ``lazy``
    (name -> module of ``package``) is imported on first access and kept in ``namespace``
    (the face's globals), so a face imports only what is used."""

    def __getattr__(name: str) -> Any:
        if name in lazy:
            value = getattr(import_module(f".{lazy[name]}", package), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(lazy))

    return __getattr__, __dir__
