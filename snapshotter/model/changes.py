"""What differs: ``status``, ``diff``, ``hunks`` and ``blame``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum


class ChangeStatus(str, Enum):
    """How a path differs between two states."""

    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"
    TYPE_CHANGED = "type_changed"
    UNREADABLE = "unreadable"
    """It exists in the workspace but cannot be read: kept as last recorded (never
    deleted or overwritten by a restore)."""


@dataclass(frozen=True)
class FileChange:
    """A path that differs from the last snapshot (what ``status()`` lists)."""

    path: str
    status: ChangeStatus
    old_mode: int | None
    new_mode: int | None


@dataclass(frozen=True)
class FileDiff:
    """One changed path with its line counts; ``patch`` is computed on first use.

    ``binary`` files (a NUL byte in their first 8,000 bytes, git's rule, or
    ``binary``/``-diff`` in ``.gitattributes``) report zero additions and
    deletions, as ``git diff --numstat`` prints ``-``.
    """

    path: str
    status: ChangeStatus
    additions: int
    deletions: int
    binary: bool
    old_mode: int | None
    new_mode: int | None
    old_id: str | None = None
    new_id: str | None = None
    _patch_fn: Callable[[], str] | None = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def patch(self) -> str:
        """A git-style unified diff of this path (empty if it cannot be made)."""
        return self._patch_fn() if self._patch_fn is not None else ""


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
