"""What changing the workspace did: restores, reverts, merges, undo and redo, forks."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Literal

from snapshotter.model.snapshots import SkippedPath


@dataclass(frozen=True)
class RestoreResult:
    """What a restore did (or, with ``dry_run``, would do)."""

    written: int
    deleted: int
    unchanged: int
    written_paths: tuple[str, ...] = ()
    deleted_paths: tuple[str, ...] = ()
    dry_run: bool = False
    target_id: str = ""
    safety_snapshot_id: str | None = None
    kept: tuple[SkippedPath, ...] = ()
    """Paths the snapshot would change but the workspace holds untracked
    (unreadable, too large, not a regular file...): left as they are, with why."""
    skipped: tuple[SkippedPath, ...] = ()
    """Paths of the snapshot this platform cannot hold (reason ``name-not-allowed``,
    ``detail`` says why): neither written nor deleted, the rest restored."""


ConflictMode = Literal["abort", "markers", "ours"]
"""How a revert or merge settles paths it cannot merge: write nothing at all
(``abort``), keep the workspace's version of them (``ours``), or also write
git-style conflict markers into the text files that clashed (``markers``)."""


class ConflictReason(str, Enum):
    """Why a revert or merge could not bring a change into a path."""

    CONTENT = "content"
    """Both sides changed the same lines of a text file, differently."""
    BINARY = "binary"
    """A binary file changed on both sides: it cannot be merged by lines."""
    MODE = "mode"
    """Both sides changed the exec bit, differently."""
    SYMLINK = "symlink"
    """A symlink changed on both sides (or turned into a file on one)."""
    DELETED = "deleted"
    """One side deleted the file, the other changed it."""
    TYPE = "type"
    """A file on one side is a folder on the other."""
    UNTRACKED = "untracked"
    """The workspace holds something there that the scan does not track
    (ignored, too large, unreadable...): never overwritten or deleted."""
    TOO_LARGE = "too-large"
    """A version is too large to merge in memory (over 8 MiB)."""


@dataclass(frozen=True)
class Conflict:
    """A path a revert or merge could not settle, and why."""

    path: str
    reason: ConflictReason
    detail: str = field(default="", compare=False)


@dataclass(frozen=True)
class RevertResult:
    """What a revert or a merge did (or, with ``dry_run``, would do).

    Every path the change touched is in exactly one of ``reverted`` (now holds
    the change's far side: written, deleted or recreated), ``merged`` (both
    sides' edits combined, cleanly), ``unchanged`` (already as the change
    would leave it) and ``conflicts``. ``applied`` is False when nothing was
    written because of conflicts (``conflicts="abort"``) or a dry run, and the
    result is then falsy, so an undo that did nothing never reads as done.
    """

    reverted: tuple[str, ...]
    merged: tuple[str, ...]
    conflicts: tuple[Conflict, ...]
    unchanged: tuple[str, ...]
    safety_snapshot_id: str | None
    dry_run: bool
    applied: bool = True
    marked: tuple[str, ...] = ()
    """Conflicting text files written with git-style conflict markers (``conflicts="markers"``)."""
    skipped: tuple[SkippedPath, ...] = ()
    """Paths this platform cannot hold (see ``RestoreResult.skipped``): left as they are."""
    unattributed: tuple[str, ...] = ()
    """Paths another session's overlapping call may have changed (whose change is unknown): kept as they are."""

    def __bool__(self) -> bool:
        return self.applied


@dataclass(frozen=True)
class UndoResult:
    """What ``undo()`` or ``redo()`` did. False (``ok`` unset) when nothing was restored."""

    ok: bool
    action: str
    """"undo" or "redo"."""
    message: str
    target_id: str | None = None
    """The snapshot the workspace now matches."""
    saved_id: str | None = None
    """The snapshot holding the state that was replaced (what the opposite action returns to)."""
    restore: RestoreResult | None = None
    """What the restore did (the anonymous session undoes by restoring)."""
    revert: RevertResult | None = None
    """What the revert did (a named session undoes its own changes only), or
    why it was refused (its conflicts, with ``ok`` False)."""

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class ForkInfo:
    """A fork of this workspace: a folder made from one of its snapshots by ``fork()``."""

    path: str
    fork_point_id: str
    """The snapshot it was made from (also its first snapshot, and what ``merge`` compares from)."""
    created_at: datetime
    exists: bool
    """The folder is still there (a fork is a folder of its own: nothing here removes it)."""
