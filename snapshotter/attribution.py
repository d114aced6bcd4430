"""Which changes belong to whom, and reverting them while keeping everyone else's.

A change is a pair of snapshots, ``(before, after)``: what happened between
them, or between ``before`` and the workspace now when ``after`` is None.
Reverting it brings ``after`` -> ``before`` into the workspace three ways
(``session.reverting``), so whatever else changed meanwhile stays.

What a session changed in a stretch of its history (a turn, the time since a
checkpoint) is, most precisely first:

1. if the session brackets its tool calls (it has closed one in the store:
   a ``tool-done:<id>`` snapshot), the union of its tool calls in that
   stretch: a ``tool:<id>`` snapshot before the call, a ``tool-done:<id>``
   snapshot after it (``tool_snapshot`` / ``tool_done``), a call not done by
   the stretch's end running to it (or to now); and of the reverts, merges,
   undos and redos it wrote there. A stretch without a call of its own holds
   nothing of its;
2. else the stretch itself, less what other sessions bracketed inside it
   (their tool calls, and the reverts, merges, undos and redos they wrote):
   the pieces between those. A stretch ends where the session last spoke: at
   its newest snapshot, or at now only while it has a turn open. So after
   ``end_turn()``, or a ``checkpoint()`` outside a turn, an edit made before
   the session's next call is nobody's, as a closed turn's revert already had it.

What cannot be told apart: within one bracket, or within an open unbracketed
turn, every change not bracketed by another session is taken as the
session's, including a person's edits and another session's unbracketed ones
(or those of a call still running) made at that time; brackets make that
window as short as the tool call. Edits between a session's brackets are
nobody's: its revert and its undo leave them.

The default ``after`` of ``revert(before)``: the ``post-turn:<n>`` of a
``pre-turn:<n>``, the ``tool-done:<id>`` of a ``tool:<id>``, else the next
snapshot of the same session that is not one the library took for itself
(``pre-restore``, ``pre-revert``...); none: the workspace now.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from snapshotter.compare.treediff import ScannedTree, TreeSide
from snapshotter.errors import SnapshotError
from snapshotter.gitstore.historyindex import key_of
from snapshotter.model import ConflictMode, Hunk, RevertResult, SnapshotInfo
from snapshotter.session.checkout import normalize_selection, selection_filter
from snapshotter.session.engine import Engine
from snapshotter.session.hunks import Within, hunk_steps, listed
from snapshotter.session.reverting import SINCE, Step, bring_in
from snapshotter.worktree.pathnames import names_checker
from snapshotter.worktree.walker import Scan

Pair = tuple[SnapshotInfo, SnapshotInfo | None]
"""A change: (before, after); after None: the workspace now."""

TOOL, TOOL_DONE = "tool:", "tool-done:"
PRE_TURN, POST_TURN = "pre-turn:", "post-turn:"
POST_RESTORE = "post-restore"
CLOSING_LABELS = frozenset({"post-revert", "post-merge", "post-undo", "post-redo", POST_RESTORE})
"""Snapshots closing a change the library wrote three ways (its metadata ``since`` names where it began)."""
INTERNAL_LABELS = frozenset({"pre-restore", "pre-undo", "pre-redo", "pre-revert", "pre-merge"}) | CLOSING_LABELS
"""Labels of the snapshots the library takes for itself."""


def label_number(label: str | None, prefix: str) -> int | None:
    """The N of a label ``<prefix>N`` (``pre-turn:4``; with ``""``, a bare number), or
    None. ASCII digits only: ``'²'.isdigit()`` is true and ``int('²')`` raises."""
    tail = (label or "")[len(prefix) :] if (label or "").startswith(prefix) else ""
    return int(tail) if tail.isascii() and tail.isdigit() else None


def same_session(info: SnapshotInfo, session: str | None) -> bool:
    return info.session == session


def after_of(engine: Engine, before: SnapshotInfo) -> SnapshotInfo | None:
    """The snapshot a change starting at ``before`` ends at, by the rule in the
    module's docstring; None: the change runs to the workspace now."""
    label = before.label or ""
    pairs = {PRE_TURN: POST_TURN, TOOL: TOOL_DONE}
    later = (info for info in engine.catalog.oldest_first(before.sequence) if same_session(info, before.session))
    for start, end in pairs.items():
        if label.startswith(start):
            wanted = end + label[len(start) :]
            return next((info for info in later if info.label == wanted), None)
    return next((info for info in later if (info.label or "") not in INTERNAL_LABELS), None)


def tool_calls(
    engine: Engine, session: str | None, start: SnapshotInfo, end: SnapshotInfo | None, *, others: bool = False
) -> list[Pair]:
    """The session's bracketed changes between ``start`` and ``end`` (None: now),
    oldest first: its tool calls (the ``tool:`` snapshot, its ``tool-done:``
    one, None while running) and the changes the library wrote for it three
    ways (revert, merge, undo, redo: see ``CLOSING_LABELS``). With ``others``,
    every other session's, done there."""
    window = [
        info
        for info in engine.catalog.newest_first_down_to(start.sequence)
        if same_session(info, session) != others and (end is None or info.sequence <= end.sequence)
    ]
    window.reverse()
    calls: list[Pair] = []
    begun: dict[tuple[str | None, str], SnapshotInfo] = {}
    for info in window:
        label = info.label or ""
        if label in CLOSING_LABELS:
            opened_at = _snapshot(engine, info.metadata.get(SINCE, ""))
            if opened_at is not None:
                calls.append((opened_at, info))
        elif label.startswith(TOOL):
            begun[info.session, label[len(TOOL) :]] = info
        elif label.startswith(TOOL_DONE):
            opened = begun.pop((info.session, label[len(TOOL_DONE) :]), None)
            if opened is not None:
                calls.append((opened, info))
    if not others:  # a call not done by the stretch's end runs to its end (None: now)
        calls.extend((opened, end) for opened in begun.values())
    return sorted(calls, key=lambda pair: pair[0].sequence)


def closing(engine: Engine, label: str) -> str | None:
    """``label`` if a change written now should be closed by a snapshot: always in a
    named session, whose own undo reverts its changes since an undo point and
    must find this one among them; else only when a named session keeps history
    in this store, whose revert of a stretch holding the change must tell it
    apart (a closing snapshot costs a walk of the folder)."""
    if engine.session is not None or set(engine.store.sessions()):
        return label
    return None


def _snapshot(engine: Engine, ref: str) -> SnapshotInfo | None:
    try:
        return engine.catalog.get(ref) if ref else None
    except SnapshotError:
        return None  # dropped since: that change can no longer be told apart


def session_changes(engine: Engine, session: str | None, start: SnapshotInfo, end: SnapshotInfo | None) -> list[Pair]:
    """What ``session`` changed from ``start`` to ``end`` (None: now): its tool
    calls there, and its undos, reverts and merges, if it bracketed any call;
    else the stretch in pieces, the stretches between other sessions'
    bracketed changes inside it (those are theirs)."""
    own = tool_calls(engine, session, start, end)
    if brackets_calls(engine, session):
        return own
    if end is None:
        end = _last_word(engine, session, start)
    theirs = tool_calls(engine, session, start, end, others=True)
    pieces: list[Pair] = []
    cursor, reached = start, start.sequence
    for opened, closed in sorted(theirs, key=lambda pair: pair[1].sequence if pair[1] is not None else 0):
        assert closed is not None  # another session's brackets are closed ones
        if closed.sequence <= reached:
            continue  # inside a bracket already cut out
        if opened.sequence > reached:
            pieces.append((cursor, opened))
        cursor, reached = closed, closed.sequence
    pieces.append((cursor, end))
    return pieces


def brackets_calls(engine: Engine, session: str | None) -> bool:
    """Whether ``session`` brackets its tool calls: it has closed one here (a
    ``tool-done:`` snapshot; a ``tool:`` snapshot alone may be a plain label)."""
    facts = engine.catalog.index.current().sessions.get(key_of(session))
    return facts is not None and facts.closed_calls > 0


def _last_word(engine: Engine, session: str | None, start: SnapshotInfo) -> SnapshotInfo | None:
    """Where an unbracketed stretch of ``session`` from ``start`` ends: now (None)
    while its newest turn is open, else its newest snapshot."""
    facts = engine.catalog.index.current().sessions.get(key_of(session))
    if facts is not None and facts.open_turn() is not None:
        return None  # its turn is open: what happens now is the turn's
    newest = facts.newest if facts is not None else None
    if newest is None or newest[0] < start.sequence:
        return start
    return _snapshot(engine, newest[1]) or start


def revert_changes(
    engine: Engine,
    pairs: Sequence[Pair],
    *,
    files: Sequence[str | os.PathLike[str]] | None = None,
    dry_run: bool = False,
    conflicts: ConflictMode = "abort",
    safety_label: str = "pre-revert",
    message: str = "before reverting",
    closing_label: str | None = "post-revert",
    hunks: Sequence[str] | None = None,
) -> RevertResult:
    """Revert each change of ``pairs``, newest first, over the workspace as it is
    now; a change that runs to now runs to this very scan of the workspace.
    With ``hunks``, only those hunks of the changes (``session.hunks``).
    What is written is closed by a ``closing_label`` snapshot (see ``bring_in``)."""
    current = engine.scan(write=not dry_run)
    sides = change_sides(engine, sorted(pairs, key=_start, reverse=True), current)
    if hunks is None:
        steps = [Step(end, start) for start, end in sides]
    else:
        steps = hunk_steps(engine, sides, hunks, _within(engine, files))
    return bring_in(
        engine,
        steps,
        files=files,
        dry_run=dry_run,
        conflicts=conflicts,
        safety_label=safety_label,
        message=message,
        labels=("workspace", "reverted"),
        current=current,
        closing_label=closing(engine, closing_label) if closing_label is not None else None,
    )


def change_sides(engine: Engine, pairs: Sequence[Pair], current: Scan) -> list[tuple[TreeSide, TreeSide]]:
    """Each change's (start, end) as tree sides, read with their names checked; a
    change that runs to now ends at ``current``."""
    check = names_checker(engine.host)

    def side(info: SnapshotInfo | None) -> TreeSide:
        return engine.stored(info, check_names=check) if info is not None else ScannedTree(current)

    return [(side(before), side(after)) for before, after in pairs]


def changed_hunks(
    engine: Engine, pairs: Sequence[Pair], files: Sequence[str | os.PathLike[str]] | None, split: bool = False
) -> list[Hunk]:
    """The hunks of each change of ``pairs`` (with ``split``, their parts),
    oldest change first, in path order: what ``revert_changes(..., hunks=...)``
    chooses from."""
    sides = change_sides(engine, sorted(pairs, key=_start), engine.scan(write=False))
    return [hunk for found in listed(engine, sides, _within(engine, files)) for hunk in found.listed(split)]


def _within(engine: Engine, files: Sequence[str | os.PathLike[str]] | None) -> Within | None:
    return selection_filter(normalize_selection(engine.workspace, files)) if files is not None else None


def _start(pair: Pair) -> int:
    return pair[0].sequence
