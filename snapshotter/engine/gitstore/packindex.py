"""Pack indexes checked when loaded, and rebuilt from their packs when damaged.

An index is derived data: everything in it can be computed again from its pack.
Its trailer holds the SHA-1 of the pack (the pack's own last 20 bytes) and the
SHA-1 of the index itself, so loading checks both, which costs one hash of the
index (0.45 ms for the 20,000 objects of a cold snapshot here, against 2.5 ms
to read it; ~2 ms at 100,000) and two small reads of the pack: a truncated
index, or one with two offsets swapped, fails there instead of sending a
restore to the wrong bytes. The hash is made once per index file: a new process
finding the file it names in ``checkedindexes`` skips it (a history of 100,000
snapshots has a 6 MB index, hashed in every CLI and hook call before), and the
index is mapped, not read: a lookup reads the pages it touches.

A missing or damaged index is rebuilt from its pack rather than reported: the
pack still holds every object, and an error would leave its snapshots
unrestorable until someone repaired the store by hand. A rebuild reads the
whole pack once, checks the pack's own checksum first (a damaged pack is never
indexed: ``PackDamaged``), inflates every entry in bounded pieces to hash it
(a delta is resolved whole, up to ``MAX_WHOLE``), and writes the index under a
temporary name, then renames it into place, so readers never meet half an
index. The result is the same bytes whoever builds it (ours is what
``PackBuilder`` writes for the same pack), so two processes rebuilding at once,
or a rebuild racing the writer that is about to rename the index it made, are
harmless. A rebuild reads ~30,000 objects a second here (0.6 s for the
20,000-file pack of a cold snapshot), comparable to reading them for a restore.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from dulwich.errors import ApplyDeltaError

from snapshotter.engine.fsutil import open_side_file, unlink_quietly
from snapshotter.engine.gitstore.checkedindexes import CheckedIndexes, Identity, identity
from snapshotter.engine.gitstore.indexformat import INDEX_CAP, Buffer, PackIndex
from snapshotter.engine.gitstore.inflate import MAX_WHOLE, PIECE, ObjectTooLarge, Stream
from snapshotter.engine.gitstore.objects import TYPE_NAMES
from snapshotter.engine.gitstore.packread import PackFile, _entry_header, read_entry
from snapshotter.engine.gitstore.packs import index_v2

_MIN_INDEX = 8 + 256 * 4 + 40


class IndexDamaged(Exception):
    """A pack's index is missing, or does not check out; says how."""


class PackDamaged(Exception):
    """A pack cannot be read through (to index it); says why."""


class PackOverBudget(PackDamaged):
    """A pack's objects inflate to more than the caller allows (a zlib or delta bomb)."""

    def __init__(self, inflated: int) -> None:
        super().__init__(f"holds objects of more than {inflated:,} bytes once inflated")
        self.inflated = inflated


Outside = Callable[[bytes], "tuple[int, bytes] | None"]
"""An object by id from elsewhere (a thin pack's delta bases): (type number, content), or None."""


@dataclass(frozen=True)
class PackContents:
    """What a pack holds, found by reading it through: enough for its index."""

    ids: list[bytes]
    offsets: list[int]
    crcs: list[int]
    checksum: bytes
    outside: dict[bytes, tuple[int, bytes]] = field(default_factory=dict)
    """The delta bases it names but lacks (a thin pack's), read from elsewhere, by id."""


class _Inflated:
    """The inflated bytes counted so far against a cap (0: none)."""

    def __init__(self, cap: int) -> None:
        self.cap, self.total = cap, 0

    def add(self, size: int) -> None:
        self.total += size
        if self.cap and self.total > self.cap:
            raise PackOverBudget(self.total)


def load_index(base: str, checked: CheckedIndexes | None = None) -> PackIndex:
    """The index of the pack at ``base`` (its path less ``.pack``), checked
    against its own checksum (unless ``checked`` says this very file was) and
    its pack's; ``IndexDamaged`` says why not. Mapped, not read, where the
    platform allows (see ``_contents``)."""
    name = os.path.basename(base) + ".idx"
    data, found = _contents(base + ".idx")
    if len(data) < _MIN_INDEX:
        raise IndexDamaged("fails its own checksum (truncated or damaged)")
    if checked is None or not checked.holds(name, found):
        with memoryview(data) as view:
            whole = hashlib.sha1(view[:-20]).digest() == data[-20:]
        if not whole:
            raise IndexDamaged("fails its own checksum (truncated or damaged)")
        if checked is not None:
            checked.add(name, found, set(_listed(os.path.dirname(base))))
    try:
        index = PackIndex(data)
    except ValueError as exc:
        raise IndexDamaged(f"cannot be read ({exc})") from None
    pack = PackFile(base + ".pack")  # OSError if it is gone: the caller lists the packs again
    try:
        size = os.fstat(pack.fileno()).st_size
        header, trailer = pack.read_at(12, 0), pack.read_at(20, size - 20)
    finally:
        pack.close()
    if size < 32 or trailer != data[-40:-20] or header[8:12] != struct.pack(">I", index.count()):
        raise IndexDamaged("does not match its pack")
    return index


def _contents(path: str) -> tuple[Buffer, Identity]:
    """The bytes of an index, and its file's identity. Mapped on POSIX: a
    lookup reads only the pages it touches, where reading a 6 MB index whole
    took milliseconds per process. Read whole on Windows, where a mapped file
    cannot be deleted (a gc in another process); and where mapping fails."""
    try:
        fd, st = open_side_file(path, follow=False)
    except FileNotFoundError:
        raise IndexDamaged("is missing") from None
    except OSError as exc:  # a named pipe, a device, a link planted in the store: the pack is indexed again
        raise IndexDamaged(f"cannot be read ({exc.strerror or exc})") from None
    try:
        if st.st_size > INDEX_CAP:
            raise IndexDamaged(f"is larger than {INDEX_CAP} bytes")
        if os.name != "nt" and st.st_size >= _MIN_INDEX:
            try:
                return mmap.mmap(fd, 0, access=mmap.ACCESS_READ), identity(st)
            except (OSError, ValueError):
                pass
        pieces = []
        while True:
            piece = os.read(fd, 1 << 20)
            if not piece:
                break
            pieces.append(piece)
            if sum(map(len, pieces)) > INDEX_CAP:
                raise IndexDamaged(f"is larger than {INDEX_CAP} bytes")
        return b"".join(pieces), identity(st)
    except OSError as exc:
        raise IndexDamaged(f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def _listed(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def read_through(path: str, outside: Outside | None = None, max_inflated: int = 0) -> PackContents:
    """Every object of the pack at ``path`` with its offset and CRC-32, its id
    computed from its content; ``PackDamaged`` if the pack does not check out.
    A delta whose base the pack lacks is resolved against ``outside`` (the
    bases used are returned, to be added to the pack); ``max_inflated`` (0:
    none) caps the bytes its entries and deltas' results inflate to, each
    entry counted from its header before it is inflated (``PackOverBudget``)."""
    try:
        pack = PackFile(path)
    except OSError as exc:
        raise PackDamaged(f"cannot be opened ({exc.strerror})") from None
    try:
        return _read_through(pack, os.path.getsize(path), outside, _Inflated(max_inflated))
    except (OSError, zlib.error, ValueError, ApplyDeltaError) as exc:
        raise PackDamaged(f"cannot be read through ({exc or type(exc).__name__})") from None
    except ObjectTooLarge as exc:
        raise PackDamaged(f"holds a delta too large to resolve ({exc})") from None
    finally:
        pack.close()


def _read_through(pack: PackFile, size: int, outside: Outside | None, inflated: _Inflated) -> PackContents:
    header = pack.read_at(12, 0)
    if size < 32 or header[:4] != b"PACK" or header[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
        raise PackDamaged("is not a pack")
    end = size - 20
    checksum = pack.read_at(20, end)
    digest = hashlib.sha1()
    at = 0
    while at < end:
        chunk = pack.read_at(min(PIECE, end - at), at)
        if not chunk:
            raise PackDamaged("is shorter than it was")
        digest.update(chunk)
        at += len(chunk)
    if digest.digest() != checksum:
        raise PackDamaged("fails its checksum")
    (count,) = struct.unpack(">I", header[8:12])
    ids: list[bytes | None] = []
    offsets: list[int] = []
    crcs: list[int] = []
    at = 12
    for _ in range(count):
        if at >= end:
            raise PackDamaged("holds fewer objects than its header says")
        sha, length, crc = _entry_at(pack, at, end, inflated)
        ids.append(sha)
        offsets.append(at)
        crcs.append(crc)
        at += length
    if at != end:
        raise PackDamaged("holds more than its header says")
    used = _resolve_deltas(pack, ids, offsets, outside, inflated)
    found = [sha for sha in ids if sha is not None]
    if len(set(found)) != len(found):
        raise PackDamaged("holds an object twice")
    return PackContents(found, offsets, crcs, checksum, {sha: used[sha] for sha in used.keys() - set(found)})


def _entry_at(pack: PackFile, offset: int, end: int, inflated: _Inflated) -> tuple[bytes | None, int, int]:
    """(id, or None for a delta; length as stored; CRC-32 as stored) of the
    entry at ``offset``. A whole object is hashed as it is inflated, a piece at
    a time; the stream is followed to its end to find where the entry ends."""
    head = pack.read_at(min(4096, end - offset), offset)
    try:
        kind, size, used, _ = _entry_header(head, b"\0" * 20)
    except zlib.error:
        raise PackDamaged(f"has a damaged entry at {offset}") from None
    inflated.add(size)
    if kind == 7:
        used += 20
    fed = len(head)
    position = offset + fed

    def more() -> bytes:
        nonlocal fed, position
        chunk = pack.read_at(min(PIECE, end - position), position)
        fed += len(chunk)
        position += len(chunk)
        return chunk

    stream = Stream(head[used:], more, f"the entry at {offset}")
    if kind in (6, 7):
        if size > MAX_WHOLE:
            raise PackDamaged(f"holds a delta of {size:,} bytes at {offset}")
        stream.exact(size)
        sha = None
    else:
        digest = hashlib.sha1(b"%s %d\0" % (TYPE_NAMES[kind], size))
        for piece in stream.pieces(size):
            digest.update(piece)
        sha = digest.digest()
    length = fed - stream.unused
    crc = zlib.crc32(pack.read_at(length, offset)) if length <= PIECE else _crc_in_pieces(pack, offset, length)
    return sha, length, crc


def _crc_in_pieces(pack: PackFile, offset: int, length: int) -> int:
    crc = 0
    done = 0
    while done < length:
        chunk = pack.read_at(min(PIECE, length - done), offset + done)
        crc = zlib.crc32(chunk, crc)
        done += len(chunk)
    return crc


class _NotYet(Exception):
    """A delta's base is named by an id not known yet (itself a delta)."""


def _resolve_deltas(
    pack: PackFile, ids: list[bytes | None], offsets: list[int], outside: Outside | None, inflated: _Inflated
) -> dict[bytes, tuple[int, bytes]]:
    """Fill in the ids of the deltas, each resolved whole (bounded by
    ``MAX_WHOLE``), and return the bases read from ``outside``. Offset deltas
    find their bases by position; a ``REF_DELTA`` by id, so rounds repeat while
    some base is still unknown; ``outside`` is asked only once no round gets
    further (a base may be a delta of the pack not resolved yet)."""
    where = {sha: offset for sha, offset in zip(ids, offsets) if sha is not None}
    used: dict[bytes, tuple[int, bytes]] = {}
    look_outside = False

    def base_by_id(base: bytes) -> tuple[int, bytes]:
        if base in where:  # itself maybe a REF_DELTA (git sends chains of them to a client without ofs-delta)
            return read_entry(pack, where[base], base, MAX_WHOLE, base_by_id)
        if base in used:
            return used[base]
        found = outside(base) if look_outside and outside is not None else None
        if found is None:
            raise _NotYet
        used[base] = found
        return found

    waiting = [i for i, sha in enumerate(ids) if sha is None]
    while waiting:
        left = []
        for i in waiting:
            try:
                kind, content = read_entry(pack, offsets[i], b"\0" * 20, MAX_WHOLE, base_by_id)
            except _NotYet:
                left.append(i)
                continue
            inflated.add(len(content))
            digest = hashlib.sha1(b"%s %d\0" % (TYPE_NAMES[kind], len(content)))
            digest.update(content)
            ids[i] = digest.digest()
            where[digest.digest()] = offsets[i]
        if len(left) == len(waiting):
            if look_outside or outside is None:
                raise PackDamaged("holds a delta whose base is not in it")
            look_outside = True
        waiting = left
    return used


def write_index(base: str, contents: PackContents) -> PackIndex:
    """The index of the pack at ``base`` for ``contents``, written beside it:
    under a temporary name, synced, then renamed into place. If the pack was
    deleted meanwhile (a gc), the index goes too: it would index nothing. If
    it cannot be written (a read-only store, a full disk), it is used from
    memory, and built again by the next process."""
    import tempfile  # when writing: a command that reads loads neither it nor shutil

    data = index_v2(contents.ids, contents.offsets, contents.crcs, contents.checksum)
    tmp = ""
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(base), prefix="tmp_idx_")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, base + ".idx")
        tmp = ""
        if not os.path.exists(base + ".pack"):
            os.unlink(base + ".idx")
    except OSError:
        pass
    finally:
        if tmp:
            unlink_quietly(tmp)
    return PackIndex(data)
