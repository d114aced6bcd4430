"""One opened workspace and its store: scan, record, restore, compare.

The engine holds no policy: no error mode, no undo stacks. The public
:class:`~snapshotter.Snapshotter` adds those, and swaps engines when it is
re-rooted.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timezone

from dulwich import errors as dulwich_errors
from dulwich.file import FileLocked

from snapshotter.compare.diff import ContentLoader, file_diff, status_of, unreadable_diff
from snapshotter.compare.treediff import (
    MAX_ENTRIES_READ,
    Change,
    Comparison,
    RecordedModes,
    ScannedTree,
    StoredTree,
    TreeSide,
    changes,
    entry_at,
    path_in_tree,
)
from snapshotter.errors import (
    OVERWRITE_UNTRACKED,
    VERIFY,
    PathNotFound,
    RestoreConflict,
    SnapshotError,
    StoreError,
    StoreLocked,
    WorkspaceError,
    what_to_check,
)
from snapshotter.gitstore import trailers
from snapshotter.gitstore.catalog import Catalog
from snapshotter.gitstore.inflate import ObjectTooLarge
from snapshotter.gitstore.locking import StoreLock
from snapshotter.gitstore.objects import EMPTY_TREE, MODE_LINK, STREAM_THRESHOLD
from snapshotter.gitstore.store import Store
from snapshotter.model import ChangeStatus, FileChange, FileDiff, RestoreResult, ScanStats, SkippedPath, SnapshotInfo
from snapshotter.session.checkout import (
    SAVEABLE,
    Plan,
    apply_plan,
    make_plan,
    normalize_selection,
    selection_filter,
    untracked_in_the_way,
)
from snapshotter.worktree import hostfs, statcache
from snapshotter.worktree.fsops import Workspace
from snapshotter.worktree.gitrepo import TrackedPaths, UserRepository, find_repository, tracked_paths
from snapshotter.worktree.ignore import root_stack
from snapshotter.worktree.limits import WorkspaceLimits
from snapshotter.worktree.pathnames import NameCheck, names_checker
from snapshotter.worktree.trust import Prelisting
from snapshotter.worktree.walker import Incremental, Scan, scan
from snapshotter.worktree.walkstate import git_mode_of
from snapshotter.worktree.watch import ChangeJournal

PRE_RESTORE_LABEL = "pre-restore"
PAUSE_WATCH_AT = 1000
"""A restore changing this many files or more pauses watch mode while it writes."""
_NESTED = "nested-repositories"
"""Folders below the workspace holding a repository of their own, one per line."""
KEEP_BLOBS_BYTES = 64 << 20
"""A restore keeps the blobs its safety snapshot read for line counts, up to this
many bytes, for its writes: most often the state it replaces was last compared
with the very snapshot it restores, so each blob would be read twice."""
_STORE_FAILURES: tuple[type[Exception], ...] = (
    dulwich_errors.ApplyDeltaError,
    dulwich_errors.ChecksumMismatch,
    dulwich_errors.FileFormatException,
    dulwich_errors.NotGitRepository,
    dulwich_errors.ObjectMissing,
    dulwich_errors.WrongObjectException,
    zlib.error,
)
"""What a damaged store raises from below; reported as StoreError."""


class Engine:
    """Snapshots of one canonical workspace in one opened store."""

    def __init__(
        self,
        workspace: str,
        store: Store,
        *,
        exclude: tuple[str, ...],
        use_default_excludes: bool,
        max_new_file_size: int,
        lock_timeout: float,
        limits: WorkspaceLimits | None = None,
        watch: bool = False,
        listings: statcache.Listings | None = None,
        trust_folder_mtimes: bool = True,
        prelisting: Prelisting | None = None,
    ) -> None:
        self.workspace = workspace
        self.store = store
        self.host = hostfs.detect(workspace)
        """What the workspace's filesystem can do (exec bits, symlinks, case...)."""
        self.catalog = Catalog(store)
        self.lock = StoreLock(os.path.join(store.meta_dir, "lock"), lock_timeout, on_recover=store.recover)
        self.last_scan = ScanStats()
        self._exclude = exclude
        self._use_default_excludes = use_default_excludes
        self._max_new_file_size = max_new_file_size
        self._trust_folder_mtimes = trust_folder_mtimes
        self.limits = limits
        self.clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
        """When a snapshot is taken; tests move it to make old snapshots."""
        self.progress: Callable[[str, int, int], None] | None = None
        """Told (phase, done, total) while hashing and writing files."""
        self._cache_path = os.path.join(store.meta_dir, "statcache")
        self._cache: statcache.StatCache | None = statcache.StatCache(listings=listings) if listings else None
        """None until loaded; a new store starts from the ignore verdicts its size check found."""
        self._prelisting = prelisting
        """A new store's size check listing, for the first scan only (see ``listing.Prelisting``)."""
        self.repository = find_repository(workspace)
        """The user's own git repository the workspace is, or lies inside (read only)."""
        self._indexes_read: dict[str, tuple[tuple[int, ...], TrackedPaths | None]] = {}
        self._nested: tuple[str, ...] | None = None
        self.journal: ChangeJournal | None = None
        """Watch mode's record of what changed since ``_last``; None: every scan walks everything."""
        self.usage_base: tuple[tuple[int, int, int], tuple[int, int, int], float] | None = None
        """The store's last measured (bytes, loose objects, packs), the writer's counts then, and when."""
        self._last: Scan | None = None
        """The newest recorded scan, kept in watch mode as the base of incremental scans."""
        self._kept: dict[bytes, bytes] | None = None
        """During a restore: blobs read for line counts, by id (see KEEP_BLOBS_BYTES)."""
        self._kept_bytes = 0
        self.compared: Comparison | None = None
        """During a restore: its target compared with the scan its safety snapshot recorded."""
        if watch:
            journal = ChangeJournal(workspace)
            self.journal = journal if journal.start() else None

    @property
    def store_path(self) -> str:
        return self.store.path

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        """Turn failures from below (dulwich, zlib, the OS) into typed one-line errors."""
        try:
            yield
        except SnapshotError:
            raise
        except _STORE_FAILURES as exc:
            raise StoreError(f"the store {self.store_path} is damaged ({exc})", VERIFY) from None
        except FileLocked as exc:  # a ref's lock file: stale ones are cleared when the store lock is next taken
            raise StoreLocked(f"{os.fsdecode(exc.lockfilename)} is held by another writer; retry") from None
        except OSError as exc:
            where = exc.filename if isinstance(exc.filename, str) else ""
            detail = f"{exc.strerror or exc}" + (f": {where}" if where else "")
            if where.startswith(self.store_path):
                raise StoreError(f"store error ({detail}); {what_to_check(exc)}") from None
            raise WorkspaceError(f"workspace error ({detail}); {what_to_check(exc)}") from None

    # -- scanning and recording -------------------------------------------------------

    def scan(self, *, write: bool, forced: Sequence[str] = ()) -> Scan:
        """Walk the workspace; with ``write`` its new objects are stored. ``forced``
        paths are tracked whatever the ignore rules and size cap say."""
        generation = self.store.generation()
        if self._cache is not None and self._cache.generation != generation:
            self._cache = self._last = None  # objects may have been deleted since: their ids cannot be reused
        if self._cache is None:
            self._cache = statcache.load(self._cache_path)
            if self._cache.generation != generation:  # made before a gc: it may name deleted objects
                self._cache = statcache.StatCache(generation=generation)
        ignores = root_stack(self.workspace, self._exclude, self._use_default_excludes, self.repository)
        forced_paths = TrackedPaths.of([os.fsencode(p) for p in forced]) if forced else None
        known_repos = self._nested_repositories()
        ignores = ignores.with_tracked(self._tracked_paths(known_repos), forced_paths)
        epoch, changed = self.journal.take() if self.journal is not None else (0, None)
        base = self._last
        incremental = None
        same_rules = base is not None and base.root.rules == ignores.fingerprint and base.tracked == ignores.checksum
        if changed is not None and base is not None and same_rules:
            if not changed:
                base.epoch = epoch
                self.last_scan = ScanStats(incremental=True)
                return base  # nothing happened since it was recorded
            incremental = Incremental(base, changed)
        prelisting, self._prelisting = self._prelisting, None
        previous = None
        if self.host.needs_recorded_modes:
            previous = RecordedModes(self.store, self.catalog.latest_tree())
        result = scan(
            self.workspace,
            ignores,
            self._cache,
            self.store.writer,
            write=write,
            max_new_file_size=self._max_new_file_size,
            limits=self.limits,
            progress=self._phase("hashing"),
            host=self.host,
            previous_mode=previous,
            incremental=incremental,
            trust_folders=self._trust_folder_mtimes,
            prelisting=prelisting,
            known_repos=known_repos,
        )
        result.epoch = epoch
        self.last_scan = result.stats
        if result.repositories != known_repos:  # a nested repository came or went: its index counts too
            self._save_nested_repositories(result.repositories)
            if self._tracked_paths(result.repositories) != ignores.tracked:
                return self.scan(write=write, forced=forced)
        return result

    def _tracked_paths(self, nested: tuple[str, ...]) -> TrackedPaths | None:
        """The paths the user's git indexes track below the workspace: the index of
        the repository the workspace is (or lies in), and those of the ``nested``
        repositories below it, each for its own folder. An index is read again
        only when its file changed."""
        found: TrackedPaths | None = None
        places = [(self.repository, "")] if self.repository is not None else []
        for rel in nested:
            inner = find_repository(os.path.join(self.workspace, *rel.split("/")), stop_at=self.workspace)
            if inner is not None and inner.prefix == "":
                places.append((inner, rel))
        for repository, rel in places:
            paths = self._index_of(repository)
            if paths is not None:
                paths = paths.below(rel) if rel else paths
                found = paths if found is None else found.merged(paths)
        return found

    def _index_of(self, repository: UserRepository) -> TrackedPaths | None:
        try:
            st = os.stat(repository.index_path)
            stamp: tuple[int, ...] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = ()
        known = self._indexes_read.get(repository.index_path)
        if known is None or known[0] != stamp:
            known = self._indexes_read[repository.index_path] = (stamp, tracked_paths(repository) if stamp else None)
        return known[1]

    def _nested_repositories(self) -> tuple[str, ...]:
        if self._nested is None:
            try:
                with open(os.path.join(self.store.meta_dir, _NESTED), encoding="utf-8", errors="surrogateescape") as f:
                    self._nested = tuple(line for line in f.read().split("\n") if line)
            except OSError:
                self._nested = ()
        return self._nested

    def _save_nested_repositories(self, found: tuple[str, ...]) -> None:
        """Remember the nested repositories for the next process (the walk sees them
        only in the folders it lists). A lost write costs one extra scan, no more."""
        self._nested = found
        try:
            statcache.write_atomically(os.path.join(self.store.meta_dir, _NESTED), "\n".join(found).encode())
        except OSError:
            pass

    def forget_objects_not_in(self, kept: set[bytes], generation: int) -> None:
        """Drop stat-cache records naming objects gc removed, so none is reused, and
        stamp the cache with the generation the gc started (see ``Store.generation``)."""
        cache = statcache.load(self._cache_path)
        self._last = None  # it may name objects that are gone now: walk everything next time
        folders = {}
        shapes = dict(cache.shapes)
        for rel, table in cache.folders.items():
            kept_table = {name: record for name, record in table.items() if record[5] in kept}
            if kept_table:
                folders[rel] = kept_table
            if len(kept_table) != len(table):
                shapes.pop(rel, None)  # its table no longer names every file listed
        dirs = {p: r for p, r in cache.dirs.items() if r[1] in kept}
        self._save_cache(statcache.StatCache(folders, dirs, cache.listings, shapes, generation=generation))

    def snapshot(self, message: str, label: str | None, metadata: dict[str, str]) -> SnapshotInfo:
        return self.record(self.scan(write=True), message, label, metadata)

    def record(
        self,
        current: Scan,
        message: str,
        label: str | None,
        metadata: dict[str, str],
        *,
        save_cache: bool = True,
        base_side: StoredTree | None = None,
    ) -> SnapshotInfo:
        """Commit a written scan as a new snapshot: object, then ref, then stat cache
        (kept in memory only without ``save_cache``: a restore saves it once, after writing).

        ``base_side``: a restore's target, read with its names checked; if it is
        the newest snapshot's tree, the stats compare through it and the
        comparison is kept for the restore's plan (``self.compared``)."""
        store = self.store
        tree_id = current.tree_id
        if current.root.tree_id is None:
            store.writer.write(b"tree", b"")
        elif not store.has_object(tree_id):  # reused from a cache whose objects were collected since
            self._cache = self._last = None
            raise StoreError(
                f"tree {tree_id.hex()} of this snapshot is no longer in the store (collected by another "
                "writer); nothing was recorded: snapshot again"
            )
        try:
            stats = self._stats(current, self.catalog.latest_tree(), base_side)
        except StoreError:  # the newest snapshot's tree is damaged: count against nothing instead
            stats = self._stats(current, EMPTY_TREE)
        when = self.clock()
        seq = max(store.snapshot_refs(), default=0) + 1
        while True:
            commit = trailers.build_commit(
                tree_id,
                message,
                seq=seq,
                label=label,
                metadata=metadata,
                stats=stats,
                skipped=current.skipped,
                when=when,
            )
            sha = store.write_commit(commit)
            if store.add_snapshot_ref(seq, sha):
                break
            seq += 1  # another writer took this number; take the next one
        store.set_base(sha)
        self._remember(current, save=save_cache)
        return self.catalog.info(seq, sha)

    def _stats(self, current: Scan, base: bytes, base_side: StoredTree | None = None) -> tuple[int, int, int]:
        """(files changed, lines added, lines deleted) from the stored tree ``base`` to ``current``."""
        line_counts = current.line_counts
        additions = deletions = 0
        to_count: list[Change] = []
        if base == EMPTY_TREE:  # a first snapshot: every file is added, and no tree is compared
            files = current.tracked_count()
            for path, record in current.tracked_records():
                lines = line_counts.get(record[5], -1)
                if lines == -1:  # not hashed by this scan: read it back below
                    to_count.append(Change(path, None, (git_mode_of(record[0]), record[5])))
                else:
                    additions += lines or 0
        elif base_side is not None and base_side.tree_id(base_side.root()) == base:
            folders: dict[str, tuple[int, bytes]] = {}
            to_count = changes(base_side, ScannedTree(current), old_folders=folders)
            self.compared = Comparison(base, current, to_count, folders)
            files = len(to_count)
        else:
            to_count = changes(StoredTree(self.store, base), ScannedTree(current))  # no tree read back
            files = len(to_count)
        for change in to_count:
            if change.old is None and change.new is not None and change.new[1] in line_counts:
                additions += line_counts[change.new[1]] or 0  # added: no need to read it back
                continue
            counted = file_diff(change, self._read_for_stats, self._read_for_stats)
            additions += counted.additions
            deletions += counted.deletions
        return files, additions, deletions

    def save_state(
        self, current: Scan, message: str, label: str, *, save_cache: bool = True, base_side: StoredTree | None = None
    ) -> SnapshotInfo:
        """The newest snapshot if it already holds ``current``, else a new one (see ``record``)."""
        for held in (self.catalog.base(), self.catalog.latest()):  # the base first: it does not move then
            if held is not None and held.tree_id == current.tree_id.hex():
                self.store.set_base(bytes.fromhex(held.id))
                self._remember(current, save=save_cache)
                return held
        return self.record(current, message, label, {}, save_cache=save_cache, base_side=base_side)

    def _phase(self, phase: str) -> Callable[[int, int], None] | None:
        report = self.progress
        if report is None:
            return None
        return lambda done, total: report(phase, done, total)

    def _remember(self, current: Scan, *, save: bool = True) -> None:
        """``current`` was recorded: it becomes the stat cache (and watch mode's base)."""
        if current is not self._last and not current.same_as_cache:
            # The folder tables are shared with ``current``: the cache never changes them in place.
            packed = self._cache.packed if self._cache is not None else {}
            generation = self._cache.generation if self._cache is not None else self.store.generation()
            cache = statcache.StatCache(
                current.folder_tables(),
                current.dir_cache(),
                current.listings,
                current.shapes,
                generation=generation,
                packed=packed,
                tracked=current.tracked,
            )
            if save:
                self._save_cache(cache)
            else:
                cache.written_ns = self._cache.written_ns if self._cache is not None else 0
                self._cache = cache
        if self.journal is not None and current.written:
            self._last = current
            self.journal.ack(current.epoch)

    def _save_cache(self, cache: statcache.StatCache) -> None:
        statcache.save(self._cache_path, cache)
        self._cache = cache

    # -- reading ------------------------------------------------------------------------

    def status(self, files: Sequence[str | os.PathLike[str]] | None = None) -> list[FileChange]:
        """What differs between the base and the workspace (or ``files`` in it)."""
        within = self._within(files)
        current = self.scan(write=False)
        base = StoredTree(self.store, self.catalog.base_tree())
        found = [
            FileChange(c.path, status_of(c), c.old[0] if c.old else None, c.new[0] if c.new else None)
            for c in changes(base, ScannedTree(current), within)
        ]
        unreadable = [p for p in current.unreadable() if within is None or within(p, False)]
        if not unreadable:
            return found
        kept = [c for c in found if not _below_any(c.path, unreadable)]
        for path in unreadable:  # kept as last recorded: what the base says it was
            old = entry_at(base, path)
            kept.append(FileChange(path, ChangeStatus.UNREADABLE, old[0] if old else None, None))
        return sorted(kept, key=lambda c: c.path)

    def diff(
        self,
        old_info: SnapshotInfo,
        new_info: SnapshotInfo | None,
        files: Sequence[str | os.PathLike[str]] | None = None,
    ) -> list[FileDiff]:
        """Per-file differences from ``old_info`` to ``new_info`` (None: the workspace now)."""
        within = self._within(files)
        old = self._stored(old_info)
        new: TreeSide
        unreadable: list[str] = []
        workspace = Workspace(self.workspace, self.host)
        try:
            if new_info is None:
                current = self.scan(write=False)
                new, load_new = ScannedTree(current), self.workspace_reader(workspace)
                unreadable = [p for p in current.unreadable() if within is None or within(p, False)]
            else:
                new, load_new = self._stored(new_info), self.read_stored
            found = [file_diff(c, self.read_stored, load_new) for c in changes(old, new, within)]
        finally:
            workspace.close()
        if not unreadable:
            return found
        kept = [d for d in found if not _below_any(d.path, unreadable)]
        for path in unreadable:
            entry = entry_at(old, path)
            kept.append(unreadable_diff(path, entry))
        return sorted(kept, key=lambda d: d.path)

    def _stored(self, info: SnapshotInfo, check_names: NameCheck | None = None) -> StoredTree:
        """A snapshot's tree, allowed to yield a few times what the workspace caps let a
        workspace hold: a forged tree can double at every level."""
        cap = self.limits.max_entries if self.limits is not None else 0
        budget = 4 * cap if cap else MAX_ENTRIES_READ
        return StoredTree(self.store, bytes.fromhex(info.tree_id), check_names=check_names, budget=budget)

    def _within(self, files: Sequence[str | os.PathLike[str]] | None) -> Callable[[str, bool], bool] | None:
        return selection_filter(normalize_selection(self.workspace, files)) if files is not None else None

    def read_stored(self, path: str, sha: bytes, mode: int) -> bytes | None:
        """A stored blob for diffing; None if too large to diff (found from its
        header: never inflated, loose or packed)."""
        try:
            return self.catalog.read_blob(sha, STREAM_THRESHOLD)
        except ObjectTooLarge:
            return None

    def _read_for_stats(self, path: str, sha: bytes, mode: int) -> bytes | None:
        """A stored blob for a new snapshot's line counts; a damaged older
        snapshot must not stop new ones, so an unreadable blob counts as binary."""
        try:
            content = self.read_stored(path, sha, mode)
        except (KeyError, StoreError) + _STORE_FAILURES:
            return None
        if content is not None and self._kept is not None and self._kept_bytes + len(content) <= KEEP_BLOBS_BYTES:
            self._kept[sha] = content
            self._kept_bytes += len(content)
        return content

    def _blob_chunks(self, sha: bytes) -> Iterable[bytes]:
        """A blob for a restore's writes: kept from its line counts, or from the store."""
        kept = self._kept.get(sha) if self._kept is not None else None
        return (kept,) if kept is not None else self.store.blob_chunks(sha)

    def workspace_reader(self, workspace: Workspace) -> ContentLoader:
        """Reads the workspace's side of a diff through ``workspace``: confined, never
        through a symlink swapped in since the scan; unreadable content is empty."""

        def read(path: str, sha: bytes, mode: int) -> bytes | None:
            try:
                return workspace.read(path, mode == MODE_LINK and self.host.symlinks, STREAM_THRESHOLD)
            except (OSError, RestoreConflict):
                return b""

        return read

    # -- restoring -----------------------------------------------------------------------

    def restore(
        self,
        target: SnapshotInfo,
        files: Sequence[str | os.PathLike[str]] | None = None,
        *,
        dry_run: bool = False,
        safety_label: str = PRE_RESTORE_LABEL,
        current: Scan | None = None,
        overwrite_untracked: bool = False,
    ) -> RestoreResult:
        """Make the workspace (or ``files``) match ``target``.

        Unless ``dry_run``, the state being replaced is saved first (``current``,
        if the caller already scanned and saved it). If applying fails part-way,
        the saved state is put back before the error is raised, so a failed
        restore leaves the workspace as it was.

        A file the scan does not track (ignored, too large, unreadable...) is
        never overwritten: a whole restore keeps it and says so, a selective
        one is refused. With ``overwrite_untracked`` the ignored and too-large
        ones are tracked for this restore, so the safety snapshot holds their
        content before they are replaced.
        """
        selection = normalize_selection(self.workspace, files) if files is not None else None
        within = selection_filter(selection) if selection is not None else None
        safety: SnapshotInfo | None = None
        target_tree = self._stored(target, check_names=names_checker(self.host))
        if selection is not None:
            self._check_selection(selection, target_tree, target)
        if current is None:
            current = self.scan(write=not dry_run)
        workspace = Workspace(self.workspace, self.host)
        try:
            untracked, found = None, None  # a whole restore finds them in its plan, without comparing twice
            if selection is not None or overwrite_untracked:
                untracked, found = untracked_in_the_way(target_tree, current, workspace, within)
            if untracked and overwrite_untracked and any(item.reason in SAVEABLE for item in untracked):
                saveable = [item.path for item in untracked if item.reason in SAVEABLE]
                current = self.scan(write=not dry_run, forced=saveable)
                untracked, found = [item for item in untracked if item.reason not in SAVEABLE], None
            if untracked and selection is not None:
                raise RestoreConflict(
                    _untracked_message(untracked), OVERWRITE_UNTRACKED if not overwrite_untracked else None
                )
            self.compared = None
            if not dry_run:
                self._kept, self._kept_bytes = {}, 0
                safety = self.save_state(
                    current, f"before restoring {target.id[:12]}", safety_label, save_cache=False, base_side=target_tree
                )
            compared, self.compared = self.compared, None
            if compared is not None and compared.scan is not current:
                compared = None
            plan = make_plan(target_tree, ScannedTree(current), workspace, current, within, compared, untracked, found)
            workspace.close()  # writing starts from fresh checks of every folder, never from the plan's
            if safety is not None:
                with self._watch_paused(len(plan.writes) + len(plan.chmods) + len(plan.deletes)):
                    self._apply_or_put_back(plan, workspace, safety)
                for leftover in current.leftovers:  # from a restore killed mid-write
                    workspace.delete(leftover)
                if selection is None:
                    self.store.set_base(bytes.fromhex(target.id))
        finally:
            workspace.close()
            self._kept, self._kept_bytes = None, 0
            self.compared = None  # it holds a whole scan
        written = tuple(p for p, _ in plan.writes + plan.chmods)
        return RestoreResult(
            written=len(written),
            deleted=len(plan.deletes),
            unchanged=max(plan.unchanged, 0),
            written_paths=tuple(sorted(written)),
            deleted_paths=plan.deletes,
            dry_run=dry_run,
            target_id=target.id,
            safety_snapshot_id=safety.id if safety is not None else None,
            kept=plan.kept,
            skipped=plan.left_out,
        )

    def _check_selection(self, selection: list[str], target_tree: StoredTree, target: SnapshotInfo) -> None:
        """Refuse, before anything is written, a path that is neither in the
        snapshot (as a file, symlink or folder) nor in the workspace."""
        for path in selection:
            if os.path.lexists(os.path.join(self.workspace, *path.split("/"))):
                continue
            if not path_in_tree(target_tree, path):
                raise PathNotFound(f"{path} is neither in snapshot {target.id[:12]} nor in the workspace")

    @contextlib.contextmanager
    def _watch_paused(self, changes: int) -> Iterator[None]:
        """Stop watching while a restore writes many files, then watch afresh.

        The watcher's thread digests every event under the GIL, and a restore's
        own writes made it slower than a full walk (measured: restoring 10,000
        of 100,000 files took 12.8 s in watch mode against 8.5 s without). The
        next snapshot after a paused restore walks everything once.
        """
        if self.journal is None or changes < PAUSE_WATCH_AT:
            yield
            return
        self.journal.stop()
        self.journal = None
        self._last = None
        try:
            yield
        finally:
            journal = ChangeJournal(self.workspace)
            self.journal = journal if journal.start() else None

    def _apply_or_put_back(self, plan: Plan, workspace: Workspace, safety: SnapshotInfo) -> None:
        cache = self._cache if self._cache is not None else statcache.StatCache(generation=self.store.generation())
        try:
            apply_plan(plan, workspace, self._blob_chunks, cache, self._phase("writing"))
        except BaseException as failure:
            self._cache = None  # records may describe half-applied writes: reload from disk
            try:
                back = self.scan(write=False)
                undo = make_plan(
                    StoredTree(self.store, bytes.fromhex(safety.tree_id)), ScannedTree(back), workspace, None, None
                )
                apply_plan(undo, workspace, self.store.blob_chunks, statcache.StatCache())
            except BaseException:
                raise StoreError(
                    f"restore failed part-way ({failure}) and putting the workspace back failed too; "
                    f"restore {safety.id[:12]} to recover"
                ) from None
            raise
        self._save_cache(cache)

    def close(self) -> None:
        if self.journal is not None:
            self.journal.stop()
            self.journal = None
        self._last = None
        self.store.close()


def _untracked_message(untracked: Sequence[SkippedPath]) -> str:
    shown = ", ".join(f"{item.path} ({item.reason.value})" for item in untracked[:5])
    more = f" and {len(untracked) - 5} more" if len(untracked) > 5 else ""
    return f"restore refused, nothing was written: untracked {shown}{more} stand where the snapshot has a file"


def _below_any(path: str, folders_or_files: list[str]) -> bool:
    """``path`` is one of them, or lies below one."""
    return any(path == top or path.startswith(top + "/") for top in folders_or_files)
