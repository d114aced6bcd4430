"""Reading loose objects: whole when small, a piece at a time when big.

A loose object is one zlib stream of ``<type> <size>\\0`` and the content. Its
header is inflated first, so a caller's size limit is applied before the rest
is (see ``inflate``); the content never inflates past the size it declares.
Read directly rather than through dulwich, which parses each object into a
ShaFile first (several times slower). Checking content against ids is the
caller's job (``store.py``).
"""

from __future__ import annotations

import errno
import os
import weakref
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from snapshotter.engine.fsutil import NotARegularFile, open_side_file
from snapshotter.engine.gitstore.inflate import PIECE, Stream, too_large
from snapshotter.engine.gitstore.packs import TYPE_NUMBERS
from snapshotter.engine.gitstore.packset import closing

_FIRST = 1 << 16
"""The first read: all of most loose objects."""


def _open(path: str) -> BinaryIO | None:
    """The object file, opened as a side file is (``fsutil.open_side_file``: never
    blocking, never through a symlink); None where there is none, or where what
    is there is no file (a named pipe or a device planted in the store)."""
    try:
        fd, _ = open_side_file(path, follow=False)
    except (FileNotFoundError, NotARegularFile):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise
    return os.fdopen(fd, "rb")


def _header(handle: BinaryIO, sha: bytes, first: int = _FIRST) -> tuple[Stream, int, int]:
    stream = Stream(handle.read(first), lambda: handle.read(PIECE), f"loose object {sha.hex()}")
    name, size = stream.header()
    kind = TYPE_NUMBERS.get(name)
    if kind is None:
        raise zlib.error(f"loose object {sha.hex()} has an unknown type")
    return stream, kind, size


def read_loose(path: str, sha: bytes, limit: int) -> tuple[int, bytes] | None:
    """(type number, content) of the loose object at ``path``; None if there is
    none; ``ObjectTooLarge`` if it declares more than ``limit`` bytes."""
    handle = _open(path)
    if handle is None:
        return None
    with handle:
        stream, kind, size = _header(handle, sha)
        if size > limit:
            raise too_large(sha, size, limit)
        return kind, stream.exact(size)


def loose_header(path: str, sha: bytes) -> tuple[int, int] | None:
    """(type number, size) of the loose object at ``path``, or None if there is none."""
    handle = _open(path)
    if handle is None:
        return None
    with handle:
        _, kind, size = _header(handle, sha, 512)
        return kind, size


def stream_loose(path: str, sha: bytes) -> tuple[int, int, Iterator[bytes]] | None:
    """(type number, size, content in pieces) of the loose object at ``path``,
    read and inflated a piece at a time; None if there is none."""
    opened = _opened(path, sha)
    if opened is None:
        return None
    handle, stream, kind, size = opened
    return kind, size, closing(stream.pieces(size), handle.close)


def open_loose(path: str, sha: bytes) -> tuple[int, int, Stream] | None:
    """(type number, size, its content's stream) of the loose object at
    ``path``, for reading a delta's base; None if there is none. The file
    closes with the stream."""
    opened = _opened(path, sha)
    if opened is None:
        return None
    handle, stream, kind, size = opened
    weakref.finalize(stream, handle.close)
    return kind, size, stream


def _opened(path: str, sha: bytes) -> tuple[BinaryIO, Stream, int, int] | None:
    """The loose object's file, open, and its content's stream past the header."""
    handle = _open(path)
    if handle is None:
        return None
    try:
        stream, kind, size = _header(handle, sha)
    except BaseException:
        handle.close()
        raise
    return handle, stream, kind, size
