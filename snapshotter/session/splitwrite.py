"""Writing on two cores: the second half of a restore's files in a forked copy.

A restore spends most of its time in system calls, one ``unlink``, ``open``,
``write``, ``fstat`` and ``close`` per file (120 us for the ``unlink`` alone
on this machine's ext4), which Python threads cannot share (see
``checkout.apply_plan``). Two processes writing distinct files were measured
1.6x faster than one. So with many files to write, a copy of the process
(``worktree.secondcore``) writes the second half of the plan's writes, in
path order (the two halves seldom share a folder), and sends back each
file's stat key; the restore writes the first half.

The restore records only what the copy says it wrote. A copy that fails or
dies leaves the rest of its half to the restore, which writes it as if alone
(a file the copy wrote but had not reported yet is written again: the same
content, so no harm), and meets the same error, if any, itself. When the
restore fails, it stops the copy before anything else happens, so that
putting the workspace back never races it.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator, Sequence

from snapshotter.compare.treediff import Entry
from snapshotter.fsutil import StatKey
from snapshotter.worktree import secondcore

MIN_FILES = 1_000
"""Below this many files to write, the fork (about 10 ms) costs more than the copy saves."""

_RECORD = struct.Struct("<IIQqqQ")
"""The file's place in the plan's writes; its stat key (mode, size, mtime_ns, ctime_ns, inode)."""
_FLUSH = 256  # the copy sends its answers this many at a time

WriteOne = Callable[[str, Entry], StatKey]
"""Writes one entry of the plan and returns the stat key to record for it."""


class SplitWriting:
    """The copy writing ``writes[first:]``, and what it has reported so far."""

    def __init__(self, copy: secondcore.Copy, first: int) -> None:
        self._copy = copy
        self.first = first

    @classmethod
    def start(cls, writes: Sequence[tuple[str, Entry]], write_one: WriteOne) -> SplitWriting | None:
        """A copy writing the second half of ``writes`` with ``write_one``, or
        None where it would not pay or may not be made."""
        if len(writes) < MIN_FILES or not secondcore.available():
            return None
        first = len(writes) // 2

        def job(out: int) -> None:
            answers: list[bytes] = []
            try:
                for index in range(first, len(writes)):
                    path, entry = writes[index]
                    answers.append(_RECORD.pack(index, *write_one(path, entry)))
                    if len(answers) == _FLUSH:
                        secondcore.send(out, b"".join(answers))
                        answers.clear()
            finally:  # what was written before a failure, too
                secondcore.send(out, b"".join(answers))

        copy = secondcore.start(job, blocking=False)
        return cls(copy, first) if copy is not None else None

    def received(self) -> Iterator[tuple[int, StatKey]]:
        """The files the copy reported written since last asked, without
        waiting (the pipe holds only 64 KiB: ask every few files)."""
        for chunk in self._copy.chunks(_RECORD.size):
            for index, mode, size, mtime, ctime, inode in _RECORD.iter_unpack(chunk):
                yield index, (mode, size, mtime, ctime, inode)

    def finish(self) -> Iterator[tuple[int, StatKey]]:
        """Wait for the copy to end; the files it reported written meanwhile."""
        os.set_blocking(self._copy.reader, True)
        yield from self.received()  # reads until the copy closes its end
        self._copy.finish()

    def stop(self) -> None:
        """End the copy if it still runs (the restore failed), and reap it."""
        self._copy.stop()
