"""Retention: which snapshots to drop so the store stays small, oldest first.

The newest snapshot, the base, pinned snapshots, what redo returns to, and
the newest ``max_undo`` undo points are never dropped; older undo points
(every turn begun is one) are ordinary snapshots under the limits. Dropping a
snapshot removes only its ref; the ids of the others never change (snapshots
are parentless commits), and :mod:`compaction` later reclaims the objects
nothing else refers to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from snapshotter.errors import InvalidInput
from snapshotter.model import SnapshotInfo


@dataclass(frozen=True)
class Retention:
    """How many, how old and how big. ``None`` or 0 disables a limit."""

    max_snapshots: int | None = 50
    max_age: timedelta | None = timedelta(days=7)
    max_store_bytes: int | None = 500 * 2**20
    max_undo: int | None = 100
    """How many undo points (checkpoints, turns begun) stay protected from the
    other limits; older ones may be dropped like any snapshot."""

    def __post_init__(self) -> None:
        for name in ("max_snapshots", "max_store_bytes", "max_undo"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise InvalidInput(f"Retention.{name} must be a non-negative integer or None")
        if self.max_age is not None and (not isinstance(self.max_age, timedelta) or self.max_age.total_seconds() < 0):
            raise InvalidInput("Retention.max_age must be a non-negative timedelta or None")

    @classmethod
    def unlimited(cls) -> Retention:
        return cls(max_snapshots=None, max_age=None, max_store_bytes=None, max_undo=None)


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
