"""The shape of the code, as docs/architecture.md states it: imports run down the layers, no
import cycles (function-level imports included), and private modules and names used only inside
their own package."""

from __future__ import annotations

import ast
from pathlib import Path

from wholebody._aliases import resolve

SRC = Path(__file__).resolve().parents[1] / "src" / "wholebody"

# The layers of docs/architecture.md, top first. A unit is a top-level package or module
# (``io.logfiles``, the file formats, is a unit of its own below ``trajectory``); a unit imports
# only units of lower layers.
LAYERS = [
    ["cli"],
    ["check"],
    ["diagnosis", "conventions", "schedule", "control"],
    ["estimation"],
    ["io", "sim"],
    ["identify"],
    ["trajectory"],
    ["_trajectory_arrays", "_wrench_points"],
    ["io.logfiles"],
    ["friction"],
    ["balance"],
    ["models"],
    ["robot"],
    ["contacts", "spatial", "parallel", "limits", "_progress", "_optional", "_aliases"],
    ["errors"],
]
# Imports inside functions that go up, each for one feature: the Trajectory built from a MuJoCo
# state and from a contact schedule.
UPWARD_LATE_IMPORTS = {
    ("wholebody.trajectory", "wholebody.sim.mujoco"),
    ("wholebody.trajectory", "wholebody.schedule"),
}


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
    module = resolve(module) or module  # an old path (wholebody._aliases) counts as its home
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
        if name == "wholebody" or name.startswith("wholebody._aliases"):
            continue  # the package face and the compatibility paths name everything
        here = _unit(name)
        late = {t for t, _ in _imports(name, path)} - _top_level_imports(name, path)
        for target in _top_level_imports(name, path) | late:
            there = _unit(target)
            if there in ("", here) or layer[there] > layer[here]:
                continue
            if target in late and (name, target) in UPWARD_LATE_IMPORTS:
                continue
            offenders.append(f"{name} ({here}) imports {target} ({there})")
    assert not offenders, "\n".join(sorted(offenders))


def _inside(name: str, package: str) -> bool:
    return (name + ".").startswith(package + ".")


def test_private_modules_and_names_stay_in_their_package():
    """``wholebody.P._m`` is imported only from inside ``wholebody.P``, and a name ``_n`` only
    from inside the package of the module that defines it (top-level private modules such as
    ``_optional`` belong to ``wholebody`` itself, so to every module)."""
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
    """``Robot`` has no base class; each method is the function of its module, bound as is."""
    from wholebody.robot import Robot, _contact, _dynamics, _kinematics, _model, _state

    assert Robot.__bases__ == (object,)
    modules = (_model, _state, _dynamics, _kinematics, _contact)
    bound = {
        name
        for name, value in vars(Robot).items()
        if any(getattr(m, name, None) is value for m in modules)
    }
    assert {"mass_matrix", "check_q", "check_batch", "frame_jacobian", "contact_dynamics"} <= bound
    for name in bound:
        assert getattr(Robot, name).__code__.co_varnames[0] == "robot", name
