"""Where the folders of refs begin and end in one version of ``packed-refs``,
kept beside it so that a new process need not search for them.

A search for a ref numbered in its folder interpolates (``packedrefs``), but
the ends of a folder (``refs/snapshots/``, a stack) are found by halving the
file: about 19 probes at 100,000 snapshots, against 7 at 100, and each call
of a new process asks for a few. The writer of ``packed-refs`` (under the
store lock) searches for the ends of the folders every call reads right after
writing it, and keeps the results here with the identity of the file it wrote
(inode, size, mtime, ctime). A reader finding the same file takes them as
hints: each one is checked where it is used (the line before it sorts before
the name, the line at it not: two lines read) and passed over if it fails, so
a stale or damaged file of hints costs a search, never a wrong answer.

A cache: written atomically (a temporary file renamed), never synced; lost,
the folders' ends are searched for until the next rewrite of ``packed-refs``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from snapshotter.engine.fsutil import read_side_file, unlink_quietly

FILE_NAME = "packed-refs-bounds"
CAP = 1 << 20
Identity = tuple[int, int, int, int]


def load(meta_dir: str, identity: Identity | None) -> dict[bytes, int]:
    """The hints kept for the version of ``packed-refs`` with ``identity`` (empty if none)."""
    if identity is None:
        return {}
    try:
        data = read_side_file(os.path.join(meta_dir, FILE_NAME), CAP, follow=False)
    except OSError:
        return {}
    head, _, body = data.partition(b"\n")
    if head != b"packed-refs %d %d %d %d" % identity:
        return {}
    hints: dict[bytes, int] = {}
    for line in body.split(b"\n"):
        offset, space, name = line.partition(b" ")
        if space and offset.isdigit() and len(offset) < 19 and name:
            hints[name] = int(offset)
    return hints


def save(meta_dir: str, identity: Identity | None, bounds: Mapping[bytes, int]) -> None:
    """Keep ``bounds`` (name -> where a search for it ends) for the file with ``identity``."""
    import tempfile  # when writing: a command that reads loads neither it nor shutil

    if identity is None or not os.path.isdir(meta_dir):
        return
    text = b"packed-refs %d %d %d %d\n" % identity
    text += b"".join(b"%d %s\n" % (offset, name) for name, offset in sorted(bounds.items()) if b"\n" not in name)
    tmp = ""
    try:
        fd, tmp = tempfile.mkstemp(dir=meta_dir, prefix=".packed-refs-bounds-", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(text)
        os.replace(tmp, os.path.join(meta_dir, FILE_NAME))
        tmp = ""
    except OSError:
        pass  # a read-only store: the folders' ends are searched for
    finally:
        if tmp:
            unlink_quietly(tmp)
