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
