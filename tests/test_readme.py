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
