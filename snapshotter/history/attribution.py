"""Which changes belong to whom, and reverting them while keeping everyone else's.

A change is a pair of snapshots, ``(before, after)``: what happened between
them, or between ``before`` and the workspace now when ``after`` is None.
Reverting it brings ``after`` -> ``before`` into the workspace three ways
(``session.reverting``), so whatever else changed meanwhile stays.

What a session changed in a stretch of its history (a turn, the time since a
checkpoint) is found step by step, each step being the change from one
snapshot of the store to the next (every session's, in the order they were
taken), by the rule of ``owners``:

1. if the session brackets its tool calls (it has closed one in the store:
   a ``tool-done:<id>`` snapshot), what its brackets hold in that stretch: its
   tool calls (``tool:<id>`` .. ``tool-done:<id>``; a call not done by the
   stretch's end runs to it, or to now) and the reverts, merges, undos and
   redos it wrote there. A stretch without a bracket of its own holds nothing
   of its;
2. else the stretch itself, less what other sessions' brackets hold inside it.
   A stretch ends where the session last spoke: at its newest snapshot, or at
   now only while it has a turn open. So after ``end_turn()``, or a
   ``checkpoint()`` outside a turn, an edit made before the session's next call
   is nobody's, as a closed turn's revert already had it.

Where another session's bracket holds a step too, each path is told apart by
``owners``: a call made inside another session's longer one is its own, a
file a call names is that call's, and where the brackets overlap without
nesting nobody can tell whose the change was: the revert keeps the path as
the workspace has it and names it (``RevertResult.unattributed``).

What cannot be told apart: within one session's bracket, or within an open
unbracketed turn, every change not bracketed by another session is taken as
the session's, including a person's edits and another session's unbracketed
ones made at that time; brackets make that window as short as the tool call.
Edits between a session's brackets are nobody's: its revert and its undo leave them.

The default ``after`` of ``revert(before)``: the ``post-turn:<n>`` of a
``pre-turn:<n>``, the ``tool-done:<id>`` of a ``tool:<id>``, else the next
snapshot of the same session that is not one the library took for itself
(``pre-restore``, ``pre-revert``...); none: the workspace now.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass

from snapshotter.engine.compare.overlay import Overlay
from snapshotter.engine.compare.treediff import ScannedTree, TreeSide, changes, entry_at
from snapshotter.engine.gitstore.historyindex import key_of
from snapshotter.engine.session.checkout import normalize_selection, selection_filter
from snapshotter.engine.session.engine import Engine
from snapshotter.engine.session.hunks import Within, hunk_steps, listed
from snapshotter.engine.session.reverting import SINCE, Step, bring_in
from snapshotter.engine.worktree.pathnames import names_checker
from snapshotter.errors import SnapshotError
from snapshotter.history.owners import (
    CLOSING_LABELS,
    INTERNAL_LABELS,
    OPEN,
    POST_TURN,
    PRE_TURN,
    TOOL,
    TOOL_DONE,
    Owners,
    Span,
    decide,
    in_time,
    named_paths,
)
from snapshotter.model import ConflictMode, Hunk, RevertResult, SnapshotInfo

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:  # annotations only: reading the store (``log``, ``show``) does not load the walker
    from snapshotter.engine.worktree.walker import Scan

Pair = tuple[SnapshotInfo, SnapshotInfo | None]
"""A change: (before, after); after None: the workspace now."""
MINE, OTHERS, UNTOLD = "mine", "others", "untold"
"""Whose a path's change in a step is, for the session asking: its own, another's, or nobody can tell."""


@dataclass(frozen=True)
class Share:
    """Which paths of a step's change are a session's: ``rest`` (``MINE``,
    ``OTHERS`` or ``UNTOLD``) for every path but ``named`` ones (path, verdict)."""

    rest: str
    named: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Piece:
    """A session's part of a change: all of it (``share`` None), or the paths its ``share`` gives it."""

    before: SnapshotInfo
    after: SnapshotInfo | None
    share: Share | None = None


ALL = Share(MINE)


def same_session(info: SnapshotInfo, session: str | None) -> bool:
    return info.session == session


def after_of(engine: Engine, before: SnapshotInfo) -> SnapshotInfo | None:
    """The snapshot a change starting at ``before`` ends at, by the rule in the
    module's docstring; None: the change runs to the workspace now."""
    label = before.label or ""
    pairs = {PRE_TURN: POST_TURN, TOOL: TOOL_DONE}
    later = [
        info for info in engine.catalog.newest_first_down_to(before.sequence) if same_session(info, before.session)
    ]
    later.reverse()  # oldest first
    for start, end in pairs.items():
        if label.startswith(start):
            wanted = end + label[len(start) :]
            return next((info for info in later if info.label == wanted), None)
    return next((info for info in later if (info.label or "") not in INTERNAL_LABELS), None)


def closing(engine: Engine, label: str) -> str | None:
    """``label`` if a change written now should be closed by a snapshot: always in a
    named session, whose own undo reverts its changes since an undo point and
    must find this one among them; else only when a named session keeps history
    in this store, whose revert of a stretch holding the change must tell it
    apart (a closing snapshot costs a walk of the folder)."""
    if engine.session is not None or set(engine.store.sessions()):
        return label
    return None


def session_changes(engine: Engine, session: str | None, start: SnapshotInfo, end: SnapshotInfo | None) -> list[Piece]:
    """What ``session`` changed from ``start`` to ``end`` (None: now), oldest
    first: each step of the store's history there that holds a change of its
    (see the module's docstring), steps alike joined into one piece."""
    later = _stretch(engine, start, end)
    infos = [*openers(engine, [*later, start], open_turns=False), start, *reversed(later)]  # oldest first
    owners = Owners(infos)
    bracketed = brackets_calls(engine, session)
    if not bracketed and end is None:
        end = _last_word(engine, session, start)
    points: list[SnapshotInfo | None] = [
        info
        for info in infos
        if start.sequence <= info.sequence and (end is None or info.sequence <= end.sequence) and in_time(info)
    ]
    if not points or points[0] is not start:
        points.insert(0, start)  # the stretch begins there, whatever its label
    if end is None:
        points.append(None)  # the workspace now
    pieces: list[Piece] = []
    near = owners.meeting(start.sequence, end.sequence if end is not None else OPEN)
    for before, after in zip(points, points[1:]):
        assert before is not None
        holding = owners.holding(before.sequence, after.sequence if after is not None else OPEN, near)
        share = _share(holding, session, bracketed)
        if share is None:
            continue
        last = pieces[-1] if pieces else None
        if last is not None and last.after is before and (last.share or ALL) == share:
            pieces[-1] = Piece(last.before, after, last.share)
        else:
            pieces.append(Piece(before, after, None if share == ALL else share))
    return pieces


def _stretch(engine: Engine, start: SnapshotInfo, end: SnapshotInfo | None) -> list[SnapshotInfo]:
    """The snapshots after ``start`` up to ``end`` (None: up to the newest),
    newest first: the stretch, never the whole history. A bracket opened in it
    and closed after ``end`` is read as still open, which holds the same steps
    of the stretch."""
    if end is None:
        return list(engine.catalog.newest_first_down_to(start.sequence))
    found: list[SnapshotInfo] = []
    for info in engine.catalog.oldest_first(start.sequence):
        if info.sequence > end.sequence:
            break
        found.append(info)
    return found[::-1]


def _share(holding: Sequence[Span], session: str | None, bracketed: bool) -> Share | None:
    """The session's share of a step the brackets ``holding`` hold (None: nothing of it)."""
    if not holding:
        return None if bracketed else ALL  # an unbracketed session's stretch, less others' brackets
    own = any(span.session == session for span in holding)

    def verdict(path: str | None) -> str:
        found = decide(holding, path)
        if found is None:
            return UNTOLD if own else OTHERS
        return MINE if found.session == session else OTHERS

    rest = verdict(None)
    named = tuple(sorted((path, v) for path in named_paths(holding) if (v := verdict(path)) != rest))
    if rest == OTHERS and not named:
        return None
    return Share(rest, named)


def _last_word(engine: Engine, session: str | None, start: SnapshotInfo) -> SnapshotInfo | None:
    """Where an unbracketed stretch of ``session`` from ``start`` ends: now (None)
    while its newest turn is open, else its newest snapshot (from the history index)."""
    facts = engine.catalog.index.current().sessions.get(key_of(session))
    if facts is not None and facts.open_turn() is not None:
        return None  # its turn is open: what happens now is the turn's
    newest = facts.newest if facts is not None else None
    if newest is None or newest[0] < start.sequence:
        return start
    try:
        return engine.catalog.info(newest[0], bytes.fromhex(newest[1]))
    except SnapshotError:
        return start


def brackets_calls(engine: Engine, session: str | None) -> bool:
    """Whether ``session`` brackets its tool calls: it has closed one here (a
    ``tool-done:`` snapshot; a ``tool:`` snapshot alone may be a plain label)."""
    facts = engine.catalog.index.current().sessions.get(key_of(session))
    return facts is not None and facts.closed_calls > 0


OPENERS_READ_BACK = 500
"""Snapshots older than a stretch read back at least, to find the brackets open across its start."""


def openers(engine: Engine, window: Sequence[SnapshotInfo], open_turns: bool = True) -> list[SnapshotInfo]:
    """The snapshots older than ``window`` (newest first: the stretch a call
    reads) that open brackets it holds the end of, or that are still open (a
    turn, a call) across it, oldest first: what ``Owners`` needs to tell whose
    each step of the stretch is, without reading the whole history. Found by
    id where a snapshot names its start (``since``), from the history index for
    what is open, else read back from the stretch's start until each is found,
    at most as many again as the stretch holds (``OPENERS_READ_BACK`` at least).
    A call never closed whose turn ended before the window (its agent killed
    mid-call) holds nothing of it and is not read: such calls pile up, one
    more commit to read for every later call, else. Without ``open_turns``, the
    turns open across the window are not read either: they decide only whose
    a step no bracket holds is (``Owners.of``, for ``blame``), never how far a
    bracket of the window runs (a call never closed in a turn still open runs
    to now, whether that turn's start is read or not), and every agent killed in a turn and never
    resumed leaves one open for good."""
    if not window:
        return []
    wanted: set[tuple[str | None, str]] = set()
    since: set[str] = set()
    for info in window:  # newest first: a closer is met before its opener, which ends the search for it
        label = info.label or ""
        for closing_kind, opening in ((POST_TURN, PRE_TURN), (TOOL_DONE, TOOL)):
            if label.startswith(closing_kind):
                wanted.add((info.session, opening + label[len(closing_kind) :]))
        if label.startswith((PRE_TURN, TOOL)):
            wanted.discard((info.session, label))
        if label in CLOSING_LABELS and info.metadata.get(SINCE):
            since.add(info.metadata[SINCE])
    oldest = window[-1].sequence
    for facts in engine.catalog.index.current().sessions.values():  # open across the whole window
        opened = facts.open_turn() if open_turns else None
        running = [mark for call, mark in facts.open_calls.items() if facts.ended_calls.get(call, oldest) >= oldest]
        since.update(sha for seq, sha in [*running, *([opened] if opened else [])] if seq < oldest)
    since -= {info.id for info in window}
    found: dict[str, SnapshotInfo] = {}
    for sha in since:
        try:
            info = engine.catalog.get(sha)
        except SnapshotError:
            continue
        if info.sequence < oldest:
            found[info.id] = info
    budget = max(len(window), OPENERS_READ_BACK)
    for read, info in enumerate(engine.catalog.newest_first(oldest)):
        if not wanted or read >= budget:
            break
        if (info.session, info.label or "") in wanted:
            wanted.discard((info.session, info.label or ""))
            found[info.id] = info
    return sorted(found.values(), key=lambda info: info.sequence)


def revert_changes(
    engine: Engine,
    pieces: Sequence[Pair | Piece],
    *,
    files: Sequence[str | os.PathLike[str]] | None = None,
    dry_run: bool = False,
    conflicts: ConflictMode = "abort",
    safety_label: str = "pre-revert",
    message: str = "before reverting",
    closing_label: str | None = "post-revert",
    hunks: Sequence[str] | None = None,
) -> RevertResult:
    """Revert each change of ``pieces`` (a session's part of it, for a ``Piece``),
    newest first, over the workspace as it is now; a change that runs to now
    runs to this very scan of the workspace. With ``hunks``, only those hunks of
    the changes (``session.hunks``). What is written is closed by a
    ``closing_label`` snapshot (see ``bring_in``). Paths whose owner cannot be
    told are kept, and named in the result's ``unattributed``."""
    current = engine.scan(write=not dry_run)
    ordered = sorted((_piece(p) for p in pieces), key=_start, reverse=True)
    sides = change_sides(engine, ordered, current)
    within = _within(engine, files)
    if hunks is None:
        steps = [Step(end, start) for start, end in sides]
    else:
        steps = hunk_steps(engine, sides, hunks, within)
    result = bring_in(
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
    untold = _untold(engine, ordered, current, within)
    return dataclasses.replace(result, unattributed=untold) if untold else result


def change_sides(engine: Engine, pieces: Sequence[Pair | Piece], current: Scan) -> list[tuple[TreeSide, TreeSide]]:
    """Each change's (start, end) as tree sides, read with their names checked; a
    change that runs to now ends at ``current``. A piece with a share ends at
    its start with the session's paths brought from its end (or at its end with
    the others' paths put back as its start has them)."""
    found = []
    for piece in map(_piece, pieces):
        start, end = _sides(engine, piece, current)
        share = piece.share
        if share is not None:
            if share.rest == MINE:
                end = Overlay(end, {path: entry_at(start, path) for path, v in share.named if v != MINE})
            else:
                end = Overlay(start, {path: entry_at(end, path) for path, v in share.named if v == MINE})
        found.append((start, end))
    return found


def _sides(engine: Engine, piece: Piece, current: Scan) -> tuple[TreeSide, TreeSide]:
    check = names_checker(engine.host)

    def side(info: SnapshotInfo | None) -> TreeSide:
        return engine.stored(info, check_names=check) if info is not None else ScannedTree(current)

    return side(piece.before), side(piece.after)


def _untold(engine: Engine, pieces: Sequence[Piece], current: Scan, within: Within | None) -> tuple[str, ...]:
    """The paths the pieces changed whose owner cannot be told (kept as they are)."""
    untold: set[str] = set()
    for piece in pieces:
        share = piece.share
        if share is None or (share.rest != UNTOLD and all(v != UNTOLD for _, v in share.named)):
            continue
        start, end = _sides(engine, piece, current)
        verdicts = dict(share.named)
        for change in changes(start, end, within):
            if verdicts.get(change.path, share.rest) == UNTOLD:
                untold.add(change.path)
    return tuple(sorted(untold))


def changed_hunks(
    engine: Engine,
    pieces: Sequence[Pair | Piece],
    files: Sequence[str | os.PathLike[str]] | None,
    split: bool = False,
) -> list[Hunk]:
    """The hunks of each change of ``pieces`` (with ``split``, their parts),
    oldest change first, in path order: what ``revert_changes(..., hunks=...)``
    chooses from."""
    ordered = sorted((_piece(p) for p in pieces), key=_start)
    sides = change_sides(engine, ordered, engine.scan(write=False))
    return [hunk for found in listed(engine, sides, _within(engine, files)) for hunk in found.listed(split)]


def _within(engine: Engine, files: Sequence[str | os.PathLike[str]] | None) -> Within | None:
    return selection_filter(normalize_selection(engine.workspace, files)) if files is not None else None


def _piece(change: Pair | Piece) -> Piece:
    return change if isinstance(change, Piece) else Piece(*change)


def _start(piece: Piece) -> int:
    return piece.before.sequence
