"""The hashing sync walker: workspace -> tree of entries, hashing only what changed.

One pass visits every folder, prunes ignored folders, and ``lstat``s each file;
a file whose stat matches its stat-cache record (and is not racy) takes its
blob id from the cache without being read, and a folder whose files all match
takes the cache's table of records whole. The rest are hashed, then trees are
built bottom-up; a folder whose entries all came from the cache reuses its
cached tree id. Symlinks are stored as symlinks and never followed; any path
component named ``.git`` is never entered, so a nested repository's files are
recorded but its metadata is not.

This module holds the walk's entry point and its outcome (``Scan``, stats
included); the steps have their own modules, as in gitoxide's ``gix-dir``:
``readdir`` (a folder's contents: listed by ``listing`` or vouched for by
``trust``), ``classify`` (each file against its record), ``hashing`` (blobs
and trees), with ``walkstate`` the context they share.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from snapshotter.engine.collector import collector_paused
from snapshotter.engine.gitstore.objects import EMPTY_TREE
from snapshotter.engine.gitstore.objectwriter import ObjectWriter
from snapshotter.engine.worktree.classify import classify
from snapshotter.engine.worktree.hashing import write_objects
from snapshotter.engine.worktree.hostfs import POSIX, HostFS
from snapshotter.engine.worktree.ignore import IgnoreStack
from snapshotter.engine.worktree.limits import WorkspaceLimits
from snapshotter.engine.worktree.listing import open_folder
from snapshotter.engine.worktree.preload import Preload
from snapshotter.engine.worktree.preloadthread import ThreadPreload
from snapshotter.engine.worktree.readdir import (
    Queued,
    descend,
    forget_gone_subdirs,
    read_folder,
    skips_below,
    take_vouched,
)
from snapshotter.engine.worktree.statcache import Folder, Listings, Record, Shape, StatCache
from snapshotter.engine.worktree.trust import FolderTrust, Prelisting, lasting_shapes
from snapshotter.engine.worktree.unchecked import add_unchecked
from snapshotter.engine.worktree.walkstate import DirNode, Walk, git_mode_of, never
from snapshotter.errors import WorkspaceError
from snapshotter.model import ScanStats, SkippedPath, SkipReason
from snapshotter.options import DEFAULTS, Options

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:  # an annotation only: a walk without a watcher loads no watch code
    from snapshotter.engine.worktree.watch import Changes


@dataclass
class Scan:
    """The tracked state of a workspace at one moment."""

    root: DirNode
    nodes: dict[str, DirNode]
    skipped: list[SkippedPath]
    stats: ScanStats
    listings: Listings
    """Folder -> (digest of rules and listing, ignored names): the next cache's."""
    shapes: dict[str, Shape] = field(default_factory=dict)
    """Folder -> its shape, for the next stat cache (see ``trust``)."""
    line_counts: dict[bytes, int | None] = field(default_factory=dict)
    """Blob id -> text lines (None: binary) for the files hashed by this scan."""
    written: bool = False
    """Its objects are in the store (only such a scan may be recorded or reused)."""
    same_as_cache: bool = False
    """Every record equals the stat cache it was scanned with: saving it again is useless."""
    epoch: int = 0
    """The watch journal's epoch this scan covers (0 without a watcher)."""
    tracked: bytes = b""
    """The checksum of the paths tracked whatever the rules said (see ``IgnoreStack.checksum``)."""
    repositories: tuple[str, ...] = ()
    """Folders holding a nested repository (a ``.git``), found listing or known from before."""
    entries: int = -1
    """Tracked files and folders, as the workspace caps count them (-1: not counted yet)."""
    unchecked: list[str] = field(default_factory=list)
    """Entries kept from the user's index that the working tree does not hold (``unchecked``)."""

    @property
    def tree_id(self) -> bytes:
        return self.root.tree_id if self.root.tree_id is not None else EMPTY_TREE

    def entry(self, path: str) -> tuple[int, bytes] | None:
        """(git mode, blob id) of a tracked file or symlink, or None."""
        folder, _, name = path.rpartition("/")
        node = self.nodes.get(folder)
        record = node.records.get(name) if node is not None else None
        return (git_mode_of(record[0]), record[5]) if record is not None else None

    def tracked_count(self) -> int:
        """How many files and symlinks it tracks."""
        return sum(len(node.records) for node in self.nodes.values())

    def entry_count(self) -> int:
        """How many files, symlinks and folders it tracks: what the workspace caps
        count. A full walk counts them when first asked; an incremental one
        from the previous scan's count and what it walked again."""
        if self.entries < 0:
            self.entries = self.tracked_count() + len(self.nodes)
        return self.entries

    def tracked_paths(self) -> Iterator[str]:
        for path, _ in self.tracked_records():
            yield path

    def tracked_records(self) -> Iterator[tuple[str, Record]]:
        """Every tracked file's path and record, folder by folder (not sorted)."""
        for rel, node in self.nodes.items():
            prefix = rel + "/" if rel else ""
            for name, record in node.records.items():
                yield prefix + name, record

    def kept_as_is(self) -> list[SkippedPath]:
        """What a restore or revert must neither write nor delete: the paths this
        scan saw but could not (or would not) read, and the entries it kept
        from the user's index that the working tree does not hold."""
        kept = [item for item in self.skipped if item.reason is not SkipReason.VANISHED]
        kept.extend(SkippedPath(path, SkipReason.NOT_CHECKED_OUT) for path in self.unchecked)
        return kept

    def unreadable(self) -> list[str]:
        """Files and folders that exist but could not be read: a file the store
        knew is kept as last recorded, the others are not in the snapshot."""
        return [item.path for item in self.skipped if item.reason is SkipReason.UNREADABLE]

    def folder_tables(self) -> dict[str, Folder]:
        """Folder -> its files' records, for the next stat cache."""
        return {rel: node.records for rel, node in self.nodes.items() if node.records}

    def dir_cache(self) -> dict[str, tuple[int, bytes]]:
        """Folder -> (tracked entries, tree id), for the next stat cache."""
        out = {}
        for rel, node in self.nodes.items():
            if node.tree_id is not None:
                extras = len(node.extras) if node.extras else 0
                out[rel] = (len(node.records) + extras + sum(1 for d in node.subdirs if d.tree_id), node.tree_id)
        return out


@dataclass(frozen=True)
class Incremental:
    """Watch mode: re-examine only ``changes`` and reuse the rest of ``previous``."""

    previous: Scan
    changes: Changes


def scan(
    workspace: str,
    ignores: IgnoreStack,
    cache: StatCache,
    writer: ObjectWriter,
    *,
    write: bool,
    options: Options = DEFAULTS,
    progress: Callable[[int, int], None] | None = None,
    host: HostFS = POSIX,
    previous_mode: Callable[[str], int | None] | None = None,
    recorded: Callable[[str], tuple[int, bytes] | None] | None = None,
    incremental: Incremental | None = None,
    prelisting: Prelisting | None = None,
    known_repos: tuple[str, ...] = (),
) -> Scan:
    """Walk ``workspace`` and return its tracked state.

    With ``write`` the blobs and trees are stored; without it ids are only
    computed (for status and dry runs), and the result must not be cached.
    ``options`` gives the size cap for new files, the workspace caps and whether
    folder stats may be trusted (``trust_folder_mtimes``).
    On a ``host`` without exec bits or symlinks a file's mode carries over from
    its stat-cache record, else from ``previous_mode(path)`` (the newest
    snapshot's ``st_mode`` for it), as git's ``core.fileMode``/``core.symlinks`` do.
    With ``incremental`` (watch mode) only the changed folders and the folders
    above them are listed; every other folder is taken from the previous scan
    as it was, so the result equals a full walk's if the changes are complete.
    With ``trust_folder_mtimes`` a folder whose own stat equals its shape in the
    cache is not listed again (see ``trust``); turn it off where folder mtimes lie.
    Under the same trust, a new store's first scan takes the folders that its
    size check listed and that have not changed since (``prelisting``).
    ``known_repos``: the nested repositories the previous scan found (see
    ``Scan.repositories``). ``recorded(path)``: the newest snapshot's (git mode,
    id) at a path, for the files a sparse checkout leaves out (``unchecked``).
    """
    started = time.perf_counter()
    limits = WorkspaceLimits.of(options)
    walk = _begin(workspace, ignores, cache, host, options, limits, incremental, prelisting)
    walk.previous_mode = previous_mode
    line_counts: dict[bytes, int | None] = {}
    with collector_paused():  # what a walk makes is not cyclic garbage (see collector_paused)
        walk.split = options.second_core
        if incremental is None and options.second_core and options.trust_folder_mtimes and not walk.carry_modes:
            walk.preload = ThreadPreload.start(walk.workspace, cache, walk.cutoff) or Preload.start(
                walk.workspace, cache, walk.cutoff
            )
        try:
            _visit_all(walk, [(walk.root, walk.workspace, ignores, incremental is not None)])
        finally:
            if walk.preload is not None:
                walk.preload.stop()
        if incremental is not None:
            walk.skipped.extend(skips_below(incremental.previous.skipped, walk.grafted))
            if limits.max_entries or limits.max_bytes:  # the files about to be hashed count too
                limits.check(walk.workspace, _entries_after(walk, incremental.previous) + len(walk.pending), 0)
        unchecked = add_unchecked(walk, ignores.tracked.absent, recorded) if ignores.tracked is not None else []
        hashed = write_objects(walk, writer, write, line_counts, progress)
        found = _outcome(walk, started, hashed, line_counts, write, incremental)
        found.unchecked = unchecked
    found.tracked = ignores.checksum
    # Nested repositories: those seen in the folders listed now, and those known before in folders not listed.
    kept = [rel for rel in known_repos if rel not in walk.listed and rel in walk.nodes]
    found.repositories = tuple(sorted(set(walk.repos_found + kept)))
    return found


def _begin(
    workspace: str,
    ignores: IgnoreStack,
    cache: StatCache,
    host: HostFS,
    options: Options,
    limits: WorkspaceLimits,
    incremental: Incremental | None,
    prelisting: Prelisting | None,
) -> Walk:
    """A walk's context, before any folder is visited."""
    cutoff = cache.racy_cutoff()
    root = DirNode("", rules=ignores.fingerprint)
    walk = Walk(
        workspace=host.native(workspace),
        root=root,
        cache=cache,
        trust=FolderTrust(cache, cutoff, options.trust_folder_mtimes, ignores.checksum, prelisting),
        host=host,
        carry_modes=host.needs_recorded_modes,
        cutoff=cutoff,
        max_new_file_size=options.new_file_cap,
        sparse_files=options.sparse_files,
        forced=ignores.forced.has if ignores.forced is not None else never,  # tracked whatever their size
    )
    if incremental is None:  # an incremental walk checks the caps once, over the whole result
        walk.limits = limits if limits.max_entries or limits.max_bytes else None
    else:  # start from the previous scan's folders: only what changed is walked again
        before = incremental.previous
        walk.previous_nodes = before.nodes
        walk.nodes = dict(before.nodes)
        walk.listings = dict(before.listings)
        walk.deep = incremental.changes.deep
        walk.on_the_way = incremental.changes.on_the_way()
    walk.nodes[""] = root
    return walk


def _visit_all(walk: Walk, stack: list[Queued]) -> None:
    """Visit each folder queued, and those it queues: its contents, its
    subfolders queued, its files classified (parents before children)."""
    folder_of = walk.cache.folder
    previous_nodes = walk.previous_nodes
    limits = walk.limits
    order = walk.order
    visited = order.append
    root = walk.root
    preload = walk.preload
    entries_seen = 0
    while stack:
        node, path, rules, may_reuse = stack.pop()
        visited(node)
        before = previous_nodes.get(node.rel)
        base = path if path.endswith(os.sep) else path + os.sep
        table = folder_of(node.rel)
        if preload is not None and table:
            if preload.may_hold(len(order) - 1):  # the copy has sent verdicts from here on
                taken = take_vouched(walk, node, base, rules, table, may_reuse, stack)
                if taken >= 0:  # the copy's word, on the stat it saw: nothing to open
                    entries_seen += taken
                    if limits is not None:
                        limits.check(walk.workspace, entries_seen, walk.bytes_seen)
                    if before is not None:
                        forget_gone_subdirs(before, node, walk.nodes, walk.listings, walk.forgotten)
                    continue
            preload.reached(len(order))  # the walk checks this folder itself: the copy can stop short of it
        try:
            fd = open_folder(path, node is root)
        except OSError as exc:
            if node is root:
                raise WorkspaceError(f"cannot list workspace {walk.workspace}: {exc.strerror}") from None
            _unreadable(walk, node, before)
            continue
        try:
            contents = read_folder(walk, node, path, base, rules, fd, table)
            if contents is None:
                _unreadable(walk, node, before)
                continue
            rules, dirs, rescued, pairs, lstat = contents
            node.listed = len(pairs)
            entries_seen += len(dirs) + len(pairs)
            if dirs:
                descend(walk, node, base, rules, dirs, rescued, may_reuse, stack)
            classify(walk, node, base, pairs, lstat, fd, table)
        finally:
            if fd >= 0:
                os.close(fd)
        if limits is not None:
            limits.check(walk.workspace, entries_seen, walk.bytes_seen)
        if before is not None:
            forget_gone_subdirs(before, node, walk.nodes, walk.listings, walk.forgotten)


def _unreadable(walk: Walk, node: DirNode, before: DirNode | None) -> None:
    walk.skipped.append(SkippedPath(node.rel, SkipReason.UNREADABLE))
    node.clean = False
    if before is not None:
        forget_gone_subdirs(before, node, walk.nodes, walk.listings, walk.forgotten)


def _entries_after(walk: Walk, previous: Scan) -> int:
    """An incremental walk's entry count (see ``Scan.entry_count``): the previous
    scan's, less what it had in the folders walked again or gone, plus what
    those folders hold now. Only the folders walked are looked at."""
    count = previous.entry_count()
    before = walk.previous_nodes
    for node in walk.order:
        count += len(node.records) + 1
        old = before.get(node.rel)
        if old is not None:
            count -= len(old.records) + 1
    return count - sum(len(gone.records) + 1 for gone in walk.forgotten)


def _shapes_after(walk: Walk, previous: Scan) -> dict[str, Shape]:
    """An incremental walk's lasting shapes (see ``trust.lasting_shapes``): the
    previous scan's, changed only for the folders walked again or gone."""
    shapes = dict(previous.shapes)
    for gone in walk.forgotten:
        shapes.pop(gone.rel, None)
    for node in walk.order:
        if node.shape and len(node.records) == node.listed:
            shapes[node.rel] = node.shape
        else:
            shapes.pop(node.rel, None)
    return shapes


def _outcome(
    walk: Walk,
    started: float,
    hashed: tuple[int, int],
    line_counts: dict[bytes, int | None],
    write: bool,
    incremental: Incremental | None,
) -> Scan:
    """The walk's result, its stats included; ``same_as_cache`` if a full walk
    found every record, verdict and shape as the stat cache has them."""
    full = incremental is None
    stats = ScanStats(
        files_seen=walk.files_seen,
        files_hashed=hashed[0],
        bytes_hashed=hashed[1],
        dirs_seen=len(walk.order),
        dirs_listed=walk.dirs_listed,
        seconds=time.perf_counter() - started,
        incremental=not full,
        dirs_preloaded=walk.dirs_preloaded,
        files_hashed_forked=walk.hashed_forked,
    )
    skipped = walk.skipped
    skipped.extend(SkippedPath(path, SkipReason.NAME) for path in walk.unsafe_names)
    skipped.sort(key=lambda s: s.path)
    shapes = lasting_shapes(walk.nodes) if incremental is None else _shapes_after(walk, incremental.previous)
    cache = walk.cache
    same = (
        full
        and not walk.pending
        and walk.root.clean
        and walk.shared_tables == cache.folder_count()
        and walk.listing_hits[0] == len(walk.listings) == len(cache.listings)
        and walk.shape_hits == len(shapes) == len(walk.trust.shapes)
        and not walk.trust.tracked_moved
    )
    found = Scan(walk.root, walk.nodes, skipped, stats, walk.listings, shapes, line_counts, write, same)
    if incremental is not None:
        found.entries = _entries_after(walk, incremental.previous)
    return found
