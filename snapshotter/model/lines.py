"""Line-level values: a change's hunks (``hunks``, a revert's ``hunks=``) and
where each line comes from (``blame``). Apart from ``changes``: making a frozen
dataclass costs about half a millisecond, and a status makes none of these."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Hunk:
    """One hunk of a change, as ``git diff`` cuts it, that a revert can take back
    alone (``revert(..., hunks=[id])``). ``id`` is ``PATH:DIGEST`` of the path and
    the hunk's lines: the same change lists the same id in any process, and a
    file changed since lists others. ``kind`` is ``lines`` (an ``@@`` hunk),
    ``mode`` (the exec bit alone) or ``file`` (a binary file, a symlink, a type
    change or a file too large to diff: the whole path). Line numbers are the
    ``@@`` header's."""

    id: str
    path: str
    kind: str
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    additions: int
    deletions: int
    patch: str
    """The ``@@`` hunk (for ``mode`` and ``file`` hunks, what changed, in words)."""


@dataclass(frozen=True)
class LineOrigin:
    """Where a line of a file comes from (``blame``): the snapshot whose change
    last touched it, and whose that change was.

    ``who`` is ``session`` (inside one session's tool call, or its unbracketed
    turn: ``session``, ``agent``, ``turn`` and ``tool_call`` say which),
    ``person`` (inside no bracket or unbracketed turn), ``unknown`` (inside
    brackets of several sessions at once), ``workspace`` (not snapshotted yet:
    the file changed since the newest snapshot) or ``boundary`` (the line is
    at least as old as the oldest snapshot read: who made it is older history).
    """

    who: str
    snapshot_id: str | None = None
    session: str | None = None
    agent: str | None = None
    turn: int | None = None
    tool_call: str | None = None
    created_at: datetime | None = None
    boundary: bool = False


@dataclass(frozen=True)
class BlameRun:
    """Consecutive lines of one origin: lines ``start`` .. ``start + count - 1``
    of the file now (from 1) were lines ``source_start`` .. of the origin's snapshot."""

    start: int
    count: int
    source_start: int
    origin: LineOrigin


@dataclass(frozen=True)
class BlameResult:
    """``blame(path)``: the file's lines now, in runs of one origin each
    (with ``session``: only the runs that session made; the other lines have none)."""

    path: str
    lines: tuple[str, ...]
    runs: tuple[BlameRun, ...]
    depth: int
    """Snapshots read."""
    limit: int
    limited: bool
    """The walk stopped at ``limit`` with lines left: those are ``boundary`` lines at the limit."""
    session: str | None = None
