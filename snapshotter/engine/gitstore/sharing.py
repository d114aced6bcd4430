"""Sharing objects between two stores without copying them: hard links.

A fork's store starts with the parent's objects, and a merge brings a fork's
objects back. Each pack and loose object file of one store is hard-linked
into the other where that one lacks it: the two names share the bytes on disk,
and each store owns its name. Whatever one store later does (prune, gc,
consolidation, even removing itself with ``cleanup``) unlinks only its own
names, so the other stays complete. git's alternates, the other way to share,
would make the fork read through the parent's folder, and a gc there could
delete what the fork still needs.

Objects are immutable once written, and both stores only ever replace a file
(a temporary file renamed over it), never write one in place (a big file's
chain pack is appended to in place, but only while it has one hard link: a
shared one is never written, see ``chainappend``), so a shared inode never
changes under the other store. Where the filesystem cannot link
(another device, FAT, a refusal) the file is copied instead. A pack goes
before its index: a reader that sees an index finds its pack (one without an
index is indexed again, see ``packset``).
"""

from __future__ import annotations

import errno
import os
import shutil
from dataclasses import dataclass

from snapshotter.engine.fsutil import unlink_quietly

_CANNOT_LINK = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.EACCES, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS}
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class Shared:
    """What :func:`share_objects` did: files linked, files copied (no link possible),
    and files already there."""

    linked: int = 0
    copied: int = 0
    present: int = 0


def share_objects(source_store: str, dest_store: str) -> Shared:
    """Give ``dest_store`` every pack and loose object of ``source_store`` it lacks."""
    linked = copied = present = 0
    source, dest = os.path.join(source_store, "objects"), os.path.join(dest_store, "objects")
    for rel in _object_files(source):
        target = os.path.join(dest, rel)
        if os.path.exists(target):
            present += 1
            continue
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        if _link_or_copy(os.path.join(source, rel), target):
            linked += 1
        else:
            copied += 1
    return Shared(linked, copied, present)


def _object_files(objects: str) -> list[str]:
    """Paths below ``objects`` of every pack (each ``.pack`` before its ``.idx``)
    and every loose object; temporary and lock files are left alone."""
    found: list[str] = []
    pack_dir = os.path.join(objects, "pack")
    try:
        names = sorted(os.listdir(pack_dir))
    except FileNotFoundError:
        names = []
    for name in names:
        base, ext = os.path.splitext(name)
        if ext == ".pack" and base.startswith("pack-") and base + ".idx" in names:
            found += [os.path.join("pack", name), os.path.join("pack", base + ".idx")]
    for folder in sorted(os.listdir(objects)) if os.path.isdir(objects) else []:
        if len(folder) != 2 or not _HEX.issuperset(folder):
            continue
        for name in sorted(os.listdir(os.path.join(objects, folder))):
            if len(name) == 38 and _HEX.issuperset(name):
                found.append(os.path.join(folder, name))
    return found


def _link_or_copy(source: str, target: str) -> bool:
    """Hard-link ``source`` as ``target`` (True), else copy it (False); the copy goes
    through a temporary name, so ``target`` is never seen half written."""
    try:
        os.link(source, target)
        return True
    except FileExistsError:
        return True  # another writer placed it meanwhile: objects with one name are one object
    except OSError as exc:
        if exc.errno not in _CANNOT_LINK:
            raise
    folder, name = os.path.split(target)
    temporary = os.path.join(folder, f"tmp_obj_{os.getpid()}_{name}")  # a name the next writer clears if we die
    try:
        shutil.copyfile(source, temporary)
        os.replace(temporary, target)
    finally:
        unlink_quietly(temporary)
    return False
