"""A store's objects: read (each checked against its id) and written.

Every object read is checked against its id (the SHA-1 of ``<type>
<size>\0`` and its content) before its bytes go anywhere: a damaged object, a
pack index pointing at the wrong entry, or a loose file holding another
object's content all raise StoreError instead of reaching the workspace. A
blob above the streaming threshold is read a piece at a time and never held
whole, so it is checked when its last piece has been read: a restore writing
it then fails and puts the workspace back (``session.restoring``).
Sizes are read from headers first, so nothing is inflated past a caller's
limit (``inflate``). Hashing costs ~1.8 GB/s here; a restore spends it once
per object, on what it reads anyway.
"""

from __future__ import annotations

import os
import threading
import time
import zlib
from collections.abc import Generator, Iterable, Iterator

from snapshotter.engine.gitstore import chainjournal, checkedindexes
from snapshotter.engine.gitstore.checkedindexes import CheckedIndexes
from snapshotter.engine.gitstore.inflate import MAX_WHOLE, ObjectTooLarge, Stream
from snapshotter.engine.gitstore.loose import loose_header, open_loose, read_loose, stream_loose
from snapshotter.engine.gitstore.objects import STREAM_THRESHOLD, TYPE_NAMES, object_id
from snapshotter.engine.gitstore.packread import MAX_CHAIN, BaseById
from snapshotter.engine.gitstore.packset import PackSet
from snapshotter.errors import VERIFY, StoreError

_APPEND_WAITS = 40
_APPEND_WAIT = 0.05
"""A reader missing an object while a chain pack is appended to looks again,
every 50 ms for up to 2 s (an append takes its pack out of sight for the few
milliseconds it writes and syncs it)."""

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:
    from snapshotter.engine.gitstore.bigstore import BigFiles
    from snapshotter.engine.gitstore.commitread import CommitFields
    from snapshotter.engine.gitstore.objectwriter import ObjectWriter
    from snapshotter.engine.gitstore.spancopy import Span


class StoredObjects:
    """The objects below one ``objects`` folder: loose, and in packs."""

    def __init__(self, objects_dir: str) -> None:
        self.objects_dir = objects_dir
        checked = CheckedIndexes(os.path.join(os.path.dirname(objects_dir), "snapshotter", checkedindexes.FILE_NAME))
        self.packs = PackSet(os.path.join(objects_dir, "pack"), checked)
        self._writer: ObjectWriter | None = None
        self._making_writer = threading.Lock()
        self._big: BigFiles | None = None
        self._making_big = threading.Lock()

    @property
    def writer(self) -> ObjectWriter:
        """What writes objects here (loose, packs, and big files' chain packs),
        made when first asked for: reading the history writes nothing (issue #51)."""
        with self._making_writer:
            if self._writer is None:
                from snapshotter.engine.gitstore.objectwriter import ObjectWriter

                writer = ObjectWriter(self.objects_dir, self._has_packed)
                writer.big_files = self._big_files
                self._writer = writer
            return self._writer

    @property
    def big(self) -> BigFiles:
        """The chain packs and signatures of big files (``bigstore``), made when
        first asked for: reading the history loads none of their modules."""
        with self._making_big:
            if self._big is None:
                from snapshotter.engine.gitstore.bigstore import BigFiles

                meta_dir = os.path.join(os.path.dirname(self.objects_dir), "snapshotter")
                self._big = BigFiles(
                    self.packs, meta_dir, self.has_object, self._count_written, self.blob_chunks, self.blob_size
                )
            return self._big

    def _big_files(self) -> BigFiles:
        return self.big

    def _count_written(self, size: int, loose: int, packs: int) -> None:
        self.writer.count_written(size, loose, packs)

    def loose_path(self, sha: bytes) -> str:
        """Where ``sha`` is, or would be, a loose object (as ``ObjectWriter.loose_path``)."""
        hexsha = sha.hex()
        return os.path.join(self.objects_dir, hexsha[:2], hexsha[2:])

    def _has_packed(self, sha: bytes, relist: bool = True) -> bool:
        """Is ``sha`` in a pack; without ``relist``, in the packs as listed last."""
        for attempt in range(2):
            try:
                return self.packs.locate(sha, relist or attempt > 0, again=attempt > 0) is not None
            except OSError:
                continue  # look again with the packs listed afresh
        return False

    def release_packs(self) -> None:
        """Close every open pack and forget what was read of them."""
        self.packs.close(forget=True)

    def read_raw(self, sha: bytes, limit: int = MAX_WHOLE) -> tuple[int, bytes]:
        """(type number, content) of an object, checked against its id.

        KeyError if the store lacks it; ``ObjectTooLarge`` (a StoreError) if
        it is larger than ``limit``; StoreError if its content does not match
        its id. Objects are looked up first in the packs as listed last (most
        are packed, and this costs no system call), then loose (read directly:
        dulwich parses each into a ShaFile first, several times slower), then
        in the packs listed afresh, and last in packs found without an index
        (indexed again: see ``packset``).
        """
        return self._read(sha, limit, 0)

    def _read(self, sha: bytes, limit: int, depth: int) -> tuple[int, bytes]:
        if depth > MAX_CHAIN:
            raise zlib.error(f"object {sha.hex()} ends a chain of deltas named by id that is too long")

        def base_by_id(base: bytes) -> tuple[int, bytes]:  # a REF_DELTA's base (rare: only git writes them)
            return self._read(base, MAX_WHOLE, depth + 1)

        found = self._from_packs(sha, False, limit, base_by_id)
        if found is None:
            loose = read_loose(self.loose_path(sha), sha, limit)
            found = (*loose, "") if loose is not None else None
        attempt = 0
        while found is None:
            found = self._from_packs(sha, True, limit, base_by_id)
            if found is None and self.packs.index_unindexed():
                found = self._from_packs(sha, True, limit, base_by_id)
            if found is None and not self._appending(attempt):
                raise KeyError(sha.hex())
            attempt += 1
        kind, content, where = found
        name = TYPE_NAMES.get(kind)
        if name is None or object_id(name, content) != sha:
            raise _mismatch(sha, where)
        return kind, content

    def _from_packs(self, sha: bytes, relist: bool, limit: int, base_by_id: BaseById) -> tuple[int, bytes, str] | None:
        for attempt in range(2 if relist else 1):
            try:
                return self.packs.read(sha, relist, limit, base_by_id, again=attempt > 0)
            except OSError:
                continue  # a pack vanished (a gc elsewhere): look again with the packs listed afresh
        return None

    def blob_chunks(self, sha: bytes) -> Iterator[bytes]:
        """A blob's content in pieces, checked against its id: a small one (up to
        the streaming threshold) before its one piece is given; a big one is
        inflated a piece at a time, never held whole, and if it does not match
        its id, StoreError is raised after its last piece (a restore writing it
        then puts the workspace back)."""
        try:
            kind, content = self.read_raw(sha, STREAM_THRESHOLD)
        except ObjectTooLarge:
            yield from self._checked_stream(sha)
            return
        except KeyError:
            raise StoreError(f"blob {sha.hex()} is missing from the store", VERIFY) from None
        if kind != 3:
            raise StoreError(f"object {sha.hex()} should be a blob; the store is damaged", VERIFY)
        yield content

    def blob_content(self, sha: bytes) -> bytes | Iterable[bytes | Span]:
        """A blob's content for a restore to write: a small one whole, checked
        against its id; a big packed one as a ``CheckedCopy`` (its base's stored
        blocks copied from the pack by the kernel, or inflated; its entries
        checked by their index's CRC-32, not hashed again: see ``entrycheck``);
        a big loose one, or one on a loose base, as ``blob_chunks`` gives it."""
        try:
            kind, content = self.read_raw(sha, STREAM_THRESHOLD)
        except ObjectTooLarge:
            pass
        except KeyError:
            raise StoreError(f"blob {sha.hex()} is missing from the store", VERIFY) from None
        else:
            if kind != 3:
                raise StoreError(f"object {sha.hex()} should be a blob; the store is damaged", VERIFY)
            return content
        from snapshotter.engine.gitstore.entrycheck import CheckedCopy  # a big blob: not to read the history

        for relist in (False, True):
            try:
                found = self.packs.copy_source(sha, relist, self._open_loose, checked=True)
            except OSError:
                found = None
            if found is not None:
                kind, size, pieces, entries, close, _ = found
                if kind != 3:
                    close()
                    raise StoreError(f"object {sha.hex()} should be a blob; the store is damaged", VERIFY)
                return CheckedCopy(sha, pieces, entries, close, size)
        return self._checked_stream(sha)

    def _checked_stream(self, sha: bytes) -> Iterator[bytes]:
        kind, size, pieces, where = self._stream(sha)
        from snapshotter.engine.gitstore.digest import ThreadedDigest  # a blob streamed: not to read the history

        digest = ThreadedDigest(b"blob %d\0" % size)  # hashed on a thread while the caller writes
        try:
            if kind != 3:
                raise StoreError(f"object {sha.hex()} should be a blob; the store is damaged", VERIFY)
            for piece in pieces:
                digest.update(piece)
                yield piece
            if digest.digest() != sha:
                raise _mismatch(sha, where)
        finally:
            digest.close()
            if isinstance(pieces, Generator):
                pieces.close()

    def _stream(self, sha: bytes) -> tuple[int, int, Iterator[bytes], str]:
        """(type number, size, content in pieces, the pack's path or "" if
        loose) of an object, not checked against its id; StoreError if the
        store lacks it. A delta is read a piece at a time (``chainread``),
        whatever its size."""
        for attempt in range(_APPEND_WAITS):
            for relist in (False, True):
                try:
                    found = self.packs.stream(sha, relist, self._open_loose)
                except OSError:
                    found = None
                if found is not None:
                    return found
                if not relist:
                    loose = stream_loose(self.loose_path(sha), sha)
                    if loose is not None:
                        return (*loose, "")
            if self.packs.index_unindexed():
                found = self.packs.stream(sha, True, self._open_loose)
                if found is not None:
                    return found
            if not self._appending(attempt):
                break
        raise StoreError(f"object {sha.hex()} is missing from the store", VERIFY)

    def _open_loose(self, sha: bytes) -> tuple[int, int, Stream] | None:
        return open_loose(self.loose_path(sha), sha)

    def _appending(self, attempt: int) -> bool:
        """Whether a chain pack is being appended to (its objects out of sight
        for a moment, see ``chainpack``): then wait a little and look again.
        An append a killed writer left is recovered first (``settle``)."""
        if attempt + 1 >= _APPEND_WAITS or not chainjournal.appending(self.packs.dir):
            return False
        if attempt == 0:
            self.settle_appends()
            return True
        time.sleep(_APPEND_WAIT)
        return True

    def settle_appends(self) -> None:
        """Recover an append a killed writer left (``Store`` knows the lock)."""

    def object_header(self, sha: bytes) -> tuple[int, int]:
        """(type number, size) of an object, from its header where it can be
        (a delta in a pack: its type from its chain's headers, its size from
        the delta's); KeyError if missing."""
        found = self._header(sha)
        if found is None or found[0] in (6, 7):
            for relist in (False, True):
                try:
                    kind = self.packs.kind_of(sha, relist, self._open_loose)
                except OSError:
                    kind = None
                if kind is not None and found is not None:
                    return kind, found[1]
            kind_found, content = self.read_raw(sha)
            return kind_found, len(content)
        return found

    def blob_size(self, sha: bytes) -> int:
        """An object's size from its header, never inflating it whole."""
        found = self._header(sha)
        return found[1] if found is not None else self.object_header(sha)[1]

    def _header(self, sha: bytes) -> tuple[int, int] | None:
        """(type number, size) from an object's header, looked up in ``read_raw``'s
        order: the packs as listed (no system call), loose, the packs listed afresh.
        Loose first cost a failed ``open`` per packed object: 0.8 s of a push's
        size check over 100,000 packed files."""
        try:
            found = self.packs.peek(sha, False)
        except OSError:
            found = None  # a pack vanished (a gc elsewhere): the packs are listed afresh below
        return found or loose_header(self.loose_path(sha), sha) or self.packs.peek(sha, True)

    def loose_size(self, sha: bytes) -> int | None:
        """A loose object's size from its header; None if the object is not loose."""
        try:
            found = loose_header(self.loose_path(sha), sha)
        except (OSError, ValueError, zlib.error):
            return 0
        return found[1] if found is not None else None

    def ids_starting_with(self, prefix: str) -> set[bytes]:
        """Every object id (loose or packed) whose hex form starts with ``prefix``
        (at least 2 hex digits): a search of each pack index, a listing of one
        loose folder; never a walk of every object."""
        prefix = prefix.lower()
        found: set[bytes] = set()
        folder = os.path.join(self.objects_dir, prefix[:2])
        try:
            names = os.listdir(folder)
        except OSError:
            names = []
        rest = prefix[2:]
        for name in names:
            if len(name) == 38 and name.startswith(rest):
                try:
                    found.add(bytes.fromhex(prefix[:2] + name))
                except ValueError:
                    continue
        for base in self.packs.bases():
            try:
                index = self.packs.index(base)
            except OSError:
                continue  # gone since the listing (a gc elsewhere): what it held is elsewhere now
            if index is not None:
                found.update(index.starting_with(prefix))
        return found

    def has_object(self, sha: bytes) -> bool:
        return self.writer.exists(sha)

    def read_commit(self, sha: bytes) -> CommitFields:
        """A commit's id, tree, time and message, checked against its id; KeyError
        if missing, TypeError if not a commit, ValueError if it names no tree or time."""
        from snapshotter.engine.gitstore.commitread import read_commit_fields

        kind, content = self.read_raw(sha)
        if kind != 1:
            raise TypeError(TYPE_NAMES.get(kind, b"object").decode())
        return read_commit_fields(sha.hex().encode("ascii"), content)


def _mismatch(sha: bytes, pack: str) -> StoreError:
    """``pack``: the path less ``.pack`` of the pack it was read from; empty: its loose file."""
    where = os.path.basename(pack) + ".pack" if pack else "its loose file"
    return StoreError(f"object {sha.hex()} read from {where} does not match its id; the store is damaged", VERIFY)
