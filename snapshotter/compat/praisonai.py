"""A drop-in ``FileSnapshot`` for ``praisonaiagents.snapshot``, without git.

    from snapshotter.compat.praisonai import FileSnapshot, SnapshotInfo, FileDiff

Same constructor, methods, dataclasses and ``to_dict``/``from_dict`` as
praisonaiagents 1.7; snapshots live in ``$PRAISONAI_HOME/snapshots`` (else
``~/.praisonai/snapshots``) unless ``snapshot_dir`` is given. Differences, all
on the safe side: ignore rules are git's full rules (nested ``.gitignore``,
``build/``, ``.env*``, ``/secrets`` anchors, negations), so a restore never
deletes an ignored file their matcher misses; ``diff(h)`` compares with the
workspace as it is now; the user's git identity is recorded in the snapshot
metadata rather than in a git config.

``SnapshotInfo.id`` is a new random UUID in every object returned, as in
praisonaiagents (its ``track`` and ``list_snapshots`` build each one with
``uuid4()``): it names that object, never a snapshot. The stable key is
``commit_hash``, which every method takes.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from snapshotter.engine.gitstore.location import canonical_workspace, store_path_for
from snapshotter.errors import SnapshotError
from snapshotter.facade.api import Snapshotter
from snapshotter.model import ChangeStatus
from snapshotter.model import SnapshotInfo as _Info

logger = logging.getLogger(__name__)

__all__ = ["FileDiff", "FileSnapshot", "SnapshotInfo"]


@dataclass
class FileDiff:
    """Represents a diff for a single file."""

    path: str
    additions: int = 0
    deletions: int = 0
    diff_content: str = ""
    status: str = "modified"  # added, modified, deleted

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileDiff:
        return cls(
            path=data.get("path", ""),
            additions=data.get("additions", 0),
            deletions=data.get("deletions", 0),
            diff_content=data.get("diff_content", ""),
            status=data.get("status", "modified"),
        )


@dataclass
class SnapshotInfo:
    """Information about a snapshot."""

    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    commit_hash: str = ""
    session_id: str | None = None
    message: str = ""
    created_at: float = field(default_factory=time.time)
    files_changed: int = 0
    additions: int = 0
    deletions: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SnapshotInfo:
        return cls(
            id=data.get("id", str(uuid.uuid4())),
            commit_hash=data.get("commit_hash", ""),
            session_id=data.get("session_id"),
            message=data.get("message", ""),
            created_at=data.get("created_at", time.time()),
            files_changed=data.get("files_changed", 0),
            additions=data.get("additions", 0),
            deletions=data.get("deletions", 0),
        )


def default_snapshot_dir() -> str:
    """``$PRAISONAI_HOME/snapshots``, else ``~/.praisonai/snapshots`` (read at call time)."""
    home = os.environ.get("PRAISONAI_HOME")
    base = os.path.expanduser(home) if home else os.path.join(os.path.expanduser("~"), ".praisonai")
    return os.path.join(base, "snapshots")


class FileSnapshot:
    """Track, diff and restore a project folder (a drop-in for praisonaiagents').

    Example:
        snapshot = FileSnapshot("/path/to/project")
        info = snapshot.track(message="Before refactor")
        diffs = snapshot.diff(info.commit_hash)
        snapshot.restore(info.commit_hash)
    """

    def __init__(
        self,
        project_path: str,
        snapshot_dir: str | None = None,
        session_id: str | None = None,
        user_name: str | None = None,
        user_email: str | None = None,
    ) -> None:
        self.project_path = os.path.abspath(project_path)
        self.session_id = session_id
        self.user_name: str = user_name or os.environ.get("PRAISONAI_GIT_USER_NAME") or "PraisonAI Snapshot"
        self.user_email: str = user_email or os.environ.get("PRAISONAI_GIT_USER_EMAIL") or "praison@snapshot.local"
        self._home = snapshot_dir or os.path.dirname(default_snapshot_dir())
        self._snap: Snapshotter | None = None  # opened on first use, as the original does

    @property
    def shadow_path(self) -> str:
        """Where this project's snapshot store is (or will be); looking does not create it."""
        return store_path_for(canonical_workspace(self.project_path), self._home)

    def _open(self) -> Snapshotter:
        if self._snap is None:
            self._snap = Snapshotter(self.project_path, home=self._home)
        return self._snap

    def _convert(self, info: _Info) -> SnapshotInfo:
        return SnapshotInfo(
            commit_hash=info.id,
            session_id=self.session_id,
            message=info.message,
            created_at=info.created_at.timestamp(),
            files_changed=info.files_changed,
            additions=info.additions,
            deletions=info.deletions,
        )

    def track(self, message: str | None = None) -> SnapshotInfo:
        """Track the current state of the project."""
        snap = self._open()
        base = snap.base()  # what the project was last made equal to; status() compares with it
        if base is not None and not snap.status():
            return SnapshotInfo(commit_hash=base.id, session_id=self.session_id, message="No changes")
        metadata = {"user_name": self.user_name, "user_email": self.user_email}
        if self.session_id:
            metadata["session_id"] = self.session_id
        text = message or f"Snapshot at {time.strftime('%Y-%m-%d %H:%M:%S')}"
        return self._convert(snap.snapshot(text, metadata=metadata))

    def diff(self, from_hash: str, to_hash: str | None = None) -> list[FileDiff]:
        """Get diff between two snapshots (or a snapshot and the project now)."""
        try:
            diffs = self._open().diff(from_hash, to_hash)
        except SnapshotError as exc:
            logger.warning("diff failed: %s", exc)
            return []
        return [
            FileDiff(
                path=d.path,
                additions=d.additions,
                deletions=d.deletions,
                diff_content=d.patch,
                status=d.status.value if d.status != ChangeStatus.TYPE_CHANGED else "modified",
            )
            for d in diffs
        ]

    def restore(self, commit_hash: str, files: list[str] | None = None) -> bool:
        """Restore files from a snapshot; everything when ``files`` is empty. True if it worked."""
        try:
            self._open().restore(commit_hash, files or None)
            return True
        except SnapshotError as exc:
            logger.error("Failed to restore: %s", exc)
            return False

    def revert(self, file_path: str) -> bool:
        """Revert a single file to its last tracked state."""
        current = self.get_current_hash()
        return current is not None and self.restore(current, files=[file_path])

    def list_snapshots(self, limit: int = 50) -> list[SnapshotInfo]:
        """List recent snapshots, newest first."""
        try:
            return [self._convert(info) for info in self._open().list(limit=limit)]
        except SnapshotError as exc:
            logger.warning("list_snapshots failed: %s", exc)
            return []

    def get_current_hash(self) -> str | None:
        """The id of the newest snapshot, or None before the first one."""
        latest = self._open().list(limit=1)
        return latest[0].id if latest else None

    def cleanup(self) -> None:
        """Remove the snapshot store of this project."""
        if self._snap is None:
            self._snap = Snapshotter(self.project_path, home=self._home)
        self._snap.cleanup()
        self._snap = None
