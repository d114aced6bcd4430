"""Inflating stored objects in bounded pieces, whatever their compression ratio.

A zlib stream of zeros inflates about a thousand times: one compressed
megabyte handed to ``decompress`` without a limit comes back as a gigabyte
(restoring a 512 MiB file of zeros peaked at 944 MiB RSS that way). Every
object is therefore inflated with ``max_length``: a big one a piece at a time,
a small one whole only once its declared size is known to be under the
caller's limit, and never past that size.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator

from snapshotter.engine.gitstore.deflate import _isal
from snapshotter.errors import StoreError

PIECE = 1 << 20
"""The most a streamed object yields at a time."""
MAX_WHOLE = 32 << 20
"""The largest object ever held whole in memory: trees, commits, the small
blobs that diff and gc read whole, and objects stored as deltas (a delta needs
its base and its result whole). Snapshots keep files above the streaming
threshold (8 MiB) loose, so only a forged or foreign store holds bigger
objects that must be read whole; they are refused (``ObjectTooLarge``)."""
_HEADER_MAX = 64
"""A loose object's header (``commit 1234\\0``) is far shorter."""


class ObjectTooLarge(StoreError):
    """An object is larger than the caller reads whole; found from its header,
    before anything is inflated."""


def too_large(sha: bytes, size: int, limit: int) -> ObjectTooLarge:
    return ObjectTooLarge(f"object {sha.hex()} is {size:,} bytes, more than the {limit:,} read whole")


def inflate_whole(data: bytes, size: int) -> bytes | None:
    """The content of the zlib stream that starts ``data``, if it ends within
    ``data`` and inflates to exactly ``size`` bytes (never inflated past
    ``size + 1``); else None: read on with a :class:`Stream`, which also says
    what is wrong with a damaged one. ISA-L's inflate, when installed, takes
    about half of zlib's time on the small objects a restore reads by the
    thousand; anything it finds wrong goes the zlib way.
    """
    found = inflate_measured(data, size)
    return found[0] if found is not None else None


def inflate_measured(data: bytes, size: int) -> tuple[bytes, int] | None:
    """:func:`inflate_whole`'s content, and how many bytes of ``data`` its zlib
    stream takes (what follows it is not part of it)."""
    if _isal is not None:
        try:
            inflater = _isal.decompressobj()
            content: bytes = inflater.decompress(data, size + 1)
        except _isal.error:
            return None
    else:
        inflater = zlib.decompressobj()
        content = inflater.decompress(data, size + 1)
    if not inflater.eof or len(content) != size:
        return None
    return content, len(data) - len(inflater.unused_data)


class Stream:
    """One zlib stream, inflated on demand: ``first`` is its start, ``more()``
    gives the next compressed bytes (``b""`` when the source has none left).
    Damage raises ``zlib.error`` naming ``what``."""

    __slots__ = ("_inflater", "_data", "_more", "_ahead", "what")

    def __init__(self, first: bytes, more: Callable[[], bytes], what: str) -> None:
        self._inflater = _isal.decompressobj() if _isal is not None else zlib.decompressobj()
        """ISA-L's inflate where installed: half of zlib's time on a big object."""
        self._data = first
        self._more = more
        self._ahead = b""
        """Inflated content not handed out yet (what followed a loose object's header)."""
        self.what = what

    @property
    def unused(self) -> int:
        """How many of the compressed bytes given lie past the end of the stream."""
        return len(self._inflater.unused_data) + len(self._data)

    def read(self, limit: int) -> bytes:
        """Up to ``limit`` (> 0) more bytes of content; ``b""`` only at its end."""
        if self._ahead:
            out, self._ahead = self._ahead[:limit], self._ahead[limit:]
            return out
        inflater = self._inflater
        while not inflater.eof:
            if not self._data:
                out = self._inflate(b"", limit)  # ISA-L keeps the input it took: what it holds comes first
                if out or inflater.eof:
                    return out
                self._data = self._more()
                if not self._data:
                    raise zlib.error(f"{self.what} is truncated")
            out = self._inflate(self._data, limit)
            self._data = inflater.unconsumed_tail
            if out:
                return out
        return b""

    def _inflate(self, data: bytes, limit: int) -> bytes:
        try:
            out: bytes = self._inflater.decompress(data, limit)
        except Exception as exc:  # ISA-L's own error class: reported as zlib's, which callers expect
            if isinstance(exc, zlib.error) or _isal is None or not isinstance(exc, _isal.error):
                raise
            raise zlib.error(f"{self.what} is damaged ({exc})") from None
        return out

    def pieces(self, size: int) -> Iterator[bytes]:
        """The rest of the content in pieces of at most ``PIECE`` bytes; it must
        be ``size`` bytes long (zlib.error otherwise, once it is known)."""
        total = 0
        while piece := self.read(PIECE):
            total += len(piece)
            if total > size:
                raise zlib.error(f"{self.what} is longer than its header says")
            yield piece
        if total != size:
            raise zlib.error(f"{self.what} is {total:,} bytes, not the {size:,} its header says")

    def exact(self, size: int) -> bytes:
        """The rest of the content, which must be exactly ``size`` bytes; never
        inflates more than one byte past it (one ``decompress`` call for most
        small objects)."""
        pieces = []
        total = 0
        while piece := self.read(size + 1 - total):
            pieces.append(piece)
            total += len(piece)
            if total > size:
                raise zlib.error(f"{self.what} is longer than its header says")
        if total != size:
            raise zlib.error(f"{self.what} is {total:,} bytes, not the {size:,} its header says")
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def header(self) -> tuple[bytes, int]:
        """A loose object's (type name, size), from the ``<type> <size>\\0``
        it starts with; the content follows."""
        head = b""
        while b"\0" not in head:
            piece = self.read(_HEADER_MAX) if len(head) < _HEADER_MAX else b""
            if not piece:
                raise zlib.error(f"{self.what} has a damaged header")
            head += piece
        header, _, self._ahead = head.partition(b"\0")
        kind, _, size = header.partition(b" ")
        if not size.isdigit():
            raise zlib.error(f"{self.what} has a damaged header")
        return kind, int(size)
