"""Retention: which snapshots to drop so the store stays small, oldest first.

The newest snapshot, the base, pinned snapshots, what redo returns to, and
the newest ``max_undo`` undo points are never dropped; older undo points
(every turn begun is one) are ordinary snapshots under the limits. Dropping a
snapshot removes only its ref; the ids of the others never change (snapshots
are parentless commits), and :mod:`compaction` later reclaims the objects
nothing else refers to. The policy itself, :class:`Retention`, is one of the
``Options``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from snapshotter.model import SnapshotInfo
from snapshotter.options import Retention

__all__ = ["Retention", "by_count_and_age", "droppable"]


def droppable(snapshots: Sequence[SnapshotInfo], protected: set[str]) -> list[SnapshotInfo]:
    """Snapshots retention may drop, oldest first (``snapshots`` is newest first)."""
    return [s for s in reversed(snapshots[1:]) if s.id not in protected]


def by_count_and_age(
    snapshots: Sequence[SnapshotInfo], protected: set[str], retention: Retention, now: datetime
) -> list[SnapshotInfo]:
    """The snapshots over the count limit or past the age limit, oldest first."""
    candidates = droppable(snapshots, protected)
    drop: dict[str, SnapshotInfo] = {}
    if retention.max_snapshots:
        excess = len(snapshots) - retention.max_snapshots
        for info in candidates[: max(excess, 0)]:
            drop[info.id] = info
    if retention.max_age:
        cutoff = now - retention.max_age
        for info in candidates:
            if info.created_at < cutoff:
                drop[info.id] = info
    return [info for info in candidates if info.id in drop]
