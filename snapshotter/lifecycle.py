"""Keeping a store small: retention after each change, pruning, compaction, stats.

Called by the facade with the store lock held and only between operations,
never in the middle of a snapshot or restore. Full compaction starts when the
store passes its size limit; when loose objects or packs pile up, the cheap
consolidation runs instead (see ``consolidation``).
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone

from . import compaction, consolidation
from .engine import Engine
from .history import REDO, TURNS, UNDO
from .model import PruneResult, SnapshotInfo, StoreStats
from .retention import Retention, by_count_and_age, droppable

AUTO_GC_LOOSE = 2000
AUTO_GC_PACKS = 20
_LAST_GC = "last-gc"
_REMEASURE_LOOSE = 200
_REMEASURE_BYTES = 8 << 20
_REMEASURE_SECONDS = 60.0


def protected_ids(engine: Engine) -> set[str]:
    """Pinned snapshots, the base (what status compares with) and the undo/redo
    points in use (the newest is kept separately)."""
    store = engine.store
    ids = {sha.hex() for sha in store.pinned()}
    base = store.base()
    if base is not None:
        ids.add(base.hex())
    for name in (UNDO, REDO):
        ids.update(sha.hex() for sha in store.stack(name))
    return ids


def _drop(engine: Engine, info: SnapshotInfo) -> bytes:
    sha = bytes.fromhex(info.id)
    engine.store.remove_snapshot_ref(info.sequence, sha)
    engine.store.drop_from_stack(TURNS, sha)
    return sha


def usage(engine: Engine) -> tuple[int, int, int]:
    """(bytes on disk, loose objects, packs) of the store."""
    objects_dir = os.path.join(engine.store_path, "objects")
    loose = sum(1 for _ in compaction.loose_objects(objects_dir))
    try:
        packs = sum(1 for name in os.listdir(os.path.join(objects_dir, "pack")) if name.endswith(".pack"))
    except FileNotFoundError:
        packs = 0
    return compaction.disk_usage(engine.store), loose, packs


def estimated_usage(engine: Engine) -> tuple[int, int, int]:
    """:func:`usage` as last measured plus what this process has written since.

    Walking the store costs milliseconds per call, as much as a whole
    watch-mode snapshot, so the retention pass measures for real only once a
    minute, after the store grew noticeably, or after a compaction. Writers in
    other processes are seen at the next real measurement.
    """
    written = engine.store.writer.written
    now = time.monotonic()
    if engine.usage_base is not None:
        (size, loose, packs), before, when = engine.usage_base
        grew, new_loose, new_packs = (a - b for a, b in zip(written, before))
        if grew < _REMEASURE_BYTES and new_loose < _REMEASURE_LOOSE and now - when < _REMEASURE_SECONDS:
            return size + grew, loose + new_loose, packs + new_packs
    measured = usage(engine)
    engine.usage_base = (measured, written, now)
    return measured


def gc(engine: Engine, dead_roots: list[bytes] | None = None) -> compaction.GcResult:
    """Compact; ``dead_roots`` are snapshots just dropped, whose objects need no grace."""
    engine.usage_base = None
    generation = engine.store.bump_generation()  # before anything is deleted: every writer's caches go stale
    result, kept = compaction.collect(engine.store, dead_roots or ())
    engine.forget_objects_not_in(kept, generation)
    fd = os.open(os.path.join(engine.store.meta_dir, _LAST_GC), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(datetime.now(timezone.utc).isoformat() + "\n")
    return result


def prune(
    engine: Engine, retention: Retention, dry_run: bool = False, dropped_before: list[bytes] | None = None
) -> PruneResult:
    """Drop what the retention policy says must go, oldest first, then compact.
    ``dropped_before``: snapshots the caller already dropped (their objects need no grace)."""
    snapshots = list(engine.catalog.newest_first())
    protected = protected_ids(engine)
    drop = by_count_and_age(snapshots, protected, retention, datetime.now(timezone.utc))
    before = compaction.disk_usage(engine.store)
    if dry_run:
        return PruneResult(tuple(drop), len(snapshots) - len(drop), True, before, before)
    dead = (dropped_before or []) + [_drop(engine, info) for info in drop]
    after = gc(engine, dead).bytes_after if dead or _over_size(before, retention) else before
    dropped = list(drop)
    if retention.max_store_bytes and after > retention.max_store_bytes:
        remaining = [s for s in snapshots if s.id not in {d.id for d in drop}]
        candidates = droppable(remaining, protected)
        while after > retention.max_store_bytes and candidates:
            batch = candidates[: max(1, len(candidates) // 4)]
            candidates = candidates[len(batch) :]
            dead = [_drop(engine, info) for info in batch]
            dropped.extend(batch)
            after = gc(engine, dead).bytes_after
    return PruneResult(tuple(dropped), len(snapshots) - len(dropped), False, before, after)


def _over_size(size: int, retention: Retention) -> bool:
    return bool(retention.max_store_bytes) and size > (retention.max_store_bytes or 0)


def maintain(engine: Engine, retention: Retention) -> None:
    """The cheap pass after each change: count and age limits; then a full
    compaction if the store is over its size, or a consolidation if loose
    objects or packs piled up (dropped snapshots' objects wait for the next
    full compaction)."""
    snapshots = list(engine.catalog.newest_first())
    drop = by_count_and_age(snapshots, protected_ids(engine), retention, datetime.now(timezone.utc))
    dead = [_drop(engine, info) for info in drop]
    size, loose, packs = estimated_usage(engine)
    if _over_size(size, retention):
        prune(engine, retention, dropped_before=dead)
    elif loose > AUTO_GC_LOOSE or packs > AUTO_GC_PACKS:
        engine.usage_base = None
        consolidation.consolidate(engine.store)  # about a second; a full gc takes 8 to 30 s at 100,000 files


def stats(engine: Engine) -> StoreStats:
    snapshots = list(engine.catalog.newest_first())
    size, loose, packs = usage(engine)
    last_gc = None
    try:
        with open(os.path.join(engine.store.meta_dir, _LAST_GC), encoding="ascii") as handle:
            last_gc = datetime.fromisoformat(handle.read().strip())
    except (OSError, ValueError):
        pass
    return StoreStats(
        snapshots=len(snapshots),
        pinned=len(engine.store.pinned()),
        loose_objects=loose,
        packs=packs,
        bytes_on_disk=size,
        oldest=snapshots[-1].created_at if snapshots else None,
        newest=snapshots[0].created_at if snapshots else None,
        last_gc=last_gc,
    )
