"""The ``wholebody`` command line: ``check``, ``estimate``, ``contacts``, ``fit``, ``info``,
``demo``.

:func:`main` (the console entry point) and the parser live in :mod:`wholebody.cli.commands`;
``contacts`` in :mod:`wholebody.cli.contacts`, ``fit`` in :mod:`wholebody.cli.fit`, the demo
in :mod:`wholebody.cli.demo`. ``python -m wholebody.cli`` runs :func:`main`.
"""

from .commands import (
    EXIT_BAD_INPUT,
    EXIT_INCONCLUSIVE,
    EXIT_INCONSISTENT,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_UNCHECKED,
    build_parser,
    exit_code,
    main,
)

__all__ = [
    "main",
    "build_parser",
    "exit_code",
    "EXIT_OK",
    "EXIT_INCONSISTENT",
    "EXIT_BAD_INPUT",
    "EXIT_UNCHECKED",
    "EXIT_INTERNAL",
    "EXIT_INCONCLUSIVE",
]
