"""Failures from below an engine (dulwich, zlib, the OS), as typed one-line errors.

A damaged store shows up as whatever dulwich or zlib happen to raise; an OS
error names a path, which says whether the store or the workspace failed.
Neither may reach the user as a traceback (the non-negotiables, 7).
"""

from __future__ import annotations

import contextlib
import os
import sys
import zlib
from collections.abc import Iterator

from dulwich import errors as dulwich_errors

from snapshotter.errors import VERIFY, SnapshotError, StoreError, StoreLocked, WorkspaceError, what_to_check

STORE_FAILURES: tuple[type[Exception], ...] = (
    dulwich_errors.ApplyDeltaError,
    dulwich_errors.ChecksumMismatch,
    dulwich_errors.FileFormatException,
    dulwich_errors.NotGitRepository,
    dulwich_errors.ObjectMissing,
    dulwich_errors.WrongObjectException,
    zlib.error,
)
"""What a damaged store raises from below; reported as StoreError."""


@contextlib.contextmanager
def translated(store_path: str) -> Iterator[None]:
    """Raise what fails inside as a typed error: the store's (``StoreError``,
    ``StoreLocked``) or the workspace's (``WorkspaceError``)."""
    try:
        yield
    except SnapshotError:
        raise
    except STORE_FAILURES as exc:
        raise StoreError(f"the store {store_path} is damaged ({exc})", VERIFY) from None
    except OSError as exc:
        where = exc.filename if isinstance(exc.filename, str) else ""
        detail = f"{exc.strerror or exc}" + (f": {where}" if where else "")
        if where.startswith(store_path):
            raise StoreError(f"store error ({detail}); {what_to_check(exc)}") from None
        raise WorkspaceError(f"workspace error ({detail}); {what_to_check(exc)}") from None
    except Exception as exc:
        # dulwich's FileLocked (not an OSError), told by its module when loaded: only dulwich's
        # writers raise it, and a command that reads loads neither them nor it (issue #51)
        locks = sys.modules.get("dulwich.file")
        if locks is not None and isinstance(exc, locks.FileLocked):
            # a ref's lock file: stale ones are cleared when the store lock is next taken
            raise StoreLocked(f"{os.fsdecode(exc.lockfilename)} is held by another writer; retry") from None
        raise
