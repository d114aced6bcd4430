"""The stat cache: unchanged files are never read, changed ones always are."""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

import pytest
from conftest import write

from snapshotter.engine import fsutil
from snapshotter.engine.worktree import statcache
from snapshotter.engine.worktree.statcache import StatCache


def _files(n: int) -> dict[str, str]:
    return {f"d{i % 5}/f{i}.txt": f"content {i}\n" for i in range(n)}


def _age(ws: Path, seconds: float = 10) -> None:
    """Move every mtime into the past so nothing is racy against a new cache."""
    past = time.time() - seconds
    for dirpath, _, filenames in os.walk(ws):
        for name in filenames:
            os.utime(os.path.join(dirpath, name), (past, past), follow_symlinks=False)


def test_second_snapshot_without_changes_hashes_nothing(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, _files(50))
    _age(ws)
    snap = make()
    snap.snapshot()
    assert snap.last_scan.files_hashed == 50
    snap.snapshot()
    assert snap.last_scan.files_hashed == 0
    assert snap.last_scan.files_seen == 50
    reopened = make()  # a new process loads the persisted cache
    reopened.snapshot()
    assert reopened.last_scan.files_hashed == 0


def test_touching_three_files_hashes_exactly_those(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, _files(50))
    _age(ws)
    snap = make()
    snap.snapshot()
    for i in (3, 17, 42):
        path = ws / f"d{i % 5}/f{i}.txt"
        os.utime(path, None)
    snap.snapshot()
    assert snap.last_scan.files_hashed == 3
    assert snap.last_scan.bytes_hashed == sum(len(f"content {i}\n") for i in (3, 17, 42))


def test_chmod_only_change_is_detected(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"run.sh": "echo\n"})
    _age(ws)
    snap = make()
    first = snap.snapshot()
    (ws / "run.sh").chmod(0o755)
    second = snap.snapshot()
    assert first.tree_id != second.tree_id
    assert [(c.path, c.old_mode, c.new_mode) for c in snap.diff(first.id, second.id)] == [
        ("run.sh", 0o100644, 0o100755)
    ]


def test_same_size_rewrite_in_the_same_tick_is_detected(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "aaaa\n"})
    snap = make()
    snap.snapshot()
    cache_mtime = os.stat(os.path.join(snap.store_path, "snapshotter", "statcache")).st_mtime_ns
    st = os.stat(ws / "a.txt")
    (ws / "a.txt").write_text("bbbb\n")  # same size
    os.utime(ws / "a.txt", ns=(st.st_atime_ns, cache_mtime))  # mtime == the cache's own tick
    # inode and ctime could still give it away; pin the record to the new stat to be sure
    cache = statcache.load(os.path.join(snap.store_path, "snapshotter", "statcache"))
    key = fsutil.stat_key(os.lstat(ws / "a.txt"))
    cache.apply({"a.txt": (*key, cache.folder("")["a.txt"][5])})
    statcache.save(os.path.join(snap.store_path, "snapshotter", "statcache"), cache)
    os.utime(os.path.join(snap.store_path, "snapshotter", "statcache"), ns=(cache_mtime, cache_mtime))
    fresh = make()
    info = fresh.snapshot()
    assert fresh.last_scan.files_hashed == 1
    assert [d.path for d in fresh.diff(fresh.list()[1].id, info.id)] == ["a.txt"]


def test_coarse_two_second_clock_is_treated_as_racy() -> None:
    cache = StatCache(written_ns=1_700_000_000_000_000_000)  # a whole second: FAT-like clock
    assert cache.racy_cutoff() == 1_700_000_000_000_000_000 - 2_000_000_000
    fine = StatCache(written_ns=1_700_000_000_123_456_789)
    assert fine.racy_cutoff() == 1_700_000_000_123_456_789
    assert StatCache().racy_cutoff() < -(2**62)


def test_corrupt_or_old_cache_means_full_rehash_not_wrong_snapshot(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, _files(10))
    _age(ws)
    snap = make()
    first = snap.snapshot()
    path = os.path.join(snap.store_path, "snapshotter", "statcache")
    data = bytearray(Path(path).read_bytes())
    data[40] ^= 0xFF
    Path(path).write_bytes(bytes(data))
    again = make()
    second = again.snapshot()
    assert again.last_scan.files_hashed == 10
    assert second.tree_id == first.tree_id
    Path(path).write_bytes(b"garbage")
    assert statcache.load(path).folders == {}


def test_cache_round_trip_keeps_every_record(tmp_path: Path) -> None:
    records = {
        f"dir{i % 3 or ''}/ü{i}".lstrip("/"): (0o100644, i, i * 7, -i, i + 1, bytes([i % 256]) * 20)
        for i in range(1000)
    }
    records.update({f"top{i}": (0o120777, i, 1, 2, 3, b"\3" * 20) for i in range(5)})
    cache = StatCache.from_paths(records, {"": (3, b"\1" * 20), "dir": (1000, b"\2" * 20)})
    path = str(tmp_path / "cache")
    statcache.save(path, cache)
    loaded = statcache.load(path)
    assert dict(loaded.paths()) == records
    assert loaded.folders == cache.folders
    assert loaded.folders.keys() == {"", "dir", "dir1", "dir2"}
    assert loaded.dirs == cache.dirs
    assert loaded.written_ns == os.stat(path).st_mtime_ns
    # Saved again, unchanged tables are copied from the bytes they were loaded from; changed ones are packed anew.
    loaded.apply({"dir1/ü1": (0o100755, 9, 9, 9, 9, b"\x09" * 20), "dir2/ü2": None, "new/x": records["top1"]})
    statcache.save(path, loaded)
    again = statcache.load(path)
    expected = {**records, "dir1/ü1": (0o100755, 9, 9, 9, 9, b"\x09" * 20), "new/x": records["top1"]}
    del expected["dir2/ü2"]
    assert dict(again.paths()) == expected
    statcache.save(path, StatCache(again.folders, again.dirs, again.listings, again.shapes, 0, again.packed))
    assert dict(statcache.load(path).paths()) == expected


def test_status_does_not_poison_the_cache(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """status() hashes without storing; a later snapshot must still store the blob."""
    write(ws, {"a.txt": "one\n"})
    _age(ws)
    snap = make()
    snap.snapshot()
    (ws / "a.txt").write_text("two\n")
    assert [c.path for c in snap.status()] == ["a.txt"]
    info = snap.snapshot()
    snap.restore(snap.list()[1].id)
    assert (ws / "a.txt").read_text() == "one\n"
    snap.restore(info.id)
    assert (ws / "a.txt").read_text() == "two\n"


def test_folder_tables_are_never_changed_in_place() -> None:
    """A scan shares the tables of the folders that matched: editing the cache must copy."""
    cache = StatCache.from_paths({"d/a": (0o100644, 1, 1, 1, 1, b"\1" * 20), "d/b": (0o100644, 2, 2, 2, 2, b"\2" * 20)})
    shared = cache.folder("d")
    before = dict(shared)
    cache.apply({"d/c": (0o100644, 3, 3, 3, 3, b"\3" * 20)})
    cache.apply({"d/a": None})
    cache.apply({"d/b": None, "e/x": (0o100755, 4, 4, 4, 4, b"\4" * 20)})
    assert shared == before
    assert set(cache.folder("d")) == {"c"} and set(cache.folder("e")) == {"x"}
    cache.apply({"d/c": None})
    assert "d" not in cache.folders and cache.count() == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_in_place_of_a_tracked_file_drops_it_and_nothing_else(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"d/f.txt": "f\n", "d/g.txt": "g\n", "h.txt": "h\n"})
    _age(ws)
    snap = make()
    first = snap.snapshot()
    (ws / "d" / "f.txt").unlink()
    os.mkfifo(ws / "d" / "f.txt")
    second = snap.snapshot()
    assert [(d.path, d.status) for d in snap.diff(first.id, second.id)] == [("d/f.txt", "deleted")]
    assert [(s.path, s.reason.value) for s in second.skipped] == [("d/f.txt", "not-a-regular-file")]
    third = snap.snapshot()
    assert third.tree_id == second.tree_id and snap.last_scan.files_hashed == 0


def test_a_cache_of_the_previous_format_is_ignored_not_misread(tmp_path: Path) -> None:
    """Version 6 held each folder's sizes where version 7 holds end offsets: a
    v6 file, checksum and all, loads as an empty cache (a full re-hash), never
    as records read at the wrong offsets."""
    records = {f"d{i % 3}/f{i}": (0o100644, i, i, i, i, bytes([i]) * 20) for i in range(30)}
    cache = StatCache.from_paths(records, {"d0": (10, b"\1" * 20)})
    path = str(tmp_path / "cache")
    statcache.save(path, cache)
    body = bytearray(Path(path).read_bytes()[: -statcache._TRAILER])
    at = len(statcache._MAGIC)
    header = list(statcache._HEADER.unpack_from(body, at))
    header[0] = 6
    statcache._HEADER.pack_into(body, at, *header)
    index = at + statcache._HEADER.size + sum(header[6:9])
    previous = (0, 0)
    for n in range(header[1]):  # v6: (files, size of names) per folder, not running ends
        ends = statcache._FOLDER.unpack_from(body, index + n * statcache._FOLDER.size)
        statcache._FOLDER.pack_into(
            body, index + n * statcache._FOLDER.size, ends[0] - previous[0], ends[1] - previous[1]
        )
        previous = ends
    Path(path).write_bytes(bytes(body) + hashlib.sha1(bytes(body)).digest())
    old = statcache.load(path)
    assert old.folders == {} and old.dirs == {} and old.shapes == {} and old.folder_count() == 0
    assert old.folder("d1") == {}
    statcache.save(path, cache)  # rewritten in the current format, it reads back whole
    assert dict(statcache.load(path).paths()) == records


def test_a_cache_checked_by_sha1_as_version_7_wrote_it_is_ignored(tmp_path: Path) -> None:
    """Version 8 ends with a CRC-32 (1.6 ms for the 7.8 MB of 100,000 files, where
    SHA-1 took 6.7 ms on each load and each save); a version-7 file, its SHA-1
    trailer and all, loads as an empty cache (a full re-hash), never misread."""
    records = {f"d{i % 3}/f{i}": (0o100644, i, i, i, i, bytes([i]) * 20) for i in range(30)}
    path = str(tmp_path / "cache")
    statcache.save(path, StatCache.from_paths(records, {"d0": (10, b"\1" * 20)}))
    body = bytearray(Path(path).read_bytes()[: -statcache._TRAILER])
    at = len(statcache._MAGIC)
    header = list(statcache._HEADER.unpack_from(body, at))
    header[0] = 7
    statcache._HEADER.pack_into(body, at, *header)
    Path(path).write_bytes(bytes(body) + hashlib.sha1(bytes(body)).digest())
    old = statcache.load(path)
    assert old.folder_count() == 0 and old.dirs == {} and old.shapes == {}


def test_a_flipped_bit_anywhere_in_the_cache_empties_it(tmp_path: Path) -> None:
    """The trailing checksum covers every byte: one bit flipped in the header, a name,
    a record, a folder's tree id or the trailer itself, and the cache loads empty."""
    records = {f"d{i % 3}/f{i}": (0o100644, i, i, i, i, bytes([i]) * 20) for i in range(30)}
    path = str(tmp_path / "cache")
    statcache.save(path, StatCache.from_paths(records, {"d0": (10, b"\1" * 20)}))
    data = Path(path).read_bytes()
    assert dict(statcache.load(path).paths()) == records
    for at in range(len(statcache._MAGIC), len(data), 7):
        damaged = bytearray(data)
        damaged[at] ^= 1 << (at % 8)
        Path(path).write_bytes(bytes(damaged))
        assert statcache.load(path).folder_count() == 0, at


def test_a_loaded_cache_unpacks_each_folder_when_first_asked(tmp_path: Path) -> None:
    records = {f"d{i % 4}/f{i}": (0o100644, i, i, i, i, bytes([i]) * 20) for i in range(40)}
    cache = StatCache.from_paths(records)
    path = str(tmp_path / "cache")
    statcache.save(path, cache)
    loaded = statcache.load(path)
    assert loaded.tables == {} and loaded.folder_count() == 4  # nothing unpacked yet
    assert loaded.folder("d2") == cache.folder("d2") and loaded.folder("d2") is loaded.folder("d2")
    assert set(loaded.tables) == {"d2"} and loaded.folder_count() == 4
    assert loaded.folder("nowhere") == {} and loaded.folder("") == {}
    loaded.apply({"d3/f3": None})  # a change to a folder not unpacked yet keeps its other records
    assert set(loaded.folder("d3")) == {f"f{i}" for i in range(7, 40, 4)}
    assert loaded.folders == {**cache.folders, "d3": loaded.folder("d3")} and loaded.folder_count() == 4


def test_a_cache_saved_after_a_block_waits_for_its_end_and_trusts_nothing_early(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """``cache_saved_after`` (the watcher answers first, then saves): inside the
    block nothing is saved, a file recorded since the last save is read again,
    another process still gets the right snapshot; the block's end saves."""
    write(ws, _files(20))
    _age(ws)
    snap = make()
    snap.snapshot()
    saved = Path(snap.store_path, "snapshotter", "statcache")
    before = saved.read_bytes()
    with snap.cache_saved_after():
        write(ws, {"d0/f0.txt": "changed 0\n"})
        first = snap.snapshot()
        assert saved.read_bytes() == before  # not saved yet
        again = snap.snapshot()
        assert again.tree_id == first.tree_id and snap.last_scan.files_hashed == 1  # not trusted before the save
        other = make()  # another process reads the older cache: slower, never wrong
        assert other.status() == [] and saved.read_bytes() == before
        other.close()
        time.sleep(0.1)  # the save's mtime lands past the changed file's
    assert saved.read_bytes() != before
    snap.snapshot()
    assert snap.last_scan.files_hashed == 0
    reopened = make()
    reopened.snapshot()
    assert reopened.last_scan.files_hashed == 0  # the saved cache holds the change


def _round_trip(tmp_path: Path, cache: StatCache) -> StatCache:
    path = str(tmp_path / "cache")
    statcache.save(path, cache)
    return statcache.load(path)


def test_a_cache_without_a_file_record_keeps_its_folders(tmp_path: Path) -> None:
    """An empty workspace's cache (folders, no file): its folder records, listings
    and shapes read back, never an error nor an empty cache."""
    cache = StatCache(
        dirs={"": (1, b"\1" * 20), "empty": (0, b"\2" * 20)},
        listings={"": (b"\3" * 20, frozenset())},
        shapes={"": (1, 2, 3, b"\4" * 20, False, ("empty",))},
        tracked=b"\5" * 20,
    )
    loaded = _round_trip(tmp_path, cache)
    assert (loaded.dirs, loaded.listings, loaded.shapes, loaded.tracked) == (
        cache.dirs,
        cache.listings,
        cache.shapes,
        cache.tracked,
    )
    assert loaded.folders == {} and loaded.size_hint() == 0


def test_each_folders_ignored_names_read_back_as_its_own(tmp_path: Path) -> None:
    """Listings hold the names the rules ignore in each folder, all folders' in
    one block: each must get back its own slice (counts 2, 1, 3, 0, 2 here)."""
    listings = {
        "": (b"\1" * 20, frozenset({".env", "x.log"})),
        "a": (b"\2" * 20, frozenset({"a.log"})),
        "b": (b"\3" * 20, frozenset({"b1.log", "b2.log", "node_modules"})),
        "c": (b"\4" * 20, frozenset()),
        "d": (b"\5" * 20, frozenset({"d1.log", "d2.log"})),
    }
    cache = StatCache.from_paths({"a/f": (0o100644, 1, 1, 1, 1, b"\6" * 20)})
    cache.listings.update(listings)
    assert _round_trip(tmp_path, cache).listings == listings


@pytest.mark.parametrize("tracked", [b"", hashlib.sha1(b"index").digest()])
def test_the_checksum_of_the_tracked_paths_reads_back(tmp_path: Path, tracked: bytes) -> None:
    """None (no git index): read back as none, so an unchanged workspace without
    an index is not taken for one whose index changed."""
    cache = StatCache.from_paths({"f": (0o100644, 1, 1, 1, 1, b"\6" * 20)})
    cache.tracked = tracked
    assert _round_trip(tmp_path, cache).tracked == tracked


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="names that are not UTF-8 exist on Linux only")
def test_names_that_are_not_utf8_read_back(tmp_path: Path) -> None:
    name = os.fsdecode(b"caf\xe9.txt")  # Latin-1, as an old tool may have named it
    records = {name: (0o100644, 1, 1, 1, 1, b"\6" * 20), f"d{name}/x": (0o100644, 2, 2, 2, 2, b"\7" * 20)}
    cache = StatCache.from_paths(records, {f"d{name}": (1, b"\1" * 20)})
    loaded = _round_trip(tmp_path, cache)
    assert dict(loaded.paths()) == records and loaded.dirs == cache.dirs


def test_a_cache_past_the_size_of_a_side_file_is_still_read(tmp_path: Path) -> None:
    """The cache may hold hundreds of thousands of records: it is read up to its
    own cap (``CAP``), not the 1 MiB of the small side files."""
    records = {f"folder{i % 50}/file{i}.txt": (0o100644, i, i, i, i, i.to_bytes(20, "big")) for i in range(20_000)}
    path = str(tmp_path / "cache")
    statcache.save(path, StatCache.from_paths(records))
    assert os.path.getsize(path) > fsutil.SIDE_FILE_CAP
    assert statcache.load(path).size_hint() == len(records)


def test_a_change_forgets_the_tree_of_every_folder_above_it(tmp_path: Path) -> None:
    """A folder's record (entry count, tree id) no longer holds once a path
    below it changed: every one above the change goes, the others stay."""
    tree = b"\1" * 20
    cache = StatCache.from_paths(
        {"a/b/c/f": (0o100644, 1, 1, 1, 1, tree), "x/g": (0o100644, 1, 1, 1, 1, tree)},
        {"": (2, tree), "a": (1, tree), "a/b": (1, tree), "a/b/c": (1, tree), "x": (1, tree)},
    )
    cache.apply({"a/b/c/f": (0o100644, 2, 2, 2, 2, b"\2" * 20)})
    assert cache.dirs == {"x": (1, tree)}


def test_a_saved_cache_holds_its_tables_packed_as_a_load_would(tmp_path: Path) -> None:
    """A long-lived process (the library, a server) walks with the cache it saved last: its
    tables must be the packed views a new process loads (checked on their bytes, ``all_match``),
    not the dicts a restore or a scan built, which a walk checks record by record."""
    from snapshotter.engine.worktree.packedfolder import PackedFolder

    records = {f"d{i % 4}/f{i}": (0o100644, i, i, i, i, bytes([i]) * 20) for i in range(40)}
    cache = StatCache.from_paths(records)
    shared = cache.folder("d1")  # a scan may hold this very table
    before = dict(shared)
    path = str(tmp_path / "cache")
    statcache.save(path, cache)
    assert all(type(cache.folder(f"d{i}")) is PackedFolder for i in range(4))
    assert dict(cache.paths()) == records and shared == before
    assert cache.folders == statcache.load(path).folders
    with open(path, "rb") as handle:
        saved = handle.read()
    statcache.save(path, cache)  # saved again from the packed bytes: the same file
    with open(path, "rb") as handle:
        assert handle.read() == saved
    cache.apply({"d2/f2": None, "d2/new": (0o100755, 7, 7, 7, 7, b"\7" * 20)})  # and still changed by copy
    assert "f2" not in cache.folder("d2") and "new" in cache.folder("d2")


def test_saves_of_saves_keep_every_record_whatever_changed_between(tmp_path: Path) -> None:
    """A save writes runs of unchanged folders from the bytes they were loaded from (or
    packed into by the save before) and changed ones anew: through generations of
    changes to scattered folders, saved with and without a load between, every
    record reads back, in memory and from the file."""
    import random

    rng = random.Random(5)
    records = {f"d{i % 40}/f{i}": (0o100644, i, i, i, i, bytes([i % 256]) * 20) for i in range(800)}
    path = str(tmp_path / "cache")
    cache = StatCache.from_paths(records)
    for generation in range(12):
        changes: dict[str, tuple[int, int, int, int, int, bytes] | None] = {}
        for path_changed in rng.sample(sorted(records), 25):
            changes[path_changed] = None if rng.random() < 0.3 else (0o100755, generation, 1, 2, 3, b"\7" * 20)
        changes[f"new{generation}/x"] = (0o100644, 1, 2, 3, 4, b"\1" * 20)
        cache.apply(changes)
        for changed, record in changes.items():
            if record is None:
                records.pop(changed, None)
            else:
                records[changed] = record
        statcache.save(path, cache)
        assert dict(cache.paths()) == records
        assert dict(statcache.load(path).paths()) == records
        if generation % 3 == 0:
            cache = statcache.load(path)
