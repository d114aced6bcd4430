"""The racy-timestamp rule on every path that applies it.

A file is taken unchanged without being read only if its stat equals its
stat-cache record and its mtime is below the racy cutoff: the moment the cache
was written, by the filesystem's clock. A file rewritten (same size) within the
tick in which the cache was written has a record equal to its stat, and an
mtime equal to the cache file's: it must be hashed again.

The walk applies the rule on several paths, and a test that reaches one proves
nothing about the others: a folder trusted unchanged (its own stat is its
shape's) whose table is still the packed bytes of the cache file, or decoded;
the same two checked by the preload's forked copy; a folder listed again; a
host whose files take their modes from their records. Each test here makes
the race on one of those paths, and checks the path was the one taken.

The race is made by hand, as the tick cannot be caught: the file is rewritten
in place (its folder's stat does not change, so the folder stays trusted), its
record is pinned to its new stat (the walk that hashed it saw that stat, in
the cache's tick), and the cache file's mtime is set to the file's.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pytest
from conftest import alone_in_this_process, needs_second_core, no_child_left, write

from snapshotter import Snapshotter
from snapshotter.engine import fsutil
from snapshotter.engine.worktree import hostfs, preload, statcache
from snapshotter.engine.worktree.packedfolder import PackedFolder
from snapshotter.engine.worktree.statcache import StatCache

FILES = {
    "top.txt": "top\n",
    "d/a.txt": "aaaa\n",
    "d/b.txt": "bbbb\n",
    "e/c.txt": "cccc\n",
    "e/f/g.txt": "gggg\n",
}


def _settle() -> None:
    """Long enough for every folder's own stat to have settled (``fsutil.settled``)."""
    time.sleep(fsutil.RECENT_NS / 1e9 + 0.03)


def _cache_file(snap: Snapshotter) -> str:
    return os.path.join(snap.store_path, "snapshotter", "statcache")


def _first(ws: Path, home: Path, **options: object) -> Snapshotter:
    """An instance that snapshotted ``FILES`` once their folders had settled, so
    that it recorded every folder's shape: the next walk trusts them all."""
    write(ws, FILES)
    _settle()
    snap = Snapshotter(ws, home=home, **options)  # type: ignore[arg-type]
    snap.snapshot()
    assert "d" in statcache.load(_cache_file(snap)).shapes, "the folder's shape is recorded"
    return snap


def _rewrite_in_place(path: Path, text: bytes) -> os.stat_result:
    """Rewrite a file's bytes, same size, without touching its folder's stat."""
    folder = os.stat(path.parent)
    with open(path, "r+b") as handle:
        assert len(handle.read()) == len(text)
        handle.seek(0)
        handle.write(text)
    after = os.stat(path.parent)
    assert (after.st_mtime_ns, after.st_ctime_ns) == (folder.st_mtime_ns, folder.st_ctime_ns)
    return os.lstat(path)


def _pin(cache: StatCache, rel: str, st: os.stat_result) -> None:
    """Make ``rel``'s record equal its stat ``st``, keeping the old blob id and
    its folder's shape: as if the walk that hashed it saw ``st``."""
    folder = rel.rpartition("/")[0]
    shape = cache.shapes[folder]
    old = cache.folder(folder)[rel.rpartition("/")[2]]
    cache.apply({rel: (*fsutil.stat_key(st), old[5])})
    cache.shapes[folder] = shape  # ``apply`` drops it; the folder's own stat did not change


def _race_on_disk(snap: Snapshotter, ws: Path) -> None:
    """Make the race in the cache file: the next instance loads the record packed."""
    st = _rewrite_in_place(ws / "d" / "a.txt", b"AAAA\n")
    path = _cache_file(snap)
    cache = statcache.load(path)
    _pin(cache, "d/a.txt", st)
    statcache.save(path, cache)
    os.utime(path, ns=(st.st_mtime_ns, st.st_mtime_ns))  # the cache was written in the file's tick


def _race_in_memory(snap: Snapshotter, ws: Path) -> None:
    """Make the race in the stat cache ``snap`` holds: its tables are decoded."""
    st = _rewrite_in_place(ws / "d" / "a.txt", b"AAAA\n")
    cache = snap._engine_ok()._cache
    assert cache is not None
    _pin(cache, "d/a.txt", st)
    cache.written_ns = st.st_mtime_ns  # the cache was written in the file's tick


def _assert_hashed_again(snap: Snapshotter, ws: Path, tmp_path: Path) -> None:
    """The snapshot just taken by ``snap`` read the rewritten file, and holds
    what a cold snapshot of the workspace holds."""
    tree = snap.list()[0].tree_id
    with Snapshotter(ws, home=tmp_path / "cold") as cold:
        assert tree == cold.snapshot().tree_id, "the rewritten file was taken unchanged"
    assert snap.last_scan.files_hashed == 1


def test_a_trusted_folder_checked_on_the_packed_cache(ws: Path, home: Path, tmp_path: Path) -> None:
    """``PackedFolder.all_match``: a new instance, folder trusted, table packed."""
    first = _first(ws, home)
    first.close()
    _race_on_disk(first, ws)
    with Snapshotter(ws, home=home, second_core=False) as snap:
        assert isinstance(snap._engine_ok()._current_cache().folder("d"), PackedFolder)
        snap.snapshot()
        assert snap.last_scan.dirs_listed == 0, "the folder was trusted, not listed"
        _assert_hashed_again(snap, ws, tmp_path)


def test_a_trusted_folder_checked_on_decoded_records(ws: Path, home: Path, tmp_path: Path) -> None:
    """The walk's per-file loop on a trusted folder: the same instance, its table decoded."""
    with _first(ws, home, second_core=False) as snap:
        _race_in_memory(snap, ws)
        assert not isinstance(snap._engine_ok()._current_cache().folder("d"), PackedFolder)
        snap.snapshot()
        assert snap.last_scan.dirs_listed == 0, "the folder was trusted, not listed"
        _assert_hashed_again(snap, ws, tmp_path)


def test_a_listed_folder(ws: Path, home: Path, tmp_path: Path) -> None:
    """The walk's per-file loop on a folder listed again (its shape dropped)."""
    first = _first(ws, home)
    first.close()
    _race_on_disk(first, ws)
    path = _cache_file(first)
    cache = statcache.load(path)
    written = os.stat(path).st_mtime_ns
    del cache.shapes["d"]
    statcache.save(path, cache)
    os.utime(path, ns=(written, written))
    with Snapshotter(ws, home=home, second_core=False) as snap:
        snap.snapshot()
        assert snap.last_scan.dirs_listed == 1, "the folder was listed"
        _assert_hashed_again(snap, ws, tmp_path)


def test_a_host_whose_files_take_their_modes_from_records(
    ws: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No exec bit (a FAT drive, Windows): every file is compared in ``classify._examine``."""
    host = dataclasses.replace(hostfs.POSIX, exec_bit=False)
    assert host.needs_recorded_modes
    monkeypatch.setattr(hostfs, "detect", lambda root: host)
    first = _first(ws, home)
    first.close()
    _race_on_disk(first, ws)
    with Snapshotter(ws, home=home) as snap:
        snap.snapshot()
        _assert_hashed_again(snap, ws, tmp_path)
        snap.snapshot()
        assert snap.last_scan.files_hashed == 0, "unchanged files are still taken from their records"


@needs_second_core
@pytest.mark.parametrize("where", ["on disk", "in memory"])
def test_a_folder_checked_by_the_preload_copy(
    where: str, ws: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The preload's forked copy vouches for folders on the same rule: packed
    tables (a new instance) and decoded ones (the same instance)."""
    monkeypatch.setattr(preload, "MIN_FILES", 0)
    monkeypatch.setattr(preload, "WAIT_FOR_COPY", True)
    alone_in_this_process()
    snap = _first(ws, home)
    if where == "on disk":
        snap.close()
        _race_on_disk(snap, ws)
        snap = Snapshotter(ws, home=home)
    else:
        _race_in_memory(snap, ws)
    with snap:
        snap.snapshot()
        stats = snap.last_scan
        assert stats.dirs_listed == 0, "every folder was trusted, not listed"
        _assert_hashed_again(snap, ws, tmp_path)
        assert stats.dirs_preloaded == 3, "the copy vouched for every folder with files but the rewritten one"
    assert no_child_left()


def test_a_folder_changed_in_the_caches_tick_is_listed_again(ws: Path, home: Path, tmp_path: Path) -> None:
    """The rule for a folder's own stat (``trust``): a shape taken in the cache's
    tick may hide a change made in the same tick, so it vouches for nothing."""
    first = _first(ws, home)
    first.close()
    write(ws, {"d/new.txt": "new\n"})
    own = os.stat(ws / "d")
    path = _cache_file(first)
    cache = statcache.load(path)
    shape = cache.shapes["d"]
    cache.shapes["d"] = (own.st_mtime_ns, own.st_ctime_ns, own.st_ino, *shape[3:])  # taken before new.txt, same tick
    statcache.save(path, cache)
    os.utime(path, ns=(own.st_ctime_ns, own.st_ctime_ns))
    with Snapshotter(ws, home=home, second_core=False) as snap:
        info = snap.snapshot()
        assert snap.last_scan.dirs_listed == 1, "only the racy folder was listed"
        with Snapshotter(ws, home=tmp_path / "cold") as cold:
            assert info.tree_id == cold.snapshot().tree_id, "the file added in the cache's tick was missed"
