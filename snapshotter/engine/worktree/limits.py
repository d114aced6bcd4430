"""Safety gates: folders too dangerous or too big to snapshot.

The filesystem root, the user's home and the usual Desktop, Documents and
Downloads folders are refused unless ``allow_unsafe_root=True``: a snapshot of
them is almost always a mistake that fills the disk. A workspace over
``max_workspace_entries`` tracked entries or ``max_workspace_bytes`` tracked
bytes is refused with :class:`WorkspaceTooLarge`, naming the numbers and the
knob; 0 disables a cap. Counting stops as soon as a cap is passed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from snapshotter.engine.fsutil import FileStat
from snapshotter.errors import MAX_BYTES, MAX_ENTRIES, WorkspaceTooLarge
from snapshotter.options import Options


@dataclass(frozen=True)
class WorkspaceLimits:
    """Caps on what one workspace may hold (tracked files and folders only);
    their defaults are the ``Options`` ones."""

    max_entries: int
    max_bytes: int

    @classmethod
    def of(cls, options: Options) -> WorkspaceLimits:
        return cls(options.max_workspace_entries, options.max_workspace_bytes)

    def check(self, workspace: str, entries: int, size: int) -> None:
        """Raise WorkspaceTooLarge if a cap is passed (called while counting)."""
        if self.max_entries and entries > self.max_entries:
            raise WorkspaceTooLarge(
                f"{workspace} holds more than {self.max_entries:,} files and folders (counted {entries:,})",
                MAX_ENTRIES,
            )
        if self.max_bytes and size > self.max_bytes:
            raise WorkspaceTooLarge(
                f"{workspace} holds more than {self.max_bytes:,} bytes (counted {size:,})", MAX_BYTES
            )


def stored_size(st: FileStat) -> int:
    """The bytes a file would bring into the store, for the workspace caps: its
    size, or what it really occupies on disk if less (a sparse file of 3 GiB
    using 8 KiB must not refuse a whole workspace)."""
    blocks = getattr(st, "st_blocks", None)
    return st.st_size if blocks is None else min(st.st_size, blocks * 512)


SPARSE_FROM = 8 << 20


def is_sparse(st: FileStat, path: str) -> bool:
    """Whether the regular file at ``path`` is mostly holes: over 8 MiB, less
    than half of it on disk, and a hole found in it (``SEEK_HOLE``, so that a
    file the filesystem compresses is not taken for one). Reading it would cost
    its whole apparent size for zeros: a new one is left out unless the caller
    asks (``sparse_files``)."""
    if st.st_size <= SPARSE_FROM or stored_size(st) * 2 >= st.st_size:
        return False
    seek_hole = getattr(os, "SEEK_HOLE", None)
    if seek_hole is None:
        return True  # no way to ask: the blocks alone say so
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False  # read as any file: the read says what is wrong
    try:
        return os.lseek(fd, 0, seek_hole) < st.st_size
    except OSError:
        return True
    finally:
        os.close(fd)
