"""A loaded stat cache's folder tables stay packed: a walk checks an unchanged
folder on the saved bytes and decodes nothing, and any difference still shows."""

from __future__ import annotations

import os
import time
import zlib
from pathlib import Path

from conftest import write

from snapshotter.engine.worktree import statcache
from snapshotter.engine.worktree.packedfolder import PackedFolder
from snapshotter.engine.worktree.statcache import StatCache


def _age(ws: Path, seconds: float = 10) -> None:
    """Every file's and folder's mtime into the past: nothing racy, every folder trusted."""
    past = time.time() - seconds
    for dirpath, dirnames, filenames in os.walk(ws):
        for name in filenames + dirnames:
            os.utime(os.path.join(dirpath, name), (past, past), follow_symlinks=False)


def _cache_of(folder: Path) -> StatCache:
    records = {}
    for name in sorted(os.listdir(folder)):
        st = os.lstat(folder / name)
        records[f"d/{name}"] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, b"\1" * 20)
    return StatCache.from_paths(records)


def test_a_packed_folder_matches_on_its_bytes_and_decodes_only_when_read(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    write(folder, {f"f{i}.txt": "x" * i for i in range(1, 6)})
    _age(folder)
    path = str(tmp_path / "cache")
    statcache.save(path, _cache_of(folder))
    loaded = statcache.load(path)
    table = loaded.folder("d")
    assert isinstance(table, PackedFolder) and len(table) == 5 and not table.decoded
    fd = os.open(folder, os.O_RDONLY)
    try:
        far = time.time_ns() + 10**12
        assert table.all_match(os.stat, fd, far) == 1 + 2 + 3 + 4 + 5
        assert not table.decoded  # checked on the packed bytes
        newest = max(os.lstat(folder / name).st_mtime_ns for name in os.listdir(folder))
        assert table.all_match(os.stat, fd, newest) is None  # a racy record never matches
        (folder / "f3.txt").write_text("yyy")  # same size, new mtime
        assert table.all_match(os.stat, fd, far) is None
        (folder / "f3.txt").unlink()
        assert table.all_match(os.stat, fd, far) is None
    finally:
        os.close(fd)
    assert table == _cache_of_saved(path) and table.decoded
    assert table["f1.txt"][1] == 1 and table.get("nowhere") is None and "f5.txt" in table


def _cache_of_saved(path: str) -> dict[str, tuple[int, int, int, int, int, bytes]]:
    return dict(statcache.load(path).folder("d").items())


def test_an_unchanged_packed_table_is_saved_again_byte_for_byte(tmp_path: Path) -> None:
    records = {f"d{i % 3}/f{i}": (0o100644, i, i, i, i, bytes([i]) * 20) for i in range(30)}
    path = str(tmp_path / "cache")
    statcache.save(path, StatCache.from_paths(records))
    first = Path(path).read_bytes()
    loaded = statcache.load(path)
    statcache.save(path, StatCache(loaded.folders, loaded.dirs))  # every table still packed
    assert Path(path).read_bytes() == first
    assert not any(isinstance(t, PackedFolder) and t.decoded for t in loaded.folders.values())
    loaded.apply({"d1/f1": None})  # one table decoded and copied; the others saved from their bytes
    changed = loaded.folder("d1")
    assert not isinstance(changed, PackedFolder)
    statcache.save(path, loaded)
    del records["d1/f1"]
    assert dict(statcache.load(path).paths()) == records
    assert loaded.packed["d1"][0] is changed  # packed from the dict; the cache then holds it packed
    assert all(isinstance(t, PackedFolder) for t in loaded.folders.values())


def test_a_folder_whose_names_do_not_fit_its_records_empties_the_cache(tmp_path: Path) -> None:
    """A writer's bug (the checksum holds): never records read against the wrong names."""
    records = {f"d/f{i}": (0o100644, i, i, i, i, bytes([i]) * 20) for i in range(4)}
    path = str(tmp_path / "cache")
    statcache.save(path, StatCache.from_paths(records))
    body = bytearray(Path(path).read_bytes()[: -statcache._TRAILER])
    at = body.index(b"f0\0f1\0")
    body[at + 2] = ord("x")  # two names run together: three names for four records
    Path(path).write_bytes(bytes(body) + zlib.crc32(body).to_bytes(statcache._TRAILER, "little"))
    broken = statcache.load(path)
    assert broken.folder_count() == 0 and broken.folder("d") == {}


def test_a_reopened_no_change_walk_decodes_no_table_and_still_sees_a_change(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {f"d{i % 4}/f{i}.txt": f"content {i}\n" for i in range(40)})
    _age(ws)
    time.sleep(0.2)  # every folder's ctime (set by the ageing) older than the walks by 100 ms: trusted
    make().snapshot()
    first = make().snapshot()  # its cache holds every folder's shape: the next walk lists none
    snap = make()  # a new load of the saved cache
    scan = snap._engine.scan(write=False)
    assert scan.tree_id.hex() == first.tree_id and scan.stats.files_hashed == 0 and scan.stats.files_seen == 40
    assert scan.stats.dirs_listed == 0
    tables = [node.records for node in scan.nodes.values() if node.records]
    assert len(tables) == 4 and all(isinstance(t, PackedFolder) and not t.decoded for t in tables)
    path = ws / "d2" / "f6.txt"
    path.write_text("content 6\n".upper())  # same size
    past = time.time() - 5
    os.utime(path, (past, past))
    second = make().snapshot()
    assert second.tree_id != first.tree_id
    assert [c.path for c in make().diff(first.id, second.id)] == ["d2/f6.txt"]
