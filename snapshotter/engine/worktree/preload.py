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
The copy counts in that memory each piece it writes to the pipe, before and
after, and the walk reads the pipe only when the count has moved: asking an
empty pipe at every folder whose verdict has not come cost a system call and
an exception each, 3,200 to 5,500 a no-change walk of 100,000 files. It also
writes there the place in the walk's order from which it has sent its verdicts:
the walk asks for none before that place (the copy works from the far end).

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
``MIN_FILES`` files, and where the thread that does the same check in C
(``preloadthread``) is not there: the C loop not built.
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
_MOVES = struct.Struct("<q")
"""The copy's count of moves on the pipe, after ``_REACHED``: one before and one
after each piece it writes (see ``_send``)."""
_MOVES_AT = _REACHED.size
_SENT_FROM = struct.Struct("<q")
"""The place in the walk's order of the last folder whose verdict the copy has
sent (the nearest to the walk's start), after ``_MOVES``: before it there is no
verdict to ask for."""
_SENT_FROM_AT = _MOVES_AT + _MOVES.size
_NOTHING_SENT = 2**62
SHARED_BYTES = _SENT_FROM_AT + _SENT_FROM.size
"""The memory the walk and the copy share: ``_REACHED``, ``_MOVES``, ``_SENT_FROM``."""
_PIECE = 4096 // _VERDICT.size * _VERDICT.size
"""The most the copy writes at once: whole verdicts in a page, which the
smallest pipe holds once the walk has drained it (see ``_send``)."""


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
        self._read_at = 0
        """The copy's count of moves when the walk last read the pipe."""

    @classmethod
    def start(cls, workspace: str, cache: StatCache, cutoff: int) -> Preload | None:
        """A copy checking ``cache``'s trusted folders of ``workspace``, or None
        where it would not pay or may not be made."""
        if not secondcore.available() or cache.size_hint() < MIN_FILES:
            return None
        reached = shared_memory()
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

    def may_hold(self, place: int) -> bool:
        """Whether the copy may have sent the verdict of the folder at this place
        of the walk's order (it has sent those from some place on): if not, asking
        for it is useless (a few calls at each folder the walk checks itself).
        Always, where the walk waits for the copy (``WAIT_FOR_COPY``). Either
        way what the copy has sent is read: the copy, ahead, may have filled the
        pipe with the verdicts of folders the walk has not come to."""
        if WAIT_FOR_COPY:
            return True
        self._drain()
        return sent_from(self._reached, place)

    def reached(self, folders: int) -> None:
        """The walk has reached this many folders of its order (and checks the
        last itself): the copy need not check any of them."""
        _REACHED.pack_into(self._reached, 0, folders)

    def _verdict(self, table: Folder) -> tuple[int, int, int, int] | None:
        key = _key(table)
        verdicts = self._verdicts
        if key not in verdicts:
            self._drain()
        found = verdicts.get(key)
        return found if found is not None and found[0] != _MISMATCH else None

    def _drain(self) -> None:
        """Take the verdicts the copy has sent, if it has moved on the pipe since
        the last read: asking an empty pipe costs a system call and an exception."""
        moves = _MOVES.unpack_from(self._reached, _MOVES_AT)[0]
        if (moves != self._read_at or WAIT_FOR_COPY) and not self._copy.done:
            self._read_at = moves
            verdicts = self._verdicts
            for source, place, total, mtime, ctime, inode in self._copy.records(_VERDICT):
                verdicts[source, place] = (total, mtime, ctime, inode)  # type: ignore[index,assignment]

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
    last = len(order)  # the place of the last folder with a verdict in ``sent``
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
        last = index
        files += len(table)
        if files >= _FLUSH_FILES:
            _send(out, b"".join(sent), reached, last)
            sent.clear()
            files = 0
    if sent:
        _send(out, b"".join(sent), reached, last)


def _send(out: int, data: bytes, shared: mmap.mmap, place: int) -> None:
    """Write ``data`` to the pipe a piece at a time, counting a move in the
    shared memory before and after each piece: the walk reads the pipe when
    that count has moved (``Preload._verdict``). Before: a piece fits the pipe
    once the walk has drained what came before it, so the copy never waits on
    a walk that has seen the count and read already. After: a walk that read
    between the two finds the piece on its next look. Then the verdicts of the
    folders from ``place`` of the walk's order on are all sent (``sent_from``)."""
    for at in range(0, len(data), _PIECE):
        _MOVES.pack_into(shared, _MOVES_AT, pipe_moves(shared) + 1)
        secondcore.send(out, data[at : at + _PIECE])
        _MOVES.pack_into(shared, _MOVES_AT, pipe_moves(shared) + 1)
    _SENT_FROM.pack_into(shared, _SENT_FROM_AT, place)


def shared_memory() -> mmap.mmap:
    """The memory the walk and its copy share (anonymous, so each sees the
    other's writes): the walk has reached no folder, the copy sent nothing."""
    shared = mmap.mmap(-1, SHARED_BYTES)
    _SENT_FROM.pack_into(shared, _SENT_FROM_AT, _NOTHING_SENT)
    return shared


def sent_from(shared: mmap.mmap, place: int) -> bool:
    """Whether the copy has sent the verdicts of the folders from this place of the walk's order on."""
    return bool(place >= _SENT_FROM.unpack_from(shared, _SENT_FROM_AT)[0])


def pipe_moves(shared: mmap.mmap) -> int:
    """The copy's count of moves on the pipe (only the copy writes it)."""
    return int(_MOVES.unpack_from(shared, _MOVES_AT)[0])


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
