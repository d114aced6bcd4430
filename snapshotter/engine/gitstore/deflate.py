"""zlib streams for stored objects: ISA-L's when the ``fast`` extra is installed, else the stdlib's.

git stores every object as a zlib stream and does not care which compressor
made it. Compression at zlib level 1 is the biggest single cost of a cold
snapshot (~3.5 s of ~15 s for 100,000 source files here); the ISA-L library
(the ``isal`` package, wheels for every major platform, releases the GIL)
writes level-1 streams of the same size 2.5x faster on small files and ~10x
faster on big ones. It is optional: without it the stdlib does the same job.

Only the snapshot level (1) goes to ISA-L; gc's denser level stays with zlib.
"""

from __future__ import annotations

import zlib
from types import ModuleType
from typing import Protocol

_isal: ModuleType | None = None
"""ISA-L's zlib (the optional ``fast`` extra), or None: its inflate serves ``inflate`` too."""
try:
    from isal import isal_zlib
except ImportError:  # the optional ``fast`` extra is not installed
    pass
else:
    _isal = isal_zlib

SNAPSHOT_LEVEL = 1
"""git's own level for loose objects: fast, and ~3x smaller than the content on source text."""
_SMALL = 4096


class Compressor(Protocol):
    def compress(self, data: bytes, /) -> bytes: ...

    def flush(self, mode: int = ..., /) -> bytes: ...


def backend() -> str:
    """The compressor used at the snapshot level: ``"isal"`` or ``"zlib"``."""
    return "isal" if _isal is not None else "zlib"


def deflate(data: bytes, level: int = SNAPSHOT_LEVEL) -> bytes:
    """``data`` as one zlib stream.

    With the stdlib, zlib's default state (a 32 KiB window and a 64 Ki-entry
    hash table, set up afresh for every call) costs four times the compression
    itself for a 2 KB source file (measured: ~100 us against ~23 us per file).
    Up to 4 KiB a 4 KiB window loses nothing (no match can reach farther back)
    and a small hash table almost nothing (1-2% larger output); every zlib
    reader accepts the smaller window, which the stream's header declares.
    """
    if level == SNAPSHOT_LEVEL and _isal is not None:
        return bytes(_isal.compress(data, SNAPSHOT_LEVEL))
    if len(data) <= _SMALL:
        squeezer = zlib.compressobj(level, zlib.DEFLATED, 12, 4)
        return squeezer.compress(data) + squeezer.flush()
    return zlib.compress(data, level)


def compressor(level: int = SNAPSHOT_LEVEL) -> Compressor:
    """A streaming compressor, for files too big to hold whole."""
    if level == SNAPSHOT_LEVEL and _isal is not None:
        made: Compressor = _isal.compressobj(SNAPSHOT_LEVEL)
        return made
    return zlib.compressobj(level)


SEGMENT = 1 << 20
_PROBE = 64 << 10
STORED_MAX = 65535
"""The most bytes a stored block holds."""
_ZLIB_HEADER = b"\x78\x01"
_LAST_BLOCK = b"\x01\x00\x00\xff\xff"


class SegmentDeflater:
    """One zlib stream of a big object, made a segment (1 MiB) at a time:
    a segment whose first 64 KiB do not shrink by a sixteenth at level 1 (a
    compressed database, media, random bytes) is stored as it is (deflate's
    stored blocks), the others compressed at level 1. A key frame of random
    bytes costs no compression to write and only a copy to read back
    (ISA-L's level 1 takes ~3 times the time of its SHA-1 on such bytes, for
    nothing). Compressed runs are flushed to a byte boundary before a stored
    segment and start afresh after one (a back-reference must never reach into
    bytes its compressor did not see); the stream ends with an empty last block
    and the Adler-32 of the content, as zlib's do."""

    def __init__(self) -> None:
        self._pending = b""
        self._adler = 1
        self._squeezer: Compressor | None = None
        self._started = False

    def compress(self, data: bytes) -> bytes:
        return b"".join(self.pieces(data))

    def pieces(self, data: bytes) -> list[bytes | memoryview]:
        """The stream's next pieces for ``data`` (views of it where stored: no copy)."""
        out: list[bytes | memoryview] = []
        if not self._started:
            out.append(_ZLIB_HEADER)
            self._started = True
        if self._pending:
            data = self._pending + data
            self._pending = b""
        whole = len(data) - len(data) % SEGMENT
        for at in range(0, whole, SEGMENT):
            out.extend(self._segment(data, at, at + SEGMENT))
        self._pending = data[whole:]
        return out

    def flush(self) -> bytes:
        out: list[bytes | memoryview] = [b"" if self._started else _ZLIB_HEADER]
        if self._pending:
            out.extend(self._segment(self._pending, 0, len(self._pending)))
            self._pending = b""
        out.append(_LAST_BLOCK + self._adler.to_bytes(4, "big"))
        return b"".join(out)

    def _segment(self, data: bytes, start: int, end: int) -> list[bytes | memoryview]:
        view = memoryview(data)[start:end]
        self._adler = _adler32(view, self._adler)
        if _worth_compressing(view[:_PROBE]):
            if self._squeezer is None:
                self._squeezer = _raw(SNAPSHOT_LEVEL)
            return [self._squeezer.compress(view), self._squeezer.flush(zlib.Z_SYNC_FLUSH)]  # type: ignore[arg-type]
        self._squeezer = None  # the next compressed run starts afresh: it never saw these bytes
        stored: list[bytes | memoryview] = []
        for at in range(0, end - start, STORED_MAX):
            block = view[at : at + STORED_MAX]
            size = len(block)
            stored.append(b"\x00" + size.to_bytes(2, "little") + (size ^ 0xFFFF).to_bytes(2, "little"))
            stored.append(block)
        return stored


def _worth_compressing(probe: memoryview) -> bool:
    """Whether the probe shrinks by a sixteenth or more at level 1."""
    squeezer = _raw(SNAPSHOT_LEVEL)
    size = len(squeezer.compress(probe)) + len(squeezer.flush())  # type: ignore[arg-type]
    return size <= len(probe) - len(probe) // 16


def _raw(level: int) -> Compressor:
    """A raw deflate compressor (no zlib header or trailer)."""
    if level == SNAPSHOT_LEVEL and _isal is not None:
        made: Compressor = _isal.compressobj(level, _isal.DEFLATED, -15)
        return made
    return zlib.compressobj(level, zlib.DEFLATED, -15)


def _adler32(data: bytes | memoryview, value: int) -> int:
    if _isal is not None:
        return int(_isal.adler32(data, value))
    return zlib.adler32(data, value)


def crc32(data: bytes | memoryview, value: int = 0) -> int:
    """zlib's CRC-32 (ISA-L's where installed: several times faster on big pieces)."""
    if _isal is not None:
        return int(_isal.crc32(data, value))
    return zlib.crc32(data, value)
