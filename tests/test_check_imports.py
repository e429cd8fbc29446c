"""The path of a log through ``wholebody check`` imports only what it uses (issue 25), so the
count cannot creep back: formats, recordings, identification, the diagnosis causes, the MJCF
reader, the other commands' arguments and the code that writes the shipped models are imported
on first use. ``benchmarks/bench_imports.py`` prints the lists."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The count on the shipped log (consistent: the notes, no diagnosis) is the cap: a new module
# on this path is a decision, made here. The faces import plainly (`check` brings `check.many`,
# `conventions` brings `conventions.differentiation`); the check is split by idea (`options`,
# `sources`, `engine`, `evidence`, `report_text`).
MAX_CHECK_MODULES = 49
# Of those, the modules a function of which runs (sys.setprofile, calls made while a module is
# imported left out); the others are package faces, errors, spatial and robot._checks (names and
# constants read).
MAX_CHECK_RUNNING = 31

_COUNT = """
import sys
from wholebody.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
mods = sorted(m for m in sys.modules if m == "wholebody" or m.startswith("wholebody."))
sys.stderr.write(f"EXIT {code}\\nMODULES " + " ".join(mods) + "\\n")
"""

# The modules whose functions run during the command (not while a module is imported).
_RUNNING = """
import sys
run = set()

def importing(frame):
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") != "__main__":
            return True
        frame = frame.f_back
    return False

def profile(frame, event, arg):
    if event == "call" and frame.f_code.co_name != "<module>":
        name = frame.f_globals.get("__name__", "")
        if name.startswith("wholebody") and not importing(frame.f_back):
            run.add(name)

sys.setprofile(profile)
from wholebody.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
sys.setprofile(None)
sys.stderr.write(f"EXIT {code}\\nMODULES " + " ".join(sorted(run)) + "\\n")
"""


def _check_modules(*args: str, script: str = _COUNT) -> tuple[int, list[str]]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run(
        [sys.executable, "-c", script, "check", *args, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = dict(
        line.split(" ", 1) for line in done.stderr.splitlines() if line[:5] in ("EXIT ", "MODUL")
    )
    return int(lines["EXIT"]), lines["MODULES"].split()


@pytest.fixture(scope="module")
def check_modules() -> list[str]:
    code, mods = _check_modules("data/humanoid_squat.npz", "--config", "models/humanoid.toml")
    assert code == 0
    return mods


def test_check_imports_at_most_n_wholebody_modules(check_modules):
    assert len(check_modules) <= MAX_CHECK_MODULES, check_modules


def test_check_runs_code_of_at_most_n_wholebody_modules(check_modules):
    code, running = _check_modules(
        "data/humanoid_squat.npz", "--config", "models/humanoid.toml", script=_RUNNING
    )
    assert code == 0
    assert set(running) <= set(check_modules)
    assert len(running) <= MAX_CHECK_RUNNING, running


def test_check_of_an_npz_log_leaves_unused_features_unimported(check_modules):
    # Each of these is needed by another command or another input, never by this one; if one
    # comes back, an eager import brought it.
    unused = [
        "wholebody.identify",  # `fit` and calibration files
        "wholebody.io.recordings.rosbag",  # bags
        "wholebody.io.recordings.lerobot",  # datasets
        "wholebody.io.logfiles.csvfile",  # other formats
        "wholebody.io.logfiles.parquet",
        "wholebody.io.logfiles.hdf5",
        "wholebody.diagnosis.causes",  # a diagnosis (this log is consistent)
        "wholebody.robot.mjcf",  # an MJCF model
        "wholebody.balance.reactions",
        "wholebody.models.anthropometric",  # anthropometric models
        "wholebody.check.plots",  # --plot, --html
        "wholebody.check.report_html",
        "wholebody.sim",
        "wholebody.estimation",
        "wholebody.io.recordings",  # asked only for a path that is not a log file
        "wholebody.cli.fit",  # the arguments of other commands
        "wholebody.cli.contacts",
        "wholebody.models._build",  # the code that writes the shipped models
        "wholebody.models.urdf_writer",
        "wholebody.diagnosis.causes_fitted",  # the causes (the notes need none of them)
        "wholebody.diagnosis.causes_discrete",
        "wholebody.robot.differentiation",  # a log without accelerations
        "wholebody._optional",  # optional packages (pandas, plotly, ...)
        "wholebody._aliases",  # the module paths of earlier releases
        "wholebody.robot._dynamics",  # methods bound on first use: none is called here
        "wholebody.robot._kinematics",
        "wholebody.robot._contact",
        "wholebody.robot._controller_pass",
    ]
    assert [m for m in unused if m in check_modules] == []


@pytest.mark.parametrize(
    "face",
    [
        "wholebody.balance",
        "wholebody.io",
        "wholebody.io.recordings",
        "wholebody.check",
        "wholebody.conventions",
        "wholebody.robot",
        "wholebody.robot.core",
        "wholebody.models",
    ],
)
def test_lazy_faces_give_every_public_name(face):
    # Every name of a lazy face resolves, to the object of the module that defines it, and
    # every name imported on first use is listed in __all__.
    module = importlib.import_module(face)
    for name in module.__all__:
        value = getattr(module, name)
        assert value is not None, (face, name)
        home = getattr(value, "__module__", None)
        if isinstance(home, str) and home.startswith("wholebody."):
            assert getattr(importlib.import_module(home), name, value) is value, (face, name)
    assert set(getattr(module, "_LAZY", {})) <= set(module.__all__), face
