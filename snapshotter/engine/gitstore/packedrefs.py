"""``packed-refs`` as git writes it: sorted, searched without being read whole,
rewritten around the lines that change.

A store keeps a ref per snapshot, so at 100,000 snapshots ``packed-refs`` holds
some 7 MB of ``<id> <name>`` lines. Parsing it whole (as dulwich does) at each
open would make every call cost more as the history grows. git writes the
file sorted by name and says so in its first line (``# pack-refs with: peeled
fully-peeled sorted``); git itself then finds a ref by a binary search. So
does :class:`View`: it reads the file in 16 KiB blocks, only those a search
or a walk from one end of a name range touches, each once per version of the
file. A file that does not say it is sorted (written by an old git or by hand)
is read whole once and sorted in memory.

``packedrewrite`` writes a new version of the file around the lines that change.

Every read is guarded as the store's side files are (``fsutil.open_side_file``:
a regular file, never through a symlink, never blocking): a file that is not
one, too large, or damaged where a search reads it is a :class:`StoreError`
naming it, never taken as empty (a gc would then drop what it names).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import time
from collections.abc import Iterator

from snapshotter.engine.fsutil import NO_FOLLOW, USE_CTIME, open_side_file, read_side_file, settled
from snapshotter.engine.gitstore import packedbounds, packedlines
from snapshotter.engine.gitstore.interpolation import interpolated
from snapshotter.errors import StoreError

FILE_NAME = "packed-refs"
CAP = 64 << 20
"""About 70 bytes a ref: 64 MiB is some 900,000 refs, far more than any retention keeps."""
BLOCK = 2 << 10
FIRST_PIECE = 512
LAST_PIECE = 256 << 10
"""A walk over a range of refs reads pieces of 512 bytes (some seven refs: a
call asking for the newest one parses no more), doubling up to 256 KiB (see
``View.forward``)."""
GIT_HEADER = b"# pack-refs with: peeled fully-peeled sorted \n"
"""What git 2.39 writes first (the space before the newline included)."""
_HEX40 = re.compile(rb"[0-9a-f]{40}")
LOCK_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_FOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
"""A lock file is made exclusively, owner-only, never through a symlink."""

Identity = tuple[int, int, int, int]
"""(inode, size, mtime_ns, ctime_ns) of one version of the file."""


class Changed(Exception):
    """The file was replaced while a view of it was being read: ask again."""


def prefix_end(prefix: bytes) -> bytes:
    """The first name after every name starting with ``prefix`` (``refs/a/`` -> ``refs/a0``)."""
    return prefix[:-1] + bytes([prefix[-1] + 1])


class View:
    """One version of ``packed-refs``: its traits, and its lines read as asked."""

    def __init__(self, path: str, identity: Identity | None, traits: frozenset[bytes], body: int) -> None:
        self.path = path
        self.identity = identity
        """None: there is no file (an empty view)."""
        self.traits = traits
        self.start = body
        """Where the first ref line begins (after the header, if any)."""
        self.size = identity[1] if identity is not None else 0
        self._blocks: dict[int, bytes] = {}
        self._whole: bytes | None = None
        """The sorted content of a file that did not say it was sorted (read whole)."""
        self._bounds: dict[bytes, int] = {}
        """Names searched in this version of the file, and where each search ended:
        a call asks for the same few (the ends of ``refs/snapshots/``) several times."""
        self._fd: int | None = None
        """The file, held open through one search (one open a search, not one a block)."""
        self.hints: dict[bytes, int] = {}
        """Where searches for some names end, as the file's writer found them
        (``packedbounds``): each checked before it is used."""

    @classmethod
    def empty(cls, path: str) -> View:
        return cls(path, None, frozenset({b"peeled", b"fully-peeled", b"sorted"}), 0)

    # -- reading bytes ------------------------------------------------------------------

    def read(self, start: int, end: int) -> bytes:
        """Bytes ``start``..``end`` of the file (of the sorted copy, for an unsorted one)."""
        end = min(end, self.size)
        if start >= end:
            return b""
        if self._whole is not None:
            return self._whole[start:end]
        first, last = start // BLOCK, (end - 1) // BLOCK
        if first == last:  # most reads: a line or a byte within one block
            block = self._blocks.get(first)
            if block is None:
                self._fetch(first, first)
                block = self._blocks[first]
            return block[start - first * BLOCK : end - first * BLOCK]
        missing = [i for i in range(first, last + 1) if i not in self._blocks]
        if missing:
            self._fetch(missing[0], missing[-1])
        data = b"".join(self._blocks[i] for i in range(first, last + 1))
        return data[start - first * BLOCK : end - first * BLOCK]

    def _fetch(self, first: int, last: int) -> None:
        if self._fd is not None:
            data = _pread(self._fd, (last - first + 1) * BLOCK, first * BLOCK)
        else:
            fd, st = _open(self.path)
            try:
                if _identity(st) != self.identity:
                    raise Changed
                data = _pread(fd, (last - first + 1) * BLOCK, first * BLOCK)
            finally:
                os.close(fd)
        for i in range(first, last + 1):
            self._blocks[i] = data[(i - first) * BLOCK : (i - first + 1) * BLOCK]

    def set_whole(self, data: bytes) -> None:
        self._whole, self.size = data, len(data)

    # -- lines --------------------------------------------------------------------------

    def _line_start(self, position: int) -> int:
        """The start of the record holding byte ``position`` (a ref line; a peeled
        line ``^<id>`` belongs to the ref line before it)."""
        while True:
            start = self._rfind_newline(position) + 1
            start = max(start, self.start)
            if start <= self.start or self.read(start, start + 1) != b"^":
                return start
            position = start - 1

    def _rfind_newline(self, position: int) -> int:
        """The offset of the last newline before ``position`` (``start - 1`` if none)."""
        low = position
        while low > self.start:
            low = max(self.start, low - 256)
            found = self.read(low, position).rfind(b"\n")
            if found >= 0:
                return low + found
        return self.start - 1

    def _record_end(self, start: int) -> int:
        """Where the record beginning at ``start`` ends (its peeled line included)."""
        end = self._line_end(start)
        while end < self.size and self.read(end, end + 1) == b"^":
            end = self._line_end(end)
        return end

    def _line_end(self, start: int) -> int:
        position = start
        while position < self.size:
            chunk = self.read(position, position + 256)
            found = chunk.find(b"\n")
            if found >= 0:
                return position + found + 1
            position += len(chunk)
        raise StoreError(f"{self.path} is damaged (its last line is cut short); run verify")

    def _record(self, start: int) -> tuple[bytes, bytes, int]:
        """(name, id, end) of the record at ``start``."""
        end = self._record_end(start)
        line = self.read(start, self._line_end(start)).rstrip(b"\n")
        sha, space, name = line[:40], line[40:41], line[41:]
        if space != b" " or not _HEX40.fullmatch(sha) or not name:
            raise StoreError(f"{self.path} is damaged (a line at byte {start} is no ref); run verify")
        return name, sha, end

    def lower_bound(self, name: bytes) -> int:
        """The offset of the first record whose name is ``name`` or after it,
        remembered for this version of the file. Before the first record or past
        the last: an end of the file, without a search (``refs/snapshots/``
        usually begins the file, and a name past every ref ends it)."""
        found = self._bounds.get(name)
        if found is None:
            hinted = self.hints.get(name)
            with self._held():
                found = hinted if hinted is not None and self._holds(name, hinted) else self._search(name)
            self._bounds[name] = found
        return found

    def bounds(self) -> dict[bytes, int]:
        """The searches made in this version of the file: name -> where each ended."""
        return dict(self._bounds)

    def _holds(self, name: bytes, at: int) -> bool:
        """Whether ``at`` is where a search for ``name`` ends: a record starts
        there (or the file ends), the record before sorts before ``name``, and
        the one at ``at`` does not."""
        if not self.start <= at <= self.size:
            return False
        try:
            if at > self.start and (self.read(at - 1, at) != b"\n" or self.read(at, at + 1) == b"^"):
                return False
            if at > self.start and self._record(self._line_start(at - 1))[0] >= name:
                return False
            return at == self.size or self._record(at)[0] >= name
        except StoreError:
            return False  # a hint into damage: the search says what is there

    @contextlib.contextmanager
    def _held(self) -> Iterator[None]:
        """The file held open (and checked to be this version) while blocks are read."""
        if self._fd is not None or self._whole is not None or self.identity is None:
            yield
            return
        fd, st = _open(self.path)
        try:
            if _identity(st) != self.identity:
                raise Changed
            self._fd = fd
            yield
        finally:
            self._fd = None
            os.close(fd)

    def _search(self, name: bytes) -> int:
        """Where ``name`` is or would be: a binary search, but between two refs
        numbered in ``name``'s folder (``refs/snapshots/0000000042``: fixed-width
        numbers in lines of one length) an interpolation, which lands on or next
        to the line at once however long the history; a probe that does not
        halve the range is followed by a halving one (never worse than twice a
        binary search)."""
        low, high = self.start, self.size
        first, _, first_end = self._record(low) if low < high else (b"", b"", 0)
        if low >= high or first >= name:
            return low
        last_start = self._line_start(high - 1)
        last = self._record(last_start)[0]
        if last < name:
            return high
        low, high, below, above = first_end, last_start, first, last
        halve = False
        while low < high:
            at = low + (high - low) // 2
            if not halve:
                at = interpolated(name, below, above, low, high, at)
            start = max(self._line_start(at), low)
            found, _, end = self._record(start)
            before = high - low
            if found < name:
                low, below = end, found
            else:
                high, above = start, found
            halve = not halve and (high - low) * 2 > before
        return low

    def get(self, name: bytes) -> bytes | None:
        """The id ``name`` holds here, or None."""
        at = self.lower_bound(name)
        if at >= self.size:
            return None
        found, sha, _ = self._record(at)
        return sha if found == name else None

    def forward(self, start: int, end: int) -> Iterator[tuple[bytes, bytes, int]]:
        """(name, id, offset) of each record in ``start``..``end`` (record bounds), in
        name order. Read in pieces that double from ``FIRST_PIECE`` to ``LAST_PIECE``,
        each split into lines at once: a caller that stops after a few reads a
        few hundred bytes, one that reads 100,000 refs does not pay a search's
        line-by-line reads for each (0.5 s at 100,000 snapshots)."""
        position, piece = start, FIRST_PIECE
        while position < end:
            data = self.read(position, min(end, position + piece))
            cut = len(data) if position + len(data) >= end else data.rfind(b"\n") + 1
            if cut <= 0:  # one line longer than the piece
                name, sha, after = self._record(position)
                yield name, sha, position
                position = after
                continue
            yield from packedlines.records(self.path, data[:cut], position)
            position, piece = position + cut, min(piece * 2, LAST_PIECE)

    def backward(self, start: int, end: int) -> Iterator[tuple[bytes, bytes, int]]:
        """(name, id, offset) of each record in ``start``..``end``, last first, read
        in pieces as :meth:`forward` reads."""
        position, piece = end, FIRST_PIECE
        while position > start:
            low = max(start, position - piece)
            data = self.read(low, position)
            cut = 0
            if low > start:
                cut = data.find(b"\n") + 1
                while 0 < cut < len(data) and data[cut : cut + 1] == b"^":  # a peeled line stays with its ref
                    cut = data.find(b"\n", cut) + 1
            if (low > start and cut <= 0) or cut >= len(data):  # no whole record in the piece
                record = self._line_start(position - 1)
                name, sha, _ = self._record(record)
                yield name, sha, record
                position = record
                continue
            yield from reversed(list(packedlines.records(self.path, data[cut:], low + cut)))
            position, piece = low + cut, min(piece * 2, LAST_PIECE)

    def span(self, prefix: bytes) -> tuple[int, int]:
        """The byte range holding the names that start with ``prefix``."""
        return self.lower_bound(prefix), self.lower_bound(prefix_end(prefix))

    def names(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        start, end = self.span(prefix)
        for name, sha, _ in self.forward(start, end):
            yield name, sha

    def first_and_last(self, prefix: bytes) -> tuple[int, bytes, bytes]:
        """A fingerprint of the ``prefix`` range: its length in bytes, its first
        and last names (empty if none)."""
        start, end = self.span(prefix)
        if start >= end:
            return 0, b"", b""
        first = self._record(start)[0]
        last = next(self.backward(start, end))[0]
        return end - start, first, last


class PackedRefs:
    """``packed-refs`` of one store, read anew only when the file changed."""

    def __init__(self, store_path: str) -> None:
        self.path = os.path.join(store_path, FILE_NAME)
        self.meta_dir = os.path.join(store_path, "snapshotter")
        self._view: View | None = None
        self._view_settled = False

    def view(self) -> View:
        """The file as it is now (its blocks read before reused while it stays the
        same file, and had settled when first read)."""
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            self._view = None
            return View.empty(self.path)
        except OSError as exc:
            raise _unreadable(self.path, exc) from None
        known = self._view
        if known is not None and self._view_settled and known.identity == _identity(st):
            return known
        view = opened(self.path)
        view.hints = packedbounds.load(self.meta_dir, view.identity)
        self._view, self._view_settled = view, view.identity is not None and _settled(st)
        return view

    def forget(self) -> None:
        self._view = None


def opened(path: str) -> View:
    """The file at ``path`` as it is now (its header read; a file not sorted read whole and sorted)."""
    for _ in range(5):
        try:
            fd, st = _open(path)
        except FileNotFoundError:
            return View.empty(path)
        try:
            if st.st_size > CAP:
                raise StoreError(
                    f"{path} is larger than {CAP >> 20} MiB: it may name snapshots, so nothing is done "
                    "without it; run `git pack-refs` on the store or remove what is not a ref there"
                )
            head = _pread(fd, min(st.st_size, BLOCK), 0)
        finally:
            os.close(fd)
        traits: frozenset[bytes] = frozenset()
        body = 0
        if head.startswith(b"#"):
            newline = head.find(b"\n")
            if newline < 0:
                raise StoreError(f"{path} is damaged (its header line never ends); run verify")
            line = head[:newline]
            if line.startswith(b"# pack-refs with:"):
                traits = frozenset(line[len(b"# pack-refs with:") :].split())
            body = newline + 1
        view = View(path, _identity(st), traits, body)
        if b"sorted" not in traits:
            try:
                data = read_side_file(path, CAP, follow=False)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise _unreadable(path, exc) from None
            sorted_body = packedlines.sorted_records(path, data[body:])
            view = View(path, _identity(st), traits, body)
            view.set_whole(data[:body] + sorted_body)
        return view
    raise StoreError(f"{path} kept changing while it was read; try again")


def _open(path: str) -> tuple[int, os.stat_result]:
    try:
        return open_side_file(path, follow=False)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _unreadable(path, exc) from None


def _unreadable(path: str, exc: OSError) -> StoreError:
    if exc.errno == errno.ELOOP:
        reason = "a symbolic link"
    else:
        reason = exc.strerror or str(exc)
    return StoreError(
        f"cannot read {path} ({reason}): it may name snapshots, so nothing is done without it; "
        "if it is not a file, remove it"
    )


def _pread(fd: int, size: int, offset: int) -> bytes:
    """``size`` bytes at ``offset`` (``os.pread`` where it exists; Windows seeks)."""
    if hasattr(os, "pread"):
        return os.pread(fd, size, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, size)


def _identity(st: os.stat_result) -> Identity:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _settled(st: os.stat_result) -> bool:
    """Whether a later file could not share this one's identity (see ``fsutil.settled``)."""
    return USE_CTIME and settled(st, time.time_ns())
