"""Which stats a stat-cache record vouches for, on both checks that apply it.

A file is taken unchanged, unread, only if its stat equals its record in every
field (mode, size, mtime, ctime where it means something, inode) and its mtime
is below the racy cutoff (``worktree/racy.py``). Two checks apply the rule:
``racy.unchanged_files`` on decoded records and ``PackedFolder.all_match`` on the
cache file's packed bytes. Each case here gives both the same folder and the
same records and asks the same question, so a check that skips a field, follows
a symlink, or miscounts what it saw fails here (the walk-level tests in
tests/test_racy.py show each path is taken). ``all_match`` runs each case twice:
as compiled (``_statmatch``, where it was built) and in Python.

The stats are made real: a file rewritten with its old mtime put back (as
``rsync -t``, ``tar`` and ``cp -p`` do) differs from its record only in its
ctime; a file given a future mtime (a clock-skewed network share, an unpacked
archive) is never vouched for, however old its record.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import write

from snapshotter.engine.fsutil import USE_CTIME
from snapshotter.engine.worktree import packedfolder, racy, statcache
from snapshotter.engine.worktree.packedfolder import PackedFolder, Record
from snapshotter.engine.worktree.statcache import StatCache

BLOB = b"\1" * 20
PAST_NS = 1_500_000_000_123_456_789
"""An mtime long before any cutoff a test uses."""
FAR_NS = time.time_ns() + 10**12
"""A cutoff after every mtime and ctime a test makes: only the fields decide."""


def _record(path: Path) -> Record:
    st = os.lstat(path)
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, BLOB)


def _records(folder: Path) -> dict[str, Record]:
    return {name: _record(folder / name) for name in sorted(os.listdir(folder))}


@contextmanager
def _open(folder: Path) -> Iterator[int]:
    fd = os.open(folder, os.O_RDONLY)
    try:
        yield fd
    finally:
        os.close(fd)


def _packed(tmp_path: Path, records: dict[str, Record]) -> PackedFolder:
    path = str(tmp_path / "statcache")
    statcache.save(path, StatCache.from_paths({f"d/{name}": record for name, record in records.items()}))
    table = statcache.load(path).folder("d")
    assert isinstance(table, PackedFolder)
    return table


def _both(tmp_path: Path, folder: Path, records: dict[str, Record], cutoff: int = FAR_NS) -> tuple[int, int | None]:
    """How many files ``unchanged_files`` vouches for, and ``all_match``'s total (None: not all)."""
    packed = _packed(tmp_path, records)
    with _open(folder) as fd:
        hits, _, _, _ = racy.unchanged_files(records.items(), os.stat, fd, cutoff)
        return hits, packed.all_match(os.stat, fd, cutoff)


@pytest.fixture(autouse=True, params=["compiled", "python"])
def stat_loop(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which loop ``all_match`` runs: the C one, or the same in Python."""
    if request.param == "python":
        monkeypatch.setattr(packedfolder, "_compiled_all_match", None)
    elif packedfolder._compiled_all_match is None:
        pytest.skip("the stat loop is not compiled here (tests/test_statmatch.py says whether it should be)")
    return str(request.param)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "d"
    write(folder, {"a.txt": "aaaa\n", "b.txt": "bb\n", "c.txt": "cccccc\n"})
    for name in os.listdir(folder):
        os.utime(folder / name, ns=(PAST_NS, PAST_NS))
    return folder


def test_files_equal_to_their_records_are_vouched_for_and_their_sizes_summed(tmp_path: Path, folder: Path) -> None:
    records = _records(folder)
    with _open(folder) as fd:
        hits, size, misses, gone = racy.unchanged_files(records.items(), os.stat, fd, FAR_NS)
    assert (hits, size, misses, gone) == (3, 5 + 3 + 7, [], [])
    with _open(folder) as fd:
        assert _packed(tmp_path, records).all_match(os.stat, fd, FAR_NS) == 15


def test_a_file_rewritten_with_its_old_mtime_put_back_is_read_again(tmp_path: Path, folder: Path) -> None:
    """Same size, same mtime, same inode: only the ctime tells (where it means something)."""
    records = _records(folder)
    time.sleep(0.02)  # a ctime the clock can tell from the record's
    with open(folder / "b.txt", "r+b") as handle:
        handle.write(b"BB\n")
    os.utime(folder / "b.txt", ns=(PAST_NS, PAST_NS))
    st = os.lstat(folder / "b.txt")
    assert (st.st_size, st.st_mtime_ns, st.st_ino) == records["b.txt"][1:3] + (records["b.txt"][4],)
    if not USE_CTIME:
        pytest.skip("this platform's ctime is not a change time")
    assert st.st_ctime_ns != records["b.txt"][3]
    assert _both(tmp_path, folder, records) == (2, None)


@pytest.mark.parametrize(
    ("field", "change"),
    [(0, 0o111), (1, 1), (1, -1), (2, 1), (2, -1), (3, 1), (3, -1), (4, 1), (4, -1)],
    ids=["mode", "size+1", "size-1", "mtime+1", "mtime-1", "ctime+1", "ctime-1", "inode+1", "inode-1"],
)
def test_a_record_differing_in_any_field_vouches_for_nothing(
    tmp_path: Path, folder: Path, field: int, change: int
) -> None:
    """Each field is compared for equality: a stat above or below the record in
    one field (a file grown or cut, an mtime moved back, a new inode) is read."""
    records = _records(folder)
    if field == 3 and not USE_CTIME:
        pytest.skip("this platform's ctime is not a change time")
    record = list(records["b.txt"])
    record[field] = record[field] ^ change if field == 0 else record[field] + change
    records["b.txt"] = tuple(record)  # type: ignore[assignment]
    assert _both(tmp_path, folder, records) == (2, None)


def test_a_file_with_a_future_mtime_is_never_vouched_for(tmp_path: Path, folder: Path) -> None:
    """Its mtime is at or past the cutoff, its ctime before it: the mtime decides."""
    cutoff = time.time_ns() + 10**9
    os.utime(folder / "c.txt", ns=(PAST_NS, cutoff + 10**10))
    records = _records(folder)
    assert records["c.txt"][3] < cutoff <= records["c.txt"][2]
    assert _both(tmp_path, folder, records, cutoff) == (2, None)
    os.utime(folder / "c.txt", ns=(PAST_NS, cutoff))  # exactly at the cutoff: racy too
    records = _records(folder)
    assert _both(tmp_path, folder, records, cutoff) == (2, None)
    os.utime(folder / "c.txt", ns=(PAST_NS, cutoff - 1))
    records = _records(folder)
    assert _both(tmp_path, folder, records, cutoff) == (3, 15)


def test_an_unchanged_symlink_is_vouched_for_by_its_own_record_not_its_targets(tmp_path: Path, folder: Path) -> None:
    os.symlink("a.txt", folder / "link")
    os.utime(folder / "link", ns=(PAST_NS, PAST_NS), follow_symlinks=False)
    records = _records(folder)
    assert _both(tmp_path, folder, records) == (4, 5 + 3 + 7 + len("a.txt"))


def test_a_file_gone_since_the_listing_is_reported_and_the_rest_still_checked(tmp_path: Path, folder: Path) -> None:
    records = _records(folder)
    (folder / "a.txt").unlink()
    with _open(folder) as fd:
        hits, size, misses, gone = racy.unchanged_files(records.items(), os.stat, fd, FAR_NS)
    assert (hits, size, misses, gone) == (2, 3 + 7, [], ["a.txt"])
    with _open(folder) as fd:
        assert _packed(tmp_path, records).all_match(os.stat, fd, FAR_NS) is None


def test_a_file_without_a_record_is_a_miss_with_its_stat(folder: Path) -> None:
    records: dict[str, Record | None] = dict(_records(folder))
    records["b.txt"] = None
    with _open(folder) as fd:
        hits, size, misses, gone = racy.unchanged_files(records.items(), os.stat, fd, FAR_NS)
    assert (hits, size, gone) == (2, 5 + 7, [])
    assert [(name, record, st.st_size) for name, record, st in misses] == [("b.txt", None, 3)]


@pytest.mark.parametrize(
    ("written_ns", "expected"),
    [
        (0, racy.NOTHING_FRESH),
        (1_700_000_000_000_000_000, 1_700_000_000_000_000_000 - racy.COARSE_GRANULARITY_NS),
        (1_700_000_000_000_000_001, 1_700_000_000_000_000_001),
        (1_700_000_000_500_000_000, 1_700_000_000_500_000_000),
    ],
    ids=["unknown", "whole-second", "fine", "half-second"],
)
def test_the_cutoff_is_the_cache_files_mtime_less_a_coarse_clocks_tick(written_ns: int, expected: int) -> None:
    assert racy.cutoff(written_ns) == expected
    assert not racy.fresh(expected, expected) and racy.fresh(expected - 1, expected)


def test_a_packed_table_answers_lookups_as_its_records_do(tmp_path: Path, folder: Path) -> None:
    """Lookups decode the packed records (a name that is not UTF-8 too, as the
    filesystem gave it); a default is returned only for a name it lacks."""
    odd = os.fsdecode(b"\xff-latin1.txt")
    (folder / odd).write_bytes(b"odd\n")
    records = _records(folder)
    table = _packed(tmp_path, records)
    assert table.names() == sorted(records) and odd in table.names()
    assert table.get("b.txt") == records["b.txt"] and table.get(odd, records["a.txt"]) == records[odd]
    assert table.get("nowhere") is None and table.get("nowhere", records["a.txt"]) == records["a.txt"]
    assert ("c.txt", records["c.txt"]) in table.items() and ("c.txt", records["a.txt"]) not in table.items()
    assert dict(table.items()) == records and table.as_dict() is table.as_dict()
    with _open(folder) as fd:
        assert table.all_match(os.stat, fd, FAR_NS) == 5 + 3 + 7 + 4
