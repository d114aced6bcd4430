"""The hashing sync walker: workspace -> tree of entries, hashing only what changed.

One pass lists every folder (``listing.py``), prunes ignored folders, and
``lstat``s each file; a file whose stat matches its stat-cache record (and is not
racy) takes its blob id from the cache without being read, and a folder whose
files all match takes the cache's table of records whole. The rest are hashed
(big files on worker threads: hashlib and zlib release the GIL), then trees are
built bottom-up; a folder whose entries all came from the cache reuses its
cached tree id. Symlinks are stored as symlinks and never followed; any path component
named ``.git`` is never entered, so a nested repository's files are recorded but
its metadata is not.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from snapshotter.errors import WorkspaceError
from snapshotter.fsutil import USE_CTIME, StatKey
from snapshotter.gitstore.objects import (
    EMPTY_TREE,
    MODE_TREE,
    FileChanged,
    Hashed,
    ObjectWriter,
    describe_lines,
    git_mode,
    object_id,
    serialize_tree,
)
from snapshotter.model import ScanStats, SkippedPath, SkipReason
from snapshotter.worktree.hostfs import POSIX, HostFS
from snapshotter.worktree.ignore import IgnoreStack
from snapshotter.worktree.limits import WorkspaceLimits, stored_size
from snapshotter.worktree.listing import (
    Prelisting,
    has_gitignore,
    list_folder,
    open_folder,
    own_rules,
    shape_of,
    tracked_entries,
    unchanged_folder,
)
from snapshotter.worktree.statcache import Folder, Listings, Record, Shape, StatCache
from snapshotter.worktree.watch import Changes

_THREAD_MIN_SIZE = 1 << 20
_PACK_THRESHOLD = 64
"""From this many files to hash, or folders changed, on, new objects go to one pack, not loose files."""
_WORKERS = 4


@dataclass(eq=False)
class DirNode:
    """One folder of the scan: its tracked files and subfolders."""

    rel: str
    records: Folder = field(default_factory=dict)
    """Its tracked files by name (stat key, blob id); a folder that matched the
    stat cache shares the cache's table, so it is never changed in place."""
    subdirs: list[DirNode] = field(default_factory=list)
    clean: bool = True
    """Every entry came from the stat cache; after tree building: same tree id as cached."""
    tree_id: bytes | None = None
    """None for a folder with nothing tracked (git stores no empty folders)."""
    rules: bytes = b""
    """Fingerprint of the ignore rules this folder inherited: an incremental scan
    reuses the folder only under the same rules."""
    shape: Shape | None = None
    """The folder as listed (or as trusted unchanged), see ``statcache.Shape``."""
    listed: int = -1
    """How many tracked files it listed: its shape holds only if each has a record."""


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
    """Folder -> its shape, for the next stat cache (see ``statcache.Shape``)."""
    line_counts: dict[bytes, int | None] = field(default_factory=dict)
    """Blob id -> text lines (None: binary) for the files hashed by this scan."""
    leftovers: list[str] = field(default_factory=list)
    """Temporary files of a killed restore, found (and not tracked) by this scan."""
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

    def tracked_paths(self) -> Iterator[str]:
        for path, _ in self.tracked_records():
            yield path

    def tracked_records(self) -> Iterator[tuple[str, Record]]:
        """Every tracked file's path and record, folder by folder (not sorted)."""
        for rel, node in self.nodes.items():
            prefix = rel + "/" if rel else ""
            for name, record in node.records.items():
                yield prefix + name, record

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
                out[rel] = (len(node.records) + sum(1 for d in node.subdirs if d.tree_id), node.tree_id)
        return out


@dataclass(frozen=True)
class Incremental:
    """Watch mode: re-examine only ``changes`` and reuse the rest of ``previous``."""

    previous: Scan
    changes: Changes


@dataclass
class _Pending:
    node: DirNode
    name: str
    rel: str
    path: str
    is_link: bool
    lstat_key: StatKey
    recorded: int | None
    """The st_mode recorded for this path before, on hosts that need it (see hostfs)."""
    record: Record | None
    """Its stat-cache record: not in the cache (None), over ``max_new_file_size``
    it is skipped, not tracked; unreadable now, it is kept as last recorded."""

    @property
    def new(self) -> bool:
        return self.record is None


_S_IFMT = 0o170000
_S_IFREG = 0o100000
_S_IFLNK = 0o120000
_GIT_MODES: dict[int, int] = {}


def _never(path: str) -> bool:
    return False


def git_mode_of(st_mode: int) -> int:
    """objects.git_mode, remembered per st_mode (it runs for every tracked file)."""
    mode = _GIT_MODES.get(st_mode)
    if mode is None:
        mode = _GIT_MODES[st_mode] = git_mode(st_mode)
    return mode


def scan(
    workspace: str,
    ignores: IgnoreStack,
    cache: StatCache,
    writer: ObjectWriter,
    *,
    write: bool,
    max_new_file_size: int,
    limits: WorkspaceLimits | None = None,
    progress: Callable[[int, int], None] | None = None,
    host: HostFS = POSIX,
    previous_mode: Callable[[str], int | None] | None = None,
    incremental: Incremental | None = None,
    trust_folders: bool = True,
    prelisting: Prelisting | None = None,
    known_repos: tuple[str, ...] = (),
) -> Scan:
    """Walk ``workspace`` and return its tracked state.

    With ``write`` the blobs and trees are stored; without it ids are only
    computed (for status and dry runs), and the result must not be cached.
    On a ``host`` without exec bits or symlinks a file's mode carries over from
    its stat-cache record, else from ``previous_mode(path)`` (the newest
    snapshot's ``st_mode`` for it), as git's ``core.fileMode``/``core.symlinks`` do.
    With ``incremental`` (watch mode) only the changed folders and the folders
    above them are listed; every other folder is taken from the previous scan
    as it was, so the result equals a full walk's if the changes are complete.
    With ``trust_folders`` a folder whose own stat equals its shape in the cache is
    not listed again (see ``statcache``); turn it off where folder mtimes lie.
    Under the same trust, a new store's first scan takes the folders that its
    size check listed and that have not changed since (``prelisting``).
    ``known_repos``: the nested repositories the previous scan found (see
    ``Scan.repositories``).
    """
    started = time.perf_counter()
    walk_began_ns = time.time_ns()  # the filesystem's clock, for local filesystems
    cutoff = cache.racy_cutoff()
    root = DirNode("", rules=ignores.fingerprint)
    order: list[DirNode] = []
    skipped: list[SkippedPath] = []
    pending: list[_Pending] = []
    leftovers: list[str] = []
    unsafe_names: list[str] = []
    repos_found: list[str] = []
    listed: set[str] = set()
    grafted: list[DirNode] = []
    if incremental is not None:
        before = incremental.previous
        previous_nodes = before.nodes
        nodes = dict(before.nodes)
        listings = dict(before.listings)
        deep = incremental.changes.deep
        on_the_way = incremental.changes.on_the_way()
    else:
        previous_nodes = {}
        nodes = {}
        listings = {}
        deep = on_the_way = frozenset()
    nodes[""] = root
    files_seen = 0
    entries_seen = 0
    bytes_seen = 0
    listing_hits = [0]
    shared_tables = 0
    check_caps = limits is not None and (limits.max_entries or limits.max_bytes) and incremental is None
    carry_modes = host.needs_recorded_modes
    workspace = host.native(workspace)
    forced_here = ignores.forced.has if ignores.forced is not None else _never  # tracked whatever their size
    tracked_moved = cache.tracked != ignores.checksum  # the git index changed: folders it may rescue from are relisted

    shapes_known = cache.shapes if trust_folders else {}
    shape_hits = 0
    dirs_listed = 0
    stack: list[tuple[DirNode, str, IgnoreStack, bool]] = [(root, workspace, ignores, incremental is not None)]
    while stack:
        node, path, rules, may_reuse = stack.pop()
        order.append(node)
        before_node = previous_nodes.get(node.rel)
        try:
            fd = open_folder(path, node is root)
        except OSError as exc:
            if node is root:
                raise WorkspaceError(f"cannot list workspace {workspace}: {exc.strerror}") from None
            skipped.append(SkippedPath(node.rel, SkipReason.UNREADABLE))
            node.clean = False
            if before_node is not None:
                _forget_gone_subdirs(before_node, node, nodes, listings)
            continue
        try:
            base = path if path.endswith(os.sep) else path + os.sep
            prefix = node.rel + "/" if node.rel else ""
            table = cache.folder(node.rel)
            own = os.fstat(fd) if fd >= 0 and trust_folders else None
            pairs: Collection[tuple[str, Record | None]] | None = None  # each tracked file, and its record if any
            known_listing = cache.listings.get(node.rel)
            rescued: set[str] = set()  # subfolders the rules ignore but tracked paths lie below
            if own is not None and known_listing is not None and not (tracked_moved and known_listing[1]):
                shape = shapes_known.get(node.rel)
                inner = unchanged_folder(own, shape, cutoff, rules, node.rel, base)
                if inner is not None and shape is not None:  # the table's names are its files: no listing
                    rules = inner
                    dirs: list[str] = list(shape[5])
                    if known_listing[1]:
                        rescued.update(name for name in dirs if name in known_listing[1])
                    pairs = table.items()
                    listings[node.rel] = cache.listings[node.rel]
                    listing_hits[0] += 1
                    shape_hits += 1
                    node.shape = shape
                    lstat = _lstat_in(fd, [])
            if pairs is None:
                dirs_listed += 1
                listed_at = walk_began_ns  # a shape from a listing must have settled by the listing's walk
                known = None
                if prelisting is not None and own is not None:
                    known = prelisting.take(node.rel, own)
                    if known is not None:
                        listed_at = prelisting.began_ns
                try:
                    entries = known.entries if known is not None else list_folder(path, fd)
                except OSError:
                    skipped.append(SkippedPath(node.rel, SkipReason.UNREADABLE))
                    node.clean = False
                    if before_node is not None:
                        _forget_gone_subdirs(before_node, node, nodes, listings)
                    continue
                gitignore = has_gitignore(entries)
                rules = own_rules(rules, gitignore, node.rel, base)
                leftovers_before = len(leftovers)
                dirs, files = tracked_entries(
                    entries,
                    node.rel,
                    rules,
                    cache.listings,
                    listings,
                    leftovers,
                    listing_hits,
                    unsafe_names,
                    rescued,
                    repos_found,
                )
                listed.add(node.rel)
                table_get = table.get
                pairs = [(entry.name, table_get(entry.name)) for entry in files]
                if own is not None and len(leftovers) == leftovers_before:  # a leftover is yet to be removed
                    node.shape = shape_of(own, rules, gitignore, dirs, listed_at)
                lstat = _lstat_in(fd, files) if known is None else _lstat_known(known.stats)
            node.listed = len(pairs)
            fingerprint = rules.fingerprint
            entries_seen += len(dirs) + len(pairs)
            for name in dirs:
                rel = prefix + name
                if may_reuse and rel not in on_the_way and rel not in deep:
                    old = previous_nodes.get(rel)
                    if old is not None and old.rules == fingerprint:
                        node.subdirs.append(old)
                        grafted.append(old)
                        continue
                child = DirNode(rel, rules=fingerprint)
                node.subdirs.append(child)
                nodes[rel] = child
                inner = rules.inside(rel) if name in rescued else rules
                stack.append((child, base + name, inner, may_reuse and rel not in deep))
            hits = 0
            missed: list[str] = []
            specials: list[str] = []
            # The hot loop: one lstat per file; a file that matches its record
            # costs a few comparisons and nothing else (no tuple, no call, no
            # insertion): a folder whose files all match shares the cache's table.
            for name, record in pairs:
                try:
                    st = lstat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    skipped.append(SkippedPath(prefix + name, SkipReason.VANISHED))
                    missed.append(name)
                    continue
                if (
                    record is not None
                    and not carry_modes
                    and record[2] == st.st_mtime_ns
                    and record[2] < cutoff
                    and record[1] == st.st_size
                    and record[0] == st.st_mode
                    and record[4] == st.st_ino
                    and (record[3] == st.st_ctime_ns or not USE_CTIME)
                ):  # the record's kind is a file or symlink: no need to test st_mode's
                    hits += 1
                    bytes_seen += record[1]
                    continue
                st_mode = st.st_mode
                rel = prefix + name
                kind = st_mode & _S_IFMT
                if kind != _S_IFREG and kind != _S_IFLNK:
                    skipped.append(SkippedPath(rel, SkipReason.SPECIAL))
                    specials.append(name)
                    continue
                files_seen += 1
                bytes_seen += stored_size(st)
                key = (st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns if USE_CTIME else 0, st.st_ino)
                recorded = None
                if carry_modes:
                    recorded = record[0] if record is not None else previous_mode(rel) if previous_mode else None
                    st_mode = host.effective_mode(st_mode, recorded)
                    key = (st_mode, *key[1:])
                    if record is not None and record[:5] == key and st.st_mtime_ns < cutoff:
                        files_seen -= 1
                        hits += 1
                        continue
                missed.append(name)
                is_link = kind == _S_IFLNK  # a real symlink: read its target, never follow it
                if record is None and not is_link and st.st_size > max_new_file_size and not forced_here(rel):
                    skipped.append(SkippedPath(rel, SkipReason.TOO_LARGE))
                    bytes_seen -= stored_size(st)  # left out: it counts toward no cap
                    continue
                pending.append(_Pending(node, name, rel, base + name, is_link, key, recorded, record))
            files_seen += hits
            if not missed and hits == len(table):
                node.records = table
                shared_tables += bool(table)
            else:
                node.clean = False
                gone = set(missed + specials)
                node.records = {name: record for name, record in pairs if record is not None and name not in gone}
        finally:
            if fd >= 0:
                os.close(fd)
        if check_caps and limits is not None:
            limits.check(workspace, entries_seen, bytes_seen)
        if before_node is not None:
            _forget_gone_subdirs(before_node, node, nodes, listings)

    if incremental is not None:
        skipped.extend(_skips_below(incremental.previous.skipped, grafted))
        if limits is not None:
            limits.check(workspace, sum(len(n.records) for n in nodes.values()) + len(nodes), 0)
    line_counts: dict[bytes, int | None] = {}
    changed_folders = sum(1 for node in order if not node.clean)  # each needs a new tree, and so do its parents
    many = len(pending) >= _PACK_THRESHOLD or changed_folders >= _PACK_THRESHOLD
    batch = writer.batch() if write and many else contextlib.nullcontext()
    with batch:
        hashed, bytes_hashed = _hash_pending(
            pending, writer, write, skipped, line_counts, progress, host, max_new_file_size, forced_here
        )
        _build_trees(order, cache, writer, write)
    stats = ScanStats(
        files_seen=files_seen,
        files_hashed=hashed,
        bytes_hashed=bytes_hashed,
        dirs_seen=len(order),
        dirs_listed=dirs_listed,
        seconds=time.perf_counter() - started,
        incremental=incremental is not None,
    )
    skipped.extend(SkippedPath(path, SkipReason.NAME) for path in unsafe_names)
    skipped.sort(key=lambda s: s.path)
    # A shape holds only while its folder's table has a record for every file listed.
    shapes = {rel: node.shape for rel, node in nodes.items() if node.shape and len(node.records) == node.listed}
    same = (
        incremental is None
        and not pending
        and root.clean
        and shared_tables == len(cache.folders)
        and listing_hits[0] == len(listings) == len(cache.listings)
        and shape_hits == len(shapes) == len(shapes_known)
    )
    same = same and not tracked_moved
    found = Scan(root, nodes, skipped, stats, listings, shapes, line_counts, leftovers, write, same)
    found.tracked = ignores.checksum
    # Nested repositories: those seen in the folders listed now, and those known before in folders not listed.
    kept = [rel for rel in known_repos if rel not in listed and rel in nodes]
    found.repositories = tuple(sorted(set(repos_found + kept)))
    return found


def _lstat_known(stats: dict[str, os.stat_result]) -> Callable[..., os.stat_result]:
    """``os.stat`` answered from the size check's stats where it took one. Those
    only say which files are there and their kind: each file is read afresh
    when hashed, its record taken then, and its size checked again."""

    def known(name: str, dir_fd: int, follow_symlinks: bool) -> os.stat_result:
        found = stats.get(name)
        return found if found is not None else os.stat(name, dir_fd=dir_fd, follow_symlinks=follow_symlinks)

    return known


def _lstat_in(fd: int, entries: list[os.DirEntry[str]]) -> Callable[..., os.stat_result]:
    """``os.stat``, for a folder open as ``fd`` (called with ``dir_fd``; a partial
    costs 10% more per file), else a lookup in its listing's ``entries`` (on
    Windows the listing carries every entry's stat for free)."""
    if fd >= 0:
        return os.stat
    by_name = {entry.name: entry for entry in entries}

    def from_listing(name: str, dir_fd: int, follow_symlinks: bool) -> os.stat_result:
        return by_name[name].stat(follow_symlinks=follow_symlinks)

    return from_listing


def _forget_gone_subdirs(
    before: DirNode,
    now: DirNode,
    nodes: dict[str, DirNode],
    listings: Listings,
) -> None:
    """Drop what an incremental scan copied from subfolders that are no longer there
    (deleted, ignored now, or turned into a file)."""
    present = {sub.rel for sub in now.subdirs}
    stack = [sub for sub in before.subdirs if sub.rel not in present]
    while stack:
        gone = stack.pop()
        if nodes.get(gone.rel) is gone:
            del nodes[gone.rel]
        listings.pop(gone.rel, None)
        stack.extend(gone.subdirs)


def _skips_below(skipped: list[SkippedPath], grafted: list[DirNode]) -> Iterator[SkippedPath]:
    """The previous scan's skipped paths inside the folders an incremental scan reused."""
    reused = {node.rel for node in grafted}
    for item in skipped:
        path = item.path
        while path:
            if path in reused:
                yield item
                break
            path = path.rpartition("/")[0]


def _hash_one(item: _Pending, writer: ObjectWriter, write: bool) -> Hashed:
    if item.is_link:
        target = os.fsencode(os.readlink(item.path))
        sha = writer.write(b"blob", target) if write else object_id(b"blob", target)
        return Hashed(sha, item.lstat_key, len(target), describe_lines(target))
    return writer.hash_file(item.path, write)


def _skip_reason(exc: BaseException) -> SkipReason:
    if isinstance(exc, FileChanged):
        return SkipReason.CHANGING
    if isinstance(exc, OSError) and exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EISDIR):
        return SkipReason.VANISHED
    return SkipReason.UNREADABLE


def _hash_pending(
    pending: list[_Pending],
    writer: ObjectWriter,
    write: bool,
    skipped: list[SkippedPath],
    line_counts: dict[bytes, int | None],
    progress: Callable[[int, int], None] | None,
    host: HostFS,
    max_new_file_size: int,
    forced: Callable[[str], bool] = lambda path: False,
) -> tuple[int, int]:
    def run(item: _Pending) -> Hashed | BaseException:
        try:
            return _hash_one(item, writer, write)
        except (OSError, FileChanged) as exc:  # the workspace file; store failures are StoreError
            return exc

    # Threads pay only for big files: for small ones the GIL hand-offs cost
    # more than hashing and compressing (measured: 2x slower on 2 cores).
    results: Iterator[Hashed | BaseException]
    big = [item for item in pending if item.lstat_key[1] >= _THREAD_MIN_SIZE]
    pool = None
    if len(big) >= 2:
        pool = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="snapshotter-hash")
        futures = {id(item): pool.submit(run, item) for item in big}
        results = (futures[id(item)].result() if id(item) in futures else run(item) for item in pending)
    else:
        results = map(run, pending)
    hashed = 0
    total = 0
    try:
        for item, result in zip(pending, results):
            if isinstance(result, BaseException):
                reason = _skip_reason(result)
                skipped.append(SkippedPath(item.rel, reason))
                if reason is SkipReason.UNREADABLE and item.record is not None:
                    item.node.records[item.name] = item.record  # kept as last recorded, never dropped
                continue
            # A new file that grew past the cap since its lstat; forced paths are tracked whatever their size.
            if item.new and not item.is_link and result.size > max_new_file_size and not forced(item.rel):
                skipped.append(SkippedPath(item.rel, SkipReason.TOO_LARGE))
                continue
            key = result.key
            if host.needs_recorded_modes:
                key = (host.effective_mode(key[0], item.recorded), *key[1:])
            item.node.records[item.name] = (*key, result.sha)
            line_counts[result.sha] = result.lines
            hashed += 1
            total += result.size
            if progress is not None:
                progress(hashed, len(pending))
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return hashed, total


def _build_trees(order: list[DirNode], cache: StatCache, writer: ObjectWriter, write: bool) -> None:
    """Give every folder its tree id, children before parents."""
    cached_dirs = cache.dirs
    for node in reversed(order):
        count = len(node.records)
        clean = node.clean
        for sub in node.subdirs:
            if sub.tree_id is not None:
                count += 1
            clean = clean and sub.clean
        record = cached_dirs.get(node.rel)
        # "clean" must mean "same tree id as cached", or a parent would reuse a
        # stale id for a folder whose entries were all hits but one went away.
        if count == 0:  # nothing tracked: contributes no entry, so the parent's count decides
            node.tree_id = None
            continue
        node.clean = clean = clean and record is not None and record[0] == count
        if clean and record is not None:
            node.tree_id = record[1]
            continue
        entries = [(os.fsencode(name), git_mode_of(record[0]), record[5]) for name, record in node.records.items()]
        entries.extend(
            (os.fsencode(sub.rel.rpartition("/")[2]), MODE_TREE, sub.tree_id)
            for sub in node.subdirs
            if sub.tree_id is not None
        )
        content = serialize_tree(entries)
        node.tree_id = writer.write(b"tree", content) if write else object_id(b"tree", content)
