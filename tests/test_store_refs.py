"""``gitstore/store.Store``'s ref updates and recovery, on a real store: what
a mutation run of store.py found unchecked. gc keeps what ``ref_targets``
names, undo stacks lose only what ``drop_from_stack`` is asked to drop, and a
writer killed holding the lock leaves nothing ``recover`` does not clear.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import write

from snapshotter import Snapshotter
from snapshotter.engine.fsutil import SMALL_FILE_CAP
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


def test_a_workspace_file_past_its_cap_is_not_read_and_the_store_opens(tmp_path: Path) -> None:
    """The ``workspace`` file is a side file: read up to its 64 KiB cap, never
    whole; one past it is unreadable, so there is nothing to compare."""
    store = tmp_path / "store"
    Store.open_or_create(str(store), "/work/one").close()
    (store / "workspace").write_bytes(b"/work/" + b"x" * (SMALL_FILE_CAP + 1) + b"\n")
    Store.open_or_create(str(store), "/work/one").close()


def test_stacks_read_bottom_first_their_top_only_as_asked_and_clear(ws: Path, make: Callable[..., Snapshotter]) -> None:
    store, (first, second, third) = _store(ws, make, 3)
    for sha in (first, second, third):
        store.push("undo", sha)
    assert store.stack("undo") == [first, second, third]
    assert store.stack_top("undo", 2) == [second, third]
    assert store.stack_top("undo", 1) == [third]
    assert store.stack_top("undo") == [first, second, third]
    store.clear("undo")
    assert store.stack("undo") == [] and store.pop("undo") is None


def test_pins_are_set_listed_and_taken_off(ws: Path, make: Callable[..., Snapshotter]) -> None:
    store, (first, second) = _store(ws, make)
    assert store.pinned() == set()
    store.set_pin(first, True)
    store.set_pin(second, True)
    assert store.pinned() == {first, second}
    assert {first, second} <= store.ref_targets()  # gc keeps what is pinned
    store.set_pin(first, False)
    assert store.pinned() == {second}


def test_snapshots_are_listed_oldest_first_above_a_number(ws: Path, make: Callable[..., Snapshotter]) -> None:
    store, commits = _store(ws, make, 3)
    assert [sha for _, sha in store.iter_oldest_first()] == commits
    assert list(store.iter_oldest_first(1)) == [(2, commits[1]), (3, commits[2])]
    assert list(store.iter_oldest_first(3)) == []


def test_a_snapshot_numbered_otherwise_here_is_found_by_its_number(ws: Path, make: Callable[..., Snapshotter]) -> None:
    """A snapshot commit recording number 1 kept here as number 7 (as a fetch or a
    fork does): its number is listed in ``renumbered`` and found, and without the
    list by reading every ref; once its ref is gone it has no number."""
    store, (first, second) = _store(ws, make)
    assert store.seq_of(first) == 1 and store.recorded_seq(first) == 1
    assert store.remove_snapshot_ref(1, first)
    assert store.seq_of(first) is None  # dropped: no number, whatever the commit records
    assert store.add_snapshot_ref(7, first)
    listed = Path(store.meta_dir, "renumbered")
    assert listed.read_bytes() == first.hex().encode() + b" 7\n"
    assert store.seq_of(first) == 7 and store.seq_of(second) == 2
    listed.unlink()
    assert store.seq_of(first) == 7  # the list is a hint only
    assert store.remove_snapshot_ref(7, first)
    listed.write_bytes(first.hex().encode() + b" 7\n")  # a stale hint is checked against the ref
    assert store.seq_of(first) is None


def test_the_number_a_snapshot_records_is_read_from_its_trailers(ws: Path, make: Callable[..., Snapshotter]) -> None:
    """A message quoting a ``Snapshot-Seq:`` line in an earlier paragraph is no trailer."""
    write(ws, {"f.txt": "x\n"})
    snap = make()
    info = snap.snapshot("a note\n\nSnapshot-Seq: 99\n\nmore of the note")
    store = snap._engine_ok().store
    assert store.recorded_seq(bytes.fromhex(info.id)) == info.sequence == 1
    assert not Path(store.meta_dir, "renumbered").exists()


def test_dropping_the_oldest_reads_each_stack_from_its_bottom_as_far_as_they_go(
    ws: Path, make: Callable[..., Snapshotter]
) -> None:
    """``down_to``: entries are read oldest first past those of snapshots up to
    it (an entry of number 3 is no reason to stop at ``down_to=3``), and stop at
    the first newer one."""
    store, (s1, s2, s3, s4) = _store(ws, make, 4)
    for sha in (s3, s2, s4, s1):  # s1 pushed out of order, above a newer one
        store.push("undo", sha)
    assert store.drop_from_stacks(["undo"], {s2, s1}, down_to=3) == 1
    assert store.stack("undo") == [s3, s4, s1]  # s1 above s4 is left for undo to remove
    assert store.drop_from_stacks(["undo"], {s1}) == 1
    assert store.stack("undo") == [s3, s4]


def test_damaged_refs_name_odd_names_and_those_of_sessions_stacks(ws: Path, make: Callable[..., Snapshotter]) -> None:
    """A ref whose name is not UTF-8 is named (with a replacement character), and a
    named session's stacks are checked as the anonymous one's are."""
    store, (first, _) = _store(ws, make)
    store.push("sessions/work/undo", first)
    refs = Path(store.path, "refs")
    (refs / "snapshots" / os.fsdecode(b"odd-\xff")).write_bytes(first.hex().encode() + b"\n")
    (refs / "snapshotter" / "sessions" / "work" / "undo" / "0000000009").write_bytes(b"\n")
    assert store.sessions() == ["work"]
    assert store.damaged_refs() == [
        "refs/snapshots/odd-\ufffd",
        "refs/snapshotter/sessions/work/undo/0000000009",
    ]


def test_a_removed_store_is_gone(ws: Path, make: Callable[..., Snapshotter]) -> None:
    store, _ = _store(ws, make)
    store.remove()
    assert not Path(store.path).exists()


def test_the_plain_readers_of_refs(ws: Path, make: Callable[..., Snapshotter]) -> None:
    """The base, a snapshot's id, snapshots below a number, a stack newest first,
    and the numbers pushes take: each as its docstring says, None where nothing is."""
    store, (s1, s2, s3) = _store(ws, make, 3)
    assert store.snapshot_id(2) == s2 and store.snapshot_id(99) is None
    assert list(store.iter_snapshot_ids(3)) == [(2, s2), (1, s1)]
    store.refs.delete({b"refs/snapshotter/base": None})
    assert store.base() is None
    store.set_base(s2)
    assert store.base() == s2
    assert [store.push("redo", sha) for sha in (s1, s3)] == [1, 2]
    assert list(store.iter_stack("redo")) == [(2, s3), (1, s1)]
    assert list(store.iter_stack("redo", newest_first=False)) == [(1, s1), (2, s3)]
    assert store.drop_from_stacks(["redo"], {b"\0" * 20}) == 0


def test_recovery_goes_on_past_a_missing_folder_and_leaves_other_lock_files(
    ws: Path, make: Callable[..., Snapshotter]
) -> None:
    store, _ = _store(ws, make)
    packs = Path(store.packs.dir)
    for leftover in packs.iterdir():
        leftover.unlink()
    packs.rmdir()
    stale = Path(store.meta_dir) / ".statcache-abc.tmp"
    stale.write_bytes(b"x")
    not_a_ref_lock = [Path(store.meta_dir) / "other.lock", Path(store.path, "objects") / "x.lock"]
    for path in not_a_ref_lock:
        path.write_bytes(b"x")
    assert store.recover() == 1 and not stale.exists()
    assert all(path.exists() for path in not_a_ref_lock)


def test_odd_lines_of_the_renumbered_list_and_odd_session_names_are_passed_over(
    ws: Path, make: Callable[..., Snapshotter]
) -> None:
    store, (first, _) = _store(ws, make)
    assert store.remove_snapshot_ref(1, first) and store.add_snapshot_ref(7, first)
    listed = Path(store.meta_dir, "renumbered")
    listed.write_bytes(first.hex().encode() + b" seven\nnot an id 7\n" + listed.read_bytes())
    assert store.seq_of(first) == 7
    odd = Path(store.path, "refs", "snapshotter", "sessions", os.fsdecode(b"odd-\xff"), "undo")
    odd.mkdir(parents=True)
    (odd / "0000000001").write_bytes(first.hex().encode() + b"\n")
    assert store.sessions() == ["odd-\ufffd"]


def test_store_side_files_are_never_followed_through_a_symlink(
    ws: Path, make: Callable[..., Snapshotter], tmp_path: Path
) -> None:
    """The workspace file and the renumbered list are the store's own: a symlink
    planted in their place is neither read nor written through."""
    store, (first, _) = _store(ws, make)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"/somewhere/else\n")
    workspace_file = Path(store.path, "workspace")
    workspace_file.unlink()
    workspace_file.symlink_to(outside)
    Store.open_or_create(store.path, str(ws)).close()  # not read: nothing to compare, no refusal
    listed = Path(store.meta_dir, "renumbered")
    listed.symlink_to(outside)
    assert store.remove_snapshot_ref(1, first) and store.add_snapshot_ref(7, first)
    assert outside.read_bytes() == b"/somewhere/else\n"
    assert store.seq_of(first) == 7


@pytest.mark.parametrize(
    "workspace", ["/work/ends-in-X", "/work/ends in a space ", "/work/ends in a tab\t"], ids=["X", "space", "tab"]
)
def test_a_store_reopens_for_a_workspace_whatever_its_name_ends_with(tmp_path: Path, workspace: str) -> None:
    store = tmp_path / "store"
    Store.open_or_create(str(store), workspace).close()
    Store.open_or_create(str(store), workspace).close()
