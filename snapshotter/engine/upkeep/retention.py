"""Retention: which snapshots to drop so the store stays small.

The newest snapshot (not counting the copies of abandoned redo points, which
hold older states), the base, pinned snapshots, what redo returns to, and
the newest ``max_undo`` undo points are never dropped; older undo points
(every turn begun is one) are ordinary snapshots under the limits. Dropping a
snapshot removes only its ref; the ids of the others never change (snapshots
are parentless commits), and :mod:`compaction` later reclaims the objects
nothing else refers to. The policy itself, :class:`Retention`, is one of the
``Options``.

Over the count limit, what goes first is what is missed least. A snapshot of
a state a newer snapshot also holds (a tool call that changed nothing, a
checkpoint of an unchanged folder) loses no state: those go before any
snapshot of a state held nowhere else, so read-only tool calls never evict
history. Within each of the two, plain snapshots go first, then the copies
of abandoned redo points (``abandoned:<n>``: a state undone and then moved
past), then other labelled ones, and turn snapshots last; then the oldest
first. So a restore that abandons a redo point never costs the state saved
just before it. A snapshot closing a bracket
(``tool-done:<id>``, ``post-turn:<n>``) goes only with the one opening it:
without its end, a call or turn would read as still open.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from snapshotter.model import SnapshotInfo
from snapshotter.options import Retention

__all__ = ["Retention", "by_count_and_age", "droppable"]

_CLOSING = {"tool-done:": "tool:", "post-turn:": "pre-turn:"}
"""The label prefix of a snapshot closing a bracket, and of the one opening it."""
_TURN = ("pre-turn:", "post-turn:")
_ABANDONED = "abandoned:"


def droppable(snapshots: Sequence[SnapshotInfo], protected: set[str]) -> list[SnapshotInfo]:
    """Snapshots retention may drop, oldest first (``snapshots`` is newest first)."""
    newest = next((s for s in snapshots if not (s.label or "").startswith(_ABANDONED)), None)
    newest_id = (newest or snapshots[0]).id if snapshots else None
    return [s for s in reversed(snapshots) if s.id != newest_id and s.id not in protected]


def by_count_and_age(
    snapshots: Sequence[SnapshotInfo], protected: set[str], retention: Retention, now: datetime
) -> list[SnapshotInfo]:
    """The snapshots over the count limit (least missed first, see the module's
    docstring) or past the age limit, oldest first."""
    candidates = droppable(snapshots, protected)
    drop: set[str] = set()
    if retention.max_snapshots:
        excess = len(snapshots) - retention.max_snapshots
        drop.update(info.id for info in least_missed_first(snapshots, candidates)[: max(excess, 0)])
    if retention.max_age and retention.max_age < now - now.replace(year=1, month=1, day=1):
        cutoff = now - retention.max_age  # an age reaching past the year 1 keeps everything
        drop.update(info.id for info in candidates if info.created_at < cutoff)
    return _brackets_kept_whole(snapshots, candidates, [info for info in candidates if info.id in drop])


def least_missed_first(snapshots: Sequence[SnapshotInfo], candidates: list[SnapshotInfo]) -> list[SnapshotInfo]:
    """``candidates`` in the order the count limit drops them."""
    newest_of: dict[str, str] = {}
    for info in snapshots:  # newest first: the first seen of each state holds it
        newest_of.setdefault(info.tree_id, info.id)

    def missed(info: SnapshotInfo) -> tuple[bool, int, int]:
        label = info.label or ""
        kind = 3 if label.startswith(_TURN) else 1 if label.startswith(_ABANDONED) else 2 if label else 0
        return newest_of[info.tree_id] == info.id, kind, info.sequence

    return sorted(candidates, key=missed)


def _brackets_kept_whole(
    snapshots: Sequence[SnapshotInfo], candidates: list[SnapshotInfo], drop: list[SnapshotInfo]
) -> list[SnapshotInfo]:
    """``drop``, with each closing snapshot's opener added (if it may go), or the
    closing one kept (if its opener must stay); oldest first."""
    chosen = {info.id: info for info in drop}
    allowed = {info.id for info in candidates}
    labelled: dict[tuple[str | None, str], list[SnapshotInfo]] = {}
    for info in snapshots:  # newest first
        if info.label:
            labelled.setdefault((info.session, info.label), []).append(info)
    for info in drop:
        opener = _opener(labelled, info)
        if opener is None or opener.id in chosen:
            continue
        if opener.id in allowed:
            chosen[opener.id] = opener
        else:
            del chosen[info.id]
    return sorted(chosen.values(), key=lambda info: info.sequence)


def _opener(labelled: dict[tuple[str | None, str], list[SnapshotInfo]], info: SnapshotInfo) -> SnapshotInfo | None:
    """The snapshot opening the bracket ``info`` closes (the nearest before it, in
    its session), if one is left."""
    label = info.label or ""
    for closing, opening in _CLOSING.items():
        if label.startswith(closing):
            found = labelled.get((info.session, opening + label[len(closing) :]), [])
            return next((s for s in found if s.sequence < info.sequence), None)
    return None
