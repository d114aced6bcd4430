"""The process the crash tests kill: edits a workspace and snapshots, restores,
undoes, prunes, collects garbage and consolidates in a loop, forever, journaling each step.

    python tests/crash_worker.py WORKSPACE HOME JOURNAL SEED

Journal lines (flushed before and after each step, so the parent knows what
completed): ``ready``, ``snap <seq> <id> <tree>``, ``restore-begin <id>``,
``restore-done <id>``, ``prune-done``, ``gc-done``, ``consolidate-done``, ``pack-refs-done``, ``undo-done``.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

from snapshotter import Retention, Snapshotter
from snapshotter.engine.upkeep.consolidation import consolidate

KEEP = 6
"""Retention's count limit in the worker: the parent checks it is honoured."""


def edit(ws: Path, rng: random.Random) -> None:
    """A few random edits; now and then a burst of new files (so packs are written)."""
    names = [f"d{rng.randrange(4)}/f{rng.randrange(12)}.txt" for _ in range(rng.randrange(1, 6))]
    if rng.random() < 0.15:
        names += [f"burst{rng.randrange(1000)}/{i}.txt" for i in range(80)]
    for name in names:
        path = ws / name
        if path.exists() and rng.random() < 0.3:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(
            os.urandom(rng.randrange(0, 3000)) if rng.random() < 0.3 else f"{name} {rng.random()}\n".encode()
        )
        if rng.random() < 0.2:
            path.chmod(0o755)
    big = ws / "big.bin"
    if rng.random() < 0.3 and big.exists():  # a few pages changed in place: a delta appended to its chain pack
        with open(big, "r+b") as handle:
            for _ in range(rng.randrange(1, 4)):
                handle.seek(rng.randrange(0, (9 << 20) - 65536))
                handle.write(os.urandom(rng.randrange(1, 65536)))
    elif rng.random() < 0.05:
        big.write_bytes(os.urandom(9 << 20))  # a big file (> 8 MiB) whole: a new chain, a long write to be killed in


def main() -> None:
    ws, home, journal_path, seed = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    rng = random.Random(seed)
    journal = open(journal_path, "a", buffering=1)  # noqa: SIM115 - lives as long as the process

    def note(line: str) -> None:
        journal.write(line + "\n")
        journal.flush()

    snap = Snapshotter(ws, home=home, retention=Retention(max_snapshots=KEEP, max_age=None, max_store_bytes=None))
    note("ready")
    while True:
        edit(ws, rng)
        roll = rng.random()
        if roll < 0.5:
            info = snap.snapshot(f"step {rng.random()}")
            note(f"snap {info.sequence} {info.id} {info.tree_id}")
        elif roll < 0.7:
            choices = snap.list()
            if choices:
                target = rng.choice(choices)
                note(f"restore-begin {target.id}")
                snap.restore(target.id)
                note(f"restore-done {target.id}")
        elif roll < 0.8:
            snap.checkpoint()
            edit(ws, rng)
            snap.undo()
            note("undo-done")
        elif roll < 0.9:
            snap.prune()
            note("prune-done")
        elif roll < 0.95:
            snap.gc()
            note("gc-done")
        elif roll < 0.97:  # the upkeep that runs when loose objects or packs pile up
            engine = snap._engine_ok()
            with engine.lock:
                consolidate(engine.store)
            note("consolidate-done")
        else:  # the upkeep that folds loose refs into packed-refs (a drop rewrites it too)
            engine = snap._engine_ok()
            with engine.lock, engine.catalog.index.packing():
                engine.store.pack_refs()
            note("pack-refs-done")


if __name__ == "__main__":
    main()
