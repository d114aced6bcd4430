"""``gitstore/store.Store``'s ref updates and recovery, on a real store: what
a mutation run of store.py found unchecked. gc keeps what ``ref_targets``
names, undo stacks lose only what ``drop_from_stack`` is asked to drop, and a
writer killed holding the lock leaves nothing ``recover`` does not clear.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import write

from snapshotter import Snapshotter
from snapshotter.engine.gitstore.store import Store
from snapshotter.errors import StoreError


def _store(ws: Path, make: Callable[..., Snapshotter], snapshots: int = 2) -> tuple[Store, list[bytes]]:
    snap = make()
    commits = []
    for n in range(snapshots):
        write(ws, {"f.txt": f"{n}\n"})
        commits.append(bytes.fromhex(snap.snapshot(f"s{n}").id))
    return snap._engine_ok().store, commits


def test_every_ref_target_is_kept_past_a_ref_that_is_not_an_id(ws: Path, make: Callable[..., Snapshotter]) -> None:
    """A ref whose content is no object id (planted, or half written) is passed
    over, never the end of the list: gc keeps what every other ref names."""
    store, commits = _store(ws, make)
    junk = Path(store.path, "refs", "a-junk")
    junk.mkdir(parents=True)
    (junk / "ref").write_bytes(b"not an object id\n")
    assert set(commits) <= store.ref_targets()


def test_dropping_from_a_stack_removes_only_the_entries_of_that_commit(
    ws: Path, make: Callable[..., Snapshotter]
) -> None:
    store, (first, second) = _store(ws, make)
    for sha in (first, second, first, second):
        store.push("undo", sha)
    store.drop_from_stack("undo", first)
    assert store.stack("undo") == [second, second]
    store.drop_from_stack("undo", b"\0" * 20)  # on no entry: nothing
    assert store.stack("undo") == [second, second]


def test_recovery_clears_a_killed_writers_locks_and_temporary_files_and_nothing_else(
    ws: Path, make: Callable[..., Snapshotter]
) -> None:
    store, _ = _store(ws, make)
    root = Path(store.path)
    objects = root / "objects"
    fan = next(p for p in objects.iterdir() if len(p.name) == 2)
    planted = [
        root / "packed-refs.lock",
        root / "refs" / "snapshots" / "0000000099.lock",
        objects / "tmp_obj_abc",
        fan / "tmp_obj_def",
        Path(store.packs.dir) / "tmp_pack_123",
        Path(store.meta_dir) / ".statcache-xyz.tmp",
    ]
    kept = [objects / "keep-me", Path(store.meta_dir) / "notes.txt"]
    for path in planted + kept:
        path.write_bytes(b"x")
    assert store.recover() == len(planted)
    assert [p for p in planted if p.exists()] == []
    assert all(p.exists() for p in kept)
    assert store.recover() == 0


def test_a_store_made_for_another_workspace_is_refused_naming_both(tmp_path: Path) -> None:
    store = tmp_path / "store"
    Store.open_or_create(str(store), "/work/one").close()
    with pytest.raises(StoreError, match=f"^store {store} belongs to /work/one, not /work/two; "):
        Store.open_or_create(str(store), "/work/two")
    Store.open_or_create(str(store), "/work/one").close()
