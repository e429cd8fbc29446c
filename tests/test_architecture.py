"""The shape of the code, as docs/architecture.md states it: imports run down the layers, no
import cycles (function-level imports included), private modules and names used only inside
their own package, and Pinocchio's algorithms called from ``robot`` only."""

from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "wholebody"

# The layers of docs/architecture.md, top first. A unit is a top-level package or module
# (``io.logfiles``, the file formats, is a unit of its own below ``trajectory``); a unit imports
# only units of lower layers.
LAYERS = [
    ["cli"],
    ["check"],
    ["diagnosis", "conventions", "schedule", "control"],
    ["identify"],
    ["estimation"],
    ["io", "sim"],
    ["trajectory"],
    ["io.logfiles"],
    ["friction"],
    ["balance"],
    ["models"],
    ["robot"],
    ["contacts", "spatial", "parallel", "limits"],
    ["errors"],
]


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in SRC.rglob("*.py")}


def _imports(name: str, path: Path) -> list[tuple[str, list[str]]]:
    """(imported module, names) for every import of ``wholebody`` modules, at any level.

    Imports under ``if TYPE_CHECKING:`` are left out: they name types for annotations and never
    run (the modules of ``robot`` annotate their first argument with ``Robot``, whose class in
    ``robot.core`` binds their functions as its methods).
    """
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            node.body = []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("wholebody"):
                out.append((target, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name.startswith("wholebody")]
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for target, names in _imports(name, path):
            # "from . import x" names a submodule; "from .x import y" the module x.
            for candidate in [f"{target}.{n}" for n in names] + [target]:
                if candidate in modules and candidate != name:
                    graph[name].add(candidate)
                    if candidate != target:
                        break
    return graph


def test_no_import_cycles():
    graph = _graph()
    # A package's __init__ re-exporting its own submodules is not a cycle of ideas.
    for name in graph:
        graph[name] = {t for t in graph[name] if not (name + ".").startswith(t + ".") or t == name}
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_cycle_between_packages():
    """The units of ``LAYERS`` (the top-level packages and modules, ``io.logfiles`` one of its
    own) import one another without a cycle, imports inside functions included."""
    units: dict[str, set[str]] = {}
    for name, targets in _graph().items():
        here = _unit(name)
        units.setdefault(here, set()).update(_unit(t) for t in targets if _unit(t) != here)
    state: dict[str, int] = {}
    cycles = []

    def visit(unit: str, path: list[str]) -> None:
        state[unit] = 1
        for nxt in sorted(units.get(unit, ())):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[unit] = 2

    for unit in sorted(units):
        if unit not in state:
            visit(unit, [unit])
    assert not cycles, "cycles between packages:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_private_names_imported_across_modules():
    modules = _modules()
    offenders = []
    for name, path in modules.items():
        for target, names in _imports(name, path):
            # A private module (``from . import _validation``) is the package's own helper.
            private = [n for n in names if n.startswith("_") and f"{target}.{n}" not in modules]
            # A module's own private helpers may live in a sibling module of the same
            # package whose name starts with "_" (e.g. robot -> _robot_model): that is one
            # idea split across files, not a reach into another module's internals.
            if private and not target.rpartition(".")[2].startswith("_"):
                offenders.append(f"{name} imports {private} from {target}")
    assert not offenders, "\n".join(offenders)


def _unit(module: str) -> str:
    parts = module.split(".")[1:]
    if parts[:2] == ["io", "logfiles"]:
        return "io.logfiles"
    return parts[0] if parts else ""


def _top_level_imports(name: str, path: Path) -> set[str]:
    """Modules imported at module level, outside ``if TYPE_CHECKING:`` (what runs on import)."""
    modules = _modules()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")
            base = base[: len(base) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
            out |= set(subs) or {target}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("wholebody"):
            out.add(node.module or "")
    return out


def test_imports_run_down_the_layers():
    layer = {unit: i for i, units in enumerate(LAYERS) for unit in units}
    modules = _modules()
    assert {_unit(m) for m in modules} - {""} <= set(layer), "a unit missing from LAYERS"
    offenders = []
    for name, path in modules.items():
        if name == "wholebody":
            continue  # the package face names the first-hour API of every layer
        here = _unit(name)
        late = {t for t, _ in _imports(name, path)} - _top_level_imports(name, path)
        for target in _top_level_imports(name, path) | late:
            there = _unit(target)
            if there in ("", here) or layer[there] > layer[here]:
                continue
            offenders.append(f"{name} ({here}) imports {target} ({there})")
    assert not offenders, "\n".join(sorted(offenders))


@pytest.mark.parametrize(
    "module", ["wholebody.trajectory", "wholebody.io", "wholebody.io.recordings", "wholebody.sim"]
)
def test_each_face_imports_first_in_a_fresh_process(module):
    """The Trajectory reads its files through ``io.logfiles``, whose import runs the ``io``
    face, which imports ``io.logs``: the Trajectory's class is imported there where it is used,
    so that importing any of these first works (a module-level import of the class in
    ``io.logs`` fails here, the class not defined yet)."""
    env = {**os.environ, "PYTHONPATH": str(SRC.parent)}
    run = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, env=env)
    assert run.returncode == 0, run.stderr.decode()


def _inside(name: str, package: str) -> bool:
    return (name + ".").startswith(package + ".")


def test_private_modules_and_names_stay_in_their_package():
    """``wholebody.P._m`` is imported only from inside ``wholebody.P``, and a name ``_n`` only
    from inside the package of the module that defines it (top-level private modules such as
    ``_progress`` belong to ``wholebody`` itself, so to every module)."""
    modules = _modules()
    offenders = []
    for name, path in modules.items():
        for target, names in _imports(name, path):
            subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules]
            for module in [target, *subs]:
                parts = module.split(".")
                for i, part in enumerate(parts[1:], start=1):
                    if part.startswith("_") and not _inside(name, ".".join(parts[:i])):
                        offenders.append(f"{name} imports the private module {module}")
                        break
            # the package that owns a module's names: its parent (a package owns its own)
            is_package = target in modules and modules[target].name == "__init__.py"
            owner = target if is_package else target.rpartition(".")[0]
            private = [n for n in names if n.startswith("_") and f"{target}.{n}" not in modules]
            if private and not _inside(name, owner):
                offenders.append(f"{name} imports {private} from {target}")
    assert not offenders, "\n".join(sorted(offenders))


def test_robot_is_one_class_over_modules_of_functions():
    """``Robot`` has no base class; each method is the function of its module, bound as is in
    the class body."""
    from wholebody.robot import Robot, _controller_pass, _dynamics, _kinematics, _model, _state

    assert Robot.__bases__ == (object,)
    modules = (_model, _state, _dynamics, _kinematics, _controller_pass)
    bound = {
        name
        for name, value in vars(Robot).items()
        if any(getattr(m, name, None) is value for m in modules)
    }
    assert {"mass_matrix", "state", "check_batch", "frame_jacobian"} <= bound
    assert {"controller_pass", "placements", "_check_qva"} <= bound
    for name in bound:
        assert getattr(Robot, name).__code__.co_varnames[0] == "robot", name


# --- Pinocchio's algorithms are called from robot/ only -----------------------------------------

# The modules (and packages) that may call Pinocchio's algorithms.
PINOCCHIO_CALLERS = {"wholebody.robot"}
# A signature that runs on a Data: a Model with its Data, or a pool of them (Boost.Python
# writes each overload as ``name( (Model)model, (Data)data, ...) -> ...`` in the docstring).
_ON_DATA = re.compile(r"\(Model\)\w+,\s*\(Data\)\w+|\(ModelPool\)")


def _is_pinocchio_algorithm(name: str) -> bool:
    """Whether ``pinocchio.<name>`` is an algorithm: a function of the module one of whose
    signatures takes a ``Model`` with its ``Data`` (it reads or writes the Data: kinematics,
    dynamics, Jacobians, regressors, frame updates). Types (``SE3``, ``Motion``, ``Inertia``,
    ``Quaternion``, ``ReferenceFrame``), constants, model builders and functions of
    configurations or rotations alone (``neutral``, ``difference``, ``log3``, ``exp3``) are
    not."""
    import pinocchio as pin

    f = getattr(pin, name, None)
    if f is None or isinstance(f, type) or not callable(f):
        return False
    if _ON_DATA.search(f.__doc__ or ""):
        return True
    try:  # a function written in Python
        params = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        return False
    return params[:2] == ["model", "data"]


def _pinocchio_algorithm_uses(source: str) -> set[tuple[int, str]]:
    """(line, name) of every use of a Pinocchio algorithm in ``source``: an attribute of the
    module under any name it is imported as (called or not: ``f = pin.rnea`` counts), a name
    imported from it, or ``getattr(pin, "rnea")``."""
    tree = ast.parse(source)
    aliases: set[str] = set()
    uses: set[tuple[int, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "pinocchio":
                    aliases.add(a.asname or a.name)
                elif a.name.startswith("pinocchio.") and a.asname is None:
                    aliases.add("pinocchio")  # "import pinocchio.utils" binds pinocchio
        elif isinstance(node, ast.ImportFrom) and node.module == "pinocchio" and not node.level:
            uses |= {(node.lineno, a.name) for a in node.names if _is_pinocchio_algorithm(a.name)}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and _is_pinocchio_algorithm(node.attr)
        ):
            uses.add((node.lineno, node.attr))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in aliases
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _is_pinocchio_algorithm(node.args[1].value)
        ):
            uses.add((node.lineno, node.args[1].value))
    return uses


def test_pinocchio_algorithms_are_called_from_robot_only():
    offenders = []
    callers = set()
    for name, path in _modules().items():
        uses = _pinocchio_algorithm_uses(path.read_text())
        allowed = [m for m in PINOCCHIO_CALLERS if _inside(name, m)]
        if allowed and uses:
            callers.update(allowed)
        elif uses:
            offenders += [f"{name}:{line} uses pinocchio.{f}" for line, f in sorted(uses)]
    assert not offenders, (
        "Pinocchio algorithms outside robot/ (move the pass into a robot/ function):\n"
        + "\n".join(offenders)
    )
    # No stale exemption: every module allowed still calls an algorithm.
    assert callers == PINOCCHIO_CALLERS, f"allowed but calling none: {PINOCCHIO_CALLERS - callers}"


def test_the_pinocchio_rule_tells_algorithms_from_types_and_catches_a_planted_call():
    algorithms = [
        "forwardKinematics", "framesForwardKinematics", "computeJointJacobians",
        "computeFrameJacobian", "getFrameJacobian", "centerOfMass", "rnea", "crba",
        "computeAllTerms", "updateFramePlacement", "updateFramePlacements",
        "jointBodyRegressor", "computeJointTorqueRegressor", "computeCentroidalMap",
        "computeCentroidalMomentumTimeVariation", "getFrameClassicalAcceleration",
    ]  # fmt: skip
    others = [
        "SE3", "Quaternion", "ReferenceFrame", "Motion", "Force", "Inertia", "Model", "Data",
        "FrameType", "LOCAL_WORLD_ALIGNED", "log3", "exp3", "log6", "neutral", "difference",
        "integrate", "isNormalized", "buildModelFromUrdf", "not_a_pinocchio_name",
    ]  # fmt: skip
    assert [n for n in algorithms if not _is_pinocchio_algorithm(n)] == []
    assert [n for n in others if _is_pinocchio_algorithm(n)] == []
    planted = """
import numpy as np
import pinocchio as pin
import pinocchio.utils
from pinocchio import SE3, rnea

def f(model, data, q):
    pin.forwardKinematics(model, data, q)
    J = pinocchio.getFrameJacobian(model, data, 3, pin.LOCAL_WORLD_ALIGNED)
    rate = pin.computeCentroidalMomentumTimeVariation
    M = getattr(pin, "crba")(model, data, q)
    R = pin.exp3(np.zeros(3)) @ SE3.Identity().rotation
    dq = pin.difference(model, pin.neutral(model), q) + pin.log3(R)[0]
    return J, rate, M, dq, pin.Motion.Zero(), pin.Force.Zero(), pin.Inertia.Zero()
"""
    assert _pinocchio_algorithm_uses(planted) == {
        (5, "rnea"),
        (8, "forwardKinematics"),
        (9, "getFrameJacobian"),
        (10, "computeCentroidalMomentumTimeVariation"),
        (11, "crba"),
    }
    # An unrelated module named like it is not Pinocchio.
    assert _pinocchio_algorithm_uses("import pin\npin.rnea(1)\n") == set()
