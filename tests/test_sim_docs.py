"""docs/simulators.md: each engine's recipe runs as written (the shared start, the engine's
block, the check) and its log is consistent, at the engine's floor; the saved log passes
``wholebody check`` with the command the page shows."""

from __future__ import annotations

import re
import shlex
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from ._engine_robots import sphere_feet_urdf

DOC = Path(__file__).resolve().parents[1] / "docs" / "simulators.md"
#: Median residual [N] each recipe must reach (measured: PyBullet 1e-12, Drake 4e-11; the
#: float32 engines ~1e-4 N: MJX 6e-5, Newton 3e-5).
FLOORS = {
    "PyBullet": ("pybullet", 1e-9),
    "Drake": ("pydrake.multibody.plant", 1e-9),
    "MJX": ("mujoco.mjx", 5e-4),
    "Newton": ("newton", 5e-4),
    "Genesis": ("genesis", 1e-9),
}
#: Engines whose recipe compiles for minutes (Genesis: ~3 min on a 2-core CPU).
SLOW = {"Genesis"}


def _blocks(text: str) -> dict[str, list[str]]:
    """Python blocks by section: "" for the page's start, else the heading's first word."""
    parts = re.split(r"^## ", text, flags=re.M)
    out = {"": re.findall(r"```python\n(.*?)```", parts[0], flags=re.S)}
    for part in parts[1:]:
        out[part.split()[0]] = re.findall(r"```python\n(.*?)```", part, flags=re.S)
    return out


@pytest.mark.parametrize(
    "engine", [pytest.param(e, marks=pytest.mark.slow) if e in SLOW else e for e in sorted(FLOORS)]
)
def test_recipe_runs_and_its_log_is_consistent(engine, tmp_path, monkeypatch, capsys):
    module, floor = FLOORS[engine]
    engine_module = pytest.importorskip(module)
    if engine == "Genesis" and engine_module._initialized:
        engine_module.destroy()  # the recipe calls gs.init, which refuses a second call
    blocks = _blocks(DOC.read_text())
    start, then = blocks[""][0], blocks[""][1]
    monkeypatch.chdir(tmp_path)
    sphere_feet_urdf(tmp_path, inertial_everywhere=True)
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for code in (start, blocks[engine][0], then):
            exec(compile(code, str(DOC), "exec"), namespace)
    report = namespace["report"]
    assert report.verdict == "consistent"
    assert np.median(report.force_norm) < floor
    command = re.search(r"```\n(wholebody check .*?)```", DOC.read_text(), flags=re.S)
    assert command is not None
    args = shlex.split(command.group(1).replace("\\\n", " "))[1:]
    from wholebody.cli import main

    monkeypatch.setattr(sys, "argv", ["wholebody", *args])
    capsys.readouterr()
    code = main(args)
    out = capsys.readouterr().out
    assert code in (0, None), out
    print(out)
    assert "inconsistent" not in out.lower() and "consistent" in out.lower()
