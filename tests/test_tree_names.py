"""Names in stored trees: what refuses a restore, what is left out, and trees that
never end (issue: a backslash disabled rollback; git~1 and .g\\u200cit passed;
a tree containing itself grew to gigabytes, a deep chain raised RecursionError)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import GIT, forge_snapshot, git, git_env, git_shadow_tree, read_tree, write

from snapshotter import StoreError, UnsafeTree
from snapshotter.engine.gitstore.objects import MODE_FILE, MODE_TREE, serialize_tree
from snapshotter.engine.worktree import hostfs
from snapshotter.engine.worktree.pathnames import is_hfs_dotgit, is_ntfs_dotgit


@pytest.fixture(autouse=True)
def posix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hostfs, "detect", lambda root: hostfs.POSIX)


def test_a_backslash_is_an_ordinary_character_on_posix(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a\\b": "in a file named a-backslash-b\n", "dir\\x/f.txt": "f\n", "plain.txt": "p\n"})
    snap = make()
    first = snap.snapshot()
    if GIT is not None:  # git records these names too
        assert first.tree_id == git_shadow_tree(ws, tmp_path / "oracle")
    write(ws, {"a\\b": "edited\n", "plain.txt": "edited\n"})
    (ws / "dir\\x/f.txt").unlink()
    snap.checkpoint()
    result = snap.restore(first.id)
    assert result.skipped == () and read_tree(ws)["a\\b"] == ("file", b"in a file named a-backslash-b\n")
    assert (ws / "dir\\x/f.txt").read_text() == "f\n"
    write(ws, {"a\\b": "again\n"})
    snap.restore(first.id, files=["a\\b"])  # a selective restore of such a name
    assert (ws / "a\\b").read_text() == "in a file named a-backslash-b\n"
    assert snap.undo().ok  # and undo, which refused the whole snapshot before


def test_gits_spellings_of_dotgit_are_refused_in_trees_on_every_platform() -> None:
    for name in ("git~1", "GIT~1", "Git~1", ".git.", ".git ", ".GIT", "git~1:stream"):
        assert is_ntfs_dotgit(name), name
    for name in (".g\u200cit", "\u200c.git", ".gi\ufefft", ".G\u200dIT"):
        assert is_hfs_dotgit(name), name
    for name in (".github", "git~10", ".gitignore", "git", "git~2", ".g\u00e9t"):
        assert not is_ntfs_dotgit(name) and not is_hfs_dotgit(name), name


@pytest.mark.parametrize("spelling", ["git~1", "GIT~1", ".g\u200cit", ".git."])
def test_a_tree_holding_a_dotgit_spelling_restores_everything_else(ws: Path, make, spelling: str) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"keep.txt": "k"})
    snap = make()
    writer = snap._engine_ok().store.writer
    hooks = writer.write(b"tree", serialize_tree([(b"pre-commit", 0o100755, writer.write(b"blob", b"#!/bin/sh\n"))]))
    inner = writer.write(b"tree", serialize_tree([(b"hooks", MODE_TREE, hooks)]))
    forged = forge_snapshot(snap, [(b"ok.txt", MODE_FILE, b""), (spelling.encode(), MODE_TREE, inner)])
    result = snap.restore(forged)
    assert [(s.path, s.detail) for s in result.skipped] == [(spelling, "a spelling of .git")]
    assert sorted(os.listdir(ws)) == ["ok.txt"]  # keep.txt was tracked and is not in the target


def test_the_walker_never_records_a_dotgit_spelling(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"git~1/hooks/pre-commit": "x", ".g\u200cit/config": "y", "src/a.py": "a"})
    info = make().snapshot()
    assert {(s.path, s.reason.value) for s in info.skipped} == {
        ("git~1", "name-not-allowed"),
        (".g\u200cit", "name-not-allowed"),
    }
    assert info.files_changed == 1


def forge_commit(snap, tree: bytes) -> str:  # type: ignore[no-untyped-def]
    from datetime import datetime, timezone

    from snapshotter.engine.gitstore.trailers import build_commit

    store = snap._engine_ok().store
    commit = build_commit(
        tree, "forged", seq=990, label=None, metadata={}, stats=(0, 0, 0), skipped=[], when=datetime.now(timezone.utc)
    )
    sha = store.write_commit(commit)
    assert store.add_snapshot_ref(990, sha)
    return sha.hex()


def _nested(snap, levels: int, names: list[bytes]) -> bytes:  # type: ignore[no-untyped-def]
    """``levels`` trees, each holding the one below under every one of ``names``."""
    writer = snap._engine_ok().store.writer
    tree = writer.write(b"tree", serialize_tree([(b"f", MODE_FILE, writer.write(b"blob", b"x\n"))]))
    for _ in range(levels):
        tree = writer.write(b"tree", serialize_tree([(name, MODE_TREE, tree) for name in names]))
    return tree


def test_a_tree_that_doubles_at_every_level_is_refused_quickly(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Forty levels, each holding the level below twice: 2**40 paths from 41 small objects."""
    write(ws, {"a.txt": "a\n"})
    snap = make()
    snap.snapshot()
    tree = _nested(snap, 40, [b"a", b"b"])
    forged = forge_commit(snap, tree)
    started = time.monotonic()
    with pytest.raises(UnsafeTree, match="more entries than any workspace"):
        snap.restore(forged)
    with pytest.raises(UnsafeTree, match="more entries than any workspace"):
        snap.diff(forged)
    assert time.monotonic() - started < 60
    assert read_tree(ws) == {"a.txt": ("file", b"a\n")}


def test_a_tree_that_contains_itself_is_refused(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """A tree cannot name its own id, so the loop goes through an object stored
    under an id it does not hash to (written straight into the store)."""
    import zlib

    from snapshotter.engine.gitstore.objects import object_id

    write(ws, {"a.txt": "a\n"})
    snap = make()
    snap.snapshot()
    store = snap._engine_ok().store
    liar = object_id(b"tree", b"whatever")  # the id the loop goes through
    top = store.writer.write(b"tree", serialize_tree([(b"again", MODE_TREE, liar)]))
    content = serialize_tree([(b"again", MODE_TREE, top)])
    path = store.writer.loose_path(liar)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(zlib.compress(b"tree %d\0" % len(content) + content))
    forged = forge_commit(snap, top)
    started = time.monotonic()
    for attempt in (lambda: snap.restore(forged), lambda: snap.diff(forged)):
        with pytest.raises((UnsafeTree, StoreError)):  # too deep, or caught by the id check on reading
            attempt()
    assert time.monotonic() - started < 60
    assert read_tree(ws) == {"a.txt": ("file", b"a\n")}


def test_a_chain_deeper_than_any_path_is_refused_not_a_recursion_error(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n"})
    snap = make()
    snap.snapshot()
    tree = _nested(snap, 2100, [b"d"])  # past MAX_TREE_DEPTH (2048); Python's recursion limit gave up before
    forged = forge_commit(snap, tree)
    with pytest.raises(UnsafeTree, match="nest deeper"):
        snap.restore(forged)
    with pytest.raises(UnsafeTree, match="nest deeper"):
        snap.diff(forged)
    assert read_tree(ws) == {"a.txt": ("file", b"a\n")}
    if GIT is not None:
        git("--git-dir", snap.store_path, "cat-file", "-t", forged, env=git_env(Path(snap.store_path).parent))


NAME_SAMPLES = [
    ["a.py", "b.py", "sub"],
    ["ok", ".gitignore"],
    ["ok", "gitx", "Git~1"],
    ["ok", "git~1"],
    ["ok", ".GIT"],
    ["ok", "a/b"],
    ["ok", "a\0b"],
    ["ok", ""],
    ["ok", "."],
    ["ok", ".."],
    ["ok", "ok"],
    ["caf\u00e9", "ok"],
    [".g\u200cit", "ok"],
    ["x\\y", "CON", "trail.", "a:b"],
    ["Readme", "README"],
    ["only"],
]


@pytest.mark.parametrize("host_name", ["posix", "windows", "case_insensitive"])
def test_the_one_pass_name_check_agrees_with_one_by_one(host_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check of a folder whose names are all plain (one pass over them all)
    says what checking every name one by one says, on every kind of host."""
    from dataclasses import replace

    from snapshotter.engine.worktree import pathnames

    host = {
        "posix": hostfs.POSIX,
        "windows": replace(hostfs.POSIX, windows_names=True),
        "case_insensitive": replace(hostfs.POSIX, case_insensitive=True),
    }[host_name]

    def verdict(names: list[str]) -> object:
        try:
            return pathnames.names_checker(host)(names, "t")
        except UnsafeTree as exc:
            return ("refused", str(exc))

    fast = [verdict(names) for names in NAME_SAMPLES]
    monkeypatch.setattr(pathnames, "_plain", lambda names, host: False)
    slow = [verdict(names) for names in NAME_SAMPLES]
    assert fast == slow
    assert any(isinstance(v, tuple) for v in fast) and any(v for v in fast if isinstance(v, dict))


def test_names_decode_in_one_call_as_one_by_one() -> None:
    import os

    from snapshotter.engine.compare.treediff import _decoded

    for raw in ([], [b"a"], [b"a", b"b.py", b"c"], [b"caf\xc3\xa9", b"x"], [b"bad\xff", b"\xc3", b"ok"]):
        assert _decoded(raw) == [os.fsdecode(name) for name in raw]
