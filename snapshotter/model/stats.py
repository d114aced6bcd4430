"""What the store's upkeep did and found."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from snapshotter.model.snapshots import SnapshotInfo


@dataclass(frozen=True)
class PruneResult:
    """What ``prune()`` dropped (or, with ``dry_run``, would drop), oldest first."""

    pruned: tuple[SnapshotInfo, ...]
    kept: int
    dry_run: bool = False
    bytes_before: int = 0
    bytes_after: int = 0
    """Store size after pruning and compaction (equal to before for a dry run)."""


@dataclass(frozen=True)
class StoreStats:
    """The state of one store."""

    snapshots: int
    pinned: int
    loose_objects: int
    packs: int
    bytes_on_disk: int
    oldest: datetime | None
    newest: datetime | None
    last_gc: datetime | None


@dataclass(frozen=True)
class GcResult:
    """What a compaction did."""

    objects_kept: int
    objects_removed: int
    packs_removed: int
    temp_files_removed: int
    bytes_before: int
    bytes_after: int
    seconds: float


@dataclass(frozen=True)
class VerifyResult:
    """What ``verify()`` found; ``ok`` when nothing."""

    ok: bool
    snapshots_checked: int
    objects_checked: int
    problems: tuple[str, ...]
