"""Another writer's gc never leaves a snapshot naming objects it deleted (issue:
'Another writer's gc makes a completed snapshot unrestorable'): caches that let a
writer skip writing an object are valid only for the store generation they were
made in, and gc starts a new generation before it deletes anything."""

from __future__ import annotations

from pathlib import Path

from conftest import GIT, git, git_env, read_tree, run_command, write

from snapshotter import Retention
from snapshotter.engine.worktree import statcache


def _other_writer_prunes_what_only_the_first_snapshot_held(ws: Path, make) -> tuple[object, object]:  # type: ignore[no-untyped-def]
    write(ws, {"data/big.txt": "data v1\n" * 100, "data/more.txt": "more\n", "src/a.py": "a = 1\n"})
    first = make(retention=Retention.unlimited())
    first.snapshot("first")  # its caches now name data/'s blobs and trees
    other = make(retention=Retention.unlimited(), exclude=["data/"])
    write(ws, {"src/a.py": "a = 2\n"})
    other.snapshot("without data")
    pruner = make(retention=Retention(max_snapshots=1, max_age=None, max_store_bytes=None))
    pruned = pruner.prune()  # drops 'first', whose objects only it held: data/'s are deleted now
    assert [info.message for info in pruned.pruned] == ["first"]
    assert not first._engine_ok().store.has_object(bytes.fromhex(pruned.pruned[0].tree_id))
    return first, other


def test_a_writer_does_not_reuse_ids_another_instance_collected(ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    first, _ = _other_writer_prunes_what_only_the_first_snapshot_held(ws, make)
    expected = read_tree(ws)
    again = first.snapshot("after the other's gc")  # data/ unchanged: its ids came from the caches
    assert first.verify(full=True).ok
    (ws / "data/big.txt").write_text("edited\n")
    first.restore(again.id)
    assert read_tree(ws) == expected
    if GIT is not None:
        git("--git-dir", first.store_path, "fsck", "--strict", "--no-dangling", env=git_env(tmp_path))


def test_the_same_with_prune_run_by_the_command_line(ws: Path, home: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"data/big.txt": "data v1\n" * 100, "src/a.py": "a = 1\n"})
    snap = make(retention=Retention.unlimited(), watch=False)
    snap.snapshot("first")
    write(ws, {"src/a.py": "a = 2\n"})
    base = ["-C", str(ws), "--home", str(home)]
    assert run_command("snapshot", "--exclude", "data/", *base, env={"SNAPSHOTTER_MAX_SNAPSHOTS": "0"}).returncode == 0
    pruned = run_command("prune", "--json", *base, env={"SNAPSHOTTER_MAX_SNAPSHOTS": "1"})
    assert pruned.returncode == 0 and '"message": "first"' in pruned.stdout
    latest = snap.snapshot("after the command line's prune")
    assert snap.verify(full=True).ok
    (ws / "data/big.txt").unlink()
    snap.restore(latest.id)
    assert (ws / "data/big.txt").read_text() == "data v1\n" * 100


def test_a_stat_cache_from_an_older_generation_is_never_trusted(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n"})
    snap = make()
    snap.snapshot()
    path = Path(snap.store_path) / "snapshotter" / "statcache"
    saved = statcache.load(str(path))
    store = snap._engine_ok().store
    assert saved.generation == store.generation() == 0 and saved.count() == 1
    snap.gc()  # a new generation, and the cache re-stamped with it
    assert statcache.load(str(path)).generation == store.generation() == 1
    statcache.save(str(path), saved)  # a writer's stale cache, saved as if after the gc
    (ws / "b.txt").write_text("b\n")
    fresh = make()  # loads the cache from disk
    fresh.snapshot()
    assert fresh.last_scan.files_hashed == 2  # every file read again: nothing trusted from generation 0
