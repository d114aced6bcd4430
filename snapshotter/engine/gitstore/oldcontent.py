"""The previous version of a big file, read forward once beside the new one, to compare chunks in place.

A changed big file is mostly unchanged chunks at their old places (a
database rewrites pages in place). The matcher found each by hashing its 64
blocks with SHA-1 and comparing the chunk's digest with the signature's: a
second SHA-1 pass over the whole file on the main thread (0.57 s of a 1 GiB
snapshot's 0.94 s here). Compared with the previous version's stored bytes
instead (``bytes.startswith``: a ``memcmp``, 0.04 ms a MiB against 0.57 ms
for the hashes), an unchanged chunk costs a look at a memory map of the
pack, and the delta then copies exactly the bytes it was compared with.

Only a version whose key frame is kept in stored blocks is read so (its
spans, ``chainread.copy_pieces``): a deflated one would be inflated whole on
the matcher's thread, dearer than the hashes. The map's pages are let go a
few MiB behind (the process's RSS stays flat). Where the old version cannot
be read, or the chunk is not where this reader is, ``same`` answers False
and the chunk is hashed as before.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable, Iterator

from snapshotter.engine.gitstore.spancopy import Span

_KEEP = 4 << 20
"""Mapped bytes kept behind the reading position before they are let go."""
_DONTNEED: int | None = getattr(mmap, "MADV_DONTNEED", None)


class OldContent:
    """The previous version's content: bytes and spans of its pack, read in order, never back."""

    def __init__(self, pieces: Iterator[bytes | Span], size: int, close: Callable[[], None]) -> None:
        self._segments: Iterator[memoryview] | None = self._walk(pieces)
        self._pieces = pieces
        self._size = size
        self._close = close
        self._maps: dict[int, tuple[mmap.mmap, memoryview]] = {}
        self._forgotten: dict[int, int] = {}
        self._piece = memoryview(b"")
        self._at = 0
        """Where ``_piece`` begins in the old content."""

    def same(self, new: bytes, start: int, at: int, length: int) -> bool:
        """Whether ``new[start : start + length]`` equals the old content at
        ``at``; False where it cannot tell (``at`` behind what was read, past
        the old end, the old content unreadable: it stops reading for good)."""
        if self._segments is None or at < self._at or at + length > self._size:
            return False
        done = 0
        try:
            while done < length:
                offset = at + done
                while self._at + len(self._piece) <= offset:
                    self._at += len(self._piece)
                    self._piece = next(self._segments)
                skip = offset - self._at
                take = min(len(self._piece) - skip, length - done)
                if not new.startswith(self._piece[skip : skip + take], start + done):
                    return False
                done += take
        except Exception:  # noqa: BLE001 - unreadable (damage, a pack gone): hash as before
            self.close()
            return False
        return True

    def _walk(self, pieces: Iterator[bytes | Span]) -> Iterator[memoryview]:
        for piece in pieces:
            if not isinstance(piece, Span):
                yield memoryview(piece)
                continue
            mapped = self._map(piece.fd)
            for position, length in piece.runs:
                self._forget(piece.fd, position)
                view = mapped[1][position : position + length]
                if len(view) != length:
                    raise OSError("a pack is shorter than an object's stored blocks say")
                yield view

    def _map(self, fd: int) -> tuple[mmap.mmap, memoryview]:
        found = self._maps.get(fd)
        if found is None:
            made = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            found = self._maps[fd] = (made, memoryview(made))
            self._forgotten[fd] = 0
        return found

    def _forget(self, fd: int, position: int) -> None:
        """Let go of the pages well behind ``position`` (they stay in the page cache)."""
        behind = position - _KEEP
        forgotten = self._forgotten[fd]
        if _DONTNEED is None or behind - forgotten < _KEEP:
            return
        start = forgotten - forgotten % mmap.PAGESIZE
        stop = behind - behind % mmap.PAGESIZE
        if stop > start:
            try:
                self._maps[fd][0].madvise(_DONTNEED, start, stop - start)
            except (OSError, ValueError):
                pass
            self._forgotten[fd] = stop

    def close(self) -> None:
        if self._segments is None:
            return
        self._segments = None
        self._piece = memoryview(b"")
        close_pieces: Callable[[], None] | None = getattr(self._pieces, "close", None)
        if close_pieces is not None:
            close_pieces()
        for made, view in self._maps.values():
            try:
                view.release()
                made.close()
            except BufferError:
                pass  # a view is still held: the map goes with it
        self._maps.clear()
        self._close()
