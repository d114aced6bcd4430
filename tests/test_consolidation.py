"""Consolidation: piles of loose objects and small packs merged cheaply, nothing dropped."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import GIT, beside_a_writer, git, write

from snapshotter import Retention, Snapshotter
from snapshotter.engine.gitstore.objects import STREAM_THRESHOLD
from snapshotter.engine.upkeep.compaction import loose_objects
from snapshotter.engine.upkeep.consolidation import consolidate, packs_to_merge
from snapshotter.facade import maintenance

UNLIMITED = Retention.unlimited()


def test_merge_choice_is_geometric_and_never_takes_the_largest() -> None:
    assert packs_to_merge({}, 10) == []
    assert packs_to_merge({"big": 1000}, 10) == []
    # Already a geometric progression, and the loose objects are too few to roll anything up.
    assert packs_to_merge({"a": 10, "b": 40, "c": 200, "big": 1000}, 1) == []
    # Loose objects as big as the smallest pack take it along, and then the next one.
    assert packs_to_merge({"a": 10, "b": 40, "c": 200, "big": 1000}, 10) == ["a"]
    assert packs_to_merge({"a": 10, "b": 25, "c": 200, "big": 1000}, 10) == ["a", "b"]
    # Twenty snapshots' worth of similar small packs: all merge, the big one stays.
    small = {f"p{i:02}": 30 + i for i in range(20)}
    assert sorted(packs_to_merge({**small, "big": 10_000}, 0)) == sorted(small)
    # Two packs of about the same size below the largest: they merge, and the small ones with them.
    assert packs_to_merge({"a": 5, "b": 900, "c": 1000, "big": 5000}, 0) == ["a", "b", "c"]
    assert packs_to_merge({"a": 5, "b": 900, "big": 1000}, 0) == []  # the largest is never merged


def _contents(snap: Snapshotter) -> dict[bytes, tuple[int, bytes]]:
    """Every object the store holds, read through the store."""
    store = snap._engine_ok().store
    ids = {sha for sha, _, _ in loose_objects(os.path.join(snap.store_path, "objects"))}
    for pack in store.repo.object_store.packs:
        ids.update(bytes.fromhex(e[0].decode()) if len(e[0]) == 40 else bytes(e[0]) for e in pack.index.iterentries())
    return {sha: store.read_raw(sha) for sha in ids}


def _packs(store_path: str) -> list[str]:
    return sorted(n for n in os.listdir(os.path.join(store_path, "objects", "pack")) if n.endswith(".pack"))


def test_consolidation_keeps_every_object_and_every_snapshot(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make(retention=UNLIMITED)
    write(ws, {f"many/f{i}.txt": f"file {i}\n" * 20 for i in range(100)})  # enough new files for a pack
    snap.snapshot("packed")
    ids = []
    for round_ in range(6):
        write(ws, {f"many/f{round_}.txt": f"round {round_}\n", f"new{round_}/a.txt": f"{round_}\n"})
        ids.append(snap.snapshot(f"loose {round_}").id)
        write(ws, {f"more{round_}/g{i}.txt": f"{round_} {i}\n" for i in range(70)})
        ids.append(snap.snapshot(f"packed {round_}").id)
    write(ws, {"big.bin": os.urandom(STREAM_THRESHOLD + 1000)})
    ids.append(snap.snapshot("big").id)
    unreferenced = snap.snapshot("orphan-to-be")
    snap._engine_ok().store.remove_snapshot_ref(unreferenced.sequence, bytes.fromhex(unreferenced.id))
    write(ws, {"late.txt": "late\n"})
    ids.append(snap.snapshot("late").id)
    before = _contents(snap)
    packs_before = _packs(snap.store_path)
    assert any(True for _ in loose_objects(os.path.join(snap.store_path, "objects")))

    result = consolidate(snap._engine_ok().store)

    after = _contents(snap)
    assert after == before  # nothing lost, nothing changed; the orphaned commit is kept too
    assert bytes.fromhex(unreferenced.id) in after
    left_loose = [sha for sha, _, _ in loose_objects(os.path.join(snap.store_path, "objects"))]
    assert all(snap._engine_ok().store.blob_size(sha) > STREAM_THRESHOLD for sha in left_loose)
    chains = [name for name in packs_before if name.startswith("pack-chain-")]
    assert len(chains) == 1 and set(chains) <= set(_packs(snap.store_path))  # the big file's chain: never merged
    assert result.objects_removed == 0 and result.packs_removed >= 1
    assert len(_packs(snap.store_path)) < len(packs_before) + 1
    if GIT is not None:
        git("--git-dir", snap.store_path, "fsck", "--strict", "--no-dangling", "--no-progress")
    again = consolidate(snap._engine_ok().store)  # nothing piled up since: nothing to do
    assert (again.packs_removed, again.objects_kept) == (0, 0) and _contents(snap) == before
    for sid in ids:
        snap.restore(sid)
        assert not snap.diff(sid)
    snap.gc()  # a full gc after a consolidation sees the packs as they are now
    assert len([name for name in _packs(snap.store_path) if name not in chains]) == 1
    assert set(chains) <= set(_packs(snap.store_path))
    snap.restore(ids[0])
    assert not snap.diff(ids[0])


def test_automatic_upkeep_consolidates_instead_of_a_full_gc(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(maintenance, "AUTO_GC_LOOSE", 30)
    full_gcs: list[object] = []
    real_collect = maintenance.compaction.collect
    monkeypatch.setattr(maintenance.compaction, "collect", lambda *a, **k: full_gcs.append(a) or real_collect(*a, **k))
    snap = make(retention=Retention(max_snapshots=4, max_age=None, max_store_bytes=None))
    for i in range(12):
        write(ws, {f"d{i}/f.txt": f"{i}\n", "shared.txt": f"version {i}\n"})
        snap.snapshot(f"s{i}")
    stats = snap.store_stats()
    assert stats.loose_objects <= 30 + 8  # consolidated along the way (one snapshot adds ~6)
    assert stats.packs >= 1 and stats.last_gc is None and not full_gcs
    kept = snap.list(limit=None)
    assert [s.message for s in kept] == [f"s{i}" for i in range(11, 7, -1)]
    for info in kept:
        snap.pin(info.id)  # restoring adds safety snapshots: keep these through the count limit
    for info in kept:
        snap.restore(info.id)
        assert not snap.diff(info.id)


def test_consolidation_beside_a_snapshotting_process_loses_nothing(ws: Path, home: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {f"base{i}.txt": str(i) * 100 for i in range(80)})
    snap = make(retention=UNLIMITED)
    snap.snapshot("base")
    engine = snap._engine_ok()

    def upkeep() -> None:
        with engine.lock:  # as the upkeep runs: under the store lock
            consolidate(engine.store)

    beside_a_writer(ws, home, 20, upkeep, pause=0.02)
    listed = snap.list(limit=None)
    assert len(listed) == 21
    for info in listed:
        snap.restore(info.id)
        assert not snap.diff(info.id)


def test_a_damaged_object_stays_where_it_is_and_the_rest_are_packed(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make(retention=UNLIMITED)
    write(ws, {"a.txt": "a\n", "b.txt": "b\n"})
    snap.snapshot()
    store = snap._engine_ok().store
    objects = os.path.join(snap.store_path, "objects")
    damaged = store.writer.write(b"blob", b"soon damaged\n")
    path = store.writer.loose_path(damaged)
    os.chmod(path, 0o644)
    Path(path).write_bytes(b"not zlib at all")
    others = {sha for sha, _, _ in loose_objects(objects)} - {damaged}
    assert others

    result = consolidate(store)

    assert [sha for sha, _, _ in loose_objects(objects)] == [damaged]  # neither packed nor deleted
    assert result.objects_kept == len(others)
    assert all(store.has_object(sha) for sha in others)
    assert snap.verify(full=True).ok  # every snapshot is whole


def test_a_pack_left_without_its_index_goes_after_an_hour_if_its_objects_are_elsewhere(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """A delete that failed on Windows leaves a pack without its index, every
    object of it in a newer pack: it goes after an hour. One whose objects are
    nowhere else is indexed again instead (tests/test_store_integrity.py); one
    that cannot be read through is left for verify() to report."""
    snap = make(retention=UNLIMITED)
    write(ws, {f"f{i}.txt": f"{i}\n" for i in range(100)})
    snap.snapshot()
    pack_dir = Path(snap.store_path, "objects", "pack")
    (real,) = pack_dir.glob("*.pack")
    old, young = pack_dir / ("pack-" + "1" * 40 + ".pack"), pack_dir / ("pack-" + "2" * 40 + ".pack")
    garbage = pack_dir / ("pack-" + "3" * 40 + ".pack")
    old.write_bytes(real.read_bytes())
    young.write_bytes(real.read_bytes())
    garbage.write_bytes(b"PACK left behind")
    hour_ago = time.time() - 3700
    for path in (old, garbage):
        os.utime(path, (hour_ago, hour_ago))

    result = consolidate(snap._engine_ok().store)

    assert result.temp_files_removed == 1 and not old.exists() and young.exists() and garbage.exists()
    problems = snap.verify().problems
    assert len(problems) == 1 and garbage.name in problems[0] and "cannot be indexed" in problems[0], problems


def test_a_pack_another_instance_consolidated_away_is_passed_over_without_a_warning(
    ws: Path,
    home: Path,
    make,
    caplog: pytest.LogCaptureFixture,  # type: ignore[no-untyped-def]
) -> None:
    """Two Snapshotters of one store (a hook beside a watcher, or one process
    holding two): the second listed the packs, the first consolidates them,
    and the second then reads every snapshot. A pack gone since its listing
    is merged elsewhere, not damaged: nothing is logged (each one was, as
    "cannot be indexed: it cannot be opened"), and no pack is set aside."""
    first = make(retention=UNLIMITED)
    ids = []
    for round_ in range(4):
        write(ws, {f"r{round_}/f{i}.txt": f"{round_} {i}\n" for i in range(60)})  # a pack each
        ids.append(first.snapshot(f"packed {round_}").id)
    second = Snapshotter(ws, home=home, retention=UNLIMITED)
    packs = second._engine_ok().store.packs
    listed = packs.bases(again=True)
    assert len(listed) >= 4
    with first._engine_ok().lock:
        consolidate(first._engine_ok().store)
    assert not any(os.path.exists(base + ".pack") for base in listed[:2])  # merged away
    with caplog.at_level("WARNING", logger="snapshotter"):
        for older, newer in zip(ids, ids[1:]):
            assert len(second.diff(older, newer)) == 60
    assert not [r.getMessage() for r in caplog.records if "pack" in r.getMessage()]
    assert not packs._broken
    second.close()
