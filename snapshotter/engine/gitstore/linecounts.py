"""Line counts of safety snapshots, counted after the fact and kept beside the store.

A safety snapshot (``pre-restore``, ``pre-undo``, ``pre-redo``, ``pre-revert``)
is taken while the user waits for a restore, so its commit records only its
file count and the tree its lines are to be counted from (see ``trailers``).
The lines are counted on first request and kept here, so every later request,
in this process or another, reads them instead of reading blobs again.

Where they are kept: ``<store>/snapshotter/line-counts``, a text file in the
store's own meta folder, one line per snapshot::

    <commit id, 40 hex digits> <additions> <deletions>

Why a side file: a snapshot's commit is its identity and never changes, and a
git object holding the counts would need a ref to survive compaction (a note
ref, an extra commit) for a value that is only a cache. The meta folder is no
part of git's layout, so the store stays a valid repository (``git fsck
--strict`` sees nothing of it).

Lines are appended (one ``write`` each, ``O_APPEND``), so readers that count
at the same time in different processes need no lock; a line that is not
exactly the form above (torn by a crash, damaged) is ignored and its snapshot
counted again. Losing the file loses nothing but time, as long as the trees
the counts come from are in the store: a compaction therefore counts, before
it deletes anything, every snapshot whose lines are still uncounted and whose
``against`` tree no kept snapshot holds, and then rewrites the file without
the snapshots that are gone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from snapshotter.engine.fsutil import new_temp_file, open_side_file, read_side_file, sync_folder, unlink_quietly

FILE_NAME = "line-counts"
CAP = 64 << 20
"""A line is at most 79 bytes, one per safety snapshot counted: 64 MiB is some
850,000 snapshots, far more than retention keeps. A bigger file (or one that is
not a regular file) is read as empty, and rewritten by the next compaction."""
_LINE = re.compile(rb"([0-9a-f]{40}) ([0-9]{1,18}) ([0-9]{1,18})")


class LineCounts:
    """The kept line counts of one store, read when first needed."""

    def __init__(self, meta_dir: str) -> None:
        self.path = os.path.join(meta_dir, FILE_NAME)
        self._counts: dict[bytes, tuple[int, int]] = {}
        self._read_size = -1
        """The file's size when last read; -1: not read yet."""
        self._damaged = False
        """The file could not be read (too large, not a regular file): rewritten at the next compaction."""

    def get(self, sha: bytes) -> tuple[int, int] | None:
        """The kept (additions, deletions) of snapshot ``sha``, or None. The file
        is read again if it grew since it was last read (another process counted)."""
        found = self._counts.get(sha)
        if found is None and self._size() != self._read_size:
            self._load()
            found = self._counts.get(sha)
        return found

    def keep(self, sha: bytes, additions: int, deletions: int) -> None:
        """Remember counts (appended to the file, not synced: see :meth:`sync`).
        A store that cannot be written (read-only, full) keeps them for this
        process only: a read never fails for the sake of a cache."""
        self._counts[sha] = (additions, deletions)
        line = f"{sha.hex()} {additions} {deletions}\n".encode("ascii")
        try:
            fd, _ = open_side_file(self.path, follow=False, append=True)  # never blocks on a named pipe
        except OSError:
            return
        try:
            os.write(fd, line)
            if os.fstat(fd).st_size == self._read_size + len(line):  # nobody else wrote since it was read
                self._read_size += len(line)
        except OSError:
            pass  # a short or failed write leaves a line that is ignored, and a recount
        finally:
            os.close(fd)

    def sync(self) -> None:
        """Make what was kept durable (a compaction is about to delete the
        trees the counts come from)."""
        if not os.path.isfile(self.path):
            return
        try:
            fd, _ = open_side_file(self.path, follow=False, append=True)
        except OSError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        sync_folder(os.path.dirname(self.path))

    def keep_only(self, shas: Iterable[bytes]) -> None:
        """Rewrite the file with the counts of ``shas`` only (the snapshots a
        compaction keeps). Hold the store lock."""
        self._load()
        wanted = set(shas)
        kept = {sha: counts for sha, counts in self._counts.items() if sha in wanted}
        if len(kept) == len(self._counts) and not self._damaged:
            return
        text = b"".join(f"{sha.hex()} {a} {d}\n".encode("ascii") for sha, (a, d) in kept.items())
        folder = os.path.dirname(self.path)
        fd, tmp = new_temp_file(folder, ".line-counts-", ".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            unlink_quietly(tmp)
            raise
        sync_folder(folder)
        self._counts = kept
        self._read_size = len(text)
        self._damaged = False

    def _size(self) -> int:
        try:
            return os.stat(self.path).st_size
        except OSError:
            return 0

    def _load(self) -> None:
        self._damaged = False
        try:
            data = read_side_file(self.path, CAP, follow=False)
        except OSError:  # none yet, or unusable: counted again, and the file rewritten by the next compaction
            data = b""
            self._damaged = os.path.lexists(self.path)
        counts: dict[bytes, tuple[int, int]] = {}
        for line in data.split(b"\n"):
            match = _LINE.fullmatch(line)
            if match is not None:
                counts[bytes.fromhex(match.group(1).decode("ascii"))] = (int(match.group(2)), int(match.group(3)))
        self._counts.update(counts)
        self._read_size = len(data)
