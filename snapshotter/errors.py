"""Typed errors. Every error raised on purpose subclasses :class:`SnapshotError`.

Messages are one line and say what to do, because they reach people and agents
directly. What to do depends on who reads it: a library caller passes
``allow_unsafe_root=True``, a person at a terminal ``--allow-unsafe-root``. So
an error keeps its remedy apart from its message (:class:`Remedy`); ``str()``
speaks the library's language and :meth:`SnapshotError.for_cli` the command
line's.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass


@dataclass(frozen=True)
class Remedy:
    """What to do about an error, in the library's words, the command line's, and
    the MCP server's tools (``mcp``; None: the command line's, since the server
    takes its settings as command-line flags)."""

    api: str
    cli: str
    mcp: str | None = None


VERIFY = Remedy("run verify()", "run `snapshotter verify`")
UNSAFE_ROOT = Remedy(
    "pick a project folder, or pass allow_unsafe_root=True", "pick a project folder, or pass --allow-unsafe-root"
)
MAX_ENTRIES = Remedy(
    "snapshot a smaller folder, exclude= some of it, or raise max_workspace_entries (0 disables)",
    "snapshot a smaller folder, --exclude some of it, or raise --max-workspace-entries (0 disables)",
)
MAX_BYTES = Remedy(
    "snapshot a smaller folder, exclude= some of it, or raise max_workspace_bytes (0 disables)",
    "snapshot a smaller folder, --exclude some of it, or raise --max-workspace-bytes (0 disables)",
)
HOME_OUTSIDE = Remedy(
    "set home= or SNAPSHOTTER_HOME to a folder outside it", "pass --home or set SNAPSHOTTER_HOME to a folder outside it"
)
BEGIN_TURN = Remedy("call begin_turn() first", "run `snapshotter turn begin` first", "call begin_turn first")
TURN_NUMBER = Remedy(
    "pass n >= 1", "name one as `snapshotter turn revert 1` (the last turn), 2 (the one before)...", "pass n >= 1"
)
NO_REMOTE = Remedy(
    "pass one, or set remote= (or SNAPSHOTTER_REMOTE)",
    "name one (`snapshotter push REMOTE`, `snapshotter fetch REMOTE`), or set remote in your config file"
    " or SNAPSHOTTER_REMOTE",
    "start the server with a remote (SNAPSHOTTER_REMOTE, or remote in the user's config file)",
)
FIRST_SNAPSHOT = Remedy("call snapshot() first", "run `snapshotter snapshot` first", "call snapshot first")
LIST_SNAPSHOTS = Remedy(
    "call list() to see them", "run `snapshotter log` to list them", "call list_snapshots to see them"
)
OVERWRITE_UNTRACKED = Remedy(
    "pass overwrite_untracked=True to replace it (its content is saved first)",
    "pass --overwrite-untracked to replace it (its content is saved first)",
)


class SnapshotError(Exception):
    """Base class of every error snapshotter raises on purpose."""

    def __init__(self, message: str, remedy: Remedy | None = None) -> None:
        self.message = message
        self.remedy = remedy
        super().__init__(f"{message}; {remedy.api}" if remedy is not None else message)

    def for_cli(self) -> str:
        """The message with its remedy in command-line terms (flags and commands)."""
        return f"{self.message}; {self.remedy.cli}" if self.remedy is not None else str(self)

    def for_mcp(self) -> str:
        """The message with its remedy in terms of the MCP server's tools."""
        if self.remedy is None:
            return str(self)
        return f"{self.message}; {self.remedy.mcp if self.remedy.mcp is not None else self.remedy.cli}"

    def __reduce__(self) -> tuple[object, ...]:  # picklable with its remedy (process pools, multiprocessing)
        return (type(self), (self.message, self.remedy))


class WorkspaceError(SnapshotError):
    """The workspace is missing, not a folder, or overlaps the store."""


class UnsafeWorkspace(WorkspaceError):
    """The workspace is a filesystem root, a home folder or a similar catch-all."""


class WorkspaceTooLarge(WorkspaceError):
    """The workspace passes max_workspace_entries or max_workspace_bytes."""


class StoreError(SnapshotError):
    """The store cannot be created, opened, read or written."""


class SnapshotNotFound(SnapshotError):
    """No snapshot matches the given id, prefix, label or relative ref."""


class HunkNotFound(SnapshotNotFound):
    """A hunk id names no hunk of the change: the change is not what it was when
    the id was listed (its file changed since), or the id is not one of its."""


class PathNotFound(SnapshotError):
    """A path given to restore is neither in the snapshot nor in the workspace."""


class InvalidRef(SnapshotError):
    """A ref is malformed, ambiguous, or names an object that is not a snapshot."""


class InvalidInput(SnapshotError):
    """An argument (message, label, metadata, path) cannot be used as given."""


class UnsafeTree(SnapshotError):
    """A snapshot holds a path that would leave the workspace; restore refused."""


class RestoreConflict(SnapshotError):
    """Restore would have to overwrite or remove something it must not touch."""


class FileInUse(RestoreConflict):
    """A file stayed in use by another program (Windows) while restore retried it."""


class StoreLocked(SnapshotError):
    """Another process (or instance) held the store lock for longer than the timeout."""


class RollbackPerformed(SnapshotError):
    """A guarded block failed its verification and the workspace was rolled back."""


class RemoteError(SnapshotError):
    """A git remote could not be reached, refused a push, or sent something unusable.
    Its message never holds a password or token."""


class RemoteAuthError(RemoteError):
    """A git remote refused the credentials (or asked for some and had none)."""


class PushRefused(RemoteError):
    """A push was refused before anything was sent (a file over the size limit)."""


_DISK_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
_NOT_ALLOWED = {errno.EACCES, errno.EPERM, errno.EROFS}


def what_to_check(error: OSError) -> str:
    """The advice an operating-system failure deserves: disk space only when
    the disk is full, permissions only when access was refused."""
    if error.errno in _DISK_FULL:
        return "free some disk space and retry"
    if error.errno in _NOT_ALLOWED:
        return "check permissions and retry"
    return "retry; if it persists, check the disk"
