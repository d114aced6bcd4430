"""What the pass after each change measures of a store: its bytes, loose objects and packs.

Every mutating call of a new process (a command, a hook) measures the store once
(``maintenance.estimated_usage``); one walk of the store gives all three figures,
equal to what each would count on its own."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import write

from snapshotter import Retention
from snapshotter.engine.gitstore import bigfacts
from snapshotter.engine.upkeep import compaction


def _counted_apart(store_path: str) -> tuple[int, int, int]:
    """The three figures, each counted by a walk of its own (the oracle)."""
    total = 0
    for dirpath, _, filenames in os.walk(store_path):
        for name in filenames:
            if name in ("lock", "watch.key", "watch.sock") and dirpath == os.path.join(store_path, "snapshotter"):
                continue
            total += os.lstat(os.path.join(dirpath, name)).st_size
    objects = os.path.join(store_path, "objects")
    loose = sum(1 for _ in compaction.loose_objects(objects))
    names = os.listdir(os.path.join(objects, "pack"))
    packs = sum(1 for name in names if name.endswith(".pack") and not name.startswith(bigfacts.PREFIX))
    return total, loose, packs


def test_one_walk_counts_the_bytes_the_loose_objects_and_the_packs(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {f"d{i % 7}/f{i}.txt": f"content {i}\n" for i in range(300)})  # a cold snapshot: one pack
    snap = make()
    snap.snapshot("cold")
    for i in range(5):  # small snapshots: loose objects
        write(ws, {f"d{i}/f{i}.txt": f"changed {i}\n", f"new{i}.txt": f"{i}\n"})
        snap.snapshot(f"s{i}")
    store = snap._engine_ok().store
    objects = Path(store.path) / "objects"
    (objects / "ab").mkdir(exist_ok=True)
    (objects / "ab" / "not-an-object").write_text("x")  # counted in bytes, not as an object
    (objects / "ab" / ("c" * 38)).write_text("y")  # a loose object's name
    (objects / "pack" / "leftover.tmp").write_text("z")
    (Path(store.meta_dir) / "watch.key").write_text("not counted")
    measured = compaction.store_usage(store)
    assert measured == _counted_apart(store.path)
    assert measured[1] >= 6 and measured[2] >= 1
    assert compaction.disk_usage(store) == measured[0]


def test_chain_packs_count_in_the_bytes_not_among_the_packs(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """A big file's chain pack (issue #53) is the store's bytes, but not one of the packs that trigger a
    consolidation: consolidation never merges a chain pack, so counting them would call it after every
    snapshot of a store with a few big files, for nothing."""
    write(ws, {"small.txt": "small\n"})
    (ws / "big.bin").write_bytes(os.urandom(bigfacts.THRESHOLD + 1))
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    snap.snapshot("big")
    store = snap._engine_ok().store
    names = os.listdir(os.path.join(store.path, "objects", "pack"))
    chains = [name for name in names if name.startswith(bigfacts.PREFIX) and name.endswith(".pack")]
    assert len(chains) == 1
    measured = compaction.store_usage(store)
    assert measured == _counted_apart(store.path)
    assert measured[0] > bigfacts.THRESHOLD
    assert measured[2] == sum(1 for name in names if name.endswith(".pack")) - 1
