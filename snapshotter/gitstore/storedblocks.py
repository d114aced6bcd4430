"""Reading a packed object kept in deflate's stored blocks without inflating it.

A key frame of incompressible bytes is written in stored blocks (see
``deflate.SegmentDeflater``): each is a 5-byte header (no flags but the last
block's, the length and its complement) and that many bytes as they are. Its
content can then be read straight from the pack, at any offset, one
``preadv`` filling a buffer with the payloads of many blocks and their headers
aside: no inflating, no Adler-32, no copy but the read's, and a step back is
a read like any other. The headers are read (and checked) first, once; a
stream holding any other kind of block is not for this reader (None from
``blocks_of``). The content is checked against its id by the caller, as for
every object.
"""

from __future__ import annotations

import os
import struct
from bisect import bisect_right
from collections.abc import Iterator
from typing import cast

from snapshotter.gitstore.inflate import PIECE
from snapshotter.gitstore.packread import PackFile

_HEADER = struct.Struct("<BHH")
_ZLIB_HEADERS = {b"\x78\x01", b"\x78\x5e", b"\x78\x9c", b"\x78\xda"}
_MAX_BLOCKS = 1 << 20


class StoredBlocks:
    """Where each stored block's bytes are in the pack: ``starts`` (offset in
    the content) and ``positions`` (offset in the pack)."""

    def __init__(self, pack: PackFile, starts: list[int], positions: list[int], size: int) -> None:
        self._pack = pack
        self._starts = starts
        self._positions = positions
        self._size = size

    def read(self, offset: int, length: int) -> Iterator[bytes]:
        """The content from ``offset`` for ``length`` bytes, in pieces of about ``PIECE``."""
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
