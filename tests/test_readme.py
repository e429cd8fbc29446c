"""The README's python blocks run, in order, and print exactly the text block after each."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_examples_print_what_the_readme_shows():
    text = README.read_text()
    pairs = re.findall(
        r"```python\n(.*?)```\s*\n(?:prints\s*\n)?\s*```text\n(.*?)```", text, flags=re.S
    )
    assert len(pairs) >= 4, "the README's tutorial blocks are missing"
    namespace: dict = {}  # the tutorial's blocks build on each other
    for code, expected in pairs:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(README), "exec"), namespace)
        assert out.getvalue() == expected


def test_readme_shows_what_make_demo_prints(tmp_path, monkeypatch):
    from wholebody.cli.demo import run_demo

    shown = README.read_text().split("`make demo` prints:\n\n```text\n")[1].split("```")[0]
    monkeypatch.chdir(README.parent)  # the demo names its log relative to the working directory
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run_demo(out_dir=tmp_path / "demo")
    # All but the last line, which names the output folder.
    assert out.getvalue().strip().splitlines()[:-1] == shown.strip().splitlines()[:-1]


def test_install_lines_work_from_this_repository():
    """Issue 36: wholebody is not on PyPI: every install line installs from a clone (``pip
    install -e '.[...]'`` or ``pip install .``), and every extra named exists."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    extras = set(
        tomllib.loads((README.parent / "pyproject.toml").read_text())["project"][
            "optional-dependencies"
        ]
    )
    pages = [README, *sorted((README.parent / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text()
        assert not re.search(r"pip install '?wholebody", text), page.name  # not on PyPI
        for group in re.findall(r"(?:wholebody|['`]\.)\[([a-z0-9_,\s-]+)\]", text):
            named = {e.strip() for e in group.split(",")}
            assert named <= extras, (page.name, named - extras)
    assert "pip install -e '.[" in README.read_text()
