"""git's delta format: copy and insert instructions, written and read a piece at a time.

A delta (gitformat-pack, "Deltified representation") starts with the sizes of
its base and of its result (7 bits a byte, least significant first), then a
list of instructions: *copy* (high bit set; up to four offset bytes and three
size bytes, present as the low seven bits say; a size of 0 means 65,536) takes
a range of the base, *insert* (1 to 127) takes that many bytes that follow.
Offsets are 32-bit, so a delta reaches only the first 4 GiB of its base.

:class:`DeltaWriter` compresses a delta as it is made, into memory and then a
temporary file past ``SPILL`` (a delta carries the changed bytes, which may be
many). :class:`OpReader` reads a delta's instructions from its inflated
pieces, never needing it whole.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from snapshotter.engine.gitstore.deflate import compressor

MAX_COPY = 0xFFFFFF
_INSERTS_JOINED = 1 << 20
"""The largest copy one instruction takes (three size bytes)."""
MAX_INSERT = 127
MAX_OFFSET = 0xFFFFFFFF
SPILL = 8 << 20
"""Compressed delta bytes kept in memory; past this they go to a temporary file."""


def varint(value: int) -> bytes:
    """A delta header's size: 7 bits a byte, least significant first."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def copy_op(offset: int, size: int) -> bytes:
    """One copy instruction for ``size`` (1 to ``MAX_COPY``) bytes at ``offset``."""
    if not 0 < size <= MAX_COPY or not 0 <= offset <= MAX_OFFSET:
        raise ValueError(f"a copy of {size} bytes at {offset} cannot be encoded")
    command = 0x80
    args = bytearray()
    for i in range(4):
        byte = (offset >> (8 * i)) & 0xFF
        if byte:
            command |= 1 << i
            args.append(byte)
    if size != 0x10000:  # 65,536 is spelt as no size bytes at all
        for i in range(3):
            byte = (size >> (8 * i)) & 0xFF
            if byte:
                command |= 0x10 << i
                args.append(byte)
    return bytes((command,)) + bytes(args)


def insert_ops(data: bytes | memoryview) -> bytes:
    """``data`` as insert instructions of at most 127 bytes each."""
    view = memoryview(data)
    parts = []
    for start in range(0, len(view), MAX_INSERT):
        piece = view[start : start + MAX_INSERT]
        parts.append(bytes((len(piece),)))
        parts.append(bytes(piece))
    return b"".join(parts)


class DeltaTooLarge(Exception):
    """The delta grew past the limit its writer was given."""


class DeltaWriter:
    """Builds one delta from ``copy`` and ``insert`` calls, merging a copy that
    continues the one before, compressing as it goes (zlib level 1, ISA-L where
    installed). ``limit`` caps the delta's own size (raw), past which
    :class:`DeltaTooLarge` is raised: a delta carrying most of the file is worth
    less than a new full copy."""

    def __init__(self, base_size: int, result_size: int, limit: int, spill_dir: str | None = None) -> None:
        self.base_size = base_size
        self.result_size = result_size
        self.limit = limit
        self.size = 0
        """The delta's raw size so far."""
        self.literal = 0
        """Bytes inserted so far."""
        self.written = 0
        """Result bytes described so far."""
        self._squeezer = compressor()
        self._out = tempfile.SpooledTemporaryFile(SPILL, dir=spill_dir, prefix="tmp_pack_delta_")  # noqa: SIM115
        self._copy_at = -1
        self._copy_size = 0
        self._raw(varint(base_size) + varint(result_size))

    def _raw(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.limit:
            raise DeltaTooLarge(f"the delta passed {self.limit:,} bytes")
        packed = self._squeezer.compress(data)
        if packed:
            self._out.write(packed)

    def copy(self, offset: int, size: int) -> None:
        """Take ``size`` bytes of the base at ``offset`` next."""
        if size <= 0:
            return
        if offset + size > self.base_size:
            raise ValueError("a copy past the end of the base")
        self.written += size
        if self._copy_size and self._copy_at + self._copy_size == offset:
            self._copy_size += size
            return
        self._flush_copy()
        self._copy_at, self._copy_size = offset, size

    def _flush_copy(self) -> None:
        at, size = self._copy_at, self._copy_size
        self._copy_size = 0
        ops = []
        while size:
            step = min(size, MAX_COPY)
            ops.append(copy_op(at, step))
            at += step
            size -= step
        if ops:
            self._raw(b"".join(ops))

    def insert(self, data: bytes | memoryview) -> None:
        """Take ``data`` itself next."""
        if not len(data):
            return
        self._flush_copy()
        self.literal += len(data)
        self.written += len(data)
        self._raw(insert_ops(data))

    def finish(self) -> tuple[int, tempfile.SpooledTemporaryFile[bytes]]:
        """(the delta's raw size, its zlib stream in a file positioned at 0);
        the caller closes the file. ValueError if the instructions do not
        describe exactly ``result_size`` bytes."""
        self._flush_copy()
        if self.written != self.result_size:
            self.close()
            raise ValueError(f"the delta describes {self.written:,} bytes, not {self.result_size:,}")
        self._out.write(self._squeezer.flush())
        self._out.flush()
        self._out.seek(0)
        return self.size, self._out

    def close(self) -> None:
        self._out.close()


@dataclass(frozen=True)
class Copy:
    """Take ``size`` bytes of the base at ``offset``."""

    offset: int
    size: int


@dataclass(frozen=True)
class Insert:
    """Take the ``data`` that follows the instruction."""

    data: bytes


class DeltaDamaged(ValueError):
    """A delta that cannot be read: truncated, an unknown instruction, a size that does not add up."""


class OpReader:
    """The instructions of one delta, read from its content given in pieces
    (``more()`` returns the next piece, ``b""`` at the end)."""

    def __init__(self, more: Callable[[], bytes], what: str) -> None:
        self._more = more
        self._buffer = b""
        self._at = 0
        self.what = what
        self.base_size = self._varint()
        self.result_size = self._varint()

    def _fill(self, need: int) -> None:
        while len(self._buffer) - self._at < need:
            piece = self._more()
            if not piece:
                raise DeltaDamaged(f"{self.what} is truncated")
            self._buffer = self._buffer[self._at :] + piece
            self._at = 0

    def _take(self, count: int) -> bytes:
        self._fill(count)
        out = self._buffer[self._at : self._at + count]
        self._at += count
        return out

    def _varint(self) -> int:
        value = shift = 0
        while True:
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value
            if shift > 63:
                raise DeltaDamaged(f"{self.what} has a damaged size")

    def _at_end(self) -> bool:
        if self._at < len(self._buffer):
            return False
        piece = self._more()
        if not piece:
            return True
        self._buffer, self._at = piece, 0
        return False

    def _inserts(self, command: int) -> bytes:
        """The bytes of an insert and of those right after it, as one: a
        delta inserts at most 127 bytes an instruction, and a changed 64 KiB
        took 516 of them, each a step of this loop (0.2 s of a restore of a
        1 GiB file 5 deltas deep, before). Up to ``_INSERTS_JOINED`` bytes."""
        parts = [self._take(command)]
        joined = command
        while joined < _INSERTS_JOINED:
            buffer, at = self._buffer, self._at
            end = len(buffer)
            while at < end and joined < _INSERTS_JOINED:  # inserts whole in the buffer, sliced out
                command = buffer[at]
                stop = at + 1 + command
                if not 0 < command < 0x80 or stop > end:
                    break
                parts.append(buffer[at + 1 : stop])
                joined += command
                at = stop
            self._at = at
            if at < end:
                command = buffer[at]
                if not 0 < command < 0x80 or joined >= _INSERTS_JOINED:
                    break
                self._at += 1  # an insert running past the buffer's end
                parts.append(self._take(command))
                joined += command
            elif self._at_end():
                break
        return b"".join(parts)

    def ops(self) -> Iterator[Copy | Insert]:
        """Every instruction in order (inserts in a row as one); DeltaDamaged if they do not make
        ``result_size`` bytes or reach past ``base_size``."""
        made = 0
        while not self._at_end():
            command = self._take(1)[0]
            if command & 0x80:
                offset = size = 0
                for i in range(4):
                    if command & (1 << i):
                        offset |= self._take(1)[0] << (8 * i)
                for i in range(3):
                    if command & (0x10 << i):
                        size |= self._take(1)[0] << (8 * i)
                size = size or 0x10000
                if offset + size > self.base_size:
                    raise DeltaDamaged(f"{self.what} copies past the end of its base")
                made += size
                op: Copy | Insert = Copy(offset, size)
            elif command:
                data = self._inserts(command)
                made += len(data)
                op = Insert(data)
            else:
                raise DeltaDamaged(f"{self.what} holds an unknown instruction")
            if made > self.result_size:
                raise DeltaDamaged(f"{self.what} makes more than its header says")
            yield op
        if made != self.result_size:
            raise DeltaDamaged(f"{self.what} makes {made:,} bytes, not the {self.result_size:,} its header says")


def apply_small(base: bytes, delta: bytes) -> bytes:
    """A delta applied to a base held whole (for tests and small objects)."""
    pieces = iter((delta,))
    reader = OpReader(lambda: next(pieces, b""), "the delta")
    if reader.base_size != len(base):
        raise DeltaDamaged("the delta does not fit its base")
    out = []
    for op in reader.ops():
        out.append(base[op.offset : op.offset + op.size] if isinstance(op, Copy) else op.data)
    return b"".join(out)
