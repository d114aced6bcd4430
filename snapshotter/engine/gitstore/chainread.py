"""Reading a big object stored as a chain of deltas, a piece at a time.

git applies a chain's deltas one by one, each time making the whole object;
for a 1 GiB file 50 deltas deep that is 50 copies of it. Here each delta on
the way from the object to its whole base is read (they are small), their
instructions are composed into one list of pieces of the object, each a
range of the base or some bytes a delta inserted, and the base is read once,
in order, the pieces joined as it goes: memory stays at a few MiB (the
inserted bytes spill to a temporary file past ``LITERALS_IN_MEMORY``), the
cost about one read of the base and the deltas.

A piece may point back into the base (content moved, or copied twice): it is
taken from the last ``RECENT`` bytes read, or the base is read again from its
start. Any chain is read: offset deltas in one pack, deltas naming their base
by id in another pack or loose (a pack fetched from a remote), up to
``MAX_CHAIN`` deep. The content is checked against its id by the caller; for
a restore (``copy_pieces``) the entries read are checked by their CRC-32
instead (``entrycheck``), and a base kept in stored blocks is given as spans
of its pack, for the kernel to copy (``spancopy``).
"""

from __future__ import annotations

import os
import tempfile
import zlib
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from snapshotter.engine.gitstore.deltaformat import Copy, DeltaDamaged, OpReader
from snapshotter.engine.gitstore.inflate import PIECE, Stream
from snapshotter.engine.gitstore.packread import MAX_CHAIN, PackFile, _entry_header, _entry_stream
from snapshotter.engine.gitstore.spancopy import Span
from snapshotter.engine.gitstore.storedblocks import StoredBlocks, blocks_of, expected_blocks

LITERALS_IN_MEMORY = 16 << 20
RECENT = 32 << 20
_BASE, _LITERAL = 0, 1
_PREAD = getattr(os, "pread", None)

OpenPack = Callable[[str], PackFile]
"""Opens a pack (its path less ``.pack``) for this read."""
Locate = Callable[[bytes], "tuple[str, int] | None"]
"""Where an object is packed: (pack path less ``.pack``, offset), or None."""
OpenLoose = Callable[[bytes], "tuple[int, int, Stream] | None"]
"""A loose object: (type number, size, its content's stream), or None."""


@dataclass(frozen=True)
class _Entry:
    pack: str
    offset: int


class ChainDamaged(zlib.error):
    """A chain that cannot be read: a missing base, a loop, a delta that does not fit."""


def stream_object(
    first: _Entry | tuple[str, int], sha: bytes, open_pack: OpenPack, locate: Locate, open_loose: OpenLoose
) -> tuple[int, int, Iterator[bytes]]:
    """(type number, size, content in pieces) of the packed object at
    ``first`` (pack, offset), deltas resolved a piece at a time."""
    start = first if isinstance(first, _Entry) else _Entry(*first)
    deltas, base_kind, base_size, open_base = _walk(start, sha, open_pack, locate, open_loose)
    if not deltas:
        return base_kind, base_size, _whole(open_base, base_size)
    literals = tempfile.SpooledTemporaryFile(LITERALS_IN_MEMORY, prefix="snapshotter-delta-")  # noqa: SIM115
    try:
        starts, pieces, size = _compose(deltas, base_size, open_pack, literals, sha)
    except BaseException:
        literals.close()
        raise
    return base_kind, size, _assemble(starts, pieces, size, base_size, open_base, literals)


def copy_pieces(
    first: tuple[str, int],
    sha: bytes,
    open_pack: OpenPack,
    locate: Locate,
    open_loose: OpenLoose,
    checked: bool = False,
) -> tuple[int, int, Iterator[bytes | Span], list[tuple[str, int]], StoredBlocks | None] | None:
    """(type number, size, content as pieces, the entries read: (pack, offset),
    the base's stored blocks or None)
    of the packed object at ``first`` whose whole base is packed too: where the
    base is kept in stored blocks its spans are given as they lie in the pack
    (``Span``, to be copied by the kernel), else it is inflated; the deltas'
    inserted bytes are bytes. None where the base is loose (read it with
    ``stream_object``: no index keeps a CRC-32 of a loose object), or where
    there is no ``pread`` (Windows: the check's thread reads at offsets).
    ``checked``: the caller checks the base's entry whole after the copy, its
    block headers too (``entrycheck``), so they are not read first where they
    can be expected (``storedblocks.expected_blocks``; then the blocks'
    ``unchecked_end`` is set)."""
    if _PREAD is None:
        return None
    deltas, kind, base_size, open_base = _walk(_Entry(*first), sha, open_pack, locate, open_loose)
    if not isinstance(open_base, _Opener) or open_base.entry is None:
        return None
    read = [(entry.pack, entry.offset) for entry in (open_base.entry, *reversed(deltas))]
    blocks = None
    if checked and open_base.expected is not None:
        blocks = open_base.expected()
    if blocks is None and open_base.stored is not None:
        blocks = open_base.stored()
    if not deltas:
        whole = _whole(open_base, base_size) if blocks is None else _spans([(base_size, _BASE, 0)], blocks, None)
        return kind, base_size, whole, read, blocks
    literals = tempfile.SpooledTemporaryFile(LITERALS_IN_MEMORY, prefix="snapshotter-delta-")  # noqa: SIM115
    try:
        starts, pieces, size = _compose(deltas, base_size, open_pack, literals, sha)
    except BaseException:
        literals.close()
        if blocks is not None:
            blocks.close()
        raise
    if blocks is None:  # compressed: inflated as ``stream_object`` does (zlib checks its Adler-32)
        return kind, size, _assemble(starts, pieces, size, base_size, open_base, literals), read, None
    return kind, size, _spans(pieces, blocks, literals), read, blocks


def _spans(
    pieces: list[tuple[int, int, int]],
    blocks: StoredBlocks,
    literals: tempfile.SpooledTemporaryFile[bytes] | None,
) -> Iterator[bytes | Span]:
    """The object's content: the base's spans in the pack, the inserted bytes read."""
    try:
        for length, kind, where in pieces:
            if kind == _BASE:
                yield blocks.spans(where, length)
                continue
            assert literals is not None
            yield from _literal(literals, where, length)
    finally:
        blocks.close()
        if literals is not None:
            literals.close()


def _literal(literals: tempfile.SpooledTemporaryFile[bytes], where: int, length: int) -> Iterator[bytes]:
    literals.seek(where)
    while length:
        chunk = literals.read(min(length, PIECE))
        if not chunk:
            raise ChainDamaged("a delta's inserted bytes went missing")
        length -= len(chunk)
        yield chunk


def base_kind(first: tuple[str, int], sha: bytes, open_pack: OpenPack, locate: Locate, open_loose: OpenLoose) -> int:
    """The type of the object at ``first``: its whole base's, found from entry
    headers alone (nothing is inflated but a loose base's header)."""
    return _walk(_Entry(*first), sha, open_pack, locate, open_loose)[1]


def _walk(
    start: _Entry, sha: bytes, open_pack: OpenPack, locate: Locate, open_loose: OpenLoose
) -> tuple[list[_Entry], int, int, Callable[[], Stream]]:
    """The deltas from the object down (last first), and its whole base: type,
    size, and how to open its content's stream."""
    deltas: list[_Entry] = []
    at = start
    seen: set[tuple[str, int]] = set()
    while True:
        if (at.pack, at.offset) in seen or len(deltas) > MAX_CHAIN:
            raise ChainDamaged(f"object {sha.hex()} has a damaged or too long delta chain")
        seen.add((at.pack, at.offset))
        head = open_pack(at.pack).read_at(4096, at.offset)
        kind, size, used, distance = _entry_header(head, sha)
        if kind in (1, 2, 3, 4):
            return deltas, kind, size, _packed_base(at, head, used, size, sha, open_pack)
        deltas.append(at)
        if distance is not None:
            if distance <= 0 or distance > at.offset:
                raise ChainDamaged(f"object {sha.hex()} has a damaged delta chain in its pack")
            at = _Entry(at.pack, at.offset - distance)
            continue
        base_id = head[used : used + 20]
        found = locate(base_id)
        if found is not None:
            at = _Entry(*found)
            continue
        loose = open_loose(base_id)
        if loose is None:
            raise ChainDamaged(f"object {sha.hex()} is a delta of {base_id.hex()}, which is missing")
        return deltas, loose[0], loose[1], _loose_base(base_id, loose[2], open_loose)


def _packed_base(
    at: _Entry, head: bytes, used: int, size: int, sha: bytes, open_pack: OpenPack
) -> Callable[[], Stream]:
    opener = _Opener(lambda: _entry_stream(open_pack(at.pack), at.offset, head, used, size, sha))
    opener.stored = lambda: blocks_of(open_pack(at.pack), at.offset + used, size)
    opener.expected = lambda: expected_blocks(open_pack(at.pack), at.offset + used, size)
    opener.entry = at
    return opener


class _Opener:
    """Opens a base's stream; ``stored``, where set, finds its stored blocks
    (a base read from the pack as it is, see ``storedblocks``)."""

    def __init__(self, opener: Callable[[], Stream]) -> None:
        self._opener = opener
        self.stored: Callable[[], StoredBlocks | None] | None = None
        self.expected: Callable[[], StoredBlocks | None] | None = None
        """Finds its stored blocks where they are expected, headers unread (``storedblocks``)."""
        self.entry: _Entry | None = None
        """The base's entry in its pack."""

    def __call__(self) -> Stream:
        return self._opener()


def _loose_base(base_id: bytes, first: Stream, open_loose: OpenLoose) -> Callable[[], Stream]:
    """Opens a loose base's stream: the one already open first, then anew."""
    waiting = [first]

    def reopen() -> Stream:
        if waiting:
            return waiting.pop()
        found = open_loose(base_id)
        if found is None:
            raise ChainDamaged(f"object {base_id.hex()} went missing while it was read")
        return found[2]

    return reopen


def _delta_ops(entry: _Entry, open_pack: OpenPack, sha: bytes) -> OpReader:
    pack = open_pack(entry.pack)
    head = pack.read_at(4096, entry.offset)
    kind, size, used, _ = _entry_header(head, sha)
    if kind == 7:
        used += 20
    stream = _entry_stream(pack, entry.offset, head, used, size, sha)
    pieces = stream.pieces(size)
    return OpReader(lambda: next(pieces, b""), f"a delta of object {sha.hex()}")


def _compose(
    deltas: list[_Entry],
    base_size: int,
    open_pack: OpenPack,
    literals: tempfile.SpooledTemporaryFile[bytes],
    sha: bytes,
) -> tuple[list[int], list[tuple[int, int, int]], int]:
    """The object as pieces: ``starts`` (each piece's offset in the object) and
    ``pieces`` (length, kind, offset in the base or in ``literals``)."""
    starts = [0]
    pieces = [(base_size, _BASE, 0)]
    size = base_size
    written = 0
    for entry in reversed(deltas):  # from the base up
        ops = _delta_ops(entry, open_pack, sha)
        if ops.base_size != size:
            raise ChainDamaged(f"object {sha.hex()} has a delta that does not fit its base")
        new_starts: list[int] = []
        new_pieces: list[tuple[int, int, int]] = []
        made = 0
        try:
            for op in ops.ops():
                if isinstance(op, Copy):
                    made = _copy_pieces(starts, pieces, op.offset, op.size, made, new_starts, new_pieces)
                else:
                    literals.write(op.data)
                    _add(new_starts, new_pieces, made, (len(op.data), _LITERAL, written))
                    written += len(op.data)
                    made += len(op.data)
        except DeltaDamaged as exc:
            raise ChainDamaged(str(exc)) from None
        starts, pieces, size = new_starts, new_pieces, ops.result_size
    return starts, pieces, size


def _add(starts: list[int], pieces: list[tuple[int, int, int]], at: int, piece: tuple[int, int, int]) -> None:
    """Append a piece, merged with the one before where it continues it."""
    if pieces:
        length, kind, where = pieces[-1]
        if kind == piece[1] and where + length == piece[2]:
            pieces[-1] = (length + piece[0], kind, where)
            return
    starts.append(at)
    pieces.append(piece)


def _copy_pieces(
    starts: list[int],
    pieces: list[tuple[int, int, int]],
    offset: int,
    size: int,
    made: int,
    new_starts: list[int],
    new_pieces: list[tuple[int, int, int]],
) -> int:
    """The pieces of the previous version from ``offset`` for ``size`` bytes,
    appended to the new version's; returns the new version's size so far."""
    index = bisect_right(starts, offset) - 1
    end = offset + size
    while offset < end:
        start = starts[index]
        length, kind, where = pieces[index]
        skip = offset - start
        take = min(length - skip, end - offset)
        _add(new_starts, new_pieces, made, (take, kind, where + skip))
        made += take
        offset += take
        index += 1
    return made


def _backwards(pieces: list[tuple[int, int, int]]) -> bool:
    """Whether some piece of the base comes before one already read."""
    reached = 0
    for length, kind, where in pieces:
        if kind == _BASE:
            if where < reached:
                return True
            reached = where + length
    return False


class _Base:
    """The base inflated forward once; a step back (``backwards``: the pieces
    hold one) is served from the last ``RECENT`` bytes, or by reading it again
    from its start."""

    def __init__(self, open_stream: Callable[[], Stream], size: int, backwards: bool) -> None:
        self._open = open_stream
        self._size = size
        self._keep_recent = backwards
        self._stream = open_stream()
        self._at = 0
        self._recent: deque[tuple[int, bytes]] = deque()
        self._recent_bytes = 0
        self.restarts = 0

    def read(self, offset: int, length: int) -> Iterator[bytes]:
        end = offset + length
        while offset < end:
            if offset < self._at:
                recent = self._recent_slice(offset, end)
                if recent is None:
                    self._restart()
                    continue
                yield recent
                offset += len(recent)
                continue
            step = min(PIECE, (offset if self._at < offset else end) - self._at)
            piece = self._stream.read(step)
            if not piece:
                raise ChainDamaged("a delta's base is shorter than its header says")
            self._keep(piece)
            if self._at > offset:  # some or all of this piece is wanted
                take = piece[len(piece) - (self._at - offset) :][: end - offset]
                yield take
                offset += len(take)

    def _recent_slice(self, offset: int, end: int) -> bytes | None:
        """The bytes from ``offset`` (up to ``end``) in one of the pieces read last."""
        for start, data in reversed(self._recent):
            if start <= offset < start + len(data):
                return data[offset - start : min(end, start + len(data)) - start]
            if start + len(data) <= offset:
                break
        return None

    def _keep(self, piece: bytes) -> None:
        if not self._keep_recent:
            self._at += len(piece)
            return
        self._recent.append((self._at, piece))
        self._recent_bytes += len(piece)
        self._at += len(piece)
        while self._recent_bytes > RECENT and len(self._recent) > 1:
            _, dropped = self._recent.popleft()
            self._recent_bytes -= len(dropped)

    def _restart(self) -> None:
        self._stream = self._open()
        self._at = 0
        self.restarts += 1


def _assemble(
    starts: list[int],
    pieces: list[tuple[int, int, int]],
    size: int,
    base_size: int,
    open_base: Callable[[], Stream],
    literals: tempfile.SpooledTemporaryFile[bytes],
) -> Iterator[bytes]:
    """The object's content, piece by piece."""
    stored: StoredBlocks | None = None
    try:
        stored = open_base.stored() if isinstance(open_base, _Opener) and open_base.stored is not None else None
        base: _Base | StoredBlocks = stored if stored is not None else _Base(open_base, base_size, _backwards(pieces))
        for length, kind, where in pieces:
            if kind == _BASE:
                yield from base.read(where, length)
                continue
            yield from _literal(literals, where, length)
    finally:
        literals.close()
        if stored is not None:
            stored.close()


def _whole(open_base: Callable[[], Stream], size: int) -> Iterator[bytes]:
    yield from open_base().pieces(size)
