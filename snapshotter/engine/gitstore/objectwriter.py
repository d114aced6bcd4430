"""Writing objects into the store, and hashing workspace files on the way.

Blobs are hashed and compressed in one pass and, for big files, in chunks, so a
file is never held in memory whole (dulwich's ``blob_from_path_and_stat`` reads
it whole and ``add_object`` needs about twice its size). Objects are compressed
at level 1, git's own default for loose objects (level 6 is about 4x slower);
see ``deflate.py``. Inside a ``batch`` new objects go to one pack instead of
loose files. The object format itself (ids, trees, modes) is in ``objects``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from snapshotter.engine.fsutil import StatKey, new_temp_file, stat_key, sync_folder, unlink_quietly
from snapshotter.engine.gitstore.deflate import compressor, deflate
from snapshotter.engine.gitstore.objects import BINARY_PROBE, STREAM_THRESHOLD, describe_lines, is_binary, object_id
from snapshotter.engine.gitstore.packs import PackBuilder
from snapshotter.errors import VERIFY, StoreError, what_to_check

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.engine.gitstore.bigstore import BigFiles

CHUNK = 1 << 20

_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
"""Never blocking: a named pipe swapped in for a file since the walk's ``lstat``
opens at once, and its ``fstat`` says it changed."""
_READ_RETRIES = 3


def open_for_read(path: str) -> int:
    """Open a workspace file without following a symlink (the tests' fault seam)."""
    return os.open(path, _READ_FLAGS)


class FileChanged(Exception):
    """The file changed type, size or stat while it was being read."""


@dataclass(frozen=True)
class Hashed:
    """What hashing one workspace file found."""

    sha: bytes
    key: StatKey
    size: int
    lines: int | None
    """Text lines, or None for a binary file."""


class ObjectWriter:
    """Writes loose objects into ``objects_dir``; knows which ids already exist."""

    def __init__(self, objects_dir: str, has_packed: Callable[[bytes, bool], bool]) -> None:
        self.objects_dir = objects_dir
        self._has_packed = has_packed
        """``has_packed(sha, relist)``: is the object in a pack; with ``relist``
        false, in the packs as listed last (no system call)."""
        self._packs_listed = False
        """In a batch: the packs were listed once. One added since by another
        writer only means an object stored twice, as for loose folders."""
        self._made_dirs: set[str] = set()
        self._loose_folders: set[str] | None = None
        """In a batch: the loose-object folders that existed when it began. An id
        whose folder was missing then is not loose (or, if another writer made it
        since, is stored again in the pack: harmless), so no system call asks."""
        self._unsynced_dirs: set[str] = set()
        self._pack: PackBuilder | None = None
        self.written = (0, 0, 0)
        """(bytes, loose objects, packs) this writer has added to the store: lets
        the retention pass estimate the store's size instead of walking it."""
        self.big_files: Callable[[], BigFiles] | None = None
        """Where big files' versions go (chain packs), set by the store; asked
        for only where a big file is written (their modules load then)."""

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Send the objects written inside the block to one new pack."""
        if self._pack is not None:
            yield
            return
        self._pack = PackBuilder(os.path.join(self.objects_dir, "pack"))
        self._loose_folders = _fanout_folders(self.objects_dir)
        self._packs_listed = False
        try:
            yield
        except BaseException:
            self._pack.abort()
            raise
        else:
            sealed = self._pack.finish()
            if sealed is not None:
                size, loose, packs = self.written
                self.written = (size + _size_of(sealed + ".pack") + _size_of(sealed + ".idx"), loose, packs + 1)
        finally:
            self._pack = None
            self._loose_folders = None

    def sibling(self) -> ObjectWriter:
        """A writer of its own over the same objects folder, sharing nothing
        with this one's batch (for a forked copy of the process: this one's
        open pack belongs to the original)."""
        return ObjectWriter(self.objects_dir, self._has_packed)

    def count_written(self, size: int, loose: int, packs: int) -> None:
        """Add what another writer (a sibling in a copy) added to the store."""
        before = self.written
        self.written = (before[0] + size, before[1] + loose, before[2] + packs)

    def loose_path(self, sha: bytes) -> str:
        hexsha = sha.hex()
        return os.path.join(self.objects_dir, hexsha[:2], hexsha[2:])

    def exists(self, sha: bytes) -> bool:
        """True if the store has the object. A loose one gets a fresh mtime, so
        that a gc honouring a grace period never drops it before it is referenced."""
        folders = self._loose_folders
        if folders is not None and sha.hex()[:2] not in folders:
            return self._in_pack(sha)
        try:
            os.utime(self.loose_path(sha))
            return True
        except FileNotFoundError:
            return self._in_pack(sha)
        except OSError:
            return os.path.exists(self.loose_path(sha))

    def _in_pack(self, sha: bytes) -> bool:
        relist = self._pack is None or not self._packs_listed
        self._packs_listed = self._pack is not None
        return self._has_packed(sha, relist)

    def write(self, kind: bytes, content: bytes) -> bytes:
        """Store ``content`` as an object of ``kind`` unless present; return its id."""
        header = b"%s %d\0" % (kind, len(content))
        digest = hashlib.sha1(header)
        digest.update(content)
        sha = digest.digest()
        pack = self._pack
        if pack is not None and sha in pack:
            return sha
        if not self.exists(sha):
            if pack is not None:
                pack.add(kind, sha, content)
            else:
                self._install(sha, [deflate(header + content)])
        return sha

    def write_stream(self, kind: bytes, size: int, pieces: Iterable[bytes], sha: bytes) -> None:
        """Store an object given in pieces as a loose object, hashed and compressed
        a piece at a time (never held whole); StoreError, and nothing stored,
        if the pieces do not make ``size`` bytes matching ``sha``."""
        header = b"%s %d\0" % (kind, size)
        digest = hashlib.sha1(header)
        squeezer = compressor()
        fd, tmp = self._tmp_in(self.objects_dir)
        try:
            with os.fdopen(fd, "wb") as out:
                _store_write(out, squeezer.compress(header))
                total = 0
                for piece in pieces:
                    total += len(piece)
                    digest.update(piece)
                    _store_write(out, squeezer.compress(piece))
                _store_write(out, squeezer.flush())
                out.flush()
                os.fsync(out.fileno())
            if total != size or digest.digest() != sha:
                raise StoreError(f"object {sha.hex()} does not match its id; the store is damaged", VERIFY)
            self._place(tmp, self.loose_path(sha))
        finally:
            unlink_quietly(tmp)  # gone already once moved into place

    def make_durable(self) -> None:
        """Flush the folder entries of the loose objects written so far to disk.

        Called before a ref names them: the objects' contents are synced as
        they are written, their names in their folders here, in one go.
        """
        folders, self._unsynced_dirs = self._unsynced_dirs, set()
        for folder in sorted(folders | {self.objects_dir} if folders else folders):
            sync_folder(folder)

    def _ensure_folder(self, folder: str) -> None:
        if folder not in self._made_dirs:
            try:
                os.makedirs(folder, mode=0o700, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create {folder} in the store: {exc.strerror}") from None
            self._made_dirs.add(folder)
            if self._loose_folders is not None:
                self._loose_folders.add(os.path.basename(folder))

    def _tmp_in(self, folder: str) -> tuple[int, str]:
        self._ensure_folder(folder)
        try:
            return new_temp_file(folder, "tmp_obj_")
        except OSError as exc:
            raise StoreError(f"cannot write to the store in {folder}: {exc.strerror}; {what_to_check(exc)}") from None

    def _install(self, sha: bytes, chunks: Iterable[bytes]) -> None:
        path = self.loose_path(sha)
        fd, tmp = self._tmp_in(os.path.dirname(path))
        try:
            try:
                with os.fdopen(fd, "wb") as handle:
                    count = 0
                    for chunk in chunks:
                        count += handle.write(chunk)
                    handle.flush()
                    os.fsync(handle.fileno())  # a ref written later must never name lost content
            except OSError as exc:
                raise StoreError(f"cannot write to the store: {exc.strerror}; {what_to_check(exc)}") from None
            self._place(tmp, path)
            size, loose, packs = self.written
            self.written = (size + count, loose + 1, packs)
        except BaseException:
            unlink_quietly(tmp)
            raise

    def _place(self, tmp: str, path: str) -> None:
        """Move a written and synced temporary file in as the loose object at
        ``path``; its folder is synced before a ref names it (``make_durable``)."""
        self._ensure_folder(os.path.dirname(path))
        try:
            os.replace(tmp, path)
        except OSError as exc:
            # Another writer installed the same object first (Windows refuses to
            # replace a file that is open): its content is identical by definition.
            if not os.path.exists(path):
                raise StoreError(f"cannot write {path}: {exc.strerror}; {what_to_check(exc)}") from None
            unlink_quietly(tmp)
        self._unsynced_dirs.add(os.path.dirname(path))

    def hash_file(self, path: str, write: bool) -> Hashed:
        """Hash (and with ``write``, store) the regular file at ``path``.

        The stat key recorded is the open file's, taken
        from the open file before and after reading; a difference means the file
        changed while it was read, and the read is retried a few times before
        :class:`FileChanged` is raised.
        """
        for _ in range(_READ_RETRIES):
            result = self._hash_file_once(path, write)
            if result is not None:
                return result
        raise FileChanged(path)

    def _hash_file_once(self, path: str, write: bool) -> Hashed | None:
        fd = open_for_read(path)
        try:
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                raise FileChanged(path)
            if before.st_size > STREAM_THRESHOLD:
                sha, lines = self._stream_blob(fd, before.st_size, write)
                size = before.st_size
            else:
                content = _read_all(fd, before.st_size)
                sha = self.write(b"blob", content) if write else object_id(b"blob", content)
                size = len(content)
                lines = describe_lines(content)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        key = stat_key(before)
        if sha is None or key != stat_key(after) or size != before.st_size:
            return None
        return Hashed(sha, key, size, lines)

    def _stream_blob(self, fd: int, size: int, write: bool) -> tuple[bytes | None, int | None]:
        """Hash (and store) a big file chunk by chunk, counting its lines on the way
        (None if binary). The id is None if the file's size changed meanwhile."""
        header = b"blob %d\0" % size
        digest = hashlib.sha1(header)
        counter = LineTally()
        squeezer = compressor() if write else None
        tmp_fd, tmp = self._tmp_in(self.objects_dir) if write else (-1, "")
        out = os.fdopen(tmp_fd, "wb") if write else None
        try:
            if out is not None and squeezer is not None:
                _store_write(out, squeezer.compress(header))
            total = 0
            while chunk := os.read(fd, CHUNK):
                total += len(chunk)
                if total > size:
                    return None, None  # the file grew while being read
                digest.update(chunk)
                counter.feed(chunk)
                if out is not None and squeezer is not None:
                    _store_write(out, squeezer.compress(chunk))
            if total != size:
                return None, None
            sha = digest.digest()
            if out is not None and squeezer is not None:
                _store_write(out, squeezer.flush())
                _store_sync(out)  # a ref written later must never name lost content
                stored = out.tell()
                out.close()
                out = None
                if not self.exists(sha):
                    self._place(tmp, self.loose_path(sha))
                    size_so_far, loose, packs = self.written
                    self.written = (size_so_far + stored, loose + 1, packs)
            return sha, counter.lines()
        finally:
            if out is not None:
                out.close()
            if tmp:
                unlink_quietly(tmp)  # gone already once moved into place


class LineTally:
    """Counts lines over chunks, with git's binary rule (NUL in the first 8,000
    bytes): once a NUL is seen there, nothing more is counted."""

    def __init__(self) -> None:
        self.count = 0
        self.head = b""
        self.last = b""
        self.binary = False

    def feed(self, chunk: bytes) -> None:
        if self.binary:
            return
        if len(self.head) < BINARY_PROBE:
            self.head += chunk[: BINARY_PROBE - len(self.head)]
            if is_binary(self.head):
                self.binary = True
                return
        self.count += chunk.count(b"\n")
        self.last = chunk[-1:]

    def lines(self) -> int | None:
        if self.binary or is_binary(self.head):
            return None
        return self.count + (1 if self.last and self.last != b"\n" else 0)


def _store_write(out: BinaryIO, data: bytes) -> None:
    try:
        out.write(data)
    except OSError as exc:
        raise StoreError(f"cannot write to the store: {exc.strerror}; {what_to_check(exc)}") from None


def _store_sync(out: BinaryIO) -> None:
    try:
        out.flush()
        os.fsync(out.fileno())
    except OSError as exc:
        raise StoreError(f"cannot write to the store: {exc.strerror}; {what_to_check(exc)}") from None


def _fanout_folders(objects_dir: str) -> set[str]:
    try:
        return {name for name in os.listdir(objects_dir) if len(name) == 2}
    except OSError:
        return set()


def _read_all(fd: int, size_hint: int) -> bytes:
    """The file's content. When one read returns exactly the size its fstat gave,
    no second read looks for the end: the fstat taken after reading catches a
    file that changed meanwhile (one system call less per file)."""
    chunk = os.read(fd, max(size_hint + 1, 65536))
    if len(chunk) == size_hint:
        return chunk
    chunks: list[bytes] = []
    while chunk:
        chunks.append(chunk)
        chunk = os.read(fd, max(size_hint + 1, 65536))
    return b"".join(chunks)


def _size_of(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
