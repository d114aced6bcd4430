"""Snapshots as ``list`` and ``get`` return them: all that ``log`` and ``show`` need."""

from __future__ import annotations

from collections.abc import Mapping
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
    NOT_CHECKED_OUT = "not-checked-out"
    """Only in restore results: a submodule not checked out, or a file outside the
    user's sparse checkout; git keeps its entry, and a restore leaves it to git."""
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
    session: str | None = None
    """The session that took it (``Snapshotter(..., session=...)``); None: the anonymous one."""
