"""Retention, pins, compaction, store stats and the safety gates."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import GIT, beside_a_writer, git, git_env, read_tree, write

from snapshotter import (
    InvalidInput,
    Retention,
    Snapshotter,
    UnsafeWorkspace,
    WorkspaceTooLarge,
)
from snapshotter.engine.upkeep.compaction import loose_objects

UNLIMITED = Retention.unlimited()


def _take(snap: Snapshotter, ws: Path, n: int, start: int = 0) -> list[str]:
    ids = []
    for i in range(start, start + n):
        write(ws, {"f.txt": f"version {i}\n", f"unique{i}.bin": os.urandom(2000)})
        ids.append(snap.snapshot(f"s{i}").id)
    return ids


def test_count_limit_keeps_exactly_the_newest(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make(retention=Retention(max_snapshots=5, max_age=None, max_store_bytes=None))
    ids = _take(snap, ws, 12)
    assert [s.id for s in snap.list(limit=None)] == ids[::-1][:5]


def test_age_limit_drops_only_the_old_ones(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make(retention=UNLIMITED)
    engine = snap._engine_ok()
    now = datetime.now(timezone.utc)
    engine.clock = lambda: now - timedelta(days=10)
    old = _take(snap, ws, 3)
    engine.clock = lambda: now - timedelta(days=2)
    recent = _take(snap, ws, 3, start=3)
    aged = make(retention=Retention(max_snapshots=None, max_age=timedelta(days=7), max_store_bytes=None))
    plan = aged.prune(dry_run=True)
    assert plan.dry_run and [s.id for s in plan.pruned] == old  # oldest first, only the old ones
    assert [s.id for s in aged.list(limit=None)] == recent[::-1] + old[::-1]  # a dry run changes nothing
    done = aged.prune()
    assert [s.id for s in done.pruned] == old
    assert [s.id for s in aged.list(limit=None)] == recent[::-1]


def test_newest_pinned_and_undo_points_survive_and_ids_never_change(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make(retention=UNLIMITED)
    engine = snap._engine_ok()
    engine.clock = lambda: datetime.now(timezone.utc) - timedelta(days=30)
    write(ws, {"f.txt": "checkpoint\n"})
    checkpoint = snap.checkpoint("undo point")
    ids = _take(snap, ws, 6)
    pinned = snap.pin(ids[1])
    before = {s.id: s for s in snap.list(limit=None)}
    strict = make(retention=Retention(max_snapshots=1, max_age=timedelta(days=1), max_store_bytes=None))
    result = strict.prune()
    survivors = {s.id for s in strict.list(limit=None)}
    assert survivors == {ids[-1], pinned.id, checkpoint.id}
    assert {s.id for s in result.pruned} == set(before) - survivors
    for sid in survivors:
        assert strict.get(sid) == before[sid]  # same id, same facts
    assert strict.can_undo()
    strict.unpin(pinned.id)
    strict.prune()
    assert pinned.id not in {s.id for s in strict.list(limit=None)}


def test_pruning_half_then_gc_shrinks_by_the_unique_content(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make(retention=UNLIMITED)
    for i in range(10):
        write(ws, {f"unique{i}.bin": os.urandom(50_000)})
        snap.snapshot(f"s{i}")
        (ws / f"unique{i}.bin").unlink()  # each snapshot holds 50 kB nobody else has
    snap.gc()
    before = snap.store_stats().bytes_on_disk
    half = make(retention=Retention(max_snapshots=5, max_age=None, max_store_bytes=None))
    result = half.prune()
    assert len(result.pruned) == 5
    after = half.store_stats().bytes_on_disk
    assert before - after >= 5 * 50_000
    assert result.bytes_after == after
    for info in half.list(limit=None):
        half.restore(info.id, dry_run=True)  # every survivor still readable
    if GIT is not None:
        git("--git-dir", half.store_path, "fsck", "--strict", "--no-dangling", env=git_env(tmp_path))


def test_size_limit_drops_oldest_until_under(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make(retention=UNLIMITED)
    for i in range(8):
        write(ws, {"big.bin": os.urandom(100_000)})
        snap.snapshot(f"s{i}")
    limited = make(retention=Retention(max_snapshots=None, max_age=None, max_store_bytes=350_000))
    result = limited.prune()
    kept = limited.list(limit=None)
    assert result.bytes_after <= 350_000 < result.bytes_before
    assert [s.message for s in kept] == [f"s{i}" for i in range(7, 7 - len(kept), -1)]  # the newest survive
    assert kept[0].message == "s7"


def test_gc_packs_loose_objects_and_removes_crash_leftovers(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make(retention=UNLIMITED)
    ids = _take(snap, ws, 5)
    store = Path(snap.store_path)
    assert any(True for _ in loose_objects(str(store / "objects")))
    old = time.time() - 7200
    leftovers = [
        store / "objects" / "pack" / "tmp_pack_crashed",
        store / "objects" / "tmp_obj_crashed",
        store / "refs" / "snapshots" / "0000000099.lock",
        store / "snapshotter" / ".statcache-crashed.tmp",
    ]
    for path in leftovers:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"junk")
        os.utime(path, (old, old))
    fresh = store / "objects" / "pack" / "tmp_pack_in_progress"
    fresh.write_bytes(b"a writer is busy with this one")
    result = snap.gc()
    assert result.temp_files_removed == 4
    assert not any(p.exists() for p in leftovers) and fresh.exists()
    assert list(loose_objects(str(store / "objects"))) == []
    stats = snap.store_stats()
    assert stats.packs == 1 and stats.loose_objects == 0 and stats.last_gc is not None
    assert stats.snapshots == 5 and stats.oldest is not None and stats.newest is not None
    for sid in ids:
        assert snap.get(sid).id == sid
    snap.restore(ids[0])
    assert (ws / "f.txt").read_text() == "version 0\n"


def test_gc_forgets_cache_records_of_collected_objects(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Restore an old snapshot, prune it, gc: the next snapshot must not name collected blobs."""
    snap = make(retention=UNLIMITED)
    write(ws, {"a.txt": "old content\n"})
    old = snap.snapshot("old")
    write(ws, {"a.txt": "new content\n"})
    snap.snapshot("new")
    snap.restore(old.id)  # the stat cache now records old's blob for a.txt
    # old is the base now, which retention keeps; as in a store made before there was a base, let it go:
    (Path(snap.store_path) / "refs" / "snapshotter" / "base").unlink()
    pruner = make(retention=Retention(max_snapshots=1, max_age=None, max_store_bytes=None))
    pruner.prune()  # old goes; 'new' (which the restore saved) stays
    assert old.id not in {s.id for s in pruner.list(limit=None)}
    info = pruner.snapshot("after gc")
    pruner.restore(pruner.list(limit=None)[-1].id)
    pruner.restore(info.id)
    assert (ws / "a.txt").read_text() == "old content\n"
    if GIT is not None:
        git("--git-dir", pruner.store_path, "fsck", "--strict", "--no-dangling", env=git_env(tmp_path))


def test_gc_beside_a_snapshotting_process_loses_nothing(ws: Path, home: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {f"base{i}.txt": str(i) * 100 for i in range(80)})
    snap = make(retention=UNLIMITED)
    snap.snapshot("base")
    beside_a_writer(ws, home, 25, snap.gc)
    snap.gc()
    listed = snap.list(limit=None)
    assert len(listed) == 26
    for info in listed:
        result = snap.restore(info.id, dry_run=True)
        assert result.target_id == info.id
    last = next(s for s in listed if s.message == "w24")
    snap.restore(last.id)
    assert (ws / "w3.txt").read_text() == "writer 24\n" * 50 or (ws / "w3.txt").exists()


def test_retention_runs_after_each_snapshot_by_default(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """The default policy has no count limit (a week of an agent's tool calls is
    kept: ``test_long_history``); a count limit, once set, runs after each
    snapshot, with no ``prune()`` called."""
    snap = make()
    assert snap._options.retention == Retention() and not Retention().max_snapshots
    _take(snap, ws, 55)
    assert len(snap.list(limit=None)) == 55
    limited = make(retention=Retention(max_snapshots=50))
    _take(limited, ws, 1)
    assert len(limited.list(limit=None)) == 50


def test_unsafe_roots_are_refused_unless_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_home = tmp_path / "user"
    for name in ("", "Desktop", "Documents", "Downloads"):
        (fake_home / name).mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(fake_home))
    for folder in (fake_home, fake_home / "Desktop", fake_home / "Documents", fake_home / "Downloads"):
        with pytest.raises(UnsafeWorkspace, match="allow_unsafe_root"):
            Snapshotter(folder, home=tmp_path / "h")
    with pytest.raises(UnsafeWorkspace):
        Snapshotter("/", home=tmp_path / "h")
    (fake_home / "project").mkdir()
    Snapshotter(fake_home / "project", home=tmp_path / "h").close()
    allowed = Snapshotter(fake_home / "Desktop", home=tmp_path / "h", allow_unsafe_root=True)
    assert allowed.workspace.endswith("Desktop")
    allowed.close()


def test_too_large_workspaces_are_refused_with_numbers_and_knob(ws: Path, home: Path) -> None:
    write(ws, {f"d{i % 10}/f{i}.txt": "x" * 100 for i in range(300)})
    write(ws, {"node_modules/pkg/big.js": "y" * 50_000})  # ignored: does not count
    with pytest.raises(WorkspaceTooLarge) as caught:
        Snapshotter(ws, home=home, max_workspace_entries=50)
    message = str(caught.value)
    assert "more than 50" in message and "counted 51" in message and "max_workspace_entries" in message
    assert not (home / "snapshots").exists() or not any((home / "snapshots").iterdir())  # nothing created
    with pytest.raises(WorkspaceTooLarge, match="max_workspace_bytes"):
        Snapshotter(ws, home=home, max_workspace_bytes=10_000)
    ok = Snapshotter(ws, home=home, max_workspace_bytes=40_000, max_workspace_entries=0)  # 0 disables
    ok.snapshot()
    write(ws, {"later.bin": "z" * 20_000})
    ok.close()
    grown = Snapshotter(ws, home=home, max_workspace_bytes=40_000)
    with pytest.raises(WorkspaceTooLarge):
        grown.snapshot()  # enforced on every scan too, before anything is hashed
    assert read_tree(ws)["later.bin"][1] == b"z" * 20_000
    with pytest.raises(InvalidInput):
        Snapshotter(ws, home=home, max_workspace_bytes=-1)
    with pytest.raises(InvalidInput):
        Retention(max_snapshots=-2)


def test_gc_deltas_keep_every_snapshot_exact(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Older versions become deltas of newer ones at the same path; all still restore byte for byte."""
    import random

    rng = random.Random(4)
    words = ["alpha", "beta", "gamma", "return x", "pass", "}", "{"]
    files = {f"src/m{i}.py": "\n".join(rng.choice(words) for _ in range(200)) + "\n" for i in range(12)}
    write(ws, files)
    snap = make(retention=UNLIMITED)
    expected = {}
    for round_ in range(20):  # depth past MAX_DEPTH for the most edited file
        for name in rng.sample(sorted(files), 4) + ["src/m0.py"]:
            lines = files[name].splitlines()
            lines[rng.randrange(len(lines))] = f"edit {round_} {rng.random()}"
            lines.insert(rng.randrange(len(lines)), "inserted")
            files[name] = "\n".join(lines) + "\n"
        write(ws, files)
        info = snap.snapshot(f"r{round_}")
        expected[info.id] = read_tree(ws)
    before = snap.store_stats().bytes_on_disk
    snap.gc()
    assert snap.store_stats().bytes_on_disk < before
    for sid, tree in expected.items():
        snap.restore(sid)
        assert read_tree(ws) == tree, sid
    if GIT is not None:
        env = git_env(tmp_path)
        git("--git-dir", snap.store_path, "fsck", "--strict", "--no-dangling", env=env)
        verify = git(
            "--git-dir",
            snap.store_path,
            "verify-pack",
            "-v",
            *map(str, Path(snap.store_path, "objects", "pack").glob("*.idx")),
            env=env,
        )
        assert "chain length = 1" in verify  # deltas were written


def test_a_later_gc_copies_what_an_earlier_gc_wrote(
    ws: Path, tmp_path: Path, make, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from snapshotter.engine.gitstore.packread import PackIndex, StoredEntries
    from snapshotter.engine.gitstore.packs import PackBuilder

    files = {f"src/m{i}.py": "".join(f"line {j} of module {i}\n" for j in range(120)) for i in range(70)}
    snap = make(retention=UNLIMITED)
    store = snap._engine_ok().store
    expected = {}
    for round_ in range(6):  # the first snapshot is a pack at zlib 1, the others loose objects
        for i in range(0, 30, 3):
            files[f"src/m{i}.py"] += f"round {round_}\n"
        write(ws, files)
        info = snap.snapshot(f"r{round_}")
        expected[info.id] = read_tree(ws)
    snap.gc()
    pack_dir = Path(snap.store_path, "objects", "pack")
    (first,) = pack_dir.glob("*.pack")
    first_bytes = first.read_bytes()
    base = str(first)[: -len(".pack")]
    stored = StoredEntries([base])
    entries = [stored.get(sha) for sha in PackIndex.read(base + ".idx").ids()]
    stored.close()
    whole = [e for e in entries if e is not None and e.base is None]
    assert len(whole) > 70 and all(e.level >= 2 for e in whole)  # recompressed at zlib 6, not copied at 1
    compressed: list[bytes] = []
    real_append = PackBuilder._append

    def counting(self: PackBuilder, sha: bytes, *args: object) -> None:
        compressed.append(sha)
        real_append(self, sha, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(PackBuilder, "_append", counting)
    snap.gc()  # nothing changed: every entry is copied, and the pack comes out the same
    # Only the root trees (one entry, 30 bytes) were compressed again: a delta was tried
    # for them and refused (too big for so small an object) last time, and is tried again.
    assert compressed and all(len(store.read_raw(sha)[1]) < 64 for sha in compressed)
    assert [p.read_bytes() for p in pack_dir.glob("*.pack")] == [first_bytes]
    compressed.clear()
    files["src/m0.py"] += "one more\n"
    write(ws, files)
    info = snap.snapshot("last")
    expected[info.id] = read_tree(ws)
    snap.gc()
    big = [sha for sha in compressed if len(store.read_raw(sha)[1]) >= 64]
    assert 0 < len(big) <= 10  # the new objects, and the versions they replaced as deltas of them (not 200)
    # Without r2 and r3, r1's versions get new delta bases: their old deltas must not be copied.
    for gone in [s for s in snap.list(limit=None) if s.message in ("r2", "r3")]:
        store.remove_snapshot_ref(gone.sequence, bytes.fromhex(gone.id))
        del expected[gone.id]
    snap.gc()
    for sid, tree in expected.items():
        snap.restore(sid)
        assert read_tree(ws) == tree, sid
    if GIT is not None:
        git("--git-dir", snap.store_path, "fsck", "--strict", "--no-dangling", env=git_env(tmp_path))


def test_young_unreferenced_objects_survive_gc_until_the_grace_period_ends(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make(retention=UNLIMITED)
    snap.snapshot()
    store = snap._engine_ok().store
    orphan = store.writer.write(b"blob", b"written by a writer that has not made its ref yet")
    snap.gc()
    assert store.has_object(orphan)
    path = store.writer.loose_path(orphan)
    os.utime(path, (time.time() - 7200, time.time() - 7200))
    snap.gc()
    assert not os.path.exists(path)


def test_gc_with_content_that_comes_back(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Undo/redo make a file flip between versions: delta bases must not form a cycle."""
    snap = make(retention=UNLIMITED)
    versions = ["alpha\n" * 200, "alpha\n" * 199 + "beta\n"]
    ids = []
    for i in range(6):
        write(ws, {"flip.txt": versions[i % 2], "sub/flip.txt": versions[(i + 1) % 2]})
        ids.append(snap.snapshot(f"s{i}").id)
    snap.gc()
    for i, sid in enumerate(ids):
        snap.restore(sid)
        assert (ws / "flip.txt").read_text() == versions[i % 2]


@pytest.mark.parametrize("content", ["random", "text"])
def test_gc_tries_deltas_only_between_related_versions(
    ws: Path, make, monkeypatch: pytest.MonkeyPatch, content: str
) -> None:  # type: ignore[no-untyped-def]
    """Unrelated versions (random bytes) are not offered to create_delta, which
    takes ~0.5 s per 100 kB of them; edited text still gets deltas."""
    from snapshotter.engine.upkeep import compaction

    calls: list[int] = []
    real = compaction.create_delta

    def counting(base: bytes, target: bytes) -> object:
        calls.append(len(target))
        return real(base, target)

    monkeypatch.setattr(compaction, "create_delta", counting)
    snap = make(retention=UNLIMITED)
    text = "".join(f"line {i} of a source-like file\n" for i in range(4000))
    for i in range(4):
        if content == "random":
            write(ws, {"data.bin": os.urandom(100_000)})
        else:
            text += f"appended line {i}\n"
            write(ws, {"notes.txt": text})
        snap.snapshot(f"s{i}")
    snap.gc()
    file_deltas = [size for size in calls if size >= 4096]  # the small ones are folders (trees)
    assert len(file_deltas) == (0 if content == "random" else 3)
    for info in snap.list(limit=None):
        snap.restore(info.id)  # every version still exact
        assert snap.diff(info.id) == []


def test_retention_never_drops_the_base(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    from snapshotter import Retention

    snap = make(retention=Retention(max_snapshots=2, max_age=None, max_store_bytes=None))
    infos = []
    for i in range(3):
        write(ws, {"a.txt": f"{i}\n"})
        infos.append(snap.snapshot())
    assert [s.id for s in snap.list(limit=None)] == [infos[2].id, infos[1].id]  # over the count: the oldest went
    snap.restore(infos[1].id)  # the base is now the oldest snapshot kept
    write(ws, {"a.txt": "edited\n"})
    assert snap.prune().pruned == ()  # the newest and the base stay, whatever the count says
    assert snap.base() is not None and snap.base().id == infos[1].id
    assert [c.path for c in snap.status()] == ["a.txt"]


def test_old_turn_checkpoints_are_ordinary_snapshots_under_the_limits(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Every turn begun is an undo point; protecting them all let 81 snapshots stay under max_snapshots=10."""
    snap = make(retention=Retention(max_snapshots=6, max_age=None, max_store_bytes=None, max_undo=3))
    for turn in range(20):
        snap.begin_turn()
        write(ws, {"a.txt": f"turn {turn}\n"})
        snap.end_turn()
    listed = snap.list(limit=None)
    assert len(listed) <= 6 + 3  # the limit, plus at most the protected undo points among the older ones
    store = snap._engine_ok().store
    remaining = {info.id for info in listed}
    for stack in ("undo", "redo", "turns"):  # no stack names a dropped snapshot
        assert {sha.hex() for sha in store.stack(stack)} <= remaining, stack
    assert snap.can_undo() and snap.undo().ok  # the recent undo points still work
    assert snap.revert_turn(1).applied  # the turns stack still names snapshots that exist


def test_a_store_that_cannot_shrink_warns_once_and_stops_compacting(
    ws: Path, make, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    import logging

    from snapshotter.engine.upkeep import compaction

    collected = []
    real_collect = compaction.collect
    monkeypatch.setattr(compaction, "collect", lambda *a, **k: collected.append(1) or real_collect(*a, **k))
    snap = make(retention=Retention(max_snapshots=None, max_age=None, max_store_bytes=1))  # every store is over
    with caplog.at_level(logging.WARNING, logger="snapshotter"):
        write(ws, {"a.txt": "a\n" * 1000})
        snap.pin(snap.snapshot())  # pinned and newest: nothing may go, so compaction cannot help
        for i in range(5):
            write(ws, {"b.txt": f"{i}\n"})
            snap.pin(snap.snapshot())
    assert len(collected) == 1
    assert sum("over its limit" in r.getMessage() for r in caplog.records) == 1
    write(ws, {"big.bin": os.urandom(9 << 20)})  # grows past 8 MiB: tried again
    snap.snapshot()
    assert len(collected) == 2


def test_a_sparse_file_is_one_skip_not_a_refused_workspace(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """A 3 GiB sparse file using a few KiB of disk refused every snapshot with WorkspaceTooLarge."""
    write(ws, {"a.txt": "a\n"})
    with open(ws / "sparse.img", "wb") as handle:
        handle.truncate(3 << 30)
    if os.stat(ws / "sparse.img").st_blocks * 512 >= 1 << 20:
        pytest.skip("this filesystem does not keep sparse files sparse")
    snap = make()  # a new store measures the workspace first: 2 GiB cap by default
    info = snap.snapshot()
    assert [(s.path, s.reason.value) for s in info.skipped] == [("sparse.img", "too-large")]
    write(ws, {"b.txt": "b\n"})
    assert snap.snapshot().files_changed == 1  # and every later scan too


def test_new_files_left_out_as_too_large_count_toward_no_cap(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n", "big.bin": os.urandom(300_000)})
    snap = make(max_new_file_size=100_000, max_workspace_bytes=200_000)
    info = snap.snapshot()  # big.bin is skipped, so the workspace holds 2 bytes of tracked content
    assert [s.path for s in info.skipped] == ["big.bin"]
