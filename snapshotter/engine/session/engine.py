"""One opened workspace and its store: scan, record, and the stat cache between.

The engine holds no policy: no error mode, no undo stacks. The public :class:`~snapshotter.Snapshotter` adds those,
and swaps engines when it is re-rooted. What reads through an engine (``reading``) and what restores through one
(``restoring``) sit above it; how a scan is counted and committed (``recording``) and what the user's git indexes
track (``indexes``) below; ``opening`` opens one. What only a scan or a comparison needs loads where it runs.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone

from snapshotter.engine.gitstore.catalog import Catalog
from snapshotter.engine.gitstore.inflate import ObjectTooLarge
from snapshotter.engine.gitstore.locking import StoreLock
from snapshotter.engine.gitstore.objects import EMPTY_TREE, STREAM_THRESHOLD
from snapshotter.engine.gitstore.store import Store
from snapshotter.engine.session.failures import STORE_FAILURES, translated
from snapshotter.engine.session.statcaching import StatCaching
from snapshotter.errors import StoreError
from snapshotter.options import Options

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:  # loaded where used: opening a store to read its history walks nothing, compares nothing
    from snapshotter.engine.compare.treediff import Comparison, ScannedTree, StoredTree
    from snapshotter.engine.session.indexes import UserIndexes
    from snapshotter.engine.session.recording import Recorded
    from snapshotter.engine.worktree import statcache
    from snapshotter.engine.worktree.gitrepo import UserRepository
    from snapshotter.engine.worktree.hostfs import HostFS
    from snapshotter.engine.worktree.limits import WorkspaceLimits
    from snapshotter.engine.worktree.pathnames import NameCheck
    from snapshotter.engine.worktree.trust import Prelisting
    from snapshotter.engine.worktree.walker import Scan
    from snapshotter.engine.worktree.watch import ChangeJournal
    from snapshotter.model import ScanStats, SnapshotInfo

PAUSE_WATCH_AT = 1000
"""A restore changing this many files or more pauses watch mode while it writes."""

WATCH_AGAIN_AFTER = 60.0
"""Seconds a watcher that stopped by itself (a watch lost, its thread dead) stays off before a scan watches afresh."""


class Engine(StatCaching):
    """Snapshots of one canonical workspace in one opened store."""

    def __init__(
        self,
        workspace: str,
        store: Store,
        options: Options,
        listings: statcache.Listings | None = None,
        prelisting: Prelisting | None = None,
    ) -> None:

        self.workspace = workspace
        self.store = store
        self.options = options
        self.session = options.session
        """The session every snapshot recorded here is stamped with (None: the anonymous one)."""
        self.catalog = Catalog(store, self.count_lines, options.session)
        self.lock = StoreLock(os.path.join(store.meta_dir, "lock"), options.lock_timeout, on_recover=store.recover)
        self.clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
        """When a snapshot is taken; tests move it to make old snapshots."""
        self.progress: Callable[[str, int, int], None] | None = None
        """Told (phase, done, total) while hashing and writing files."""
        self._cache_path = os.path.join(store.meta_dir, "statcache")
        self._cache: statcache.StatCache | None = None
        if listings:
            from snapshotter.engine.worktree.statcache import StatCache

            self._cache = StatCache(listings=listings)
        """None until loaded; a new store starts from the ignore verdicts its size check found."""
        self._deferring = 0
        self._unsaved: statcache.StatCache | None = None  # waiting for ``defer_saves(False)``
        self._prelisting = prelisting
        """A new store's size check listing, for the first scan only (see ``trust.Prelisting``)."""
        self.journal: ChangeJournal | None = None
        """Watch mode's record of what changed since ``_last``; None: every scan walks everything."""
        self.usage_base: tuple[tuple[int, int, int], tuple[int, int, int], float] | None = None
        """The store's last measured (bytes, loose objects, packs), the writer's counts then, and when."""
        self._last: Scan | None = None
        """The newest recorded scan, kept in watch mode as the base of incremental scans."""
        self._watch_stopped_at: float | None = None
        """When a scan first found the watcher stopped by itself."""
        if options.watch:
            self._watch_afresh()

    # What only a walk, a comparison or a restore asks of the workspace: found when first
    # asked, so opening a store to read its history costs none of it (issue #51).

    @functools.cached_property
    def limits(self) -> WorkspaceLimits:
        from snapshotter.engine.worktree.limits import WorkspaceLimits

        return WorkspaceLimits.of(self.options)

    @functools.cached_property
    def host(self) -> HostFS:
        """What the workspace's filesystem can do (exec bits, symlinks, case...)."""
        from snapshotter.engine.worktree.hostfs import detect

        return detect(self.workspace)

    @functools.cached_property
    def repository(self) -> UserRepository | None:
        """The user's own git repository the workspace is, or lies inside (read only)."""
        from snapshotter.engine.worktree.gitrepo import find_repository

        return find_repository(self.workspace)

    @functools.cached_property
    def _indexes(self) -> UserIndexes:
        from snapshotter.engine.session.indexes import UserIndexes

        return UserIndexes(self.workspace, self.repository, self.store.meta_dir)

    @functools.cached_property
    def last_scan(self) -> ScanStats:
        """What the last walk cost (assigned by each scan)."""
        from snapshotter.model import ScanStats

        return ScanStats()

    def _watch_afresh(self) -> None:
        from snapshotter.engine.worktree.watch import ChangeJournal

        journal, self._last = ChangeJournal(self.workspace), None  # no scan before it is a base for its changes
        self.journal, self._watch_stopped_at = (journal if journal.start() else None), None

    def _rewatch_if_stopped(self) -> None:
        """Replace a watcher that stopped by itself once it has been off ``WATCH_AGAIN_AFTER``
        seconds, so a long-lived watch server does not walk everything for good."""
        if self.journal is None or self.journal.running:
            return
        self._watch_stopped_at = self._watch_stopped_at or time.monotonic()
        if time.monotonic() - self._watch_stopped_at >= WATCH_AGAIN_AFTER:
            self.journal.stop()
            self._watch_afresh()

    @property
    def store_path(self) -> str:
        return self.store.path

    def use_session(self, session: str | None) -> None:
        """Work in ``session`` from now on: the snapshots recorded and the labels
        resolved are its (one engine can serve several sessions, a call at a time)."""
        self.session = self.catalog.session = session

    def errors(self) -> contextlib.AbstractContextManager[None]:
        """Turn failures from below (dulwich, zlib, the OS) into typed one-line errors."""
        return translated(self.store_path)

    # -- scanning and recording -------------------------------------------------------

    def scan(self, *, write: bool, forced: Sequence[str] = ()) -> Scan:
        """Walk the workspace; with ``write`` its new objects are stored. ``forced``
        paths are tracked whatever the ignore rules and size cap say."""
        from snapshotter.engine.compare.treediff import RecordedModes
        from snapshotter.engine.worktree.gitrepo import TrackedPaths
        from snapshotter.engine.worktree.ignore import option_rules
        from snapshotter.engine.worktree.walker import Incremental, scan
        from snapshotter.model import ScanStats

        cache = self._current_cache()
        options = self.options
        ignores = option_rules(self.workspace, options, self.repository)
        forced_paths = TrackedPaths.of([os.fsencode(p) for p in forced]) if forced else None
        known_repos = self._indexes.nested()
        ignores = ignores.with_tracked(self._indexes.tracked(known_repos), forced_paths)
        self._rewatch_if_stopped()
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
        sparse = ignores.tracked is not None and any(e.skip_worktree for e in ignores.tracked.absent)
        if self.host.needs_recorded_modes or sparse:
            previous = RecordedModes(self.store, self.catalog.latest_tree())
        result = scan(
            self.workspace,
            ignores,
            cache,
            self.store.writer,
            write=write,
            options=options,
            progress=self.phase("hashing"),
            host=self.host,
            previous_mode=previous if self.host.needs_recorded_modes else None,
            recorded=previous.entry if previous is not None else None,
            incremental=incremental,
            prelisting=prelisting,
            known_repos=known_repos,
        )
        result.epoch = epoch
        self.last_scan = result.stats
        if result.repositories != known_repos:  # a nested repository came or went: its index counts too
            self._indexes.save_nested(result.repositories)
            if self._indexes.tracked(result.repositories) != ignores.tracked:
                return self.scan(write=write, forced=forced)
        return result

    def snapshot(
        self, message: str, label: str | None, metadata: dict[str, str], *, moves_base: bool = True
    ) -> SnapshotInfo:
        """Record the workspace now; it becomes the base unless not ``moves_base``
        (a snapshot the library takes for itself, closing a revert or an undo)."""
        return self.record(self.scan(write=True), message, label, metadata, moves_base=moves_base).info

    def record(
        self,
        current: Scan,
        message: str,
        label: str | None,
        metadata: dict[str, str],
        *,
        save_cache: bool = True,
        compared: Comparison | None = None,
        count_lines: bool = True,
        moves_base: bool = True,
    ) -> Recorded:
        """Commit a written scan as a snapshot: object, ref, then stat cache (only in memory without ``save_cache``).
        ``compared``: a restore's comparison of its target with ``current`` (the counts, if that is the newest). Without
        ``count_lines`` only files are counted now, lines when asked. A path a workspace rule now hides is named."""
        from snapshotter.engine.session import hidden
        from snapshotter.engine.session.recording import Recorded, commit, numstat

        tree_id = current.tree_id
        if current.root.tree_id is None:
            self.store.writer.write(b"tree", b"")
        elif not self.store.has_object(tree_id):  # reused from a cache whose objects were collected since
            self._cache = self._last = None
            raise StoreError(
                f"tree {tree_id.hex()} of this snapshot is no longer in the store (collected by another "
                "writer); nothing was recorded: snapshot again"
            )
        base, marked = self.catalog.latest_tree(), self.diff_attributes()
        try:
            stats, found = numstat(
                self.store, current, base, self.read_for_stats, compared, lines=count_lines, marked=marked
            )
        except StoreError:  # the newest snapshot's tree is damaged: count against nothing instead
            base = EMPTY_TREE
            stats, found = numstat(self.store, current, base, self.read_for_stats, lines=count_lines, marked=marked)
        hidden.warn(self.workspace, self.options, self.repository, found)
        current.line_counts = {}  # counted: a cold snapshot's are 10 MiB at 100k files (recording again reads back)
        against = None if count_lines else base
        info = commit(
            self.store,
            self.catalog,
            current,
            message,
            label,
            metadata,
            stats,
            self.clock(),
            against,
            self.session,
            moves_base,
        )
        self._remember(current, save=save_cache)
        return Recorded(info)

    def save_state(
        self,
        current: Scan,
        message: str,
        label: str,
        *,
        save_cache: bool = True,
        compared: Comparison | None = None,
    ) -> Recorded:
        """A safety snapshot of ``current``, taken for the library's own use
        (before a restore, undo, redo, revert): the base or the newest snapshot
        if it already holds ``current``, else a new one whose lines are counted
        only when asked for (see ``record``). It never moves the base: only a
        whole restore that succeeds does, so a failed restore leaves ``@``
        (and what ``status`` shows) as it was."""
        from snapshotter.engine.session.recording import Recorded

        for held in (self.catalog.base(), self.catalog.latest()):
            if held is not None and held.tree_id == current.tree_id.hex():
                self._remember(current, save=save_cache)
                return Recorded(held)
        return self.record(
            current,
            message,
            label,
            {},
            save_cache=save_cache,
            compared=compared,
            count_lines=False,
            moves_base=False,
        )

    def relabelled(self, info: SnapshotInfo, message: str, label: str) -> SnapshotInfo:
        """A new snapshot of ``info``'s tree, under ``message`` and ``label`` (nothing is walked)."""
        from snapshotter.engine.session.recording import commit_copy

        return commit_copy(self.store, self.catalog, info, message, label, self.clock(), self.session)

    def count_lines(self, tree: bytes, against: bytes) -> tuple[int, int]:
        """The deferred line counts of a snapshot of ``tree`` taken when the newest snapshot held ``against``;
        a damaged ``against`` counts from nothing, as :meth:`record` does."""
        from snapshotter.engine.session.recording import stored_lines

        marked = self.diff_attributes()
        try:
            return stored_lines(self.store, tree, against, self.read_for_stats, marked)
        except StoreError:
            return stored_lines(self.store, tree, EMPTY_TREE, self.read_for_stats, marked)

    def diff_attributes(self) -> Callable[[str], bool | None]:
        """What the workspace's ``.gitattributes`` say of diffing each path, read afresh."""
        from snapshotter.engine.worktree.attributes import DiffAttributes

        return DiffAttributes(self.workspace, self.repository).binary

    def phase(self, phase: str) -> Callable[[int, int], None] | None:
        """A progress callback for one phase ("hashing", "writing"), if anyone listens."""
        report = self.progress
        if report is None:
            return None
        return lambda done, total: report(phase, done, total)

    # -- the store's side ---------------------------------------------------------------------

    def stored(self, info: SnapshotInfo, check_names: NameCheck | None = None) -> StoredTree:
        """A snapshot's tree, allowed to yield a few times what the workspace caps let a
        workspace hold: a forged tree can double at every level."""
        from snapshotter.engine.compare.treediff import MAX_ENTRIES_READ, StoredTree

        cap = self.limits.max_entries
        budget = 4 * cap if cap else MAX_ENTRIES_READ
        return StoredTree(self.store, bytes.fromhex(info.tree_id), check_names=check_names, budget=budget)

    def held(self, tree_id: bytes) -> ScannedTree | None:
        """The tree ``tree_id`` as watch mode holds it in memory (the newest recorded scan, whose objects are in
        the store), or None: compared through it, a diff or status reads no stored tree. Equal ids, equal trees."""
        from snapshotter.engine.compare.treediff import ScannedTree

        last = self._last
        return ScannedTree(last) if last is not None and last.tree_id == tree_id else None

    def read_stored(self, path: str, sha: bytes, mode: int) -> bytes | None:
        """A stored blob for diffing; None if too large to diff (found from its
        header: never inflated, loose or packed)."""
        try:
            return self.catalog.read_blob(sha, STREAM_THRESHOLD)
        except ObjectTooLarge:
            return None

    def read_for_stats(self, path: str, sha: bytes, mode: int) -> bytes | None:
        """A stored blob for a new snapshot's line counts; a damaged older
        snapshot must not stop new ones, so an unreadable blob counts as binary."""
        try:
            return self.read_stored(path, sha, mode)
        except (KeyError, StoreError) + STORE_FAILURES:
            return None

    @contextlib.contextmanager
    def watch_paused(self, changes: int) -> Iterator[None]:
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
            self._watch_afresh()

    def close(self) -> None:
        with contextlib.suppress(OSError):  # a cache not saved costs only re-reading
            self._save_pending()
        if self.journal is not None:
            self.journal.stop()
            self.journal = None
        self._last = None
        self.store.close()
