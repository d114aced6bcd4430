"""What a walk of the workspace cost (every snapshot, status and diff makes one)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScanStats:
    """What the last walk of the workspace cost."""

    files_seen: int = 0
    files_hashed: int = 0
    bytes_hashed: int = 0
    dirs_seen: int = 0
    dirs_listed: int = 0
    """Folders read again; the others had the same stat as when last listed (see ``trust_folder_mtimes``)."""
    seconds: float = 0.0
    incremental: bool = False
    """Watch mode walked only what changed (``files_seen`` then counts only those files)."""
    dirs_preloaded: int = 0
    """Folders whose files a second core found unchanged for this walk (see ``second_core``)."""
    files_hashed_forked: int = 0
    """Of ``files_hashed``, those a second core hashed (see ``second_core``)."""
