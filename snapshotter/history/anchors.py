"""What retention must keep of the sessions' work, and what it takes off their undo.

A named session's undo and its turn reverts read its own changes from its
snapshots (``attribution``): its tool calls, known by the ``tool:`` and
``tool-done:`` snapshots around them, and what the library wrote for it, known
by a closing snapshot and the one it began at. Retention drops snapshots by
state (``upkeep.retention``), which knows nothing of that. So, for sessions that
still keep history here, it keeps what their work cannot be told apart without
(:func:`kept_for_sessions`), and before it drops anything else that a session's
undo needs, it takes the undo points that need it off the session's stack
(:func:`before_dropping`): an undo stops where its history is whole.
"""

from __future__ import annotations

from collections.abc import Sequence

from snapshotter.engine.gitstore.historyindex import key_of
from snapshotter.engine.session.engine import Engine
from snapshotter.history.stacks import SESSIONS, TURNS, UNDO, entry_info, live_entries
from snapshotter.model import SnapshotInfo

OPEN_CALLS_KEPT = 8
"""Calls of one session still open that retention keeps (agents run a few at once)."""


def before_dropping(engine: Engine, dropping: Sequence[SnapshotInfo]) -> None:
    """Called by retention before it drops ``dropping`` (store lock held).

    A named session undoes by reverting its own changes since an undo point
    (``attribution.session_changes``): its tool calls, and the reverts and undos
    written for it, each known by the snapshots that begin and end it. Once one
    of those that changed something loses a snapshot, the stretch holding it
    can no longer be undone exactly: reverting the rest brought back an edit the
    session had undone since (the undo of it kept, the call itself gone). So the
    session's undo points before that change are taken off its stack: its undo
    stops where its history is whole, and says so, instead of going elsewhere."""
    going = {info.id for info in dropping}
    if not going:
        return  # nothing dropped: the attribution (and the comparisons under it) need not load
    from snapshotter.history.attribution import session_changes

    for name in engine.store.sessions():
        stack_name = f"{SESSIONS}{name}/{UNDO}"
        stack = [entry_info(engine, sha) for sha in live_entries(engine, stack_name)]
        if not stack:
            continue
        cut = 0
        for piece in session_changes(engine, name, stack[0], None):  # each begins and ends where its owner does
            start, end = piece.before, piece.after
            lost = start.id in going or (end is not None and end.id in going)
            if lost and (end is None or start.tree_id != end.tree_id):
                cut = max(cut, (end or start).sequence)
        for point in stack:
            if point.sequence < cut:
                engine.store.drop_from_stack(stack_name, bytes.fromhex(point.id))


def kept_for_sessions(engine: Engine) -> set[str]:
    """Snapshots retention must keep, whatever its limits, for each session's work
    to be told apart at all: the ``pre-turn`` of a turn still open (``end_turn``
    and the turn's revert begin from it); the ``tool:`` snapshot of a call still
    open (its ``tool_done`` pairs with it; the newest ``OPEN_CALLS_KEPT`` of a
    session, so calls a killed agent never closed go in time); and a named
    session's newest closed call, which says that the session brackets its calls
    (``attribution.session_changes``): without it, all of its changes would be
    read as "the whole stretch, less the other sessions' brackets", a person's
    edits and another session's open call included. Only for sessions that still
    keep history here (an undo or turns stack): one whose stacks retention has
    emptied has nothing left to undo, and keeps nothing."""
    live: set[str | None] = set(engine.store.sessions())
    if any(engine.store.stack_top(name, 1) for name in (UNDO, TURNS)):
        live.add(None)
    ids: set[str] = set()
    facts = engine.catalog.index.current().sessions  # no snapshot is read: the history index knows
    for who in live:
        found = facts.get(key_of(who))
        if found is None:
            continue
        opened = found.open_turn()
        if opened is not None:
            ids.add(opened[1])
        ids.update(sha for _, sha in sorted(found.open_calls.values(), reverse=True)[:OPEN_CALLS_KEPT])
        if who is not None and found.closed_call is not None:
            ids.add(found.closed_call[1])
    return ids
