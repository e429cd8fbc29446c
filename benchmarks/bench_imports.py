"""Modules a log through ``wholebody check`` imports, and the command line's import time.

Runs ``wholebody check data/humanoid_squat.npz --config models/humanoid.toml --json`` in a fresh
subprocess for each source tree and prints how many ``wholebody`` modules are in
``sys.modules`` when the command returns, and their names; how many of them run code (a
function of theirs is called, ``sys.setprofile``, other than while a module is being imported:
package faces and modules whose constants are read only do not), over the whole command and
within ``check_trajectory``'s call; then ``python -X importtime -c "import wholebody.cli"`` (the
cumulative time of ``wholebody.cli``) and the time spent in imports during the whole check (the
top-level entries of ``-X importtime`` summed), medians of 5 runs. Other trees (an earlier
commit, unpacked with ``git archive REV src models data | tar -x -C DIR``) are measured in the
same run::

    python benchmarks/bench_imports.py --tree before=/tmp/base --tree after=.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run inside the subprocess: the command, then the wholebody modules it left in sys.modules.
_COUNT = """
import sys
from wholebody.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
mods = sorted(m for m in sys.modules if m == "wholebody" or m.startswith("wholebody."))
sys.stderr.write("MODULES " + " ".join(mods) + "\\n")
"""

# Likewise, with the modules whose functions are called: over the whole command (RUN) and
# within check_trajectory's call (CHECK), calls made while a module is imported left out.
_RUNNING = """
import sys

ours = lambda m: m == "wholebody" or m.startswith("wholebody.")
run, check, inside = set(), set(), []

def importing(frame):
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") != "__main__":
            return True
        frame = frame.f_back
    return False

def profile(frame, event, arg):
    name = frame.f_globals.get("__name__", "")
    if event == "call" and frame.f_code.co_name != "<module>" and ours(name):
        if frame.f_code.co_name == "check_trajectory" and not inside:
            inside.append(frame)  # the check's own call, wherever it is defined
        if not importing(frame.f_back):
            run.add(name)
            if inside:
                check.add(name)
    elif event == "return" and inside and frame is inside[0]:
        inside.clear()

sys.setprofile(profile)
from wholebody.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.setprofile(None)
sys.stderr.write("RUN " + " ".join(sorted(run)) + "\\nCHECK " + " ".join(sorted(check)) + "\\n")
"""


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree / "src")
    return env


ARGS = ["check", "data/humanoid_squat.npz", "--config", "models/humanoid.toml", "--json"]


def check_modules(tree: Path, importtime: bool = False) -> tuple[list[str], float]:
    """The ``wholebody`` modules imported by one ``wholebody check`` of the shipped log, and
    with ``importtime`` the time spent importing (all modules, top-level entries summed) [us]."""
    flags = ["-X", "importtime"] if importtime else []
    done = subprocess.run(
        [sys.executable, *flags, "-c", _COUNT, *ARGS],
        cwd=tree,
        env=_env(tree),
        capture_output=True,
        text=True,
        timeout=600,
    )
    total = 0.0
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if line.startswith("import time:") and len(parts) == 3 and not parts[2].startswith("  "):
            if parts[1].strip().isdigit():  # a top-level import: its cumulative time
                total += float(parts[1])
        if line.startswith("MODULES "):
            return line.split()[1:], total
    raise RuntimeError(f"no module list from {tree}: {done.stderr[-2000:]}")


def running_modules(tree: Path) -> tuple[list[str], list[str]]:
    """The ``wholebody`` modules whose functions run during one ``wholebody check`` of the
    shipped log, and those that run within ``check_trajectory``'s call."""
    done = subprocess.run(
        [sys.executable, "-c", _RUNNING, *ARGS],
        cwd=tree,
        env=_env(tree),
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = dict(
        line.split(" ", 1) for line in done.stderr.splitlines() if line[:4] in ("RUN ", "CHEC")
    )
    if "RUN" not in lines:
        raise RuntimeError(f"no module list from {tree}: {done.stderr[-2000:]}")
    return lines["RUN"].split(), lines.get("CHECK", "").split()


def cli_import_us(tree: Path) -> float:
    """Cumulative import time of ``wholebody.cli`` [us] (``-X importtime``), one run."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import wholebody.cli"],
        cwd=tree,
        env=_env(tree),
        capture_output=True,
        text=True,
        timeout=600,
    )
    for line in done.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == "wholebody.cli":
            return float(parts[1])
    raise RuntimeError(f"no import time of wholebody.cli from {tree}: {done.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=DIR")
    parser.add_argument("--quiet", action="store_true", help="counts only, not the names")
    parser.add_argument("--repeats", type=int, default=11, help="timed runs per tree")
    options = parser.parse_args()
    trees = [
        (label, Path(where).resolve()) for label, where in (t.split("=", 1) for t in options.tree)
    ]
    trees = trees or [("this tree", ROOT)]
    for label, tree in trees:
        mods, _ = check_modules(tree)
        print(f"{label} ({tree}): {len(mods)} wholebody modules after `wholebody check`")
        if not options.quiet:
            print("  " + " ".join(mods))
        run, check = running_modules(tree)
        print(
            f"{label}: {len(run)} of them run code during the command, {len(check)} within "
            "check_trajectory's call"
        )
        if not options.quiet:
            print("  imported, not run: " + " ".join(m for m in mods if m not in run))
    # The timed runs alternate between the trees, so that a change of the machine's load
    # falls on all of them alike.
    cli: dict[str, list[float]] = {label: [] for label, _ in trees}
    during: dict[str, list[float]] = {label: [] for label, _ in trees}
    for _ in range(options.repeats):
        for label, tree in trees:
            cli[label].append(cli_import_us(tree) / 1000)
            during[label].append(check_modules(tree, importtime=True)[1] / 1000)
    for label, _ in trees:
        print(
            f"{label}: import wholebody.cli {statistics.median(cli[label]):.0f} ms (min "
            f"{min(cli[label]):.0f}), imports during `wholebody check` "
            f"{statistics.median(during[label]):.0f} ms (min {min(during[label]):.0f}); medians "
            f"of {options.repeats} runs alternating between the trees, -X importtime"
        )


if __name__ == "__main__":
    main()
