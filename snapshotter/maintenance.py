"""Keeping a store small: retention after each change, pruning, compaction, stats.

Called by the facade with the store lock held and only between operations,
never in the middle of a snapshot or restore. Full compaction starts when the
store passes its size limit; when loose objects or packs pile up, the cheap
consolidation runs instead (see ``consolidation``).
"""

from __future__ import annotations

import logging
import os
import time
from datetime import datetime, timezone

from snapshotter.errors import SnapshotError
from snapshotter.gitstore import chainpack
from snapshotter.history import REDO, REDO_TO, SESSIONS, UNDO, all_stacks
from snapshotter.model import GcResult, PruneResult, SnapshotInfo, StoreStats
from snapshotter.remotes import recently_fetched
from snapshotter.session.engine import Engine
from snapshotter.upkeep import compaction, consolidation
from snapshotter.upkeep.retention import Retention, by_count_and_age, droppable

log = logging.getLogger("snapshotter")
AUTO_GC_LOOSE = 2000
AUTO_GC_PACKS = 20
_LAST_GC = "last-gc"
_STUCK = "over-limit"
"""The store's size after the last compaction that could not bring it under its limit."""
_STUCK_GROWTH = 0.10
_STUCK_GROWTH_BYTES = 8 << 20
"""A store that cannot shrink is compacted again after growing by 10% or 8 MiB, whichever is more."""
_REMEASURE_LOOSE = 200
_REMEASURE_BYTES = 8 << 20
_REMEASURE_SECONDS = 60.0


def protected_ids(engine: Engine, retention: Retention) -> set[str]:
    """Pinned snapshots, the base (what status compares with), what redo returns
    to, and the newest ``max_undo`` undo points (the newest snapshot is kept
    separately). Older undo points are ordinary snapshots: every turn begun is
    one, and protecting them all let a store grow past every limit."""
    store = engine.store
    ids = {sha.hex() for sha in store.pinned()}
    base = store.base()
    if base is not None:
        ids.add(base.hex())
    for session in ("", *(f"{SESSIONS}{name}/" for name in store.sessions())):
        for sha in store.stack(session + REDO):
            ids.add(sha.hex())
            target = _redo_target(engine, sha)  # a named session's redo entry names the state it brings back
            if target:
                ids.add(target)
        undo = store.stack(session + UNDO)
        ids.update(sha.hex() for sha in (undo[-retention.max_undo :] if retention.max_undo else undo))
    if retention.max_age:
        ids.update(recently_fetched(store, retention.max_age.total_seconds()))
    return ids


def _redo_target(engine: Engine, sha: bytes) -> str | None:
    try:
        return engine.catalog.get(sha.hex()).metadata.get(REDO_TO)
    except SnapshotError:
        return None


def _drop(engine: Engine, info: SnapshotInfo) -> bytes:
    """Remove a snapshot's ref and every stack entry naming it (a stack entry
    would keep its objects alive, and undo would land on a dropped snapshot)."""
    sha = bytes.fromhex(info.id)
    engine.store.remove_snapshot_ref(info.sequence, sha)
    for stack in all_stacks(engine):
        engine.store.drop_from_stack(stack, sha)
    return sha


def usage(engine: Engine) -> tuple[int, int, int]:
    """(bytes on disk, loose objects, packs) of the store (chain packs, which
    consolidation never merges, are not counted among the packs)."""
    objects_dir = os.path.join(engine.store_path, "objects")
    loose = sum(1 for _ in compaction.loose_objects(objects_dir))
    try:
        names = os.listdir(os.path.join(objects_dir, "pack"))
        packs = sum(1 for name in names if name.endswith(".pack") and not name.startswith(chainpack.PREFIX))
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


def gc(engine: Engine, dead_roots: list[bytes] | None = None) -> GcResult:
    """Compact; ``dead_roots`` are snapshots just dropped, whose objects need no grace."""
    engine.usage_base = None
    engine.catalog.settle()  # deferred line counts whose trees may go: counted and kept first
    generation = engine.store.bump_generation()  # before anything is deleted: every writer's caches go stale
    result, kept = compaction.collect(engine.store, dead_roots or ())
    engine.forget_objects_not_in(kept, generation)
    fd = os.open(os.path.join(engine.store.meta_dir, _LAST_GC), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(datetime.now(timezone.utc).isoformat() + "\n")
    return result


def prune(
    engine: Engine,
    retention: Retention,
    dry_run: bool = False,
    dropped_before: list[bytes] | None = None,
    report: bool = True,
) -> PruneResult:
    """Drop what the retention policy says must go, oldest first, then compact.
    ``dropped_before``: snapshots the caller already dropped (their objects need no grace).
    ``report``: the result goes to the user, so the dropped snapshots' deferred
    line counts are counted (before their trees may go); the upkeep pass skips that."""
    snapshots = list(engine.catalog.newest_first())
    protected = protected_ids(engine, retention)
    drop = by_count_and_age(snapshots, protected, retention, datetime.now(timezone.utc))
    if report:
        drop = engine.catalog.counted_all(drop)
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
            if report:
                batch = engine.catalog.counted_all(batch)
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
    drop = by_count_and_age(snapshots, protected_ids(engine, retention), retention, datetime.now(timezone.utc))
    dead = [_drop(engine, info) for info in drop]
    size, loose, packs = estimated_usage(engine)
    over = _over_size(size, retention)
    if over and (dead or not _stuck_at(engine, size)):
        done = prune(engine, retention, dropped_before=dead, report=False)
        _note_stuck(engine, retention, done.bytes_after)
        return
    if not over:
        _note_stuck(engine, retention, size)  # fits again: a later overflow warns anew
    if loose > AUTO_GC_LOOSE or packs > AUTO_GC_PACKS:
        engine.usage_base = None
        consolidation.consolidate(engine.store)  # about a second; a full gc takes 8 to 30 s at 100,000 files


def _stuck_at(engine: Engine, size: int) -> bool:
    """Whether a compaction already found it could not bring the store under
    its limit, and the store has not grown by ``_STUCK_GROWTH`` since."""
    try:
        with open(os.path.join(engine.store.meta_dir, _STUCK), encoding="ascii") as handle:
            stuck = int(handle.read().strip() or 0)
    except (OSError, ValueError):
        return False
    return size <= max(stuck * (1 + _STUCK_GROWTH), stuck + _STUCK_GROWTH_BYTES)


def _note_stuck(engine: Engine, retention: Retention, size: int) -> None:
    """Remember (and warn once) that the store stays over its limit because
    nothing more may be dropped; forget it once the store fits again."""
    path = os.path.join(engine.store.meta_dir, _STUCK)
    if not _over_size(size, retention):
        if os.path.exists(path):
            os.unlink(path)
        return
    if not os.path.exists(path):
        log.warning(
            "snapshotter: the store %s holds %d bytes, over its limit of %d, and nothing more may be dropped "
            "(the newest snapshot, the base, pins, undo points); it is compacted again only after it grows "
            "by 10%% or 8 MiB. Unpin snapshots, lower Retention.max_undo or raise max_store_bytes.",
            engine.store_path,
            size,
            retention.max_store_bytes or 0,
        )
    with open(path, "w", encoding="ascii") as handle:
        handle.write(f"{size}\n")


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
