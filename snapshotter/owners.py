"""Whose each step of a folder's history is: the change from one snapshot to the
next, told by the rule ``attribution`` reverts by, for ``blame``.

A step (``before`` -> ``after``, two snapshots in a row) lies inside a bracket
when the bracket opened at or before ``before`` and closed at or after
``after``. Brackets are tool calls (``tool:<id>`` .. ``tool-done:<id>``; a call
never closed runs to its turn's end, or to now) and the changes the library
wrote for a session (a revert, merge, undo or redo: its safety snapshot ..
its closing snapshot). Then:

- inside brackets of one session only: that session's, with the call (the
  innermost one) and the turn the call ran in;
- inside brackets of several sessions at once: ``unknown`` (they ran at the
  same moment; which wrote what cannot be told);
- inside no bracket, but inside an open turn of sessions that bracket no calls
  (they cannot say more): that session's turn if one, else ``unknown``;
- else the ``person``'s: nobody's bracket or unbracketed turn held it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from snapshotter.attribution import CLOSING_LABELS, POST_TURN, PRE_TURN, TOOL, TOOL_DONE, label_number
from snapshotter.model import SnapshotInfo
from snapshotter.session.reverting import SINCE

PERSON, SESSION, UNKNOWN = "person", "session", "unknown"
OPEN = math.inf


@dataclass(frozen=True)
class Owner:
    """Who made one step: ``who`` is ``session``, ``person`` or ``unknown``."""

    who: str
    session: str | None = None
    turn: int | None = None
    tool_call: str | None = None


@dataclass(frozen=True)
class _Span:
    session: str | None
    start: int
    end: float
    call: str | None = None
    turn: int | None = None


class Owners:
    """The brackets and turns of every session of a store (``infos``: every
    snapshot, any order), asked step by step (see the module's docstring)."""

    def __init__(self, infos: list[SnapshotInfo]) -> None:
        ordered = sorted(infos, key=lambda info: info.sequence)
        by_id = {info.id: info for info in ordered}
        self.turns: list[_Span] = []
        opened_turns: dict[tuple[str | None, str], SnapshotInfo] = {}
        for info in ordered:
            label = info.label or ""
            if label.startswith(PRE_TURN):
                opened_turns[info.session, label[len(PRE_TURN) :]] = info
            elif label.startswith(POST_TURN):
                pre = opened_turns.pop((info.session, label[len(POST_TURN) :]), None)
                if pre is not None:
                    self.turns.append(_Span(info.session, pre.sequence, info.sequence, turn=_number(pre)))
        self.turns.extend(_Span(pre.session, pre.sequence, OPEN, turn=_number(pre)) for pre in opened_turns.values())
        self.calls: list[_Span] = []
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
                if since is not None:
                    self.calls.append(self._call(since, info.sequence, None))
        for (_, call), opened in begun.items():  # never closed: to its turn's end, or now
            self.calls.append(self._call(opened, self._turn_end(opened), call))
        self.bracketing = {span.session for span in self.calls if span.call is not None}
        self.agents: dict[str | None, str] = {}
        """Session -> the agent its hooks name (``agent`` metadata), where one does."""
        for info in ordered:
            if info.metadata.get("agent"):
                self.agents.setdefault(info.session, info.metadata["agent"])

    def _turn_of(self, session: str | None, start: int, end: float) -> _Span | None:
        inside = [t for t in self.turns if t.session == session and t.start <= start and t.end >= end]
        return max(inside, key=lambda span: span.start) if inside else None

    def _turn_end(self, opened: SnapshotInfo) -> float:
        turn = self._turn_of(opened.session, opened.sequence, opened.sequence)
        return turn.end if turn is not None else OPEN

    def _call(self, opened: SnapshotInfo, end: float, call: str | None) -> _Span:
        turn = self._turn_of(opened.session, opened.sequence, opened.sequence)
        return _Span(opened.session, opened.sequence, end, call, turn.turn if turn is not None else None)

    def of(self, before: SnapshotInfo, after: SnapshotInfo) -> Owner:
        """Whose the step ``before`` -> ``after`` is."""
        start, end = before.sequence, after.sequence
        holding = [span for span in self.calls if span.start <= start and span.end >= end]
        sessions = {span.session for span in holding}
        if len(sessions) == 1:
            inner = max(holding, key=lambda span: span.start)
            return Owner(SESSION, inner.session, inner.turn, inner.call)
        if sessions:
            return Owner(UNKNOWN)
        turns = [t for t in self.turns if t.session not in self.bracketing and t.start <= start and t.end >= end]
        if len({t.session for t in turns}) == 1:
            inner = max(turns, key=lambda span: span.start)
            return Owner(SESSION, inner.session, inner.turn)
        return Owner(UNKNOWN) if turns else Owner(PERSON)


def _number(pre: SnapshotInfo) -> int | None:
    return label_number(pre.label, PRE_TURN)
