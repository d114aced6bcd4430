"""The sessions ``sessions()`` lists."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class SessionInfo:
    """A named session that keeps history in this store (``sessions()``), as the
    agent hooks name theirs: ``<agent>-<the agent's session id>``."""

    name: str
    agent: str | None
    """The agent whose hooks made it (from its snapshots' ``agent`` metadata), if any."""
    agent_session_id: str | None
    """The agent's own id for the session (``agent-session`` metadata), if known."""
    turns: int
    """Turns begun in it (``pre-turn:<n>`` snapshots still kept)."""
    open_turn: bool
    """Its newest turn has not ended (no ``post-turn:<n>`` yet)."""
    last_activity: datetime
    """When its newest snapshot was taken."""
