"""The packs of one store, read directly: listing, indexes, entries.

dulwich's general lookup costs ~200 us per object here (measured), which made
restoring 10,000 files spend seconds just reading them; and it lists the pack
folder on every lookup. Here the packs are listed again only when the folder
changed, each index is loaded once, and an entry is read straight from its
pack (``packread``).

A pack whose index cannot be read is left aside: its objects are missing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator

from .inflate import MAX_WHOLE
from .packread import BaseById, PackFile, PackIndex, peek_entry, read_entry, stream_entry

Opened = tuple[int, int, Iterator[bytes], str]
"""(type number, size, content in pieces, the pack's path less ``.pack``)."""


class PackSet:
    """The packs in one ``objects/pack`` folder; safe to use from several threads."""

    def __init__(self, pack_dir: str) -> None:
        self.dir = pack_dir
        self._seen = -1
        """The folder's mtime when it was listed."""
        self._bases: list[str] = []
        """Each pack's path less ``.pack``: the one an object was last found in first."""
        self._files: dict[str, PackFile] = {}
        self._indexes: dict[str, PackIndex] = {}
        self._broken: dict[str, str] = {}
        """Packs whose index cannot be read, and why."""
        self._guard = threading.RLock()
        """Held while reading an entry (a pack's delta cache is not locked), and
        re-entered when a ``REF_DELTA``'s base is read."""

    # -- listing -------------------------------------------------------------------

    def bases(self, relist: bool = True, again: bool = False) -> list[str]:
        """The packs with an index: as listed last, or (``relist``) listed again
        if the folder changed, or if ``again`` (one vanished: a gc elsewhere)."""
        if not relist:
            return self._bases
        try:
            stamp = os.stat(self.dir).st_mtime_ns
        except FileNotFoundError:
            return []
        if stamp != self._seen or again:
            self.close(forget=again)  # a pack may be gone: never read one through a stale handle
            listed = _complete_packs(self.dir)
            kept = [base for base in self._bases if base in listed]
            self._bases = sorted(listed.difference(kept)) + kept  # new packs first: they hold what was just written
            with self._guard:
                self._indexes = {base: index for base, index in self._indexes.items() if base in listed}
            self._seen = stamp
        return self._bases

    def close(self, forget: bool = False) -> None:
        """Close the open packs; with ``forget``, drop every index and verdict too."""
        with self._guard:
            files, self._files = self._files, {}
            if forget:
                self._indexes, self._broken = {}, {}
                self._seen = -1
        for handle in files.values():
            handle.close()

    # -- indexes -------------------------------------------------------------------

    def index(self, base: str) -> PackIndex | None:
        """The index of a pack; None if it cannot be read. OSError if it is gone."""
        with self._guard:
            found = self._indexes.get(base)
            if found is not None or base in self._broken:
                return found
        try:
            found = PackIndex.read(base + ".idx")
        except ValueError as exc:
            with self._guard:
                self._broken[base] = f"pack index {os.path.basename(base)}.idx cannot be read ({exc})"
            return None
        with self._guard:
            self._indexes[base] = found
        return found

    # -- objects -------------------------------------------------------------------

    def locate(self, sha: bytes, relist: bool, again: bool = False) -> tuple[str, int] | None:
        """(pack, offset) of an object, or None; OSError if a pack vanished."""
        bases = self.bases(relist, again)
        indexes = self._indexes
        for i, base in enumerate(bases):
            index = indexes.get(base) or self.index(base)
            offset = index.offset(sha) if index is not None else None
            if offset is not None:
                if i:  # lookups in a row tend to hit the same (recent) packs: this one first next time
                    self._bases = [base, *(b for b in bases if b != base)]
                return base, offset
        return None

    def _file(self, base: str) -> PackFile:
        opened = self._files.get(base)
        if opened is None:
            opened = self._files[base] = PackFile(base + ".pack")
        return opened

    def read(
        self, sha: bytes, relist: bool, limit: int, base_by_id: BaseById, again: bool = False
    ) -> tuple[int, bytes, str] | None:
        """(type number, content, the pack's path less ``.pack``) of an object,
        deltas resolved; None if it is in no pack. ``ObjectTooLarge`` above ``limit``."""
        found = self.locate(sha, relist, again)
        if found is None:
            return None
        base, offset = found
        with self._guard:  # never through a pack closed meanwhile
            kind, content = read_entry(self._file(base), offset, sha, limit, base_by_id)
        return kind, content, base

    def peek(self, sha: bytes, relist: bool) -> tuple[int, int] | None:
        """(type number, size) of a packed object from its entry's header (a
        delta's type is 6 or 7, its size that of the object it makes)."""
        found = self.locate(sha, relist)
        if found is None:
            return None
        with self._guard:
            return peek_entry(self._file(found[0]), found[1], sha)

    def stream(self, sha: bytes, relist: bool, base_by_id: BaseById) -> Opened | None:
        """A packed object a piece at a time, through a handle of its own (the
        pieces are read long after this returns); a delta is resolved whole
        (``MAX_WHOLE`` at most). None if it is in no pack."""
        found = self.locate(sha, relist)
        if found is None:
            return None
        base, offset = found
        where = base
        own = PackFile(base + ".pack")
        try:
            opened = stream_entry(own, offset, sha)
        except BaseException:
            own.close()
            raise
        if opened is None:
            own.close()
            with self._guard:
                kind, content = read_entry(self._file(base), offset, sha, MAX_WHOLE, base_by_id)
            return kind, len(content), iter((content,)), where
        kind, size, pieces = opened
        return kind, size, closing(pieces, own.close), where


def closing(pieces: Iterator[bytes], close: Callable[[], None]) -> Iterator[bytes]:
    """``pieces``, then ``close()`` (also when the reader stops early)."""
    try:
        yield from pieces
    finally:
        close()


def _complete_packs(pack_dir: str) -> set[str]:
    """The packs with an index (git's sign that a pack is complete)."""
    try:
        names = set(os.listdir(pack_dir))
    except FileNotFoundError:
        return set()
    return {os.path.join(pack_dir, n[:-5]) for n in names if n.endswith(".pack") and n[:-5] + ".idx" in names}
