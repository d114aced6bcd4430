"""Making a big file's delta against its previous version, in one pass.

The previous version is known by its signature only (``signature``): a
12-byte SHA-1 and the first 8 bytes of each of its blocks. The new version is
fed in pieces, in order, and read once; the matcher keeps a few blocks of it.

At each *expected* position (where the block that continues the last match
would begin) the block's SHA-1 is taken: equal to the old block there, it is
copied (the common case, a file rewritten in place: a database's pages, a
dataset's records); equal to any old block, that one is copied and the
expected positions follow it. A block matching nothing is taken as it is.
Where two blocks in a row match nothing, bytes were inserted or deleted (or a
region was rewritten): the matcher then rolls forward a byte at a time, as
rsync does, looking up each position's first 8 bytes among the old blocks'
and confirming a candidate by its SHA-1, to find where the old content
resumes, shifted. It rolls at most two blocks at a time, again after 4, 8,
16... blocks without a match, and within a budget for the whole file, so
a file rewritten throughout costs linear time. No match is ever taken that
the SHA-1 did not confirm.

Given the old version's bytes (``oldcontent``), a chunk in place is compared
with them first, with no hash: equal, it is copied whole.

While matching, the new version's own signature is made (its blocks at their
own, unshifted places), for the version after it.
"""

from __future__ import annotations

from snapshotter.engine.gitstore.deltaformat import DeltaTooLarge, DeltaWriter
from snapshotter.engine.gitstore.oldcontent import OldContent
from snapshotter.engine.gitstore.signature import (
    CHUNK_BLOCKS,
    SAMPLE,
    STRONG,
    Signature,
    SignatureBuilder,
    chunk_hash,
    strong_hash,
)

ROLL_AHEAD = 2
"""Blocks rolled through at a time when looking for shifted content."""
LITERAL_BATCH = 64 << 10
"""Bytes taken as they are collected before they go to the delta."""
FOLLOWING = 16
"""Old blocks searched for first, from where the content would have resumed."""
_CANDIDATES = 4
_CONFIRMS = 64
"""SHA-1s taken per roll for positions whose first bytes matched an old block's."""


class Matcher:
    """Feeds a new version (``feed``, then ``finish``) to ``writer`` as a delta
    of ``old``; builds the new version's signature. If the delta grows past its
    writer's limit, the writer is dropped (``writer`` becomes None) and only
    the signature is made."""

    def __init__(
        self,
        old: Signature | None,
        new_size: int,
        writer: DeltaWriter | None,
        block_size: int,
        old_content: OldContent | None = None,
    ) -> None:
        self.old = old
        self._old_content = old_content
        """The old version's bytes, to find a chunk unchanged in place by comparing, not hashing."""
        self.writer = writer if old is not None else None
        self.size = new_size
        self.signature = SignatureBuilder(new_size, block_size)
        self._block = old.block_size if old is not None else block_size
        self._buffer = b""
        self._buffer_at = 0
        self._next = 0
        """The next position to match (an expected position, or the end)."""
        self._literal_at = 0
        """Where the bytes not yet sent to the delta begin (all taken as they are)."""
        self._shift = 0
        """Old offset minus new offset at the expected positions."""
        self._signed = 0
        """The next position whose block the new signature needs."""
        self._misses = 0
        self._next_roll = 2
        self._resume = 0
        """The old block after the last one copied: where old content would resume."""
        self._roll_budget = (1 << 20) + new_size // 256
        self._by_strong: dict[bytes, int] | None = None
        self._by_sample: dict[bytes, list[int]] | None = None
        self._chunk = self._block * CHUNK_BLOCKS
        self._chunk_checked = 0
        """Chunks that start before this were looked at whole already."""
        self._same_chunks = old is not None and old.block_size == block_size
        """Whether the new signature's chunks are the old one's (then taken over when unchanged)."""
        self._inherited: set[int] = set()
        self._hashed: dict[int, bytes] = {}
        """Blocks of a changed chunk, hashed when the chunk was looked at: used by the steps."""
        self._block_strongs: dict[int, bytes] = {}
        """Hashes taken while matching that the new signature takes, by block number."""
        self.fed = 0

    # -- input -------------------------------------------------------------------------

    def feed(self, piece: bytes) -> None:
        keep = min(self._literal_at, self._next, self._signed) - self._buffer_at
        self._buffer = self._buffer[keep:] + piece if keep else self._buffer + piece
        self._buffer_at += keep
        self.fed += len(piece)
        self._run(final=False)

    def finish(self) -> bool:
        """Match what is left; False if the bytes fed were not the size given
        (the file changed while it was read)."""
        if self.fed != self.size:
            return False
        self._run(final=True)
        self._sign(self.size, final=True)
        self._take_literal(self.size)
        return True

    # -- the walk ----------------------------------------------------------------------

    def _view(self, start: int, end: int) -> memoryview:
        at = self._buffer_at
        return memoryview(self._buffer)[start - at : end - at]

    def _run(self, final: bool) -> None:
        block = self._block
        end = self._buffer_at + len(self._buffer)
        if self.writer is None:  # only the signature is made: nothing is kept for a delta
            self._next = self._literal_at = end
        while self._next < end:
            need = block * (ROLL_AHEAD + 1) if self._misses + 1 >= self._next_roll else block
            if self._shift == 0 and self._next % self._chunk == 0 and self._next >= self._chunk_checked:
                need = self._chunk  # a whole chunk, to look at it in one call
            if end - self._next < need and not final:
                break
            if not self._whole_chunk(end):
                self._step(end)
            if self.writer is None:
                self._next = self._literal_at = end
        self._sign(end if self.writer is None else self._next, final=False)

    def _sign(self, end: int, final: bool) -> None:
        """Add to the new signature every block whose bytes are all in (up to
        ``end``): a chunk found unchanged is taken over from the old signature,
        hashes taken while matching are used again, the rest are made here."""
        builder = self.signature
        sig_block, sig_chunk = builder.block_size, builder.chunk_size
        while self._signed < self.size:
            at = self._signed
            if at % sig_chunk == 0:
                number = at // sig_chunk
                if number in self._inherited:
                    stop = min(at + sig_chunk, self.size)
                    if stop > end and not final:
                        return
                    assert self.old is not None
                    builder.inherit(self.old, number)
                    self._inherited.discard(number)
                    self._signed = stop
                    continue
            stop = min(at + sig_block, self.size)
            if stop > end and not (final and at < end):
                return
            builder.add(self._view(at, stop), self._block_strongs.pop(at // sig_block, None))
            self._signed = stop

    def _whole_chunk(self, end: int) -> bool:
        """At a chunk's start, in place (no shift): its blocks' hashes, and the
        chunk's digest of them; if the old chunk there is the same, it is copied
        whole and its entries taken over for the new signature. True if so (else
        the blocks' hashes serve the block-by-block steps that follow)."""
        at = self._next
        old = self.old
        if self._shift or at % self._chunk or at < self._chunk_checked or self.writer is None or old is None:
            return False
        number = at // self._chunk
        length = min(self._chunk, self.size - at)
        if number * self._chunk >= old.size or min(self._chunk, old.size - number * self._chunk) != length:
            return False
        if at + length > end:
            return False
        self._chunk_checked = at + length
        if self._old_content is not None and self._old_content.same(self._buffer, at - self._buffer_at, at, length):
            self._copy(at, at, length)  # the very bytes the delta copies: no hash needed to vouch for them
            if self._same_chunks:
                self._inherited.add(number)
            return True
        view = self._view(at, at + length)
        block = self._block
        strongs = [strong_hash(view[i : i + block]) for i in range(0, length, block)]
        if chunk_hash(b"".join(strongs)) != old.chunk_at(number):
            first = at // block
            self._hashed.update(zip(range(first, first + len(strongs)), strongs))
            return False  # something in it changed: block by block
        self._copy(at, at, length)
        if self._same_chunks:
            self._inherited.add(number)
        return True

    def _step(self, end: int) -> None:
        at = self._next
        self._sign(at, final=False)
        length = min(self._block, self.size - at)
        piece = self._view(at, at + length)
        strong = self._hashed.pop(at // self._block, None) if at % self._block == 0 else None
        if strong is None:
            strong = strong_hash(piece)
        sig_block = self.signature.block_size
        if at % sig_block == 0 and length == min(sig_block, self.size - at):
            self._block_strongs[at // sig_block] = strong  # the same block: hashed once for both
        found = self._match(at, length, strong)
        if found is not None:
            self._copy(at, found, length)
            return
        self._misses += 1
        self._next = at + length
        if self._next - self._literal_at >= LITERAL_BATCH:
            self._take_literal(at)  # never past ``at``: a roll may still match from there on
        if self._misses >= self._next_roll and length == self._block:
            self._next_roll *= 2
            self._roll(at + 1, min(end - self._block, at + 1 + ROLL_AHEAD * self._block))

    def _match(self, at: int, length: int, strong: bytes) -> int | None:
        """The old offset of a block equal to the new one at ``at``, or None."""
        old = self.old
        assert old is not None
        expected = at + self._shift
        if expected % self._block == 0:
            index = expected // self._block
            if 0 <= index < old.count and old.block_length(index) == length and old.strong_at(index) == strong:
                return expected
        if length == self._block:
            index = self._strong_index().get(strong, -1)
            if index >= 0:
                return index * self._block
        return None

    def _copy(self, at: int, old_offset: int, length: int) -> None:
        self._take_literal(at)
        writer = self.writer
        if writer is not None:
            writer.copy(old_offset, length)
        self._literal_at = at + length
        self._next = at + length
        self._shift = old_offset - at
        self._misses = 0
        self._next_roll = 2
        self._resume = -(-(old_offset + length) // self._block)

    def _take_literal(self, upto: int) -> None:
        """Send the bytes taken as they are up to ``upto`` to the delta."""
        writer = self.writer
        if writer is None or upto <= self._literal_at:
            return
        try:
            writer.insert(self._view(self._literal_at, upto))
        except DeltaTooLarge:
            writer.close()
            self.writer = None
        self._literal_at = upto

    def _roll(self, start: int, stop: int) -> None:
        """Look for old content again from ``start`` to ``stop``: first the
        blocks that would have come next (an insertion, or a short deletion:
        their first bytes searched for at C speed), then, from the fourth miss
        in a row, any old block at each position in turn (within the budget)."""
        old = self.old
        assert old is not None
        if start + self._shift >= old.size or start >= stop:
            return  # past the old content's end (an append): nothing to find again
        block = self._block
        base = self._buffer_at
        data = self._buffer
        first = self._resume
        confirms = 0
        for index in range(first, min(first + FOLLOWING, old.size // block)):
            sample = old.samples[index * SAMPLE : (index + 1) * SAMPLE]
            found = data.find(sample, start - base, stop - base + SAMPLE)
            while found >= 0 and confirms < _CONFIRMS:
                confirms += 1
                if strong_hash(memoryview(data)[found : found + block]) == old.strong_at(index):
                    self._copy(base + found, index * block, block)
                    return
                found = data.find(sample, found + 1, stop - base + SAMPLE)
        if self._misses < 4 or self._roll_budget <= 0:
            return
        stop = min(stop, start + self._roll_budget)
        self._roll_budget -= stop - start
        samples = self._sample_index()
        view = memoryview(data)
        for at in range(start - base, stop - base):
            candidates = samples.get(data[at : at + SAMPLE])
            if candidates is None:
                continue
            strong = strong_hash(view[at : at + block])
            for index in candidates[:_CANDIDATES]:
                if old.strong_at(index) == strong:
                    self._copy(base + at, index * block, block)
                    return
            confirms += 1
            if confirms >= _CONFIRMS:
                return

    # -- indexes of the old blocks, made when first needed ---------------------------

    def _strong_index(self) -> dict[bytes, int]:
        found = self._by_strong
        if found is None:
            old = self.old
            assert old is not None
            full = old.size // old.block_size
            strong = old.strong
            found = {}
            for index in range(full - 1, -1, -1):  # the first block of equal ones wins
                found[strong[index * STRONG : (index + 1) * STRONG]] = index
            self._by_strong = found
        return found

    def _sample_index(self) -> dict[bytes, list[int]]:
        found = self._by_sample
        if found is None:
            old = self.old
            assert old is not None
            samples = old.samples
            found = {}
            for index in range(old.size // old.block_size):
                found.setdefault(samples[index * SAMPLE : (index + 1) * SAMPLE], []).append(index)
            self._by_sample = found
        return found
