"""Reading a big workspace file once, to store its new version as a delta of its last.

One pass, in 1 MiB pieces: the blob id (SHA-1, on a thread), the line count,
and either the delta against the previous version's signature (``gitstore.
deltaencode``), the chain pack's SHA-1 taken up from its kept state (or, where
none is kept, hashed again on another thread meanwhile), or, where the version
starts a new chain, the new chain pack itself; the new version's signature in
both cases. Memory stays at a few
blocks and the delta's first MiBs (more spill to a temporary file).

The file is ``fstat``ed before and after, and a byte past its size is asked
for: a file that grew, shrank or was rewritten while it was read is read
again (three times at most, then ``FileChanged``: skipped and reported), so
what is stored is always one version whose id is its content's. Nothing is
written to a pack before the read checks out. Where the delta cannot be
appended (a chain shared with a fork, a rename refused) or carries most of
the file, the file is read a second time into a new chain; its SHA-1 must
come out the same, or the file changed meanwhile.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from snapshotter.engine.fsutil import stat_key
from snapshotter.engine.gitstore import objectwriter
from snapshotter.engine.gitstore.bigfacts import fits
from snapshotter.engine.gitstore.bigstore import Base, BigFiles
from snapshotter.engine.gitstore.chainappend import PackDigest
from snapshotter.engine.gitstore.chainpack import NewChain
from snapshotter.engine.gitstore.deltaencode import Matcher
from snapshotter.engine.gitstore.deltaformat import DeltaWriter
from snapshotter.engine.gitstore.digest import ThreadedDigest
from snapshotter.engine.gitstore.objectwriter import CHUNK, FileChanged, Hashed, LineTally
from snapshotter.engine.gitstore.signature import Signature, block_size_for

_READ_RETRIES = 3


@dataclass
class _Pass:
    """What one read of the file made."""

    sha: bytes
    key: tuple[int, int, int, int, int]
    lines: int | None


def store_big_file(path: str, big: BigFiles, previous: bytes | None) -> Hashed | None:
    """Store the regular file at ``path`` (over the big-file threshold), as a
    delta of ``previous`` (its last version's blob id) where it can be; None if
    it is no longer big (the caller stores it the usual way)."""
    for _ in range(_READ_RETRIES):
        found = _once(path, big, previous)
        if found is not None:
            return found if isinstance(found, Hashed) else None
    raise FileChanged(path)


class _Small:
    """The file is no longer over the threshold."""


def _once(path: str, big: BigFiles, previous: bytes | None) -> Hashed | _Small | None:
    fd = objectwriter.open_for_read(path)  # the tests' fault seam
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise FileChanged(path)
        size = before.st_size
        if not fits(size):
            return _Small()
        base = big.base_for(previous)
        work = _Work(big, base, size)
        try:
            made = work.read(fd, before)
            if made is None:
                return None
            if big.exists(made.sha):
                big.remember(work.signature(made.sha), None)
                return Hashed(made.sha, made.key, size, made.lines)
            stored = work.store(made.sha, previous)
        finally:
            work.close()
    finally:
        os.close(fd)
    if not stored and not _second_pass(path, big, made, previous):
        return None
    return Hashed(made.sha, made.key, size, made.lines)


class _Work:
    """One read: the digest, the matcher, and the pack being written or appended to."""

    def __init__(self, big: BigFiles, base: Base | None, size: int) -> None:
        self.big = big
        self.base = base
        self.size = size
        self.digest = ThreadedDigest(b"blob %d\0" % size)
        self.pack_digest: PackDigest | None = None
        self.chain: NewChain | None = None
        self.old_content = big.old_content(base) if base is not None else None
        if base is not None:
            old = base.signature
            delta = DeltaWriter(old.size, size, max(size // 2, 4096), big.packs.dir)
            self.matcher = Matcher(old, size, delta, block_size_for(size), self.old_content)
            self.pack_digest = big.digest(base.tip)
        else:
            self.matcher = Matcher(None, size, None, block_size_for(size))
            self.chain = big.new_chain(size)

    def read(self, fd: int, before: os.stat_result) -> _Pass | None:
        """Read the file through; None if it changed meanwhile."""
        lines = LineTally()
        total = 0
        size = self.size
        while total < size:
            chunk = os.read(fd, min(CHUNK, size - total))
            if not chunk:
                break
            total += len(chunk)
            self.digest.update(chunk)
            lines.feed(chunk)
            self.matcher.feed(chunk)
            if self.chain is not None:
                self.chain.write(chunk)
        grew = os.read(fd, 1)
        after = os.fstat(fd)
        sha = self.digest.digest()
        finished = self.matcher.finish()
        if self.old_content is not None:
            self.old_content.close()  # its map of the chain pack, let go before the append writes the pack
        if total != size or grew or stat_key(before) != stat_key(after) or not finished:
            return None
        return _Pass(sha, stat_key(before), lines.lines())

    def signature(self, sha: bytes) -> Signature:
        return self.matcher.signature.finish(sha)

    def store(self, sha: bytes, previous: bytes | None) -> bool:
        """Put the version read in its chain; False: it needs a new chain, read again."""
        signature = self.signature(sha)
        if self.chain is not None:
            self.big.finish_chain(self.chain, sha)
            self.chain = None
            self.big.remember(signature, previous)
            return True
        delta = self.matcher.writer
        if delta is None or self.pack_digest is None:
            return False  # it carries most of the file: a new key frame is worth more
        self.matcher.writer = None
        delta_size, stream = delta.finish()
        try:
            appended = self.big.append(self.pack_digest, sha, delta_size, stream)
        finally:
            stream.close()
        self.pack_digest = None
        if appended:
            self.big.remember(signature, previous)
        return appended

    def close(self) -> None:
        self.digest.close()
        if self.old_content is not None:
            self.old_content.close()
        if self.pack_digest is not None:
            self.pack_digest.cancel()
        if self.chain is not None:
            self.chain.abort()
        if self.matcher.writer is not None:
            self.matcher.writer.close()


def _second_pass(path: str, big: BigFiles, made: _Pass, previous: bytes | None) -> bool:
    """Read the file again into a new chain; False if it is not the version read first."""
    fd = objectwriter.open_for_read(path)  # the tests' fault seam
    try:
        before = os.fstat(fd)
        if stat_key(before) != made.key:
            return False
        work = _Work(big, None, before.st_size)
        try:
            again = work.read(fd, before)
            if again is None or again.sha != made.sha:
                return False
            return work.store(made.sha, previous)
        finally:
            work.close()
    finally:
        os.close(fd)
