"""Reading packed objects: the direct path must agree with dulwich for every object."""

from __future__ import annotations

from pathlib import Path

import pytest
from dulwich.objects import ObjectID

from snapshotter import Snapshotter
from snapshotter.engine.gitstore.inflate import MAX_WHOLE


def _all_packed(snap: Snapshotter) -> list[bytes]:
    store = snap._engine.store  # type: ignore[union-attr]
    out: list[bytes] = []
    for pack in store.repo.object_store.packs:
        for entry in pack.index.iterentries():  # (id, offset, crc32); the id raw or hex by dulwich version
            sha = entry[0]
            out.append(bytes.fromhex(sha.decode()) if len(sha) == 40 else bytes(sha))
    return out


def _kind_at(store: object, sha: bytes) -> int:
    """The pack entry type of ``sha`` (6 for an offset delta)."""
    from snapshotter.engine.gitstore.packread import PackFile, PackIndex, _inflate_at

    for pack in store.repo.object_store.packs:  # type: ignore[attr-defined]
        offset = PackIndex.read(pack._basename + ".idx").offset(sha)
        if offset is not None:
            handle = PackFile(pack._basename + ".pack")
            try:
                kind, _, distance = _inflate_at(handle, offset, sha)
            finally:
                handle.close()
            return 6 if distance is not None else kind
    raise KeyError(sha)


def test_direct_reads_equal_dulwich_before_and_after_gc(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(120):  # enough new files for the snapshot to be written as a pack
        (ws / f"f{i}.txt").write_text("".join(f"line {j} of file {i}\n" for j in range(50)))
    with Snapshotter(ws, home=tmp_path / "home") as snap:
        snap.snapshot("first")
        for version in range(1, 6):  # newer versions: gc stores the older ones as chains of deltas
            for i in range(0, 120, 2):
                (ws / f"f{i}.txt").write_text("".join(f"line {j} of file {i}\n" for j in range(50 + version)))
            snap.snapshot(f"version {version}")
        store = snap._engine.store  # type: ignore[union-attr]
        for phase in ("packed", "after gc"):
            ids = _all_packed(snap)
            assert ids
            kinds = {sha: _kind_at(store, sha) for sha in ids}
            store.release_packs()  # no delta cached from an earlier phase
            for sha in ids:
                expected = store.repo.object_store.get_raw(ObjectID(sha.hex().encode()))
                found = store.packs.read(sha, True, MAX_WHOLE, store.read_raw)
                assert found is not None and found[:2] == expected, (phase, sha.hex())
                assert store.read_raw(sha) == expected
            deltas = sum(1 for kind in kinds.values() if kind == 6)
            if phase == "after gc":
                assert deltas > 100, "gc wrote few deltas: the delta path went untested"
                store.release_packs()  # again, newest versions last: each chain resolved from its base
                for sha in sorted(ids, key=lambda s: kinds[s], reverse=True):
                    assert store.read_raw(sha) == store.repo.object_store.get_raw(ObjectID(sha.hex().encode()))
            else:
                assert deltas == 0  # snapshots write whole objects
            snap.gc()
        for info in snap.list():
            snap.restore(info.id)
            assert not snap.diff(info.id)  # the workspace now equals it


def test_damaged_delta_is_a_store_error(tmp_path: Path) -> None:
    from snapshotter import StoreError
    from snapshotter.engine.gitstore.packread import PackIndex

    ws = tmp_path / "ws"
    ws.mkdir()
    body = "".join(f"line {j}\n" for j in range(400))
    (ws / "a.txt").write_text(body)
    with Snapshotter(ws, home=tmp_path / "home") as snap:
        old = snap.snapshot("old")
        (ws / "a.txt").write_text(body + "one more\n")
        snap.snapshot("new")
        snap.gc()
        store = snap._engine.store  # type: ignore[union-attr]
        blob = next(c.old_id for c in snap.diff(old.id) if c.path == "a.txt")
        assert blob is not None and _kind_at(store, bytes.fromhex(blob)) == 6
        (pack,) = store.repo.object_store.packs
        offset = PackIndex.read(pack._basename + ".idx").offset(bytes.fromhex(blob))
        store.release_packs()
        with open(pack._basename + ".pack", "r+b") as handle:  # the delta's zlib stream, past its headers
            handle.seek(offset + 6)
            byte = handle.read(1)
            handle.seek(offset + 6)
            handle.write(bytes([byte[0] ^ 0xFF]))
        (ws / "a.txt").write_text("changed\n")
        with pytest.raises(StoreError):
            snap.restore(old.id)
        assert (ws / "a.txt").read_text() == "changed\n"  # nothing was written


def test_pack_index_offsets_equal_dulwich(tmp_path: Path) -> None:
    from dulwich.objects import RawObjectID

    from snapshotter.engine.gitstore.packread import PackIndex

    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(300):
        (ws / f"f{i}.txt").write_text(f"{i}\n")
    with Snapshotter(ws, home=tmp_path / "home") as snap:
        snap.snapshot()
        store = snap._engine.store  # type: ignore[union-attr]
        packs = list(store.repo.object_store.packs)
        assert packs
        for pack in packs:
            ours = PackIndex.read(pack._basename + ".idx")
            for entry in pack.index.iterentries():
                sha = bytes.fromhex(entry[0].decode()) if len(entry[0]) == 40 else bytes(entry[0])
                assert ours.offset(sha) == pack.index.object_offset(RawObjectID(sha)) == entry[1]
            assert ours.offset(b"\0" * 20) is None and ours.offset(b"\xff" * 20) is None


def test_pack_index_reads_64_bit_offsets() -> None:
    import struct

    from snapshotter.engine.gitstore.packread import PackIndex

    ids = [bytes([1]) * 20, bytes([2]) * 20]
    fanout = b"".join(struct.pack(">I", sum(1 for i in ids if i[0] <= b)) for b in range(256))
    offsets = struct.pack(">II", 12, 0x80000000)  # the second one is entry 0 of the 64-bit table
    data = b"\377tOc\0\0\0\2" + fanout + b"".join(ids) + b"\0" * 8 + offsets + struct.pack(">Q", 5 << 32) + b"\0" * 40
    index = PackIndex(data)
    assert index.offset(ids[0]) == 12
    assert index.offset(ids[1]) == 5 << 32
    assert index.offset(bytes([3]) * 20) is None


def test_tree_parsing_agrees_with_dulwich_and_refuses_malformed_trees() -> None:
    from dulwich.objects import Tree

    from snapshotter.engine.gitstore.objects import parse_tree, serialize_tree

    entries = [(b"a b.txt", 0o100644, b"\x01" * 20), (b"run", 0o100755, b"\x00" * 20), (b"sub", 0o40000, b" " * 20)]
    entries.append((b"link", 0o120000, b"\0 \0 \0 \0 \0 \0 \0 \0 \0 \0 "))  # id bytes that look like separators
    content = serialize_tree(entries)
    tree = Tree.from_string(content)
    assert [(name, mode, bytes.fromhex(sha.decode())) for name, mode, sha in tree.iteritems()] == parse_tree(content)
    assert sorted(parse_tree(content)) == sorted(entries)
    assert parse_tree(b"") == []
    assert parse_tree(b"100644 \0" + b"\x02" * 20) == [
        (b"", 0o100644, b"\x02" * 20)
    ]  # an empty name: restore refuses it
    for bad in (
        content[:-1],
        content + b"x",
        b"garbage" + content,
        content[:30] + b"\xff" + content[30:],
        b"10064x a\0" + b"\1" * 20,
    ):
        with pytest.raises(ValueError):
            parse_tree(bad)


@pytest.mark.parametrize("fast", [True, False])
def test_inflating_whole_gives_the_content_or_leaves_it_to_streams(fast: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ISA-L or zlib alike: a stream that ends within the bytes given and
    inflates to the declared size comes back whole; a short, overlong, cut or
    damaged one comes back as None (a Stream then reads on, or says what is wrong)."""
    import zlib

    from snapshotter.engine.gitstore import inflate

    if fast and inflate._isal is None:
        pytest.skip("the fast extra (isal) is not installed")
    if not fast:
        monkeypatch.setattr(inflate, "_isal", None)
    content = b"def value(self):\n    return data\n" * 40
    packed = zlib.compress(content, 1)
    assert inflate.inflate_whole(packed + b"next entry", len(content)) == content
    assert inflate.inflate_whole(packed, len(content) - 1) is None  # longer than declared: never past size + 1
    assert inflate.inflate_whole(packed, len(content) + 1) is None  # shorter than declared
    assert inflate.inflate_whole(packed[: len(packed) // 2], len(content)) is None  # cut: read on
    damaged = packed[:-4] + bytes(4)  # a wrong checksum
    if fast:
        assert inflate.inflate_whole(damaged, len(content)) is None
    else:
        with pytest.raises(zlib.error):
            inflate.inflate_whole(damaged, len(content))
