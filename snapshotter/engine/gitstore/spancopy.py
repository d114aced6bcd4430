"""Writing an object's content where parts of it lie in a pack as they are: copied by the kernel.

A big file's key frame is kept in deflate's stored blocks (``storedblocks``):
its bytes sit in the pack verbatim, between 5-byte block headers. A restore
of any version of the file takes most of its bytes from there. Read into the
process and written out again, a 1 GiB version cost 17,000 writes from a
memory map (0.45 s) where ``cp`` takes 0.28 s. The kernel copies them page
cache to page cache, as ``cp`` itself does, in one of two ways:

- ``os.splice``, each block's bytes into a pipe of 1 MiB (references to the
  pack's pages, no copy), the pipe into the file at once every MiB. Measured
  on ext4 (Linux 6.18) beside one ``os.copy_file_range`` per block (0.40 s a
  GiB, ``cp`` 0.31 s): 0.35 to 0.37 s. A block's bytes lie off the pack's
  page boundaries (5 bytes further each block), and ``copy_file_range`` of
  such ranges costs more: 64 KiB at a time from page boundaries, 0.34 s a
  GiB; from 5 bytes past them, 0.40 s. What the pack's pages are in the
  page cache counts as much: from a pack written a block at a time the
  splices took 0.36 s a GiB, from the same bytes written a MiB at a time
  0.30 s, as ``cp`` (the writer writes a segment at once: ``fsutil.write_all``);
- else ``os.copy_file_range`` per block.

Where neither call exists (not Linux) or one is refused (``EXDEV``: another
file system on older kernels; ``ENOSYS``, ``EINVAL``, ``EOPNOTSUPP``,
``EPERM``: a file system or sandbox without it), the next way is taken for
the rest of the file, and at last the span is read and written.

The pipe is never spliced into while it could be full (that would wait for a
reader, and the reader is this thread): the pages each splice took are
counted, the pipe is emptied before the next could overflow it, and its
writing end does not block (a full pipe answers ``EAGAIN``: emptied, then the
splice is tried again).
"""

from __future__ import annotations

import errno
import mmap
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import cast

from snapshotter.engine.fsutil import write_all
from snapshotter.engine.gitstore.inflate import PIECE

_REFUSALS = {
    errno.EXDEV,
    errno.ENOSYS,
    errno.EINVAL,
    errno.EOPNOTSUPP,
    errno.EPERM,
    getattr(errno, "ENOTSUP", errno.EOPNOTSUPP),
}
_PIPE_BYTES = 1 << 20
"""The pipe's size asked for (Linux's default limit for one pipe of a user): 256 pages."""
_F_SETPIPE_SZ, _F_GETPIPE_SZ = 1031, 1032  # Linux's (``fcntl`` has them from Python 3.10, not on every build)
_PAGE = mmap.PAGESIZE


class Span:
    """Bytes of an open pack to be written as they are: ``runs``, each (offset
    in the pack, length), in order (a stored block each: one object for many,
    as a step of Python per block cost more than the block's copy)."""

    __slots__ = ("fd", "runs")

    def __init__(self, fd: int, runs: Iterable[tuple[int, int]]) -> None:
        self.fd = fd
        self.runs = runs


def write_pieces(out: int, pieces: Iterable[bytes | Span], size: int | None = None) -> None:
    """Write ``pieces`` to ``out`` at its position, in order: bytes with
    ``os.write``, spans of a pack copied by the kernel where it can (after one
    refusal, the next way: the next span would be refused too). ``size``, the
    bytes they make where known: reserved on disk first (``reserve``)."""
    if size:
        reserve(out, size)
    copier = _Copier(out)
    try:
        for piece in pieces:
            if isinstance(piece, Span):
                copier.copy(piece)
                continue
            copier.drain()
            write_all(out, [piece])
        copier.drain()
    finally:
        copier.close()


_FALLOC_FL_KEEP_SIZE = 1
_fallocate: list[Callable[[int, int, int, int], int] | None] = []


def reserve(out: int, size: int) -> bool:
    """Reserve ``size`` bytes of disk for ``out`` from its start, its size
    unchanged (Linux's ``fallocate`` with ``FALLOC_FL_KEEP_SIZE``; the C
    library's, which never writes zeros where the file system cannot, as
    ``os.posix_fallocate`` would). Written afterwards, 1 GiB took 0.365 s
    against 0.40 s on ext4 (a delayed allocation reserved a page at a time).
    Anywhere else, or refused (a full disk fails the writes as it would have),
    nothing. Whether it was reserved."""
    if not _fallocate:
        _fallocate.append(_find_fallocate())
    fallocate = _fallocate[0]
    return fallocate is not None and fallocate(out, _FALLOC_FL_KEEP_SIZE, 0, size) == 0


def _find_fallocate() -> Callable[[int, int, int, int], int] | None:
    if not sys.platform.startswith("linux") or sys.maxsize < 1 << 32:
        return None  # elsewhere, or where off_t may be 32 bits
    try:
        import ctypes

        found = ctypes.CDLL(None).fallocate
    except (OSError, AttributeError, ImportError):
        return None
    found.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    found.restype = ctypes.c_int
    return cast("Callable[[int, int, int, int], int]", found)


Copy = Callable[[int, int, int, int], int]
Splice = Callable[..., int]


class _Copier:
    """Copies spans to ``out`` the fastest way the kernel accepts (see the module's note)."""

    def __init__(self, out: int) -> None:
        self._out = out
        self._splice: Splice | None = getattr(os, "splice", None)  # looked up at each restore: Linux only
        self._copy: Copy | None = getattr(os, "copy_file_range", None)
        self._pipe: tuple[int, int] | None = None
        self._slots = 0
        """Pages the pipe holds."""
        self._used = 0
        """Pages the bytes in the pipe take."""
        self._held = 0
        """Bytes in the pipe, not yet in ``out``."""

    def copy(self, span: Span) -> None:
        fd = span.fd
        for at, left in self._through_pipe(fd, iter(span.runs)):
            if self._copy is not None:
                at, left = self._copied(fd, at, left)
            self._read_and_write(fd, at, left)

    def _through_pipe(self, fd: int, runs: Iterator[tuple[int, int]]) -> Iterator[tuple[int, int]]:
        """Splice ``runs`` into the pipe; yields what it did not take (the
        rest of the runs, once the kernel refused)."""
        if self._splice is None or (self._pipe is None and not self._open_pipe()):
            yield from runs
            return
        assert self._pipe is not None
        splice, writer, slots, pages_of = self._splice, self._pipe[1], self._slots, _pages
        for at, left in runs:  # a step per block: the usual case first, in as few steps as it takes
            pages = pages_of(at, left)
            if self._used + pages <= slots:
                try:
                    done = splice(fd, writer, left, at)
                except OSError:
                    done = 0  # tried again below, where every answer is dealt with
                if done == left:
                    self._used += pages
                    self._held += done
                    continue
                if done > 0:
                    self._used += pages_of(at, done)
                    self._held += done
                    at += done
                    left -= done
            at, left = self._spliced(fd, at, left)
            if left:
                yield at, left
                yield from runs
                return

    def _spliced(self, fd: int, at: int, left: int) -> tuple[int, int]:
        """Splice what it can of the run into the pipe; returns what is left (all of it once refused)."""
        if self._pipe is None and not self._open_pipe():
            return at, left
        assert self._pipe is not None
        writer = self._pipe[1]
        while left:
            if self._used + _pages(at, left) > self._slots and self._held:
                self.drain()
            splice = self._splice
            if splice is None:  # the file refused the pipe's bytes
                return at, left
            try:
                done = splice(fd, writer, left, at)
            except BlockingIOError:  # full after all: empty it and try again
                if not self._held:
                    self._refused()
                    return at, left
                self.drain()
                continue
            except OSError as exc:
                if exc.errno not in _REFUSALS:
                    raise
                self._refused()
                return at, left
            if done <= 0:
                raise OSError(errno.EIO, "a pack is shorter than an object's stored blocks say")
            self._used += _pages(at, done)
            self._held += done
            at += done
            left -= done
        return at, left

    def _open_pipe(self) -> bool:
        try:
            reader, writer = os.pipe()
        except OSError:
            self._splice = None
            return False
        self._pipe = (reader, writer)
        try:
            import fcntl  # not on Windows, where there is no os.splice either

            try:
                fcntl.fcntl(writer, _F_SETPIPE_SZ, _PIPE_BYTES)
            except OSError:
                pass  # over the user's limit for pipes: the size it has
            size = fcntl.fcntl(writer, _F_GETPIPE_SZ)
            os.set_blocking(writer, False)
        except OSError:
            self._refused()
            return False
        self._slots = max(size // _PAGE, 1)
        return True

    def drain(self) -> None:
        """Write what the pipe holds to ``out``."""
        if not self._held:
            return
        assert self._splice is not None and self._pipe is not None
        reader = self._pipe[0]
        while self._held:
            try:
                done = self._splice(reader, self._out, self._held)
            except OSError as exc:
                if exc.errno not in _REFUSALS:
                    raise
                self._splice = None  # the file takes no splice: the pipe read and written
                while self._held:
                    data = os.read(reader, min(self._held, PIECE))
                    if not data:
                        raise OSError(errno.EIO, "a pipe lost the bytes it held") from None
                    write_all(self._out, [data])
                    self._held -= len(data)
                break
            if done <= 0:
                raise OSError(errno.EIO, "a pipe lost the bytes it held")
            self._held -= done
        self._used = 0

    def _refused(self) -> None:
        self.drain()
        self._splice = None

    def _copied(self, fd: int, at: int, left: int) -> tuple[int, int]:
        assert self._copy is not None
        while left:
            try:
                done = self._copy(fd, self._out, left, at)
            except OSError as exc:
                if exc.errno not in _REFUSALS:
                    raise
                self._copy = None
                break
            if done <= 0:
                raise OSError(errno.EIO, "a pack is shorter than an object's stored blocks say")
            at += done
            left -= done
        return at, left

    def _read_and_write(self, fd: int, at: int, left: int) -> None:
        while left:
            data = os.pread(fd, min(left, PIECE), at)
            if not data:
                raise OSError(errno.EIO, "a pack is shorter than an object's stored blocks say")
            write_all(self._out, [data])
            at += len(data)
            left -= len(data)

    def close(self) -> None:
        if self._pipe is not None:
            for fd in self._pipe:
                os.close(fd)
            self._pipe = None


def _pages(at: int, length: int) -> int:
    """The pages a splice of ``length`` bytes from ``at`` takes in a pipe (one a page it touches)."""
    return (at + length - 1) // _PAGE - at // _PAGE + 1
