"""Compaction (gc): one pack of everything still referenced, nothing else.

Objects reachable from any ref (snapshots, undo/redo/turn stacks, pins) are
written into a single new pack, then old packs and loose objects are deleted;
extra disk needed: the new pack's size. Snapshots mostly differ by small edits
to the same files, so an older version of a file is stored as a delta against
the next newer version at the same path (newest versions whole, so recent
snapshots read fastest; chains at most ``MAX_DEPTH`` long), with dulwich's
delta encoder and zlib level 6.

Safety beside writers: callers hold the store lock, so no snapshot is half
written while gc runs; and an object no ref reaches is kept while it is younger
than the grace period, in case a writer that does not take the lock is between
writing objects and its ref. Objects known dead (reachable only from snapshots
just pruned, passed as ``dead_roots``) need no grace and go at once. Big blobs
(above the streaming threshold) are never read whole into memory: loose ones
stay loose; a chain pack (a big file's versions as deltas, ``chainpack``)
holding any object still kept stays as it is, and so does any other pack
holding a big object, so no delta chain is ever inflated into full copies.
"""

from __future__ import annotations

import os
import re
import time
import zlib
from collections.abc import Iterable, Iterator
from typing import cast

from dulwich.errors import ApplyDeltaError, ChecksumMismatch

from snapshotter.engine.fsutil import unlink_quietly
from snapshotter.engine.gitstore import bigfacts
from snapshotter.engine.gitstore.inflate import ObjectTooLarge
from snapshotter.engine.gitstore.objects import (
    MODE_LINK,
    MODE_TREE,
    STREAM_THRESHOLD,
    TYPE_NAMES,
    commit_tree,
    parse_tree,
)
from snapshotter.engine.gitstore.packread import StoredEntries
from snapshotter.engine.gitstore.packs import PackBuilder
from snapshotter.engine.gitstore.store import TEMP_NAME, Store
from snapshotter.errors import StoreError

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:  # made by a compaction: the upkeep pass after each change only measures the store
    from snapshotter.model import GcResult

_DAMAGED = (KeyError, ValueError, zlib.error, ApplyDeltaError, ChecksumMismatch, StoreError)
"""What reading a damaged or missing object raises."""

GRACE_SECONDS = 3600.0
MAX_DEPTH = 16
PACK_LEVEL = 6
_LEVEL_CLASS = 2
"""zlib's header class for PACK_LEVEL: a stored stream of this class or more is copied as it is."""
_LOOSE_NAME = re.compile(r"[0-9a-f]{38}")


_NOT_COUNTED = frozenset({"lock", "watch.key", "watch.sock"})
"""Files in the store's own folder that come and go with a process (``snapshotter watch``'s are named in
``frontends/watch/relay.py``)."""


def disk_usage(store: Store) -> int:
    """Bytes used by the store's files (the lock file's holder record, present
    only while someone holds it, and a running watcher's key and socket are not
    counted: sizes must not depend on that)."""
    return store_usage(store)[0]


def store_usage(store: Store) -> tuple[int, int, int]:
    """(bytes on disk as :func:`disk_usage` counts them, loose objects, packs other
    than chain packs), in one walk of the store: each mutating call of a new
    process measures it once, and counting the loose objects in a walk of their
    own stat'ed each of them twice."""
    objects = os.path.join(store.path, "objects")
    pack_dir = os.path.join(objects, "pack")
    total = loose = packs = 0
    folders = [store.path]
    while folders:
        folder = folders.pop()
        fan_out = os.path.dirname(folder) == objects and len(os.path.basename(folder)) == 2
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                    continue
                if folder == store.meta_dir and entry.name in _NOT_COUNTED:
                    continue
                total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
            if fan_out and _LOOSE_NAME.fullmatch(entry.name):
                loose += 1
            elif folder == pack_dir and entry.name.endswith(".pack") and not entry.name.startswith(bigfacts.PREFIX):
                packs += 1  # a chain pack is never merged by consolidation: not among the packs that call it
    return total, loose, packs


def reachable(store: Store, roots: Iterable[bytes]) -> set[bytes]:
    """Every object reachable from ``roots`` (commit ids)."""
    seen: set[bytes] = set()
    trees: list[bytes] = []
    for commit in roots:
        if commit in seen:
            continue
        try:
            kind, content = store.read_raw(commit)
        except (KeyError, ValueError, zlib.error):
            continue  # a dangling ref or a damaged commit keeps nothing alive; verify() reports it
        seen.add(commit)
        root = commit_tree(content) if kind == 1 else None
        if root is not None:
            trees.append(root)
    while trees:
        tree = trees.pop()
        if tree in seen:
            continue
        seen.add(tree)
        try:
            kind, content = store.read_raw(tree)
            entries = parse_tree(content) if kind == 2 else []
        except (KeyError, ValueError, zlib.error):
            continue  # missing, damaged, or not a tree: keeps nothing more alive; verify() reports it
        for _, mode, sha in entries:
            if mode == MODE_TREE:
                trees.append(sha)
            elif mode != 0o160000:
                seen.add(sha)
    return seen


def loose_objects(objects_dir: str) -> Iterator[tuple[bytes, str, os.stat_result]]:
    """(id, path, stat) of every loose object."""
    for fan in os.scandir(objects_dir):
        if len(fan.name) != 2 or not fan.is_dir(follow_symlinks=False):
            continue
        for entry in os.scandir(fan.path):
            if _LOOSE_NAME.fullmatch(entry.name):
                yield bytes.fromhex(fan.name + entry.name), entry.path, entry.stat(follow_symlinks=False)


def collect(
    store: Store, dead_roots: Iterable[bytes] = (), grace_seconds: float = GRACE_SECONDS
) -> tuple[GcResult, set[bytes]]:
    """Compact the store; returns the result and the set of objects kept."""
    started = time.perf_counter()
    before = disk_usage(store)
    now = time.time()
    keep = reachable(store, store.ref_targets())
    dead = reachable(store, dead_roots) - keep
    objects_dir = os.path.join(store.path, "objects")
    pack_dir = os.path.join(objects_dir, "pack")
    loose = {sha: (path, st) for sha, path, st in loose_objects(objects_dir)}
    packs: list[str] = []
    packed_age: dict[bytes, float] = {}
    for base in store.packs.bases(again=True):
        index = store.packs.index(base)  # checked; rebuilt from its pack if damaged
        if index is None:
            continue  # a pack that cannot be read is left as it is, for verify() to report
        packs.append(base)
        age = now - os.path.getmtime(base + ".pack")
        for sha in index.ids():
            packed_age[sha] = min(age, packed_age.get(sha, age))
    in_grace = {sha for sha, age in packed_age.items() if age < grace_seconds and sha not in keep}
    in_grace |= {sha for sha, (_, st) in loose.items() if now - st.st_mtime < grace_seconds and sha not in keep}
    in_grace -= dead
    stay_loose = {sha for sha in keep | in_grace if sha in loose and (store.loose_size(sha) or 0) > STREAM_THRESHOLD}
    kept_packs = _chains_kept(store, packs, keep | in_grace)
    stay_packed = {sha for base in kept_packs for sha in _ids(store, base)}
    to_pack = (keep | {sha for sha in in_grace if sha in packed_age}) - stay_loose - stay_packed
    stored = StoredEntries(packs, store.packs.index)
    unreadable: set[bytes] = set()
    try:
        bases = _delta_bases(store, to_pack)
        new_base = _write_pack(store, pack_dir, to_pack, bases, stored, unreadable, kept_packs) if to_pack else None
    finally:
        stored.close()
    holding_damage = {base for base in packs if any(_holds(store, base, sha) for sha in unreadable)}
    old_bases = [base for base in packs if base != new_base and base not in holding_damage | kept_packs]
    store.release_packs()  # close the packs before deleting them
    for base in old_bases:
        for suffix in (".idx", ".pack", ".rev", ".bitmap", ".keep"):
            _remove(base + suffix)
    packed_now = set(to_pack) - unreadable
    for sha, (path, _) in loose.items():
        if sha in packed_now or (sha not in keep and sha not in in_grace):
            _remove(path)
    temps = _remove_stale_temps(store.path, now, grace_seconds)
    for blob in store.big.signatures.held():  # a version no longer kept is never a delta's base again
        if blob not in keep and blob not in in_grace:
            store.big.signatures.drop(blob)
    _drop_states_of_gone_packs(store.big.states, pack_dir)
    present_before = set(loose) | set(packed_age)
    from snapshotter.model import GcResult

    result = GcResult(
        objects_kept=len(keep),
        objects_removed=len(present_before - keep - in_grace),
        packs_removed=len(old_bases),
        temp_files_removed=temps,
        bytes_before=before,
        bytes_after=disk_usage(store),
        seconds=time.perf_counter() - started,
    )
    return result, keep | in_grace


def _chains_kept(store: Store, packs: list[str], kept: set[bytes]) -> set[str]:
    """The chain packs holding an object still kept: they stay as they are (a
    chain is never inflated into full copies; a version whose snapshot went,
    the key frame included, stays the base of the versions after it)."""
    return {base for base in packs if bigfacts.is_chain(base) and any(sha in kept for sha in _ids(store, base))}


def _ids(store: Store, base: str) -> list[bytes]:
    try:
        index = store.packs.index(base)
    except OSError:
        return []
    return index.ids() if index is not None else []


def _drop_states_of_gone_packs(states: str, pack_dir: str) -> None:
    """The kept SHA-1 states of chain packs deleted (see ``chainpack``)."""
    try:
        names = os.listdir(states)
    except OSError:
        return
    for name in names:
        if name.startswith(bigfacts.PREFIX) and not os.path.exists(os.path.join(pack_dir, name + ".pack")):
            unlink_quietly(os.path.join(states, name))


def _holds(store: Store, base: str, sha: bytes) -> bool:
    try:
        index = store.packs.index(base)
    except OSError:
        return False
    return index is not None and index.offset(sha) is not None


def _delta_bases(store: Store, candidates: set[bytes]) -> dict[bytes, bytes]:
    """Older object -> the next newer object at the same path (files and folders alike),
    over consecutive snapshots, visiting only folders that differ."""
    bases: dict[bytes, bytes] = {}
    roots = []
    for _, commit in store.iter_snapshot_ids():  # newest first
        try:
            kind, content = store.read_raw(commit)
        except (KeyError, ValueError, zlib.error):
            continue  # damaged: its objects get no delta base, nothing worse
        root = commit_tree(content) if kind == 1 else None
        if root is not None:
            roots.append(root)

    def note(target: bytes, base: bytes) -> None:
        if base == target or target in bases or base not in candidates or target not in candidates:
            return
        link, steps = base, 0
        while link in bases and steps <= 4 * MAX_DEPTH:  # content can come back (undo): no cycles
            link, steps = bases[link], steps + 1
            if link == target:
                return
        bases[target] = base

    parsed: dict[bytes, dict[bytes, tuple[int, bytes]]] = {}

    def entries(tree: bytes) -> dict[bytes, tuple[int, bytes]]:
        """A tree's entries by name; each tree is the newer side of one pair and the older of the next."""
        found = parsed.get(tree)
        if found is None:
            try:
                kind, content = store.read_raw(tree)
                listed = parse_tree(content) if kind == 2 else []
            except (KeyError, ValueError, zlib.error):
                listed = []  # missing, damaged or not a tree: nothing to pair up below it
            found = parsed[tree] = {name: (mode, sha) for name, mode, sha in listed}
        return found

    for newer_root, older_root in zip(roots, roots[1:]):
        stack = [(newer_root, older_root)]
        while stack:
            newer, older = stack.pop()
            if newer == older:
                continue
            note(older, newer)
            newer_entries = entries(newer)
            for name, (mode, sha) in entries(older).items():
                match_entry = newer_entries.get(name)
                if match_entry is None or match_entry[0] != mode or mode == MODE_LINK:
                    continue
                if mode == MODE_TREE:
                    stack.append((match_entry[1], sha))
                else:
                    note(sha, match_entry[1])
    return bases


def _write_pack(
    store: Store,
    pack_dir: str,
    objects: set[bytes],
    bases: dict[bytes, bytes],
    stored: StoredEntries,
    unreadable: set[bytes],
    kept_packs: set[str],
) -> str | None:
    """Write ``objects`` into one pack, bases before their deltas; returns its path.

    An entry an earlier gc already wrote as this one would (whole at zlib 6 or
    more, or a delta against the same base) is copied as stored, CRC-checked:
    neither inflated, nor deflated, nor diffed again, as git's repack reuses them.
    An object above the streaming threshold found in a pack (a delta chain
    fetched from a remote, a pack written by another tool) stays where it is,
    and its pack is added to ``kept_packs``: never inflated, never held whole;
    an object whose base stayed there is stored whole.
    An object that cannot be read is left out and added to ``unreadable``: it
    stays where it is, and one damaged object never stops the compaction.
    """
    depth: dict[bytes, int] = {}

    def depth_of(sha: bytes) -> int:
        chain = []
        while sha in bases and sha not in depth:
            chain.append(sha)
            sha = bases[sha]
        level = depth.get(sha, 0)
        for item in reversed(chain):
            level = 0 if level + 1 > MAX_DEPTH else level + 1
            depth[item] = level
        return depth.get(chain[0], level) if chain else level

    order = sorted(objects, key=lambda sha: (depth_of(sha), sha))
    builder = PackBuilder(pack_dir, level=PACK_LEVEL)
    try:
        for sha in order:
            base = bases.get(sha) if depth.get(sha, 0) > 0 else None
            if base is not None and base not in builder:
                base = None  # it went loose (too big to pack)
            try:
                entry = stored.get(sha, STREAM_THRESHOLD)
                if entry is not None and entry.base == base and (base is not None or entry.level >= _LEVEL_CLASS):
                    builder.add_stored(sha, entry.kind, entry.size, entry.data, base)
                    continue
                kind, content = store.read_raw(sha, STREAM_THRESHOLD)
            except ObjectTooLarge:
                found = store.packs.locate(sha, relist=False)
                if found is not None:
                    kept_packs.add(found[0])
                continue
            except _DAMAGED:
                unreadable.add(sha)
                continue
            try:
                base_content = store.read_raw(base)[1] if base is not None else b""
            except _DAMAGED:
                base = None
            if base is not None and _worth_a_delta(base_content, content):
                pieces: object = create_delta(base_content, content)
                delta = pieces if isinstance(pieces, bytes) else b"".join(cast(Iterable[bytes], pieces))
                if len(delta) < len(content) // 2:
                    builder.add_delta(sha, base, delta)
                    continue
            builder.add(TYPE_NAMES[kind], sha, content)
    except BaseException:
        builder.abort()
        raise
    return builder.finish()


_PROBES = 16
_PROBE_SIZE = 32


def create_delta(base: bytes, target: bytes) -> object:
    """dulwich's delta of ``target`` against ``base`` (bytes, or pieces of them), loaded
    at the first delta: it comes with most of dulwich, and the pass after each change
    only measures the store."""
    from dulwich.pack import create_delta as delta_of

    return delta_of(base, target)


def _worth_a_delta(base: bytes, content: bytes) -> bool:
    """Whether ``content`` shares enough with ``base`` to try a delta: a few
    evenly spaced 32-byte pieces of it must occur in ``base``. dulwich's
    create_delta takes ~0.5 s on 100 kB of unrelated (e.g. random) data,
    and its result would be refused anyway."""
    if len(content) < 4096:
        return True
    step = (len(content) - _PROBE_SIZE) // (_PROBES - 1)
    found = sum(1 for i in range(_PROBES) if content[i * step : i * step + _PROBE_SIZE] in base)
    return found >= _PROBES // 4


def _remove(path: str) -> int:
    try:
        os.unlink(path)
        return 1
    except FileNotFoundError:
        return 0


def _remove_stale_temps(root: str, now: float, grace_seconds: float) -> int:
    """Leftovers of crashed writers: temp objects, packs, indexes, caches, locks."""
    removed = 0
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            if not (TEMP_NAME.match(name) or name.endswith(".lock")):
                continue
            path = os.path.join(dirpath, name)
            try:
                if now - os.lstat(path).st_mtime >= grace_seconds:
                    removed += _remove(path)
            except OSError:
                continue
    return removed
