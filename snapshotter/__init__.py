"""snapshotter: a one-call safety net over a folder.

Take a snapshot before an agent edits files; afterwards see exactly what
changed, and restore. Snapshots live in a hidden bare git repository outside
the workspace, written in pure Python (no git binary needed).
"""

from .errors import (
    InvalidInput,
    InvalidRef,
    RestoreConflict,
    SnapshotError,
    SnapshotNotFound,
    StoreError,
    UnsafeTree,
    WorkspaceError,
)
from .ignore import DEFAULT_EXCLUDES
from .model import (
    ChangeStatus,
    FileChange,
    FileDiff,
    RestoreResult,
    ScanStats,
    SkippedPath,
    SkipReason,
    SnapshotInfo,
)
from .snapshotter import Snapshotter

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_EXCLUDES",
    "ChangeStatus",
    "FileChange",
    "FileDiff",
    "InvalidInput",
    "InvalidRef",
    "RestoreConflict",
    "RestoreResult",
    "ScanStats",
    "SkipReason",
    "SkippedPath",
    "SnapshotError",
    "SnapshotInfo",
    "SnapshotNotFound",
    "Snapshotter",
    "StoreError",
    "UnsafeTree",
    "WorkspaceError",
]
