"""Bad input and damaged stores give typed one-line errors (SnapshotError), never a
raw TypeError, ValueError or KeyError from below (issue: untyped exceptions)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import forge_snapshot, read_tree, write

from snapshotter import InvalidInput, Retention, SnapshotError, Snapshotter, StoreError, UnsafeTree
from snapshotter.engine.gitstore.objects import MODE_FILE, MODE_LINK, MODE_TREE, serialize_tree
from snapshotter.engine.worktree import hostfs


@pytest.mark.parametrize(
    "arguments",
    [
        {"workspace": None},
        {"home": 5},
        {"home": ""},
        {"exclude": None},
        {"lock_timeout": float("nan")},
        {"lock_timeout": -1},
        {"lock_timeout": "30"},
        {"retention": 5},
        {"watch": "yes"},
    ],
)
def test_bad_constructor_arguments_are_typed(ws: Path, home: Path, arguments: dict[str, object]) -> None:
    given: dict[str, object] = {"workspace": ws, "home": home, **arguments}
    workspace = given.pop("workspace")
    with pytest.raises(InvalidInput) as refused:
        Snapshotter(workspace, **given)  # type: ignore[arg-type]
    assert "\n" not in str(refused.value)


def test_bad_call_arguments_are_typed(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a"})
    snap = make()
    info = snap.snapshot()
    for call in (
        lambda: snap.restore(info.id, files=[None]),
        lambda: snap.restore(info.id, files=[3]),
        lambda: snap.snapshot(label="x\udcff"),
        lambda: snap.snapshot("message \udcff"),
        lambda: snap.snapshot(metadata={"k\udcff": "v"}),
        lambda: snap.checkpoint(metadata={"k": "v\udcff"}),
        lambda: snap.list(limit=float("nan")),
    ):
        with pytest.raises(InvalidInput):
            call()
    assert [s.id for s in snap.list()] == [info.id]  # nothing was recorded


def test_a_missing_blob_on_restore_is_a_store_error_and_changes_nothing(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a"})
    snap = make()
    snap.snapshot()
    forged = forge_snapshot(snap, [(b"a.txt", MODE_FILE, bytes.fromhex("ab" * 20))])
    with pytest.raises(StoreError, match="missing"):
        snap.restore(forged)
    assert read_tree(ws) == {"a.txt": ("file", b"a")}


def test_a_symlink_target_with_a_nul_byte_is_refused(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(hostfs, "detect", lambda root: hostfs.POSIX)
    write(ws, {"a.txt": "a"})
    snap = make()
    snap.snapshot()
    target = snap._engine_ok().store.writer.write(b"blob", b"/etc\0passwd")
    forged = forge_snapshot(snap, [(b"a.txt", MODE_FILE, b""), (b"link", MODE_LINK, target)])
    with pytest.raises(UnsafeTree, match="NUL"):
        snap.restore(forged)
    assert read_tree(ws) == {"a.txt": ("file", b"a")}  # put back as it was


def test_gc_over_a_commit_whose_tree_is_a_blob(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a"})
    snap = make(retention=Retention.unlimited())
    good = snap.snapshot()
    store = snap._engine_ok().store
    from datetime import datetime, timezone

    from snapshotter.engine.gitstore.trailers import build_commit

    not_a_tree = store.writer.write(b"blob", b"I am no tree\n")
    commit = build_commit(
        not_a_tree,
        "forged",
        seq=77,
        label=None,
        metadata={},
        stats=(0, 0, 0),
        skipped=[],
        when=datetime.now(timezone.utc),
    )
    assert store.add_snapshot_ref(77, store.write_commit(commit))
    snap.gc()  # was ValueError from parse_tree
    assert not snap.verify().ok  # the forged one is reported
    (ws / "a.txt").write_text("changed")
    snap.restore(good.id)
    assert (ws / "a.txt").read_text() == "a"


def test_errors_from_below_never_escape_untyped(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a", "sub/b.txt": "b"})
    snap = make()
    snap.snapshot()
    writer = snap._engine_ok().store.writer
    not_a_tree = writer.write(b"blob", b"junk")
    forged = forge_snapshot(snap, [(b"sub", MODE_TREE, not_a_tree)], seq=500)
    for call in (lambda: snap.restore(forged), lambda: snap.diff(forged), lambda: snap.restore(forged, ["sub/x"])):
        with pytest.raises(SnapshotError):
            call()
    assert os.path.exists(ws / "sub" / "b.txt")
    assert serialize_tree  # the module stays importable for forging
