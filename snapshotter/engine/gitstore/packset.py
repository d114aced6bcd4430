"""The packs of one store, read directly: listing, checked indexes, entries.

dulwich's general lookup costs ~200 us per object here (measured), which made
restoring 10,000 files spend seconds just reading them; and it lists the pack
folder on every lookup. Here the packs are listed again only when the folder
changed, each index is loaded (and checked, see ``packindex``) once, and an
entry is read straight from its pack (``packread``).

A pack whose index is damaged is indexed again from the pack when it is first
met; one whose index is missing is invisible (a pack without an index is, by
git's convention, one still being written or being deleted), so those are
looked for only when an object is found nowhere else, or by ``verify()``, or
by the upkeep (``consolidation``). A pack that cannot be indexed is left
aside and reported by ``check``. Nothing here checks content against ids:
``objectstore.py`` does, for every object read.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace

from snapshotter.engine.fsutil import open_side_file
from snapshotter.engine.gitstore.checkedindexes import CheckedIndexes
from snapshotter.engine.gitstore.indexformat import PackIndex
from snapshotter.engine.gitstore.inflate import PIECE
from snapshotter.engine.gitstore.packindex import IndexDamaged, PackDamaged, load_index, read_through, write_index
from snapshotter.engine.gitstore.packread import (
    BaseById,
    PackFile,
    _entry_header,
    peek_entry,
    read_entry,
    stream_entry,
    whole_entry,
)

log = logging.getLogger("snapshotter")

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:
    from snapshotter.engine.gitstore.chainread import OpenLoose
    from snapshotter.engine.gitstore.entrycheck import CheckedEntry
    from snapshotter.engine.gitstore.spancopy import Span

Opened = tuple[int, int, Iterator[bytes], str]
"""(type number, size, content in pieces, the pack's path less ``.pack``)."""


class PackSet:
    """The packs in one ``objects/pack`` folder; safe to use from several threads."""

    def __init__(self, pack_dir: str, checked: CheckedIndexes | None = None) -> None:
        self.dir = pack_dir
        self.checked = checked
        """The indexes checked whole before (see ``checkedindexes``); None: each is checked at load."""
        self._seen = -1
        """The folder's mtime when it was listed."""
        self._bases: list[str] = []
        """Each pack's path less ``.pack``: the one an object was last found in first."""
        self._files: dict[str, PackFile] = {}
        self._indexes: dict[str, PackIndex] = {}
        self._broken: dict[str, str] = {}
        """Packs that cannot be read, and why (reported by ``check``)."""
        self._looked_unindexed = -1
        """The folder's mtime when packs without an index were last looked for."""
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
                self._seen = self._looked_unindexed = -1
        for handle in files.values():
            handle.close()

    # -- indexes -------------------------------------------------------------------

    def index(self, base: str) -> PackIndex | None:
        """The checked index of a pack, rebuilt from the pack if it is damaged;
        None if the pack cannot be read. OSError if the pack is gone."""
        with self._guard:
            found = self._indexes.get(base)
            if found is not None or base in self._broken:
                return found
        found = self._loaded(base, self.checked)[0]
        if found is not None:
            with self._guard:
                self._indexes[base] = found
        return found

    def _loaded(self, base: str, checked: CheckedIndexes | None = None) -> tuple[PackIndex | None, str | None]:
        """A pack's index loaded and checked (unless ``checked`` says this very file
        was), or rebuilt from the pack, with what was done; OSError if the pack is gone."""
        try:
            return load_index(base, checked), None
        except IndexDamaged as damage:
            return self._rebuild(base, str(damage))

    def _rebuild(self, base: str, why: str) -> tuple[PackIndex | None, str]:
        """Index a pack again from its content: (the index or None, what was done);
        FileNotFoundError if the pack is gone (an upkeep elsewhere merged it)."""
        name = os.path.basename(base)
        try:
            contents = read_through(base + ".pack")
        except PackDamaged as exc:
            if not os.path.lexists(base + ".pack"):  # deleted since the listing (merged elsewhere): not damage
                raise FileNotFoundError(errno.ENOENT, "the pack is gone", base + ".pack") from None
            note = f"pack index {name}.idx {why}, and {name}.pack cannot be indexed: it {exc}"
            log.warning("snapshotter: %s", note)
            with self._guard:
                self._broken[base] = note
            return None, note
        index = write_index(base, contents)
        note = f"pack index {name}.idx {why}; rebuilt from its pack"
        log.warning("snapshotter: %s", note)
        return index, note

    def index_unindexed(self) -> bool:
        """Index the packs left without an index (its file lost, or a writer
        killed between renaming the pack and its index); looked for once per
        change of the folder. True if any was indexed."""
        try:
            stamp = os.stat(self.dir).st_mtime_ns
        except FileNotFoundError:
            return False
        if stamp == self._looked_unindexed:
            return False
        self._looked_unindexed = stamp
        done = False
        for base in unindexed(self.dir):
            if base not in self._broken and self._index_again(base, lambda sha: False) is not None:
                done = True
        return done

    def _index_again(self, base: str, elsewhere: Callable[[bytes], bool]) -> str | None:
        """Index a pack found without an index, unless every object it holds is
        ``elsewhere`` (a leftover of a failed delete: the upkeep removes it).
        Returns what was done, or None if nothing was."""
        name = os.path.basename(base)
        try:
            contents = read_through(base + ".pack")
        except PackDamaged as exc:
            note = f"pack {name}.pack has no index and cannot be indexed: it {exc}"
            with self._guard:
                self._broken[base] = note
            return note
        except OSError:
            return None  # deleted meanwhile
        if os.path.exists(base + ".idx") or all(elsewhere(sha) for sha in contents.ids):
            return None  # its writer finished it meanwhile, or a leftover
        write_index(base, contents)
        note = f"pack index {name}.idx was missing; rebuilt from its pack"
        log.warning("snapshotter: %s", note)
        return note

    def check(self, full: bool, elsewhere: Callable[[bytes], bool]) -> list[str]:
        """Every pack's index checked afresh against its checksums (a damaged
        or missing one is rebuilt) and, with ``full``, every pack against its
        own; returns what was wrong, rebuilt or not."""
        problems: list[str] = []
        for base in self.bases(again=True):
            name = os.path.basename(base)
            try:
                index, note = self._loaded(base)
            except OSError:
                continue  # deleted meanwhile
            if note is not None:
                problems.append(note)
            elif full and not _checksum_holds(base + ".pack"):
                problems.append(f"pack {name}.pack fails its checksum")
            if index is not None:
                with self._guard:
                    self._indexes[base] = index
        for base in unindexed(self.dir):
            found = self._index_again(base, elsewhere)
            if found is not None:
                problems.append(found)
        return problems

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

    def whole(self, sha: bytes) -> tuple[int, bytes, bytes] | None:
        """(type number, content, zlib stream as stored) of an object packed whole,
        in the packs as listed last (see ``packread.whole_entry``); None otherwise."""
        found = self.locate(sha, False)
        if found is None:
            return None
        with self._guard:
            return whole_entry(self._file(found[0]), found[1], sha)

    def peek(self, sha: bytes, relist: bool) -> tuple[int, int] | None:
        """(type number, size) of a packed object from its entry's header (a
        delta's type is 6 or 7, its size that of the object it makes)."""
        found = self.locate(sha, relist)
        if found is None:
            return None
        with self._guard:
            return peek_entry(self._file(found[0]), found[1], sha)

    def stream(self, sha: bytes, relist: bool, open_loose: OpenLoose) -> Opened | None:
        """A packed object a piece at a time, through handles of its own (the
        pieces are read long after this returns); a delta is resolved a piece
        at a time too (``chainread``). None if it is in no pack."""
        found = self.locate(sha, relist)
        if found is None:
            return None
        base, offset = found
        packs = _Handles()
        closers: list[Callable[[], None]] = []

        def close_all() -> None:
            for close in closers:
                close()
            packs.close()

        try:
            opened = _stored(packs.open(base), offset, sha, closers) or stream_entry(packs.open(base), offset, sha)
            if opened is None:
                from snapshotter.engine.gitstore.chainread import stream_object  # a delta: not to read a commit

                opened = stream_object((base, offset), sha, packs.open, self._locate_quietly, open_loose)
        except BaseException:
            close_all()
            raise
        kind, size, pieces = opened
        return kind, size, closing(pieces, close_all), base

    def copy_source(
        self, sha: bytes, relist: bool, open_loose: OpenLoose, checked: bool = False
    ) -> tuple[int, int, Iterator[bytes | Span], list[CheckedEntry], Callable[[], None], bool] | None:
        """A packed object whose whole base is packed too, for a restore: (type
        number, size, pieces: bytes and spans of the packs, the entries read
        with their index's CRC-32, a closer for its handles, whether the base
        is kept in stored blocks). None if it is in no pack, or its base is
        loose (``chainread.copy_pieces``). ``checked``: the caller checks the
        entries (``entrycheck``) before it trusts the copy, so the base's block
        headers may be left to that check (the base's entry then carries them)."""
        found = self.locate(sha, relist)
        if found is None:
            return None
        packs = _Handles()

        from snapshotter.engine.gitstore.chainread import copy_pieces  # a big object: not to read a commit
        from snapshotter.engine.gitstore.entrycheck import entries_at

        try:
            made = copy_pieces(found, sha, packs.open, self._locate_quietly, open_loose, checked)
            if made is None:
                packs.close()
                return None
            kind, size, pieces, read, blocks = made
            headers = blocks.expected_headers if blocks is not None and blocks.unchecked_end is not None else None
            entries: list[CheckedEntry] = []
            for base in dict.fromkeys(base for base, _ in read):
                index = self.index(base)
                if index is None:
                    raise OSError(f"{base}.idx is gone")
                offsets = [offset for where, offset in read if where == base]
                for entry in entries_at(base, packs.open(base).fileno(), index, offsets):
                    if headers is not None and (entry.pack, entry.offset) == read[0]:
                        entry = replace(entry, headers=headers)  # the base, its headers unread
                    entries.append(entry)
        except BaseException:
            packs.close()
            raise
        return kind, size, pieces, entries, packs.close, blocks is not None

    def kind_of(self, sha: bytes, relist: bool, open_loose: OpenLoose) -> int | None:
        """The type of a packed object, a delta's found from headers alone."""
        found = self.locate(sha, relist)
        if found is None:
            return None
        packs = _Handles()

        from snapshotter.engine.gitstore.chainread import base_kind

        try:
            return base_kind(found, sha, packs.open, self._locate_quietly, open_loose)
        finally:
            packs.close()

    def _locate_quietly(self, sha: bytes) -> tuple[str, int] | None:
        return self.locate(sha, False) or self.locate(sha, True)


class _Handles:
    """Packs opened by path (less ``.pack``) for one read that outlives the
    call making it (a stream, a restore's copy), each once, closed together."""

    def __init__(self) -> None:
        self._open: dict[str, PackFile] = {}

    def open(self, path: str) -> PackFile:
        opened = self._open.get(path)
        if opened is None:
            opened = self._open[path] = PackFile(path + ".pack")
        return opened

    def close(self) -> None:
        for handle in self._open.values():
            handle.close()
        self._open.clear()


def _stored(
    pack: PackFile, offset: int, sha: bytes, closers: list[Callable[[], None]]
) -> tuple[int, int, Iterator[bytes]] | None:
    """A big whole entry kept in stored blocks, read from the pack as it is."""
    kind, size, used, distance = _entry_header(pack.read_at(64, offset), sha)
    if distance is not None or kind not in (1, 2, 3, 4) or size <= PIECE:
        return None
    from snapshotter.engine.gitstore.storedblocks import blocks_of  # a big object: not to read a commit

    blocks = blocks_of(pack, offset + used, size)
    if blocks is None:
        return None
    closers.append(blocks.close)
    return kind, size, blocks.read(0, size)


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


def unindexed(pack_dir: str) -> list[str]:
    """The ``pack-*.pack`` files without an index (paths less ``.pack``)."""
    try:
        names = set(os.listdir(pack_dir))
    except FileNotFoundError:
        return []
    return sorted(
        os.path.join(pack_dir, n[:-5])
        for n in names
        if n.startswith("pack-") and n.endswith(".pack") and n[:-5] + ".idx" not in names
    )


def _checksum_holds(path: str) -> bool:
    """Is the pack's last 20 bytes the SHA-1 of the rest (read a piece at a time)?"""
    try:
        with os.fdopen(open_side_file(path, follow=False)[0], "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            digest = hashlib.sha1()
            left = size - 20
            while left > 0:
                chunk = handle.read(min(PIECE, left))
                if not chunk:
                    return False
                digest.update(chunk)
                left -= len(chunk)
            return size >= 32 and handle.read(20) == digest.digest()
    except OSError:
        return True  # deleted meanwhile: nothing to report
