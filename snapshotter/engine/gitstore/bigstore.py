"""What a store offers for big files: where a new version goes, and its signatures.

A new version of a big file is a delta appended to the chain pack holding its
previous version, when that version is in one that may grow (``chainpack.tip_of``)
and its signature is known; otherwise it starts a new chain pack, whole. The
reading of the workspace file is ``worktree/bigfile.py``'s; the format, the
packs and the matching are here, in ``gitstore``.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO

from snapshotter.engine.gitstore import chainappend, chainpack
from snapshotter.engine.gitstore.chainappend import PackDigest
from snapshotter.engine.gitstore.chainpack import NewChain, Tip
from snapshotter.engine.gitstore.digest import ThreadedDigest
from snapshotter.engine.gitstore.oldcontent import OldContent
from snapshotter.engine.gitstore.packset import PackSet
from snapshotter.engine.gitstore.signature import Signature, SignatureBuilder, Signatures, block_size_for
from snapshotter.errors import StoreError

__all__ = ["Base", "BigFiles", "ThreadedDigest"]


@dataclass(frozen=True)
class Base:
    """The version a new one can be a delta of: where it is, and its signature."""

    tip: Tip
    signature: Signature


class BigFiles:
    """The chain packs and signatures of one store."""

    def __init__(
        self,
        packs: PackSet,
        meta_dir: str,
        exists: Callable[[bytes], bool],
        count_written: Callable[[int, int, int], None],
        read_blob: Callable[[bytes], Iterable[bytes]],
        blob_size: Callable[[bytes], int],
    ) -> None:
        self.packs = packs
        self.signatures = Signatures(meta_dir)
        self.states = os.path.join(meta_dir, chainpack.STATES)
        self.exists = exists
        self._read_blob = read_blob
        self._blob_size = blob_size
        self._count_written = count_written
        """Tells the store's writer what was added (bytes, loose objects, packs),
        for the retention pass's estimate of the store's size."""

    def old_content(self, base: Base) -> OldContent | None:
        """The base version's stored bytes, where its key frame is kept in
        stored blocks (read through a map of the pack; a deflated one would
        cost an inflating of the whole on this thread), not checked against
        its id (a delta copies exactly them); else None (chunks are then
        hashed: see ``oldcontent``)."""
        try:
            found = self.packs.copy_source(base.signature.blob, False, lambda sha: None)
        except (OSError, ValueError, zlib.error, StoreError):
            return None
        if found is None:
            return None
        kind, size, pieces, _, close, stored = found
        if kind != 3 or size != base.signature.size or not stored:
            getattr(pieces, "close", lambda: None)()
            close()
            return None
        return OldContent(pieces, size, close)

    def base_for(self, previous: bytes | None) -> Base | None:
        """Where a new version of a file whose last version was ``previous`` may
        be appended as a delta; None: it starts a new chain. A version without
        its signature kept (restored by an undo, then changed; or its signature
        lost) has it made again from the store, at the cost of reading it."""
        if previous is None:
            return None
        try:
            found = self.packs.locate(previous, relist=True)
        except OSError:
            return None
        tip = chainpack.tip_of(*found) if found is not None else None
        if tip is None:
            return None
        signature = self.signatures.load(previous) or self._signature_of(previous)
        return Base(tip, signature) if signature is not None else None

    def _signature_of(self, blob: bytes) -> Signature | None:
        """A stored version's signature, made by reading it (checked against its id)."""
        try:
            size = self._blob_size(blob)
            builder = SignatureBuilder(size, block_size_for(size))
            block = builder.block_size
            pending = b""
            for piece in self._read_blob(blob):
                pending += piece
                whole = len(pending) - len(pending) % block
                view = memoryview(pending)
                for at in range(0, whole, block):
                    builder.add(view[at : at + block])
                pending = pending[whole:]
            if pending:
                builder.add(pending)
            return builder.finish(blob)
        except (StoreError, OSError, ValueError, KeyError, zlib.error):
            return None  # unreadable: the new version starts a new chain

    def new_chain(self, size: int) -> NewChain:
        return NewChain(self.packs.dir, size, self.states)

    def finish_chain(self, chain: NewChain, sha: bytes) -> None:
        base = chain.finish(sha)
        self._count_written(_size_of(base + ".pack") + _size_of(base + ".idx"), 0, 1)

    def digest(self, tip: Tip) -> PackDigest:
        return PackDigest(tip, self.states)

    def append(self, digest: PackDigest, sha: bytes, delta_size: int, delta: IO[bytes]) -> bool:
        """Append ``sha`` to the chain of ``digest.tip``; False if it may not be
        (the caller starts a new chain)."""
        self.packs.close()  # no handle of ours stays open on a pack about to be renamed
        base = chainappend.append(digest, sha, delta_size, delta)
        if base is None:
            return False
        self._count_written(_size_of(base + ".pack") - digest.tip.size, 0, 0)
        return True

    def remember(self, signature: Signature, replaces: bytes | None) -> None:
        """Keep the new version's signature; the one it was matched against goes
        (the next version is matched against this one)."""
        self.signatures.save(signature)
        if replaces is not None and replaces != signature.blob:
            self.signatures.drop(replaces)


def _size_of(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
