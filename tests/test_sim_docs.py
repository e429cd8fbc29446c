"""docs/simulators.md: each engine's recipe runs as written (the page's profile for G1, a robot
not in this repository, written to robot.toml; the shared start, the engine's block, the
check) and its log is consistent, at the engine's floor; the saved log passes
``wholebody check`` with the command the page shows. Also ``examples/cross_engine.py``: an
engine that does not import is a row saying why, and the table is printed."""

from __future__ import annotations

import re
import shlex
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from wholebody.errors import MissingDependencyError
from wholebody.models.loading import example_robot_data_dir

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "simulators.md"
START = "Your robot in every engine"
#: Median residual [N] each recipe must reach on G1 standing (float64 engines: round-off;
#: the float32 ones ~1e-4 N) and the module it needs.
FLOORS = {
    "PyBullet": ("pybullet", 1e-9),
    "Drake": ("pydrake.multibody.plant", 1e-9),
    "MJX": ("mujoco.mjx", 5e-4),
    "MuJoCo Warp": ("mujoco_warp", 5e-4),
    "Newton": ("newton", 5e-4),
    "Genesis": ("genesis", 1e-9),
}
#: Engines whose recipe compiles for minutes on a CPU (Genesis ~3 min, Warp and MJX 1-3).
SLOW = {"Genesis", "MuJoCo Warp", "MJX", "Newton"}


def _sections(text: str) -> dict[str, str]:
    """The page's text by ``## `` heading ("" for the text before the first)."""
    parts = re.split(r"^## (.*)$", text, flags=re.M)
    return {"": parts[0], **{parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}}


def _blocks(section: str, language: str = "python") -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)


@pytest.mark.parametrize(
    "engine", [pytest.param(e, marks=pytest.mark.slow) if e in SLOW else e for e in sorted(FLOORS)]
)
def test_recipe_runs_and_its_log_is_consistent(engine, tmp_path, monkeypatch, capsys):
    module, floor = FLOORS[engine]
    try:
        example_robot_data_dir()
    except MissingDependencyError:
        pytest.skip("example-robot-data is not installed (the page's robot, G1)")
    engine_module = pytest.importorskip(module, exc_type=ImportError)  # Genesis without torch
    if engine == "Genesis" and engine_module._initialized:
        engine_module.destroy()  # the recipe calls gs.init, which refuses a second call
    sections = _sections(DOC.read_text())
    (tmp_path / "robot.toml").write_text(_blocks(sections[START], "toml")[0])
    start, then = _blocks(sections[START])
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the engines' own notes; G1's sensor links' warning
        for code in (start, _blocks(sections[engine])[0], then):
            exec(compile(code, str(DOC), "exec"), namespace)
    report = namespace["report"]
    assert report.verdict == "consistent", report.format_summary()
    assert np.median(report.force_norm) < floor
    assert namespace["robot"].name == "g1"  # the page's robot, not one of this repository
    command = re.search(r"```\n(wholebody check .*?)```", DOC.read_text(), flags=re.S)
    assert command is not None
    args = shlex.split(command.group(1).replace("\\\n", " "))[1:]
    from wholebody.cli import main

    monkeypatch.setattr(sys, "argv", ["wholebody", *args])
    capsys.readouterr()
    code = main(args)
    out = capsys.readouterr().out
    assert code in (0, None), out
    assert "verdict   consistent" in out


def test_cross_engine_skips_an_engine_that_does_not_import(tmp_path, monkeypatch, capsys):
    """Issue 36: an engine installed but not importable (Genesis without torch) is a row
    saying why; the other engines run, the table is printed and the exit code is 0."""
    pytest.importorskip("mujoco")
    (tmp_path / "broken_engine").mkdir()
    (tmp_path / "broken_engine" / "__init__.py").write_text(
        "raise ImportError(\"'torch' module not available\")\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    import cross_engine

    def never(*args):
        raise AssertionError("an engine that does not import was run")

    monkeypatch.setitem(cross_engine.ENGINES, "broken", (("broken_engine",), never))
    monkeypatch.setitem(cross_engine.ENGINES, "absent", (("no_such_engine_here",), never))
    monkeypatch.setenv("WHOLEBODY_ENGINES", "mujoco,broken,absent")
    assert cross_engine.main() == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:5] == ["engine", "dtype", "median", "N", "max"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert rows["mujoco"].split()[4] == "consistent"
    assert (
        "skipped  installed but not importable: ImportError: 'torch' module not available"
        in (" ".join(rows["broken"].split()[1:]))
        or "installed but not importable: ImportError: 'torch' module not available"
        in rows["broken"]
    )
    assert "not installed (no_such_engine_here)" in rows["absent"]
