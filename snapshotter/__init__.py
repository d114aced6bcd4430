"""snapshotter: a one-call safety net over a folder.

Take a snapshot before an agent edits files; afterwards see exactly what
changed, and restore. Snapshots live in a hidden bare git repository outside
the workspace, written in pure Python (no git binary needed).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from snapshotter.api import Snapshotter, guard
    from snapshotter.background import SnapshotHandle
    from snapshotter.errors import (
        FileInUse,
        InvalidInput,
        InvalidRef,
        PathNotFound,
        Remedy,
        RestoreConflict,
        RollbackPerformed,
        SnapshotError,
        SnapshotNotFound,
        StoreError,
        StoreLocked,
        UnsafeTree,
        UnsafeWorkspace,
        WorkspaceError,
        WorkspaceTooLarge,
    )
    from snapshotter.guard import Guard
    from snapshotter.model import (
        ChangeStatus,
        FileChange,
        FileDiff,
        GcResult,
        PruneResult,
        RestoreResult,
        ScanStats,
        SkippedPath,
        SkipReason,
        SnapshotInfo,
        StoreStats,
        UndoResult,
        VerifyResult,
    )
    from snapshotter.options import Retention
    from snapshotter.worktree.ignore import DEFAULT_EXCLUDES
    from snapshotter.worktree.watch import watch_available

__version__ = "0.1.0"

_EXPORTS = {
    "Snapshotter": "snapshotter.api",
    "guard": "snapshotter.api",
    "SnapshotHandle": "snapshotter.background",
    "FileInUse": "snapshotter.errors",
    "InvalidInput": "snapshotter.errors",
    "InvalidRef": "snapshotter.errors",
    "PathNotFound": "snapshotter.errors",
    "Remedy": "snapshotter.errors",
    "RestoreConflict": "snapshotter.errors",
    "RollbackPerformed": "snapshotter.errors",
    "SnapshotError": "snapshotter.errors",
    "SnapshotNotFound": "snapshotter.errors",
    "StoreError": "snapshotter.errors",
    "StoreLocked": "snapshotter.errors",
    "UnsafeTree": "snapshotter.errors",
    "UnsafeWorkspace": "snapshotter.errors",
    "WorkspaceError": "snapshotter.errors",
    "WorkspaceTooLarge": "snapshotter.errors",
    "Guard": "snapshotter.guard",
    "ChangeStatus": "snapshotter.model",
    "FileChange": "snapshotter.model",
    "FileDiff": "snapshotter.model",
    "GcResult": "snapshotter.model",
    "PruneResult": "snapshotter.model",
    "RestoreResult": "snapshotter.model",
    "ScanStats": "snapshotter.model",
    "SkippedPath": "snapshotter.model",
    "SkipReason": "snapshotter.model",
    "SnapshotInfo": "snapshotter.model",
    "StoreStats": "snapshotter.model",
    "UndoResult": "snapshotter.model",
    "VerifyResult": "snapshotter.model",
    "Retention": "snapshotter.options",
    "DEFAULT_EXCLUDES": "snapshotter.worktree.ignore",
    "watch_available": "snapshotter.worktree.watch",
}
"""Each public name -> the module it lives in, imported on first use (PEP 562),
so ``import snapshotter.frontends.cli`` does not load the engine: the command
line can hand a command to a watcher (``snapshotter watch``) cheaply."""


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'snapshotter' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "VerifyResult",
    "WorkspaceTooLarge",
    "UnsafeWorkspace",
    "StoreStats",
    "Retention",
    "PruneResult",
    "GcResult",
    "DEFAULT_EXCLUDES",
    "ChangeStatus",
    "FileChange",
    "FileDiff",
    "Guard",
    "InvalidInput",
    "InvalidRef",
    "PathNotFound",
    "FileInUse",
    "Remedy",
    "RestoreConflict",
    "RestoreResult",
    "RollbackPerformed",
    "ScanStats",
    "SkipReason",
    "SkippedPath",
    "SnapshotError",
    "SnapshotInfo",
    "SnapshotNotFound",
    "Snapshotter",
    "SnapshotHandle",
    "StoreError",
    "StoreLocked",
    "UndoResult",
    "UnsafeTree",
    "WorkspaceError",
    "guard",
    "watch_available",
]
