"""Reading a packed object kept in deflate's stored blocks without inflating it.

A key frame of incompressible bytes is written in stored blocks (see
``deflate.SegmentDeflater``): each is a 5-byte header (no flags but the last
block's, the length and its complement) and that many bytes as they are. Its
content can then be read straight from the pack, at any offset: through a
memory map of the pack, each piece a view of the page cache (hashed and
written with no copy of its own, as ``cp`` copies), or where no map can be
made one ``preadv`` filling a buffer with the payloads of many blocks and
their headers aside. No inflating, no Adler-32, and a step back is a read
like any other. The headers are read (and checked) first, once; a
stream holding any other kind of block is not for this reader (None from
``blocks_of``). The content is checked against its id by the caller, as for
every object.

A restore reads no header first (``expected_blocks``): reading the 17,000
headers of a 1 GiB key frame took 0.045 s of a restore's 0.57 s. Where the
key frame was written as ``deflate.SegmentDeflater`` writes one of bytes
that do not compress (every segment of 1 MiB stored, in blocks of 65,535
bytes and the segment's rest, then an empty last block), where its blocks
are is known from its size; only the first block's header and the last
one's are read to tell. The restore's check of the entry's CRC-32, which
reads every byte of it anyway, checks every header where it should be
(``StoredBlocks.expected_headers``) and fails the restore if one is not.
"""

from __future__ import annotations

import mmap
import os
import struct
from bisect import bisect_right
from collections.abc import Iterator
from typing import cast

from snapshotter.engine.gitstore.deflate import SEGMENT, STORED_MAX
from snapshotter.engine.gitstore.inflate import PIECE
from snapshotter.engine.gitstore.packread import PackFile
from snapshotter.engine.gitstore.spancopy import Span

_HEADER = struct.Struct("<BHH")
_LAST_BLOCK = b"\x01\x00\x00\xff\xff"
_ZLIB_HEADERS = {b"\x78\x01", b"\x78\x5e", b"\x78\x9c", b"\x78\xda"}
_MAX_BLOCKS = 1 << 20
_KEEP_MAPPED = 16 << 20
"""Mapped bytes kept behind the reading position (readers of a piece lag a few MiB at most)."""
_DONTNEED: int | None = getattr(mmap, "MADV_DONTNEED", None)


class StoredBlocks:
    """Where each stored block's bytes are in the pack: ``starts`` (offset in
    the content) and ``positions`` (offset in the pack). Read through a memory
    map of the pack where one can be made: the pieces are views of the page
    cache, hashed and written without a copy of their own (``close`` when done)."""

    def __init__(
        self, pack: PackFile, starts: list[int], positions: list[int], size: int, last: int | None = None
    ) -> None:
        self._pack = pack
        self._starts = starts
        self._positions = positions
        self._size = size
        self.unchecked_end = last
        """Where the stream's empty last block is, when its headers were not all
        read (``expected_blocks``): then ``expected_headers`` must be checked."""
        self._forgotten = 0
        try:
            self._map: mmap.mmap | None = mmap.mmap(pack.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError, OverflowError):
            self._map = None

    def close(self) -> None:
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:
                pass  # a piece is still held: the map goes with it
            self._map = None

    def read(self, offset: int, length: int) -> Iterator[bytes]:
        """The content from ``offset`` for ``length`` bytes, in pieces."""
        if self._map is not None:
            return self._mapped(self._map, offset, length)
        return self._copied(offset, length)

    def expected_headers(self) -> Iterator[tuple[int, bytes]]:
        """Every block's header, (its offset in the pack, its 5 bytes), in
        order, the empty last block's too: where ``expected_blocks`` expects
        them (the first and the last are checked already)."""
        made: dict[int, bytes] = {}
        starts, positions = self._starts, self._positions
        ends = [*starts[1:], self._size]
        for position, start, end in zip(positions, starts, ends):
            length = end - start
            header = made.get(length)
            if header is None:
                header = made[length] = _HEADER.pack(0, length, length ^ 0xFFFF)
            yield position - 5, header
        if self.unchecked_end is not None:
            yield self.unchecked_end, _LAST_BLOCK

    def spans(self, offset: int, length: int) -> Span:
        """Where the content from ``offset`` for ``length`` bytes lies in the
        pack: a run per stored block (for ``spancopy``: copied by the kernel)."""
        return Span(self._pack.fileno(), self._runs(offset, length))

    def _runs(self, offset: int, length: int) -> Iterator[tuple[int, int]]:
        end = offset + length
        starts, positions = self._starts, self._positions
        index = bisect_right(starts, offset) - 1
        last = len(starts) - 1
        while offset < end:
            block_end = starts[index + 1] if index < last else self._size
            part = (block_end if block_end < end else end) - offset
            yield positions[index] + offset - starts[index], part
            offset += part
            index += 1

    def _mapped(self, mapped: mmap.mmap, offset: int, length: int) -> Iterator[bytes]:
        end = offset + length
        index = bisect_right(self._starts, offset) - 1
        view = memoryview(mapped)
        try:
            while offset < end:
                block_end = self._starts[index + 1] if index + 1 < len(self._starts) else self._size
                position = self._positions[index] + offset - self._starts[index]
                part = min(block_end, end) - offset
                piece = view[position : position + part]
                if len(piece) != part:
                    raise OSError("a stored object is shorter than its blocks say")
                yield cast(bytes, piece)  # a view: every reader of pieces takes one
                self._forget(mapped, position)
                offset += part
                index += 1
        finally:
            view.release()

    def _forget(self, mapped: mmap.mmap, position: int) -> None:
        """Let go of the mapped pages well behind ``position`` (still in the page
        cache: a reader lagging behind takes them back), so that the process does
        not count a whole gigabyte as its own."""
        behind = position - _KEEP_MAPPED
        if _DONTNEED is None or behind - self._forgotten < _KEEP_MAPPED:
            return
        start = self._forgotten - self._forgotten % mmap.PAGESIZE
        stop = behind - behind % mmap.PAGESIZE
        if stop > start:
            try:
                mapped.madvise(_DONTNEED, start, stop - start)
            except (OSError, ValueError):
                pass
            self._forgotten = stop

    def _copied(self, offset: int, length: int) -> Iterator[bytes]:
        end = offset + length
        index = bisect_right(self._starts, offset) - 1
        while offset < end:
            take = min(PIECE, end - offset)
            out = bytearray(take)
            view = memoryview(out)
            buffers: list[memoryview | bytearray] = []
            first = expected = self._positions[index] + offset - self._starts[index]
            filled = 0
            while filled < take:
                here = offset + filled
                block_end = self._starts[index + 1] if index + 1 < len(self._starts) else self._size
                position = self._positions[index] + here - self._starts[index]
                if position > expected:  # the next block's header, read aside
                    buffers.append(bytearray(position - expected))
                    expected = position
                part = min(block_end - here, take - filled)
                buffers.append(view[filled : filled + part])
                expected += part
                filled += part
                if here + part >= block_end:
                    index += 1
            if _read_into(self._pack, buffers, first) != expected - first:
                raise OSError("a stored object is shorter than its blocks say")
            offset += take
            yield cast(bytes, out)  # a bytearray: every reader of pieces takes one


def _read_into(pack: PackFile, buffers: list[memoryview | bytearray], at: int) -> int:
    preadv = getattr(os, "preadv", None)
    if preadv is not None:
        return int(preadv(pack.fileno(), buffers, at))
    done = 0
    for buffer in buffers:  # no preadv (Windows, older macOS): one read per block
        data = pack.read_at(len(buffer), at + done)
        buffer[: len(data)] = data
        done += len(data)
        if len(data) < len(buffer):
            break
    return done


def blocks_of(pack: PackFile, start: int, size: int) -> StoredBlocks | None:
    """The stored blocks of the zlib stream at ``start`` in ``pack`` holding
    ``size`` bytes, or None if it is not made of stored blocks alone (read it
    the usual way) or its headers do not add up to ``size``."""
    if pack.read_at(2, start) not in _ZLIB_HEADERS:
        return None
    starts: list[int] = []
    positions: list[int] = []
    at = start + 2
    content = 0
    while len(starts) <= _MAX_BLOCKS:
        head = pack.read_at(5, at)
        if len(head) != 5:
            return None
        flags, length, complement = _HEADER.unpack(head)
        if flags & ~1 or length ^ complement != 0xFFFF:
            return None  # a compressed block (or damage): inflate it
        if length:
            starts.append(content)
            positions.append(at + 5)
        content += length
        at += 5 + length
        if flags & 1:
            break
    else:
        return None
    if content != size:
        return None
    return StoredBlocks(pack, starts, positions, size)


def expected_blocks(pack: PackFile, start: int, size: int) -> StoredBlocks | None:
    """The stored blocks of the zlib stream at ``start`` in ``pack`` holding
    ``size`` bytes, where ``deflate.SegmentDeflater`` puts them when it keeps
    every segment stored, their headers not read but the first block's and
    the last's (each where it should be): the caller checks the others
    (``expected_headers``) before it trusts what it copied. None if either
    is not there (``blocks_of`` reads them all)."""
    if size <= 0:
        return None
    starts: list[int] = []
    for segment in range(0, size, SEGMENT):
        starts.extend(range(segment, min(segment + SEGMENT, size), STORED_MAX))
    # each block's bytes follow the zlib header and the 5-byte headers of every block up to its own
    positions = [start + 7 + 5 * index + block for index, block in enumerate(starts)]
    last = start + 2 + 5 * len(starts) + size
    first = (starts[1] if len(starts) > 1 else size) - starts[0]
    head = pack.read_at(7, start)
    if head[:2] not in _ZLIB_HEADERS or head[2:] != _HEADER.pack(0, first, first ^ 0xFFFF):
        return None
    if pack.read_at(5, last) != _LAST_BLOCK:
        return None
    return StoredBlocks(pack, starts, positions, size, last)
