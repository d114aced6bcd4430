"""Making a workspace's store (``store.Store.open_or_create`` opens it).

Created whole in a temporary folder beside its final place and renamed into
place, so a crash never leaves a half-made store under the final name. A folder
there that is no store (``location.store_exists``: it holds only snapshotter's
side files, as a failed hook call of an older version left) is replaced by the
new store, which keeps its hooks log. Everything is owner-only (0700 folders,
0600 files), the folders made above the store too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

from snapshotter.engine.fsutil import make_private_folders, read_side_file
from snapshotter.engine.gitstore.location import SIDE_FOLDER, store_exists
from snapshotter.engine.gitstore.locking import StoreLock
from snapshotter.engine.gitstore.storerepo import STORE_CONFIG
from snapshotter.errors import StoreError

KEPT_SIDE_FILES = ("hooks.log",)
"""What a new store takes over from a folder that held only side files: the log
of the hook calls that failed there. Nothing else (a cache would speak of
objects the new store does not hold)."""
_KEPT_CAP = 4 << 20
LOCK_WAIT = 30.0
"""Seconds to wait for another process replacing the same folder of side files."""


def create(path: str, canonical: str) -> None:
    """Make the store of the workspace ``canonical`` at ``path`` (another process
    may make it meanwhile: then that one stays); raises ``StoreError``."""
    parent = os.path.dirname(path)
    try:
        make_private_folders(parent)
        tmp = tempfile.mkdtemp(dir=parent, prefix=".new-store-")
        try:
            from dulwich.repo import Repo  # only a new store: opening one loads no ``Repo``

            Repo.init_bare(tmp).close()
            with open(os.path.join(tmp, "config"), "wb") as handle:
                handle.write(STORE_CONFIG)
            with open(os.path.join(tmp, "description"), "wb") as handle:
                handle.write(b"snapshotter store for " + os.fsencode(canonical) + b"\n")
            with open(os.path.join(tmp, "workspace"), "wb") as handle:
                handle.write(os.fsencode(canonical) + b"\n")
            os.makedirs(os.path.join(tmp, "snapshotter"), mode=0o700, exist_ok=True)
            os.makedirs(os.path.join(tmp, "refs", "snapshots"), mode=0o700, exist_ok=True)
            _take_side_files(path, tmp)
            owner_only(tmp)
            _put_in_place(tmp, path)
        except BaseException:
            if os.path.isdir(tmp):
                shutil.rmtree(tmp, ignore_errors=True)
            raise
    except OSError as exc:
        raise StoreError(
            f"cannot create store {path}: {exc.strerror}; check that the home folder is writable"
        ) from None


def _take_side_files(old: str, new: str) -> None:
    """Copy ``KEPT_SIDE_FILES`` from the side folder at ``old`` (a folder that is no
    store yet) into the new store ``new``; what cannot be read safely is left."""
    for name in KEPT_SIDE_FILES:
        try:
            data = read_side_file(os.path.join(old, SIDE_FOLDER, name), cap=_KEPT_CAP, follow=False)
        except OSError:  # none there, a FIFO, a link, too large: not worth keeping
            continue
        fd = os.open(os.path.join(new, SIDE_FOLDER, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


def _put_in_place(tmp: str, path: str) -> None:
    """Rename the new store ``tmp`` to ``path``. Where another process made a store
    there meanwhile, that one stays. Where a folder there holds no store (only
    side files), it is moved aside and removed first, under a lock beside it
    (``.<key>.lock``, removed once the store is in place), so that two
    processes replacing it never remove each other's new store."""
    for _ in range(3):
        try:
            os.rename(tmp, path)  # atomic; over nothing, or over an empty folder
            return
        except OSError:
            if store_exists(path):  # another process won the race: fine
                shutil.rmtree(tmp, ignore_errors=True)
                return
            if os.path.lexists(path):
                break  # a folder of side files: replaced below
    parent, key = os.path.split(path)
    lock = os.path.join(parent, f".{key}.lock")
    with StoreLock(lock, LOCK_WAIT):
        if store_exists(path):  # another process replaced it first
            shutil.rmtree(tmp, ignore_errors=True)
            return
        aside = tempfile.mkdtemp(dir=parent, prefix=".old-side-files-")
        old = os.path.join(aside, "old")
        try:
            with contextlib.suppress(FileNotFoundError):
                os.replace(path, old)
            if store_exists(old):  # made there meanwhile by one that does not lock: never ours to remove
                with contextlib.suppress(OSError):
                    os.rename(old, path)
                shutil.rmtree(tmp, ignore_errors=True)
                return
            try:
                os.rename(tmp, path)
            except OSError:
                # One that does not lock (its first try above) renamed its store into
                # the gap this left: that one stays, and gets the log it may have missed.
                if not store_exists(path):
                    with contextlib.suppress(OSError):
                        os.rename(old, path)
                    raise
                shutil.rmtree(tmp, ignore_errors=True)
                with contextlib.suppress(OSError):
                    _take_side_files(old, path)
        finally:
            shutil.rmtree(aside, ignore_errors=True)
        # Gone with the need for it: whoever waits on it, or takes a new one, finds the store and stops.
        with contextlib.suppress(OSError):
            os.unlink(lock)


def owner_only(root: str) -> None:
    """Make ``root`` and everything below it readable by its owner only (folders
    0700, files 0600): the store holds copies of the workspace's files."""
    if os.name != "posix":
        return  # Windows: the per-user data folder's ACL already keeps others out
    os.chmod(root, 0o700)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o700)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o600)
