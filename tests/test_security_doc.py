"""SECURITY.md names, for each promise, the tests that prove it: those tests exist.

A name there is ``tests/file.py::test_name``, or ``::test_name`` for one in the
file named last before it; a name ending in ``...`` stands for every test it begins.
A renamed or deleted test would leave a promise proved by nothing, silently.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_REFERENCE = re.compile(r"`(tests/[\w/]+\.py)?(?:::(\w+)(\.\.\.)?)?(?:\[[^\]`]*\])?`")


def _references() -> list[tuple[str, str, bool]]:
    """(file, test name, is a prefix) for every test SECURITY.md names."""
    found = []
    current = None
    for match in _REFERENCE.finditer((ROOT / "SECURITY.md").read_text(encoding="utf-8")):
        path, name, prefix = match.groups()
        if path is not None:
            current = path
        if name is not None:
            assert current is not None, f"{match.group(0)} follows no test file"
            found.append((current, name, prefix is not None))
    return found


def test_every_test_security_md_names_exists() -> None:
    references = _references()
    assert len(references) > 20, "the pattern no longer finds SECURITY.md's test names"
    missing = []
    for path, name, prefix in references:
        source = ROOT / path
        pattern = rf"^(?:async )?def {re.escape(name)}" + ("" if prefix else r"\(")
        if not source.is_file() or not re.search(pattern, source.read_text(encoding="utf-8"), re.M):
            missing.append(f"{path}::{name}{'...' if prefix else ''}")
    assert not missing, f"SECURITY.md names tests that do not exist: {missing}"
