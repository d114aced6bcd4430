"""Reading packed objects: the direct path must agree with dulwich for every object."""

from __future__ import annotations

from pathlib import Path

import pytest
from dulwich.objects import ObjectID

from snapshotter import Snapshotter


def _all_packed(snap: Snapshotter) -> list[bytes]:
    store = snap._engine.store  # type: ignore[union-attr]
    out: list[bytes] = []
    for pack in store.repo.object_store.packs:
        for entry in pack.index.iterentries():  # (id, offset, crc32); the id raw or hex by dulwich version
            sha = entry[0]
            out.append(bytes.fromhex(sha.decode()) if len(sha) == 40 else bytes(sha))
    return out


def test_direct_reads_equal_dulwich_before_and_after_gc(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(120):  # enough new files for the snapshot to be written as a pack
        (ws / f"f{i}.txt").write_text("".join(f"line {j} of file {i}\n" for j in range(50)))
    with Snapshotter(ws, home=tmp_path / "home") as snap:
        snap.snapshot("first")
        for i in range(0, 120, 2):  # second versions: gc stores the older ones as deltas
            (ws / f"f{i}.txt").write_text("".join(f"line {j} of file {i}\n" for j in range(51)))
        snap.snapshot("second")
        store = snap._engine.store  # type: ignore[union-attr]
        for phase in ("packed", "after gc"):
            ids = _all_packed(snap)
            assert ids
            whole = deltas = 0
            for sha in ids:
                found = store._read_packed(sha)
                expected = store.repo.object_store.get_raw(ObjectID(sha.hex().encode()))
                if found is None:
                    deltas += 1
                else:
                    whole += 1
                    assert found == expected, (phase, sha.hex())
                assert store.read_raw(sha) == expected
            assert whole > 0
            if phase == "after gc":
                assert deltas > 0, "gc wrote no deltas: the fallback path went untested"
            snap.gc()
        for info in snap.list():
            snap.restore(info.id)
            assert not snap.diff(info.id)  # the workspace now equals it


def test_pack_index_offsets_equal_dulwich(tmp_path: Path) -> None:
    from dulwich.objects import RawObjectID

    from snapshotter.packread import PackIndex

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

    from snapshotter.packread import PackIndex

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

    from snapshotter.objects import parse_tree, serialize_tree

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
