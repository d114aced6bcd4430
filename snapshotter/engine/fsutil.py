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
  ``engine/worktree/trust.py``, and of it alone.
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


_NEW_FILE_FLAGS = (
    os.O_RDWR
    | os.O_CREAT
    | os.O_EXCL
    | NO_FOLLOW
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_NOINHERIT", 0)
)


_WRITEV = getattr(os, "writev", None)  # not on Windows
_IOV_MAX = 1024  # POSIX's least IOV_MAX on Linux and the BSDs; macOS allows 1024 too


def write_all(fd: int, parts: list[bytes | memoryview]) -> None:
    """Write ``parts`` to ``fd`` at its position, in order, all of them: in
    as few system calls as the host allows (``os.writev``), else joined.
    Why: a big file's key frame is 5-byte block headers between 64 KiB
    blocks, and written a part at a time (34 writes a MiB) the page cache
    keeps it in single pages; written a segment at a time it keeps large
    folios, and a restore that copies from it took 0.39 s a GiB instead of
    0.45 s (ext4, Linux 6.18; ``cp`` 0.30 s)."""
    views = [memoryview(part).cast("B") for part in parts if len(part)]
    if _WRITEV is None:
        views = [memoryview(b"".join(views))] if views else []
    while views:
        batch = views[:_IOV_MAX]
        done = _WRITEV(fd, batch) if _WRITEV is not None else os.write(fd, batch[0])
        if done <= 0:
            raise OSError(errno.EIO, "a write took no bytes")
        taken = 0
        while taken < len(batch) and done >= len(batch[taken]):
            done -= len(batch[taken])
            taken += 1
        views = views[taken:]
        if done:
            views[0] = views[0][done:]


def new_temp_file(folder: str, prefix: str, suffix: str = "") -> tuple[int, str]:
    """A new private file in ``folder``, open for reading and writing, and its
    path: what ``tempfile.mkstemp(dir=folder, prefix=prefix, suffix=suffix)`` makes (a random
    name, created only if it is not there, mode 0600, not inherited), without
    importing ``tempfile``, which loads ``shutil`` and ``random``: 3 ms of every
    snapshot that writes its commit, and of nothing else it needs."""
    for _ in range(100):
        path = os.path.join(folder, prefix + os.urandom(6).hex() + suffix)
        try:
            return os.open(path, _NEW_FILE_FLAGS, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free name for a temporary file", folder)


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


def unlink_if_same(path: str, made: os.stat_result) -> bool:
    """Remove the file at ``path`` only if it is still the one whose stat is
    ``made`` (a file of ours, such as a watcher's cookie): one put in its
    place since is not ours to remove. True if this call removed it."""
    try:
        now = os.lstat(path)
        if (now.st_ino, now.st_dev) != (made.st_ino, made.st_dev):
            return False
        os.unlink(path)
    except OSError:
        return False
    return True


def sync_folder(folder: str) -> None:
    """fsync a folder, so the names created in it survive a power cut (POSIX only)."""
    if os.name != "posix":
        return  # Windows has no folder handles to sync; NTFS journals names itself
    try:
        fd = os.open(folder, DIR_FLAGS)  # a folder only: a pipe planted in its place fails at once
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
SMALL_FILE_CAP = 64 << 10
"""The cap on a side file that holds one value (a path, a number, a ref, a
date): real ones are under a hundred bytes, and a path at most ``PATH_MAX``."""
_SIDE_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_APPEND_FLAGS = (
    os.O_WRONLY
    | os.O_APPEND
    | os.O_CREAT
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


class NotARegularFile(OSError):
    """A side file that is a named pipe, a socket, a device or a folder: never read."""


class FileTooLarge(OSError):
    """A side file larger than its cap: never read whole."""


class NotTheExpectedFile(OSError):
    """A side file that does not begin as its kind always begins (a stat cache, a
    git index): not read past its first bytes, so a sparse file of zeros costs
    nothing however large it claims to be."""


def open_side_file(
    path: str, follow: bool = True, dir_fd: int | None = None, append: bool = False
) -> tuple[int, os.stat_result]:
    """A descriptor on a side file and its ``fstat``: opened without blocking
    (a named pipe would block the open forever, for reading and for writing)
    and checked on the open descriptor to be a regular file (so no swap after
    the check matters). ``append``: opened to add to it (created 0600 if
    missing) instead of reading it. ``follow=False`` refuses a symlink at the
    last component (``ELOOP``). The caller closes the descriptor. Raises
    :class:`NotARegularFile`, or the ``OSError`` of the open."""
    flags = _APPEND_FLAGS if append else _SIDE_FLAGS
    fd = os.open(path, flags if follow else flags | NO_FOLLOW, 0o600, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(errno.EINVAL, f"not a regular file ({_kind(st.st_mode)})", path)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_side_file(
    path: str, cap: int = SIDE_FILE_CAP, follow: bool = True, dir_fd: int | None = None, starts_with: bytes = b""
) -> bytes:
    """The bytes of a file that is not snapshot content (a settings file, the
    user's git files, the store's side files), read so that nothing planted at
    its path can hang or exhaust us.

    Opened by :func:`open_side_file` (without blocking, a regular file only) and
    read up to ``cap`` bytes. ``starts_with``: the bytes every file of its kind
    begins with, checked before the rest is read. Everything wrong is an
    ``OSError``, so a caller's existing "cannot read" path handles it:
    ``FileNotFoundError`` where nothing is there, :class:`NotARegularFile` for
    a FIFO, socket, device or folder, :class:`FileTooLarge` past ``cap``,
    :class:`NotTheExpectedFile` for a wrong beginning.
    """
    return read_side_file_and_stat(path, cap, follow, dir_fd, starts_with)[0]


def read_side_file_and_stat(
    path: str, cap: int = SIDE_FILE_CAP, follow: bool = True, dir_fd: int | None = None, starts_with: bytes = b""
) -> tuple[bytes, os.stat_result]:
    """:func:`read_side_file`, with the ``fstat`` of the file read (its mtime
    dates a cache; its identity says whether it changed since)."""
    fd, st = open_side_file(path, follow, dir_fd)
    try:
        if st.st_size > cap:
            raise FileTooLarge(errno.EFBIG, f"larger than {cap} bytes", path)
        if starts_with:  # checked first: a sparse file of zeros planted there is never read whole
            if _read_up_to(fd, len(starts_with)) != starts_with:
                raise NotTheExpectedFile(errno.EINVAL, "not the kind of file expected there", path)
            os.lseek(fd, 0, os.SEEK_SET)  # then read whole from its start, into one buffer (``_read_up_to``)
        data = _read_up_to(fd, cap + 1, st.st_size + 1)  # one more: a file that grew past the cap since fstat
    finally:
        os.close(fd)
    if len(data) > cap:
        raise FileTooLarge(errno.EFBIG, f"larger than {cap} bytes", path)
    return data, st


def read_side_head(path: str, cap: int, follow: bool = True, dir_fd: int | None = None) -> tuple[bytes, bool]:
    """The first ``cap`` bytes of a side file whose beginning is of use on its
    own (the lines of an ignore file before the cap, a ref's first line), and
    whether the file goes on past them. Opened as :func:`read_side_file` opens."""
    fd, _ = open_side_file(path, follow, dir_fd)
    try:
        data = _read_up_to(fd, cap + 1)
    finally:
        os.close(fd)
    return data[:cap], len(data) > cap


def read_side_text(path: str, cap: int = SIDE_FILE_CAP, follow: bool = True) -> str:
    """:func:`read_side_file` as UTF-8 text; bytes that are not UTF-8 raise
    ``UnicodeDecodeError`` (a ``ValueError``)."""
    return read_side_file(path, cap, follow).decode("utf-8")


def _read_up_to(fd: int, wanted: int, expected: int = 1 << 20) -> bytes:
    """Up to ``wanted`` bytes; the first read asks for ``expected`` (the size ``fstat``
    gave, plus one), so a file read whole is one buffer, neither joined nor copied:
    a fresh process faults in each page of every buffer it fills, and the stat cache
    of 100,000 files (7.8 MB) read in 1 MiB pieces, joined and prefixed took 13 ms
    of CPU where one read takes a third of it."""
    chunks: list[bytes] = []
    step = max(expected, 1)
    while wanted > 0:
        chunk = os.read(fd, min(wanted, step))
        step = 1 << 20
        if not chunk:
            break
        chunks.append(chunk)
        wanted -= len(chunk)
    return b"".join(chunks)


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
