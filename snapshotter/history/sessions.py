"""The named sessions a store holds, read from its catalog: each one's agent, turns,
whether a turn is open, and when it was last active.

Apart from ``undo`` because listing them reads only the snapshots' labels and
metadata: ``snapshotter sessions`` loads no restore, revert or comparison."""

from __future__ import annotations

from typing import Any

from snapshotter.engine.session.engine import Engine
from snapshotter.history.owners import POST_TURN, PRE_TURN
from snapshotter.model import SessionInfo


def sessions(engine: Engine) -> list[SessionInfo]:
    """Every named session with snapshots here, the most recently active first."""
    seen: dict[str, dict[str, Any]] = {}
    for info in engine.catalog.newest_first():  # newest first: the first of a session is its latest word
        if info.session is None:
            continue
        found = seen.setdefault(info.session, {"last": info.created_at, "turns": 0, "open": None, "meta": {}})
        label = info.label or ""
        if label.startswith((PRE_TURN, POST_TURN)) and found["open"] is None:
            found["open"] = label.startswith(PRE_TURN)
        found["turns"] += label.startswith(PRE_TURN)
        for key in ("agent", "agent-session"):
            if info.metadata.get(key):
                found["meta"].setdefault(key, info.metadata[key])
    return [
        SessionInfo(
            name,
            data["meta"].get("agent"),
            data["meta"].get("agent-session"),
            data["turns"],
            bool(data["open"]),
            data["last"],
        )
        for name, data in seen.items()
    ]
