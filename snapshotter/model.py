"""Frozen values returned by the public API, and nothing else."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum


class SkipReason(str, Enum):
    """Why a path found in the workspace was left out of a snapshot."""

    TOO_LARGE = "too-large"
    UNREADABLE = "unreadable"
    SPECIAL = "not-a-regular-file"
    VANISHED = "vanished"
    CHANGING = "changed-while-reading"
    IGNORED = "ignored"
    """Only in restore results: the ignore rules (or default excludes) leave it out now."""
    NAME = "name-not-allowed"
    """A spelling of ``.git`` (git's own protections), or, in a restore, a name this
    platform cannot hold (a backslash or reserved name on Windows...)."""


@dataclass(frozen=True)
class SkippedPath:
    """A workspace path that the snapshot did not record, and why."""

    path: str
    reason: SkipReason
    detail: str = field(default="", compare=False)
    """Why, in words, where the reason alone does not say (not stored in snapshots)."""


@dataclass(frozen=True)
class SnapshotInfo:
    """One snapshot: a parentless commit pinned by ``refs/snapshots/<seq>``.

    ``files_changed``, ``additions`` and ``deletions`` compare the snapshot with
    the one taken before it (numstat, as ``git diff --numstat`` counts). A
    safety snapshot's (``pre-restore``...) line counts are counted when first
    asked for, not while the restore runs: the values are the same.
    """

    id: str
    tree_id: str
    message: str
    label: str | None
    created_at: datetime
    files_changed: int
    additions: int
    deletions: int
    metadata: Mapping[str, str] = field(default_factory=dict)
    skipped: tuple[SkippedPath, ...] = ()
    sequence: int = 0


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

    ``binary`` files (a NUL byte in their first 8,000 bytes, git's rule) report
    zero additions and deletions, as ``git diff --numstat`` prints ``-``.
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


@dataclass(frozen=True)
class ScanStats:
    """What the last walk of the workspace cost."""

    files_seen: int = 0
    files_hashed: int = 0
    bytes_hashed: int = 0
    dirs_seen: int = 0
    dirs_listed: int = 0
    """Folders read again; the others had the same stat as when last listed (see ``trust_folder_mtimes``)."""
    seconds: float = 0.0
    incremental: bool = False
    """Watch mode walked only what changed (``files_seen`` then counts only those files)."""


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

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class PruneResult:
    """What ``prune()`` dropped (or, with ``dry_run``, would drop), oldest first."""

    pruned: tuple[SnapshotInfo, ...]
    kept: int
    dry_run: bool = False
    bytes_before: int = 0
    bytes_after: int = 0
    """Store size after pruning and compaction (equal to before for a dry run)."""


@dataclass(frozen=True)
class StoreStats:
    """The state of one store."""

    snapshots: int
    pinned: int
    loose_objects: int
    packs: int
    bytes_on_disk: int
    oldest: datetime | None
    newest: datetime | None
    last_gc: datetime | None


@dataclass(frozen=True)
class GcResult:
    """What a compaction did."""

    objects_kept: int
    objects_removed: int
    packs_removed: int
    temp_files_removed: int
    bytes_before: int
    bytes_after: int
    seconds: float


@dataclass(frozen=True)
class VerifyResult:
    """What ``verify()`` found; ``ok`` when nothing."""

    ok: bool
    snapshots_checked: int
    objects_checked: int
    problems: tuple[str, ...]
