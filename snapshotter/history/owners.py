"""Whose each change in a folder's history is: one rule, which reverts
(``attribution``) and ``blame`` both go by.

The snapshots of a store are one line of history, every session's in the
order they were taken; a step is the change from one snapshot to a later one
(or to the workspace now). A bracket holds a step when it opened at or before
the step's start and closed at or after its end. Brackets are tool calls
(``tool:<id>`` .. ``tool-done:<id>``; a call never closed runs to its turn's
end, or to now) and the changes the library wrote for a session (a revert,
merge, undo or redo: its safety snapshot .. its closing snapshot). A call may
say which files it writes (``writes``, the ``tool:`` snapshot's metadata: a
file tool names its file; a tool that only reads names none).

A change to one path in a step held by brackets is, of the brackets holding it
that could have written that path (those naming no files: a shell command may
write anything; and those naming that path; if none could, all):

1. the one session's, if that session's brackets alone hold it;
2. else the innermost bracket's (the last opened; of two opened at one
   snapshot, the first to close), if it closed inside every other session's
   bracket there: a call made while another session's longer call ran is its
   own, not the enclosing call's;
3. else nobody can tell (brackets that overlap without nesting: both calls
   ran at that moment): ``unknown``, and a revert keeps it and says so.

So a call that names its files claims only those: a change to another file
made inside its bracket stays the enclosing call's. And the files a call names
decide between sessions only: they never take a change from the one session
whose brackets alone held it.

A snapshot whose tree is not the folder at its moment (``abandoned:<n>``: a
state a checkpoint ended the redo of, kept under a new number) begins and ends
no step.

A step no bracket holds is, inside an open turn of sessions that bracket no
calls (they cannot say more), that session's turn if one, else ``unknown``;
else the ``person``'s.
"""

from __future__ import annotations

import json
import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from snapshotter.model import SnapshotInfo

PERSON, SESSION, UNKNOWN = "person", "session", "unknown"
OPEN = math.inf
TOOL, TOOL_DONE = "tool:", "tool-done:"
PRE_TURN, POST_TURN = "pre-turn:", "post-turn:"
POST_RESTORE = "post-restore"
CLOSING_LABELS = frozenset({"post-revert", "post-merge", "post-undo", "post-redo", POST_RESTORE})
"""Snapshots closing a change the library wrote three ways (its metadata ``since`` names where it began)."""
INTERNAL_LABELS = frozenset({"pre-restore", "pre-undo", "pre-redo", "pre-revert", "pre-merge"}) | CLOSING_LABELS
"""Labels of the snapshots the library takes for itself."""
ABANDONED = "abandoned:"
"""The label of a state a checkpoint ended the redo of, kept as a snapshot of its own (``history``)."""
WRITES = "writes"
"""A ``tool:`` snapshot's metadata: the workspace paths the call says it writes, as a JSON list."""


def in_time(info: SnapshotInfo) -> bool:
    """Whether ``info`` holds the folder as it was at its moment (not a copy of an older state)."""
    return not (info.label or "").startswith(ABANDONED)


def label_number(label: str | None, prefix: str) -> int | None:
    """The N of a label ``<prefix>N`` (``pre-turn:4``; with ``""``, a bare number), or
    None. ASCII digits only: ``'²'.isdigit()`` is true and ``int('²')`` raises."""
    tail = (label or "")[len(prefix) :] if (label or "").startswith(prefix) else ""
    return int(tail) if tail.isascii() and tail.isdigit() else None


@dataclass(frozen=True)
class Owner:
    """Who made one step: ``who`` is ``session``, ``person`` or ``unknown``."""

    who: str
    session: str | None = None
    turn: int | None = None
    tool_call: str | None = None


@dataclass(frozen=True)
class Span:
    """A bracket (or a turn) of one session: snapshot sequence ``start`` .. ``end``."""

    session: str | None
    start: int
    end: float
    call: str | None = None
    turn: int | None = None
    writes: frozenset[str] | None = None
    """The paths the call says it writes (None: it does not say)."""
    closed: bool = True
    """Closed by its own end snapshot (else it runs to its turn's end, or to now)."""


class Owners:
    """The brackets and turns of every session of a store (``infos``: every
    snapshot, any order), asked step by step (see the module's docstring)."""

    def __init__(self, infos: Sequence[SnapshotInfo]) -> None:
        from snapshotter.engine.session.reverting import SINCE

        ordered = sorted(infos, key=lambda info: info.sequence)
        by_id = {info.id: info for info in ordered}
        self.turns: list[Span] = []
        opened_turns: dict[tuple[str | None, str], SnapshotInfo] = {}
        for info in ordered:
            label = info.label or ""
            if label.startswith(PRE_TURN):
                opened_turns[info.session, label[len(PRE_TURN) :]] = info
            elif label.startswith(POST_TURN):
                pre = opened_turns.pop((info.session, label[len(POST_TURN) :]), None)
                if pre is not None:
                    self.turns.append(Span(info.session, pre.sequence, info.sequence, turn=_number(pre)))
        self.turns.extend(Span(pre.session, pre.sequence, OPEN, turn=_number(pre)) for pre in opened_turns.values())
        self._turn_starts: dict[str | None, tuple[list[int], list[Span]]] = {}
        """Session -> its turns' starts and its turns, by start (a session's turns follow one another)."""
        for turn in sorted(self.turns, key=lambda span: span.start):
            starts, spans = self._turn_starts.setdefault(turn.session, ([], []))
            starts.append(turn.start)
            spans.append(turn)
        self.calls: list[Span] = []
        begun: dict[tuple[str | None, str], SnapshotInfo] = {}
        for info in ordered:
            label = info.label or ""
            if label.startswith(TOOL):
                begun[info.session, label[len(TOOL) :]] = info
            elif label.startswith(TOOL_DONE):
                opened = begun.pop((info.session, label[len(TOOL_DONE) :]), None)
                if opened is not None:
                    self.calls.append(self._call(opened, info.sequence, label[len(TOOL_DONE) :]))
            elif label in CLOSING_LABELS:
                since = by_id.get(info.metadata.get(SINCE, ""))
                if since is not None:  # the closing snapshot's session's (its safety snapshot may be another's)
                    self.calls.append(self._call(since, info.sequence, None, session=info.session))
        for (_, call), opened in begun.items():  # never closed: to its turn's end, or now
            self.calls.append(self._call(opened, self._turn_end(opened), call, closed=False))
        self.bracketing = {span.session for span in self.calls if span.call is not None}
        self.agents: dict[str | None, str] = {}
        """Session -> the agent its hooks name (``agent`` metadata), where one does."""
        for info in ordered:
            if info.metadata.get("agent"):
                self.agents.setdefault(info.session, info.metadata["agent"])

    def _turn_of(self, session: str | None, start: int, end: float) -> Span | None:
        """The session's newest turn begun at or before ``start`` if it runs to ``end``."""
        starts, spans = self._turn_starts.get(session, ([], []))
        at = bisect_right(starts, start) - 1
        return spans[at] if at >= 0 and spans[at].end >= end else None

    def _turn_end(self, opened: SnapshotInfo) -> float:
        turn = self._turn_of(opened.session, opened.sequence, opened.sequence)
        return turn.end if turn is not None else OPEN

    def _call(
        self, opened: SnapshotInfo, end: float, call: str | None, closed: bool = True, session: str | None = None
    ) -> Span:
        whose = opened.session if call is not None else session
        turn = self._turn_of(whose, opened.sequence, opened.sequence)
        number = turn.turn if turn is not None else None
        writes = _writes(opened) if call is not None else None
        return Span(whose, opened.sequence, end, call, number, writes, closed)

    def holding(self, start: int, end: float, among: Sequence[Span] | None = None) -> list[Span]:
        """The brackets (of ``among``, else all) holding the step from sequence
        ``start`` to ``end`` (``OPEN``: now)."""
        return [span for span in (self.calls if among is None else among) if span.start <= start and span.end >= end]

    def meeting(self, start: int, end: float) -> list[Span]:
        """The brackets that hold some step from ``start`` to ``end``: what ``holding`` need look at there."""
        return [span for span in self.calls if span.start < end and span.end > start]

    def of(self, before: SnapshotInfo, after: SnapshotInfo, path: str | None = None) -> Owner:
        """Whose the change to ``path`` (None: a path no call names) in the step
        ``before`` -> ``after`` is."""
        start, end = before.sequence, after.sequence
        holding = self.holding(start, end)
        if holding:
            inner = decide(holding, path)
            return Owner(SESSION, inner.session, inner.turn, inner.call) if inner is not None else Owner(UNKNOWN)
        turns = [t for t in self.turns if t.session not in self.bracketing and t.start <= start and t.end >= end]
        if len({t.session for t in turns}) == 1:
            inner = max(turns, key=lambda span: span.start)
            return Owner(SESSION, inner.session, inner.turn)
        return Owner(UNKNOWN) if turns else Owner(PERSON)


def decide(holding: Sequence[Span], path: str | None) -> Span | None:
    """Of the brackets ``holding`` a step (at least one), the one whose change to
    ``path`` (None: a path no call names) is, by the rules of the module's
    docstring; None: it cannot be told."""
    pool = [span for span in holding if span.writes is None or path in span.writes] or list(holding)
    inner = max(pool, key=lambda span: (span.start, -span.end))
    if all(span.session == inner.session for span in pool):
        return inner
    others = [span for span in pool if span.session != inner.session]
    if inner.closed and all(span.start <= inner.start and inner.end <= span.end for span in others):
        return inner
    return None


def named_paths(holding: Sequence[Span]) -> frozenset[str]:
    """Every path a bracket of ``holding`` says it writes."""
    return frozenset(path for span in holding if span.writes is not None for path in span.writes)


def _writes(opened: SnapshotInfo) -> frozenset[str] | None:
    raw = opened.metadata.get(WRITES)
    if raw is None:
        return None
    try:
        found = json.loads(raw)
    except ValueError:
        return None
    return frozenset(found) if isinstance(found, list) and all(isinstance(p, str) for p in found) else None


def _number(pre: SnapshotInfo) -> int | None:
    return label_number(pre.label, PRE_TURN)
