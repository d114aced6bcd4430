"""The store lock: one writer at a time across threads, processes and instances.

The operating system holds the lock (``flock`` on POSIX, ``msvcrt.locking`` on
Windows), so it is released the moment its owner dies, however it dies: a lock
left by a killed process never needs breaking by hand. The lock file also
records who holds it (pid, host, start time), so a waiter that times out can
say whom it waited for. The record is erased on release; finding one when
taking the lock therefore means its holder died holding it, and ``on_recover``
runs (under the lock) to clear what a killed writer can leave behind. A
holder interrupted (Ctrl-C: any exception that is not an ``Exception``) may
have been cut anywhere too, its forked second core with it, so it releases
the lock with its record left: the next holder recovers as after a death.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone

from snapshotter.engine.fsutil import NO_FOLLOW
from snapshotter.errors import StoreError, StoreLocked

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


class StoreLock:
    """A re-entrant lock: the owning thread may take it again without waiting."""

    def __init__(self, path: str, timeout: float, on_recover: Callable[[], object] | None = None) -> None:
        self.path = path
        self.timeout = timeout
        self.on_recover = on_recover
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        if isinstance(kind, type) and issubclass(kind, BaseException) and not issubclass(kind, Exception):
            self._interrupted = True  # see the module's docstring
        self.release()

    _interrupted = False

    def acquire(self) -> None:
        deadline = time.monotonic() + self.timeout
        if not self._thread_lock.acquire(timeout=max(self.timeout, 0)):
            raise StoreLocked(f"store is busy in another thread of this process for over {self.timeout:g} s; retry")
        try:
            if self._depth == 0:
                self._fd = self._take(deadline)
            self._depth += 1
        except BaseException:
            self._thread_lock.release()
            raise

    def release(self) -> None:
        try:
            self._depth -= 1
            if self._depth == 0 and self._fd is not None:
                fd, self._fd = self._fd, None
                interrupted, self._interrupted = self._interrupted, False
                try:
                    if not interrupted:
                        _erase_holder(fd)
                    _unlock(fd)
                finally:
                    os.close(fd)
        finally:
            self._thread_lock.release()

    def _take(self, deadline: float) -> int:
        fd = _open_lock_file(self.path)
        delay = 0.005
        while not _try_lock(fd):
            if time.monotonic() >= deadline:
                holder = _describe(fd)
                os.close(fd)
                raise StoreLocked(
                    f"store is locked by {holder} for over {self.timeout:g} s; wait for it to finish or stop it"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
        died_holding = _has_holder(fd)
        _record_holder(fd)
        if died_holding and self.on_recover is not None:
            self.on_recover()
        return fd


_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | NO_FOLLOW


def _open_lock_file(path: str) -> int:
    """The lock file, opened as a side file is (see ``fsutil.open_side_file``):
    never through a symlink (its holder record would be written, and erased,
    wherever the link points), without blocking, a regular file only. Anything
    else planted there is a typed error naming it."""
    try:
        fd = os.open(path, _LOCK_FLAGS, 0o600)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise StoreError(f"the lock file {path} is a symbolic link; remove it") from None
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        raise StoreError(f"the lock file {path} is not a regular file; remove it")
    return fd


def _record_holder(fd: int) -> None:
    info = {
        "pid": os.getpid(),
        "host": _host(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    data = (json.dumps(info) + "\n").encode()
    try:
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, data)
    except OSError:
        pass  # the record is for messages only; the lock itself is held


def _host() -> str:
    """This machine's name, as ``socket.gethostname()`` says it; from ``uname`` where
    there is one, since importing ``socket`` costs every command that reads the store."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket  # pragma: no cover - Windows

    return socket.gethostname()


def _erase_holder(fd: int) -> None:
    try:
        os.ftruncate(fd, 0)
    except OSError:
        pass


def _has_holder(fd: int) -> bool:
    try:
        return os.fstat(fd).st_size > 0
    except OSError:
        return False


def _describe(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        info = json.loads(os.read(fd, 4096).decode() or "{}")
        return f"pid {info['pid']} on {info['host']} (since {info['started']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"
