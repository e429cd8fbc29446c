"""The user pages say what a newcomer needs: the extra a feature needs, and every profile key.

- Every page a user reads (README.md and docs/*.md; not docs/architecture.md, the map of the
  code for contributors) that shows a feature living in an extra names that extra as
  ``wholebody[extra]``, and every extra it names exists in pyproject.toml.
- docs/profile.md documents every key the profile schema accepts, in the table of its section.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from wholebody.io.profile import SCHEMA
from wholebody.io.recordings.mapping import LEROBOT_KEYS, RECORDING_KEYS, WRENCH_KEYS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md"] + sorted(
    p for p in (ROOT / "docs").glob("*.md") if p.name != "architecture.md"
)

# What on a page shows a feature that needs an extra (the import it makes, by the feature's name).
NEEDS = {
    "parquet": r"LeRobot|\.parquet\b|\bParquet\b",
    "ros": r"ROS 2 bag|\bMCAP\b|\.mcap\b",
    "hdf5": r"\bHDF5\b|\.h5\b",
    "plot": r"--plot\b|\.plot\(|\bplot_schedule\b|\bplot_report\b",
    "dask": r"--dask\b|\bDask\b",
    "mujoco": r"\bimport mujoco\b|MujocoRecorder|mujoco_bridge",
    "progress": r"--progress\b|progress bar",
    "robots": r"example-robot-data",
}


def _extras_named(text: str) -> set[str]:
    return {
        e.strip()
        for group in re.findall(r"(?:wholebody|['`]\.)\[([a-z0-9_,\s-]+)\]", text)
        for e in group.split(",")
    }


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_each_page_names_the_extras_it_needs(page):
    text = page.read_text(encoding="utf-8")
    named = _extras_named(text)
    missing = sorted(
        f"{extra} (the page shows {re.search(pattern, text).group(0)!r})"  # type: ignore[union-attr]
        for extra, pattern in NEEDS.items()
        if re.search(pattern, text) and extra not in named
    )
    assert not missing, f"{page.name} does not name wholebody[...] for: {', '.join(missing)}"


def test_the_extras_named_exist():
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    assert set(NEEDS) <= extras
    for page in PAGES:
        unknown = _extras_named(page.read_text(encoding="utf-8")) - extras
        assert not unknown, f"{page.name} names unknown extras {sorted(unknown)}"


def _section(text: str, heading: str) -> str:
    """The text of the ``## `` section whose heading contains ``heading``."""
    parts = re.split(r"^## ", text, flags=re.M)
    found = [p for p in parts if p.splitlines()[0].find(heading) >= 0]
    assert len(found) == 1, f"no single section headed {heading!r}"
    return found[0]


def _documented(section: str) -> set[str]:
    """The keys in the first column of the section's tables."""
    keys: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            keys |= set(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
    return keys


@pytest.mark.parametrize(
    ("heading", "allowed"),
    [
        ("Top level", SCHEMA["top"]),
        ("`[[frames]]`", SCHEMA["frames"]),
        ("`[[contacts]]`", SCHEMA["contacts"]),
        ("`[sensors]`", SCHEMA["sensors"]),
        ("`[recording]`", {**RECORDING_KEYS, **LEROBOT_KEYS, **WRENCH_KEYS}),
    ],
)
def test_profile_reference_documents_every_key(heading, allowed):
    text = (ROOT / "docs" / "profile.md").read_text(encoding="utf-8")
    documented = _documented(_section(text, heading))
    missing = sorted(set(allowed) - documented)
    assert not missing, f"docs/profile.md, section {heading}: undocumented keys {missing}"
    extra = sorted(documented - set(allowed))
    assert not extra, f"docs/profile.md, section {heading}: keys the schema refuses {extra}"
