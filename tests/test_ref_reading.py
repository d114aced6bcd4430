"""Reading the store's numbered refs (``gitstore/refreading``): each loose ref file
read once while it stays the same file, so a snapshot's cost does not grow
with the history; and what is not a plain ref file is damaged, never followed."""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import Any

import pytest

from snapshotter import Retention, Snapshotter


def _refs_folder(snap: Snapshotter) -> Path:
    return Path(snap.store_path) / "refs" / "snapshots"


def test_each_ref_file_is_read_once_while_it_stays_the_same_file(
    ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "a.txt").write_text("0\n")
    with Snapshotter(ws, home=home, retention=Retention.unlimited()) as snap:
        for i in range(60):
            (ws / "a.txt").write_text(f"{i}\n")
            snap.snapshot(f"s{i}")
        reads: list[str] = []
        real_open, real_os_open = builtins.open, os.open

        def counted_open(path: Any, *args: Any, **kwargs: Any) -> Any:
            reads.append(os.fsdecode(path))
            return real_open(path, *args, **kwargs)

        def counted_os_open(path: Any, *args: Any, **kwargs: Any) -> int:
            reads.append(os.fsdecode(path))
            return real_os_open(path, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", counted_open)  # dulwich's GitFile opens with it
        monkeypatch.setattr(os, "open", counted_os_open)
        for i in range(10):
            (ws / "a.txt").write_text(f"more {i}\n")
            snap.snapshot(f"more {i}")
        assert len(snap.list(limit=None)) == 70
    folder = os.sep + os.path.join("refs", "snapshots") + os.sep
    read = [path for path in reads if folder in path and not path.endswith(".lock")]
    assert len(read) <= 2 * 10, len(read)  # each new ref written, then read once; through dulwich: 2,025


def test_a_ref_rewritten_by_rename_is_read_again(ws: Path, home: Path) -> None:
    (ws / "a.txt").write_text("1\n")
    with Snapshotter(ws, home=home) as snap:
        first = snap.snapshot("one")
        (ws / "a.txt").write_text("2\n")
        second = snap.snapshot("two")
        store = snap._engine_ok().store
        assert set(store.snapshot_refs().values()) == {bytes.fromhex(first.id), bytes.fromhex(second.id)}
        (ref,) = [p for p in _refs_folder(snap).iterdir() if int(p.name) == first.sequence]
        forged = ref.with_name(ref.name + ".new")
        forged.write_text(second.id + "\n")
        os.replace(forged, ref)  # as a ref writer rewrites: a new file renamed in place
        store._refs_read.clear()  # the folder's stamp cache aside: this is the file reader's own check
        assert store.snapshot_refs()[first.sequence] == bytes.fromhex(second.id)


def test_symlinks_nested_folders_and_lock_files_are_never_followed(ws: Path, home: Path) -> None:
    (ws / "a.txt").write_text("1\n")
    with Snapshotter(ws, home=home) as snap:
        made = snap.snapshot("one")
        folder = _refs_folder(snap)
        (ref,) = folder.iterdir()
        (folder / "00000000000000000777").symlink_to(ref)  # would pose as a second snapshot
        (folder / "nested").mkdir()
        (folder / "nested" / "5").write_text(made.id + "\n")
        (folder / "00000000000000000778.lock").write_text(made.id + "\n")  # a ref being written
        store = snap._engine_ok().store
        store._refs_read.clear()
        assert list(store.snapshot_refs().values()) == [bytes.fromhex(made.id)]
        damaged = store.damaged_refs()
        assert [name for name in damaged if "777" in name or "nested" in name] == [
            "refs/snapshots/00000000000000000777",
            "refs/snapshots/nested/5",
        ]
        assert not any("778" in name for name in damaged)
        assert [info.id for info in snap.list(limit=None)] == [made.id]
