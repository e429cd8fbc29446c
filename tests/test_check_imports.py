"""The path of a log through ``wholebody check`` imports only what it uses (issue 25), so the
count cannot creep back: formats, recordings, identification, the diagnosis causes and the
MJCF reader are imported on first use. ``benchmarks/bench_imports.py`` prints the list."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Measured 69 on the shipped log (consistent: no diagnosis) after the lazy imports of issue 25
# (102 before them, on 947ee70); the margin of 4 leaves room for a small new module, not for a
# package face that imports its siblings again.
MAX_CHECK_MODULES = 73

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


def _check_modules(*args: str) -> tuple[int, list[str]]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run(
        [sys.executable, "-c", _COUNT, "check", *args, "--json"],
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
    ]
    assert [m for m in unused if m in check_modules] == []


@pytest.mark.parametrize(
    "face", ["wholebody.balance", "wholebody.io", "wholebody.io.recordings", "wholebody.check"]
)
def test_lazy_faces_give_every_public_name(face):
    # Every name of a lazy face resolves, from the module that defines it, and is listed.
    module = importlib.import_module(face)
    for name in module.__all__:
        assert getattr(module, name) is not None, (face, name)
    assert set(getattr(module, "_LAZY", {})) <= set(module.__all__) | set(dir(module))
