"""A second core for the walk's hot loop, as git's ``preload-index`` is.

A no-change snapshot of a big workspace is one ``lstat`` per file, compared
with its stat-cache record (``PackedFolder.all_match``). Git spreads those
calls over threads; here a forked copy of this process (``secondcore``)
checks the cache's trusted folders from the far end of the walk's order,
while the walk works from the near end, and sends back which folders matched
whole. The walk takes a folder's verdict if it has arrived when it gets there
and checks the folder itself otherwise, so the two meet in the middle and the
result is the same as checking alone. The walk tells the copy how far it got
(a counter in memory both share), so the copy stops where the walk has been
instead of checking folders again; it is stopped when the walk ends anyway.

A folder the copy vouched for is taken without being opened again
(``readdir.take_vouched``): the copy saw its own stat equal its shape before
checking its files, which is what the walk would check, a moment earlier.

The copy checks exactly what the walk would: the same records, with the
same loops, racy rule and cutoff (``racy``), files ``lstat``ed relative to the
folder opened without following a symlink, and only in a folder whose own
stat still equals its cached shape, which the walk also requires before it
asks (see ``trust``). A verdict is only "every file matched, this many bytes"
or "check it yourself".

A folder without a shape (a restore wrote to it since it was listed) must be
listed again. The copy lists it too, when it holds files and no folder: if
its own stat had settled before the listing, the listing holds exactly the
names of the folder's table and each file matches its record, the verdict
carries that stat. The walk takes it only for a folder whose stat is still
that one, and only if those names are the listing it last judged under the
same rules with nothing ignored (``FolderTrust.same_names``): then listing
the folder itself would find what the copy found.

It runs where ``secondcore`` may make a copy, for a cache of at least
``MIN_FILES`` files.
"""

from __future__ import annotations

import mmap
import os
import struct
import time

from snapshotter.engine.fsutil import DIR_FLAGS, NO_FOLLOW, settled
from snapshotter.engine.worktree import secondcore
from snapshotter.engine.worktree.listing import list_folder
from snapshotter.engine.worktree.packedfolder import PackedFolder, names_of
from snapshotter.engine.worktree.racy import unchanged_files
from snapshotter.engine.worktree.statcache import Folder, StatCache
from snapshotter.engine.worktree.trust import same_stat

MIN_FILES = 20_000
"""Below this many cached files a fork costs more than the copy saves."""

WAIT_FOR_COPY = False
"""For tests: the walk waits for all the copy's verdicts, so every folder the
copy vouches for is taken on its word (otherwise which side checks which
folder depends on their speeds)."""

_VERDICT = struct.Struct("<QQqqqQ")
"""The folder's table (see ``_key``); total bytes, or -1: check it yourself;
the folder's own stat (mtime_ns, ctime_ns, inode) the verdict holds for."""
_DECODED = 2**64 - 1  # no place in loaded bytes: a decoded table
_FLUSH_FILES = 500  # the copy sends its verdicts after about this many files
_MISMATCH = -1
_REACHED = struct.Struct("<q")
"""How many folders of its order the walk has reached, in the memory both share."""


def walk_order(cache: StatCache) -> list[str]:
    """The folders in the order a walk that finds every folder as its shape
    says visits them (``walker._visit_all``: a stack, subfolders pushed in their
    shape's order); folders without a shape end the walk's way down."""
    shapes = cache.shapes
    order: list[str] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        order.append(rel)
        shape = shapes.get(rel)
        if shape is not None:
            prefix = rel + "/" if rel else ""
            stack.extend(prefix + name for name in shape[5])
    return order


class Seen:
    """A folder's own stat as the copy saw it before checking its files."""

    __slots__ = ("st_ctime_ns", "st_ino", "st_mtime_ns")

    def __init__(self, mtime_ns: int, ctime_ns: int, inode: int) -> None:
        self.st_mtime_ns = mtime_ns
        self.st_ctime_ns = ctime_ns
        self.st_ino = inode


class Preload:
    """The forked copy checking folders from the far end of the walk's order,
    and the verdicts it has sent so far."""

    def __init__(self, copy: secondcore.Copy, reached: mmap.mmap) -> None:
        self._copy = copy
        self._reached = reached
        self._verdicts: dict[tuple[int, int], tuple[int, int, int, int]] = {}

    @classmethod
    def start(cls, workspace: str, cache: StatCache, cutoff: int) -> Preload | None:
        """A copy checking ``cache``'s trusted folders of ``workspace``, or None
        where it would not pay or may not be made."""
        if not secondcore.available() or cache.size_hint() < MIN_FILES:
            return None
        reached = mmap.mmap(-1, _REACHED.size)  # anonymous and shared: the copy sees the walk's writes
        copy = secondcore.start(
            lambda out: _check_from_the_end(workspace, cache, cutoff, out, reached), blocking=WAIT_FOR_COPY
        )
        if copy is None:
            reached.close()
            return None
        return cls(copy, reached)

    def total(self, table: Folder) -> int | None:
        """The total size of the files of ``table`` (a trusted or relisted
        folder's records) if the copy found every one as recorded; None if it
        found one that was not, or has not got there yet."""
        verdict = self._verdict(table)
        return verdict[0] if verdict is not None else None

    def vouched(self, table: Folder) -> tuple[int, Seen] | None:
        """For a folder the copy found every file of ``table`` in as recorded:
        their total size, and the folder's own stat the copy saw first (for a
        folder with a shape, equal to it); else None."""
        verdict = self._verdict(table)
        return (verdict[0], Seen(*verdict[1:])) if verdict is not None else None

    def relisted(self, table: Folder, own: os.stat_result) -> bool:
        """Whether the copy listed the folder of ``table`` (one without a shape)
        under the stat ``own`` and found exactly the table's names, every file
        as recorded."""
        verdict = self._verdict(table)
        return verdict is not None and same_stat(own, *verdict[1:])

    def reached(self, folders: int) -> None:
        """The walk has reached this many folders of its order (and checks the
        last itself): the copy need not check any of them."""
        _REACHED.pack_into(self._reached, 0, folders)

    def _verdict(self, table: Folder) -> tuple[int, int, int, int] | None:
        key = _key(table)
        verdicts = self._verdicts
        if key not in verdicts and not self._copy.done:
            for source, place, total, mtime, ctime, inode in self._copy.records(_VERDICT):
                verdicts[source, place] = (total, mtime, ctime, inode)  # type: ignore[index,assignment]
        found = verdicts.get(key)
        return found if found is not None and found[0] != _MISMATCH else None

    def stop(self) -> None:
        """End the copy, wherever it is, and reap it."""
        self._copy.stop()
        self._reached.close()


def _check_from_the_end(workspace: str, cache: StatCache, cutoff: int, out: int, reached: mmap.mmap) -> None:
    """The copy's loop: each folder the walk may trust, last visited first,
    until it comes to those the walk has reached."""
    order = walk_order(cache)
    root = workspace.rstrip(os.sep) or os.sep
    shapes = cache.shapes
    lstat = os.stat
    walk_reached = _REACHED.unpack_from
    sent: list[bytes] = []
    files = 0
    for index in range(len(order) - 1, -1, -1):
        if index < walk_reached(reached)[0]:
            break
        rel = order[index]
        shape = shapes.get(rel)
        if shape is not None and shape[1] >= cutoff:  # racy (``racy.fresh``, inlined): the walk lists it again,
            continue  # no verdict is asked for
        table = cache.folder(rel)
        if not table:
            continue
        try:
            fd = os.open(os.path.join(root, rel) if rel else root, DIR_FLAGS | NO_FOLLOW if rel else DIR_FLAGS)
        except OSError:
            continue
        try:
            own = os.fstat(fd)
            if shape is None:
                same = _holds_only(fd, own, table)
            else:
                same = same_stat(own, shape[0], shape[1], shape[2])
            if not same:
                total = None
            elif type(table) is PackedFolder:
                total = table.all_match(lstat, fd, cutoff)
            else:
                _, size, misses, gone = unchanged_files(table.items(), lstat, fd, cutoff)
                total = None if misses or gone else size
        except OSError:
            continue  # the walk will say why
        finally:
            os.close(fd)
        verdict = _MISMATCH if total is None else total
        sent.append(_VERDICT.pack(*_key(table), verdict, own.st_mtime_ns, own.st_ctime_ns, own.st_ino))
        files += len(table)
        if files >= _FLUSH_FILES:
            secondcore.send(out, b"".join(sent))
            sent.clear()
            files = 0
    if sent:
        secondcore.send(out, b"".join(sent))


def _holds_only(fd: int, own: os.stat_result, table: Folder) -> bool:
    """Whether the folder open as ``fd``, listed now, holds the names of
    ``table`` and nothing else, no folder among them; only if its stat ``own``,
    taken before, had settled (a later change cannot hide in the same tick)."""
    if not settled(own, time.time_ns()):
        return False
    entries = list_folder("", fd)
    if len(entries) != len(table):
        return False
    names = set(names_of(table))
    return all(entry.name in names and not entry.is_dir(follow_symlinks=False) for entry in entries)


def _key(table: Folder) -> tuple[int, int]:
    """What tells a table from every other the walk may ask about, the same in
    both processes: for a packed one, the loaded bytes it views and its place in
    them (the copy makes its own view of them); for a decoded one, its identity.
    Both objects were there before the fork and are held by the cache, so they
    are at the same address in both processes."""
    return table.place if type(table) is PackedFolder else (id(table), _DECODED)
