"""A big file's signature: what the next version's delta is matched against.

Per block of ``block_size`` bytes (16 KiB, more for files over 1 GiB so that
no file has more than ``MAX_BLOCKS``): the first 12 bytes of its SHA-1 (a
match is only ever taken on it) and its first 8 bytes (to find a shifted
block by looking each position up, see ``deltaencode``); and per chunk of 64
blocks (1 MiB) the SHA-1 of its blocks' digests, so that a chunk unchanged in
place is found with one comparison and its blocks' entries are taken over as
they are.
About 20 bytes a block: 1.26 MiB for a 1 GiB file.

Signatures are kept beside the store, one file per blob
(``snapshotter/signatures/<blob id>``), written when the version is stored
and dropped when the next version of the file replaces it. They are a cache:
a missing, damaged or foreign one only means the next version is stored as a
full copy. Each file is checked against its own SHA-1 and must name its blob.
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass

from snapshotter.engine.fsutil import new_temp_file, read_side_file, unlink_quietly

BLOCK = 16 << 10
MAX_BLOCKS = 1 << 16
CHUNK_BLOCKS = 64
"""Blocks in a chunk: one SHA-1 call vouches for them all when none changed."""
STRONG = 12
SAMPLE = 8
FOLDER = "signatures"
_MAGIC = b"SSIG"
_HEAD = struct.Struct(">4sIIQI20s")
"""Magic, format version, block size, file size, block count, blob id."""
_VERSION = 2


def block_size_for(size: int) -> int:
    """16 KiB, doubled until the file has at most ``MAX_BLOCKS`` blocks."""
    block = BLOCK
    while size > block * MAX_BLOCKS:
        block *= 2
    return block


def strong_hash(block: bytes | memoryview) -> bytes:
    """The digest a block is matched on."""
    return hashlib.sha1(block).digest()[:STRONG]


def chunk_hash(strongs: bytes) -> bytes:
    """A chunk's digest: of its blocks' digests (no second pass over its bytes)."""
    return hashlib.sha1(strongs).digest()[:STRONG]


@dataclass(frozen=True)
class Signature:
    """One version's blocks: ``strong`` and ``samples`` hold ``STRONG`` and
    ``SAMPLE`` bytes per block, in order (a last, shorter block included);
    ``chunks`` holds ``STRONG`` bytes per chunk of ``CHUNK_BLOCKS`` blocks."""

    blob: bytes
    size: int
    block_size: int
    strong: bytes
    samples: bytes
    chunks: bytes

    @property
    def count(self) -> int:
        return len(self.strong) // STRONG

    @property
    def chunk_size(self) -> int:
        return self.block_size * CHUNK_BLOCKS

    def strong_at(self, index: int) -> bytes:
        return self.strong[index * STRONG : (index + 1) * STRONG]

    def chunk_at(self, index: int) -> bytes:
        return self.chunks[index * STRONG : (index + 1) * STRONG]

    def block_length(self, index: int) -> int:
        return min(self.block_size, self.size - index * self.block_size)

    def to_bytes(self) -> bytes:
        body = _HEAD.pack(_MAGIC, _VERSION, self.block_size, self.size, self.count, self.blob)
        body += self.strong + self.samples + self.chunks
        return body + hashlib.sha1(body).digest()

    @classmethod
    def from_bytes(cls, data: bytes, blob: bytes) -> Signature | None:
        """The signature in ``data`` if it is whole, ours, and names ``blob``."""
        if len(data) < _HEAD.size + 20 or hashlib.sha1(data[:-20]).digest() != data[-20:]:
            return None
        magic, version, block, size, count, named = _HEAD.unpack_from(data)
        if magic != _MAGIC or version != _VERSION or named != blob or block <= 0:
            return None
        chunks = -(-count // CHUNK_BLOCKS)
        if count != -(-size // block) or len(data) != _HEAD.size + count * (STRONG + SAMPLE) + chunks * STRONG + 20:
            return None
        at = _HEAD.size + count * STRONG
        end = at + count * SAMPLE
        return cls(blob, size, block, data[_HEAD.size : at], data[at:end], data[end : end + chunks * STRONG])


class SignatureBuilder:
    """A signature made block by block, in order, or a chunk at a time taken
    over from the last version (``inherit``)."""

    def __init__(self, size: int, block_size: int) -> None:
        self.size = size
        self.block_size = block_size
        self._strong: list[bytes] = []
        self._samples: list[bytes] = []
        self._chunks: list[bytes] = []

    @property
    def count(self) -> int:
        return len(self._strong)

    @property
    def chunk_size(self) -> int:
        return self.block_size * CHUNK_BLOCKS

    @property
    def total(self) -> int:
        return -(-self.size // self.block_size)

    def add(self, block: bytes | memoryview, strong: bytes | None = None) -> None:
        """The next block (its strong hash if already computed)."""
        self._strong.append(strong if strong is not None else strong_hash(block))
        self._samples.append(bytes(block[:SAMPLE]).ljust(SAMPLE, b"\0"))
        count = len(self._strong)
        if count % CHUNK_BLOCKS == 0 or count == self.total:
            first = (count - 1) // CHUNK_BLOCKS * CHUNK_BLOCKS
            self._chunks.append(chunk_hash(b"".join(self._strong[first:count])))

    def inherit(self, old: Signature, chunk: int) -> None:
        """Take over chunk ``chunk`` of ``old`` (unchanged, at the same place)."""
        first = chunk * CHUNK_BLOCKS
        last = min(first + CHUNK_BLOCKS, old.count)
        self._strong.extend(old.strong[i * STRONG : (i + 1) * STRONG] for i in range(first, last))
        self._samples.extend(old.samples[i * SAMPLE : (i + 1) * SAMPLE] for i in range(first, last))
        self._chunks.append(old.chunk_at(chunk))

    def finish(self, blob: bytes) -> Signature:
        if len(self._strong) != self.total:
            raise ValueError(f"a signature of {len(self._strong)} blocks for a file of {self.total}")
        return Signature(
            blob,
            self.size,
            self.block_size,
            b"".join(self._strong),
            b"".join(self._samples),
            b"".join(self._chunks),
        )


_MAX_FILE = _HEAD.size + MAX_BLOCKS * 2 * (STRONG + SAMPLE + STRONG) + 20


class Signatures:
    """The signature files of one store (in ``meta_dir/signatures``)."""

    def __init__(self, meta_dir: str) -> None:
        self.folder = os.path.join(meta_dir, FOLDER)

    def _path(self, blob: bytes) -> str:
        return os.path.join(self.folder, blob.hex())

    def load(self, blob: bytes) -> Signature | None:
        """The signature of ``blob``, or None (missing, damaged, too large, not a file)."""
        try:
            data = read_side_file(self._path(blob), cap=_MAX_FILE)
        except OSError:
            return None
        return Signature.from_bytes(data, blob)

    def save(self, signature: Signature) -> None:
        """Keep ``signature`` (written whole under a temporary name, then renamed:
        a reader never meets half of one). A failure only loses the cache."""
        try:
            os.makedirs(self.folder, mode=0o700, exist_ok=True)
            fd, tmp = new_temp_file(self.folder, ".signature-", ".tmp")
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(signature.to_bytes())
            os.replace(tmp, self._path(signature.blob))
        except OSError:
            unlink_quietly(tmp)

    def drop(self, blob: bytes) -> None:
        unlink_quietly(self._path(blob))

    def held(self) -> list[bytes]:
        """The blobs that have a signature file."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        out = []
        for name in names:
            try:
                if len(name) == 40:
                    out.append(bytes.fromhex(name))
            except ValueError:
                continue
        return out
