"""A drop-in ``StateGuard`` for ``qwed_new.guards.state_guard``, without git.

    from snapshotter.compat.qwed import StateGuard

Same constructor, ``create_pre_execution_snapshot() -> str`` (a 40-hex git
tree id, as ``git write-tree`` gives) and ``rollback(tree_hash) -> bool``.
Unlike the original it needs neither a git repository nor the git binary, never
stages anything in the user's index, removes files the agent created even if
the agent staged them, and keeps ignored files (``.env``) and untracked files
the snapshot never recorded.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from snapshotter.errors import SnapshotError
from snapshotter.facade.api import Snapshotter

logger = logging.getLogger(__name__)

__all__ = ["StateGuard"]

_TREE_HASH = re.compile(r"[0-9a-f]{40}")
LABEL = "qwed:pre-execution"


class StateGuard:
    """Deterministic rollback of agentic file operations from a pre-execution snapshot."""

    def __init__(self, workspace_path: str) -> None:
        self.workspace = Path(workspace_path).resolve()
        if not self.workspace.exists() or not self.workspace.is_dir():
            raise ValueError(f"Invalid workspace path: {self.workspace}")
        self._snap = Snapshotter(self.workspace)

    def create_pre_execution_snapshot(self) -> str:
        """Snapshot the workspace before the agent acts; returns its tree hash."""
        try:
            info = self._snap.snapshot("before agent execution", label=LABEL)
        except SnapshotError as exc:
            logger.error("Failed to create shadow snapshot: %s", exc)
            raise RuntimeError(f"Shadow Git Snapshot failed: {exc}") from exc
        logger.info("Created pre-execution shadow snapshot: %s", info.tree_id)
        return info.tree_id

    def rollback(self, tree_hash: str) -> bool:
        """Restore the exact state of ``tree_hash``; False for a malformed or unknown hash."""
        if not isinstance(tree_hash, str) or not _TREE_HASH.fullmatch(tree_hash):
            logger.error("Rollback aborted: Invalid tree hash format %r", tree_hash)
            return False
        try:
            target = next((i for i in self._snap.list(limit=None) if i.tree_id == tree_hash), None)
            if target is None:
                logger.error("Rollback aborted: no snapshot has tree %s", tree_hash)
                return False
            self._snap.restore(target.id)
        except SnapshotError as exc:
            logger.error("Failed to rollback shadow snapshot %s: %s", tree_hash, exc)
            return False
        logger.warning("Successfully rolled back workspace to snapshot %s", tree_hash)
        return True
