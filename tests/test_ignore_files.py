"""Ignore lines as careless or hostile workspaces write them: none may stop a snapshot.

No git needed here; tests/test_ignore_oracle.py compares the verdicts with git's.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from conftest import tree_modes, write

from snapshotter import SnapshotError, Snapshotter

ODD_LINES = [
    "notes \\    ",  # an escaped space, then unescaped ones
    "foo\\",  # a trailing lone backslash
    "\\",
    "trailing 3 \\\\\\\\ ",
    "[[:bogus:]]",
    "[unterminated",
    "a[",
    "!",
    "/",
    "//",
    "!/",
    "***",
    "[\\]]",
    "\\!",
    "[!]",
    "[]",
]


@pytest.mark.parametrize("line", ODD_LINES)
@pytest.mark.parametrize("source", ["gitignore", "nested gitignore", "info/exclude", "exclude="])
def test_no_ignore_line_makes_a_folder_impossible_to_snapshot(
    line: str,
    source: str,
    ws: Path,
    make,  # type: ignore[no-untyped-def]
) -> None:
    """git never rejects an ignore line; neither may we, from any source."""
    write(ws, {"keep.txt": "k\n", "sub/inner.txt": "i\n", ".git/HEAD": "ref: refs/heads/x\n"})
    exclude: tuple[str, ...] = ()
    if source == "gitignore":
        write(ws, {".gitignore": line + "\n"})
    elif source == "nested gitignore":
        write(ws, {"sub/.gitignore": line + "\n"})
    elif source == "info/exclude":
        write(ws, {".git/info/exclude": line + "\n"})
    else:
        exclude = (line,)
    try:
        snap = make(ws, exclude=exclude)
        info = snap.snapshot()
    except SnapshotError:
        raise
    except Exception as exc:  # exactly what must not reach the user
        pytest.fail(f"{type(exc).__name__} escaped for line {line!r}: {exc}")
    recorded = tree_modes(snap, info.tree_id)
    assert "keep.txt" in recorded or (line == "***" and source != "nested gitignore")


def test_a_line_that_cannot_be_compiled_is_skipped_with_a_warning(
    ws: Path,
    make,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Should a line ever defeat the translation, it is dropped with a warning naming
    its file and line, and every other line still applies."""
    from snapshotter import ignorelines

    real = ignorelines.parse_line

    def picky(line: bytes) -> ignorelines.Pattern | None:
        if line == b"boom":
            raise ValueError("cannot translate")
        return real(line)

    monkeypatch.setattr(ignorelines, "parse_line", picky)
    write(ws, {".gitignore": "*.log\nboom\n!keep.log\n", "a.log": "a\n", "keep.log": "k\n", "boom": "b\n"})
    with caplog.at_level(logging.WARNING, logger="snapshotter"):
        snap = make(ws, use_default_excludes=False)
        info = snap.snapshot()
    recorded = set(tree_modes(snap, info.tree_id))
    assert recorded == {".gitignore", "keep.log", "boom"}
    messages = [r.getMessage() for r in caplog.records if r.name == "snapshotter"]
    assert any(".gitignore" in m and "line 2" in m for m in messages), messages


def test_an_uncompilable_caller_pattern_warns_and_the_rest_apply(
    ws: Path,
    make,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from snapshotter import ignorelines

    real = ignorelines.parse_line

    def broken(line: bytes) -> ignorelines.Pattern | None:
        return ignorelines.Pattern("(", True, False) if line == b"y" else real(line)

    monkeypatch.setattr(ignorelines, "parse_line", broken)
    write(ws, {"x": "x\n", "y": "y\n", "z.log": "z\n", "w": "w\n"})
    with caplog.at_level(logging.WARNING, logger="snapshotter"):
        snap = make(ws, exclude=("x", "y", "*.log"), use_default_excludes=False)
        info = snap.snapshot()
    assert set(tree_modes(snap, info.tree_id)) == {"y", "w"}
    assert any("exclude=" in r.getMessage() and "line 2" in r.getMessage() for r in caplog.records)


def test_snapshotter_opens_with_odd_lines_everywhere(ws: Path, home: Path) -> None:
    """The constructor reads ``exclude=`` and ``.git/info/exclude`` at once: the report's case."""
    write(ws, {".git/info/exclude": "foo\\\n", ".gitignore": "notes \\    \n", "notes  ": "n\n", "a": "a\n"})
    with Snapshotter(ws, home=home, exclude=["bar\\"]) as snap:
        info = snap.snapshot()
        assert set(tree_modes(snap, info.tree_id)) == {".gitignore", "a"}
