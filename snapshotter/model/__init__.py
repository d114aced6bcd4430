"""Frozen values returned by the public API, and nothing else.

Each family of values is a module of its own (``snapshots``, ``sessions``,
``changes``, ``lines``, ``results``, ``remotes``, ``scans``, ``stats``), loaded the first time one of its names
is asked for here: making a frozen dataclass costs about half a millisecond,
and a command that reads the history has use for four of the 23 (issue #51).
``from snapshotter.model import SnapshotInfo`` loads ``snapshots`` alone.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not ``typing``'s: importing it costs what this module saves
if TYPE_CHECKING:
    from snapshotter.model.changes import (
        ChangeStatus as ChangeStatus,
    )
    from snapshotter.model.changes import (
        FileChange as FileChange,
    )
    from snapshotter.model.changes import (
        FileDiff as FileDiff,
    )
    from snapshotter.model.lines import (
        BlameResult as BlameResult,
    )
    from snapshotter.model.lines import (
        BlameRun as BlameRun,
    )
    from snapshotter.model.lines import (
        Hunk as Hunk,
    )
    from snapshotter.model.lines import (
        LineOrigin as LineOrigin,
    )
    from snapshotter.model.remotes import (
        FetchResult as FetchResult,
    )
    from snapshotter.model.remotes import (
        PushResult as PushResult,
    )
    from snapshotter.model.remotes import (
        RemoteWorkspace as RemoteWorkspace,
    )
    from snapshotter.model.remotes import (
        SkippedSnapshot as SkippedSnapshot,
    )
    from snapshotter.model.results import (
        Conflict as Conflict,
    )
    from snapshotter.model.results import (
        ConflictMode as ConflictMode,
    )
    from snapshotter.model.results import (
        ConflictReason as ConflictReason,
    )
    from snapshotter.model.results import (
        ForkInfo as ForkInfo,
    )
    from snapshotter.model.results import (
        RestoreResult as RestoreResult,
    )
    from snapshotter.model.results import (
        RevertResult as RevertResult,
    )
    from snapshotter.model.results import (
        UndoResult as UndoResult,
    )
    from snapshotter.model.scans import (
        ScanStats as ScanStats,
    )
    from snapshotter.model.sessions import (
        SessionInfo as SessionInfo,
    )
    from snapshotter.model.snapshots import (
        SkippedPath as SkippedPath,
    )
    from snapshotter.model.snapshots import (
        SkipReason as SkipReason,
    )
    from snapshotter.model.snapshots import (
        SnapshotInfo as SnapshotInfo,
    )
    from snapshotter.model.stats import (
        GcResult as GcResult,
    )
    from snapshotter.model.stats import (
        PruneResult as PruneResult,
    )
    from snapshotter.model.stats import (
        StoreStats as StoreStats,
    )
    from snapshotter.model.stats import (
        VerifyResult as VerifyResult,
    )

__all__ = [
    "SkipReason",
    "SkippedPath",
    "SnapshotInfo",
    "ChangeStatus",
    "FileChange",
    "FileDiff",
    "Hunk",
    "LineOrigin",
    "BlameRun",
    "BlameResult",
    "RestoreResult",
    "ConflictMode",
    "ConflictReason",
    "Conflict",
    "RevertResult",
    "ForkInfo",
    "PushResult",
    "SkippedSnapshot",
    "FetchResult",
    "RemoteWorkspace",
    "ScanStats",
    "SessionInfo",
    "UndoResult",
    "PruneResult",
    "StoreStats",
    "GcResult",
    "VerifyResult",
]

_FAMILY = {
    "SkipReason": "snapshots",
    "SkippedPath": "snapshots",
    "SnapshotInfo": "snapshots",
    "ChangeStatus": "changes",
    "FileChange": "changes",
    "FileDiff": "changes",
    "Hunk": "lines",
    "LineOrigin": "lines",
    "BlameRun": "lines",
    "BlameResult": "lines",
    "RestoreResult": "results",
    "ConflictMode": "results",
    "ConflictReason": "results",
    "Conflict": "results",
    "RevertResult": "results",
    "ForkInfo": "results",
    "PushResult": "remotes",
    "SkippedSnapshot": "remotes",
    "FetchResult": "remotes",
    "RemoteWorkspace": "remotes",
    "ScanStats": "scans",
    "SessionInfo": "sessions",
    "UndoResult": "results",
    "PruneResult": "stats",
    "StoreStats": "stats",
    "GcResult": "stats",
    "VerifyResult": "stats",
}
"""Which module defines each name."""


def __getattr__(name: str) -> object:
    """Load the family that defines ``name`` (PEP 562), once: its names are then this module's."""
    family = _FAMILY.get(name)
    if family is None:
        raise AttributeError(f"module 'snapshotter.model' has no attribute {name!r}")
    if family == "snapshots":  # each spelled out, for PyInstaller's analysis to find
        import snapshotter.model.snapshots
    elif family == "changes":
        import snapshotter.model.changes
    elif family == "lines":
        import snapshotter.model.lines
    elif family == "results":
        import snapshotter.model.results
    elif family == "remotes":
        import snapshotter.model.remotes
    elif family == "scans":
        import snapshotter.model.scans
    elif family == "sessions":
        import snapshotter.model.sessions
    else:
        import snapshotter.model.stats  # noqa: F401
    module = sys.modules[f"{__name__}.{family}"]
    for known, defined_in in _FAMILY.items():
        if defined_in == family:
            globals()[known] = getattr(module, known)
    return globals()[name]


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
