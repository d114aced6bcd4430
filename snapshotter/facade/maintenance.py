"""Keeping a store small: retention after each change, pruning, compaction, stats.

Called by the facade with the store lock held and only between operations,
never in the middle of a snapshot or restore. Full compaction starts when the
store passes its size limit; when loose objects or packs pile up, the cheap
consolidation runs instead (see ``consolidation``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from datetime import datetime, timezone

from snapshotter.engine.fsutil import SMALL_FILE_CAP, read_side_file
from snapshotter.engine.session.engine import Engine
from snapshotter.engine.upkeep import compaction, consolidation
from snapshotter.engine.upkeep.retention import Retention, by_count_and_age, droppable, least_missed_first
from snapshotter.engine.worktree.statcache import write_atomically
from snapshotter.errors import SnapshotError
from snapshotter.history.anchors import before_dropping, kept_for_sessions
from snapshotter.history.stacks import REDO, SESSIONS, UNDO, all_stacks

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:  # the results' values load where one is made: the pass after each change makes none
    from snapshotter.model import GcResult, PruneResult, SnapshotInfo, StoreStats

log = logging.getLogger("snapshotter")
AUTO_GC_LOOSE = 2000
AUTO_GC_PACKS = 20
PACK_REFS_AT = 256
"""Loose snapshot refs at which upkeep packs the refs (see docs/store.md, "Long histories")."""
AGE_PASS_EVERY = 3600.0
"""Seconds between two passes of the age limit (each rewrites ``packed-refs``)."""
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
    to, the newest ``max_undo`` undo points (the newest snapshot is kept
    separately), and what each session's turns and calls need
    (``anchors.kept_for_sessions``). Older undo points are ordinary snapshots: every turn begun is
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
        ids.update(sha.hex() for sha in store.stack_top(session + UNDO, retention.max_undo or None))
    ids.update(kept_for_sessions(engine))
    if retention.max_age:
        from snapshotter.remote.remotes import recently_fetched  # here: a store without remotes loads none

        ids.update(recently_fetched(store, retention.max_age.total_seconds()))
    return ids


def _redo_target(engine: Engine, sha: bytes) -> str | None:
    from snapshotter.history.undo import REDO_TO

    try:
        return engine.catalog.get(sha.hex()).metadata.get(REDO_TO)
    except SnapshotError:
        return None


def _drop(engine: Engine, infos: list[SnapshotInfo], oldest: bool = False) -> list[bytes]:
    """Remove snapshots' refs (``packed-refs`` rewritten once for all) and the
    stack entries naming them (a stack entry would keep its objects alive, and
    undo would land on a dropped snapshot). ``oldest``: they are the oldest
    snapshots, so each stack is read from its bottom only as far as they go
    (an entry pushed out of order and missed is removed when undo reaches it).
    The history index records the drop before and after (see ``historyindex``)."""
    if not infos:
        return []
    shas = {bytes.fromhex(info.id) for info in infos}
    top = max(info.sequence for info in infos)
    with engine.catalog.index.dropping(infos):
        engine.store.remove_snapshot_refs({info.sequence: bytes.fromhex(info.id) for info in infos})
        engine.store.drop_from_stacks(all_stacks(engine), shas, top if oldest else None)
    return sorted(shas)


def usage(engine: Engine) -> tuple[int, int, int]:
    """(bytes on disk, loose objects, packs) of the store (chain packs, which
    consolidation never merges, are not counted among the packs)."""
    return compaction.store_usage(engine.store)


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
    stamp = datetime.now(timezone.utc).isoformat() + "\n"
    write_atomically(os.path.join(engine.store.meta_dir, _LAST_GC), stamp.encode("ascii"))  # never into a pipe
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
    from snapshotter.model import PruneResult

    snapshots = list(engine.catalog.newest_first())
    protected = protected_ids(engine, retention)
    drop = by_count_and_age(snapshots, protected, retention, datetime.now(timezone.utc))
    if report:
        drop = engine.catalog.counted_all(drop)
    before = compaction.disk_usage(engine.store)
    if dry_run:
        return PruneResult(tuple(drop), len(snapshots) - len(drop), True, before, before)
    before_dropping(engine, drop)
    dead = (dropped_before or []) + _drop(engine, drop)
    after = gc(engine, dead).bytes_after if dead or _over_size(before, retention) else before
    dropped = list(drop)
    if retention.max_store_bytes and after > retention.max_store_bytes:
        remaining = [s for s in snapshots if s.id not in {d.id for d in drop}]
        candidates = least_missed_first(remaining, droppable(remaining, protected))
        while after > retention.max_store_bytes and candidates:
            batch = candidates[: max(1, len(candidates) // 4)]
            candidates = candidates[len(batch) :]
            if report:
                batch = engine.catalog.counted_all(batch)
            batch = sorted(batch, key=lambda info: info.sequence)
            before_dropping(engine, batch)
            dead = _drop(engine, batch)
            dropped.extend(batch)
            after = gc(engine, dead).bytes_after
    return PruneResult(tuple(dropped), len(snapshots) - len(dropped), False, before, after)


def _over_size(size: int, retention: Retention) -> bool:
    return bool(retention.max_store_bytes) and size > (retention.max_store_bytes or 0)


def maintain(engine: Engine, retention: Retention) -> None:
    """The cheap pass after each change: the count and age limits when due (see
    :func:`due`); then a full compaction if the store is over its size, or a
    consolidation if loose objects or packs piled up (dropped snapshots' objects
    wait for the next full compaction), and the refs packed once enough are loose."""
    index = engine.catalog.index
    drop, oldest = due(engine, retention)
    before_dropping(engine, drop)
    dead = _drop(engine, drop, oldest)
    size, loose, packs = estimated_usage(engine)
    over = _over_size(size, retention)
    if over and (dead or not _stuck_at(engine, size)):
        done = prune(engine, retention, dropped_before=dead, report=False)
        _note_stuck(engine, retention, done.bytes_after)
    else:
        if not over:
            _note_stuck(engine, retention, size)  # fits again: a later overflow warns anew
        if loose > AUTO_GC_LOOSE or packs > AUTO_GC_PACKS:
            engine.usage_base = None
            consolidation.consolidate(engine.store)  # about a second; a full gc takes 8 to 30 s at 100,000 files
    if engine.store.loose_snapshot_refs() >= PACK_REFS_AT:
        with index.packing():
            engine.store.pack_refs()
    index.save()


def due(engine: Engine, retention: Retention) -> tuple[list[SnapshotInfo], bool]:
    """What the limits drop now, oldest first, and whether that is only the
    oldest snapshots (the age limit). Bounded: the count comes from the history
    index and the age from the oldest snapshot; the snapshots themselves are
    read only when something is due. Over the count limit, the pass drops down
    to 1/64 below it (one pass reads every snapshot it keeps). The age limit is
    looked at once an hour (or each 1/24 of ``max_age``, if less): a snapshot
    may outlive it by that much, and a pass costs what it drops."""
    state = engine.catalog.index.current()
    now = datetime.now(timezone.utc)
    if retention.max_snapshots and state.count > retention.max_snapshots:
        snapshots = list(engine.catalog.newest_first())
        tightened = dataclasses.replace(
            retention, max_snapshots=retention.max_snapshots - retention.max_snapshots // 64
        )
        return by_count_and_age(snapshots, protected_ids(engine, tightened), tightened, now), False
    if not retention.max_age or retention.max_age >= now - now.replace(year=1, month=1, day=1):
        return [], True
    cutoff = now - retention.max_age
    oldest = next(engine.catalog.oldest_first(), None)
    every = min(AGE_PASS_EVERY, retention.max_age.total_seconds() / 24)
    if oldest is None or oldest.created_at >= cutoff or time.time() - state.age_pass < every:
        return [], True
    state.age_pass = time.time()
    expired: list[SnapshotInfo] = []
    for info in engine.catalog.oldest_first():
        if info.created_at >= cutoff:
            break
        expired.append(info)
    newest = engine.catalog.latest()
    protected = protected_ids(engine, retention) | ({newest.id} if newest is not None else set())
    return by_count_and_age(expired[::-1], protected, retention, now), True


def _stuck_at(engine: Engine, size: int) -> bool:
    """Whether a compaction already found it could not bring the store under
    its limit, and the store has not grown by ``_STUCK_GROWTH`` since."""
    text = _read_small(_STUCK, engine)
    if not (text.isdigit() and len(text) <= 19):  # bytes: ASCII digits only; a size fits 63 bits
        return False
    stuck = int(text)
    return size <= max(stuck * (1 + _STUCK_GROWTH), stuck + _STUCK_GROWTH_BYTES)


def _read_small(name: str, engine: Engine) -> bytes:
    """One of the store's small files of this module, read guarded (``fsutil.read_side_file``);
    empty where it cannot be read."""
    try:
        return read_side_file(os.path.join(engine.store.meta_dir, name), SMALL_FILE_CAP, follow=False).strip()
    except OSError:
        return b""


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
    write_atomically(path, f"{size}\n".encode("ascii"))


def stats(engine: Engine) -> StoreStats:
    """The store's figures: the count from the history index, the oldest and
    newest from the two ends of the refs (no other snapshot is read)."""
    from snapshotter.model import StoreStats

    count = engine.catalog.index.current().count
    oldest, newest = next(engine.catalog.oldest_first(), None), engine.catalog.latest()
    size, loose, packs = usage(engine)
    last_gc = None
    try:
        last_gc = datetime.fromisoformat(_read_small(_LAST_GC, engine).decode("ascii"))
    except ValueError:  # none yet, unreadable, or not a date
        pass
    return StoreStats(
        snapshots=count,
        pinned=len(engine.store.pinned()),
        loose_objects=loose,
        packs=packs,
        bytes_on_disk=size,
        oldest=oldest.created_at if oldest is not None else None,
        newest=newest.created_at if newest is not None else None,
        last_gc=last_gc,
    )
