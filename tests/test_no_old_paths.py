"""The docs, examples, benchmarks and tests teach the new homes, not the compatibility paths
(`wholebody._aliases` serves those at run time for users' old code; type checkers do not
follow them, and a page that teaches them teaches what is kept for compatibility only)."""

from __future__ import annotations

import re
from pathlib import Path

from wholebody._aliases import ALIASES

ROOT = Path(__file__).resolve().parents[1]
_OLD = re.compile(
    r"(?<![\w.])("
    + "|".join(re.escape(k) for k in sorted(ALIASES, key=len, reverse=True))
    + r")(?![\w])"
)
_KEPT = {"tests/test_compat_paths.py", "tests/test_no_old_paths.py", "src/wholebody/_aliases.py"}


def _files() -> list[Path]:
    patterns = ("README.md", "docs/*.md", "examples/*.py", "benchmarks/*.py", "tests/*.py")
    found = [p for pattern in patterns for p in ROOT.glob(pattern)]
    found += list((ROOT / "src" / "wholebody").rglob("*.py"))
    return [p for p in found if str(p.relative_to(ROOT)) not in _KEPT]


def test_no_page_or_test_names_a_compatibility_path():
    offenders = [
        f"{p.relative_to(ROOT)}:{i}: {m.group(1)} (now {ALIASES[m.group(1)]})"
        for p in _files()
        for i, line in enumerate(p.read_text().splitlines(), 1)
        for m in _OLD.finditer(line)
    ]
    assert not offenders, "\n".join(offenders[:40])
