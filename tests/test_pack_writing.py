"""Writing packs: our index writer and both compressors must produce what git and dulwich read."""

from __future__ import annotations

import io
import random
import zlib

import pytest
from dulwich.pack import write_pack_index_v2

from snapshotter import deflate
from snapshotter.packs import index_v2


@pytest.mark.parametrize(("count", "spacing"), [(0, 100), (1, 100), (700, 3000), (60, 1 << 30)])
def test_index_equals_dulwichs_byte_for_byte(count: int, spacing: int) -> None:
    """Same bytes as dulwich's v2 writer, 64-bit offsets (past 2 GiB) included."""
    rng = random.Random(count)
    ids = [rng.randbytes(20) for _ in range(count)]
    offsets = [12 + i * spacing + rng.randrange(spacing // 2) for i in range(count)]
    crcs = [rng.getrandbits(32) for _ in range(count)]
    checksum = rng.randbytes(20)
    expected = io.BytesIO()
    write_pack_index_v2(expected, sorted(zip(ids, offsets, crcs)), checksum)
    assert index_v2(ids, offsets, crcs, checksum) == expected.getvalue()
    if spacing > 1 << 30:
        assert any(offset >= 1 << 31 for offset in offsets)  # the 8-byte table is exercised


@pytest.mark.parametrize("backend", ["isal", "zlib"])
def test_both_compressors_write_streams_zlib_reads(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if backend == "zlib":
        monkeypatch.setattr(deflate, "_isal", None)
    elif deflate.backend() != "isal":
        pytest.skip("the isal package (the fast extra) is not installed")
    assert deflate.backend() == backend
    rng = random.Random(5)
    samples = [b"", b"x", b"line\n" * 800, rng.randbytes(4096), rng.randbytes(4097), b"ab" * 100_000]
    for data in samples:
        for level in (deflate.SNAPSHOT_LEVEL, 6):
            assert zlib.decompress(deflate.deflate(data, level)) == data
        squeezer = deflate.compressor()
        stream = b"".join(squeezer.compress(data[i : i + 7000]) for i in range(0, len(data), 7000)) + squeezer.flush()
        assert zlib.decompress(stream) == data
