"""The lists a store keeps about its remotes, beside it in ``meta/`` (one a
remote and name: ``pushed/<key>``, ``fetched-from/<key>``), and how a push
reads only their ends.

They are appended to, a line an id, and rewritten whole only by a prune. A
push that read one to some byte keeps a :class:`Tail`: where it stopped, and
a digest of the bytes up to there from a little before where the part it
still needs starts; the next push reads from that start only, and takes the
file for what it was only if those bytes are still there (a file rewritten or
cut short since is read whole again, by the caller's own path). Every read is
guarded (``fsutil``: no symlink, a regular file, capped).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from snapshotter.engine.fsutil import open_side_file, read_side_file
from snapshotter.engine.worktree.statcache import write_atomically

LIST_CAP = 64 << 20
"""A line is some 50 bytes a snapshot: far more than a store holds."""
_BEFORE = 64
"""Bytes before a tail's start its digest covers: a line or more, so a rewrite
that moved the lines (a prune) is seen even at the start."""


def record_path(meta_dir: str, folder: str, shown: str, name: str) -> str:
    """This store's record in ``folder`` for the remote shown as ``shown`` and namespace ``name``."""
    key = hashlib.sha256(f"{shown}\0{name}".encode()).hexdigest()[:16]
    return os.path.join(meta_dir, folder, key)


def read_file(path: str) -> str:
    """One of the store's lists, read whole and guarded; empty if missing or unreadable."""
    try:
        return read_side_file(path, LIST_CAP, follow=False).decode("ascii")
    except (OSError, UnicodeDecodeError):
        return ""


def append_text(path: str, text: str) -> None:
    """Add ``text`` to a list kept here (made if missing; never through a
    symlink or into a pipe), on a line of its own after any line a crash cut short."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd, _ = open_side_file(path, follow=False, append=True)
    try:
        os.write(fd, ("\n" + text).encode("ascii"))
    finally:
        os.close(fd)


def write_text(path: str, text: str) -> None:
    """Replace a list kept here whole (a temporary file of its own, O_EXCL, then
    a rename: never a planted pipe, never half a file)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    write_atomically(path, text.encode("ascii"))


@dataclass(frozen=True)
class Tail:
    """Where a reader of one list stopped (``end``), where the part it needs
    next starts (``start``, at most ``end``), and the SHA-1 of the bytes from
    :data:`_BEFORE` bytes before ``start`` to ``end``: those must still be there."""

    start: int
    end: int
    digest: str

    def text(self) -> str:
        return f"{self.start} {self.end} {self.digest}"

    @staticmethod
    def parse(words: list[str]) -> Tail | None:
        if len(words) != 3 or not all(w.isascii() and w.isdigit() and len(w) <= 15 for w in words[:2]):
            return None
        tail = Tail(int(words[0]), int(words[1]), words[2])
        return tail if tail.start <= tail.end and len(tail.digest) == 40 else None


def read_after(path: str, tail: Tail | None) -> tuple[str, int] | None:
    """The text of the list at ``path`` from ``tail.start`` (from its beginning
    without a tail) to its end, and the offset of that end; None if the file
    is no longer what ``tail`` saw (shorter, or other bytes before its end:
    rewritten), or cannot be read. A missing file reads as empty, for no tail."""
    start = 0 if tail is None else tail.start
    first = max(0, start - _BEFORE)
    try:
        fd, st = open_side_file(path, follow=False)
    except FileNotFoundError:
        return ("", 0) if tail is None or tail.end == 0 else None
    except OSError:
        return None
    try:
        if (tail is not None and st.st_size < tail.end) or st.st_size - first > LIST_CAP:
            return None
        data = _read_range(fd, first, st.st_size)
    finally:
        os.close(fd)
    if tail is not None and hashlib.sha1(data[: tail.end - first]).hexdigest() != tail.digest:
        return None
    try:
        return data[start - first :].decode("ascii"), first + len(data)
    except UnicodeDecodeError:
        return None


def read_from(path: str, start: int) -> tuple[str, int] | None:
    """The text of the list at ``path`` from byte ``start`` to its end, and that
    end's offset (a list this push just wrote: nothing checked but the guards)."""
    try:
        fd, st = open_side_file(path, follow=False)
    except FileNotFoundError:
        return ("", 0) if start == 0 else None
    except OSError:
        return None
    try:
        if st.st_size < start or st.st_size - start > LIST_CAP:
            return None
        data = _read_range(fd, start, st.st_size)
    finally:
        os.close(fd)
    try:
        return data.decode("ascii"), start + len(data)
    except UnicodeDecodeError:
        return None


def tail_at(path: str, start: int, end: int) -> Tail | None:
    """The :class:`Tail` of the list at ``path`` read to ``end``, its needed part from ``start``."""
    first = max(0, start - _BEFORE)
    try:
        fd, st = open_side_file(path, follow=False)
    except FileNotFoundError:
        return Tail(0, 0, hashlib.sha1(b"").hexdigest()) if end == 0 else None
    except OSError:
        return None
    try:
        if st.st_size < end or end - first > LIST_CAP:
            return None
        data = _read_range(fd, first, end)
    finally:
        os.close(fd)
    return Tail(start, end, hashlib.sha1(data).hexdigest()) if len(data) == end - first else None


def _read_range(fd: int, first: int, end: int) -> bytes:
    chunks: list[bytes] = []
    at = first
    while at < end:
        chunk = os.pread(fd, min(end - at, 1 << 20), at)
        if not chunk:
            break
        chunks.append(chunk)
        at += len(chunk)
    return b"".join(chunks)
