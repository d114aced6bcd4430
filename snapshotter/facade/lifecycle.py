"""The Snapshotter's upkeep calls: prune, gc, verify and the store's stats (a mixin, as ``workflows``).

Apart from ``api`` so what they run (``maintenance``, ``engine/upkeep``) loads only when one is called: a command
that reads the history (``log``, ``show``) loads no upkeep."""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapshotter.facade.calls import public
from snapshotter.options import Options

if TYPE_CHECKING:
    from snapshotter.engine.session.engine import Engine
    from snapshotter.model import GcResult, PruneResult, StoreStats, VerifyResult


class Lifecycle:
    """Retention, compaction, verification and the store's stats."""

    _options: Options

    if TYPE_CHECKING:  # Snapshotter's own, which every method here runs through

        def _engine_ok(self) -> Engine: ...

    @public(mutates=True, maintain=False)
    def prune(self, dry_run: bool = False) -> PruneResult:
        """Drop the snapshots the retention policy says must go (oldest first) and
        compact; with ``dry_run``, only say which (count and age limits)."""
        from snapshotter.facade import maintenance

        return maintenance.prune(self._engine_ok(), self._options.retention, dry_run)

    @public(mutates=True, maintain=False)
    def gc(self) -> GcResult:
        """Pack what is still referenced, delete the rest and crash leftovers."""
        from snapshotter.facade import maintenance

        return maintenance.gc(self._engine_ok())

    @public()
    def verify(self, full: bool = False) -> VerifyResult:
        """Check that every snapshot can be read back (``full``: re-hash every object)."""
        from snapshotter.engine.upkeep import integrity

        return integrity.verify(self._engine_ok().store, full)

    @public()
    def store_stats(self) -> StoreStats:
        """Snapshot count, pins, loose objects, packs, bytes on disk, oldest/newest, last gc."""
        from snapshotter.facade import maintenance

        return maintenance.stats(self._engine_ok())
