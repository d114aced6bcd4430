"""Ignore files as hostile or careless workspaces leave them: pipes, huge files, odd lines.

No git needed here; tests/test_ignore_oracle.py compares the verdicts with git's.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import plain_ids, tree_modes, write

import snapshotter
from snapshotter import SnapshotError, Snapshotter
from snapshotter.engine.worktree import ignore as ignore_module

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")

HANG_LIMIT = 30
"""Seconds a snapshot, status and restore of a small workspace may take before
the test calls it a hang (they take about one)."""

SNAPSHOT_STATUS_RESTORE = r"""
import logging, sys
logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
from snapshotter import Snapshotter
ws, home = sys.argv[1], sys.argv[2]
with Snapshotter(ws, home=home) as snap:
    first = snap.snapshot("a pipe among the ignore files")
    with open(ws + "/new.txt", "w") as handle:
        handle.write("new\n")
    changes = snap.status()
    snap.restore(first.id)
    print(sorted(c.path for c in changes))
"""


def _run_with_a_limit(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``script`` in a child process using this very package, killed (and the test
    failed) if it hangs: a thread blocked in ``open`` could not be stopped."""
    env = dict(os.environ, PYTHONPATH=str(Path(snapshotter.__file__).parent.parent))
    try:
        return subprocess.run(
            [sys.executable, "-c", script, *args],
            capture_output=True,
            text=True,
            timeout=HANG_LIMIT,
            check=False,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for {HANG_LIMIT} s on a named pipe")


@needs_fifo
@pytest.mark.parametrize(
    "where",
    [".gitignore", "src/deep/.gitignore", ".git/info/exclude"],
    ids=plain_ids([".gitignore", "src/deep/.gitignore", ".git/info/exclude"], str),
)
def test_a_named_pipe_as_ignore_file_neither_hangs_nor_applies(where: str, ws: Path, tmp_path: Path) -> None:
    """Opening a FIFO for reading blocks until a writer comes: git itself hangs on one.
    Here it is opened non-blocking, found not to be a regular file, and skipped
    with a warning, at the root, deeper down, and as ``.git/info/exclude``."""
    write(ws, {"a.txt": "a\n", "src/deep/b.txt": "b\n", "src/c.log": "c\n", ".git/HEAD": "ref: refs/heads/x\n"})
    (ws / where).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(ws / where)
    result = _run_with_a_limit(SNAPSHOT_STATUS_RESTORE, str(ws), str(tmp_path / "home"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['new.txt']"
    assert not (ws / "new.txt").exists()  # the restore ran
    assert "not a regular file" in result.stderr and where.rpartition("/")[2] in result.stderr


@needs_fifo
def test_read_ignore_file_on_a_pipe_returns_at_once(tmp_path: Path) -> None:
    """The same when the pipe is swapped in after the listing saw a regular file:
    nothing is judged by its kind before it is opened, so the open itself must not block."""
    script = (
        "import sys; from snapshotter.engine.worktree.ignore import read_ignore_file; "
        "print(repr(read_ignore_file(sys.argv[1])))"
    )
    os.mkfifo(tmp_path / ".gitignore")
    result = _run_with_a_limit(script, str(tmp_path / ".gitignore"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "b''"


def test_an_ignore_file_over_the_cap_applies_its_whole_lines_below_it(
    ws: Path,
    make,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(ignore_module, "MAX_IGNORE_FILE_BYTES", 64)
    lines = ["a.txt", "b.txt", "#" + "x" * 40, "cut-in-the-middle.txt", "after-the-cap.txt"]
    files = {name: "x\n" for name in ["a.txt", "b.txt", "c.txt", "cut-in-the-middle.txt", "after-the-cap.txt"]}
    write(ws, {".gitignore": "\n".join(lines) + "\n", **files})
    assert len((ws / ".gitignore").read_bytes()) > 64
    with caplog.at_level(logging.WARNING, logger="snapshotter"):
        info = make(ws, use_default_excludes=False).snapshot()
    recorded = set(tree_modes(make(ws, use_default_excludes=False), info.tree_id))
    # "cut-in-the-middle.txt" straddles the cap: a partial line is never applied as a pattern.
    assert recorded == {".gitignore", "c.txt", "cut-in-the-middle.txt", "after-the-cap.txt"}
    assert any("larger than" in r.getMessage() and ".gitignore" in r.getMessage() for r in caplog.records)


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


@pytest.mark.parametrize("line", ODD_LINES, ids=plain_ids(ODD_LINES))
@pytest.mark.parametrize(
    "source", SOURCES := ["gitignore", "nested gitignore", "info/exclude", "exclude="], ids=plain_ids(SOURCES, str)
)
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
    from snapshotter.engine.worktree import ignorelines

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
    from snapshotter.engine.worktree import ignorelines

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


def test_an_ignore_file_that_is_a_symlink_is_not_followed(
    ws: Path,
    tmp_path: Path,
    make,  # type: ignore[no-untyped-def]
    caplog: pytest.LogCaptureFixture,
) -> None:
    """git refuses a symlinked in-tree .gitignore too (t0008, "symlinks not respected in-tree")."""
    (tmp_path / "elsewhere").write_text("*.txt\n")
    write(ws, {"sub/a.txt": "a\n"})
    os.symlink(tmp_path / "elsewhere", ws / "sub" / ".gitignore")
    with caplog.at_level(logging.WARNING, logger="snapshotter"):
        snap = make(ws)
        info = snap.snapshot()
    assert "sub/a.txt" in tree_modes(snap, info.tree_id)
    assert any("symbolic link" in r.getMessage() for r in caplog.records)


def test_snapshotter_opens_with_odd_lines_everywhere(ws: Path, home: Path) -> None:
    """The constructor reads ``exclude=`` and ``.git/info/exclude`` at once: the report's case."""
    write(ws, {".git/info/exclude": "foo\\\n", ".gitignore": "notes \\    \n", "notes  ": "n\n", "a": "a\n"})
    with Snapshotter(ws, home=home, exclude=["bar\\"]) as snap:
        info = snap.snapshot()
        assert set(tree_modes(snap, info.tree_id)) == {".gitignore", "a"}
