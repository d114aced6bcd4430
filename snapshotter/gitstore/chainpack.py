"""Chain packs: one big file's versions, a full copy and then deltas, in one pack that grows.

git reads a delta only when its base is in the same pack, and a pack ends
with the SHA-1 of all that comes before. So the versions of a big file live
in one pack, ``pack-chain-<checksum>.pack``: first the file whole (the *key
frame*), then each later version as an ``OFS_DELTA`` of the version it was
made from. A new version is appended in place (a new pack holding the key
frame again would cost the file's size in writes at every snapshot):

1. everything is prepared aside: the delta's entry, the new trailer (the
   SHA-1 of the new header, the old body and the entry, ``PackRehash``, on a
   thread while the file is read) and the new index, synced;
2. a journal (``chain-append-<old name>``) records the old size, entry
   count and trailer, synced;
3. the pack is renamed out of git's sight (``chain-tmp-*``), its index
   set aside (``chain-old-*``): readers that miss an object while a journal
   exists look again (``objectstore``);
4. the entry and trailer are written over the old trailer, the count over
   the old one, synced; the pack is renamed to its new checksum's name and the
   new index put in place; the journal goes.

The next writer after a crash (``recover``, under the store lock) completes an
append whose pack and index are both in place, and otherwise rolls the pack
back to its old size, count and trailer, byte for byte. A pack with another
hard link (shared with a fork) is never written to. Appends are made under
the store lock, one at a time in a process.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO

from snapshotter.errors import StoreError, StoreLocked, what_to_check
from snapshotter.fsutil import read_side_file, sync_folder, unlink_quietly
from snapshotter.gitstore.deflate import SegmentDeflater
from snapshotter.gitstore.inflate import PIECE
from snapshotter.gitstore.locking import StoreLock
from snapshotter.gitstore.packindex import load_index
from snapshotter.gitstore.packread import PackFile, _entry_header
from snapshotter.gitstore.packs import OFS_DELTA, entry_header, index_v2, offset_bytes

PREFIX = "pack-chain-"
MAX_DEPTH = 50
"""Deltas in a row (git's own ``pack.depth``: git applies them one by one)."""
MAX_PACK = (4 << 30) - (64 << 20)
"""A chain pack stays under 4 GiB: a delta addresses its base with 32-bit offsets."""
_JOURNAL = "chain-append-"
_TMP = "chain-tmp-"
_OLD_INDEX = "chain-old-"
_HEADER = struct.Struct(">4sII")
_append_lock = threading.Lock()


def _stage(name: str) -> None:
    """Called between the steps of an append: the crash tests' seam (a test
    process replaces it to stop, and be killed, at one of them)."""


def is_chain(base: str) -> bool:
    """Whether the pack at ``base`` (its path less ``.pack``) is a chain pack."""
    return os.path.basename(base).startswith(PREFIX)


def appending(pack_dir: str) -> bool:
    """Whether an append is under way (or was cut short and not yet recovered)."""
    try:
        return any(name.startswith(_JOURNAL) for name in os.listdir(pack_dir))
    except OSError:
        return False


@dataclass(frozen=True)
class Tip:
    """A version in a chain pack that a new version may be appended to."""

    base: str
    """The chain pack's path less ``.pack``."""
    offset: int
    """The version's entry."""
    depth: int
    """Deltas between it and the key frame."""
    key_length: int
    """The key frame's entry, as stored."""
    size: int
    """The pack's size."""
    count: int


def tip_of(base: str, offset: int) -> Tip | None:
    """The version at ``offset`` of the chain pack ``base`` as a place to
    append to, or None where a full copy must start a new chain: the chain is
    ``MAX_DEPTH`` deep there, its deltas already weigh half its key frame, it
    is near 4 GiB, or it has another hard link."""
    if not is_chain(base):
        return None
    try:
        pack = PackFile(base + ".pack")
    except OSError:
        return None
    try:
        st = os.fstat(pack.fileno())
        if st.st_nlink != 1 or st.st_size > MAX_PACK:
            return None
        head = pack.read_at(12, 0)
        if len(head) != 12:
            return None
        _, _, count = _HEADER.unpack(head)
        depth, at = 0, offset
        while True:
            kind, _, _, distance = _entry_header(pack.read_at(64, at), b"\0" * 20)
            if distance is None:
                break
            depth += 1
            at -= distance
            if depth >= MAX_DEPTH or at < 12:
                return None
        if at != 12 or kind != 3:
            return None  # every chain starts with its key frame, whole
        index = load_index(base)
        following = [found for _, found, _ in index.entries() if found > 12]
        key_length = min(following, default=st.st_size - 20) - 12
        if 2 * (st.st_size - 20 - 12 - key_length) > key_length:
            return None  # the deltas weigh half the key frame: reading costs too much
        return Tip(base, offset, depth, key_length, st.st_size, count)
    except (OSError, ValueError, zlib.error):
        return None
    finally:
        pack.close()


class NewChain:
    """A chain pack being written around its key frame, streamed a piece at a
    time: the pack's SHA-1 and the entry's CRC-32 computed as it goes."""

    def __init__(self, pack_dir: str, size: int) -> None:
        self._dir = pack_dir
        self._size = size
        self._tmp = ""
        try:
            os.makedirs(pack_dir, mode=0o700, exist_ok=True)
            fd, self._tmp = tempfile.mkstemp(dir=pack_dir, prefix="tmp_pack_")
            self._out = os.fdopen(fd, "wb")
        except OSError as exc:
            if self._tmp:
                unlink_quietly(self._tmp)
            raise StoreError(f"cannot write a pack in {pack_dir}: {exc.strerror}; {what_to_check(exc)}") from None
        self._digest = hashlib.sha1()
        self._squeezer = SegmentDeflater()
        self._crc = 0
        self._fed = 0
        self._put(_HEADER.pack(b"PACK", 2, 1), entry=False)
        self._put(entry_header(3, size))

    def _put(self, data: bytes, entry: bool = True) -> None:
        if not data:
            return
        self._digest.update(data)
        if entry:
            self._crc = zlib.crc32(data, self._crc)
        try:
            self._out.write(data)
        except OSError as exc:
            raise StoreError(f"cannot write to the store: {exc.strerror}; {what_to_check(exc)}") from None

    def write(self, piece: bytes | memoryview) -> None:
        self._fed += len(piece)
        self._put(self._squeezer.compress(piece if isinstance(piece, bytes) else bytes(piece)))

    def finish(self, sha: bytes) -> str:
        """Seal the pack (``sha``: the key frame's id) and put it in place with
        its index; returns its path less ``.pack``."""
        if self._fed != self._size:
            raise ValueError(f"the key frame was {self._fed:,} bytes, not {self._size:,}")
        self._put(self._squeezer.flush())
        checksum = self._digest.digest()
        try:
            self._out.write(checksum)
            self._out.flush()
            os.fsync(self._out.fileno())
            self._out.close()
            base = os.path.join(self._dir, PREFIX + checksum.hex())
            index = index_v2([sha], [12], [self._crc], checksum)
            _write_file(base + ".idx.tmp", index)  # a ``.tmp`` name: no reader takes it for an index
            os.replace(self._tmp, base + ".pack")
            os.replace(base + ".idx.tmp", base + ".idx")
            sync_folder(self._dir)
            return base
        except OSError as exc:
            raise StoreError(f"cannot finish a pack in {self._dir}: {exc.strerror}; {what_to_check(exc)}") from None
        finally:
            self.abort()

    def abort(self) -> None:
        if not self._out.closed:
            self._out.close()
        unlink_quietly(self._tmp)


class PackRehash:
    """The SHA-1 a chain pack will end with once one more entry is appended:
    its header with the new count and its body are hashed on a thread (started
    at once, while the new version is still being read), the entry last."""

    def __init__(self, tip: Tip) -> None:
        self.tip = tip
        self._digest = hashlib.sha1(_HEADER.pack(b"PACK", 2, tip.count + 1))
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="snapshotter-rehash", daemon=True)
        self._stop = False
        self._thread.start()

    def _run(self) -> None:
        try:
            pack = PackFile(self.tip.base + ".pack")
            try:
                at, end = 12, self.tip.size - 20
                while at < end and not self._stop:
                    chunk = pack.read_at(min(PIECE, end - at), at)
                    if not chunk:
                        raise OSError("the chain pack is shorter than it was")
                    self._digest.update(chunk)
                    at += len(chunk)
            finally:
                pack.close()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            self._failed = exc

    def cancel(self) -> None:
        self._stop = True
        self._thread.join()

    def finish(self, entry: Iterable[bytes]) -> bytes:
        self._thread.join()
        if self._failed is not None or self._stop:
            raise StoreError(f"cannot read the chain pack {os.path.basename(self.tip.base)}: {self._failed}")
        for piece in entry:
            self._digest.update(piece)
        return self._digest.digest()


def append(rehash: PackRehash, sha: bytes, delta_size: int, delta: IO[bytes]) -> str | None:
    """Append ``sha`` as an offset delta (``delta``: its zlib stream, of a delta
    ``delta_size`` bytes long) of the version at ``rehash.tip``; returns the
    pack's new path less ``.pack``, or None if the pack may not be written
    (another hard link, or it could not be renamed: the caller starts a new
    chain). The delta is read from its file twice, never held whole. Hold the
    store lock."""
    tip = rehash.tip
    pack_dir = os.path.dirname(tip.base)
    at = tip.size - 20
    head = entry_header(OFS_DELTA, delta_size) + offset_bytes(at - tip.offset)

    def pieces() -> Iterator[bytes]:
        yield head
        delta.seek(0)
        while chunk := delta.read(PIECE):
            yield chunk

    crc = 0

    def counted() -> Iterator[bytes]:
        nonlocal crc
        for piece in pieces():
            crc = zlib.crc32(piece, crc)
            yield piece

    checksum = rehash.finish(counted())
    new_base = os.path.join(pack_dir, PREFIX + checksum.hex())
    entries = [*load_index(tip.base).entries(), (sha, at, crc)]
    index = index_v2([e[0] for e in entries], [e[1] for e in entries], [e[2] for e in entries], checksum)
    with _append_lock:
        return _apply(tip, pack_dir, new_base, pieces, checksum, index)


def _apply(
    tip: Tip, pack_dir: str, new_base: str, pieces: Callable[[], Iterator[bytes]], checksum: bytes, index: bytes
) -> str | None:
    old_name = os.path.basename(tip.base)
    journal = os.path.join(pack_dir, _JOURNAL + old_name)
    tmp_pack = os.path.join(pack_dir, _TMP + old_name)
    kept_index = os.path.join(pack_dir, _OLD_INDEX + old_name)
    new_index_tmp = new_base + ".idx.tmp"
    try:
        with open(tip.base + ".pack", "rb") as handle:
            handle.seek(tip.size - 20)
            trailer = handle.read(20)
        _write_file(new_index_tmp, index)
        record = {
            "old": old_name,
            "size": tip.size,
            "count": tip.count,
            "trailer": trailer.hex(),
            "new": os.path.basename(new_base),
        }
        _write_file(journal, json.dumps(record).encode())
        sync_folder(pack_dir)
        _stage("journal")
        os.rename(tip.base + ".pack", tmp_pack)
    except OSError:
        unlink_quietly(new_index_tmp)
        unlink_quietly(journal)
        return None
    try:
        os.rename(tip.base + ".idx", kept_index)
        _stage("aside")
        with open(tmp_pack, "r+b") as handle:
            if os.fstat(handle.fileno()).st_nlink != 1:
                raise _Shared
            handle.seek(tip.size - 20)
            for piece in pieces():
                handle.write(piece)
            handle.flush()
            _stage("writing")
            handle.write(checksum)
            handle.seek(8)
            handle.write(struct.pack(">I", tip.count + 1))
            handle.flush()
            os.fsync(handle.fileno())
        _stage("written")
        os.rename(tmp_pack, new_base + ".pack")
        _stage("renamed")
        os.rename(new_index_tmp, new_base + ".idx")
        sync_folder(pack_dir)
        _stage("indexed")
    except (OSError, _Shared):
        _roll_back(pack_dir, record)
        return None
    unlink_quietly(kept_index)
    unlink_quietly(journal)
    return new_base


class _Shared(Exception):
    """The pack turned out to have another hard link."""


def settle(pack_dir: str, lock_path: str, on_recover: Callable[[], object]) -> None:
    """Recover an append a killed writer left, if one did and no writer holds
    the store lock now (one that does is mid-append and finishes it): the lock
    is taken without waiting, with ``on_recover`` (the store's whole recovery)
    if its holder died. Readers call it too, so that a store opened after a
    crash reads every object at once, and git does."""
    if not appending(pack_dir):
        return
    try:
        with StoreLock(lock_path, 0.0, on_recover=on_recover):
            recover(pack_dir)
    except (StoreLocked, OSError):
        pass


def recover(pack_dir: str) -> int:
    """Complete or roll back every append a killed writer left (hold the store
    lock). Returns how many journals were settled."""
    try:
        names = [name for name in os.listdir(pack_dir) if name.startswith(_JOURNAL)]
    except OSError:
        return 0
    settled = 0
    for name in names:
        path = os.path.join(pack_dir, name)
        try:
            record = json.loads(read_side_file(path, cap=4096))
            if not isinstance(record, dict):
                raise ValueError("not a record")
        except (OSError, ValueError):
            unlink_quietly(path)  # torn before it was synced: nothing had been touched yet
            settled += 1
            continue
        new_base = os.path.join(pack_dir, str(record.get("new", "")))
        if os.path.exists(new_base + ".pack") and os.path.exists(new_base + ".idx"):
            unlink_quietly(os.path.join(pack_dir, _OLD_INDEX + str(record.get("old", ""))))
            unlink_quietly(path)
        else:
            _roll_back(pack_dir, record)
        settled += 1
    return settled


def _roll_back(pack_dir: str, record: dict[str, object]) -> None:
    """Put a pack an append was cut short in back as it was, byte for byte."""
    old = str(record["old"])
    new = str(record["new"])
    size = int(str(record["size"]))
    count = int(str(record["count"]))
    trailer = bytes.fromhex(str(record["trailer"]))
    base = os.path.join(pack_dir, old)
    tmp_pack = os.path.join(pack_dir, _TMP + old)
    kept_index = os.path.join(pack_dir, _OLD_INDEX + old)
    journal = os.path.join(pack_dir, _JOURNAL + old)
    unlink_quietly(os.path.join(pack_dir, new + ".idx"))
    unlink_quietly(os.path.join(pack_dir, new + ".idx.tmp"))
    for found in (tmp_pack, os.path.join(pack_dir, new + ".pack"), base + ".pack"):
        if os.path.exists(found):
            with open(found, "r+b") as handle:
                handle.truncate(size)
                handle.seek(size - 20)
                handle.write(trailer)
                handle.seek(8)
                handle.write(struct.pack(">I", count))
                handle.flush()
                os.fsync(handle.fileno())
            if found != base + ".pack":
                os.rename(found, base + ".pack")
            break
    if os.path.exists(kept_index):
        os.replace(kept_index, base + ".idx")
    sync_folder(pack_dir)
    unlink_quietly(journal)


def _write_file(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
