"""Build the API reference with pdoc and check that it is complete.

Run by ``make docs``: every public module of ``wholebody`` (no leading underscore) gets a page,
every name in each module's ``__all__`` must appear on its page, and any warning (a broken
include, a duplicated module) fails the build.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings
from pathlib import Path

import pdoc

import wholebody


def public_modules() -> list[str]:
    names = ["wholebody"]
    for info in pkgutil.walk_packages(wholebody.__path__, "wholebody."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return names


#: How pdoc renders a callable whose signature it cannot read: ``name(unknown)``.
_UNKNOWN_SIGNATURE = (
    '(<span class="param"><span class="n">unknown</span></span><span class="return-annotation">):'
)


def main(out: str) -> int:
    warnings.simplefilter("error")
    # Naming each submodule as well as the package makes pdoc note the repeats: not a defect.
    warnings.filterwarnings("ignore", message="The module specification")
    modules = public_modules()
    for name in modules:  # names imported on first access (PEP 562): pdoc reads __dict__
        module = importlib.import_module(name)
        for member in getattr(module, "__all__", []):
            getattr(module, member, None)
    pdoc.render.configure(docformat="numpy", show_source=True)
    pdoc.pdoc(*modules, output_directory=Path(out))
    missing = []
    for name in modules:
        module = importlib.import_module(name)
        page = Path(out, *name.split(".")).with_suffix(".html")
        if not page.is_file():
            missing.append(f"{name}: no page")
            continue
        html = page.read_text()
        if _UNKNOWN_SIGNATURE in html:  # pdoc could not read a signature
            missing.append(f"{name}: a signature pdoc could not read, '(unknown)'")
        for member in getattr(module, "__all__", []):
            if isinstance(getattr(module, member), type(sys)):
                if not Path(out, *f"{name}.{member}".split(".")).with_suffix(".html").is_file():
                    missing.append(f"{name}.{member}: no page")
                continue
            if f'id="{member}"' not in html:
                missing.append(f"{name}.{member}")
    if missing:
        print("names missing from the API reference:\n  " + "\n  ".join(missing), file=sys.stderr)
        return 1
    print(f"API reference: {len(modules)} modules in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/api"))
