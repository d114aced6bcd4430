"""A pack a git server sends, taken into the store only once it checks out.

dulwich's own fetch writes the pack into the repository and indexes it by
inflating every object whole (a 2 GiB blob of zeros, 2 MB on the wire, cost
1.7 GiB of memory), raises its own exceptions for a thin pack it cannot
complete, and changes the repository's object format when the server
announces another. Here the pack's bytes go to a temporary file in the pack
folder (``tmp_pack_*``, cleared by the next writer if we die) as they arrive;
then it is read through in bounded pieces (``packindex.read_through``: every
object hashed from its content, the inflated total capped), the delta bases a
thin pack names but lacks are appended to it from the store (as git's
``index-pack --fix-thin`` does, so the pack needs nothing else to be read),
and only then is it named by its checksum, indexed and renamed into place,
index last. Anything wrong leaves the store as it was.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import zlib

from snapshotter.engine.fsutil import sync_folder, unlink_quietly
from snapshotter.engine.gitstore.deflate import deflate
from snapshotter.engine.gitstore.inflate import PIECE
from snapshotter.engine.gitstore.packindex import Outside, PackContents, read_through
from snapshotter.engine.gitstore.packs import entry_header, index_v2
from snapshotter.errors import StoreError, what_to_check


class IncomingPack:
    """A pack being received into ``pack_dir`` (see the module's docstring)."""

    def __init__(self, pack_dir: str) -> None:
        self._dir = pack_dir
        self.size = 0
        try:
            os.makedirs(pack_dir, mode=0o700, exist_ok=True)
            fd, self._tmp = tempfile.mkstemp(dir=pack_dir, prefix="tmp_pack_")
        except OSError as exc:
            raise StoreError(f"cannot write a pack in {pack_dir}: {exc.strerror}; {what_to_check(exc)}") from None
        self._file = os.fdopen(fd, "r+b")

    def write(self, data: bytes) -> int:
        """Append bytes as they arrive (dulwich's ``pack_data``)."""
        try:
            self._file.write(data)
        except OSError as exc:
            raise StoreError(f"cannot write to the store: {exc.strerror}; {what_to_check(exc)}") from None
        self.size += len(data)
        return len(data)

    def read(self, outside: Outside, max_inflated: int) -> PackContents:
        """Read the received pack through (``PackDamaged`` if it does not check
        out, ``PackOverBudget`` past ``max_inflated``), completed with the bases
        ``outside`` gave for its deltas. Nothing is in the store yet."""
        self._file.flush()
        contents = read_through(self._tmp, outside, max_inflated)
        if contents.outside:
            contents = self._append(contents)
        return contents

    def install(self, contents: PackContents) -> None:
        """Sync the pack, name it by its checksum, write its index and rename
        both into place (the index last: a pack without one is not read)."""
        base = os.path.join(self._dir, "pack-" + contents.checksum.hex())
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            if os.path.exists(base + ".pack") and os.path.exists(base + ".idx"):
                return  # named by its checksum: the same bytes are there already
            idx_fd, idx_tmp = tempfile.mkstemp(dir=self._dir, prefix="tmp_idx_")
            try:
                with os.fdopen(idx_fd, "wb") as idx:
                    idx.write(index_v2(contents.ids, contents.offsets, contents.crcs, contents.checksum))
                    idx.flush()
                    os.fsync(idx.fileno())
                os.replace(self._tmp, base + ".pack")
                os.replace(idx_tmp, base + ".idx")
            finally:
                unlink_quietly(idx_tmp)
            sync_folder(self._dir)
        except OSError as exc:
            raise StoreError(f"cannot finish a pack in {self._dir}: {exc.strerror}; {what_to_check(exc)}") from None

    def discard(self) -> None:
        """Remove the temporary pack (installed or not: once installed it is gone already)."""
        if not self._file.closed:
            self._file.close()
        unlink_quietly(self._tmp)

    def _append(self, contents: PackContents) -> PackContents:
        """The pack with the outside bases added as whole objects: its count and
        checksum rewritten, the checksum computed again over the whole pack."""
        handle = self._file
        end = os.fstat(handle.fileno()).st_size - 20
        handle.seek(end)
        handle.truncate()
        ids, offsets, crcs = list(contents.ids), list(contents.offsets), list(contents.crcs)
        for sha, (kind, content) in sorted(contents.outside.items()):
            entry = entry_header(kind, len(content)) + deflate(content)
            ids.append(sha)
            offsets.append(end)
            crcs.append(zlib.crc32(entry))
            handle.write(entry)
            end += len(entry)
        handle.seek(8)
        handle.write(struct.pack(">I", len(ids)))
        handle.flush()
        handle.seek(0)
        digest = hashlib.sha1()
        while chunk := handle.read(PIECE):
            digest.update(chunk)
        checksum = digest.digest()
        handle.write(checksum)
        return PackContents(ids, offsets, crcs, checksum)
