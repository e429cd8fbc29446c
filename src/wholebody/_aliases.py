"""Compatibility import paths: the module paths of earlier releases, served from their new homes.

The code moved into packages by concept (``docs/architecture.md``). Every module path that
existed before the move still imports, and gives **the same module object** as its new home
(``wholebody.analysis is wholebody.check.analysis``), so names, private helpers and
monkeypatches keep working. These paths are kept for compatibility only; new code should
import from the new homes:

====================================  ============================================
old path                              new home
====================================  ============================================
``wholebody.analysis``                ``wholebody.check.analysis`` (``wholebody.check``)
``wholebody.report``                  ``wholebody.check.report``
``wholebody.many``                    ``wholebody.check.many``
``wholebody.plots``                   ``wholebody.check.plots``
``wholebody.newton_euler``            ``wholebody.balance.newton_euler``
``wholebody.cop``                     ``wholebody.balance.cop``
``wholebody.reactions``               ``wholebody.balance.reactions``
``wholebody.support``                 ``wholebody.friction.support``
``wholebody.conventions_contacts``    ``wholebody.conventions`` (``conventions._core``)
``wholebody.conventions_differentiation``  ``wholebody.conventions.differentiation``
``wholebody.differentiation``         ``wholebody.robot.differentiation``
``wholebody.loading``                 ``wholebody.models.loading`` (``wholebody.load``)
``wholebody.mjcf``                    ``wholebody.robot.mjcf``
``wholebody.uncertainty``             ``wholebody.estimation.uncertainty``
``wholebody.calibrate``               ``wholebody.identify.calibrate``
``wholebody.logfiles``                ``wholebody.io.logfiles``
``wholebody.recordings``              ``wholebody.io.recordings``
``wholebody.profile``                 ``wholebody.io.profile``
``wholebody.mujoco_bridge``           ``wholebody.sim.mujoco``
``wholebody.mujoco_recorder``         ``wholebody.sim.mujoco_recorder``
``wholebody.demo``                    ``wholebody.cli.demo``
``wholebody.fit_cli``                 ``wholebody.cli.fit``
``wholebody.schedule_cli``            ``wholebody.cli.contacts``
====================================  ============================================

``wholebody.robot``, ``wholebody.balance``, ``wholebody.conventions``, ``wholebody.io`` and
``wholebody.cli`` are packages now, whose faces export what the modules of those names did.
The private modules of earlier releases (``wholebody._robot_model``, ``wholebody._check_engine``,
...) are aliased too, for code written against them; see :data:`ALIASES`. Type checkers do not
follow these aliases: import from the new homes in typed code.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

__all__ = ["ALIASES", "resolve", "find_spec"]

#: Old module path -> new module path. A submodule of an old package path maps likewise
#: (``wholebody.logfiles.npz`` -> ``wholebody.io.logfiles.npz``).
ALIASES: dict[str, str] = {
    "wholebody.analysis": "wholebody.check.analysis",
    "wholebody.report": "wholebody.check.report",
    "wholebody.many": "wholebody.check.many",
    "wholebody.plots": "wholebody.check.plots",
    "wholebody._check_sources": "wholebody.check.analysis",
    "wholebody._check_engine": "wholebody.check.analysis",
    "wholebody._check_evidence": "wholebody.check.analysis",
    "wholebody.check._sources": "wholebody.check.analysis",
    "wholebody.check._engine": "wholebody.check.analysis",
    "wholebody.check._evidence": "wholebody.check.analysis",
    "wholebody.check._held": "wholebody.check.report",
    "wholebody.check._cone_finding": "wholebody.check.report",
    "wholebody.check._verdict": "wholebody.check.report",
    "wholebody.newton_euler": "wholebody.balance.newton_euler",
    "wholebody._newton_euler_formula": "wholebody.balance.newton_euler",
    "wholebody.balance._formula": "wholebody.balance.newton_euler",
    "wholebody.cop": "wholebody.balance.cop",
    "wholebody.reactions": "wholebody.balance.reactions",
    "wholebody._balance_kinematics": "wholebody.balance._kinematics",
    "wholebody.support": "wholebody.friction.support",
    "wholebody.friction.contact_set": "wholebody.friction.cones",
    "wholebody._conventions_core": "wholebody.conventions._core",
    "wholebody.conventions_contacts": "wholebody.conventions._core",
    "wholebody.conventions.contacts": "wholebody.conventions._core",
    "wholebody.conventions.limits": "wholebody.conventions._core",
    "wholebody.conventions_differentiation": "wholebody.conventions.differentiation",
    "wholebody._robot_model": "wholebody.robot._model",
    "wholebody._robot_state": "wholebody.robot._state",
    "wholebody._robot_dynamics": "wholebody.robot._dynamics",
    "wholebody._robot_kinematics": "wholebody.robot._kinematics",
    "wholebody._robot_checks": "wholebody.robot._checks",
    "wholebody._robot_batch": "wholebody.robot.batch",
    "wholebody._validation": "wholebody.robot.validation",
    "wholebody.robot.model_warnings": "wholebody.robot.validation",
    "wholebody._trajectory_arrays": "wholebody.trajectory",
    "wholebody._wrench_points": "wholebody.trajectory",
    "wholebody.differentiation": "wholebody.robot.differentiation",
    "wholebody.loading": "wholebody.models.loading",
    "wholebody.mjcf": "wholebody.robot.mjcf",
    "wholebody.uncertainty": "wholebody.estimation.uncertainty",
    "wholebody.calibrate": "wholebody.identify.calibrate",
    "wholebody.logfiles": "wholebody.io.logfiles",
    "wholebody.io.logfiles.base": "wholebody.io.logfiles.fields",
    "wholebody.io.logfiles.safety": "wholebody.io.logfiles.fields",
    "wholebody.recordings": "wholebody.io.recordings",
    "wholebody.profile": "wholebody.io.profile",
    "wholebody.mujoco_bridge": "wholebody.sim.mujoco",
    "wholebody.mujoco_recorder": "wholebody.sim.mujoco_recorder",
    "wholebody._mujoco_base": "wholebody.sim._mujoco_base",
    "wholebody._mujoco_inertia": "wholebody.sim._mujoco_inertia",
    "wholebody.demo": "wholebody.cli.demo",
    "wholebody.fit_cli": "wholebody.cli.fit",
    "wholebody.schedule_cli": "wholebody.cli.contacts",
}


def resolve(name: str) -> str | None:
    """The new home of an old module path, or None when ``name`` is not an old path."""
    head = name
    while head:
        if head in ALIASES:
            return ALIASES[head] + name[len(head) :]
        head = head.rpartition(".")[0]
    return None


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        # The module of the new home itself: one object under both names.
        module = importlib.import_module(self.target)
        self._spec = module.__spec__
        if hasattr(module, "__path__"):
            # An old package path: its submodules' old paths would be found in the new
            # package's folder as second copies; from now on the aliases are asked first.
            _install_first()
        return module

    def exec_module(self, module: ModuleType) -> None:
        # Already executed under its own name. The import system has just set the module's
        # __spec__ to the alias's; give it back its own, so that its __spec__.parent stays
        # its __package__ (relative imports inside functions, reload, pickling by name).
        module.__spec__ = self._spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        new = resolve(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(new))


def find_spec(
    fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
) -> ModuleSpec | None:
    """The spec of an old module path, or None. ``wholebody`` asks it last on
    :data:`sys.meta_path`, for the modules no other finder has (every old path is a module
    that no longer exists), so the imports of every other module never run it. Once an old
    package path is imported, the alias finder goes first (the submodules of that path would
    be found as files of the new package)."""
    return _AliasFinder().find_spec(fullname, path, target)


def _install_first() -> None:
    """Put the alias finder first on :data:`sys.meta_path` (once): the submodules of an old
    package path would otherwise be found as files of the new package."""
    present = [f for f in sys.meta_path if isinstance(f, _AliasFinder)]
    if present and sys.meta_path[0] is present[0]:
        return
    for finder in present:
        sys.meta_path.remove(finder)
    sys.meta_path.insert(0, _AliasFinder())
