"""The stat cache an engine keeps between scans (see ``statcache``): loaded when
a scan first needs it, dropped when a gc may have removed objects it names,
and saved after each recording, or later while saves are deferred.

A mixin of :class:`~snapshotter.engine.session.engine.Engine`, apart so that
opening a store to read its history loads no stat cache code (issue #51).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:
    from snapshotter.engine.gitstore.store import Store
    from snapshotter.engine.worktree import statcache
    from snapshotter.engine.worktree.walker import Scan
    from snapshotter.engine.worktree.watch import ChangeJournal


class StatCaching:
    """The stat cache's side of an engine."""

    store: Store
    journal: ChangeJournal | None
    _cache_path: str
    _cache: statcache.StatCache | None
    _unsaved: statcache.StatCache | None
    _deferring: int
    _last: Scan | None

    def _current_cache(self) -> statcache.StatCache:
        """The stat cache, loaded if need be; one made before the store's last
        gc is dropped, as it may name deleted objects (see ``Store.generation``)."""
        from snapshotter.engine.worktree import statcache

        generation = self.store.generation()
        if self._cache is not None and self._cache.generation != generation:
            self._cache = self._last = None  # objects may have been deleted since: their ids cannot be reused
        if self._cache is None:
            self._cache = statcache.load(self._cache_path)
            if self._cache.generation != generation:  # made before a gc: it may name deleted objects
                self._cache = statcache.StatCache(generation=generation)
        return self._cache

    def forget_objects_not_in(self, kept: set[bytes], generation: int) -> None:
        """Drop stat-cache records naming objects gc removed, so none is reused, and
        stamp the cache with the generation the gc started (see ``Store.generation``)."""
        from snapshotter.engine.worktree import statcache

        cache = self._unsaved if self._unsaved is not None else statcache.load(self._cache_path)
        self._last = None  # it may name objects that are gone now: walk everything next time
        folders: dict[str, statcache.Folder] = {}
        shapes = dict(cache.shapes)
        for rel, table in cache.folders.items():
            kept_table = {name: record for name, record in table.items() if record[5] in kept}
            if kept_table:
                folders[rel] = kept_table
            if len(kept_table) != len(table):
                shapes.pop(rel, None)  # its table no longer names every file listed
        dirs = {p: r for p, r in cache.dirs.items() if r[1] in kept}
        kept_cache = statcache.StatCache(folders, dirs, cache.listings, shapes, generation=generation)
        kept_cache.tracked = cache.tracked  # its listings were judged with those paths tracked (a restore's too)
        self.save_cache(kept_cache)

    def _remember(self, current: Scan, *, save: bool = True) -> None:
        """``current`` was recorded: it becomes the stat cache (and watch mode's base)."""
        from snapshotter.engine.worktree import statcache

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
                self.save_cache(cache)
            else:
                cache.written_ns = self._cache.written_ns if self._cache is not None else 0
                self._cache = cache
        if self.journal is not None and current.written:
            self._last = current
            self.journal.ack(current.epoch)

    def save_cache(self, cache: statcache.StatCache) -> None:
        """Make ``cache`` the stat cache and save it; while saves are deferred, when
        they end (its records judged meanwhile by the last saved one's time)."""
        from snapshotter.engine.worktree import statcache

        if self._deferring:
            cache.written_ns = self._cache.written_ns if self._cache is not None and cache is not self._cache else 0
            self._cache = self._unsaved = cache
            return
        statcache.save(self._cache_path, cache)
        self._cache = cache

    def defer_saves(self, deferring: bool) -> None:
        """Begin (True) or end (False) deferring stat-cache saves; the last end saves
        what waited. A server answers its caller first and saves after; a crash
        in between leaves the older cache on disk, which costs only re-reading."""
        self._deferring += 1 if deferring else -1
        if self._deferring == 0:
            self._save_pending()

    def _save_pending(self) -> None:
        pending, self._unsaved = self._unsaved, None
        if pending is not None and pending is self._cache:  # not dropped or replaced since
            from snapshotter.engine.worktree import statcache

            statcache.save(self._cache_path, pending)

    def cache_for_writes(self) -> statcache.StatCache:
        """The stat cache a restore records its writes in (then saves)."""
        from snapshotter.engine.worktree import statcache

        return self._cache if self._cache is not None else statcache.StatCache(generation=self.store.generation())

    def drop_cache(self) -> None:
        """Forget the cache in memory (a restore failed part-way): the next scan reloads it from disk."""
        self._cache = None
