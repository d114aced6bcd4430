"""The pieces under big files' deltas, each against an oracle.

- deltas made by the matcher apply, with dulwich's ``apply_delta`` (git's
  algorithm), to exactly the new version, over random edits and piece sizes;
- our reading of delta instructions equals dulwich's application;
- ``SegmentDeflater``'s streams inflate, with zlib, to their content, whatever
  mixes of compressible and random segments;
- content in stored blocks (ours, and zlib's level 0 of any block sizes) reads
  back at any offset and length.
"""

from __future__ import annotations

import hashlib
import random
import tempfile
import zlib

import pytest
from dulwich.pack import apply_delta

from snapshotter.engine.gitstore import deltaformat
from snapshotter.engine.gitstore.deflate import SegmentDeflater
from snapshotter.engine.gitstore.deltaencode import Matcher
from snapshotter.engine.gitstore.deltaformat import Copy, DeltaWriter, OpReader, apply_small
from snapshotter.engine.gitstore.oldcontent import OldContent
from snapshotter.engine.gitstore.packread import PackFile
from snapshotter.engine.gitstore.signature import Signature, SignatureBuilder
from snapshotter.engine.gitstore.storedblocks import blocks_of


def _sign(data: bytes, block: int) -> Signature:
    builder = SignatureBuilder(len(data), block)
    for at in range(0, len(data), block):
        builder.add(data[at : at + block])
    return builder.finish(hashlib.sha1(data).digest())


def _delta(
    old: bytes, new: bytes, block: int, piece: int, content: OldContent | None = None, signed: bytes | None = None
) -> tuple[bytes | None, Matcher]:
    """``new`` as a delta of ``old``, matched against the signature of
    ``signed`` (``old`` unless given), comparing with ``content`` where given."""
    writer = DeltaWriter(len(old), len(new), max(len(new) // 2, 4096))
    matcher = Matcher(_sign(old if signed is None else signed, block), len(new), writer, block, content)
    for at in range(0, len(new), piece):
        matcher.feed(new[at : at + piece])
    assert matcher.finish()
    if matcher.writer is None:
        return None, matcher
    size, stream = matcher.writer.finish()
    with stream:
        delta = zlib.decompress(stream.read())
    assert len(delta) == size
    return delta, matcher


def _edit(rng: random.Random, data: bytes) -> bytes:
    new = bytearray(data)
    for _ in range(rng.randrange(0, 5)):
        kind = rng.choice("idatrm")
        at = rng.randrange(0, len(new) + 1)
        size = rng.randrange(0, 20_000)
        if kind == "i":
            new[at:at] = rng.randbytes(size)
        elif kind == "d":
            del new[at : at + size]
        elif kind == "a":
            new += rng.randbytes(size)
        elif kind == "t":
            del new[at:]
        elif kind == "r":
            new[at : at + size] = rng.randbytes(min(size, len(new) - at))
        else:
            source = rng.randrange(0, len(new) + 1)
            new[at:at] = new[source : source + size]
    return bytes(new)


@pytest.mark.parametrize("seed", range(8))
def test_matcher_deltas_apply_as_git_applies_them(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(40):
        size = rng.randrange(0, 150_000)
        old = rng.randbytes(size) if rng.random() < 0.7 else bytes(rng.randrange(3) for _ in range(size))
        new = _edit(rng, old)
        block = rng.choice([64, 512, 4096])
        delta, matcher = _delta(old, new, block, rng.choice([1, 333, 4096, 1 << 16]) if size < 20_000 else 1 << 16)
        if delta is not None:
            assert b"".join(apply_delta(old, delta)) == new
            assert apply_small(old, delta) == new
        signature = matcher.signature.finish(hashlib.sha1(new).digest())
        assert signature == _sign(new, matcher.signature.block_size)


def _applied_in_pieces(old: bytes, delta: bytes, piece: int) -> bytes:
    pieces = iter([delta[at : at + piece] for at in range(0, len(delta), piece)])
    reader = OpReader(lambda: next(pieces, b""), "the delta")
    return b"".join(old[op.offset : op.offset + op.size] if isinstance(op, Copy) else op.data for op in reader.ops())


@pytest.mark.parametrize("joined", [200, 1 << 20])
def test_a_delta_read_in_pieces_of_any_size_makes_what_git_makes(joined: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deltaformat, "_INSERTS_JOINED", joined)  # runs of inserts joined up to this many bytes
    rng = random.Random(joined)
    for _ in range(30):
        old = rng.randbytes(rng.randrange(1000, 100_000))
        new = _edit(rng, old)
        delta, _ = _delta(old, new, 512, 1 << 16)
        if delta is None:
            continue
        for piece in (1, 2, 7, 128, 129, 4096, len(delta)):
            assert _applied_in_pieces(old, delta, piece) == b"".join(apply_delta(old, delta))


def test_an_unchanged_or_lightly_changed_file_makes_a_small_delta() -> None:
    rng = random.Random(1)
    old = rng.randbytes(8 << 20)
    same, _ = _delta(old, old, 16 << 10, 1 << 20)
    assert same is not None and len(same) < 64
    new = bytearray(old)
    new[1000:1000] = b"inserted"  # everything after shifts by 8 bytes
    del new[5_000_000:5_000_100]
    delta, _ = _delta(old, bytes(new), 16 << 10, 1 << 20)
    assert delta is not None and len(delta) < 100_000


@pytest.mark.parametrize("seed", range(6))
def test_segment_deflater_streams_inflate_with_zlib(seed: int) -> None:
    rng = random.Random(seed)
    parts = []
    for _ in range(rng.randrange(0, 6)):
        size = rng.randrange(0, 3 << 20)
        parts.append(rng.randbytes(size) if rng.random() < 0.5 else b"row %d, " % rng.randrange(99) * (size // 8))
    data = b"".join(parts)
    squeezer = SegmentDeflater()
    step = rng.choice([1000, 1 << 20, 3 << 20])
    stream = b"".join(squeezer.compress(data[at : at + step]) for at in range(0, len(data), step)) + squeezer.flush()
    assert zlib.decompress(stream) == data


@pytest.mark.parametrize("maker", ["ours", "zlib-0"])
def test_stored_blocks_read_at_any_offset(maker: str) -> None:
    rng = random.Random(maker)
    data = rng.randbytes(3_500_000)
    if maker == "ours":
        squeezer = SegmentDeflater()
        stream = squeezer.compress(data) + squeezer.flush()
    else:
        squeezer0 = zlib.compressobj(0)
        stream = b"".join(squeezer0.compress(data[at : at + 70_001]) for at in range(0, len(data), 70_001))
        stream += squeezer0.flush()
    with tempfile.NamedTemporaryFile() as handle:
        handle.write(b"x" * 123 + stream)
        handle.flush()
        pack = PackFile(handle.name)
        try:
            blocks = blocks_of(pack, 123, len(data))
            assert blocks is not None
            assert b"".join(blocks.read(0, len(data))) == data
            for _ in range(200):
                at = rng.randrange(0, len(data))
                size = rng.randrange(0, min(len(data) - at, 3 << 20) + 1)
                assert b"".join(blocks.read(at, size)) == data[at : at + size]
            assert blocks_of(pack, 123, len(data) + 1) is None
        finally:
            pack.close()
    compressed = zlib.compress(b"abc" * 100_000)
    with tempfile.NamedTemporaryFile() as handle:
        handle.write(compressed)
        handle.flush()
        pack = PackFile(handle.name)
        try:
            assert blocks_of(pack, 0, 300_000) is None  # not stored blocks: inflated instead
        finally:
            pack.close()


def _old_content(old: bytes, piece: int) -> OldContent:
    return OldContent(iter([old[at : at + piece] for at in range(0, len(old), piece)]), len(old), lambda: None)


def test_chunks_unchanged_in_place_are_compared_with_the_old_bytes_not_hashed(strong_hashes: list[int]) -> None:
    hashed = strong_hashes
    rng = random.Random(7)
    old = rng.randbytes(8 << 20)
    new = bytearray(old)
    new[3_000_000:3_000_100] = rng.randbytes(100)  # one chunk of eight changed, in place
    delta, matcher = _delta(old, bytes(new), 16 << 10, 1 << 20, _old_content(old, 65535))
    assert delta is not None and b"".join(apply_delta(old, delta)) == bytes(new)
    assert len(hashed) <= 64 + 2  # the changed chunk's blocks only (the seven others: a comparison each)
    signature = matcher.signature.finish(hashlib.sha1(new).digest())
    assert signature == _sign(bytes(new), 16 << 10)  # the new signature as if every block were hashed


@pytest.mark.parametrize("seed", range(6))
def test_deltas_made_comparing_with_the_old_bytes_apply_as_git_applies_them(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(6):
        old = rng.randbytes(rng.randrange(1 << 18, 3 << 20))
        new = _edit(rng, old)
        block = rng.choice([1024, 4096])
        piece = rng.choice([4096, 1 << 16, 1 << 20])
        content = _old_content(old, rng.choice([1000, 65535, 1 << 20]))
        delta, matcher = _delta(old, new, block, piece, content)
        if delta is not None:
            assert b"".join(apply_delta(old, delta)) == new
        assert matcher.signature.finish(hashlib.sha1(new).digest()) == _sign(new, matcher.signature.block_size)
