"""Typed errors. Every error raised on purpose subclasses :class:`SnapshotError`.

Messages are one line and say what to do, because they reach people and agents
directly (the CLI prints ``str(error)`` and nothing else).
"""

from __future__ import annotations


class SnapshotError(Exception):
    """Base class of every error snapshotter raises on purpose."""


class WorkspaceError(SnapshotError):
    """The workspace is missing, not a folder, or overlaps the store."""


class UnsafeWorkspace(WorkspaceError):
    """The workspace is a filesystem root, a home folder or a similar catch-all."""


class WorkspaceTooLarge(WorkspaceError):
    """The workspace passes max_workspace_entries or max_workspace_bytes."""


class StoreError(SnapshotError):
    """The store cannot be created, opened, read or written."""


class SnapshotNotFound(SnapshotError):
    """No snapshot matches the given id, prefix or label."""


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
