"""What differs: ``status`` and ``diff`` (the line-level values of ``hunks`` and
``blame`` are ``lines``: a status makes none of them)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
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
