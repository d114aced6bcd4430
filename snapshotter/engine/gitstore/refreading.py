"""Reading the refs below one folder of the store (``refs/snapshots/``, a stack),
each loose ref file read once while it stays the same file.

A store with thousands of snapshots has thousands of loose ref files, and one
snapshot asks for its refs several times; reading every file (through dulwich,
which also checks each name's format) on each ask made a snapshot cost grow with
the history: 39 ms an ask at 3,200 snapshots. Here the folder is listed, and a
file is read again only if it may not be the file read last time.

A ref rewritten in place is a new file (dulwich writes a lock file and renames
it), so a new inode. But a ref removed and made again (a stack popped and pushed,
the newest snapshot dropped and its number taken again) may get the freed inode
back. Every writer numbers a new ref one past the highest it sees, so a number
made again is above every ref that stayed: the files are checked from the highest
number down, and the first one whose stat settled (``fsutil.settled``) before the
last listing stayed, with everything below it. That costs a stat or two, where a
stat of every file cost 7 ms an ask at 3,200. A name that is not a number, and
every file where there is no ctime (Windows), is read each time.

A name git would not take for a ref (``refnames.valid_ref_name``) is
passed over as dulwich passes it over, a ``.lock`` file is a ref being written,
a file that is a symlink or a folder of refs nested below is a damaged ref,
never followed, and so is a name of more than :data:`MAX_DIGITS` digits.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

from snapshotter.engine.fsutil import USE_CTIME, read_side_head, settled
from snapshotter.engine.gitstore.refnames import valid_ref_name
from snapshotter.engine.gitstore.storerepo import REF_FILE_CAP

MAX_DIGITS = 20
"""A ref named by more digits is no number of ours (they are 10 digits wide): a
damaged ref. So a name in ``packed-refs`` (which, unlike a file name, has no
length limit) never makes ``int`` fail (it refuses past 4,300 digits)."""


_Known = tuple[int, "bytes | None", bytes]  # a loose file's inode, first line, and full ref name


class LooseRefs:
    """The refs below each folder asked for: when it was last listed, and what
    each loose file named by a number held then, by name and inode."""

    def __init__(self, store_path: str) -> None:
        self.store_path = store_path
        self._listed: dict[bytes, tuple[int, dict[str, _Known]]] = {}

    def read(self, base: bytes, packed: Callable[[], Mapping[bytes, bytes]]) -> dict[bytes, bytes | None]:
        """Every ref below ``base`` (a folder's ref name, ``refs/snapshots``): full
        name -> its first line (None: unreadable), loose files first, then the
        ``packed`` refs (read only if asked) no loose file overrides."""
        folder = os.path.join(self.store_path, *base.decode("ascii").split("/"))
        prefix = base + b"/"
        listed_then, known = self._listed.get(base, (0, {}))
        now = time.time_ns()
        seen: dict[str, _Known] = {}
        same_inode: list[tuple[int, os.DirEntry[str], _Known]] = []
        found: dict[bytes, bytes | None] = {}
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            entries = []
        for entry in entries:
            name = entry.name
            old = known.get(name)
            if old is not None and old[0] == entry.inode() and not entry.is_symlink() and not entry.is_dir():
                same_inode.append((int(name), entry, old))
                continue
            if name.endswith(".lock") or not _a_ref_name(base, name):
                continue
            full = prefix + os.fsencode(name)
            if entry.is_symlink():
                found[full] = None
            elif entry.is_dir():
                found.update(dict.fromkeys(_nested(entry.path, full)))
            else:
                try:
                    found[full] = _first_line(entry.path)
                except FileNotFoundError:
                    continue  # packed (or dropped) since the listing: the caller reads packed-refs after this
                if _a_number(name):
                    seen[name] = (entry.inode(), found[full], full)
        same_inode.sort(key=lambda item: item[0], reverse=True)
        stayed = False
        for _, entry, (inode, value, full) in same_inode:
            stayed = stayed or _stayed(entry, listed_then)
            if not stayed:
                try:
                    value = _first_line(entry.path)
                except FileNotFoundError:
                    continue
            seen[entry.name] = (inode, value, full)
            found[full] = value
        self._listed[base] = (now, seen)
        for ref, sha in packed().items():
            if ref.startswith(prefix) and ref not in found:
                found[ref] = sha
        return found

    def holders(self, base: bytes, packed: Callable[[], Mapping[bytes, bytes]]) -> set[bytes]:
        """The names of the folders right below ``base`` that hold a ref, loose at
        any depth or ``packed``: the sessions below ``refs/snapshotter/sessions``.
        Listed, not walked through dulwich, which checks the name of every ref below
        (every undo, redo and turn of every session, at each snapshot)."""
        prefix = base + b"/"
        names = {ref[len(prefix) :].split(b"/", 1)[0] for ref in packed() if ref.startswith(prefix)}
        try:
            entries = list(os.scandir(os.path.join(self.store_path, *base.decode("ascii").split("/"))))
        except (FileNotFoundError, NotADirectoryError):
            entries = []
        for entry in entries:
            name = os.fsencode(entry.name)
            if entry.is_dir(follow_symlinks=False) and valid_ref_name(prefix + name):
                names.update([name] if _holds_a_ref(entry.path) else [])
        return names


def _stayed(entry: os.DirEntry[str], listed_then: int) -> bool:
    """Whether the file with the inode read at the listing of ``listed_then`` is
    still that file: its stat had settled by then, so it was not made again since."""
    if not USE_CTIME:
        return False
    try:
        stat = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    return stat.st_ino == entry.inode() and settled(stat, listed_then)


def _holds_a_ref(folder: str) -> bool:
    """Whether a file other than a lock lies anywhere below ``folder``; stops at the first."""
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if not entry.is_dir(follow_symlinks=False):
                    if not entry.name.endswith(".lock"):
                        return True
                elif _holds_a_ref(entry.path):
                    return True
    except OSError:
        return False
    return False


def _a_number(name: str) -> bool:
    """Digits a ref's number is written in (``str.isdigit`` takes ``'²'`` too), at most :data:`MAX_DIGITS`."""
    return name.isascii() and name.isdigit() and len(name) <= MAX_DIGITS


def _a_ref_name(base: bytes, name: str) -> bool:
    return _a_number(name) or valid_ref_name(base + b"/" + os.fsencode(name))


def _nested(folder: str, prefix: bytes) -> list[bytes]:
    """The ref names in a folder nested where only ref files belong: all damaged."""
    names = []
    for top, _, files in os.walk(folder):
        below = os.path.relpath(top, folder)
        for name in files:
            if not name.endswith(".lock"):
                names.append(prefix + b"/" + os.fsencode(name if below == "." else f"{below}/{name}"))
    return names


def _first_line(path: str) -> bytes | None:
    """A ref file's first line; None where it cannot be read (see ``storerepo``:
    never through a symlink, never blocking on a named pipe, at most a few KiB).
    Raises ``FileNotFoundError`` for a file gone since it was listed: a ref
    packed meanwhile is in ``packed-refs``, which is read after the listing."""
    try:
        head, _ = read_side_head(path, REF_FILE_CAP, follow=False)
    except FileNotFoundError:
        raise
    except OSError:
        return None
    return head.split(b"\n", 1)[0].rstrip(b"\r")
