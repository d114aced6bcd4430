"""snapshotter: a one-call safety net over a folder.

Take a snapshot before an agent edits files; afterwards see exactly what
changed, and restore. Snapshots live in a hidden bare git repository outside
the workspace, written in pure Python (no git binary needed).
"""

# ruff: noqa: F401  (``_load`` imports names only to publish them)

from __future__ import annotations

TYPE_CHECKING = False  # not ``typing``'s: importing typing costs a command line handed to a watcher
if TYPE_CHECKING:
    from typing import Any

    from snapshotter.engine.gitstore.transport import Credentials
    from snapshotter.engine.worktree.defaults import DEFAULT_EXCLUDES
    from snapshotter.engine.worktree.watch import watch_available
    from snapshotter.errors import (
        FileInUse,
        HunkNotFound,
        InvalidInput,
        InvalidRef,
        PathNotFound,
        PushRefused,
        Remedy,
        RemoteAuthError,
        RemoteError,
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
    from snapshotter.facade.api import Snapshotter, guard
    from snapshotter.facade.background import SnapshotHandle
    from snapshotter.facade.guard import Guard
    from snapshotter.facade.warnmode import ForgivingSnapshotter, forgiving
    from snapshotter.model import (
        BlameResult,
        BlameRun,
        ChangeStatus,
        Conflict,
        ConflictReason,
        FetchResult,
        FileChange,
        FileDiff,
        ForkInfo,
        GcResult,
        Hunk,
        LineOrigin,
        PruneResult,
        PushResult,
        RemoteWorkspace,
        RestoreResult,
        RevertResult,
        ScanStats,
        SessionInfo,
        SkippedPath,
        SkippedSnapshot,
        SkipReason,
        SnapshotInfo,
        StoreStats,
        UndoResult,
        VerifyResult,
    )
    from snapshotter.options import Retention, WorkspaceSettings

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """The public names load on first use (PEP 562): ``import snapshotter.frontends.cli.cli``
    then does not load the engine, so the command line can hand a command to a
    watcher (``snapshotter watch``) cheaply."""
    if name not in __all__:
        raise AttributeError(f"module 'snapshotter' has no attribute {name!r}")
    _load()
    return globals()[name]


def _load() -> None:
    """Publish every name of ``__all__`` from the module defining it (the list in
    the ``TYPE_CHECKING`` block above, for type checkers)."""
    from snapshotter import errors, model, options
    from snapshotter.engine.gitstore import transport
    from snapshotter.engine.worktree import ignore, watch
    from snapshotter.facade import api, background, warnmode
    from snapshotter.facade import guard as guarding

    found: dict[str, object] = {}
    for module in (api, background, errors, guarding, model, options, transport, ignore, watch, warnmode):
        found.update({name: getattr(module, name) for name in __all__ if name not in found and hasattr(module, name)})
    globals().update(found)  # after the imports, which set the package's attributes for its submodules


__all__ = [
    "VerifyResult",
    "WorkspaceTooLarge",
    "UnsafeWorkspace",
    "StoreStats",
    "Retention",
    "WorkspaceSettings",
    "PruneResult",
    "GcResult",
    "DEFAULT_EXCLUDES",
    "ChangeStatus",
    "FileChange",
    "FileDiff",
    "Guard",
    "InvalidInput",
    "HunkNotFound",
    "InvalidRef",
    "PathNotFound",
    "FileInUse",
    "Remedy",
    "RestoreConflict",
    "RestoreResult",
    "RevertResult",
    "BlameResult",
    "BlameRun",
    "ForkInfo",
    "Hunk",
    "LineOrigin",
    "PushResult",
    "FetchResult",
    "RemoteWorkspace",
    "Credentials",
    "Conflict",
    "ConflictReason",
    "RollbackPerformed",
    "RemoteError",
    "RemoteAuthError",
    "PushRefused",
    "ScanStats",
    "SessionInfo",
    "SkipReason",
    "SkippedPath",
    "SkippedSnapshot",
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
    "forgiving",
    "ForgivingSnapshotter",
    "watch_available",
]
