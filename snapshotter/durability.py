"""Making completed writes survive a power cut.

Atomic writes (temporary file, then rename) already protect against a killed
process. Against a power cut, content must reach the disk before a name that
points at it: object contents are fsynced as they are written, and the
folders that received new names are fsynced before a ref or a deletion
relies on them.
"""

from __future__ import annotations

import os


def sync_folder(folder: str) -> None:
    """fsync a folder, so the names created in it survive a power cut (POSIX only)."""
    if os.name != "posix":
        return  # Windows has no folder handles to sync; NTFS journals names itself
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
