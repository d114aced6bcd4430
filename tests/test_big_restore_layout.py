"""A restore finds a key frame's stored blocks where its writer puts them, and checks every header after.

Reading the 17,000 block headers of a 1 GiB key frame before copying it
cost 0.045 s of a restore. Where the key frame was written as
``deflate.SegmentDeflater`` writes bytes that do not compress (every 1 MiB
segment stored, blocks of 65,535 bytes and the segment's rest, an empty last
block), where each block is follows from the size: only the first header and
the last are read, and the check of the entry's CRC-32 (on its thread, which
reads every byte of it anyway) compares every other header with what it
expected. A pack whose CRC-32s are all right but whose blocks are elsewhere
(another writer's, or one crafted so) fails the restore, and the file that
was there stays as it was; a key frame of mixed blocks (a segment that
compresses) has its headers read first, as before.
"""

from __future__ import annotations

import hashlib
import os
import random
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from test_big_restore import _chain_pack, _text

from snapshotter import Retention, Snapshotter
from snapshotter.engine.gitstore import chainread
from snapshotter.engine.gitstore.indexformat import PackIndex
from snapshotter.engine.gitstore.packread import _entry_header
from snapshotter.errors import StoreError

SIZE = 10 << 20  # over the big-file threshold (8 MiB): ten segments
CHANGE = 64 << 10


def _blob_id(content: bytes) -> bytes:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).digest()


def _versions(ws: Path, snap: Snapshotter, first: bytes, count: int) -> list[tuple[str, bytes]]:
    rng = random.Random(531)
    data = bytearray(first)
    made = []
    for i in range(count):
        if i:
            at = rng.randrange(0, len(data) - CHANGE)
            data[at : at + CHANGE] = rng.randbytes(CHANGE)
        (ws / "db.bin").write_bytes(data)
        made.append((snap.snapshot(f"v{i}").id, bytes(data)))
    return made


def _no_header_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A restore that reads the key frame's headers first fails."""

    def refused(*args: object) -> None:
        raise AssertionError("the key frame's headers were read before the copy")

    monkeypatch.setattr(chainread, "blocks_of", refused)


def _move_a_header(pack: Path, key_frame: bytes, by: int) -> None:
    """Lay the key frame's first segment out otherwise, its content the same: the
    16th block ``by`` bytes shorter, the segment's last block ``by`` longer;
    the entry's CRC-32 in the index, the pack's checksum and the index's made
    again, so that nothing but the layout differs from a healthy pack."""
    data = bytearray(pack.read_bytes())
    _, size, used, _ = _entry_header(bytes(data[12:76]), key_frame)
    block = 12 + used + 2 + 15 * 65540  # the 16th block's header
    payload = data[block + 5 : block + 5 + 65535] + data[block + 65540 + 5 : block + 65540 + 5 + 16]
    assert data[block + 65540 : block + 65545] == struct.pack("<BHH", 0, 16, 16 ^ 0xFFFF)
    short, long = 65535 - by, 16 + by
    data[block : block + 65540 + 5 + 16] = (
        struct.pack("<BHH", 0, short, short ^ 0xFFFF)
        + payload[:short]
        + struct.pack("<BHH", 0, long, long ^ 0xFFFF)
        + payload[short:]
    )
    data[-20:] = hashlib.sha1(data[:-20]).digest()
    index_path = pack.with_suffix(".idx")
    index = bytearray(index_path.read_bytes())
    parsed = PackIndex(bytes(index))
    listed = sorted((offset, sha) for sha, offset, _ in parsed.entries())
    at = next(i for i, (offset, _) in enumerate(listed) if offset == 12)
    end = listed[at + 1][0] if at + 1 < len(listed) else len(data) - 20
    count = parsed.count()
    position = sorted(sha for _, sha in listed).index(key_frame)
    crc_at = 8 + 256 * 4 + 20 * count + 4 * position
    index[crc_at : crc_at + 4] = struct.pack(">I", zlib.crc32(data[12:end]))
    index[-40:-20] = data[-20:]
    index[-20:] = hashlib.sha1(index[:-20]).digest()
    for path, content in ((pack, data), (index_path, index)):
        os.chmod(path, 0o644)
        fresh = path.with_name(path.name + ".new")
        fresh.write_bytes(content)
        os.replace(fresh, path)


def test_a_stored_key_frame_is_restored_without_reading_its_headers_first(
    ws: Path, make: Callable[..., Snapshotter], monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    versions = _versions(ws, snap, random.Random(53).randbytes(SIZE) + b"tail", 4)
    _no_header_reads(monkeypatch)
    for snapshot, content in [*reversed(versions), versions[-1]]:
        snap.restore(snapshot)
        assert (ws / "db.bin").read_bytes() == content


def test_a_key_frame_of_mixed_blocks_has_its_headers_read_and_restores_byte_exact(
    ws: Path, make: Callable[..., Snapshotter], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(54)
    first = rng.randbytes(3 << 20) + _text(rng, 2 << 20) + rng.randbytes(SIZE - (5 << 20) + 77)
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    versions = _versions(ws, snap, first, 3)
    read: list[int] = []
    real = chainread.blocks_of

    def counted(*args: object) -> object:
        read.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(chainread, "blocks_of", counted)
    for snapshot, content in [*reversed(versions), versions[-1]]:
        snap.restore(snapshot)
        assert (ws / "db.bin").read_bytes() == content
    assert read  # its stored blocks are not where an all-stored key frame's would be


def test_a_header_not_where_expected_fails_the_restore_and_leaves_the_file_as_it_was(
    ws: Path, make: Callable[..., Snapshotter], monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    versions = _versions(ws, snap, random.Random(55).randbytes(SIZE), 3)
    key_frame = _blob_id(versions[0][1])
    _move_a_header(_chain_pack(snap), key_frame, 100)
    _no_header_reads(monkeypatch)  # the first header and the last are where expected: no header is read first
    with pytest.raises(StoreError) as raised:
        snap.restore(versions[1][0])
    assert key_frame.hex() in str(raised.value) and "block headers" in str(raised.value)
    assert (ws / "db.bin").read_bytes() == versions[-1][1]  # the newest version, as it was
    assert sorted(p.name for p in ws.iterdir()) == ["db.bin"]
    monkeypatch.undo()
    snap.close()
    again = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    result = again.verify()
    assert result.ok, result.problems  # a healthy pack, only laid out otherwise: read the usual way, it is right
