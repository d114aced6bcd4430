"""Reading a pack directly: its entries (its index is read by ``indexformat``).

dulwich reads an entry through several layers (~200 us per object in all); a
restore of 10,000 files looks up tens of thousands of objects, often in two or
three packs.

After a gc most older versions are deltas against newer ones (``OFS_DELTA``,
within the same pack), so they are resolved here too: the chain is followed
down to a whole object, then the deltas are applied with dulwich's compiled
``apply_delta``, and the objects met on the way are kept in a small cache,
since neighbouring versions share their bases. A ``REF_DELTA`` (which gc never
writes; git may) names its base by id, which the caller reads.

Nothing is inflated past the size its header declares, and nothing bigger
than the caller's limit is inflated whole: a big whole entry is streamed
(``stream_entry``), a delta's result is held whole only up to ``MAX_WHOLE``.
Checking content against ids is the caller's job (``store.py``).
"""

from __future__ import annotations

import os
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from snapshotter.engine.fsutil import open_side_file
from snapshotter.engine.gitstore.indexformat import INDEX_CAP as INDEX_CAP  # where tests and older callers look
from snapshotter.engine.gitstore.indexformat import PackIndex as PackIndex
from snapshotter.engine.gitstore.inflate import MAX_WHOLE, PIECE, Stream, inflate_measured, inflate_whole, too_large

_OFS_DELTA = 6
_REF_DELTA = 7
MAX_CHAIN = 64
"""Longer delta chains are refused as damage (gc writes at most 16)."""
CACHE_BYTES = 16 << 20
"""Bytes of resolved objects each pack keeps for the deltas that follow."""


class PackFile:
    """A pack opened for reading at any offset, from any thread: ``os.pread``
    where it exists (one system call, no shared position), else seek and read
    under a lock (Windows)."""

    def __init__(self, path: str) -> None:
        self._fd = open_side_file(path, follow=False)[0]  # never blocking on a pipe planted in the store
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

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        os.close(self._fd)


_PREAD: Callable[[int, int, int], bytes] | None = getattr(os, "pread", None)


BaseById = Callable[[bytes], tuple[int, bytes]]
"""Reads a ``REF_DELTA``'s base: (type number, content) of an object by id."""


def read_entry(
    pack: PackFile, offset: int, sha: bytes, limit: int = MAX_WHOLE, base_by_id: BaseById | None = None
) -> tuple[int, bytes]:
    """(type number, content) of the object at ``offset``, its delta chain
    resolved; ``ObjectTooLarge`` if it (or an object on its chain) is larger
    than ``limit``, found from headers before anything is inflated whole.
    Callers serialise reads of one ``pack`` (its cache is not locked)."""
    deltas: list[tuple[int, bytes]] = []
    at = offset
    while True:
        found = pack.cached(at)
        if found is not None:
            kind, content = found
            if not deltas and len(content) > limit:
                raise too_large(sha, len(content), limit)
            break
        kind, content, base = _inflate_at(pack, at, sha, limit if not deltas else MAX_WHOLE)
        if base is not None and not deltas and delta_sizes(content, sha)[1] > limit:
            raise too_large(sha, delta_sizes(content, sha)[1], limit)  # known before the chain is read
        if base is None:
            if deltas:
                pack.remember(at, (kind, content))
            break
        deltas.append((at, content))
        if len(deltas) > MAX_CHAIN:
            raise zlib.error(f"object {sha.hex()} has a damaged delta chain in its pack")
        if isinstance(base, bytes):
            if base_by_id is None:
                raise zlib.error(f"object {sha.hex()} is a delta against an object named by id")
            kind, content = base_by_id(base)
            break
        if base <= 0 or base > at:
            raise zlib.error(f"object {sha.hex()} has a damaged delta chain in its pack")
        at -= base
    if deltas:
        from dulwich.pack import apply_delta  # most of dulwich: loaded at the first delta, not to read a commit
    for at, delta in reversed(deltas):
        source, result = delta_sizes(delta, sha)
        if result > (limit if at == offset else MAX_WHOLE):
            raise too_large(sha, result, limit if at == offset else MAX_WHOLE)
        if source != len(content):
            raise zlib.error(f"object {sha.hex()} has a delta that does not fit its base")
        content = b"".join(apply_delta(content, delta))
        if at != offset:
            pack.remember(at, (kind, content))
    return kind, content


def delta_sizes(delta: bytes, sha: bytes) -> tuple[int, int]:
    """(base size, result size) from the start of a delta."""
    sizes = []
    at = 0
    for _ in range(2):
        size = shift = 0
        while True:
            if at >= len(delta):
                raise zlib.error(f"object {sha.hex()} has a damaged delta")
            byte = delta[at]
            at += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        sizes.append(size)
    return sizes[0], sizes[1]


def _inflate_at(
    pack: PackFile, offset: int, sha: bytes, limit: int = MAX_WHOLE
) -> tuple[int, bytes, int | bytes | None]:
    """(type number, inflated data, base) of the entry at ``offset``: for an
    ``OFS_DELTA`` the data is the delta and the base how far back its base
    starts, for a ``REF_DELTA`` the base's id; for a whole object, None."""
    head = pack.read_at(4096, offset)  # the header and, for a small object, all of it
    kind, size, used, distance = _entry_header(head, sha)
    base: int | bytes | None = distance
    if kind == _REF_DELTA:
        base = head[used : used + 20]
        used += 20
        if len(base) != 20:
            raise zlib.error(f"object {sha.hex()} is truncated in its pack")
    if size > limit:
        raise too_large(sha, size, limit)
    whole = inflate_whole(head[used:], size)  # most objects are small: all in ``head``, inflated in one call
    content = whole if whole is not None else _entry_stream(pack, offset, head, used, size, sha).exact(size)
    return kind, content, base


def whole_entry(pack: PackFile, offset: int, sha: bytes, limit: int = MAX_WHOLE) -> tuple[int, bytes, bytes] | None:
    """(type number, content, its zlib stream as stored) of the whole object at
    ``offset``, to send on as it is stored; None for a delta, one above
    ``limit``, or one whose stream does not inflate to its size (the caller
    reads it the usual way, which says what is wrong)."""
    head = pack.read_at(4096, offset)
    kind, size, used, distance = _entry_header(head, sha)
    if distance is not None or kind == _REF_DELTA or size > limit:
        return None
    window = used + size + 5 * (size // 16384 + 1) + 16  # past deflate's worst case (stored blocks)
    data = head if len(head) >= window else pack.read_at(window, offset)
    found = inflate_measured(data[used:], size)
    if found is None:
        return None
    content, length = found
    return kind, content, data[used : used + length]


def _entry_stream(pack: PackFile, offset: int, head: bytes, used: int, size: int, sha: bytes) -> Stream:
    """The zlib stream of the entry at ``offset`` whose first bytes are ``head``,
    read on in blocks of at most ``PIECE`` (about its size for a small one)."""
    at = offset + len(head)
    block = min(max(size, 4096), PIECE)

    def more() -> bytes:
        nonlocal at
        chunk = pack.read_at(block, at)
        at += len(chunk)
        return chunk

    return Stream(head[used:], more, f"object {sha.hex()} in its pack")


def peek_entry(pack: PackFile, offset: int, sha: bytes) -> tuple[int, int]:
    """(type number, size) of the entry at ``offset`` without inflating it: for
    a delta (type 6 or 7) the size of the object it makes."""
    head = pack.read_at(4096, offset)
    kind, size, used, _ = _entry_header(head, sha)
    if kind not in (_OFS_DELTA, _REF_DELTA):
        return kind, size
    used += 20 if kind == _REF_DELTA else 0
    start = _entry_stream(pack, offset, head, used, size, sha).read(32)
    return kind, delta_sizes(start, sha)[1]


def stream_entry(pack: PackFile, offset: int, sha: bytes) -> tuple[int, int, Iterator[bytes]] | None:
    """(type number, size, pieces) of a whole entry, inflated a piece at a time;
    None for a delta (read it whole, with ``read_entry``)."""
    head = pack.read_at(4096, offset)
    kind, size, used, _ = _entry_header(head, sha)
    if kind in (_OFS_DELTA, _REF_DELTA):
        return None
    return kind, size, _entry_stream(pack, offset, head, used, size, sha).pieces(size)


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

    def __init__(self, bases: list[str], index_of: Callable[[str], PackIndex | None] | None = None) -> None:
        """``index_of(base)``: the checked index of a pack (None: unreadable); by default read as it is."""
        self._packs: list[PackFile] = []
        self._where: dict[bytes, tuple[int, int, int, int]] = {}
        """id -> (pack number, offset, end, CRC-32)."""
        self._at: dict[tuple[int, int], bytes] = {}
        """(pack number, offset) -> id, for offset deltas' bases."""
        for base in bases:
            try:
                index = index_of(base) if index_of is not None else PackIndex.read(base + ".idx")
                if index is None:
                    continue
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

    def get(self, sha: bytes, limit: int = MAX_WHOLE) -> StoredEntry | None:
        """The entry of ``sha`` as stored, or None (not in these packs, a
        ``REF_DELTA``, or not matching its index's CRC: read it the usual way);
        ``ObjectTooLarge`` for a whole object larger than ``limit``, found from
        its header before the rest of the entry is read."""
        found = self._where.get(sha)
        if found is None:
            return None
        number, offset, end, crc = found
        pack = self._packs[number]
        raw = pack.read_at(min(end - offset, 4096), offset)
        kind, size, used, distance = _entry_header(raw, sha)
        if size > limit and distance is None and kind != _REF_DELTA:
            raise too_large(sha, size, limit)
        if end - offset > 2 * size + 4096 or size > MAX_WHOLE:
            return None  # far longer than its content could compress to: not what the index says
        if len(raw) < end - offset:
            raw += pack.read_at(end - offset - len(raw), offset + len(raw))
        if len(raw) != end - offset or zlib.crc32(raw) != crc:
            return None
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
