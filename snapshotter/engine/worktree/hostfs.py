"""What the filesystem under a workspace can do: the one seam for platform differences.

Everything that differs between POSIX and Windows filesystems is a field of
:class:`HostFS`, decided once when a workspace is opened. The walker, the
restore and the confined file operations read these fields instead of
``sys.platform``, so a test can hand the real code paths a simulated Windows
on Linux (``WINDOWS_SIMULATED``) and exercise them for real.

The rules follow git's own for such filesystems:

- no exec bit (``core.fileMode=false``): a file keeps the mode recorded for it
  before (by the last scan or restore, else by the newest snapshot); new files are 100644;
- no symlinks (``core.symlinks=false``): a symlink is restored as a plain file
  holding its target, and that file is recorded as a symlink again as long as
  it stays a plain file;
- case-insensitive names: a tree with two names equal but for case is refused
  at restore, before anything is written;
- Windows names: reserved device names (``CON``, ``aux.txt``...), names ending
  in a dot or space, and ``:`` are refused at restore;
- files open in another program cannot be replaced or deleted for a moment:
  retried, then reported by name.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass, replace

_LONG_PATH = 240
"""Windows' MAX_PATH is 260 with the file name; prefix well before it."""


@dataclass(frozen=True)
class HostFS:
    """The capabilities of one workspace's filesystem."""

    exec_bit: bool = True
    """chmod +x is stored by the filesystem."""
    symlinks: bool = True
    """Symlinks can be created."""
    case_insensitive: bool = False
    """``A`` and ``a`` name the same file."""
    windows_names: bool = False
    """Reserved device names, trailing dots and spaces, and ``:`` are not allowed."""
    dir_fd: bool = True
    """Confined ``*at()`` system calls exist (``O_NOFOLLOW`` walks); else each folder is ``lstat``-checked."""
    long_path_prefix: bool = False
    """Long absolute paths need the ``\\\\?\\`` prefix to be usable."""
    busy_retry_delays: tuple[float, ...] = ()
    """Sleeps between retries when a file is in use by another program (Windows sharing violations)."""

    @property
    def needs_recorded_modes(self) -> bool:
        """The filesystem cannot show every git mode, so modes carry over from records."""
        return not (self.exec_bit and self.symlinks)

    def effective_mode(self, st_mode: int, recorded: int | None) -> int:
        """The ``st_mode`` to record for a file whose lstat says ``st_mode``.

        ``recorded`` is the ``st_mode`` this path was recorded with before (by
        the stat cache, or derived from the newest snapshot), or None.
        """
        if not stat.S_ISREG(st_mode) or not self.needs_recorded_modes:
            return st_mode
        if not self.symlinks and recorded is not None and stat.S_ISLNK(recorded):
            return stat.S_IFLNK | 0o777  # a symlink checked out as a file holding its target
        if not self.exec_bit:
            return _plain(recorded is not None and stat.S_ISREG(recorded) and bool(recorded & stat.S_IXUSR))
        return st_mode

    def native(self, path: str) -> str:
        """``path`` as the operating system accepts it (long Windows paths get ``\\\\?\\``)."""
        if not self.long_path_prefix:
            return path
        return windows_long_path(path)


def _plain(executable: bool) -> int:
    return stat.S_IFREG | (0o755 if executable else 0o644)


def recorded_mode(git_mode: int) -> int:
    """The ``st_mode`` recorded for a path restored with ``git_mode`` (for hosts that cannot show it)."""
    if git_mode == 0o120000:
        return stat.S_IFLNK | 0o777
    return _plain(git_mode == 0o100755)


def windows_long_path(path: str) -> str:
    """An absolute Windows path in its extended-length form when it is long enough to need it."""
    if len(path) < _LONG_PATH or path.startswith("\\\\?\\"):
        return path
    path = path.replace("/", "\\")
    if path.startswith("\\\\"):
        return "\\\\?\\UNC\\" + path[2:]
    return "\\\\?\\" + path


POSIX = HostFS()
WINDOWS = HostFS(
    exec_bit=False,
    symlinks=False,
    case_insensitive=True,
    windows_names=True,
    dir_fd=False,
    long_path_prefix=True,
    busy_retry_delays=(0.05, 0.1, 0.2, 0.4, 0.8, 1.6),
)
WINDOWS_SIMULATED = replace(WINDOWS, long_path_prefix=False, busy_retry_delays=(0.001, 0.002, 0.004))
"""Windows semantics on a POSIX machine, for tests: everything but the path prefix."""


def detect(root: str) -> HostFS:
    """The capabilities of the filesystem holding ``root`` (an existing folder)."""
    if sys.platform == "win32":
        return replace(WINDOWS, symlinks=_can_symlink(), case_insensitive=_case_insensitive(root, True))
    host = POSIX
    if not _has_dir_fd():
        host = replace(host, dir_fd=False)
    if sys.platform == "darwin":
        host = replace(host, case_insensitive=_case_insensitive(root, True))
    return host


def _has_dir_fd() -> bool:
    return (
        os.open in os.supports_dir_fd
        and os.unlink in os.supports_dir_fd
        and os.mkdir in os.supports_dir_fd
        and os.symlink in os.supports_dir_fd
        and os.rename in os.supports_dir_fd
        and hasattr(os, "O_NOFOLLOW")
        and hasattr(os, "O_DIRECTORY")
    )


def _case_insensitive(root: str, default: bool) -> bool:
    """Ask the filesystem itself: does the root, with its letters' case swapped, name the same folder?"""
    swapped = root.swapcase()
    if swapped == root:
        return default
    try:
        return os.path.samefile(root, swapped)
    except OSError:
        return False


def _can_symlink() -> bool:
    """Windows creates symlinks only with a privilege or developer mode: try it."""
    import tempfile  # here: a walk on POSIX never needs it (with shutil and random, 3 ms of every command's start)

    folder = tempfile.mkdtemp(prefix="snapshotter-symlink-probe-")
    link = os.path.join(folder, "link")
    try:
        os.symlink("target", link)
        return True
    except (OSError, NotImplementedError):
        return False
    finally:
        try:
            if os.path.lexists(link):
                os.unlink(link)
            os.rmdir(folder)
        except OSError:
            pass
