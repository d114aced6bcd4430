"""Reading a pack directly: its version-2 index, and whole (non-delta) entries.

dulwich searches an index with a Python binary search on every lookup (about
17 us here) and reads an entry through several layers (~200 us per object in
all); a restore of 10,000 files looks up tens of thousands of objects, often in
two or three packs. Reading the sorted ids once into a list lets ``bisect`` do
the search (about 1 us), for ~50 bytes of memory per object. Deltas are left
to dulwich.
"""

from __future__ import annotations

import os
import struct
import threading
import zlib
from bisect import bisect_left
from collections.abc import Callable

_MAGIC = b"\377tOc\0\0\0\2"
_FANOUT = 8
_NAMES = _FANOUT + 256 * 4


class PackIndex:
    """The ids and offsets of one pack (index version 2, SHA-1)."""

    __slots__ = ("_data", "_names", "_fanout", "_offsets_at", "_large_at")

    def __init__(self, data: bytes) -> None:
        if data[:8] != _MAGIC:
            raise ValueError("not a version-2 pack index")
        (count,) = struct.unpack_from(">I", data, _FANOUT + 255 * 4)
        end = _NAMES + 20 * count
        if len(data) < end + 8 * count + 40:
            raise ValueError("truncated pack index")
        self._data = data
        self._names = [data[i : i + 20] for i in range(_NAMES, end, 20)]
        self._fanout = (0, *struct.unpack_from(">256I", data, _FANOUT))
        """Ids below first byte b: the search for an id is narrowed to its byte's range."""
        if any(low > high for low, high in zip(self._fanout, self._fanout[1:])):
            raise ValueError("damaged pack index")
        self._offsets_at = end + 4 * count  # past the ids and their CRC-32s
        self._large_at = self._offsets_at + 4 * count

    @classmethod
    def read(cls, path: str) -> PackIndex:
        with open(path, "rb") as handle:
            return cls(handle.read())

    def offset(self, sha: bytes) -> int | None:
        """Where the object starts in the pack, or None if the pack lacks it."""
        names = self._names
        first = sha[0]
        high = self._fanout[first + 1]
        i = bisect_left(names, sha, self._fanout[first], high)
        if i == high or names[i] != sha:
            return None
        (offset,) = struct.unpack_from(">I", self._data, self._offsets_at + 4 * i)
        if offset & 0x80000000:  # past 2 GiB: an entry of the 64-bit table
            (offset,) = struct.unpack_from(">Q", self._data, self._large_at + 8 * (offset & 0x7FFFFFFF))
        return int(offset)


class PackFile:
    """A pack opened for reading at any offset, from any thread: ``os.pread``
    where it exists (one system call, no shared position), else seek and read
    under a lock (Windows)."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        self._lock = threading.Lock()

    def read_at(self, size: int, offset: int) -> bytes:
        if _PREAD is not None:
            return _PREAD(self._fd, size, offset)
        with self._lock:
            os.lseek(self._fd, offset, os.SEEK_SET)
            return os.read(self._fd, size)

    def close(self) -> None:
        os.close(self._fd)


_PREAD: Callable[[int, int, int], bytes] | None = getattr(os, "pread", None)


def read_whole_entry(pack: PackFile, offset: int, sha: bytes) -> tuple[int, bytes] | None:
    """(type number, content) of the pack entry at ``offset``; None for a delta."""
    head = pack.read_at(4096, offset)  # the header and, for a small object, all of it
    if not head:
        raise zlib.error(f"object {sha.hex()} is past the end of its pack")
    byte = head[0]
    kind, size, shift, used = (byte >> 4) & 7, byte & 15, 4, 1
    while byte & 0x80:
        if used >= len(head):
            raise zlib.error(f"object {sha.hex()} has a damaged pack header")
        byte = head[used]
        size |= (byte & 0x7F) << shift
        shift += 7
        used += 1
    if kind not in (1, 2, 3, 4):
        return None  # OFS_DELTA / REF_DELTA
    inflater = zlib.decompressobj()
    pieces = [inflater.decompress(head[used:])]
    offset += len(head)
    while not inflater.eof:
        chunk = pack.read_at(max(size, 4096), offset)
        if not chunk:
            raise zlib.error(f"object {sha.hex()} is truncated in its pack")
        offset += len(chunk)
        pieces.append(inflater.decompress(chunk))
    content = b"".join(pieces)
    if len(content) != size:
        raise zlib.error(f"object {sha.hex()} is damaged in its pack")
    return kind, content
