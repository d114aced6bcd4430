"""Chain packs: one big file's versions, a full copy and then deltas, in one pack that grows.

git reads a delta only when its base is in the same pack (checked with git
2.39: a ``REF_DELTA`` to another pack fails ``cat-file`` and ``fsck``), and a
pack ends with the SHA-1 of all that comes before. So the versions of a big
file live in one pack, ``pack-chain-<checksum>.pack``:

    header (PACK, 2, 1 + PLACES) | key frame | delta | delta | ... | place | place | ... | SHA-1

first the file whole (the *key frame*), then each later version as an
``OFS_DELTA`` of the version it was made from, then the free *places*: small
blobs (``snapshotter chain <key frame id>: place <n>, free``) that hold the
entry count fixed. A new version is appended in place of the first free
place (``chainappend``): everything before it never changes, so neither does
the SHA-1's state there, which is kept beside the store
(``snapshotter/chains/<pack name>``, see ``sha1state``) and taken up again:
an append hashes what it writes, not the gigabyte before it. Without a
state kept (lost, or no OpenSSL to take it up with) the pack is hashed again
from its start, on a thread while the file is read.

The free places are unreachable objects (``git fsck`` lists them as dangling
blobs, as it lists the objects of a dropped snapshot until a gc). A chain
is full when its places are used, or it is ``MAX_DEPTH`` deltas deep where a
version would go, or its deltas weigh half its key frame; the next version
then starts a new chain, whole (a full copy now and then).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import struct
import zlib
from dataclasses import dataclass
from typing import Any

from snapshotter.engine.fsutil import read_side_file, sync_folder, unlink_quietly, write_all
from snapshotter.engine.gitstore import sha1state
from snapshotter.engine.gitstore.bigfacts import PREFIX, is_chain
from snapshotter.engine.gitstore.deflate import SegmentDeflater, crc32, deflate
from snapshotter.engine.gitstore.packindex import load_index
from snapshotter.engine.gitstore.packread import PackFile, _entry_header
from snapshotter.engine.gitstore.packs import entry_header, index_v2, new_pack_file
from snapshotter.errors import StoreError, what_to_check

PLACES = 255
"""Versions a chain takes after its key frame (the entry count is 1 + PLACES, fixed)."""
MAX_DEPTH = 250
"""Deltas in a row, at most. snapshotter's own reads compose a chain's deltas
and read the key frame once, whatever the depth; git applies them one by one,
so ``git cat-file`` of the deepest version of a 1 GiB file makes 250 copies of
it (about a minute), the price of a full copy 5 times rarer than at git's own
``pack.depth`` of 50 (see docs/store.md: a week of agent work on a database)."""
MAX_PACK = (4 << 30) - (64 << 20)
"""A chain pack stays under 4 GiB: a delta addresses its base with 32-bit offsets."""
STATES = "chains"
_HEADER = struct.Struct(">4sII")
_STATE = struct.Struct(">4sQ")


def place(key: bytes, number: int) -> bytes:
    """The content of the free place ``number`` of the chain whose key frame is ``key``."""
    return b"snapshotter chain %s: place %d, free\n" % (key.hex().encode(), number)


def place_id(key: bytes, number: int) -> bytes:
    content = place(key, number)
    return hashlib.sha1(b"blob %d\0" % len(content) + content).digest()


@dataclass(frozen=True)
class Tip:
    """A version in a chain pack that a new version may be appended to."""

    base: str
    """The chain pack's path less ``.pack``."""
    offset: int
    """The version's entry."""
    depth: int
    """Deltas between it and the key frame."""
    size: int
    """The pack's size."""
    end: int
    """Where the free places begin: the new version goes there."""
    entries: tuple[tuple[bytes, int, int], ...]
    """Every entry of the index: (id, offset, CRC-32)."""
    free: tuple[bytes, ...]
    """The free places' ids, in the pack's order."""


def tip_of(base: str, offset: int) -> Tip | None:
    """The version at ``offset`` of the chain pack ``base`` as one to append to,
    or None where a full copy must start a new chain: no free place, ``MAX_DEPTH``
    deltas deep there, deltas weighing half the key frame, near 4 GiB, another
    hard link, or not a chain pack laid out as this module writes them."""
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
        depth, at = 0, offset
        while True:
            kind, _, _, distance = _entry_header(pack.read_at(64, at), b"\0" * 20)
            if distance is None:
                break
            depth += 1
            at -= distance
            if depth >= MAX_DEPTH or at < 12:
                return None
        if at != 12 or kind != 3 or _HEADER.unpack(pack.read_at(12, 0))[2] != 1 + PLACES:
            return None  # every chain starts with its key frame, whole
        entries = sorted(load_index(base).entries(), key=lambda entry: entry[1])
        key = entries[0][0]
        places = {place_id(key, number) for number in range(PLACES)}
        free = [entry for entry in entries if entry[0] in places]
        if not free or any(entry[0] not in places for entry in entries if entry[1] >= free[0][1]):
            return None  # full, or not laid out as ours
        end = free[0][1]
        key_length = entries[1][1] - 12
        if 2 * (end - 12 - key_length) > key_length:
            return None  # the deltas weigh half the key frame: reading costs too much
        return Tip(base, offset, depth, st.st_size, end, tuple(entries), tuple(entry[0] for entry in free))
    except (OSError, ValueError, zlib.error, struct.error, IndexError):
        return None
    finally:
        pack.close()


def _digest() -> Any:
    """A SHA-1 whose state can be kept where the machine allows (``sha1state``), else hashlib's."""
    return sha1state.Sha1State() if sha1state.available() else hashlib.sha1()


class NewChain:
    """A chain pack being written around its key frame, streamed a piece at a
    time: the pack's SHA-1 and the entry's CRC-32 computed as it goes."""

    def __init__(self, pack_dir: str, size: int, states_dir: str) -> None:
        self._dir = pack_dir
        self._states = states_dir
        self._size = size
        self._out, self._tmp = new_pack_file(pack_dir, "wb", buffering=0)
        self._digest = _digest()
        self._squeezer = SegmentDeflater()
        self._crc = 0
        self._fed = 0
        self._at = 0
        self._put(_HEADER.pack(b"PACK", 2, 1 + PLACES), entry=False)
        self._put(entry_header(3, size))

    def _put(self, data: bytes | memoryview, entry: bool = True) -> None:
        self._put_all([data], entry)

    def _put_all(self, parts: list[bytes | memoryview], entry: bool = True) -> None:
        """Hash and write ``parts`` at once: a segment's blocks and headers in
        one system call, not one each (see ``fsutil.write_all``)."""
        digest = self._digest
        crc = self._crc
        for part in parts:
            digest.update(part)
            if entry:
                crc = crc32(part, crc)
            self._at += len(part)
        self._crc = crc
        try:
            write_all(self._out.fileno(), parts)
        except OSError as exc:
            raise StoreError(f"cannot write to the store: {exc.strerror}; {what_to_check(exc)}") from None

    def write(self, piece: bytes) -> None:
        self._fed += len(piece)
        self._put_all(self._squeezer.pieces(piece))

    def finish(self, sha: bytes) -> str:
        """Seal the pack (``sha``: the key frame's id) with its free places and
        put it in place with its index; returns its path less ``.pack``."""
        if self._fed != self._size:
            raise ValueError(f"the key frame was {self._fed:,} bytes, not {self._size:,}")
        self._put(self._squeezer.flush())
        entries = [(sha, 12, self._crc)]
        end = self._at
        state = self._digest.export() if isinstance(self._digest, sha1state.Sha1State) else None
        places: list[bytes | memoryview] = []
        at = end
        for number in range(PLACES):
            content = place(sha, number)
            data = entry_header(3, len(content)) + deflate(content)
            entries.append((place_id(sha, number), at, zlib.crc32(data)))
            places.append(data)
            at += len(data)
        self._put_all(places, entry=False)
        checksum = self._digest.digest()
        try:
            write_all(self._out.fileno(), [checksum])
            os.fsync(self._out.fileno())
            self._out.close()
            base = os.path.join(self._dir, PREFIX + checksum.hex())
            # A ``.tmp`` name no reader takes, and no other thread: copies of one new big file, hashed
            # on threads of one scan, make the same pack at the same moment.
            index_tmp = f"{base}.{secrets.token_hex(6)}.idx.tmp"
            write_file(index_tmp, index_bytes(entries, checksum))
            os.replace(self._tmp, base + ".pack")
            os.replace(index_tmp, base + ".idx")
            sync_folder(self._dir)
        except OSError as exc:
            raise StoreError(f"cannot finish a pack in {self._dir}: {exc.strerror}; {what_to_check(exc)}") from None
        finally:
            self.abort()
        if state is not None:
            keep_state(self._states, base, end, state)
        return base

    def abort(self) -> None:
        if not self._out.closed:
            self._out.close()
        unlink_quietly(self._tmp)


def index_bytes(entries: list[tuple[bytes, int, int]], checksum: bytes) -> bytes:
    return index_v2([e[0] for e in entries], [e[1] for e in entries], [e[2] for e in entries], checksum)


def keep_state(states_dir: str, base: str, end: int, state: bytes) -> None:
    """Keep the SHA-1's state at ``end`` of the chain pack ``base`` (a cache:
    written whole under a temporary name, then renamed; lost, it is made again)."""
    try:
        os.makedirs(states_dir, mode=0o700, exist_ok=True)
        path = os.path.join(states_dir, os.path.basename(base))
        data = _STATE.pack(b"SHA1", end) + state
        tmp = f"{path}_{secrets.token_hex(6)}.tmp"  # one of its own: another thread may keep the same state
        write_file(tmp, data + hashlib.sha1(data).digest(), sync=False)
        os.replace(tmp, path)
    except OSError:
        pass


def kept_state(states_dir: str, base: str, end: int) -> bytes | None:
    """The SHA-1's state kept for the chain pack ``base`` at ``end``, if any."""
    try:
        data = read_side_file(os.path.join(states_dir, os.path.basename(base)), cap=256)
    except OSError:
        return None
    if len(data) < _STATE.size + 20 or hashlib.sha1(data[:-20]).digest() != data[-20:]:
        return None
    magic, at = _STATE.unpack_from(data)
    return data[_STATE.size : -20] if magic == b"SHA1" and at == end else None


def drop_state(states_dir: str, base: str) -> None:
    unlink_quietly(os.path.join(states_dir, os.path.basename(base)))


def write_file(path: str, data: bytes, sync: bool = True) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        if sync:
            os.fsync(handle.fileno())
