"""Build hook: compile ``wholebody._speedups`` (src/wholebody/_speedups.c) when a C compiler
is there.

Hatchling runs :class:`SpeedupsHook` for wheels (``[tool.hatch.build.targets.wheel.hooks.
custom]`` in pyproject.toml). It compiles the one C file with the running Python's own
compiler settings (sysconfig: CC/LDSHARED, the include directory, EXT_SUFFIX). An editable
install (``pip install -e .``) puts the module next to the sources, in src/wholebody/, where
the editable install imports from; a normal wheel gets it inside, tagged for this Python and
platform. Without a compiler (or when compiling fails) the install still succeeds, with a
warning: wholebody then checks states in Python (the same checks, slower;
``wholebody.robot._state.SPEEDUPS`` says which is active).

Run as a script (``python hatch_build.py``) it compiles the module in place for the Python
that runs it: a checkout used through ``PYTHONPATH=src`` or an existing editable install.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
SOURCE = ROOT / "src" / "wholebody" / "_speedups.c"
MODULE = "_speedups"


def extension_name() -> str:
    """The module's file name for the running Python (``_speedups.cpython-311-...so``)."""
    return MODULE + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def compile_speedups(out_dir: Path) -> Path | None:
    """Compile the extension into ``out_dir``; its path, or None (with a warning) on failure.

    The command is the running Python's: ``LDSHARED`` (compiler and shared-library flags, as
    distutils uses them) with ``CCSHARED`` (-fPIC), the include directory, -O2 and
    -ffp-contract=off (the quaternion norm is summed as the Python fallback sums it: no fused
    multiply-add). ``CC`` overrides the compiler as in distutils.
    """
    ldshared = sysconfig.get_config_var("LDSHARED")
    include = sysconfig.get_paths().get("include")
    if not ldshared or not include or os.name == "nt":
        _warn("this Python's sysconfig names no C compiler (LDSHARED)")
        return None
    cmd = shlex.split(ldshared)
    if os.environ.get("CC"):
        cmd[0:1] = shlex.split(os.environ["CC"])
    cmd += shlex.split(sysconfig.get_config_var("CCSHARED") or "")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / extension_name()
    # Written beside the target, then renamed: a running process keeps its old module.
    tmp = out_dir / (extension_name() + ".tmp")
    # The source's hash, compiled in: wholebody leaves a module built from another source
    # (an edited _speedups.c whose rebuild failed) unused.
    sha = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    cmd += ["-O2", "-ffp-contract=off", f'-DWB_SOURCE_SHA256="{sha}"', f"-I{include}"]
    cmd += [str(SOURCE), "-o", str(tmp), "-lm"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        _warn(f"{cmd[0]} could not run ({exc})")
        return None
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        _warn(f"{' '.join(cmd)} failed:\n{proc.stderr.strip()}")
        return None
    os.replace(tmp, target)
    return target


def _warn(why: str) -> None:
    message = (
        f"wholebody: the C state checks (wholebody._speedups) were not built: {why}. "
        "wholebody works without them and checks states in Python (slower)."
    )
    print(f"WARNING: {message}", file=sys.stderr)


try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # run as a script without hatchling: only compile_speedups is needed
    BuildHookInterface = object  # type: ignore[misc,assignment]


class SpeedupsHook(BuildHookInterface):  # type: ignore[misc,valid-type]
    """Compile the extension into editable (in place) and normal (inside) wheels."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        if version == "editable":
            built = compile_speedups(SOURCE.parent)
        else:
            self._tmp = tempfile.TemporaryDirectory(prefix="wholebody-speedups-")
            built = compile_speedups(Path(self._tmp.name))
            if built is not None:
                build_data["force_include"][str(built)] = f"wholebody/{built.name}"
        if built is not None:
            # A compiled module: the wheel is for this Python and platform only.
            build_data["pure_python"] = False
            build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    built = compile_speedups(SOURCE.parent)
    print(built if built is not None else "not built: wholebody uses the Python checks")
    sys.exit(0 if built is not None else 1)
