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
from snapshotter.history.stacks import SESSIONS, TURNS, UNDO, readable
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
    stops where its history is whole, and says so, instead of going elsewhere.

    What this reads grows with what is dropped, not with the history (see
    :func:`_cut`): the session's changes are read from its newest undo point
    older than every snapshot dropped, up to a little past the newest dropped."""
    going = {info.id for info in dropping}
    if not going:
        return  # nothing dropped: the attribution (and the comparisons under it) need not load
    oldest = min(info.sequence for info in dropping)
    newest = max(info.sequence for info in dropping)
    for name in engine.store.sessions():
        stack_name = f"{SESSIONS}{name}/{UNDO}"
        start = _window_start(engine, stack_name, oldest, newest)
        if start is None:
            continue  # no undo point at or before what goes: no stretch of an undo holds it
        cut = _cut(engine, name, start, going, newest)
        if cut > start.sequence:
            engine.store.drop_from_stacks([stack_name], _points_below(engine, stack_name, cut), cut)


def _window_start(engine: Engine, stack_name: str, oldest: int, newest: int) -> SnapshotInfo | None:
    """The undo point the changes are read from: the newest one older than
    every snapshot dropped (a change wholly before them loses nothing), else the
    oldest; None if the oldest is newer than every one dropped. Reads the stack
    from its bottom (entries are pushed in the order snapshots are taken) only
    that far; an entry whose snapshot is gone is taken off on the way."""
    found: SnapshotInfo | None = None
    dead: set[bytes] = set()
    for _, sha in engine.store.iter_stack(stack_name, newest_first=False):
        seq = engine.store.seq_of(sha)
        if seq is None or not readable(engine, sha, seq):
            dead.add(sha)
            continue
        if found is not None and seq >= oldest:
            break
        found = engine.catalog.info(seq, sha)
        if seq >= oldest:
            break
    if dead:
        engine.store.drop_from_stacks([stack_name], dead)
    return found if found is not None and found.sequence <= newest else None


def _cut(engine: Engine, session: str, start: SnapshotInfo, going: set[str], newest: int) -> int:
    """The sequence below which the session's undo points lose their history:
    the end of the newest change from ``start`` that changed something and
    loses a snapshot (0: none). Changes are read up to a snapshot past
    ``newest`` (the newest dropped); a change reaching that end from a snapshot
    dropped may run further, so the stretch is doubled until none does (or it
    reaches now): a change wholly after ``newest`` loses nothing."""
    from snapshotter.history.attribution import session_changes

    span = max(newest - start.sequence, 64)
    while True:
        end = next(engine.catalog.oldest_first(newest + span), None)  # None: the stretch runs to now
        pieces = session_changes(engine, session, start, end)  # each begins and ends where its owner does
        last = pieces[-1] if pieces else None
        if end is None or last is None or last.after is not end or last.before.id not in going:
            break
        span *= 2
    cut = 0
    for piece in pieces:
        begin, finish = piece.before, piece.after
        lost = begin.id in going or (finish is not None and finish.id in going)
        if lost and (finish is None or begin.tree_id != finish.tree_id):
            cut = max(cut, (finish or begin).sequence)
    return cut


def _points_below(engine: Engine, stack_name: str, cut: int) -> set[bytes]:
    """The ids of the undo points numbered below ``cut``, read from the stack's bottom only that far."""
    found: set[bytes] = set()
    for _, sha in engine.store.iter_stack(stack_name, newest_first=False):
        seq = engine.store.seq_of(sha)
        if seq is not None and seq >= cut:
            break
        found.add(sha)
    return found


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
