"""One folder's table of stat-cache records as the cache file holds it.

A ``PackedFolder`` is a view of the loaded bytes: its names (each followed by
a NUL) and its fixed-size records. It decodes them into a dict the first time
a record is asked for; ``all_match`` checks the folder's files against the
packed bytes themselves, so a walk through an unchanged folder builds no
object per file that outlives the folder, and saving it again copies its bytes.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, ItemsView, Iterator, Mapping

from snapshotter.engine.fsutil import FileStat

_compiled_all_match: Callable[[bytes, int, int, int, int, int, int], int | None] | None
try:
    from snapshotter.engine.worktree._statmatch import all_match as _compiled_all_match
except ImportError:  # not built: no C compiler at install, or a platform it is not built for
    _compiled_all_match = None

INT64 = range(-(2**63), 2**63)
"""The cutoffs the C loops take (a C ``int64``); with any other, the Python loop runs."""

RECORD = struct.Struct("<IQqqQ20s")
"""A record as saved: st_mode, size, mtime_ns, ctime_ns, inode, blob id."""
_KEY = struct.Struct("<IQqqQ")  # a record's stat key: the first bytes of RECORD

Record = tuple[int, int, int, int, int, bytes]
"""A stat key followed by the blob id: one flat tuple, exactly as the file stores
it, so decoding a table builds no second tuple per record."""

Buffer = bytes | memoryview


class PackedFolder(Mapping[str, Record]):
    """One folder's table as the cache file holds it: its names (each followed
    by a NUL) and its fixed-size records, at offsets into the loaded bytes.
    Its records are decoded into a dict the first time one is asked for; a
    walk whose files all match (``all_match``) never asks."""

    __slots__ = ("_body", "_names_at", "_names_end", "_records_at", "_count", "_table")

    def __init__(self, body: bytes, names_at: int, names_end: int, records_at: int, count: int) -> None:
        self._body = body
        self._names_at = names_at
        self._names_end = names_end
        self._records_at = records_at
        self._count = count
        self._table: dict[str, Record] | None = None

    @property
    def decoded(self) -> bool:
        """Whether its records were decoded into a dict (a record was asked for)."""
        return self._table is not None

    @property
    def place(self) -> tuple[int, int]:
        """The identity of the loaded bytes it views and where its records start
        in them: tells it from every other folder of every load alive."""
        return id(self._body), self._records_at

    def view(self) -> tuple[bytes, int, int, int, int]:
        """The bytes it views and where in them: (body, names start, names end,
        records start, count), as ``_statmatch.check_folders`` takes them."""
        return self._body, self._names_at, self._names_end, self._records_at, self._count

    def names(self) -> list[str]:
        """Its file names, in the order of its records."""
        if self._count == 0:
            return []
        return self._body[self._names_at : self._names_end - 1].decode("utf-8", "surrogateescape").split("\0")

    def packed(self) -> tuple[Buffer, Buffer]:
        """Its names and records exactly as saved."""
        view, at = memoryview(self._body), self._records_at
        return view[self._names_at : self._names_end], view[at : at + self._count * RECORD.size]

    def spans(self) -> tuple[tuple[bytes, int, int], tuple[bytes, int, int]]:
        """Where its names and its records lie in the bytes it views, each as
        (those bytes, start, end): a save writes a run of folders that follow one
        another in the same bytes as one piece (``statcache._coalesced``)."""
        body, at = self._body, self._records_at
        return (body, self._names_at, self._names_end), (body, at, at + self._count * RECORD.size)

    def all_match(self, lstat: Callable[..., FileStat], fd: int, cutoff: int) -> int | None:
        """The total size of its files if ``lstat`` (in folder ``fd``) finds each
        with its recorded mode, size, mtime, ctime and inode and an mtime below
        ``cutoff`` (not racy: ``racy.fresh``, inlined in this hot loop), compared
        on the packed bytes; None at the first that does not (or is gone).

        Given ``os.stat`` itself, the loop runs in C where ``_statmatch`` was built
        (setup.py): the same answer, without a stat result object per file (100,000
        files: 0.11 s of CPU there against 0.23 s here, ``benchmarks/bench_statloop.py``).
        Any other ``lstat`` (one that answers from a listing) runs the loop below."""
        compiled = _compiled_all_match
        if compiled is not None and lstat is os.stat and fd >= 0 and cutoff in INT64:
            return compiled(self._body, self._names_at, self._names_end, self._records_at, self._count, fd, cutoff)
        body = self._body
        key = _KEY.pack
        at = self._records_at
        step = RECORD.size
        total = 0
        try:
            for name in self.names():
                st = lstat(name, dir_fd=fd, follow_symlinks=False)
                mtime = st.st_mtime_ns
                if mtime >= cutoff or not body.startswith(  # racy, or not as recorded
                    key(st.st_mode, st.st_size, mtime, st.st_ctime_ns, st.st_ino), at
                ):
                    return None
                total += st.st_size
                at += step
        except (OSError, struct.error):
            return None
        return total

    def as_dict(self) -> dict[str, Record]:
        """Its records decoded (once), for a caller that looks up many: do not change the result."""
        return self._decoded()

    def _decoded(self) -> dict[str, Record]:
        table = self._table
        if table is None:
            start = self._records_at
            records = memoryview(self._body)[start : start + self._count * RECORD.size]
            table = self._table = dict(zip(self.names(), RECORD.iter_unpack(records)))
        return table

    def __getitem__(self, name: str) -> Record:
        return self._decoded()[name]

    def get(self, name: str, default: Record | None = None) -> Record | None:  # type: ignore[override]
        return self._decoded().get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._decoded()

    def __iter__(self) -> Iterator[str]:
        return iter(self._decoded())

    def __len__(self) -> int:
        return self._count

    def items(self) -> PackedItems:
        return PackedItems(self)


def names_of(table: Mapping[str, Record]) -> list[str]:
    """A table's file names, decoding no record of a packed one."""
    return table.names() if type(table) is PackedFolder else list(table)


class PackedItems(ItemsView[str, Record]):
    """A ``PackedFolder``'s items, decoded only when iterated: a walk that
    sees this type may check the folder on its packed bytes instead."""

    def __init__(self, folder: PackedFolder) -> None:
        super().__init__(folder)
        self.folder = folder

    def __iter__(self) -> Iterator[tuple[str, Record]]:
        return iter(self.folder._decoded().items())

    def __len__(self) -> int:
        return len(self.folder)
