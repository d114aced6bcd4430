"""``packed-refs`` rewritten around the lines that change (see ``packedrefs``).

:func:`rewritten` makes the new content from the old and a few changes: the old
bytes are copied around the lines that change, never parsed whole. The new
file always says ``sorted`` and keeps the peeling traits the old one claimed
(every ref in snapshotter's namespaces names a commit: nothing to peel).
:func:`rewrite` writes it as git does: ``packed-refs.lock`` made exclusively,
written, synced, renamed over ``packed-refs``, the folder synced.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from snapshotter.engine.fsutil import sync_folder
from snapshotter.engine.gitstore.packedrefs import FILE_NAME, LOCK_FLAGS, View, opened
from snapshotter.errors import StoreError


def rewritten(view: View, changes: Mapping[bytes, bytes | None]) -> list[bytes]:
    """The content of ``packed-refs`` with ``changes`` made: name -> id (None:
    the ref goes), as pieces to write. Only the changed lines are looked at."""
    traits = set(view.traits) | {b"sorted"} if view.identity is not None else {b"peeled", b"fully-peeled", b"sorted"}
    order = [trait for trait in (b"peeled", b"fully-peeled", b"sorted") if trait in traits]
    pieces = [b"# pack-refs with: " + b" ".join(order) + b" \n"]
    position = view.start
    for name in sorted(changes):
        at = view.lower_bound(name)
        after = at
        if at < view.size:
            found, _, end = view._record(at)
            if found == name:
                after = end
        pieces.append(view.read(position, at))
        sha = changes[name]
        if sha is not None:
            pieces.append(sha + b" " + name + b"\n")
        position = after
    pieces.append(view.read(position, view.size))
    return [piece for piece in pieces if piece]


def rewrite(store_path: str, changes: Mapping[bytes, bytes | None]) -> None:
    """Make ``changes`` in ``packed-refs`` (name -> id in hex; None: the ref
    goes) as git does: ``packed-refs.lock`` made exclusively (held already:
    another writer, or one that died, which the next holder of the store lock
    clears), the file read afresh under it, the new content written there,
    synced and renamed over ``packed-refs``, the folder synced: the new file is
    durable before any loose ref it now holds is deleted."""
    path = os.path.join(store_path, FILE_NAME)
    lock = path + ".lock"
    try:
        fd = os.open(lock, LOCK_FLAGS, 0o600)
    except FileExistsError:
        raise StoreError(
            f"{lock} exists: another git process is changing refs (or one died; the next call clears it)"
        ) from None
    try:
        try:
            for piece in rewritten(opened(path), changes):
                view = memoryview(piece)
                while view:
                    view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(lock, path)
    except BaseException:
        try:
            os.unlink(lock)
        except OSError:
            pass
        raise
    sync_folder(store_path)
