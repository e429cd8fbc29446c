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
        if (
            spec
            and spec.origin
            and spec.origin.endswith(".py")
            and ">>>" in open(spec.origin).read()
        ):
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
    # The functions users call first: each has at least one example, run above.
    import wholebody
    from wholebody.check import CheckOptions, check_trajectory
    from wholebody.estimation import estimate_contact_wrenches
    from wholebody.friction import check_friction_cone

    finder = doctest.DocTestFinder()
    entry_points = [
        wholebody.load,
        wholebody.Robot.inverse_dynamics,
        wholebody.Robot.com,
        wholebody.Robot.frame_jacobian,
        wholebody.newton_euler_residual,
        estimate_contact_wrenches,
        check_friction_cone,
        check_trajectory,
        CheckOptions,
    ]
    for obj in entry_points:
        tests = finder.find(obj, obj.__qualname__, module=False)
        assert tests and tests[0].examples, obj.__qualname__
