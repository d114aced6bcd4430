"""Big files kept as deltas of their last version (issue #53).

A changed big file costs what changed: its new version is a git delta of the
last, appended to the file's chain pack. git is the oracle: ``git cat-file -p``
prints every version byte for byte and ``git fsck --strict`` is clean, after
snapshots, restores, a compaction, and retention dropping the chain's first
version. The files are just over the big-file threshold (8 MiB), random bytes
(so a full copy costs its whole size: no compression hides it).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from conftest import GIT, git, git_env, loosen, needs_git

from snapshotter import Retention, Snapshotter
from snapshotter.engine.gitstore import bigfacts, chainpack, checkedindexes
from snapshotter.engine.upkeep.compaction import disk_usage

SIZE = 10 << 20
CHANGE = 64 << 10


def _store_bytes(snap: Snapshotter) -> int:
    return disk_usage(snap._engine_ok().store)


def _chain_packs(snap: Snapshotter) -> list[str]:
    pack_dir = os.path.join(snap.store_path, "objects", "pack")
    return sorted(name for name in os.listdir(pack_dir) if name.startswith(bigfacts.PREFIX) and name.endswith(".pack"))


def _overwrite(data: bytearray, rng: random.Random, count: int = 3) -> None:
    for _ in range(count):
        at = rng.randrange(0, len(data) - CHANGE)
        data[at : at + CHANGE] = rng.randbytes(CHANGE)


def _git_blob(snap: Snapshotter, tree: str, path: str, tmp: Path) -> bytes:
    env = git_env(tmp)
    blob = git("--git-dir", snap.store_path, "rev-parse", f"{tree}:{path}", env=env).strip()
    assert GIT is not None
    import subprocess

    done = subprocess.run([GIT, "--git-dir", snap.store_path, "cat-file", "-p", blob], capture_output=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _fsck(snap: Snapshotter, tmp: Path) -> None:
    git("--git-dir", snap.store_path, "fsck", "--strict", "--no-dangling", "--no-progress", env=git_env(tmp))


@needs_git
def test_a_changed_big_file_costs_what_changed(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(53)
    data = bytearray(rng.randbytes(SIZE))
    (ws / "db.bin").write_bytes(data)
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    versions = [(snap.snapshot("v0"), bytes(data))]
    for i in range(1, 4):
        _overwrite(data, rng)
        (ws / "db.bin").write_bytes(data)
        before = _store_bytes(snap)
        info = snap.snapshot(f"v{i}")
        grew = _store_bytes(snap) - before
        assert grew < 1 << 20, f"snapshot {i} added {grew:,} bytes for 3 changes of 64 KiB"  # a full copy adds 10 MiB
        versions.append((info, bytes(data)))
    assert len(_chain_packs(snap)) == 1
    for info, content in versions:
        assert _git_blob(snap, info.tree_id, "db.bin", tmp_path) == content
    _fsck(snap, tmp_path)
    for info, content in reversed(versions):
        snap.restore(info.id)
        assert (ws / "db.bin").read_bytes() == content


@needs_git
def test_insertions_deletions_appends_and_truncations_round_trip(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(7)
    data = bytearray(rng.randbytes(SIZE))
    edits = [
        lambda d: d.__setitem__(slice(5000, 5000), rng.randbytes(777)),  # an insertion: the rest shifts
        lambda d: d.__delitem__(slice(3 << 20, (3 << 20) + 100_003)),  # a deletion
        lambda d: d.extend(rng.randbytes(300_000)),  # an append
        lambda d: d.__delitem__(slice(len(d) - 1_234_567, None)),  # a truncation
        lambda d: d.__setitem__(slice(0, 0), d[4 << 20 : (4 << 20) + 200_000]),  # content copied to the front
    ]
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    (ws / "data.bin").write_bytes(data)
    versions = [(snap.snapshot("v0"), bytes(data))]
    for i, edit in enumerate(edits, 1):
        edit(data)
        (ws / "data.bin").write_bytes(data)
        before = _store_bytes(snap)
        info = snap.snapshot(f"v{i}")
        assert _store_bytes(snap) - before < 2 << 20, f"edit {i} cost a full copy"
        versions.append((info, bytes(data)))
    for info, content in versions:
        assert _git_blob(snap, info.tree_id, "data.bin", tmp_path) == content
    _fsck(snap, tmp_path)
    for info, content in versions:
        snap.restore(info.id)
        assert (ws / "data.bin").read_bytes() == content
    assert snap.verify(full=True).ok


@needs_git
def test_compaction_keeps_the_chain_as_it_is(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(11)
    data = bytearray(rng.randbytes(SIZE))
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    versions = []
    for i in range(4):
        _overwrite(data, rng)
        (ws / "db.bin").write_bytes(data)
        (ws / f"small{i}.txt").write_text(f"small {i}\n")
        versions.append((snap.snapshot(f"v{i}"), bytes(data)))
    chains = _chain_packs(snap)
    before = _store_bytes(snap)
    snap.gc()
    assert _chain_packs(snap) == chains  # not rewritten, not inflated into full copies
    assert _store_bytes(snap) <= before + (64 << 10)
    objects = os.path.join(snap.store_path, "objects")
    assert not [name for name in os.listdir(objects) if len(name) == 2 and os.listdir(os.path.join(objects, name))]
    for info, content in versions:
        assert _git_blob(snap, info.tree_id, "db.bin", tmp_path) == content
    _fsck(snap, tmp_path)
    for info, content in versions:
        snap.restore(info.id)
        assert (ws / "db.bin").read_bytes() == content


@needs_git
def test_dropping_the_first_versions_snapshot_keeps_every_later_version(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(13)
    data = bytearray(rng.randbytes(SIZE))
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    versions = []
    for i in range(4):
        if i:
            _overwrite(data, rng)
        (ws / "db.bin").write_bytes(data)
        versions.append((snap.snapshot(f"v{i}"), bytes(data)))
    snap.close()
    pruner = make(max_new_file_size=1 << 30, retention=Retention(max_snapshots=2, max_age=None, max_undo=0))
    dropped = pruner.prune()
    assert {info.id for info in dropped.pruned} >= {versions[0][0].id, versions[1][0].id}
    pruner.gc()
    kept = {info.id for info in pruner.list(limit=None)}
    for info, content in versions:
        if info.id in kept:
            assert _git_blob(pruner, info.tree_id, "db.bin", tmp_path) == content
            pruner.restore(info.id)
            assert (ws / "db.bin").read_bytes() == content
    _fsck(pruner, tmp_path)
    assert pruner.verify(full=True).ok


def test_consolidation_never_merges_a_chain(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    from snapshotter.engine.upkeep.consolidation import consolidate

    rng = random.Random(17)
    data = bytearray(rng.randbytes(SIZE))
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    (ws / "db.bin").write_bytes(data)
    snap.snapshot("v0")
    for i in range(70):  # many small files: a pack each snapshot
        (ws / f"f{i}.txt").write_text(f"{i}\n" * 10)
    snap.snapshot("many")
    _overwrite(data, rng)
    (ws / "db.bin").write_bytes(data)
    snap.snapshot("v1")
    chains = _chain_packs(snap)
    consolidate(snap._engine_ok().store)
    assert _chain_packs(snap) == chains
    (ws / "db.bin").write_bytes(b"")
    snap.restore(snap.list()[0].id)
    assert (ws / "db.bin").read_bytes() == data


@pytest.mark.parametrize("depth", [3])
def test_a_chain_is_bounded_and_a_full_copy_starts_the_next(  # type: ignore[no-untyped-def]
    ws: Path, make, monkeypatch: pytest.MonkeyPatch, depth: int
) -> None:
    monkeypatch.setattr(chainpack, "MAX_DEPTH", depth)
    rng = random.Random(19)
    data = bytearray(rng.randbytes(SIZE))
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    versions = []
    for i in range(depth + 3):
        if i:
            _overwrite(data, rng, 1)
        (ws / "db.bin").write_bytes(data)
        versions.append((snap.snapshot(f"v{i}"), bytes(data)))
    assert len(_chain_packs(snap)) == 2  # the key frame and ``depth`` deltas, then a full copy and the rest
    for info, content in versions:
        snap.restore(info.id)
        assert (ws / "db.bin").read_bytes() == content


def test_a_new_sparse_file_is_one_skipped_file_unless_the_caller_asks(ws: Path, tmp_path: Path) -> None:
    with open(ws / "disk.img", "wb") as handle:
        handle.write(b"boot sector")
        handle.truncate(64 << 20)  # 64 MiB, nearly all holes
    if os.stat(ws / "disk.img").st_blocks * 512 >= 1 << 20:
        pytest.skip("this filesystem does not keep sparse files sparse")
    (ws / "a.txt").write_text("a\n")
    with Snapshotter(ws, home=tmp_path / "home", max_new_file_size=1 << 40) as snap:
        info = snap.snapshot()
        assert [(s.path, s.reason.value) for s in info.skipped] == [("disk.img", "too-large")]  # not read at all
    with Snapshotter(ws, home=tmp_path / "home2", max_new_file_size=1 << 40, sparse_files=True) as snap:
        info = snap.snapshot()
        assert info.skipped == ()
        expected = (ws / "disk.img").read_bytes()
        (ws / "disk.img").unlink()
        snap.restore(info.id)
        assert (ws / "disk.img").read_bytes() == expected


@pytest.mark.parametrize("keeps_changing", [False, True])
def test_a_big_file_rewritten_while_it_is_read_is_one_version_or_skipped(  # type: ignore[no-untyped-def]
    ws: Path, tmp_path: Path, make, monkeypatch: pytest.MonkeyPatch, keeps_changing: bool
) -> None:
    """The file is rewritten in place (its size kept, or grown) between the first
    fstat and the read, as a delta of its last version is being made: read again
    and recorded as the version it then is, or skipped as changing; never a
    delta that makes other bytes than its id's."""
    if not os.path.exists("/proc/self/fd"):
        pytest.skip("needs /proc to recognise the file's descriptor")
    rng = random.Random(23)
    target = ws / "db.bin"
    target.write_bytes(rng.randbytes(SIZE))
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    snap.snapshot("v0")
    data = bytearray(target.read_bytes())
    _overwrite(data, rng)
    target.write_bytes(data)
    real_fstat = os.fstat
    changes: list[int] = []

    def fstat(fd: int) -> os.stat_result:
        st = real_fstat(fd)
        if os.readlink(f"/proc/self/fd/{fd}") == str(target) and (keeps_changing or not changes) and len(changes) < 20:
            changes.append(fd)
            with open(target, "r+b") as handle:
                handle.seek(rng.randrange(0, SIZE - 4096))
                handle.write(rng.randbytes(4096))
                if len(changes) % 2:
                    handle.seek(0, os.SEEK_END)
                    handle.write(b"grown")
        return st

    monkeypatch.setattr(os, "fstat", fstat)
    info = snap.snapshot("v1")
    monkeypatch.undo()
    assert changes
    if keeps_changing:
        assert [(s.path, s.reason.value) for s in info.skipped] == [("db.bin", "changed-while-reading")]
    else:
        assert info.skipped == ()
        final = target.read_bytes()
        target.write_bytes(b"")
        snap.restore(info.id)
        assert target.read_bytes() == final
    assert snap.verify(full=True).ok
    if GIT is not None:
        _fsck(snap, tmp_path)


@needs_git
def test_an_older_version_restored_then_changed_is_a_delta_of_it(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """An undo brings back an older version and the agent changes it again: the
    new version is a delta of the one restored, in the same chain pack (a
    branch off its middle), and every version reads back."""
    rng = random.Random(29)
    data = bytearray(rng.randbytes(SIZE))
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    versions = []
    for i in range(4):
        if i:
            _overwrite(data, rng)
        (ws / "db.bin").write_bytes(data)
        versions.append((snap.snapshot(f"v{i}"), bytes(data)))
    snap.restore(versions[1][0].id)
    data = bytearray(versions[1][1])
    _overwrite(data, rng)
    (ws / "db.bin").write_bytes(data)
    before = _store_bytes(snap)
    versions.append((snap.snapshot("branch"), bytes(data)))
    assert _store_bytes(snap) - before < 1 << 20
    assert len(_chain_packs(snap)) == 1
    for info, content in versions:
        assert _git_blob(snap, info.tree_id, "db.bin", tmp_path) == content
    _fsck(snap, tmp_path)
    for info, content in versions:
        snap.restore(info.id)
        assert (ws / "db.bin").read_bytes() == content


def test_a_store_opened_afresh_reads_and_appends_to_a_chain_its_checked_index_names(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """A new process trusts a pack index it finds in ``checked-pack-indexes`` as the very file it is (no hash
    of it); a chain pack's index is a new file at each append. Each version here is taken by a store opened
    afresh: it finds the chain through the index the last one checked, appends, and one more store opened
    afresh reads every version back, with the chain's current index among the checked ones and no name of a
    pack gone (the file is a cache: it must never vouch for an index that was replaced)."""
    rng = random.Random(31)
    data = bytearray(rng.randbytes(SIZE))
    versions = []
    for i in range(4):
        if i:
            _overwrite(data, rng)
        (ws / "db.bin").write_bytes(data)
        snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
        versions.append((snap.snapshot(f"v{i}"), bytes(data)))
        snap.close()
    assert len(_chain_packs(snap)) == 1  # every version after the first appended to the one chain
    fresh = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    for info, content in reversed(versions):
        fresh.restore(info.id)
        assert (ws / "db.bin").read_bytes() == content
    pack_dir = Path(fresh.store_path) / "objects" / "pack"
    checked = (Path(fresh.store_path) / "snapshotter" / checkedindexes.FILE_NAME).read_text().splitlines()
    names = [line.split(" ")[0] for line in checked]
    assert _chain_packs(fresh)[0][: -len(".pack")] + ".idx" in names
    assert [name for name in names if not (pack_dir / name).exists()] == []


@needs_git
def test_new_big_files_alike_in_one_scan_are_stored_once(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Big files are hashed on threads, inside the scan's batch; copies of one new big file make the same
    chain pack (its name is its checksum) at the same moment: each must still be put in place (the
    index's temporary name was shared: one thread's rename took the file from under the other's, and
    the snapshot failed), and the store holds the content once."""
    content = random.Random(5).randbytes(SIZE)
    for i in range(80):  # with as many small files as before every scan had a batch
        (ws / f"small{i}.txt").write_text(f"{i}\n")
    names = [f"copy{i}.bin" for i in range(4)]
    for name in names:
        (ws / name).write_bytes(content)
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    info = snap.snapshot("copies")
    assert len(_chain_packs(snap)) == 1
    assert _store_bytes(snap) < SIZE + (SIZE >> 1), "the same big file was stored twice"
    for name in names:
        assert _git_blob(snap, info.tree_id, name, tmp_path) == content
    _fsck(snap, tmp_path)


@needs_git
def test_loosening_a_store_leaves_its_chain_packs(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """The tests' ``loosen`` (every packed object made loose) leaves a chain pack as it is: the big
    file's versions stay there as deltas, and every snapshot still restores."""
    rng = random.Random(7)
    data = bytearray(rng.randbytes(SIZE))
    (ws / "db.bin").write_bytes(data)
    (ws / "small.txt").write_text("v0\n")
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    versions = [(snap.snapshot("v0"), bytes(data))]
    _overwrite(data, rng)
    (ws / "db.bin").write_bytes(data)
    (ws / "small.txt").write_text("v1\n")
    versions.append((snap.snapshot("v1"), bytes(data)))
    chains = _chain_packs(snap)
    loosen(snap)
    pack_dir = os.path.join(snap.store_path, "objects", "pack")
    assert sorted(n for n in os.listdir(pack_dir) if n.endswith(".pack")) == chains
    _fsck(snap, tmp_path)
    for info, content in versions:
        snap.restore(info.id)
        assert (ws / "db.bin").read_bytes() == content


@needs_git
def test_chunks_unchanged_in_place_are_compared_with_the_stored_version_not_hashed(  # type: ignore[no-untyped-def]
    ws: Path, tmp_path: Path, make, strong_hashes: list[int]
) -> None:
    hashed = strong_hashes
    rng = random.Random(77)
    data = bytearray(rng.randbytes(SIZE))  # random: the key frame is kept in stored blocks
    (ws / "db.bin").write_bytes(data)
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    versions = [(snap.snapshot("v0"), bytes(data))]
    for i in (1, 2):
        at = rng.randrange(0, SIZE - 100)
        data[at : at + 100] = rng.randbytes(100)  # one 1 MiB chunk of ten changed, in place
        (ws / "db.bin").write_bytes(data)
        hashed.clear()
        versions.append((snap.snapshot(f"v{i}"), bytes(data)))
        assert len(hashed) <= 2 * 64, len(hashed)  # the changed chunk's 64 blocks (all 640 before)
    assert len(_chain_packs(snap)) == 1
    for info, content in versions:
        assert _git_blob(snap, info.tree_id, "db.bin", tmp_path) == content
    _fsck(snap, tmp_path)
    for info, content in reversed(versions):
        snap.restore(info.id)
        assert (ws / "db.bin").read_bytes() == content
