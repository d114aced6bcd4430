"""Small filesystem facts and helpers that every wing shares.

- Durability. Atomic writes (temporary file, then rename) already protect against a killed
process. Against a power cut, content must reach the disk before a name that
points at it: object contents are fsynced as they are written, and the
folders that received new names are fsynced before a ref or a deletion
relies on them.
- Stat keys: what must match for a file to be taken as unchanged.
- When a timestamp has settled: a folder or file changed too recently may change
  again within the same clock tick, so its stat cannot vouch for it yet. This is
  the plain timestamp predicate, shared by the worktree and the store (for its
  refs); when a folder's stat may vouch for its listing is the rule of
  ``worktree/trust.py``, and of it alone.
"""

from __future__ import annotations

import errno
import os
import stat
import sys

TYPE_CHECKING = False  # not ``typing``'s: a hook call reads the watcher's key through this module
if TYPE_CHECKING:
    from typing import Protocol

USE_CTIME = sys.platform != "win32"  # on Windows st_ctime is the creation time

StatKey = tuple[int, int, int, int, int]
"""(st_mode, size, mtime_ns, ctime_ns, inode): what must match to skip a read."""


if TYPE_CHECKING:

    class FileStat(Protocol):
        """What the walk reads of a file's ``lstat``: an ``os.stat_result``, or a
        smaller stand-in keeping just these (see ``trust.KnownStat``)."""

        @property
        def st_mode(self) -> int: ...
        @property
        def st_size(self) -> int: ...
        @property
        def st_mtime_ns(self) -> int: ...
        @property
        def st_ctime_ns(self) -> int: ...
        @property
        def st_ino(self) -> int: ...

else:
    FileStat = os.stat_result  # at run time only a name, in annotations and aliases


DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
"""Flags that open a folder for listing or as a ``dir_fd``."""
NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)

RECENT_NS = 100_000_000
"""A stat changed less than this long before a moment has not settled then:
timestamps advance by clock ticks (a few ms on Linux), and a change made right
after that moment, within the tick of the change before it, would leave the
stat as it was (so a folder changed this recently before a walk is listed again
next time)."""
RECENT_COARSE_NS = 2_000_000_000
"""The same for timestamps in whole seconds (FAT keeps 2-second ones)."""


_MODES: dict[int, int] = {}


def stat_key(st: os.stat_result) -> StatKey:
    """The key of a file's stat. Every file's record keeps one, so equal numbers
    share one int: the mode (a few values in a workspace) and a ctime equal to
    the mtime (a file written once): 60 bytes less per file."""
    mode = st.st_mode
    mtime = st.st_mtime_ns
    ctime = st.st_ctime_ns if USE_CTIME else 0
    return (_MODES.setdefault(mode, mode), st.st_size, mtime, mtime if ctime == mtime else ctime, st.st_ino)


def settled(own: os.stat_result, walk_began_ns: int) -> bool:
    """Whether ``own`` (a folder's or file's stat) last changed long enough before
    the moment ``walk_began_ns`` that a later change cannot hide within the same
    clock tick (see ``RECENT_NS``)."""
    ctime = own.st_ctime_ns
    recent = RECENT_COARSE_NS if ctime % 1_000_000_000 == 0 else RECENT_NS
    return ctime < walk_began_ns - recent


def unlink_quietly(path: str, dir_fd: int | None = None) -> bool:
    """Remove a file if it is there; a file already gone, or not removable, is not
    an error here. True if this call removed it."""
    try:
        os.unlink(path, dir_fd=dir_fd)
    except OSError:
        return False
    return True


def make_private_folders(path: str) -> None:
    """Create the folder ``path`` and every missing folder above it, each owner-only
    (0700; ``os.makedirs`` gives that mode to the last one only): the store's
    home and the user's state folder hold copies of the workspace, and logs."""
    missing: list[str] = []
    folder = os.path.abspath(path)
    while not os.path.isdir(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise


def sync_folder(folder: str) -> None:
    """fsync a folder, so the names created in it survive a power cut (POSIX only)."""
    if os.name != "posix":
        return  # Windows has no folder handles to sync; NTFS journals names itself
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


SIDE_FILE_CAP = 1 << 20
"""The default cap on a side file's size (settings, the user's git files, the
store's own small files): real ones are a few KiB."""
_SIDE_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


class NotARegularFile(OSError):
    """A side file that is a named pipe, a socket, a device or a folder: never read."""


class FileTooLarge(OSError):
    """A side file larger than its cap: never read whole."""


def read_side_file(path: str, cap: int = SIDE_FILE_CAP, follow: bool = True, dir_fd: int | None = None) -> bytes:
    """The bytes of a file that is not snapshot content (a settings file, the
    user's git files, the store's side files), read so that nothing planted at
    its path can hang or exhaust us.

    Opened without blocking (a named pipe would block the open forever), judged
    by ``fstat`` on the open descriptor (so no swap after the check matters), and
    read up to ``cap`` bytes. ``follow=False`` refuses a symlink at the last
    component (``ELOOP``). Everything wrong is an ``OSError``, so a caller's
    existing "cannot read" path handles it: ``FileNotFoundError`` where nothing
    is there, :class:`NotARegularFile` for a FIFO, socket, device or folder,
    :class:`FileTooLarge` past ``cap``.
    """
    flags = _SIDE_FLAGS if follow else _SIDE_FLAGS | NO_FOLLOW
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(errno.EINVAL, f"not a regular file ({_kind(st.st_mode)})", path)
        if st.st_size > cap:
            raise FileTooLarge(errno.EFBIG, f"larger than {cap} bytes", path)
        chunks: list[bytes] = []
        wanted = cap + 1  # one more: a file that grew past the cap since fstat
        while wanted > 0:
            chunk = os.read(fd, min(wanted, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            wanted -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > cap:
        raise FileTooLarge(errno.EFBIG, f"larger than {cap} bytes", path)
    return data


def read_side_text(path: str, cap: int = SIDE_FILE_CAP, follow: bool = True) -> str:
    """:func:`read_side_file` as UTF-8 text; bytes that are not UTF-8 raise
    ``UnicodeDecodeError`` (a ``ValueError``)."""
    return read_side_file(path, cap, follow).decode("utf-8")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "a special file"
