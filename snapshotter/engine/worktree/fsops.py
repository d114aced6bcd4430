"""Writing into the workspace without ever leaving it.

Every operation reaches its target through real folders only: on POSIX each
path component is opened with ``O_NOFOLLOW | O_DIRECTORY`` relative to its
parent's descriptor, so a symlink swapped in for a folder just before a restore
cannot redirect a write outside the workspace. Where the platform lacks
``dir_fd`` support (Windows), each component is checked with ``lstat`` first.
The descriptors of the folders used last stay open between writes, so a
restore writing in path order opens each folder once (:meth:`Workspace.close`
releases them; removing any folder does too).

A file is replaced as git's checkout does: the old one is removed, then the new
one created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` and written. Writing to a
temporary name and renaming it over the target would spare readers a moment
without the file, but a rename costs 150 to 390 us on ext4 here against ~70 us
for unlink and create (measured; 10,000 files: seconds), and a restore killed
half-way is recovered from its ``pre-restore`` snapshot either way. So no name
in the workspace is a temporary file of ours: one called like a watcher's
cookie is the user's, snapshotted, restored and deleted as any other (the
watcher passes over only the cookies it made itself, see ``watch``).

One exception: a big blob checked by its packs' CRC-32 (``entrycheck``) is
known good only after its last byte, so it is written first as a file with no
name (``O_TMPFILE``; where there is none, ``.<name>.snapshotter-<hex>.tmp``
beside it) and put in place once checked: a damaged pack fails the restore with
the old file still there. A rename is nothing beside a gigabyte.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from snapshotter.engine.fsutil import DIR_FLAGS, NO_FOLLOW, unlink_quietly
from snapshotter.engine.gitstore.entrycheck import CheckedCopy
from snapshotter.engine.gitstore.spancopy import Span, write_pieces
from snapshotter.engine.worktree.hostfs import POSIX, HostFS
from snapshotter.errors import FileInUse, RestoreConflict, UnsafeTree

_DIR_NO_FOLLOW = DIR_FLAGS | NO_FOLLOW
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
_HELD = 64
"""Folder descriptors a Workspace keeps open at most."""
_T = TypeVar("_T")


def _current_umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # no /proc: read it the only portable way
    os.umask(mask)
    return mask


UMASK = _current_umask()


def _chunks_of(fd: int, size: int = 1 << 20) -> Iterator[bytes]:
    while chunk := os.read(fd, size):
        yield chunk


def file_mode(executable: bool) -> int:
    """The permission bits git gives a checked-out file."""
    return (0o777 if executable else 0o666) & ~UMASK


class Workspace:
    """Confined file operations under one root folder, by relative posix path."""

    def __init__(self, root: str, host: HostFS = POSIX) -> None:
        self.root = root
        self.host = host
        self._io_root = host.native(root)
        self._held: dict[str, int] = {}
        """Folder -> descriptor of the folders used last, kept open for the next writes."""
        self._made: set[str] = set()
        """Folders this object created: empty when made, so a file written into one
        replaces nothing (a file someone else put there meanwhile makes the
        exclusive create fail, and the restore refuses, as ever)."""

    def abspath(self, rel: str) -> str:
        return os.path.join(self.root, *rel.split("/"))

    def close(self) -> None:
        """Release the folder descriptors kept between writes."""
        held, self._held = self._held, {}
        for fd in held.values():
            os.close(fd)

    def _parent(self, rel: str, create: bool) -> tuple[int | None, str, str]:
        """(dir fd or None, base name, parent) of ``rel``: with a descriptor the
        parent is its path below the root (for messages, see :meth:`_shown`);
        without one it is the absolute path every call goes through."""
        parent, _, name = rel.rpartition("/")
        held = self._held.get(parent)
        if held is not None:  # a restore writes in path order: mostly the folder used last
            self._held[parent] = self._held.pop(parent)  # most recently used last
            return held, name, parent
        parts = parent.split("/") if parent else []
        if not self.host.dir_fd:
            path = self._io_root
            for part in parts:
                path = os.path.join(path, part)
                self._check_dir(path, create)
            return None, name, path
        return self._folder(parts, create), name, parent

    def _shown(self, fd: int | None, parent: str, name: str) -> str:
        """The absolute path of ``name`` in ``parent`` (as :meth:`_parent` gave it), for messages."""
        if fd is None:
            return os.path.join(parent, name)
        return self.abspath(parent + "/" + name if parent else name)

    def _forget_below(self, rel: str) -> None:
        """Close the kept descriptors of ``rel`` and the folders in it (about to be removed)."""
        for key in [k for k in self._held if k == rel or k.startswith(rel + "/")]:
            os.close(self._held.pop(key))
        self._made = {k for k in self._made if k != rel and not k.startswith(rel + "/")}

    def _folder(self, parts: list[str], create: bool) -> int:
        """A descriptor of the folder ``parts`` below the root, opened component by
        component with ``O_NOFOLLOW`` from the deepest folder already open. The last
        folders used stay open (a restore writes in path order), at most ``_HELD``.
        Called only by :meth:`_parent`, which has looked ``parts`` itself up already."""
        held = self._held
        depth = len(parts)
        while depth > 0 and "/".join(parts[:depth]) not in held:
            depth -= 1
        if depth == 0 and "" not in held:
            held[""] = os.open(self._io_root, _DIR_NO_FOLLOW)
        fd = held["/".join(parts[:depth])]
        for index in range(depth, len(parts)):
            part = parts[index]
            try:
                child = os.open(part, _DIR_NO_FOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                    self._made.add("/".join(parts[: index + 1]))
                except FileExistsError:
                    pass
                child = os.open(part, _DIR_NO_FOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    walked = os.path.join(self.root, *parts[: index + 1])
                    raise RestoreConflict(
                        f"{walked} is a symlink or a file, not a folder; refusing to write through it"
                    ) from None
                raise
            held["/".join(parts[: index + 1])] = fd = child
        while len(held) > _HELD:
            os.close(held.pop(next(iter(held))))  # least recently used first
        return fd

    @staticmethod
    def _check_dir(path: str, create: bool) -> None:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            if not create:
                raise
            os.mkdir(path)
            st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            raise RestoreConflict(f"{path} is a symlink or a file, not a folder; refusing to write through it")

    def write_file(self, rel: str, content: bytes | Iterable[bytes | Span], executable: bool) -> os.stat_result:
        """Atomically replace ``rel`` with ``content`` (bytes or pieces of it); returns the new file's stat."""
        mode = 0o777 if executable else 0o666  # less the umask, as git does
        if isinstance(content, CheckedCopy):
            return self._write_checked(rel, content, mode)

        def create(fd: int | None, path: str) -> os.stat_result:
            out = os.open(path, _NEW_FILE, mode, dir_fd=fd)
            try:
                try:
                    write_pieces(out, (content,) if isinstance(content, bytes) else content)
                    return os.fstat(out)
                finally:
                    os.close(out)
            except BaseException:
                unlink_quietly(path, fd)  # ours, half written
                raise

        return self._install(rel, create)

    def _write_checked(self, rel: str, content: CheckedCopy, mode: int) -> os.stat_result:
        """A big blob checked after its last piece (``entrycheck``) is written
        where no name shows it (``O_TMPFILE``; else under a temporary name beside
        it) and put in place once checked: if the check fails, the file that was
        there stays as it was (putting it back could need the damaged pack too)."""
        fd, name, parent = self._parent(rel, create=True)
        try:
            out, tmp = _staging(fd, parent, name, mode)
        except BaseException:
            content.close()
            raise
        staged = os.path.join(parent, tmp) if tmp is not None and fd is None else tmp
        try:
            try:
                write_pieces(out, content, content.size)
                if tmp is None:  # linked into place while open: /proc names the unnamed file
                    source = f"/proc/self/fd/{out}"
                    return self._install(rel, lambda at, path: os.link(source, path, dst_dir_fd=at))
            finally:
                os.close(out)
            assert staged is not None
            return self._install(rel, lambda at, path: os.rename(staged, path, src_dir_fd=at, dst_dir_fd=at))
        except BaseException:
            if staged is not None:
                unlink_quietly(staged, fd)
            raise

    def write_symlink(self, rel: str, target: bytes) -> os.stat_result:
        """Atomically replace ``rel`` with a symlink to ``target`` (where symlinks
        cannot be made: a plain file holding the target, as git does)."""
        if not self.host.symlinks:
            return self.write_file(rel, target, executable=False)
        if b"\0" in target:
            raise UnsafeTree(f"the snapshot's symlink {rel!r} points at a target holding a NUL byte; refused")

        def create(fd: int | None, path: str) -> None:
            os.symlink(os.fsdecode(target), path, dir_fd=fd)  # its stat is taken afterwards

        return self._install(rel, create)

    def _install(self, rel: str, create: Callable[[int | None, str], os.stat_result | None]) -> os.stat_result:
        """Remove what stands at ``rel`` (a file, a symlink, or a folder of empty
        folders), then make the new entry there with ``create`` (which may
        return the new entry's stat, taken before closing it, as git does)."""
        fd, name, parent = self._parent(rel, create=True)
        path = name if fd is not None else os.path.join(parent, name)
        # The common case takes one call: a file or symlink was there, or nothing;
        # in a folder made just now, none. A folder, a refusal, or a platform
        # without dir_fd: look first.
        if fd is not None and parent in self._made:
            pass
        elif fd is None or not self._unlinked(fd, name):
            try:
                st = self._lstat(fd, parent, name)
            except FileNotFoundError:
                pass
            else:
                if not stat.S_ISDIR(st.st_mode):
                    self._retry_busy(lambda: os.unlink(path, dir_fd=fd), lambda: self._shown(fd, parent, name))
                else:
                    self._forget_below(rel)
                    if not self._remove_if_only_folders(fd, self._shown(fd, parent, ""), name):
                        raise RestoreConflict(
                            f"{self._shown(fd, parent, name)} is a folder holding untracked files; move them and retry"
                        )
        try:
            made = create(fd, path)
        except FileExistsError:
            raise RestoreConflict(
                f"{self._shown(fd, parent, name)} appeared while it was being restored; retry"
            ) from None
        return made if made is not None else self._lstat(fd, parent, name)

    @staticmethod
    def _unlinked(fd: int, name: str) -> bool:
        """Remove the file or symlink ``name`` if there is one; False when what
        stands there needs a closer look first (a folder, or a refusal)."""
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            return True
        except OSError:
            return False  # EISDIR or EPERM for a folder; anything else: the slow path says what
        return True

    def _remove_if_only_folders(self, fd: int | None, parent: str, name: str) -> bool:
        """``parent`` is absolute (with ``fd`` only for messages)."""
        path = os.path.join(parent, name)
        # With dir_fd the folder is opened with O_NOFOLLOW: a symlink is never descended.
        child = os.open(name, _DIR_NO_FOLLOW, dir_fd=fd) if fd is not None else None
        try:
            with os.scandir(child if child is not None else path) as listing:
                entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in listing]
            for sub, is_dir in entries:
                if not is_dir or not self._remove_if_only_folders(child, path, sub):
                    return False
        finally:
            if child is not None:
                os.close(child)
        if fd is not None:
            os.rmdir(name, dir_fd=fd)
        else:
            os.rmdir(path)
        return True

    def set_executable(self, rel: str, executable: bool) -> os.stat_result:
        """chmod a regular file in place (keeps its content and mtime); where the
        filesystem has no exec bit, only the record of it changes (see hostfs).

        The mode is set on the opened file, never through a symlink; a file
        with other hard links (one may live in a ``.git`` folder, or outside
        the workspace) is rewritten instead, so no other name sees the change.
        """
        fd, name, parent = self._parent(rel, create=False)
        if not self.host.exec_bit:
            return self._lstat(fd, parent, name)
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)  # a pipe: no wait
        handle = os.open(name, flags, dir_fd=fd) if fd is not None else os.open(os.path.join(parent, name), flags)
        try:
            st = os.fstat(handle)
            if not stat.S_ISREG(st.st_mode):
                raise RestoreConflict(f"{self._shown(fd, parent, name)} is no longer a regular file; retry")
            if st.st_nlink > 1:
                return self.write_file(rel, _chunks_of(handle), executable)
            if hasattr(os, "fchmod"):
                os.fchmod(handle, file_mode(executable))
            else:
                os.chmod(os.path.join(parent, name), file_mode(executable))
            return os.fstat(handle)
        finally:
            os.close(handle)

    def read(self, rel: str, is_link: bool, limit: int) -> bytes | None:
        """A file's content or a symlink's target, read without following any
        symlink on the way (one swapped in since the scan is not read through);
        None for a file over ``limit`` bytes. OSError if it cannot be read."""
        fd, name, parent = self._parent(rel, create=False)
        if is_link:
            return os.fsencode(
                os.readlink(name, dir_fd=fd) if fd is not None else os.readlink(os.path.join(parent, name))
            )
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
        handle = os.open(name, flags, dir_fd=fd) if fd is not None else os.open(os.path.join(parent, name), flags)
        try:
            st = os.fstat(handle)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, "not a regular file", rel)
            if st.st_size > limit:
                return None
            return b"".join(_chunks_of(handle))
        finally:
            os.close(handle)

    def delete(self, rel: str) -> None:
        """Remove a file or symlink; a missing one is fine."""
        try:
            fd, name, parent = self._parent(rel, create=False)
            shown = lambda: self._shown(fd, parent, name)  # noqa: E731
            if fd is not None:
                self._retry_busy(lambda: os.unlink(name, dir_fd=fd), shown)
            else:
                self._retry_busy(lambda: os.unlink(os.path.join(parent, name)), shown)
        except FileNotFoundError:
            pass

    def remove_dir_if_empty(self, rel: str) -> bool:
        self.close()  # never keep a descriptor of a folder that may go away
        self._made.discard(rel)
        try:
            fd, name, parent = self._parent(rel, create=False)
            if fd is not None:
                os.rmdir(name, dir_fd=fd)
            else:
                os.rmdir(os.path.join(parent, name))
            return True
        except OSError:
            return False

    def lstat(self, rel: str) -> os.stat_result | None:
        """The entry at ``rel``, or None if it, or a real folder leading to it, is missing."""
        try:
            fd, name, parent = self._parent(rel, create=False)
            return self._lstat(fd, parent, name)
        except (FileNotFoundError, NotADirectoryError, RestoreConflict):
            return None

    @staticmethod
    def _lstat(fd: int | None, parent: str, name: str) -> os.stat_result:
        if fd is not None:
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
        return os.lstat(os.path.join(parent, name))

    def _retry_busy(self, action: Callable[[], _T], shown: Callable[[], str]) -> _T:
        """Run ``action``; while the file is in use by another program (a
        Windows sharing violation: PermissionError), wait and try again."""
        delays = self.host.busy_retry_delays
        for delay in delays:
            try:
                return action()
            except PermissionError:
                time.sleep(delay)
        try:
            return action()
        except PermissionError:
            if not delays:
                raise
            raise FileInUse(f"{shown()} is in use by another program; close it and retry") from None


def _staging(fd: int | None, parent: str, name: str, mode: int) -> tuple[int, str | None]:
    """(descriptor, temporary name) of a new file to write ``name``'s content
    in first: unnamed (``O_TMPFILE``, Linux) where it can be, so that a restore
    killed meanwhile leaves nothing behind; else named after ``name``."""
    unnamed = getattr(os, "O_TMPFILE", 0)
    if unnamed and fd is not None and os.path.isdir("/proc/self/fd"):
        try:
            return os.open(".", unnamed | os.O_WRONLY, mode, dir_fd=fd), None
        except OSError:
            pass  # a file system without it: a name of our own, then
    tmp = f".{name}.snapshotter-{os.urandom(4).hex()}.tmp"  # ``secrets.token_hex``, without its imports
    return os.open(tmp if fd is not None else os.path.join(parent, tmp), _NEW_FILE, mode, dir_fd=fd), tmp
