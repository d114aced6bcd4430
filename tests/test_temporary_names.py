"""Our temporary names never take a user's file: a file named as a watch-mode
cookie is (``.snapshotter-tmp-<16 hex>``) is the user's, snapshotted, restored,
reverted and undone like any other; only the cookies a watcher made itself, in
its own process, are passed over."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import tree_modes, write

from snapshotter import watch_available

LOOKALIKES = {".snapshotter-tmp-0123456789abcdef": "mine\n", "sub/.snapshotter-tmp-fedcba9876543210": "deep\n"}


def test_a_file_named_like_our_temporary_files_is_snapshotted_and_restored_like_any_other(
    ws: Path,
    make,  # type: ignore[no-untyped-def]
) -> None:
    write(ws, {"a.txt": "a\n"})
    snap = make()
    without = snap.snapshot("before the lookalikes")
    write(ws, LOOKALIKES)
    with_them = snap.snapshot("with the lookalikes")
    assert set(LOOKALIKES) <= set(tree_modes(snap, with_them.tree_id))
    (ws / "a.txt").write_text("edited\n")
    snap.restore(with_them.id)
    for name, content in LOOKALIKES.items():
        assert (ws / name).read_text() == content  # a restore never takes them for ours
    result = snap.restore(without.id)  # a snapshot without them: deleted as any tracked file, and said
    assert result.deleted == len(LOOKALIKES)
    assert not any((ws / name).exists() for name in LOOKALIKES)
    snap.undo()  # and brought back
    for name, content in LOOKALIKES.items():
        assert (ws / name).read_text() == content


def test_a_revert_keeps_a_file_named_like_our_temporary_files(
    ws: Path,
    make,  # type: ignore[no-untyped-def]
) -> None:
    write(ws, {"a.txt": "a\n", **LOOKALIKES})
    snap = make()
    before = snap.snapshot("before")
    (ws / "a.txt").write_text("the change\n")
    after = snap.snapshot("after")
    assert snap.revert(before.id, after.id)
    assert (ws / "a.txt").read_text() == "a\n"
    for name, content in LOOKALIKES.items():
        assert (ws / name).read_text() == content


@pytest.mark.skipif(not watch_available(), reason="watch mode needs watchdog 7.1 (Python 3.11+)")
def test_in_watch_mode_a_file_named_like_a_cookie_is_recorded_and_the_cookies_are_not(
    ws: Path,
    make,  # type: ignore[no-untyped-def]
) -> None:
    write(ws, {"a.txt": "a\n"})
    snap = make(watch=True)
    snap.snapshot("the first walk")
    write(ws, LOOKALIKES)
    found = snap.snapshot("the lookalikes made")
    assert snap.last_scan.incremental
    assert set(tree_modes(snap, found.tree_id)) == {"a.txt", *LOOKALIKES}  # and no cookie of its own
    (ws / ".snapshotter-tmp-0123456789abcdef").write_text("changed\n")
    changed = snap.snapshot("one of them changed")
    assert snap.last_scan.incremental
    assert snap.diff(found.id, changed.id)[0].path == ".snapshotter-tmp-0123456789abcdef"
