"""A big object's restore, checked by the CRC-32 its pack index keeps for each entry it reads.

Hashing a restored 1 GiB file again against its id costs a SHA-1 of it
(0.63 s here), more than the 1.5x of ``cp`` (0.28 s) a restore may take; and
``git checkout`` does not do it either (it inflates each entry, trusting the
store as ``git fsck`` left it). A pack index (version 2) keeps the CRC-32 of
every entry's stored bytes (header, zlib stream: for a key frame in stored
blocks, the content itself). A restore checks each entry it reads from, on a
thread of its own while the file is written (``isal``'s CRC-32 with the
``fast`` extra, 0.05 s a GiB, else zlib's); a mismatch fails the restore with
StoreError naming the object, after the last piece, so the file is written
under a name of its own and put in place only once checked (``fsops``).
``verify()`` still hashes every blob against its id.

A key frame whose stored blocks were copied from where they were expected,
headers unread (``storedblocks.expected_blocks``), has its entry carry those
headers: the check compares each with the bytes it reads anyway, and one
that is not where it was expected fails the restore as a damaged CRC-32 does
(the CRC-32 alone would pass a healthy entry laid out otherwise).
"""

from __future__ import annotations

import errno
import os
import threading
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from snapshotter.engine.gitstore.deflate import crc32
from snapshotter.engine.gitstore.indexformat import PackIndex
from snapshotter.engine.gitstore.spancopy import Span
from snapshotter.errors import VERIFY, StoreError

_READ = 1 << 20
_PREADV: Callable[[int, list[memoryview], int], int] | None = getattr(os, "preadv", None)


@dataclass(frozen=True)
class CheckedEntry:
    """A packed entry a restore reads: where it is and the CRC-32 its index keeps."""

    pack: str
    """The pack's path less ``.pack`` (for messages)."""
    fd: int
    """The pack, open (renamed by an append meanwhile, it is still this file)."""
    offset: int
    length: int
    crc: int
    sha: bytes
    headers: Callable[[], Iterator[tuple[int, bytes]]] | None = None
    """The block headers expected in it, (offset in the pack, bytes), in order;
    None: none to check (they were read before the copy, or it has none)."""


def entries_at(base: str, fd: int, index: PackIndex, offsets: list[int]) -> list[CheckedEntry]:
    """The entries of ``base`` (open as ``fd``) at ``offsets``: each ends where
    the next entry of the pack begins (the last before the pack's checksum)."""
    pack_size = os.fstat(fd).st_size
    listed = sorted((offset, sha, crc) for sha, offset, crc in index.entries())
    starts = [offset for offset, _, _ in listed]
    found = []
    for offset in offsets:
        at = bisect_right(starts, offset) - 1
        if at < 0 or starts[at] != offset:
            raise StoreError(f"{os.path.basename(base)}.idx does not list an entry its pack reads; run verify()")
        end = starts[at + 1] if at + 1 < len(starts) else pack_size - 20
        found.append(CheckedEntry(base, fd, offset, end - offset, listed[at][2], listed[at][1]))
    return found


class EntryCheck:
    """The CRC-32 of ``entries`` computed on a thread (their packs stay open until it ends)."""

    def __init__(self, entries: list[CheckedEntry]) -> None:
        self._entries = entries
        self._stop = threading.Event()
        self._failure: StoreError | None = None
        self._thread = threading.Thread(target=self._run, name="snapshotter-crc", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for entry in self._entries:
                if self._stop.is_set():
                    return
                crc, laid_out = _crc_of(entry, self._stop)
                if (crc != entry.crc or not laid_out) and not self._stop.is_set():
                    where = os.path.basename(entry.pack) + ".pack"
                    what = "the CRC-32 check its index keeps" if laid_out else "the check of its block headers"
                    self._failure = StoreError(
                        f"object {entry.sha.hex()} in {where} fails {what}; the store is damaged", VERIFY
                    )
                    return
        except OSError as exc:
            self._failure = StoreError(f"cannot check a pack the restore reads: {exc.strerror}", VERIFY)

    def wait(self) -> None:
        """Wait for the check; StoreError if an entry does not match."""
        self._thread.join()
        if self._failure is not None:
            raise self._failure

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _crc_of(entry: CheckedEntry, stop: threading.Event) -> tuple[int, bool]:
    """The CRC-32 of ``entry``, and whether its expected headers are all where
    expected (True where it has none to check)."""
    buffer = bytearray(min(_READ, max(entry.length, 1)))
    view = memoryview(buffer)
    headers = entry.headers() if entry.headers is not None else iter(())
    header = next(headers, None)
    value, at, left = 0, entry.offset, entry.length
    while left and not stop.is_set():
        want = min(left, len(buffer))
        if _PREADV is not None:
            got = _PREADV(entry.fd, [view[:want]], at)
            piece: bytes | memoryview = view[:got]
        else:  # no preadv (older macOS); without pread (Windows) no restore comes here
            piece = os.pread(entry.fd, want, at)
            got = len(piece)
        if got <= 0:
            raise OSError(errno.EIO, "the pack is shorter than its index says")
        value = crc32(piece, value)
        end = at + got
        while header is not None and header[0] + len(header[1]) <= end:
            position, expected = header
            if position < entry.offset:
                return value, False
            if position >= at:
                found: bytes | memoryview = piece[position - at : position - at + len(expected)]
            else:  # begun in the piece before
                found = os.pread(entry.fd, len(expected), position)
            if found != expected:
                return value, False
            header = next(headers, None)
        at = end
        left -= got
    return value, header is None


class CheckedCopy:
    """An object's content as pieces (bytes, and spans of its packs copied as
    they are), its entries' CRC-32 checked meanwhile: iterated to its end, it
    raises StoreError if one does not match. Written under a name of its own
    first (see ``fsops``), as the check ends after the last piece; ``close``
    lets go of its packs (iterated or not)."""

    def __init__(
        self,
        sha: bytes,
        pieces: Iterator[bytes | Span],
        entries: list[CheckedEntry],
        close: Callable[[], None],
        size: int | None = None,
    ) -> None:
        self.sha = sha
        self.size = size
        """The bytes the pieces make (for the writer to reserve them on disk first)."""
        self._pieces = pieces
        self._entries = entries
        self._close = close

    def __iter__(self) -> Iterator[bytes | Span]:
        check = EntryCheck(self._entries)
        try:
            yield from self._pieces
            check.wait()
        finally:
            check.stop()
            self.close()

    def close(self) -> None:
        close: Callable[[], None] | None = getattr(self._pieces, "close", None)
        if close is not None:
            close()
        self._close()
