"""Reading a pack directly: its version-2 index, and its entries.

dulwich searches an index with a Python binary search on every lookup (about
17 us here) and reads an entry through several layers (~200 us per object in
all); a restore of 10,000 files looks up tens of thousands of objects, often in
two or three packs. Reading the sorted ids once into a list lets ``bisect`` do
the search (about 1 us), for ~50 bytes of memory per object.

After a gc most older versions are deltas against newer ones (``OFS_DELTA``,
within the same pack), so they are resolved here too: the chain is followed
down to a whole object, then the deltas are applied with dulwich's compiled
``apply_delta``, and the objects met on the way are kept in a small cache,
since neighbouring versions share their bases. Only ``REF_DELTA`` entries
(which gc never writes) are left to dulwich.
"""

from __future__ import annotations

import os
import struct
import threading
import zlib
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from dulwich.pack import apply_delta

_MAGIC = b"\377tOc\0\0\0\2"
_OFS_DELTA = 6
_REF_DELTA = 7
MAX_CHAIN = 64
"""Longer delta chains are refused as damage (gc writes at most 16)."""
CACHE_BYTES = 16 << 20
"""Bytes of resolved objects each pack keeps for the deltas that follow."""
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

    def ids(self) -> list[bytes]:
        """Every object id in the pack, sorted."""
        return list(self._names)

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
        return self._offset_at(i)

    def entries(self) -> list[tuple[bytes, int, int]]:
        """(id, offset, CRC-32 of the entry as stored) of every object, sorted by id."""
        count = len(self._names)
        crcs = struct.unpack_from(f">{count}I", self._data, self._offsets_at - 4 * count)
        return [(sha, self._offset_at(i), crcs[i]) for i, sha in enumerate(self._names)]

    def _offset_at(self, i: int) -> int:
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
        self._cache: OrderedDict[int, tuple[int, bytes]] = OrderedDict()
        """Offset -> (type number, content) of objects resolved for deltas, least recently used first."""
        self._cached_bytes = 0

    def cached(self, offset: int) -> tuple[int, bytes] | None:
        found = self._cache.get(offset)
        if found is not None:
            self._cache.move_to_end(offset)
        return found

    def remember(self, offset: int, entry: tuple[int, bytes]) -> None:
        if offset in self._cache or len(entry[1]) > CACHE_BYTES // 4:
            return
        self._cache[offset] = entry
        self._cached_bytes += len(entry[1])
        while self._cached_bytes > CACHE_BYTES:
            _, (_, dropped) = self._cache.popitem(last=False)
            self._cached_bytes -= len(dropped)

    def read_at(self, size: int, offset: int) -> bytes:
        if _PREAD is not None:
            return _PREAD(self._fd, size, offset)
        with self._lock:
            os.lseek(self._fd, offset, os.SEEK_SET)
            return os.read(self._fd, size)

    def close(self) -> None:
        os.close(self._fd)


_PREAD: Callable[[int, int, int], bytes] | None = getattr(os, "pread", None)


def read_entry(pack: PackFile, offset: int, sha: bytes) -> tuple[int, bytes] | None:
    """(type number, content) of the object at ``offset``, its ``OFS_DELTA``
    chain resolved; None for a ``REF_DELTA`` (base named by id: dulwich's job).
    Callers serialise reads of one ``pack`` (its cache is not locked)."""
    deltas: list[tuple[int, bytes]] = []
    at = offset
    while True:
        found = pack.cached(at)
        if found is not None:
            kind, content = found
            break
        kind, content, distance = _inflate_at(pack, at, sha)
        if kind == _REF_DELTA:
            return None
        if distance is None:
            if deltas:
                pack.remember(at, (kind, content))
            break
        deltas.append((at, content))
        if distance <= 0 or distance > at or len(deltas) > MAX_CHAIN:
            raise zlib.error(f"object {sha.hex()} has a damaged delta chain in its pack")
        at -= distance
    for at, delta in reversed(deltas):
        content = b"".join(apply_delta(content, delta))
        if at != offset:
            pack.remember(at, (kind, content))
    return kind, content


def _inflate_at(pack: PackFile, offset: int, sha: bytes) -> tuple[int, bytes, int | None]:
    """(type number, inflated data, base distance) of the entry at ``offset``:
    for an ``OFS_DELTA`` the data is the delta and the distance is how far back
    its base starts; otherwise the distance is None (a ``REF_DELTA``'s data is
    not inflated)."""
    head = pack.read_at(4096, offset)  # the header and, for a small object, all of it
    kind, size, used, distance = _entry_header(head, sha)
    if kind == _REF_DELTA:
        return kind, b"", None
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
    return kind, content, distance


def _entry_header(head: bytes, sha: bytes) -> tuple[int, int, int, int | None]:
    """(type number, inflated size, header length, base distance or None) of
    the entry starting ``head``."""
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
    distance = None
    if kind == _OFS_DELTA:
        byte = 0x80
        distance = -1
        while byte & 0x80:
            if used >= len(head):
                raise zlib.error(f"object {sha.hex()} has a damaged pack header")
            byte = head[used]
            distance = (distance + 1) << 7 | (byte & 0x7F)
            used += 1
    elif kind not in (1, 2, 3, 4, _REF_DELTA):
        raise zlib.error(f"object {sha.hex()} has an unknown type in its pack")
    return kind, size, used, distance


@dataclass(frozen=True)
class StoredEntry:
    """One pack entry as stored, CRC-checked: what gc copies instead of recompressing."""

    kind: int
    """The type number, or 6 for an offset delta."""
    size: int
    """Its inflated size (a delta's own size for a delta)."""
    data: bytes
    """The zlib stream, as stored."""
    base: bytes | None
    """A delta's base object."""

    @property
    def level(self) -> int:
        """zlib's level class from the stream header: 0 fastest, 1 fast, 2 default (6), 3 best."""
        return self.data[1] >> 6 if len(self.data) > 1 else 0


class StoredEntries:
    """Where every object of some packs is stored, to read entries as they are."""

    def __init__(self, bases: list[str]) -> None:
        self._packs: list[PackFile] = []
        self._where: dict[bytes, tuple[int, int, int, int]] = {}
        """id -> (pack number, offset, end, CRC-32)."""
        self._at: dict[tuple[int, int], bytes] = {}
        """(pack number, offset) -> id, for offset deltas' bases."""
        for base in bases:
            try:
                index = PackIndex.read(base + ".idx")
                end = os.path.getsize(base + ".pack") - 20  # the pack's checksum follows the last entry
                pack = PackFile(base + ".pack")
            except (OSError, ValueError):
                continue  # gc reads such a pack's objects the slow way
            number = len(self._packs)
            self._packs.append(pack)
            for sha, offset, crc in sorted(index.entries(), key=lambda entry: -entry[1]):
                self._where.setdefault(sha, (number, offset, end, crc))
                self._at[(number, offset)] = sha
                end = offset

    def get(self, sha: bytes) -> StoredEntry | None:
        """The entry of ``sha`` as stored, or None (not in these packs, a
        ``REF_DELTA``, or not matching its index's CRC: read it the usual way)."""
        found = self._where.get(sha)
        if found is None:
            return None
        number, offset, end, crc = found
        raw = self._packs[number].read_at(end - offset, offset)
        if len(raw) != end - offset or zlib.crc32(raw) != crc:
            return None
        kind, size, used, distance = _entry_header(raw, sha)
        base = None
        if distance is not None:
            base = self._at.get((number, offset - distance))
            if base is None:
                return None
        elif kind == _REF_DELTA:
            return None
        return StoredEntry(kind, size, raw[used:], base)

    def close(self) -> None:
        for pack in self._packs:
            pack.close()
        self._packs = []
