"""Diff and status reuse what a snapshot reuses, and skip what did not change.

A diff (or status) against the newest snapshot takes the stat cache and the
cached folder trees exactly as a snapshot does: with nothing changed it hashes
no file, lists no folder and reads no stored tree (the root ids agree); with a
few changes it lists only the folders whose entries changed, hashes only the
changed files, and reads only the stored trees on their paths. In watch mode
the newest recorded scan stands in for the stored tree. Whatever the shortcut,
the result is git's ``diff --numstat`` (the oracle, skipped without git).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import git, git_env, needs_git, write

from snapshotter import FileDiff, Snapshotter, watch_available
from snapshotter.engine import fsutil
from snapshotter.engine.compare.treediff import StoredTree
from snapshotter.engine.gitstore.objectstore import StoredObjects

SYMLINKS = hasattr(os, "symlink") and sys.platform != "win32"


def _settle() -> None:
    """Let folders and files age past the trust and racy windows."""
    time.sleep(fsutil.RECENT_NS / 1e9 + 0.05)


def _tree() -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {f"d{i}/sub/f{j}.txt": f"{i} {j}\nline\n" for i in range(6) for j in range(3)}
    files.update({f"d{i}/top.txt": f"top {i}\n" for i in range(6)})
    files["root.txt"] = "root\n"
    files["bin.dat"] = b"\0\1\2"
    return files


@pytest.fixture
def tree_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """The ids of every tree object read from a store while the test runs."""
    read: list[bytes] = []
    parse = StoredTree._parse

    def counting(self: StoredTree, handle: bytes) -> object:
        read.append(handle)
        return parse(self, handle)

    monkeypatch.setattr(StoredTree, "_parse", counting)
    yield read


def _settled_snapshot(ws: Path, make: Callable[..., Snapshotter]) -> str:
    """The standard tree snapshotted and settled; returns the snapshot's id."""
    write(ws, _tree())
    _settle()
    with make() as snap:
        snap.snapshot()
        _settle()
        return snap.snapshot().id


def test_nothing_changed_hashes_lists_and_reads_nothing(ws: Path, make, tree_reads: list[bytes]) -> None:  # type: ignore[no-untyped-def]
    before = _settled_snapshot(ws, make)
    tree_reads.clear()
    snap = make()  # a fresh instance: the stat cache comes from disk, as in a one-shot command
    assert snap.diff(before) == []
    scan = snap.last_scan
    assert (scan.files_hashed, scan.dirs_listed, scan.files_seen) == (0, 0, 26)
    assert snap.status() == []
    assert (snap.last_scan.files_hashed, snap.last_scan.dirs_listed) == (0, 0)
    assert tree_reads == []  # the root ids agree: no stored tree is read


def test_a_few_changes_touch_only_their_folders(ws: Path, make, tree_reads: list[bytes]) -> None:  # type: ignore[no-untyped-def]
    before = _settled_snapshot(ws, make)
    with open(ws / "d1/sub/f0.txt", "a") as handle:  # content only: its folder's own stat does not move
        handle.write("more\n")
    (ws / "d3/new.txt").write_text("new\n")
    os.unlink(ws / "d4/sub/f2.txt")
    tree_reads.clear()
    snap = make()
    found = {d.path: (d.status.value, d.additions, d.deletions) for d in snap.diff(before)}
    assert found == {
        "d1/sub/f0.txt": ("modified", 1, 0),
        "d3/new.txt": ("added", 1, 0),
        "d4/sub/f2.txt": ("deleted", 0, 2),
    }
    scan = snap.last_scan
    assert scan.dirs_seen == 13
    assert scan.dirs_listed == 2  # d3 and d4/sub: the folders whose entries changed
    assert scan.files_hashed == 2  # the edited file and the new one
    # Only the stored trees on the changed paths: the root, d1, d1/sub, d3, d4, d4/sub.
    assert len(tree_reads) == len(set(tree_reads)) == 6
    assert [(c.path, c.status.value) for c in snap.status()] == [(p, s) for p, (s, _, _) in sorted(found.items())]


def _git_numstat(ws: Path, shadow: Path, tree: str, env: dict[str, str]) -> dict[str, tuple[str, str]]:
    base = ["--git-dir", str(shadow), "--work-tree", str(ws)]
    git(*base, "add", "-A", env=env)  # new files enter git's index, so `diff <tree>` sees them
    out = git(*base, "diff", "--no-renames", "--numstat", tree, env=env)
    theirs = {}
    for line in out.splitlines():
        added, deleted, path = line.split("\t")
        theirs[path] = (added, deleted)
    return theirs


def _shadow(ws: Path, tmp_path: Path) -> tuple[Path, str, dict[str, str]]:
    """A bare shadow repository whose index holds the workspace now; its tree."""
    env = git_env(tmp_path)
    shadow = tmp_path / "shadow.git"
    git("init", "-q", "--bare", str(shadow), env=env)
    (shadow / "info" / "exclude").write_text(".git\n")
    base = ["--git-dir", str(shadow), "--work-tree", str(ws)]
    git(*base, "add", "-A", env=env)
    return shadow, git(*base, "write-tree", env=env).strip(), env


def _change_everything(ws: Path) -> None:
    """Edits, deletes, adds, mode changes, a folder gone and a folder new."""
    with open(ws / "d0/sub/f1.txt", "a") as handle:
        handle.write("added line\n")
    (ws / "d2/top.txt").write_text("rewritten\nentirely\n")
    (ws / "bin.dat").write_bytes(b"\0\3\4")
    os.unlink(ws / "d1/sub/f2.txt")
    for name in ("f0.txt", "f1.txt", "f2.txt"):
        os.unlink(ws / "d5/sub" / name)
    os.rmdir(ws / "d5/sub")
    write(ws, {"d0/added.txt": "a\nb\nc\n", "fresh/deep/x.txt": "x\n"})
    os.chmod(ws / "d3/sub/f0.txt", 0o755)
    os.chmod(ws / "run.sh", 0o644)
    if SYMLINKS:
        os.unlink(ws / "link")
        os.symlink("d1/top.txt", ws / "link")


Oracle = tuple[str, Path, str, dict[str, str]]
"""The settled snapshot's id, git's shadow repository, its tree (the same), git's environment."""


def _prepare_oracle(ws: Path, tmp_path: Path, make: Callable[..., Snapshotter]) -> Oracle:
    write(ws, _tree())
    (ws / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(ws / "run.sh", 0o755)
    if SYMLINKS:
        os.symlink("root.txt", ws / "link")
    _settle()
    with make() as snap:
        snap.snapshot()
        _settle()
        info = snap.snapshot()
    shadow, tree, env = _shadow(ws, tmp_path)
    assert info.tree_id == tree
    return info.id, shadow, tree, env


def _ours(found: list[FileDiff]) -> dict[str, tuple[str, str]]:
    return {d.path: ("-", "-") if d.binary else (str(d.additions), str(d.deletions)) for d in found}


@needs_git
def test_one_shot_diff_after_the_shortcut_matches_git(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    before, shadow, tree, env = _prepare_oracle(ws, tmp_path, make)
    snap = make()
    assert snap.diff(before) == []
    assert snap.last_scan.files_hashed == 0
    _change_everything(ws)
    theirs = _git_numstat(ws, shadow, tree, env)
    assert len(theirs) >= 10
    assert _ours(make().diff(before)) == theirs  # a fresh instance, as a command would be
    assert _ours(snap.diff(before)) == theirs  # the same instance, its stat cache loaded
    assert sorted(c.path for c in snap.status()) == sorted(theirs)


@needs_git
@pytest.mark.skipif(not watch_available(), reason="watch mode needs watchdog 7.1 (Python 3.11+)")
@pytest.mark.skipif(sys.platform == "darwin", reason="FSEvents delivers events late; covered on Linux")
def test_watch_mode_diff_compares_in_memory_and_matches_git(  # type: ignore[no-untyped-def]
    ws: Path, tmp_path: Path, make, tree_reads: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    before, shadow, tree, env = _prepare_oracle(ws, tmp_path, make)
    snap = make(watch=True)
    if not snap.watching:
        pytest.skip("the watcher did not start here")
    info = snap.snapshot()  # the watcher's base: the same tree as ``before``
    assert info.tree_id == tree
    reads: list[bytes] = []
    read_raw = StoredObjects.read_raw

    def counting(self: StoredObjects, sha: bytes, *args: object) -> tuple[int, bytes]:
        found = read_raw(self, sha, *args)  # type: ignore[arg-type]
        if found[0] == 2:
            reads.append(sha)
        return found

    monkeypatch.setattr(StoredObjects, "read_raw", counting)
    assert snap.diff(before) == []
    _change_everything(ws)
    theirs = _git_numstat(ws, shadow, tree, env)
    tree_reads.clear()
    found = snap.diff(before)
    assert snap.last_scan.incremental
    assert _ours(found) == theirs
    assert tree_reads == reads == []  # the newest recorded scan stood in for the stored tree
    assert sorted(c.path for c in snap.status()) == sorted(theirs)
    # An older snapshot is not held in memory: read from the store, the same answer as git's.
    (ws / "root.txt").write_text("root\nagain\n")
    older = snap.snapshot()
    found = snap.diff(before)
    assert tree_reads
    assert _ours(found) == _git_numstat(ws, shadow, tree, env)
    assert older.tree_id != tree
