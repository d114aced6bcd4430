"""The racy-timestamp rule, in one place: when a stat vouches for a stat-cache record.

A file is taken unchanged, without being read, only if its stat (mode, size,
mtime, ctime where it means something, inode) equals its record **and** the
record is fresh: its mtime is below the cache's cutoff, the moment the cache
file was written by the filesystem's own clock, less the clock's granularity
where it is coarse (``cutoff``). A file rewritten (same size) within the tick in
which the cache was written has a stat equal to its record, and an mtime at or
above the cutoff: it is hashed again (git's "racy git" problem). A folder's
shape is held to the same rule by its ctime (``trust``).

``fresh`` is the rule. The walk applies it to every file on one of three paths:

- ``unchanged_files``: each file against its record, as tuples (a folder
  listed again; a trusted folder whose table is decoded, in the walk or in the
  preload's copy; the files of a folder whose packed check failed);
- ``PackedFolder.all_match``: every file of a trusted folder against the cache
  file's packed bytes, in the walk or in the preload's copy;
- ``classify._examine``, with ``fresh`` itself: where modes carry over from the
  records (no exec bit), every file, compared by its effective mode;

and to every folder's shape, by its ctime (``FolderTrust.unchanged``; the
preload's copy skips such a folder). All but ``_examine`` run for every file or
folder of a no-change snapshot, a few comparisons each and no call: they
compare as ``fresh`` does, inline, with a comment that names it.
tests/test_racy.py makes the race on each path and checks that path was taken.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from snapshotter.engine.fsutil import USE_CTIME, FileStat
from snapshotter.engine.worktree.packedfolder import Record

COARSE_GRANULARITY_NS = 2_000_000_000
"""A cache file whose mtime is a whole second is on a filesystem with a coarse
clock: FAT keeps 2-second mtimes."""

NOTHING_FRESH = -(2**63)
"""A cutoff below every time: every record is racy, every file examined."""

Miss = tuple[str, Record | None, FileStat]
"""A file that did not match its record: its name, the record (None: it has
none) and its stat."""


def cutoff(written_ns: int) -> int:
    """The racy cutoff for a cache file written at ``written_ns`` (its mtime;
    0: not known, so every record is racy)."""
    if written_ns == 0:
        return NOTHING_FRESH
    granularity = COARSE_GRANULARITY_NS if written_ns % 1_000_000_000 == 0 else 0
    return written_ns - granularity


def fresh(time_ns: int, cutoff: int) -> bool:
    """The rule: whether a record (or a folder's shape) taken with this mtime (or
    ctime) may vouch for a stat that equals it. Not if the time is at or above
    the cutoff: a change made later within the same tick would not show."""
    return time_ns < cutoff


def unchanged_files(
    pairs: Iterable[tuple[str, Record | None]], lstat: Callable[..., FileStat], fd: int, cutoff: int
) -> tuple[int, int, list[Miss], list[str]]:
    """Check each file of ``pairs`` (name, its record or None), ``lstat``ed in
    folder ``fd``, against its record: how many matched and their total size,
    the files that did not (``Miss``), and those gone."""
    hits = 0
    size = 0
    misses: list[Miss] = []
    vanished: list[str] = []
    # The hot loop: one lstat per file; a file that matches its record costs a
    # few comparisons and nothing else (no tuple, no call, no insertion).
    for name, record in pairs:
        try:
            st = lstat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            vanished.append(name)
            continue
        if (
            record is not None
            and record[2] == st.st_mtime_ns
            and record[2] < cutoff  # ``fresh``, inlined
            and record[1] == st.st_size
            and record[0] == st.st_mode
            and record[4] == st.st_ino
            and (record[3] == st.st_ctime_ns or not USE_CTIME)
        ):  # the record's kind is a file or symlink: no need to test st_mode's
            hits += 1
            size += record[1]
            continue
        misses.append((name, record, st))
    return hits, size, misses, vanished
