"""Damaged objects and pack indexes: wrong bytes never reach the workspace.

Every object is checked against its id when it is read; a pack index that
fails its checksums is rebuilt from its pack (missing, truncated, or with
offsets swapped); a forged index whose checksums agree still cannot make a
restore write wrong bytes; and none of it surfaces as anything but a
StoreError or a problem reported by verify().
"""

from __future__ import annotations

import hashlib
import os
import time
import zlib
from pathlib import Path

import pytest
from conftest import loosen, read_tree, write

from snapshotter import Snapshotter, StoreError
from snapshotter.engine.gitstore.objects import object_id
from snapshotter.engine.gitstore.packread import PackIndex

_FANOUT_END = 8 + 256 * 4


def _store(snap: Snapshotter):  # type: ignore[no-untyped-def]
    return snap._engine_ok().store


def _content(i: int) -> str:
    return f"file {i} " * (i + 1) + "\n"


def _packed_workspace(ws: Path, snap: Snapshotter) -> tuple[str, str]:
    """A snapshot whose objects went to one pack; every file changed since.
    Returns (snapshot id, index path). Tests damage the store after this as
    another process would: ``_forget`` makes this one forget what it read."""
    write(ws, {f"f{i:03}.txt": _content(i) for i in range(100)})
    first = snap.snapshot("first").id
    bases = [name[:-4] for name in os.listdir(Path(snap.store_path, "objects", "pack")) if name.endswith(".idx")]
    assert len(bases) == 1
    _store(snap).release_packs()
    write(ws, {f"f{i:03}.txt": "changed\n" for i in range(100)})
    return first, str(Path(snap.store_path, "objects", "pack", bases[0] + ".idx"))


def _forget(snap: Snapshotter) -> None:
    """Forget the packs and indexes read so far, as a new process would."""
    _store(snap).release_packs()


def _blob_ids(snap: Snapshotter, snapshot: str, paths: list[str]) -> list[bytes]:
    found = {d.path: d.old_id for d in snap.diff(snapshot)}
    return [bytes.fromhex(found[p] or "") for p in paths]


def _swap_offsets(idx: str, a: bytes, b: bytes, *, forge: bool) -> None:
    """Swap the offsets of objects ``a`` and ``b`` in an index; with ``forge``,
    recompute the index's own checksum so that it still looks whole."""
    data = bytearray(Path(idx).read_bytes())
    index = PackIndex(bytes(data))
    ids = index.ids()
    table = _FANOUT_END + 24 * len(ids)
    x, y = (table + 4 * ids.index(sha) for sha in (a, b))
    data[x : x + 4], data[y : y + 4] = data[y : y + 4], data[x : x + 4]
    if forge:
        data[-20:] = hashlib.sha1(data[:-20]).digest()
    os.chmod(idx, 0o600)
    Path(idx).write_bytes(bytes(data))


def _expected() -> dict[str, tuple[str, bytes]]:
    return {f"f{i:03}.txt": ("file", _content(i).encode()) for i in range(100)}


# -- pack indexes ----------------------------------------------------------------------


def test_swapped_offsets_fail_the_quick_verify_and_the_index_is_rebuilt(ws: Path, home: Path) -> None:
    with Snapshotter(ws, home=home) as snap:
        first, idx = _packed_workspace(ws, snap)
        _swap_offsets(idx, *_blob_ids(snap, first, ["f010.txt", "f011.txt"]), forge=False)
        _forget(snap)
        checked = snap.verify()
        assert not checked.ok
        assert any("index" in p and "rebuilt" in p for p in checked.problems), checked.problems
        assert snap.verify().ok  # rebuilt from its pack: nothing is wrong any more
        snap.restore(first)
        assert read_tree(ws) == _expected()


def test_swapped_offsets_are_caught_before_a_restore_writes(ws: Path, home: Path) -> None:
    with Snapshotter(ws, home=home) as snap:
        first, idx = _packed_workspace(ws, snap)
        _swap_offsets(idx, *_blob_ids(snap, first, ["f010.txt", "f011.txt"]), forge=False)
        _forget(snap)
        snap.restore(first)  # the index fails its checksum when loaded, and is rebuilt
        assert read_tree(ws) == _expected()


def test_an_index_checked_whole_once_is_checked_again_once_its_file_changed(ws: Path, home: Path) -> None:
    """A pack index checked whole is remembered by its file's identity
    (``checkedindexes``), so the next process need not hash it; the same index
    damaged in place afterwards (its mtime even put back) is a changed file,
    checked again and rebuilt, never trusted."""
    with Snapshotter(ws, home=home) as snap:
        first, idx = _packed_workspace(ws, snap)
        _forget(snap)
        snap.diff(first)  # the index loaded: checked whole and remembered
        remembered = Path(snap.store_path, "snapshotter", "checked-pack-indexes").read_text()
        assert os.path.basename(idx) in remembered
        stat = os.stat(idx)
        _swap_offsets(idx, *_blob_ids(snap, first, ["f010.txt", "f011.txt"]), forge=False)
        os.utime(idx, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        _forget(snap)
        snap.restore(first)  # checked again: fails its checksum, rebuilt from its pack
        assert read_tree(ws) == _expected()


def test_a_forged_index_never_makes_restore_write_wrong_bytes(ws: Path, home: Path) -> None:
    """Offsets swapped and the checksum recomputed: only the objects' ids can tell."""
    with Snapshotter(ws, home=home) as snap:
        first, idx = _packed_workspace(ws, snap)
        before = read_tree(ws)
        _swap_offsets(idx, *_blob_ids(snap, first, ["f010.txt", "f011.txt"]), forge=True)
        _forget(snap)
        with pytest.raises(StoreError, match="does not match its id"):
            snap.restore(first)
        assert read_tree(ws) == before  # put back as it was
        checked = snap.verify()
        assert not checked.ok and any("does not match its id" in p for p in checked.problems), checked.problems


@pytest.mark.parametrize("damage", ["truncated", "deleted", "garbage"])
def test_a_lost_or_truncated_index_is_rebuilt_from_its_pack(ws: Path, home: Path, damage: str) -> None:
    with Snapshotter(ws, home=home) as snap:
        first, idx = _packed_workspace(ws, snap)
        original = Path(idx).read_bytes()
        os.chmod(idx, 0o600)
        if damage == "truncated":
            Path(idx).write_bytes(original[: len(original) // 2])
        elif damage == "garbage":
            Path(idx).write_bytes(os.urandom(len(original)))
        else:
            os.unlink(idx)
        _forget(snap)
        snap.restore(first)
        assert read_tree(ws) == _expected()
        assert Path(idx).read_bytes() == original  # the same index, byte for byte
        assert snap.verify(full=True).ok


@pytest.mark.parametrize("damage", ["truncated", "deleted"])
def test_quick_verify_reports_a_lost_or_truncated_index(ws: Path, home: Path, damage: str) -> None:
    with Snapshotter(ws, home=home) as snap:
        first, idx = _packed_workspace(ws, snap)
        os.chmod(idx, 0o600)
        if damage == "truncated":
            Path(idx).write_bytes(Path(idx).read_bytes()[:-100])
        else:
            os.unlink(idx)
        _forget(snap)
        checked = snap.verify()
        assert not checked.ok
        assert any(os.path.basename(idx) in p and "rebuilt" in p for p in checked.problems), checked.problems
        assert snap.verify().ok


def test_an_index_cannot_be_rebuilt_from_a_damaged_pack(ws: Path, home: Path) -> None:
    with Snapshotter(ws, home=home) as snap:
        first, idx = _packed_workspace(ws, snap)
        before = read_tree(ws)
        pack = idx[:-4] + ".pack"
        os.chmod(pack, 0o600)
        with open(pack, "r+b") as handle:
            handle.seek(200)
            byte = handle.read(1)
            handle.seek(200)
            handle.write(bytes([byte[0] ^ 0xFF]))
        os.unlink(idx)
        _forget(snap)
        with pytest.raises(StoreError):
            snap.restore(first)
        assert read_tree(ws) == before
        checked = snap.verify()
        assert not checked.ok and any(os.path.basename(pack) in p for p in checked.problems), checked.problems


def test_upkeep_never_deletes_a_pack_whose_index_was_lost(ws: Path, home: Path) -> None:
    """Consolidation removes packs left without an index (a failed delete on
    Windows) after an hour; one whose index was lost holds the only copy of
    its objects, and must be indexed again instead."""
    from snapshotter.engine.upkeep.consolidation import consolidate

    with Snapshotter(ws, home=home) as snap:
        first, idx = _packed_workspace(ws, snap)
        pack = idx[:-4] + ".pack"
        os.unlink(idx)
        old = time.time() - 7200
        os.utime(pack, (old, old))
        _forget(snap)
        consolidate(_store(snap))
        assert os.path.exists(pack)
        snap.restore(first)
        assert read_tree(ws) == _expected()


# -- objects read with the wrong content ---------------------------------------------------


def _swap_loose(snap: Snapshotter, a: bytes, b: bytes) -> None:
    path_a, path_b = (_store(snap).writer.loose_path(sha) for sha in (a, b))
    for path in (path_a, path_b):
        os.chmod(path, 0o600)
    data_a, data_b = Path(path_a).read_bytes(), Path(path_b).read_bytes()
    Path(path_a).write_bytes(data_b)
    Path(path_b).write_bytes(data_a)


def test_a_loose_object_holding_another_objects_content_is_refused(ws: Path, home: Path) -> None:
    with Snapshotter(ws, home=home) as snap:
        write(ws, {"a.txt": "alpha\n", "b.txt": "bravo\n"})
        first = snap.snapshot("first").id
        loosen(snap)
        write(ws, {"a.txt": "changed\n", "b.txt": "changed too\n"})
        before = read_tree(ws)
        _swap_loose(snap, *_blob_ids(snap, first, ["a.txt", "b.txt"]))
        _forget(snap)
        with pytest.raises(StoreError, match="does not match its id"):
            snap.restore(first)
        assert read_tree(ws) == before
        assert not snap.verify().ok


def test_a_big_blob_found_wrong_while_streamed_leaves_the_workspace_as_it_was(ws: Path, home: Path) -> None:
    """A big blob is checked as it is streamed into the file, so the mismatch
    shows only after its bytes were written: the restore puts everything back."""
    big = 9 << 20  # above the streaming threshold
    with Snapshotter(ws, home=home) as snap:
        write(ws, {"a.bin": b"a" * big, "b.bin": b"b" * big, "c.txt": "one\n"})
        first = snap.snapshot("first").id
        write(ws, {"a.bin": "small now\n", "c.txt": "two\n"})
        before = read_tree(ws)
        # Big files go to chain packs (#53): each blob is planted loose holding the other's content instead.
        store = _store(snap)
        _forget(snap)
        for name in os.listdir(store.packs.dir):
            if name.startswith("pack-chain-"):
                os.unlink(os.path.join(store.packs.dir, name))
        for sha, other in ((b"a", b"b"), (b"b", b"a")):
            path = Path(store.writer.loose_path(object_id(b"blob", sha * big)))
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(zlib.compress(b"blob %d\0" % big + other * big))
        with pytest.raises(StoreError, match="does not match its id"):
            snap.restore(first)
        assert read_tree(ws) == before
