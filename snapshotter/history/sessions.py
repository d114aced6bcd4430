"""The named sessions a store holds, from its history index: each one's agent, turns,
whether a turn is open, and when it was last active.

Apart from ``undo`` because listing them reads no snapshot at all: ``snapshotter
sessions`` loads no restore, revert or comparison, and costs the same at any length
of history."""

from __future__ import annotations

from datetime import datetime, timezone

from snapshotter.engine.gitstore.historyindex import SessionFacts
from snapshotter.engine.session.engine import Engine
from snapshotter.model import SessionInfo


def sessions(engine: Engine) -> list[SessionInfo]:
    """Every named session with snapshots here, the most recently active first
    (from the history index: no snapshot is read)."""
    facts = engine.catalog.index.current().sessions
    named = sorted(((name, f) for name, f in facts.items() if name and f.count), key=lambda item: -_newest(item[1]))
    return [
        SessionInfo(
            name,
            found.agent,
            found.agent_session,
            found.turns,
            found.open_turn() is not None,
            datetime.fromtimestamp(found.newest_time, tz=timezone.utc),
        )
        for name, found in named
    ]


def _newest(facts: SessionFacts) -> int:
    return facts.newest[0] if facts.newest is not None else 0
