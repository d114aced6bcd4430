"""Consolidation: the cheap upkeep that runs when loose objects or packs pile up.

A full gc (``compaction``) walks every snapshot and writes every object into
one pack with deltas: about 8 s at 100,000 files, too long to hide in an
agent's turn. Piles of loose objects and small packs need much less: this
packs the loose objects and merges the small packs into one new pack, and
deletes the copies it replaced. It keeps every object, reachable or not (so
it needs no reachability walk and no grace period, and cannot lose an object
a concurrent writer is about to reference); reclaiming dropped snapshots'
objects stays the full gc's job (past the size limit, or ``gc()``).

Which packs merge follows git's geometric repacking: sorted by size, every
pack smaller than twice the packs below it is merged with them, so each
object is rewritten about log2(store size) times over its life, and the pack
count stays logarithmic. The largest pack (after a gc, the one holding deltas
at zlib 6) is never merged. Big blobs are never read whole: loose ones stay
loose, chain packs (a big file's versions as deltas) are never merged, and a
pack holding a big object stays as it is.

Order of writes: the new pack is complete and synced before any copy it
replaces is deleted, so every object is in at least one place at every moment.
"""

from __future__ import annotations

import os
import time
import zlib

from dulwich.errors import ApplyDeltaError

from snapshotter.engine.fsutil import unlink_quietly
from snapshotter.engine.gitstore import bigfacts
from snapshotter.engine.gitstore.inflate import ObjectTooLarge
from snapshotter.engine.gitstore.objects import STREAM_THRESHOLD, TYPE_NAMES
from snapshotter.engine.gitstore.packindex import PackDamaged, read_through, write_index
from snapshotter.engine.gitstore.packs import PackBuilder
from snapshotter.engine.gitstore.packset import unindexed
from snapshotter.engine.gitstore.store import Store
from snapshotter.engine.upkeep.compaction import GRACE_SECONDS, disk_usage, loose_objects
from snapshotter.errors import StoreError

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:
    from snapshotter.model import GcResult

_UNREADABLE = (KeyError, ValueError, zlib.error, ApplyDeltaError, StoreError)
FACTOR = 2
"""A pack stays unmerged only if it is at least this many times the size of all smaller ones together."""


def packs_to_merge(sizes: dict[str, int], loose_bytes: int) -> list[str]:
    """The packs (of ``sizes``: base path -> bytes) to merge with ``loose_bytes``
    of loose objects: the smallest ones, up to the first pack at least
    ``FACTOR`` times everything below it that needs no merge; never the largest."""
    ordered = sorted(sizes, key=lambda base: (sizes[base], base))
    candidates = ordered[:-1]  # the largest stays
    split = 0
    for i in range(len(candidates) - 1, 0, -1):  # the packs above ``split`` already grow geometrically
        if sizes[candidates[i]] < FACTOR * sizes[candidates[i - 1]]:
            split = i
            break
    total = loose_bytes + sum(sizes[base] for base in candidates[:split])
    while split < len(candidates) and sizes[candidates[split]] < FACTOR * total:
        total += sizes[candidates[split]]
        split += 1
    return candidates[:split]


def consolidate(store: Store) -> GcResult:
    """Pack the loose objects and merge the small packs; no object is dropped."""
    started = time.perf_counter()
    before = disk_usage(store)
    objects_dir = os.path.join(store.path, "objects")
    pack_dir = os.path.join(objects_dir, "pack")
    loose = [(sha, path, st.st_size) for sha, path, st in loose_objects(objects_dir)]
    loose = [item for item in loose if (store.loose_size(item[0]) or 0) <= STREAM_THRESHOLD]
    leftovers = _settle_unindexed(store, pack_dir, time.time())
    sizes = _pack_sizes(pack_dir)
    merged: dict[str, list[bytes]] = {}
    for base in packs_to_merge(sizes, sum(size for _, _, size in loose)):
        try:
            index = store.packs.index(base)  # checked; rebuilt from its pack if damaged
        except OSError:
            continue  # gone meanwhile
        if index is not None:
            merged[base] = index.ids()
    written = None
    packed: set[bytes] = set()
    if loose or merged:
        builder = PackBuilder(pack_dir)
        try:
            for sha in [sha for sha, _, _ in loose] + [sha for ids in merged.values() for sha in ids]:
                if sha in builder:
                    continue
                try:
                    kind, content = store.read_raw(sha, STREAM_THRESHOLD)
                except ObjectTooLarge:
                    continue  # a big object (a delta chain fetched, a pack another tool wrote): its pack stays
                except _UNREADABLE:
                    continue  # damaged: its copy stays where it is, for verify() to report
                builder.add(TYPE_NAMES[kind], sha, content)
            packed = set(builder.ids())
        except BaseException:
            builder.abort()
            raise
        written = builder.finish()  # synced and visible before any copy goes
    store.release_packs()  # Windows cannot delete open files
    # A file that cannot go now (held open elsewhere on Windows) is left to the next
    # consolidation: its objects are in the new pack too.
    removed_packs = 0
    for base, ids in merged.items():
        whole = base != written and packed.issuperset(ids)  # a damaged object keeps its pack
        if whole and unlink_quietly(base + ".idx"):  # the index first: readers skip a pack without one
            removed_packs += 1
            unlink_quietly(base + ".pack")
    for sha, path, _ in loose:
        if sha in packed:
            unlink_quietly(path)
    from snapshotter.model import GcResult  # a result's values load where one is made

    return GcResult(
        objects_kept=len(packed),
        objects_removed=0,
        packs_removed=removed_packs,
        temp_files_removed=leftovers,
        bytes_before=before,
        bytes_after=disk_usage(store),
        seconds=time.perf_counter() - started,
    )


def _pack_sizes(pack_dir: str) -> dict[str, int]:
    """Base path -> size of each pack with an index, chain packs left out
    (a big file's versions: they are never merged, see ``chainpack``)."""
    sizes = {}
    for base in _pack_files(pack_dir):
        if bigfacts.is_chain(base):
            continue
        try:
            if os.path.exists(base + ".idx"):
                sizes[base] = os.path.getsize(base + ".pack")
        except OSError:
            continue
    return sizes


def _pack_files(pack_dir: str) -> list[str]:
    """Base paths of the ``pack-*.pack`` files in ``pack_dir``."""
    try:
        names = os.listdir(pack_dir)
    except FileNotFoundError:
        return []
    packs = [name for name in names if name.startswith("pack-") and name.endswith(".pack")]
    return [os.path.join(pack_dir, name[: -len(".pack")]) for name in packs]


def _settle_unindexed(store: Store, pack_dir: str, now: float) -> int:
    """Packs without an index an hour old or more: a delete that failed on
    Windows (another process had the pack open) leaves one whose objects are
    all in a newer pack, and it is removed; but a pack whose index was lost
    may hold the only copy of its objects, and is indexed again instead (see
    ``packindex``). One that cannot be read through is left for verify() to
    report. Returns how many were removed."""
    removed = 0
    for base in unindexed(pack_dir):
        try:
            if now - os.path.getmtime(base + ".pack") < GRACE_SECONDS:
                continue
            contents = read_through(base + ".pack")
        except (OSError, PackDamaged):
            continue
        if all(store.has_object(sha) for sha in contents.ids):
            removed += unlink_quietly(base + ".pack")
        elif not os.path.exists(base + ".idx"):
            write_index(base, contents)
    return removed
