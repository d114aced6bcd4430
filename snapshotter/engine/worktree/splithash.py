"""Hashing on two cores: the tail of a walk's queue in a forked copy.

A cold snapshot reads, hashes and compresses every file: about 60 us of
Python and system calls per small file, which threads cannot share (see
``secondcore``). With many files queued, a copy of the process hashes the
tail of the queue into a pack of its own while the walk hashes the head into
its own, and sends back what each file hashed to. Only small regular files
go to the copy: big ones stay with the walk's threads (``hashing``).

The copy's answers count only once it has said it is done: its pack sealed,
synced and in place, so that no snapshot can name an object that is not in
the store. A copy that fails or dies leaves its share to the walk, which
hashes it as if alone. Either way every file is hashed exactly as a walk
alone hashes it, with the same outcome when it cannot be read.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import struct
from collections.abc import Callable, Iterator
from typing import Any

from snapshotter.engine.gitstore.objectwriter import FileChanged, Hashed, ObjectWriter
from snapshotter.engine.worktree import secondcore
from snapshotter.engine.worktree.walkstate import Pending
from snapshotter.model import SkipReason

MIN_FILES = 2_000
"""Below this many files to hash, a fork costs more than the copy saves."""

_RESULT = struct.Struct("<IB20sIQqqQQq")
"""The file's place in the queue; its outcome (see ``_OUTCOMES``); blob id,
stat key (mode, size, mtime_ns, ctime_ns, inode), size read, lines (-1: binary).
The last record has the place ``_DONE``, and in place of a blob id what the
copy added to the store (``_ADDED``)."""
_DONE = 0xFFFFFFFF
_ADDED = struct.Struct("<QQI")  # bytes, loose objects, packs: 20 bytes, a blob id's room
_OUTCOMES: tuple[SkipReason | None, ...] = (None, SkipReason.VANISHED, SkipReason.UNREADABLE, SkipReason.CHANGING)
_OVERHEAD = 4096  # a file's fixed cost, in bytes hashed, when splitting the queue
_FLUSH = 256  # the copy sends its results this many at a time

Outcome = Hashed | SkipReason
HashOne = Callable[[Pending, ObjectWriter, bool], Hashed]
ReasonOf = Callable[[BaseException], SkipReason]


class SplitHashing:
    """The copy hashing a share of the queue, and its results so far: kept as
    received (87 bytes a file) and decoded one by one as the walk takes them,
    in the queue's order, which is the order the copy sent them in."""

    def __init__(self, copy: secondcore.Copy, pending: list[Pending], first: int, big: int) -> None:
        self._copy = copy
        self._pending = pending
        self._first = first
        self._big = big
        self._received: list[bytes] = []
        self._results: Iterator[tuple[Any, ...]] | None = None
        self._ahead: tuple[Any, ...] | None = None
        self.hashed = 0
        """How many files the copy hashed that the walk took."""

    @classmethod
    def start(
        cls,
        pending: list[Pending],
        writer: ObjectWriter,
        write: bool,
        hash_one: HashOne,
        reason_of: ReasonOf,
        big: int,
    ) -> SplitHashing | None:
        """A copy hashing about half of ``pending`` (by ``hash_one``, into its
        own writer; files of ``big`` bytes or more stay with the walk), or None
        where it would not pay or may not be made."""
        if len(pending) < MIN_FILES or not secondcore.available():
            return None
        first = _tail_start(pending, big)

        def job(out: int) -> None:
            share = [(index, pending[index]) for index in range(first, len(pending)) if _small(pending[index], big)]
            _hash_share(share, writer, write, hash_one, reason_of, out)

        copy = secondcore.start(job, blocking=False)
        return cls(copy, pending, first, big) if copy is not None else None

    def owns(self, index: int) -> bool:
        """Whether the file at ``index`` in the queue is the copy's to hash."""
        return index >= self._first and _small(self._pending[index], self._big)

    def receive(self) -> None:
        """Take the results that have arrived, without waiting (the pipe holds only 64 KiB)."""
        if not self._copy.done:
            self._received.extend(self._copy.chunks(_RESULT.size))

    def result(self, index: int, writer: ObjectWriter) -> Outcome | None:
        """The copy's outcome for the file at ``index``, once the copy is done
        (waiting for it the first time); None if the copy failed: hash it yourself.
        What the copy added to the store is added to ``writer.written``."""
        if self._results is None:
            self._results = self._settle(writer)
            self._ahead = next(self._results, None)
        record = self._ahead
        while record is not None and record[0] < index:
            record = next(self._results, None)
        if record is None or record[0] != index:
            self._ahead = record
            return None  # not answered by the copy (it failed): the walk hashes it
        self._ahead = next(self._results, None)
        _, outcome, sha, mode, size, mtime, ctime, inode, read, lines = record
        reason: SkipReason | None = _OUTCOMES[outcome]
        if reason is not None:
            return reason
        self.hashed += 1
        return Hashed(sha, (mode, size, mtime, ctime, inode), read, None if lines < 0 else lines)

    def stop(self) -> None:
        """End the copy if it still runs (the walk failed), and reap it."""
        self._copy.stop()

    def _settle(self, writer: ObjectWriter) -> Iterator[tuple[Any, ...]]:
        """Wait for the copy to end; its results if it ended done, else none."""
        os.set_blocking(self._copy.reader, True)
        self.receive()
        received, self._received = self._received, []
        last = received[-1][-_RESULT.size :] if received else b""
        if not self._copy.finish() or not last or _RESULT.unpack(last)[0] != _DONE:
            return iter(())
        writer.count_written(*_ADDED.unpack(_RESULT.unpack(last)[2]))
        return itertools.chain.from_iterable(_RESULT.iter_unpack(chunk) for chunk in received)


def _small(item: Pending, big: int) -> bool:
    """A file the copy may hash: a regular file under ``big`` bytes."""
    return not item.is_link and item.size < big


def _tail_start(pending: list[Pending], big: int) -> int:
    """Where the copy's share begins: from there to the end, the small
    regular files make about half the queue's work (bytes plus a fixed cost
    per file)."""
    total = sum(item.size + _OVERHEAD for item in pending)
    taken = 0
    index = len(pending)
    while index > 0 and taken * 2 < total:
        index -= 1
        item = pending[index]
        if _small(item, big):
            taken += item.size + _OVERHEAD
    return index


def _hash_share(
    items: list[tuple[int, Pending]],
    writer: ObjectWriter,
    write: bool,
    hash_one: HashOne,
    reason_of: ReasonOf,
    out: int,
) -> None:
    """The copy's work: hash its share into a writer of its own (never the
    walk's: its open pack is the walk's), then say it is done."""
    own = writer.sibling()
    sent: list[bytes] = []
    with own.batch() if write else contextlib.nullcontext():
        for index, item in items:
            try:
                found = hash_one(item, own, write)
            except (OSError, FileChanged) as exc:  # the workspace file's: a store failure ends the copy
                sent.append(_RESULT.pack(index, _OUTCOMES.index(reason_of(exc)), b"", 0, 0, 0, 0, 0, 0, 0))
            else:
                lines = -1 if found.lines is None else found.lines
                sent.append(_RESULT.pack(index, 0, found.sha, *found.key, found.size, lines))
            if len(sent) >= _FLUSH:
                secondcore.send(out, b"".join(sent))
                sent.clear()
    own.make_durable()
    size, loose, packs = own.written
    sent.append(_RESULT.pack(_DONE, 0, _ADDED.pack(size, loose, packs), 0, 0, 0, 0, 0, 0, 0))
    secondcore.send(out, b"".join(sent))
