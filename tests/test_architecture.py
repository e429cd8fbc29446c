"""The shape of the code, as the architecture document states it: no import cycles (function
level imports included), no private name imported from another module, no module much over
500 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "wholebody"
MAX_LINES = 520  # "under ~500 lines", with a little slack for a docstring


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in SRC.rglob("*.py")}


def _imports(name: str, path: Path) -> list[tuple[str, list[str]]]:
    """(imported module, names) for every import of ``wholebody`` modules, at any level."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
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


@pytest.mark.parametrize("name", sorted(_modules()))
def test_modules_are_small_enough_to_hold_in_mind(name):
    lines = len(_modules()[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines"
