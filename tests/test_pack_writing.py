"""Writing packs: our index writer and both compressors must produce what git and dulwich read."""

from __future__ import annotations

import hashlib
import io
import random
import zlib
from pathlib import Path

import pytest
from dulwich.pack import write_pack_index_v2

from snapshotter.engine.gitstore import deflate
from snapshotter.engine.gitstore.packs import index_v2


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


def test_many_changed_folders_go_to_one_pack_even_with_nothing_to_hash(tmp_path: Path) -> None:
    """Deleting a file in each of 100 folders hashes nothing but makes 100+ new
    trees: one pack (one fsync), not a loose object (and an fsync) each."""
    from snapshotter import Snapshotter
    from snapshotter.engine.upkeep.compaction import loose_objects

    ws = tmp_path / "ws"
    for i in range(100):
        (ws / f"d{i}").mkdir(parents=True)
        (ws / f"d{i}" / "keep.txt").write_text(f"{i}\n")
        (ws / f"d{i}" / "drop.txt").write_text(f"drop {i}\n")
    with Snapshotter(ws, home=tmp_path / "home") as snap:
        snap.snapshot("all")
        objects = Path(snap.store_path, "objects")
        packs_before = set((objects / "pack").glob("*.pack"))
        loose_before = {sha for sha, _, _ in loose_objects(str(objects))}
        for i in range(100):
            (ws / f"d{i}" / "drop.txt").unlink()
        info = snap.snapshot("dropped")
        assert snap.last_scan.files_hashed == 0
        new_loose = {sha for sha, _, _ in loose_objects(str(objects))} - loose_before
        assert new_loose == {bytes.fromhex(info.id)}  # only the commit is loose; the 101 trees are packed
        assert len(set((objects / "pack").glob("*.pack")) - packs_before) == 1
        snap.restore(snap.list()[1].id)
        assert all((ws / f"d{i}" / "drop.txt").exists() for i in range(100))


@pytest.mark.parametrize("count", [1, 300, 20_000])
def test_a_built_packs_streamed_index_equals_dulwichs(tmp_path: Path, count: int) -> None:
    """The index a batch writes table by table (its ids in several pieces past
    16,384 objects) is dulwich's, byte for byte, for the pack it sealed."""
    from snapshotter.engine.gitstore.packindex import read_through
    from snapshotter.engine.gitstore.packs import PackBuilder

    builder = PackBuilder(str(tmp_path / "pack"))
    for n in range(count):
        content = b"object %d\n" % n
        builder.add(b"blob", hashlib.sha1(b"blob %d\0" % len(content) + content).digest(), content)
    base = builder.finish()
    assert base is not None
    contents = read_through(base + ".pack")
    assert len(contents.ids) == count
    expected = io.BytesIO()
    write_pack_index_v2(expected, sorted(zip(contents.ids, contents.offsets, contents.crcs)), contents.checksum)
    assert Path(base + ".idx").read_bytes() == expected.getvalue()


def test_a_pack_of_ref_delta_chains_as_git_sends_one_reads_through(tmp_path: Path) -> None:
    """git pack-objects without ``--delta-base-offset`` (upload-pack to a client
    without ofs-delta) writes chains of REF_DELTAs: each version a delta of one
    that is itself a delta. Every object is found, with git's ids."""
    import subprocess

    from conftest import GIT

    from snapshotter.engine.gitstore.packindex import read_through

    if GIT is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "r.git"
    subprocess.run([GIT, "init", "-q", "--bare", str(repo)], check=True)
    data = bytearray(random.Random(7).randbytes(200_000))
    ids = []
    for i in range(5):
        data[i * 1000 : i * 1000 + 50] = bytes(50)
        done = subprocess.run(
            [GIT, "--git-dir", str(repo), "hash-object", "-w", "--stdin"],
            input=bytes(data),
            capture_output=True,
            check=True,
        )
        ids.append(done.stdout.strip())
    base = tmp_path / "out"
    subprocess.run(
        [GIT, "--git-dir", str(repo), "pack-objects", "-q", "--depth=50", str(base)],
        input=b"\n".join(ids) + b"\n",
        check=True,
        capture_output=True,
    )
    (pack,) = tmp_path.glob("out-*.pack")
    verify = subprocess.run([GIT, "verify-pack", "-v", str(pack)], capture_output=True, check=True, text=True).stdout
    assert "chain length = 2" in verify  # deltas of deltas (REF_DELTA: no --delta-base-offset)
    contents = read_through(str(pack))
    assert sorted(sha.hex().encode() for sha in contents.ids) == sorted(ids)
