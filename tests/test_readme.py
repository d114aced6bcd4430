"""The README a new user reads first: every command it gives works as written
(what it needs installed is said), it says how long the test suite takes, and
it stays short (under 12 KiB)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"


def test_the_readme_says_what_build_needs_and_how_long_the_suite_takes() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) < 12288
    for found in re.finditer(r"python -m build", text):  # `build` is no standard module: it is installed first
        assert "pip install build" in text[max(0, found.start() - 40) : found.start()]
    suite = text.index("python -m pytest")
    assert re.search(r"about \d+ minutes on \d+ cores", text[suite - 200 : suite])
