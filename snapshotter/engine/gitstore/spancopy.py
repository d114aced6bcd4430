"""Writing an object's content where parts of it lie in a pack as they are: copied by the kernel.

A big file's key frame is kept in deflate's stored blocks (``storedblocks``):
its bytes sit in the pack verbatim, between 5-byte block headers. A restore
of any version of the file takes most of its bytes from there. Read into the
process and written out again, a 1 GiB version cost 17,000 writes from a
memory map (0.45 s) where ``cp`` takes 0.28 s; ``os.copy_file_range`` copies
each span from the pack to the file inside the kernel, page cache to page
cache, as ``cp`` itself does. Where the call is missing (not Linux) or refused
(``EXDEV``: another file system on older kernels; ``ENOSYS``, ``EINVAL``,
``EOPNOTSUPP``: a file system or sandbox without it), the span is read and
written instead, and the kernel is not asked again for that file.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable

from snapshotter.engine.gitstore.inflate import PIECE

_REFUSALS = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)}


class Span:
    """Bytes of an open pack to be written as they are: ``runs``, each (offset
    in the pack, length), in order (a stored block each: one object for many,
    as a step of Python per block cost more than the block's copy)."""

    __slots__ = ("fd", "runs")

    def __init__(self, fd: int, runs: Iterable[tuple[int, int]]) -> None:
        self.fd = fd
        self.runs = runs


def write_pieces(out: int, pieces: Iterable[bytes | Span]) -> None:
    """Write ``pieces`` to ``out`` at its position, in order: bytes with
    ``os.write``, spans of a pack copied by the kernel where it can (after one
    refusal, read and written: the next span would be refused too)."""
    copy = getattr(os, "copy_file_range", None)  # looked up at each call: Linux only
    for piece in pieces:
        if isinstance(piece, Span):
            copy = _copy_runs(piece, out, copy)
            continue
        _write(out, piece)


Copy = Callable[[int, int, int, int], int]


def _copy_runs(span: Span, out: int, copy: Copy | None) -> Copy | None:
    """Copy ``span`` to ``out``; returns ``copy``, or None once the kernel refused."""
    fd = span.fd
    for at, left in span.runs:
        while left and copy is not None:
            try:
                done = copy(fd, out, left, at)
            except OSError as exc:
                if exc.errno not in _REFUSALS:
                    raise
                copy = None
                break
            if done <= 0:
                raise OSError(errno.EIO, "a pack is shorter than an object's stored blocks say")
            at += done
            left -= done
        while left:
            data = os.pread(fd, min(left, PIECE), at)
            if not data:
                raise OSError(errno.EIO, "a pack is shorter than an object's stored blocks say")
            _write(out, data)
            at += len(data)
            left -= len(data)
    return copy


def _write(out: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(out, view) :]
