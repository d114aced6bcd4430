"""A pack's version-2 index (``.idx``): the sorted ids of its objects and where each lies.

dulwich searches an index with a Python binary search on every lookup (about
17 us here); reading a byte's range of ids once into a list lets ``bisect`` do
the search (about 1 us), for ~50 bytes of memory per object. The bytes may be
mapped (``packindex.load_index``): only the pages a search touches are read.
"""

from __future__ import annotations

import mmap
import struct
from bisect import bisect_left

from snapshotter.engine.fsutil import read_side_file

__all__ = ["INDEX_CAP", "Buffer", "PackIndex"]

_MAGIC = b"\377tOc\0\0\0\2"
INDEX_CAP = 1 << 30
"""The largest pack index read (whole, as it is used): 28 bytes an object and
1 KiB more, so some 38 million objects, past any store of a workspace; a
bigger one (or one that is not a regular file) is indexed again from its pack."""
SEARCHED_IN_PLACE = 8
"""Lookups of ids of one first byte searched in place before its ids are listed
(or one for every 16 ids it has, if more: listing them costs about as much)."""
Buffer = bytes | mmap.mmap
"""A pack index's bytes: read whole, or mapped (only the pages a search touches are read)."""
_FANOUT = 8
_NAMES = _FANOUT + 256 * 4


class PackIndex:
    """The ids and offsets of one pack (index version 2, SHA-1)."""

    __slots__ = ("_data", "_count", "_fanout", "_buckets", "_searched", "_offsets_at", "_large_at")

    def __init__(self, data: Buffer) -> None:
        if data[:8] != _MAGIC:
            raise ValueError("not a version-2 pack index")
        (count,) = struct.unpack_from(">I", data, _FANOUT + 255 * 4)
        end = _NAMES + 20 * count
        if len(data) < end + 8 * count + 40:
            raise ValueError("truncated pack index")
        self._data = data
        self._count: int = count
        self._buckets: dict[int, list[bytes]] = {}
        """The ids of each first byte searched often: a list of every id would cost
        ~30 ms and 6 MiB at 100,000 objects before one lookup, and a search of the
        bytes in place ~15 us a lookup (a restore looks up thousands). A byte's
        first :data:`SEARCHED_IN_PLACE` lookups search in place: a call that looks
        up a few objects (a snapshot, ``log``) never lists a range that grows
        with the history (~800 ids a byte at 200,000 objects)."""
        self._searched: dict[int, int] = {}
        self._fanout = (0, *struct.unpack_from(">256I", data, _FANOUT))
        """Ids below first byte b: the search for an id is narrowed to its byte's range."""
        if any(low > high for low, high in zip(self._fanout, self._fanout[1:])):
            raise ValueError("damaged pack index")
        self._offsets_at = end + 4 * count  # past the ids and their CRC-32s
        self._large_at = self._offsets_at + 4 * count

    def ids(self) -> list[bytes]:
        """Every object id in the pack, sorted."""
        names = bytes(self._data[_NAMES : _NAMES + 20 * self._count])  # one copy, then slices of memory
        return [names[i : i + 20] for i in range(0, len(names), 20)]

    def count(self) -> int:
        """How many objects the pack holds."""
        return self._count

    def starting_with(self, prefix: str) -> list[bytes]:
        """The ids in the pack whose hex form starts with ``prefix`` (2 to 40 hex digits)."""
        low_id = bytes.fromhex(prefix.ljust(40, "0"))
        high_id = bytes.fromhex(prefix.ljust(40, "f"))
        first = low_id[0]
        start, end = self._fanout[first], self._fanout[first + 1]
        data = self._data
        found = []
        while start < end:  # the first id at or after low_id in the byte's range
            middle = (start + end) // 2
            at = _NAMES + 20 * middle
            if data[at : at + 20] < low_id:
                start = middle + 1
            else:
                end = middle
        for i in range(start, self._fanout[first + 1]):
            sha = data[_NAMES + 20 * i : _NAMES + 20 * i + 20]
            if sha > high_id:
                break
            found.append(sha)
        return found

    @classmethod
    def read(cls, path: str) -> PackIndex:
        """The index at ``path``, read guarded (``fsutil.read_side_file``, up to :data:`INDEX_CAP`)."""
        return cls(read_side_file(path, INDEX_CAP, follow=False))

    def offset(self, sha: bytes) -> int | None:
        """Where the object starts in the pack, or None if the pack lacks it."""
        first = sha[0]
        low, high = self._fanout[first], self._fanout[first + 1]
        bucket = self._buckets.get(first)
        if bucket is None:
            searched = self._searched.get(first, 0)
            if searched < max(SEARCHED_IN_PLACE, (high - low) >> 4):
                self._searched[first] = searched + 1
                return self._in_place(sha, low, high)
            data = self._data
            bucket = [data[at : at + 20] for at in range(_NAMES + 20 * low, _NAMES + 20 * high, 20)]
            self._buckets[first] = bucket
        i = bisect_left(bucket, sha)
        if i == len(bucket) or bucket[i] != sha:
            return None
        return self._offset_at(low + i)

    def _in_place(self, sha: bytes, low: int, high: int) -> int | None:
        """The offset of ``sha``, searched for among ids ``low``..``high`` where
        they lie: a mapped index reads only the pages the search touches."""
        data = self._data
        while low < high:
            middle = (low + high) // 2
            at = _NAMES + 20 * middle
            found = data[at : at + 20]
            if found < sha:
                low = middle + 1
            elif found > sha:
                high = middle
            else:
                return self._offset_at(middle)
        return None

    def entries(self) -> list[tuple[bytes, int, int]]:
        """(id, offset, CRC-32 of the entry as stored) of every object, sorted by id."""
        count = self._count
        crcs = struct.unpack_from(f">{count}I", self._data, self._offsets_at - 4 * count)
        return [(sha, self._offset_at(i), crcs[i]) for i, sha in enumerate(self.ids())]

    def _offset_at(self, i: int) -> int:
        (offset,) = struct.unpack_from(">I", self._data, self._offsets_at + 4 * i)
        if offset & 0x80000000:  # past 2 GiB: an entry of the 64-bit table
            (offset,) = struct.unpack_from(">Q", self._data, self._large_at + 8 * (offset & 0x7FFFFFFF))
        return int(offset)
