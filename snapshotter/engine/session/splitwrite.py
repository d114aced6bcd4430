"""Writing on two cores: the second half of a restore's deletes and writes in a forked copy.

A restore spends most of its time in system calls, one ``unlink``, ``open``,
``write``, ``fstat`` and ``close`` per file (120 us for the ``unlink`` alone
on this machine's ext4), which Python threads cannot share (see
``checkout.apply_plan``). Two processes writing distinct files were measured
1.6x faster than one. So with many files to delete, and then many to write,
a copy of the process (``worktree.secondcore``) takes the second half of
each list, in path order (the two halves seldom share a folder), and sends
back each file's stat key; the restore does the first half.

The restore records only what the copy says it did. A copy that fails or
dies leaves the rest of its half to the restore, which does it as if alone
(a file the copy wrote but had not reported yet is written again: the same
content, so no harm), and meets the same error, if any, itself. When the
restore fails, it stops the copy before anything else happens, so that
putting the workspace back never races it.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

from snapshotter.engine.fsutil import StatKey
from snapshotter.engine.worktree import secondcore

MIN_FILES = 1_000
"""Below this many files, the fork (about 10 ms) costs more than the copy saves."""

_RECORD = struct.Struct("<IIQqqQ")
"""The item's place in the list; the stat key (mode, size, mtime_ns, ctime_ns,
inode) to record for it, all zero for none (a deletion)."""
_NO_KEY = (0, 0, 0, 0, 0)
_FLUSH = 256  # the copy sends its answers this many at a time

Item = TypeVar("Item")
DoOne = Callable[[Item], "StatKey | None"]
"""Deletes or writes one item and returns the stat key to record for it, if any."""
Done = Callable[[int, "StatKey | None"], None]
"""Told of each item done, by its place in the list, by either process."""


class Split(Generic[Item]):
    """The copy doing ``items[first:]``, and what it has reported so far."""

    def __init__(self, copy: secondcore.Copy, first: int) -> None:
        self._copy = copy
        self.first = first

    @classmethod
    def start(cls, items: Sequence[Item], do_one: DoOne[Item]) -> Split[Item] | None:
        """A copy doing the second half of ``items`` with ``do_one``, or None
        where it would not pay or may not be made."""
        if len(items) < MIN_FILES or not secondcore.available():
            return None
        first = len(items) // 2

        def job(out: int) -> None:
            answers: list[bytes] = []
            try:
                for index in range(first, len(items)):
                    answers.append(_RECORD.pack(index, *(do_one(items[index]) or _NO_KEY)))
                    if len(answers) == _FLUSH:
                        secondcore.send(out, b"".join(answers))
                        answers.clear()
            finally:  # what was done before a failure, too
                secondcore.send(out, b"".join(answers))

        copy = secondcore.start(job, blocking=False)
        return cls(copy, first) if copy is not None else None

    def received(self) -> Iterator[tuple[int, StatKey | None]]:
        """The items the copy reported done since last asked, without waiting
        (the pipe holds only 64 KiB: ask every few items)."""
        for chunk in self._copy.chunks(_RECORD.size):
            for index, mode, size, mtime, ctime, inode in _RECORD.iter_unpack(chunk):
                yield index, (mode, size, mtime, ctime, inode) if mode else None

    def finish(self) -> Iterator[tuple[int, StatKey | None]]:
        """Wait for the copy to end; the items it reported done meanwhile."""
        os.set_blocking(self._copy.reader, True)
        yield from self.received()  # reads until the copy closes its end
        self._copy.finish()

    def stop(self) -> None:
        """End the copy if it still runs (the restore failed), and reap it."""
        self._copy.stop()


def do_all(items: Sequence[Item], do_one: DoOne[Item], done: Done, second_core: bool) -> None:
    """``do_one`` for every item, telling ``done`` of each: the second half in
    a copy (where ``second_core`` allows and it pays), the rest here, and
    whatever a failed copy left undone here too. A failure here stops the
    copy before it is raised."""
    split = Split.start(items, do_one) if second_core else None
    if split is None:
        for index, item in enumerate(items):
            done(index, do_one(item))
        return
    answered: set[int] = set()

    def take(answers: Iterator[tuple[int, StatKey | None]]) -> None:
        for index, key in answers:
            answered.add(index)
            done(index, key)

    try:
        for index in range(split.first):
            done(index, do_one(items[index]))
            if index % 64 == 0:
                take(split.received())
        take(split.finish())
        for index in range(split.first, len(items)):
            if index not in answered:
                done(index, do_one(items[index]))
    finally:
        split.stop()
