"""The ``Examples`` sections of the docstrings run (doctest), so they cannot drift from the code.

Every module of ``wholebody`` is collected; examples marked ``# doctest: +SKIP`` (those that
need a simulator or a running controller) are skipped by doctest itself.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import wholebody

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(wholebody.__path__, "wholebody.")
    if not info.name.endswith("__main__")
)


def _modules_with_examples() -> list[str]:
    out = []
    for name in MODULES:
        spec = importlib.util.find_spec(name)
        if spec and spec.origin and ">>>" in open(spec.origin).read():
            out.append(name)
    return out


@pytest.mark.parametrize("name", _modules_with_examples())
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    with np.printoptions(legacy=False):
        result = doctest.testmod(module, optionflags=flags, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


def test_the_main_entry_points_have_examples_that_run():
    # load, the one-sample residual, the cone check: each has at least one example run above.
    finder = doctest.DocTestFinder()
    from wholebody.balance import core
    from wholebody.friction import cones
    from wholebody.models import loading

    for module, name in [
        (loading, "load"),
        (core, "newton_euler_residual"),
        (cones, "check_friction_cone"),
    ]:
        tests = finder.find(getattr(module, name), name, module=module)
        assert tests and tests[0].examples, name
